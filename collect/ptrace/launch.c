// SPDX-License-Identifier: BSD-2-Clause
/* launch.c - start a program under ptrace, stopped at the first
 * instruction of the new image (the dynamic loader's entry for dynamic
 * programs), with tracer and tracee pinned to one cpu. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/machine.h"
#include "tracer.h"

#define TRACE_OPTIONS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | \
		       PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)

/* Runs in the forked child: only async-signal-safe calls. It stops itself
 * so the parent can attach with PTRACE_SEIZE (which, unlike TRACEME,
 * reports group-stops distinctly and allows PTRACE_INTERRUPT), then
 * execs; a failed exec reports errno through the close-on-exec pipe. */
static void child(char *const argv[], int errfd)
{
	sigset_t none;
	int e;

	/* Signals blocked in the caller must not leak into the program. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	raise(SIGSTOP);
	execvp(argv[0], argv);
	e = errno;
	if (write(errfd, &e, sizeof(e)) < 0)
		e = 0;   /* nothing more to do: the parent sees exit 127 */
	_exit(127);
}

static int wait_for(pid_t pid, int *status, int flags)
{
	pid_t got;

	do
		got = waitpid(pid, status, flags);
	while (got < 0 && errno == EINTR);
	return got < 0 ? -errno : 0;
}

/* From the attach to the exec event. Returns 0 at the exec stop; sets
 * *reaped when the child ended instead. */
static int wait_exec(pid_t pid, int errfd, const char *prog, bool *reaped,
		     struct hwt_err *err)
{
	for (;;) {
		int status, rc, e = 0;

		if ((rc = wait_for(pid, &status, __WALL)) < 0)
			return hwt_err_set(err, -rc, "waiting for %s to start: "
					   "%s", prog, strerror(-rc));
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			*reaped = true;
			if (read(errfd, &e, sizeof(e)) == sizeof(e) && e)
				return hwt_err_set(err, e, "cannot run %s: %s",
						   prog, strerror(e));
			return hwt_err_set(err, ECHILD,
					   "%s ended before it started", prog);
		}
		if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)))
			return 0;
		/* The group-stop we attached in and SIGCONT's delivery:
		 * nothing to pass on before the program starts. */
		if (ptrace(PTRACE_CONT, pid, 0, 0) < 0)
			return hwt_err_set(err, errno, "resuming %s: %s", prog,
					   strerror(errno));
	}
}

/* The exec stop is inside execve; the first single-step reports the
 * syscall's return at the entry point without executing anything. Take
 * that stop here so the program rests at a plain stop at its entry. */
static int settle_at_entry(struct step_collector *c, struct step_thread *t,
			   const char *prog, struct hwt_err *err)
{
	uint64_t entry, pc;
	int status, rc;

	if ((rc = hwt_step_read_pc(t->tid, &entry)) < 0)
		return hwt_err_set(err, -rc, "reading %s's entry point: %s",
				   prog, strerror(-rc));
	hwt_sw_ring_start(&t->ring, entry);
	if ((rc = hwt_os_singlestep(t->tid, 0)) < 0)
		return hwt_err_set(err, -rc, "stepping %s: %s", prog,
				   strerror(-rc));
	if ((rc = wait_for(t->tid, &status, __WALL)) < 0)
		return hwt_err_set(err, -rc, "waiting for %s: %s", prog,
				   strerror(-rc));
	if (!WIFSTOPPED(status) || status >> 8 != SIGTRAP)
		return hwt_err_set(err, EPROTO,
				   "%s did not stop at its entry point (wait "
				   "status 0x%x)", prog, status);
	if ((rc = hwt_step_read_pc(t->tid, &pc)) < 0)
		return hwt_err_set(err, -rc, "reading %s's pc: %s", prog,
				   strerror(-rc));
	/* A kernel without that report has executed the first instruction. */
	if (pc != entry)
		hwt_sw_ring_step(&t->ring, pc, false);
	t->state = PT_STOPPED;
	hwt_step_log_regs(t);
	return hwt_step_modules_refresh(c, t->tid, err);
}

int hwt_step_launch(const struct hwt_collect_opts *opts, char *const argv[],
		  struct hwt_collector **out, struct hwt_err *err)
{
	struct step_collector *c;
	struct step_thread *t;
	int errpipe[2], status, rc;
	bool reaped = false;
	pid_t pid;

	c = calloc(1, sizeof(*c));
	if (!c)
		return hwt_err_set(err, ENOMEM, "out of memory");
	c->base.backend = &hwt_backend_ptrace;
	c->base.tracer_tid = gettid();
	c->base.state = HWT_COLLECTOR_ENDED;   /* nothing to kill yet */
	c->buffer_size = opts->buffer_size;
	c->chunk_payload = hwt_sw_ring_chunk_payload_for(opts->buffer_size);
	/* A debugger stepping back needs the registers and memory of the
	 * past, live and from the bundle a recording becomes. */
	c->log_regs = true;
	if ((rc = hwt_step_threads_init(c, err)) < 0)
		goto fail;
	if (opts->defer_recording) {
		rc = hwt_step_launch_deferred(c, opts, argv, err);
		hwt_step_live_init(c);
		if (rc < 0)
			goto fail;
		*out = &c->base;
		return 0;
	}
	if (opts->pin != HWT_PIN_NONE && (rc = hwt_step_pin(c, opts, err)) < 0)
		goto fail;
	/* The program inherits the pinning; detach gives it back the mask
	 * it would have had. */
	c->tracee_pinned = c->pinned;
	c->tracee_affinity = c->saved_affinity;
	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		rc = hwt_err_set(err, errno, "pipe: %s", strerror(errno));
		goto fail;
	}
	pid = fork();
	if (pid == 0)
		child(argv, errpipe[1]);
	close(errpipe[1]);
	if (pid < 0) {
		rc = hwt_err_set(err, errno, "cannot fork to run %s: %s",
				 argv[0], strerror(errno));
		close(errpipe[0]);
		goto fail;
	}
	c->base.pid = pid;
	hwt_step_live_init(c);
	c->base.state = HWT_COLLECTOR_LAUNCHED;   /* from here: kill on fail */
	if ((rc = wait_for(pid, &status, WUNTRACED)) < 0 || !WIFSTOPPED(status)) {
		if (rc == 0)
			c->base.state = HWT_COLLECTOR_ENDED;   /* reaped */
		rc = hwt_err_set(err, rc < 0 ? -rc : ECHILD,
				 "%s did not stop before exec", argv[0]);
		close(errpipe[0]);
		goto fail;
	}
	if (ptrace(PTRACE_SEIZE, pid, 0, TRACE_OPTIONS) < 0) {
		rc = hwt_err_set(err, errno,
				 "cannot trace %s: %s; check "
				 "/proc/sys/kernel/yama/ptrace_scope and that "
				 "no seccomp policy forbids ptrace", argv[0],
				 strerror(errno));
		close(errpipe[0]);
		goto fail;
	}
	kill(pid, SIGCONT);
	rc = wait_exec(pid, errpipe[0], argv[0], &reaped, err);
	close(errpipe[0]);
	if (reaped)
		c->base.state = HWT_COLLECTOR_ENDED;
	if (rc < 0)
		goto fail;
	if ((rc = hwt_step_thread_add(c, pid, &t, err)) < 0 ||
	    (rc = settle_at_entry(c, t, argv[0], err)) < 0)
		goto fail;
	*out = &c->base;
	return 0;
fail:
	hwt_backend_ptrace.close(&c->base);
	return rc;
}
