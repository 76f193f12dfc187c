// SPDX-License-Identifier: BSD-2-Clause
/* seize.c - a launched program followed with PTRACE_SEIZE while a
 * recorder records it (seize.h).
 *
 * The program is forked blocked on a pipe and seized for exec, clone and
 * exit events only; threads are never stepped. A new thread is attached
 * at its creator's clone stop: it is then traced but has not run, and it
 * stops once (PTRACE_EVENT_STOP) before its first instruction. That stop
 * can be reported before the creator's clone stop; such a thread is held
 * until the clone stop has attached it.
 *
 * Signal-delivery stops are where a fault shows: a signal whose action is
 * to terminate (from /proc dispositions, as the ptrace backend decides)
 * ends the run with its thread stopped at the faulting instruction and
 * the signal not delivered; every other thread is brought to a stop with
 * PTRACE_INTERRUPT so the process can be examined and dumped. */
#include <errno.h>
#include <linux/audit.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/proc.h"
#include "seize.h"
#include "array.h"

#define TRACE_OPTIONS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | \
		       PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)
#define SYSCALL_STOP (SIGTRAP | 0x80)     /* with PTRACE_O_TRACESYSGOOD */

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#endif

/* While a recorder has descriptors to watch, ptrace stops are reaped
 * without blocking between polls; an idle wait grows to this bound, which
 * is the longest a new stop waits for us. */
#define POLL_MAX_MS 16

/* on_stop: the process stopped on a fatal signal. */
#define FAULTED 1

void hwt_seize_init(struct hwt_seize *s, const struct hwt_seize_ops *ops,
		    void *ctx, const char *prog)
{
	memset(s, 0, sizeof(*s));
	s->ops = ops;
	s->ctx = ctx;
	s->prog = prog;
	s->pid = -1;
	s->held.pid = -1;
	s->held.go_fd = s->held.err_fd = -1;
	hwt_child_wake_init(&s->wake);
}

static struct hwt_seize_thread *find(struct hwt_seize *s, pid_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid && !s->threads[i].gone)
			return &s->threads[i];
	return NULL;
}

static struct hwt_seize_thread *add(struct hwt_seize *s, pid_t tid,
				    struct hwt_err *err)
{
	struct hwt_seize_thread *t;

	if (HWT_ARRAY_RESERVE(s->threads, s->alloc, s->nthreads + 1, 8)) {
		hwt_err_set(err, ENOMEM, "out of memory following the threads "
			    "of %s", s->prog);
		return NULL;
	}
	t = &s->threads[s->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	return t;
}

static int resume_request(const struct hwt_seize *s)
{
	return s->ops->maps_change ? PTRACE_SYSCALL : PTRACE_CONT;
}

static int resume(struct hwt_seize *s, pid_t tid, int sig,
		  struct hwt_err *err)
{
	/* ESRCH: it was killed meanwhile; its exit is reported later. */
	if (ptrace(resume_request(s), tid, 0, (void *)(long)sig) < 0 &&
	    errno != ESRCH)
		return hwt_err_set(err, errno, "resuming thread %d of %s: %s",
				   (int)tid, s->prog, strerror(errno));
	return 0;
}

int hwt_seize_launch(struct hwt_seize *s, char *const argv[],
		     struct hwt_err *err)
{
	/* Syscall stops are told apart from SIGTRAPs: asked for by the
	 * recorder, and by live control at the end of the first execve. */
	long options = TRACE_OPTIONS | PTRACE_O_TRACESYSGOOD;
	struct hwt_seize_thread *t;
	int rc;

	if ((rc = hwt_held_fork(argv, &s->held, err)) < 0)
		return rc;
	s->pid = s->held.pid;
	if (ptrace(PTRACE_SEIZE, s->pid, 0, (void *)options) < 0)
		return hwt_err_set(err, errno, "cannot follow %s with ptrace: "
				   "%s; check /proc/sys/kernel/yama/ptrace_scope",
				   argv[0], strerror(errno));
	if (!(t = add(s, s->pid, err)))
		return -ENOMEM;
	if ((rc = s->ops->attach(s->ctx, s->pid, true, err)) < 0)
		return rc;
	t->attached = true;
	return 0;
}

/* PTRACE_EVENT_CLONE: attach the new thread; it has not run. If its own
 * first stop came first, it was held there: let it go now. */
static int on_clone(struct hwt_seize *s, pid_t tid, struct hwt_err *err)
{
	struct hwt_seize_thread *t;
	unsigned long msg;
	pid_t child;
	int rc;

	if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) < 0)
		return hwt_err_set(err, errno, "reading a new thread's id: %s",
				   strerror(errno));
	child = (pid_t)msg;
	if (!(t = find(s, child)) && !(t = add(s, child, err)))
		return -ENOMEM;
	if ((rc = s->ops->attach(s->ctx, child, false, err)) < 0)
		return rc;
	/* add() may have moved the array: find it again. */
	t = find(s, child);
	t->attached = true;
	if (!t->stopped)
		return 0;
	t->stopped = false;
	return resume(s, child, 0, err);
}

/* A syscall stop: at the entry of a call that can remove code mappings,
 * the recorder looks at them before they change. */
static int on_syscall(struct hwt_seize *s, pid_t tid, struct hwt_err *err)
{
	struct __ptrace_syscall_info si;
	bool changes;

	memset(&si, 0, sizeof(si));
	if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, (void *)sizeof(si), &si) <= 0)
		return 0;    /* gone meanwhile: nothing will change */
	if (si.op != PTRACE_SYSCALL_INFO_ENTRY)
		return 0;
#ifdef NATIVE_ARCH
	if (si.arch == NATIVE_ARCH)
		changes = si.entry.nr == SYS_munmap ||
			  si.entry.nr == SYS_mremap ||
			  (si.entry.nr == SYS_mmap &&
			   (si.entry.args[3] & MAP_FIXED));
	else
#endif
		changes = true;   /* numbers of another ABI: assume it may */
	return changes ? s->ops->maps_change(s->ctx, tid, err) : 0;
}

/* A signal-delivery stop: a signal the program does not catch or ignore
 * and whose default action terminates is a fault. The thread stays at
 * the faulting instruction with the signal not yet delivered. */
static int on_signal(struct hwt_seize *s, struct hwt_seize_thread *t,
		     int sig, struct hwt_err *err)
{
	enum hwt_sig_action action;
	struct user_regs_struct regs;

	/* Unreadable status: the thread is being killed; let it go. */
	if (hwt_proc_sig_action(t->tid, sig, &action, NULL) < 0 ||
	    action != HWT_SIG_KILLS)
		return 0;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &regs) < 0)
		return hwt_err_set(err, errno, "reading the registers of "
				   "faulting thread %d: %s", (int)t->tid,
				   strerror(errno));
	memset(&s->fault_siginfo, 0, sizeof(s->fault_siginfo));
	ptrace(PTRACE_GETSIGINFO, t->tid, 0, &s->fault_siginfo);
	s->fault_tid = t->tid;
	t->stopped = true;
	t->pending_signal = sig;
	memset(&s->end, 0, sizeof(s->end));
	s->end.reason = HWT_STOP_FAULT;
	s->end.signal = sig;
	s->end.tid = t->tid;
	s->end.pc = regs.rip;
	return FAULTED;
}

/* A thread other than the leader that calls execve takes over the
 * leader's tid: its old tid is gone without a death of its own. */
static void on_exec(struct hwt_seize *s, pid_t tid)
{
	struct hwt_seize_thread *t;
	unsigned long msg;

	if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) == 0 &&
	    (pid_t)msg != tid && (t = find(s, (pid_t)msg)))
		t->gone = true;
}

static int on_stop(struct hwt_seize *s, pid_t tid, int status,
		   struct hwt_err *err)
{
	const struct hwt_seize_ops *ops = s->ops;
	struct hwt_seize_thread *t = find(s, tid);
	int event = status >> 16, sig = WSTOPSIG(status), rc = 0;

	switch (event) {
	case PTRACE_EVENT_CLONE:
		rc = on_clone(s, tid, err);
		sig = 0;
		break;
	case PTRACE_EVENT_EXEC:
		on_exec(s, tid);
		if (ops->exec)
			rc = ops->exec(s->ctx, tid, err);
		sig = 0;
		break;
	case PTRACE_EVENT_EXIT:
		if (ops->exiting && t && t->attached)
			rc = ops->exiting(s->ctx, tid, err);
		sig = 0;
		break;
	case PTRACE_EVENT_STOP:
		/* A group-stop: keep the program's own stop semantics. */
		if (sig != SIGTRAP) {
			ptrace(PTRACE_LISTEN, tid, 0, 0);
			return 0;
		}
		/* A new thread's first stop before its clone stop was
		 * seen: hold it until it is attached. */
		if (!t || !t->attached) {
			if (!t && !(t = add(s, tid, err)))
				return -ENOMEM;
			t->stopped = true;
			return 0;
		}
		sig = 0;
		break;
	default:
		if (sig == SYSCALL_STOP) {
			rc = ops->maps_change ? on_syscall(s, tid, err) : 0;
			sig = 0;
		} else if (t && (rc = on_signal(s, t, sig, err)) != 0) {
			/* A fault stops here, any other signal is
			 * delivered. */
			return rc;
		}
		break;
	}
	if (rc < 0)
		return rc;
	return resume(s, tid, sig, err);
}

/* A thread or the whole process is gone; true when it was the leader. */
static bool on_death(struct hwt_seize *s, pid_t tid, int status)
{
	struct hwt_seize_thread *t = find(s, tid);

	if (t) {
		t->gone = true;
		t->stopped = false;
		/* Its step guard's byte goes back while others run. */
		hwt_seize_guard_drop(s, t, tid == s->pid);
	}
	if (tid != s->pid)
		return false;
	s->reaped = true;
	s->faulted = false;
	memset(&s->end, 0, sizeof(s->end));
	if (WIFEXITED(status)) {
		s->end.reason = HWT_STOP_EXITED;
		s->end.status = WEXITSTATUS(status);
	} else {
		s->end.reason = HWT_STOP_SIGNALED;
		s->end.signal = WTERMSIG(status);
	}
	return true;
}

pid_t hwt_seize_wait(struct hwt_seize *s, int *status, int flags,
		     const char *what, struct hwt_err *err)
{
	for (;;) {
		pid_t tid = waitpid(-1, status, __WALL | __WNOTHREAD | flags);

		if (tid >= 0)
			return tid;
		if (errno != EINTR)
			return hwt_err_set(err, errno, "waiting for %s%s: %s",
					   s->prog, what, strerror(errno));
	}
}

pid_t hwt_seize_wait_or_poll(struct hwt_seize *s, int *status,
			     struct pollfd *fds, size_t n, int *idle_ms,
			     int *ready, struct hwt_err *err)
{
	struct pollfd all[HWT_SEIZE_POLL_MAX + 1];
	int wake_fd, rc;
	pid_t tid;

	*ready = 0;
	if (n > HWT_SEIZE_POLL_MAX)
		n = HWT_SEIZE_POLL_MAX;
	/* Armed before the non-blocking wait: a stop after it wakes poll. */
	wake_fd = hwt_child_wake_arm(&s->wake);
	tid = hwt_seize_wait(s, status, WNOHANG, "", err);
	if (tid != 0) {
		hwt_child_wake_disarm(&s->wake);
		if (tid > 0)
			*idle_ms = HWT_SEIZE_IDLE_MS;
		return tid;
	}
	memcpy(all, fds, n * sizeof(*fds));
	if (wake_fd >= 0)
		all[n] = (struct pollfd){ .fd = wake_fd, .events = POLLIN };
	rc = poll(all, (nfds_t)n + (wake_fd >= 0), *idle_ms);
	hwt_child_wake_disarm(&s->wake);
	if (rc < 0 && errno != EINTR)
		return hwt_err_set(err, errno, "poll: %s", strerror(errno));
	for (size_t i = 0; i < n; i++) {
		fds[i].revents = rc > 0 ? all[i].revents : 0;
		*ready += fds[i].revents != 0;
	}
	if (rc == 0 && *idle_ms < POLL_MAX_MS)
		*idle_ms *= 2;
	return 0;
}

/* Wait for the next ptrace event. With descriptors to watch, poll them
 * between non-blocking waits: their wakeups are served while no stop
 * comes. Returns the tid, or 0 after serving descriptors. */
static pid_t next_event(struct hwt_seize *s, int *status, int *idle_ms,
			struct hwt_err *err)
{
	struct pollfd *fds = NULL;
	size_t n = s->ops->pollfds ? s->ops->pollfds(s->ctx, &fds) : 0;
	pid_t tid;
	int ready;

	if (!n)
		return hwt_seize_wait(s, status, 0, "", err);
	tid = hwt_seize_wait_or_poll(s, status, fds, n, idle_ms, &ready, err);
	if (tid != 0)
		return tid;
	return ready ? s->ops->readable(s->ctx, err) : 0;
}

static bool all_held(const struct hwt_seize *s)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (!s->threads[i].gone && !s->threads[i].stopped)
			return false;
	return true;
}

/* After a fault: bring every other thread to a ptrace-stop so the process
 * can be examined and its core written. Signals that arrive meanwhile are
 * held for finish; threads created meanwhile are attached and held at
 * their first stop. Returns FAULTED, or 0 when the process was killed
 * from outside meanwhile (s->end says how). */
static int quiesce(struct hwt_seize *s, struct hwt_err *err)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (!s->threads[i].gone && !s->threads[i].stopped)
			ptrace(PTRACE_INTERRUPT, s->threads[i].tid, 0, 0);
	while (!all_held(s)) {
		struct hwt_seize_thread *t;
		int status, rc, event, sig;
		pid_t tid = hwt_seize_wait(s, &status, 0, "'s threads to stop",
					   err);

		if (tid < 0)
			return tid;
		if (!WIFSTOPPED(status)) {
			if (on_death(s, tid, status))
				return 0;
			continue;
		}
		event = status >> 16;
		sig = WSTOPSIG(status);
		if (event == PTRACE_EVENT_CLONE) {
			unsigned long msg;
			pid_t child;

			if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) < 0)
				return hwt_err_set(err, errno, "reading a new "
						   "thread's id: %s",
						   strerror(errno));
			child = (pid_t)msg;
			if (!(t = find(s, child)) && !(t = add(s, child, err)))
				return -ENOMEM;
			if ((rc = s->ops->attach(s->ctx, child, false,
						 err)) < 0)
				return rc;
			find(s, child)->attached = true;
		}
		if (!(t = find(s, tid)) && !(t = add(s, tid, err)))
			return -ENOMEM;
		t->stopped = true;
		/* A signal-delivery stop holds its signal; event and
		 * syscall stops hold none. */
		if (!event && sig != SYSCALL_STOP)
			t->pending_signal = sig;
	}
	return FAULTED;
}

int hwt_seize_run(struct hwt_seize *s, struct hwt_err *err)
{
	int idle_ms = HWT_SEIZE_IDLE_MS, rc;

	hwt_held_release(&s->held);
	/* Started for live control but run to the end instead: let the
	 * threads held at the first instruction go. */
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].stopped && !s->threads[i].gone) {
			s->threads[i].stopped = false;
			if ((rc = resume(s, s->threads[i].tid, 0, err)) < 0)
				return rc;
		}
	for (;;) {
		int status;
		pid_t tid = next_event(s, &status, &idle_ms, err);

		if (tid < 0)
			return tid;
		if (tid == 0)
			continue;
		if (WIFSTOPPED(status)) {
			if ((rc = on_stop(s, tid, status, err)) < 0)
				return rc;
			if (rc == FAULTED)
				break;
			continue;
		}
		if (on_death(s, tid, status))
			break;
	}
	if (!s->reaped) {
		if ((rc = quiesce(s, err)) < 0)
			return rc;
		s->faulted = rc == FAULTED;
	}
	return hwt_held_exec_error(&s->held, s->prog, err);
}

/* A process held at a fault by this layer is in the state the core
 * writer needs: every live thread in a ptrace-stop of this tracer. */
int hwt_seize_write_core(struct hwt_seize *s, const char *path,
			 struct hwt_err *err)
{
	pid_t *tids = calloc(s->nthreads ? s->nthreads : 1, sizeof(*tids));
	struct hwt_core_desc d = {
		.pid = s->pid, .fault_tid = s->fault_tid, .tids = tids,
		.siginfo = &s->fault_siginfo, .signal = s->end.signal,
	};
	int rc;

	if (!s->faulted)
		return hwt_err_set(err, EINVAL, "%s is not held at a fault: "
				   "no core to write", s->prog);
	if (!tids)
		return hwt_err_set(err, ENOMEM, "out of memory for a core");
	for (size_t i = 0; i < s->nthreads; i++)
		if (!s->threads[i].gone)
			tids[d.ntids++] = s->threads[i].tid;
	rc = hwt_core_write(&d, path, err);
	free(tids);
	return rc;
}

/* Deliver the fault's signal (and any held for other threads) and reap
 * the process; events on the way out are let through, untraced calls. */
int hwt_seize_finish(struct hwt_seize *s, struct hwt_err *err)
{
	for (size_t i = 0; i < s->nthreads; i++) {
		struct hwt_seize_thread *t = &s->threads[i];

		if (t->stopped)
			ptrace(PTRACE_CONT, t->tid, 0,
			       (void *)(long)t->pending_signal);
		t->stopped = false;
		t->pending_signal = 0;
	}
	s->faulted = false;
	while (!s->reaped) {
		int status, sig;
		pid_t tid = hwt_seize_wait(s, &status, 0, " to end", err);

		if (tid < 0)
			return tid;
		if (!WIFSTOPPED(status)) {
			on_death(s, tid, status);
			continue;
		}
		sig = WSTOPSIG(status);
		if (status >> 16 || sig == SYSCALL_STOP)
			sig = 0;
		ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig);
	}
	return 0;
}

bool hwt_seize_exited(const struct hwt_seize *s, pid_t tid)
{
	if (s->reaped)
		return true;
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid && !s->threads[i].gone)
			return false;
	return true;
}

void hwt_seize_close(struct hwt_seize *s)
{
	int status;

	/* Killed before the pipe closes: an unreleased child never execs.
	 * A detached program is left alone. */
	if (s->pid > 0 && !s->reaped && !s->detached) {
		kill(s->pid, SIGKILL);
		/* Traced threads are ours to reap before the leader can be.
		 * A thread may still report a stop (its exit event) before
		 * it dies: let it go on to its death. */
		for (;;) {
			pid_t got = waitpid(-1, &status, __WALL | __WNOTHREAD);

			if (got < 0 && errno != EINTR)
				break;
			if (got > 0 && WIFSTOPPED(status))
				ptrace(PTRACE_CONT, got, 0, 0);
			else if (got == s->pid)
				break;
		}
		s->reaped = true;
	}
	hwt_held_close(&s->held);
	hwt_child_wake_close(&s->wake);
	hwt_seize_breaks_free(s);
	free(s->threads);
	s->threads = NULL;
	s->nthreads = s->alloc = 0;
}

void hwt_seize_forget(struct hwt_seize *s)
{
	hwt_held_close(&s->held);
	hwt_child_wake_close(&s->wake);
	hwt_seize_breaks_free(s);
	free(s->threads);
	s->threads = NULL;
	s->nthreads = s->alloc = 0;
	s->pid = -1;
}

/* ---- for live control (live.c) --------------------------------- */

struct hwt_seize_thread *hwt_seize_find(struct hwt_seize *s, pid_t tid)
{
	return find(s, tid);
}

struct hwt_seize_thread *hwt_seize_add(struct hwt_seize *s, pid_t tid,
				       struct hwt_err *err)
{
	return add(s, tid, err);
}

int hwt_seize_resume_request(const struct hwt_seize *s)
{
	return resume_request(s);
}

int hwt_seize_on_syscall(struct hwt_seize *s, pid_t tid, struct hwt_err *err)
{
	return s->ops->maps_change ? on_syscall(s, tid, err) : 0;
}

void hwt_seize_on_exec(struct hwt_seize *s, pid_t tid)
{
	on_exec(s, tid);
}

bool hwt_seize_on_death(struct hwt_seize *s, pid_t tid, int status)
{
	return on_death(s, tid, status);
}
