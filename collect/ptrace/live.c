// SPDX-License-Identifier: BSD-2-Clause
/* live.c - the stepper under live control: the mechanisms the rules of
 * collect/live.c ask for (struct hwt_live_ops), and the checks the
 * single-step loop of run.c makes, while c->live is set, after every
 * step (step done, breakpoint, write watch), at every signal (reported,
 * never delivered on our own) and at every thread's death; what they
 * find is queued with hwt_live_queue. Breakpoints are checked at every
 * step, so no code is modified.
 *
 * Stopping a thread with PTRACE_INTERRUPT races with its single step: its
 * step trap and the interrupt stop are reported in either order. A step
 * trap seen first is a step like any other, and the thread is let go to
 * collect the interrupt stop, which comes before it executes anything.
 * An interrupt stop seen first may leave the step's SIGTRAP pending; it
 * is collected right away so the step is not lost nor counted twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array.h"
#include "tracer.h"

static bool is_breakpoint(const struct step_live *l, uint64_t pc)
{
	return l->nbreakpoints &&
	       bsearch(&pc, l->breakpoints, l->nbreakpoints,
		       sizeof(*l->breakpoints), hwt_cmp_u64);
}

static int read_watch(int memfd, const struct hwt_watch *w, uint64_t *value)
{
	uint64_t v = 0;

	if (pread(memfd, &v, w->len, (off_t)w->addr) != (ssize_t)w->len)
		return -EFAULT;
	*value = v;
	return 0;
}

/* Queue an event on t (live.h's rules decide whether it stands); the
 * loop's verdict for t is then to stay stopped. */
static int queue(struct step_collector *c, struct step_thread *t,
		 enum hwt_event_kind kind, int sig, uint64_t data_addr)
{
	t->state = t->state == PT_GONE ? PT_GONE : PT_STOPPED;
	hwt_live_queue(&c->rules, &t->lt, t->tid, kind, sig, data_addr);
	return PT_LIVE_EVENT;
}

static int watch_event(struct step_collector *c, struct step_thread *t,
		       const struct hwt_watch *w)
{
	int rc = queue(c, t, HWT_EVENT_WATCHPOINT, 0, w->addr);

	if (t->lt.event.kind == HWT_EVENT_WATCHPOINT)
		t->lt.event.watch_kind = w->kind;
	return rc;
}

/* A READ watch's bytes for the debug-register rules. */
static bool read_dr_watch(void *ctx, const struct hwt_watch *w, uint64_t *v)
{
	const struct step_live *l = ctx;

	return read_watch(l->memfd, w, v) == 0;
}

static bool live_may_go(struct step_collector *c, struct step_thread *t)
{
	/* While stopping, a thread goes on only to report the interrupt
	 * stop it owes, which comes before it executes anything. */
	if (c->rules.stopping)
		return t->interrupt_pending;
	return !hwt_live_holds(&c->rules, &t->lt);
}

static int live_after_step(struct step_collector *c, struct step_thread *t,
			   uint64_t pc)
{
	struct step_live *l = c->live;
	/* Read first: DR6 is cleared on a hit, whatever gets reported. */
	const struct hwt_watch *hit = hwt_step_watch_hit(c, t, read_dr_watch,
							 l);

	/* Write watches: any thread's instruction (or system call) may
	 * have changed the bytes; the one that just stepped did. */
	for (size_t i = 0; i < l->nwatches; i++) {
		uint64_t v;

		if (l->watches[i].kind != HWT_WATCH_WRITE ||
		    read_watch(l->memfd, &l->watches[i], &v) < 0 ||
		    v == l->watch_values[i])
			continue;
		l->watch_values[i] = v;
		return watch_event(c, t, &l->watches[i]);
	}
	if (hit)
		return watch_event(c, t, hit);
	if (t->lt.kind == HWT_RESUME_STEP)
		return queue(c, t, HWT_EVENT_STEPPED, 0, 0);
	if (is_breakpoint(l, pc))
		return queue(c, t, HWT_EVENT_BREAKPOINT, 0, 0);
	hwt_step_go_on(c, t, PTRACE_SINGLESTEP, 0);
	return PT_KEEP_GOING;
}

static bool live_swallow(struct step_collector *c, struct step_thread *t,
			 int sig)
{
	siginfo_t si;

	/* The helper thread's SIGSTOP (interrupt.c) only woke the program
	 * from a system call: never delivered nor reported, and the call
	 * it interrupted restarts. */
	memset(&si, 0, sizeof(si));
	if (sig != SIGSTOP || ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) < 0 ||
	    si.si_code != SI_USER || si.si_pid != getpid())
		return false;
	if (atomic_load(&c->interrupt_fired) && !c->rules.stopping)
		t->state = PT_STOPPED;   /* the loop sees the flag */
	else
		hwt_step_go_on(c, t, PTRACE_SINGLESTEP, 0);
	return true;
}

static int live_signal(struct step_collector *c, struct step_thread *t, int sig)
{
	/* The signal a resume passed to a thread at an event stop (see
	 * start_threads): delivered now, as it was decided. */
	if (sig == t->forward_signal && !c->rules.stopping) {
		enum hwt_sig_action act;

		t->forward_signal = 0;
		if (hwt_proc_sig_action(t->tid, sig, &act, NULL) == 0 &&
		    act == HWT_SIG_CAUGHT) {
			t->handler_entry_next = true;
			hwt_step_memlog_signal(t);
		}
		hwt_step_go_on(c, t, PTRACE_SINGLESTEP, sig);
		return PT_KEEP_GOING;
	}
	return queue(c, t, HWT_EVENT_SIGNAL, sig, 0);
}

static int live_thread_died(struct step_collector *c, struct step_thread *t,
			    int status)
{
	t->interrupt_pending = false;
	hwt_live_died(&c->rules, &t->lt, t->tid, status);
	return PT_LIVE_EVENT;
}

static int live_born(struct step_collector *c, struct step_thread *t)
{
	t->announce = false;
	return queue(c, t, HWT_EVENT_THREAD_CREATED, 0, 0);
}

static int live_interrupt_stop(struct step_collector *c, struct step_thread *t)
{
	bool trap = false;
	uint64_t pc;

	t->interrupt_pending = false;
	t->state = PT_STOPPED;
	/* An attached thread's history starts here, and so does that of a
	 * thread born meanwhile whose first stop is this one. */
	if (!t->ring.started && hwt_step_read_pc(t->tid, &pc) == 0) {
		hwt_sw_ring_start(&t->ring, pc);
		hwt_step_log_regs(t);
		if (t->announce)
			return live_born(c, t);
	}
	/* Owed from before this resume (the seize layer's, when recording
	 * began: deferred.c): it executed nothing, so it is passed over. */
	if (!c->rules.stopping) {
		hwt_step_go_on(c, t, PTRACE_SINGLESTEP, 0);
		return PT_KEEP_GOING;
	}
	/* A step that completed before the interrupt: collect its trap now
	 * (it reports without executing anything more). */
	if (hwt_proc_sig_pending(t->tid, SIGTRAP, &trap, NULL) == 0 && trap &&
	    ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0) == 0)
		t->state = PT_RUNNING;
	return PT_KEEP_GOING;
}

static int live_exiting(struct step_collector *c, struct step_thread *t)
{
	/* Once per process: the threads that exit with it go on. */
	uint64_t pc;

	if (c->live->stop_before_exit && !c->exit_reported &&
	    !c->rules.stopping && hwt_step_read_stop(t, &pc) == 0) {
		c->exit_reported = true;
		/* The system call ran: the thread stands after it, and its
		 * history ends there as at any stop. */
		hwt_step_record_pc(t, pc);
		return queue(c, t, HWT_EVENT_EXITING, 0, 0);
	}
	hwt_step_go_on(c, t, PTRACE_CONT, 0);
	return PT_KEEP_GOING;
}

const struct step_loop_hooks hwt_step_live_hooks = {
	.may_go = live_may_go,
	.after_step = live_after_step,
	.swallow = live_swallow,
	.signal = live_signal,
	.thread_died = live_thread_died,
	.interrupt_stop = live_interrupt_stop,
	.born = live_born,
	.exiting = live_exiting,
};

size_t hwt_step_live_tids(struct hwt_collector *base, pid_t *tids, size_t cap)
{
	struct step_collector *c = step_of(base);
	size_t n = 0;

	for (size_t i = 0; i < c->nthreads; i++) {
		if (c->threads[i]->state == PT_GONE)
			continue;
		if (n < cap)
			tids[n] = c->threads[i]->tid;
		n++;
	}
	return n;
}

/* ---- the mechanisms the rules call (struct hwt_live_ops) -------------- */

static size_t step_live_nthreads(void *ctx)
{
	return ((struct step_collector *)ctx)->nthreads;
}

static struct hwt_live_thread *step_live_thread(void *ctx, size_t i, pid_t *tid,
					  bool *gone)
{
	struct step_thread *t = ((struct step_collector *)ctx)->threads[i];

	*tid = t->tid;
	*gone = t->state == PT_GONE;
	return &t->lt;
}

static int step_live_read_pc(void *ctx, pid_t tid, uint64_t *pc)
{
	return hwt_step_read_pc(tid, pc);
}

static bool step_live_is_breakpoint(void *ctx, uint64_t pc)
{
	struct step_collector *c = ctx;

	return c->live && is_breakpoint(c->live, pc);
}

static int prepare_watches(struct step_collector *c, struct step_live *l,
			   const struct hwt_resume_opts *o,
			   struct hwt_err *err)
{
	char path[64];
	int rc;

	/* Also with no watches: a previous setup is then removed. */
	if ((rc = hwt_step_dr_configure(c, o->watches, o->nwatches, err)) < 0)
		return rc;
	if (!o->nwatches)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)c->base.pid);
	l->memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (l->memfd < 0)
		return hwt_err_set(err, errno, "cannot open %s for watchpoints: "
				   "%s", path, strerror(errno));
	l->watch_values = calloc(o->nwatches, sizeof(*l->watch_values));
	if (!l->watch_values)
		return hwt_err_set(err, ENOMEM, "out of memory for watchpoints");
	l->watches = o->watches;
	l->nwatches = o->nwatches;
	for (size_t i = 0; i < o->nwatches; i++)
		if (read_watch(l->memfd, &o->watches[i], &l->watch_values[i]) < 0)
			return hwt_err_set(err, EFAULT,
					   "cannot watch 0x%llx: the address "
					   "is not mapped",
					   (unsigned long long)o->watches[i].addr);
	for (size_t i = 0; i < c->dr.used; i++)
		read_watch(l->memfd, &c->dr.watch[i], &c->dr.value[i]);
	/* Whether debug registers work is known from the first thread. */
	for (size_t i = 0; c->dr.used && i < c->nthreads; i++)
		if (c->threads[i]->state == PT_STOPPED)
			return hwt_step_dr_apply(c, c->threads[i], err);
	return 0;
}

static int step_live_prepare(void *ctx, const struct hwt_resume_opts *o,
		       struct hwt_err *err)
{
	struct step_collector *c = ctx;
	struct step_live *l = &c->resume;
	uint64_t *bps;
	int rc;

	hwt_step_set_wait_flags(c);
	*l = (struct step_live){ .memfd = -1,
				 .stop_before_exit = o->stop_before_exit };
	c->live = l;
	c->hooks = &hwt_step_live_hooks;
	if ((rc = prepare_watches(c, l, o, err)) < 0)
		return rc;
	if (!o->nbreakpoints)
		return 0;
	bps = malloc(o->nbreakpoints * sizeof(*bps));
	if (!bps)
		return hwt_err_set(err, ENOMEM, "out of memory for breakpoints");
	memcpy(bps, o->breakpoints, o->nbreakpoints * sizeof(*bps));
	qsort(bps, o->nbreakpoints, sizeof(*bps), hwt_cmp_u64);
	l->breakpoints = bps;
	l->nbreakpoints = o->nbreakpoints;
	return 0;
}

static void step_live_release(void *ctx, bool ended)
{
	struct step_collector *c = ctx;
	struct step_live *l = &c->resume;

	hwt_step_interrupt_stop(c->interrupt);
	c->interrupt = NULL;
	if (l->memfd >= 0)
		close(l->memfd);
	free(l->watch_values);
	free((void *)l->breakpoints);
	*l = (struct step_live){ .memfd = -1 };
	c->live = NULL;
	c->hooks = NULL;
}

/* The loop's verdict as the rules take it. */
static int verdict(struct step_collector *c, int rc, struct hwt_err *err)
{
	if (rc == PT_LIVE_EVENT && !c->rules.stopping &&
	    atomic_load(&c->interrupt_fired))
		c->rules.interrupted = true;
	if (rc == PT_PROCESS_ENDED) {
		c->ended = true;
		rc = hwt_step_threads_seal(c, err);
		return rc < 0 ? rc : HWT_LIVE_ENDED;
	}
	if (rc < 0) {
		/* Lost track of the program: end it rather than leave it
		 * half-stopped; the history so far is kept. */
		hwt_step_kill_and_reap(c);
		hwt_step_threads_seal(c, NULL);
		return rc;
	}
	return 0;
}

/* Start every thread whose action is to move, and step until an event. */
static int step_live_run(void *ctx, const struct hwt_resume_opts *o,
			 struct hwt_err *err)
{
	struct step_collector *c = ctx;
	int rc;

	atomic_store(&c->interrupt_fired, false);
	if (o->interrupt_fd >= 0 &&
	    (rc = hwt_step_interrupt_start(c, o->interrupt_fd, &c->interrupt,
					 err)) < 0)
		return rc;
	for (size_t i = 0; i < c->nthreads; i++) {
		struct step_thread *t = c->threads[i];
		const struct hwt_resume_action *a = hwt_live_action(o, t->tid);
		int sig = a ? a->signal : 0;

		if (t->state != PT_STOPPED || t->lt.kind == HWT_RESUME_STOP)
			continue;
		if (sig && t->event_stop) {
			/* Only a signal-delivery stop can inject a signal:
			 * send it, and deliver it when it reports, before
			 * the thread executes anything. */
			t->forward_signal = sig;
			syscall(SYS_tgkill, c->base.pid, t->tid, sig);
			sig = 0;
		} else if (sig) {
			enum hwt_sig_action act;

			/* A caught signal's handler entry is recorded as
			 * an asynchronous transfer, as in a run. */
			if (hwt_proc_sig_action(t->tid, sig, &act, NULL) == 0 &&
			    act == HWT_SIG_CAUGHT) {
				t->handler_entry_next = true;
				hwt_step_memlog_signal(t);
			}
		}
		hwt_step_dr_apply(c, t, NULL);
		hwt_step_watch_arm(c, t);
		hwt_step_single(c, t, sig);
		t->state = PT_RUNNING;
	}
	return verdict(c, hwt_step_loop(c, err), err);
}

/* An event is queued: bring every other thread to a stop. */
static int step_live_stop_all(void *ctx, struct hwt_err *err)
{
	struct step_collector *c = ctx;

	for (size_t i = 0; i < c->nthreads; i++) {
		struct step_thread *t = c->threads[i];

		if (t->state != PT_RUNNING && t->state != PT_LISTENING)
			continue;
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) == 0)
			t->interrupt_pending = true;
		else   /* a zombie leader: no stop will come; its death will */
			t->state = PT_STOPPED;
	}
	return verdict(c, hwt_step_loop(c, err), err);
}

static bool step_live_ended(void *ctx, struct hwt_collect_end *end)
{
	struct step_collector *c = ctx;

	*end = c->base.end;
	return c->ended;
}

const struct hwt_live_ops hwt_step_live_ops = {
	.nthreads = step_live_nthreads,
	.thread = step_live_thread,
	.read_pc = step_live_read_pc,
	.is_breakpoint = step_live_is_breakpoint,
	.prepare = step_live_prepare,
	.run = step_live_run,
	.stop_all = step_live_stop_all,
	.release = step_live_release,
	.ended = step_live_ended,
};

void hwt_step_live_init(struct step_collector *c)
{
	c->rules = (struct hwt_live){ .ops = &hwt_step_live_ops, .ctx = c,
				      .pid = c->base.pid };
	c->resume = (struct step_live){ .memfd = -1 };
}

int hwt_step_resume(struct hwt_collector *base,
		    const struct hwt_resume_opts *opts,
		    struct hwt_collect_event *event, struct hwt_err *err)
{
	return hwt_live_resume(&step_of(base)->rules, opts, event, err);
}
