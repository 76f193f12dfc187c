// SPDX-License-Identifier: BSD-2-Clause
/* live.c - stop-by-stop control of a seized program (seize.h): the
 * mechanisms the rules of collect/live.c ask for (struct hwt_live_ops),
 * for the recorders that do not step: threads run freely with
 * PTRACE_CONT (PTRACE_SYSCALL when the recorder wants syscall stops)
 * while the recorder records, and step with PTRACE_SINGLESTEP when asked
 * to. What the loop finds is queued with hwt_live_queue.
 *
 * A resume runs in two phases. Threads to move whose pc is a breakpoint
 * are first stepped over it alone, the int3 bytes out of the code
 * (break.c); a STEP action is complete there. Then the int3 bytes
 * go in, the debug registers of every thread are set, and the threads
 * move until the first event, which is queued on its thread; every other
 * thread is then brought to a stop with PTRACE_INTERRUPT, events found
 * meanwhile are queued on their threads too, the int3 bytes come out and
 * the first event is returned. Queued events are returned by later
 * resumes before anything runs again.
 *
 * An interrupt asked for while a thread already sat at another stop is
 * still owed: its PTRACE_EVENT_STOP comes when the thread is let go,
 * before it executes anything, and is then passed over. A thread at an
 * int3 has executed it (the pc is one past the breakpoint): the pc is put
 * back on the breakpoint, so the stop looks like one before the
 * instruction, as with the ptrace backend. hwtrace.ko records the pc
 * after each trapped instruction, so its history ends at the breakpoint
 * address too and records the instruction once when it is re-executed.
 */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "os/machine.h"
#include <unistd.h>

#include "os/proc.h"
#include "seize.h"

#define SYSCALL_STOP (SIGTRAP | 0x80)     /* with PTRACE_O_TRACESYSGOOD */

#ifndef TRAP_HWBKPT
#define TRAP_HWBKPT 4
#endif

/* The loop's verdicts: GOING, or HWT_LIVE_ENDED (collect/live.h). */
enum { GOING = 0, ENDED = HWT_LIVE_ENDED };

static bool alive(const struct hwt_seize_thread *t)
{
	return !t->gone;
}

static bool running(const struct hwt_seize_thread *t)
{
	return !t->gone && !t->stopped;
}

static int read_pc(pid_t tid, uint64_t *pc)
{
	struct user_regs_struct r;

	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		return -errno;
	*pc = r.rip;
	return 0;
}

static size_t index_of(const struct hwt_seize *s,
		       const struct hwt_seize_thread *t)
{
	return (size_t)(t - s->threads);
}

static void queue_event(struct hwt_seize *s, struct hwt_seize_thread *t,
			enum hwt_event_kind kind, int sig)
{
	hwt_live_queue(&s->rules, &t->lt, t->tid, kind, sig, 0);
}

/* Let a stopped thread go on with its action (a step still owed is
 * taken again). */
static int go_on(struct hwt_seize *s, struct hwt_seize_thread *t, int sig,
		 struct hwt_err *err)
{
	int req = t->stepping ? PTRACE_SINGLESTEP : hwt_seize_resume_request(s);
	long rc;

	req = hwt_seize_soft_arm(s, t, req);
	/* A step over an instruction whose trap this machine loses runs
	 * to a breakpoint after it instead. */
	if (req == PTRACE_SINGLESTEP && !sig && hwt_seize_step_guard(s, t))
		req = PTRACE_CONT;
	t->stopped = false;
	t->sig_stop = false;
	rc = req == PTRACE_SINGLESTEP ? hwt_os_singlestep(t->tid, sig)
		: ptrace(req, t->tid, 0, (void *)(long)sig) < 0 ? -errno : 0;
	/* ESRCH: killed meanwhile; its death is reported later. */
	if (rc < 0 && rc != -ESRCH)
		return hwt_err_set(err, (int)-rc, "resuming thread %d of %s: "
				   "%s", (int)t->tid, s->prog,
				   strerror((int)-rc));
	return 0;
}

/* Hold t stopped, or let it go when nothing asks to stop it. */
static int hold_or_go(struct hwt_seize *s, struct hwt_seize_thread *t,
		      struct hwt_err *err)
{
	if (hwt_live_holds(&s->rules, &t->lt))
		return 0;
	return go_on(s, t, 0, err);
}

/* ---- stops ------------------------------------------------------------- */

/* A live thread's first stop (before its first instruction). */
static int first_stop(struct hwt_seize *s, struct hwt_seize_thread *t,
		      struct hwt_err *err)
{
	t->born = false;
	t->stopped = true;
	/* A new thread has no debug registers of its own yet. */
	hwt_seize_dr_apply(s, t, NULL);
	if (t->announce) {
		t->announce = false;
		queue_event(s, t, HWT_EVENT_THREAD_CREATED, 0);
		return 0;
	}
	return hold_or_go(s, t, err);
}

/* PTRACE_EVENT_CLONE: the recorder attaches the new thread before it runs;
 * it gets the action of threads born now. */
static int on_clone(struct hwt_seize *s, struct hwt_seize_thread *parent,
		    struct hwt_err *err)
{
	pid_t ptid = parent->tid, child;
	struct hwt_seize_thread *t;
	unsigned long msg;
	int rc;

	if (ptrace(PTRACE_GETEVENTMSG, ptid, 0, &msg) < 0)
		return hwt_err_set(err, errno, "reading a new thread's id: %s",
				   strerror(errno));
	child = (pid_t)msg;
	if (!(t = hwt_seize_find(s, child))) {
		if (!(t = hwt_seize_add(s, child, err)))
			return -ENOMEM;
		t->born = true;
	}
	if ((rc = s->ops->attach(s->ctx, child, false, err)) < 0)
		return rc;
	/* add() may have moved the array. */
	t = hwt_seize_find(s, child);
	t->attached = true;
	hwt_live_born(&s->rules, &t->lt, &t->announce);
	if (t->born && t->stopped && (rc = first_stop(s, t, err)) < 0)
		return rc;
	return hold_or_go(s, hwt_seize_find(s, ptid), err);
}

/* PTRACE_EVENT_STOP with SIGTRAP: a new thread's first stop, an interrupt
 * asked for now, or one owed from an earlier resume. */
static int on_event_stop(struct hwt_seize *s, pid_t tid,
			 struct hwt_err *err)
{
	struct hwt_seize_thread *t = hwt_seize_find(s, tid);
	bool trap = false;

	if (!t) {
		/* Its creator's clone stop is still to come. */
		if (!(t = hwt_seize_add(s, tid, err)))
			return -ENOMEM;
		t->born = true;
		t->stopped = true;
		return 0;
	}
	t->stopped = true;
	if (t->born)
		return t->attached ? first_stop(s, t, err) : 0;
	t->interrupt_pending = false;
	/* A trap that came before the interrupt is still pending, because
	 * the kernel reports an interrupt before the signals queued: a step
	 * that completed, or an int3 executed as another thread's event
	 * stopped the program. Collect it now, while the breakpoints that
	 * explain it are still this resume's; it comes before the thread
	 * executes anything more. Left pending, it would be delivered at a
	 * later resume with the pc one past a breakpoint that is gone. */
	if (s->rules.stopping) {
		if (hwt_proc_sig_pending(tid, SIGTRAP, &trap, NULL) == 0 &&
		    trap)
			return go_on(s, t, 0, err);
		t->stepping = false;
		return 0;
	}
	return hold_or_go(s, t, err);
}

/* A SIGTRAP this layer caused: a breakpoint, a watch, a step. True when
 * it was one (handled), false for the program's own. */
static bool own_trap(struct hwt_seize *s, struct hwt_seize_thread *t,
		     const siginfo_t *si, struct hwt_err *err, int *rc)
{
	const struct hwt_watch *w;
	struct user_regs_struct r;
	bool guard_step = false;

	*rc = 0;
	switch (hwt_seize_guard_stop(s, t, si)) {
	case HWT_GUARD_NONE:
		break;
	case HWT_GUARD_STEPPED:      /* as if the step trapped */
		guard_step = true;
		break;
	case HWT_GUARD_OTHERS:       /* ran into another's: nothing ran */
		*rc = hold_or_go(s, t, err);
		return true;
	}
	w = hwt_seize_dr_hit(s, t);
	if (w) {
		t->stepping = false;
		queue_event(s, t, HWT_EVENT_WATCHPOINT, 0);
		if (t->lt.event.kind == HWT_EVENT_WATCHPOINT) {
			t->lt.event.data_addr = w->addr;
			t->lt.event.watch_kind = w->kind;
		}
		return true;
	}
	if (si->si_code == SI_KERNEL &&
	    ptrace(PTRACE_GETREGS, t->tid, 0, &r) == 0 &&
	    hwt_seize_is_breakpoint(s, r.rip - 1)) {
		/* Back before the breakpoint, as if not yet executed. */
		r.rip--;
		if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0) {
			*rc = hwt_err_set(err, errno, "moving thread %d back "
					  "to its breakpoint: %s",
					  (int)t->tid, strerror(errno));
			return true;
		}
		t->stepping = false;
		queue_event(s, t, HWT_EVENT_BREAKPOINT, 0);
		return true;
	}
	/* A step of soft watching that touched none: on it goes (its
	 * trap that of the guard after a cpuid, where the machine loses
	 * the step's). */
	if (t->soft_step && !t->stepping &&
	    (si->si_code == TRAP_TRACE || si->si_code == TRAP_BRKPT ||
	     guard_step)) {
		t->soft_step = false;
		*rc = hold_or_go(s, t, err);
		return true;
	}
	if (t->stepping && si->si_code != SI_USER && si->si_code != SI_TKILL) {
		t->stepping = false;
		if (t->lt.kind == HWT_RESUME_STEP)
			queue_event(s, t, HWT_EVENT_STEPPED, 0);
		return true;   /* a step over a breakpoint stays stopped */
	}
	if (si->si_code == TRAP_HWBKPT) {
		/* A read watch whose bytes changed: not reported. */
		*rc = hold_or_go(s, t, err);
		return true;
	}
	return false;
}

static int on_signal(struct hwt_seize *s, struct hwt_seize_thread *t,
		     int sig, struct hwt_err *err)
{
	siginfo_t si;
	int rc;

	t->stopped = true;
	t->sig_stop = true;
	memset(&si, 0, sizeof(si));
	ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si);
	if (sig == SIGTRAP && own_trap(s, t, &si, err, &rc))
		return rc;
	/* The signal a resume passed to a thread at a stop that cannot
	 * inject one (see start): delivered now, as it was decided. */
	if (sig == t->forward_signal && !s->rules.stopping) {
		t->forward_signal = 0;
		return go_on(s, t, sig, err);
	}
	queue_event(s, t, HWT_EVENT_SIGNAL, sig);
	return 0;
}

static int on_stop(struct hwt_seize *s, pid_t tid, int status,
		   struct hwt_err *err)
{
	struct hwt_seize_thread *t = hwt_seize_find(s, tid);
	int event = status >> 16, sig = WSTOPSIG(status), rc;

	/* A step guard goes at every stop of its thread but a trap, which
	 * own_trap looks at; with the image when an exec replaced it. */
	if (t && t->guard_bp && (event || sig != SIGTRAP))
		hwt_seize_guard_drop(s, t, event == PTRACE_EVENT_EXEC);
	if (event == PTRACE_EVENT_STOP && sig == SIGTRAP)
		return on_event_stop(s, tid, err);
	if (!t)
		return 0;   /* not ours to follow: left stopped */
	t->stopped = true;
	t->sig_stop = false;
	switch (event) {
	case PTRACE_EVENT_CLONE:
		return on_clone(s, t, err);
	case PTRACE_EVENT_EXEC:
		/* The old image and its int3 bytes are gone. */
		hwt_seize_breaks_remove(s, true);
		hwt_seize_on_exec(s, tid);
		if (s->ops->exec && (rc = s->ops->exec(s->ctx, tid, err)) < 0)
			return rc;
		if (!s->rules.stopping)
			hwt_seize_breaks_insert(s);
		return hold_or_go(s, hwt_seize_find(s, tid), err);
	case PTRACE_EVENT_EXIT:
		if (s->ops->exiting && t->attached &&
		    (rc = s->ops->exiting(s->ctx, tid, err)) < 0)
			return rc;
		/* It runs no more user code: nothing to hold it for. */
		return s->rules.stopping ? 0 : go_on(s, t, 0, err);
	case PTRACE_EVENT_STOP:
		/* A group-stop: keep the program's own stop semantics, but
		 * it is a stop when every thread is being stopped. */
		if (s->rules.stopping)
			return 0;
		t->stopped = false;
		ptrace(PTRACE_LISTEN, tid, 0, 0);
		return 0;
	case 0:
		break;
	default:
		return hold_or_go(s, t, err);
	}
	if (sig == SYSCALL_STOP) {
		if ((rc = hwt_seize_on_syscall(s, tid, err)) < 0)
			return rc;
		return hold_or_go(s, hwt_seize_find(s, tid), err);
	}
	return on_signal(s, t, sig, err);
}

/* ---- the loop ------------------------------------------------------------ */

static bool any_running(const struct hwt_seize *s)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (running(&s->threads[i]))
			return true;
	return false;
}

/* Wait for the next stop; with interrupt_fd or recorder descriptors,
 * poll them too. Returns the tid, 0 after serving descriptors (or an
 * interrupt, or nothing), or a negative errno. */
static pid_t next_stop(struct hwt_seize *s, int interrupt_fd, int *status,
		       int *idle_ms, struct hwt_err *err)
{
	struct pollfd *rfds = NULL, fds[HWT_SEIZE_POLL_MAX];
	size_t nr = s->ops->pollfds ? s->ops->pollfds(s->ctx, &rfds) : 0;
	size_t n = 0;
	bool poll_int = interrupt_fd >= 0 && !s->rules.stopping &&
		!hwt_live_has_first(&s->rules) && !s->rules.interrupted;
	pid_t tid;
	int ready;

	if (nr > HWT_SEIZE_POLL_MAX - 1)
		nr = HWT_SEIZE_POLL_MAX - 1;
	if (!nr && !poll_int)
		return hwt_seize_wait(s, status, 0, "", err);
	for (size_t i = 0; i < nr; i++)
		fds[n++] = rfds[i];
	if (poll_int)
		fds[n++] = (struct pollfd){ .fd = interrupt_fd,
					    .events = POLLIN };
	tid = hwt_seize_wait_or_poll(s, status, fds, n, idle_ms, &ready, err);
	if (tid != 0)
		return tid;
	if (ready && poll_int && fds[n - 1].revents) {
		/* The rules queue INTERRUPTED on the thread they pick. */
		s->rules.interrupted = true;
		ready--;
	}
	if (ready && nr) {
		for (size_t i = 0; i < nr; i++)
			rfds[i].revents = fds[i].revents;
		return s->ops->readable(s->ctx, err);
	}
	return 0;
}

/* Run until an event is queued or interrupt_fd is readable (or, while
 * stopping, until every thread is stopped), or the process is gone
 * (ENDED). */
static int loop(struct hwt_seize *s, int interrupt_fd, struct hwt_err *err)
{
	int idle_ms = HWT_SEIZE_IDLE_MS, rc;

	while (any_running(s) &&
	       (s->rules.stopping ||
		(!hwt_live_has_first(&s->rules) && !s->rules.interrupted))) {
		int status;
		pid_t tid = next_stop(s, interrupt_fd, &status, &idle_ms, err);

		if (tid < 0)
			return tid;
		if (tid == 0)
			continue;
		if (WIFSTOPPED(status)) {
			if ((rc = on_stop(s, tid, status, err)) < 0)
				return rc;
			continue;
		}
		{
			struct hwt_seize_thread *t = hwt_seize_find(s, tid);
			size_t i = t ? index_of(s, t) : 0;

			if (hwt_seize_on_death(s, tid, status))
				return ENDED;
			if (!t)
				continue;
			t = &s->threads[i];
			t->interrupt_pending = false;
			hwt_live_died(&s->rules, &t->lt, t->tid, status);
		}
	}
	return GOING;
}

/* The first event is queued: bring every other thread to a stop. */
static int seize_live_stop_all(void *ctx, struct hwt_err *err)
{
	struct hwt_seize *s = ctx;

	for (size_t i = 0; i < s->nthreads; i++) {
		struct hwt_seize_thread *t = &s->threads[i];

		if (!running(t) || t->born)
			continue;
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) == 0)
			t->interrupt_pending = true;
		else   /* a zombie leader: no stop will come; its death will */
			t->stopped = true;
	}
	return loop(s, -1, err);
}

/* ---- one resume ---------------------------------------------------------- */

/* Start t moving: a signal passed at a stop that cannot inject one is
 * sent and delivered when it reports. */
static int start(struct hwt_seize *s, struct hwt_seize_thread *t,
		 const struct hwt_resume_opts *o, bool step,
		 struct hwt_err *err)
{
	const struct hwt_resume_action *a = hwt_live_action(o, t->tid);
	int sig = a ? a->signal : 0, rc;

	if (sig && !t->sig_stop) {
		t->forward_signal = sig;
		syscall(SYS_tgkill, s->pid, t->tid, sig);
		sig = 0;
	}
	if ((rc = hwt_seize_dr_apply(s, t, err)) < 0)
		return rc;
	t->stepping = step;
	return go_on(s, t, sig, err);
}

/* Phase one: threads to move from a breakpoint address step over it with
 * the int3 bytes out, alone. True in *any when one did. */
static int step_over(struct hwt_seize *s, const struct hwt_resume_opts *o,
		     bool *any, struct hwt_err *err)
{
	int rc;

	*any = false;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct hwt_seize_thread *t = &s->threads[i];
		uint64_t pc;

		if (!alive(t) || !t->stopped || t->lt.kind == HWT_RESUME_STOP ||
		    read_pc(t->tid, &pc) < 0 || !hwt_seize_is_breakpoint(s, pc))
			continue;
		if ((rc = start(s, t, o, true, err)) < 0)
			return rc;
		*any = true;
	}
	return 0;
}

/* Phase one, then the threads to move run with the int3 bytes in until
 * an event: GOING (0), ENDED or -errno. */
static int seize_live_run(void *ctx, const struct hwt_resume_opts *o,
			  struct hwt_err *err)
{
	struct hwt_seize *s = ctx;
	bool stepped;
	int rc;

	if ((rc = step_over(s, o, &stepped, err)) < 0)
		return rc;
	if (stepped && (rc = loop(s, o->interrupt_fd, err)) != GOING)
		return rc;
	if (hwt_live_has_first(&s->rules) || s->rules.interrupted)
		return GOING;
	hwt_seize_breaks_insert(s);
	for (size_t i = 0; i < s->nthreads; i++) {
		struct hwt_seize_thread *t = &s->threads[i];

		/* A step done over a breakpoint holds its STEPPED event:
		 * complete. */
		if (!alive(t) || !t->stopped || t->lt.has_event ||
		    t->lt.kind == HWT_RESUME_STOP)
			continue;
		if ((rc = start(s, t, o, t->lt.kind == HWT_RESUME_STEP,
				err)) < 0)
			return rc;
	}
	return loop(s, o->interrupt_fd, err);
}

static size_t seize_live_nthreads(void *ctx)
{
	return ((struct hwt_seize *)ctx)->nthreads;
}

static struct hwt_live_thread *seize_live_thread(void *ctx, size_t i, pid_t *tid,
					  bool *gone)
{
	struct hwt_seize_thread *t = &((struct hwt_seize *)ctx)->threads[i];

	*tid = t->tid;
	*gone = t->gone;
	return &t->lt;
}

static int seize_live_read_pc(void *ctx, pid_t tid, uint64_t *pc)
{
	return read_pc(tid, pc);
}

static bool seize_live_is_breakpoint(void *ctx, uint64_t pc)
{
	return hwt_seize_is_breakpoint(ctx, pc);
}

static int seize_live_prepare(void *ctx, const struct hwt_resume_opts *o,
		       struct hwt_err *err)
{
	return hwt_seize_breaks_set(ctx, o, err);
}

static void seize_live_release(void *ctx, bool ended)
{
	struct hwt_seize *s = ctx;

	if (!s->reaped)
		hwt_seize_breaks_remove(s, false);
}

static bool seize_live_ended(void *ctx, struct hwt_collect_end *end)
{
	struct hwt_seize *s = ctx;

	*end = s->end;
	return s->reaped;
}

static const struct hwt_live_ops seize_live_ops = {
	.nthreads = seize_live_nthreads,
	.thread = seize_live_thread,
	.read_pc = seize_live_read_pc,
	.is_breakpoint = seize_live_is_breakpoint,
	.prepare = seize_live_prepare,
	.run = seize_live_run,
	.stop_all = seize_live_stop_all,
	.release = seize_live_release,
	.ended = seize_live_ended,
};

int hwt_seize_resume(struct hwt_seize *s, const struct hwt_resume_opts *o,
		     struct hwt_collect_event *ev, struct hwt_err *err)
{
	return hwt_live_resume(&s->rules, o, ev, err);
}

/* ---- start, access, detach ---------------------------------------------- */

int hwt_seize_start(struct hwt_seize *s, char *const argv[], bool live,
		    pid_t *pid, struct hwt_err *err)
{
	int rc = hwt_seize_launch(s, argv, err);

	if (rc == 0 && live)
		rc = hwt_seize_live_start(s, err);
	if (rc == 0)
		*pid = s->pid;
	return rc;
}

int hwt_seize_live_start(struct hwt_seize *s, struct hwt_err *err)
{
	bool exec_seen = false;

	if (s->live)
		return 0;
	hwt_held_release(&s->held);
	s->live = true;
	s->rules = (struct hwt_live){ .ops = &seize_live_ops, .ctx = s,
				      .pid = s->pid };
	for (;;) {
		struct hwt_seize_thread *t;
		int status, rc, sig;
		pid_t tid = hwt_seize_wait(s, &status, 0, " to start", err);

		if (tid < 0)
			return tid;
		if (!WIFSTOPPED(status)) {
			if (!hwt_seize_on_death(s, tid, status))
				continue;
			rc = hwt_held_exec_error(&s->held, s->prog, err);
			return rc < 0 ? rc : hwt_err_set(err, ECHILD, "%s ended "
							 "before its first "
							 "instruction",
							 s->prog);
		}
		sig = WSTOPSIG(status);
		if (status >> 16 == PTRACE_EVENT_EXEC) {
			hwt_seize_on_exec(s, tid);
			if (s->ops->exec &&
			    (rc = s->ops->exec(s->ctx, tid, err)) < 0)
				return rc;
			exec_seen = true;
			/* On to the end of the call: the recorder has the
			 * entry point there. */
			ptrace(PTRACE_SYSCALL, tid, 0, 0);
			continue;
		}
		if (exec_seen && sig == SYSCALL_STOP && tid == s->pid &&
		    (t = hwt_seize_find(s, tid))) {
			t->stopped = true;
			return 0;
		}
		/* Before the exec: the launcher's own stops, let through. */
		if (status >> 16 || sig == SYSCALL_STOP)
			sig = 0;
		ptrace(exec_seen ? PTRACE_SYSCALL : PTRACE_CONT, tid, 0,
		       (void *)(long)sig);
	}
}

size_t hwt_seize_live_tids(struct hwt_seize *s, pid_t *tids, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nthreads; i++) {
		if (!alive(&s->threads[i]) || !s->threads[i].attached)
			continue;
		if (n < cap)
			tids[n] = s->threads[i].tid;
		n++;
	}
	return n;
}

int hwt_seize_regset(struct hwt_seize *s, pid_t tid, int nt_type, void *buf,
		     size_t *len, bool write, struct hwt_err *err)
{
	struct hwt_seize_thread *t = hwt_seize_find(s, tid);
	struct iovec iov = { .iov_base = buf, .iov_len = *len };

	if (nt_type != NT_PRSTATUS && nt_type != NT_PRFPREG &&
	    nt_type != NT_X86_XSTATE)
		return hwt_err_set(err, EINVAL, "register set type %d; use "
				   "NT_PRSTATUS, NT_PRFPREG or NT_X86_XSTATE",
				   nt_type);
	if (!t || !t->stopped)
		return hwt_err_set(err, ESRCH, "thread %d is not a stopped "
				   "thread of process %d", (int)tid,
				   (int)s->pid);
	if (ptrace(write ? PTRACE_SETREGSET : PTRACE_GETREGSET, tid,
		   (void *)(uintptr_t)nt_type, &iov) < 0)
		return hwt_err_set(err, errno, "%s register set %d of thread "
				   "%d: %s", write ? "writing" : "reading",
				   nt_type, (int)tid, strerror(errno));
	*len = iov.iov_len;
	return 0;
}

int hwt_seize_detach(struct hwt_seize *s, struct hwt_err *err)
{
	int rc = 0;

	for (size_t i = 0; i < s->nthreads; i++) {
		struct hwt_seize_thread *t = &s->threads[i];
		int sig = 0;

		if (!alive(t))
			continue;
		hwt_dr_watches_clear(t->tid, &t->dr_gen);
		/* A signal queued and not reported yet is the program's:
		 * it gets it. */
		if (t->sig_stop && t->lt.has_event &&
		    t->lt.event.kind == HWT_EVENT_SIGNAL)
			sig = t->lt.event.signal;
		if (ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)sig) < 0 &&
		    errno != ESRCH && !rc)
			rc = hwt_err_set(err, errno, "detaching thread %d of "
					 "%s: %s", (int)t->tid, s->prog,
					 strerror(errno));
		t->stopped = false;
	}
	s->detached = true;
	return rc;
}
