// SPDX-License-Identifier: BSD-2-Clause
/* held.c - fork a program held before execvp (held.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "held.h"

/* In the forked child: only async-signal-safe calls. */
static void child(char *const argv[], char *const envp[], int go_fd,
		  int err_fd, pid_t parent)
{
	sigset_t none;
	char b;
	int e;

	/* The program dies with its recorder (a recorder killed with
	 * SIGKILL included): traced by ptrace it would anyway
	 * (PTRACE_O_EXITKILL), but Valgrind's is not traced, and a held
	 * child would otherwise take the closed pipe for the go. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* EOF is the go; a byte would mean nothing else. */
	while (read(go_fd, &b, 1) < 0 && errno == EINTR)
		;
	close(go_fd);
	if (envp)
		execvpe(argv[0], argv, envp);
	else
		execvp(argv[0], argv);
	e = errno;
	if (write(err_fd, &e, sizeof(e)) < 0)
		e = 0;   /* the parent sees exit 127 */
	_exit(127);
}

int hwt_held_fork(char *const argv[], struct hwt_held *h,
		  struct hwt_err *err)
{
	return hwt_held_fork_env(argv, NULL, h, err);
}

int hwt_held_fork_env(char *const argv[], char *const envp[],
		      struct hwt_held *h, struct hwt_err *err)
{
	int go[2], errp[2], e;
	pid_t pid, self = getpid();

	h->pid = -1;
	h->go_fd = h->err_fd = -1;
	if (pipe2(go, O_CLOEXEC) < 0)
		return hwt_err_set(err, errno, "pipe: %s", strerror(errno));
	if (pipe2(errp, O_CLOEXEC) < 0) {
		e = errno;
		close(go[0]);
		close(go[1]);
		return hwt_err_set(err, e, "pipe: %s", strerror(e));
	}
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		child(argv, envp, go[0], errp[1], self);
	}
	e = errno;
	close(go[0]);
	close(errp[1]);
	if (pid < 0) {
		close(go[1]);
		close(errp[0]);
		return hwt_err_set(err, e, "cannot fork to run %s: %s",
				   argv[0], strerror(e));
	}
	h->pid = pid;
	h->go_fd = go[1];
	h->err_fd = errp[0];
	return 0;
}

void hwt_held_release(struct hwt_held *h)
{
	if (h->go_fd >= 0)
		close(h->go_fd);
	h->go_fd = -1;
}

int hwt_held_exec_error(struct hwt_held *h, const char *prog,
			struct hwt_err *err)
{
	int e = 0;

	if (h->err_fd >= 0 && read(h->err_fd, &e, sizeof(e)) == sizeof(e) &&
	    e)
		return hwt_err_set(err, e, "cannot run %s: %s", prog,
				   strerror(e));
	return 0;
}

void hwt_held_close(struct hwt_held *h)
{
	hwt_held_release(h);
	if (h->err_fd >= 0)
		close(h->err_fd);
	h->err_fd = -1;
}
