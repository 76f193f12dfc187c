// SPDX-License-Identifier: BSD-2-Clause
/* output.c - a whole output file written at once: into a temporary file
 * beside it, renamed over the name once complete, so an error or a ^C
 * leaves the old file or none, never a partial one. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

/* What an interruption must remove: the temporary file or staging
 * directory being written, else nothing. The handler removes it and ends
 * the command at once (unlink, fork, execve and waitpid are
 * async-signal-safe), so ^C never waits for the rest of a long export. */
static char pending[PATH_MAX];
static volatile sig_atomic_t pending_dir;

static void on_interrupt(int sig)
{
	pid_t pid;

	if (pending[0] && !pending_dir) {
		unlink(pending);
	} else if (pending[0]) {
		pid = fork();
		if (pid == 0) {
			execl("/bin/rm", "rm", "-rf", "--", pending, (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	_exit(128 + sig);
}

void cli_catch_interrupts(void)
{
	struct sigaction sa = { .sa_handler = on_interrupt };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* The signals held while pending changes, so the handler never sees it
 * half written. */
static void set_pending(const char *path, bool dir)
{
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	snprintf(pending, sizeof(pending), "%s", path ? path : "");
	pending_dir = dir;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

void cli_pending_dir(const char *dir)
{
	set_pending(dir, true);
}

int cli_write_file(const char *path, const void *data, size_t len,
		   struct hwt_err *err)
{
	const char *p = data;
	char *tmp;
	int fd, e = 0;

	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		return hwt_err_set(err, ENOMEM, "out of memory");
	fd = mkstemp(tmp);
	if (fd >= 0)
		set_pending(tmp, false);
	if (fd < 0) {
		e = errno;
		free(tmp);
		return hwt_err_set(err, e, "cannot create %s: %s", path,
				   strerror(e));
	}
	while (len && !e) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno != EINTR)
			e = errno;
		else if (n > 0) {
			p += n;
			len -= (size_t)n;
		}
	}
	if (fchmod(fd, 0644) < 0 && !e)
		e = errno;
	if (close(fd) < 0 && !e)
		e = errno;
	if (!e && rename(tmp, path) < 0)
		e = errno;
	set_pending(NULL, false);
	if (e)
		unlink(tmp);
	free(tmp);
	return e ? hwt_err_set(err, e, "cannot write %s: %s", path,
			       strerror(e)) : 0;
}
