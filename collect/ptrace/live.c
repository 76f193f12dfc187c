/* live.c - stop-by-stop control of a traced program (all-stop).
 *
 * A resume gives each thread an action, then runs the shared single-step
 * loop of run.c with c->live set. The loop calls back here after every
 * step (step done, breakpoint, write watch), at every signal (reported,
 * never delivered on our own) and at every thread's death. The first
 * event found is queued on its thread; then every other thread is
 * brought to a stop with PTRACE_INTERRUPT, events found meanwhile are
 * queued on their threads too, and the first one is returned. Queued
 * events are returned by later resumes before anything runs again.
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

#include "tracer.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool is_breakpoint(const struct step_live *l, uint64_t pc)
{
	return l->nbreakpoints &&
	       bsearch(&pc, l->breakpoints, l->nbreakpoints,
		       sizeof(*l->breakpoints), cmp_u64);
}

static int read_watch(int memfd, const struct hwt_watch *w, uint64_t *value)
{
	uint64_t v = 0;

	if (pread(memfd, &v, w->len, (off_t)w->addr) != (ssize_t)w->len)
		return -EFAULT;
	*value = v;
	return 0;
}

/* Queue ev on t unless it holds one already (the first one wins; a
 * thread's death replaces whatever it held). */
static int queue_event(struct step_collector *c, struct step_thread *t,
		       enum hwt_event_kind kind, int sig, uint64_t data_addr)
{
	struct step_live *l = c->live;

	t->state = t->state == PT_GONE ? PT_GONE : PT_STOPPED;
	if (t->has_event && kind != HWT_EVENT_THREAD_EXITED)
		return PT_LIVE_EVENT;
	memset(&t->event, 0, sizeof(t->event));
	t->event.kind = kind;
	t->event.tid = t->tid;
	t->event.signal = sig;
	t->event.data_addr = data_addr;
	t->has_event = true;
	if (!l->stopping && !l->first)
		l->first = t;
	return PT_LIVE_EVENT;
}

static int watch_event(struct step_collector *c, struct step_thread *t,
		       const struct hwt_watch *w)
{
	int rc = queue_event(c, t, HWT_EVENT_WATCHPOINT, 0, w->addr);

	if (t->event.kind == HWT_EVENT_WATCHPOINT)
		t->event.watch_kind = w->kind;
	return rc;
}

/* A debug register hit: any access for ACCESS, for READ only when the
 * bytes kept their value (x86 cannot watch reads alone). */
static bool dr_reportable(struct step_collector *c, const struct step_live *l,
			  size_t slot)
{
	uint64_t v;
	bool same;

	if (read_watch(l->memfd, &c->dr_watch[slot], &v) < 0)
		return c->dr_watch[slot].kind == HWT_WATCH_ACCESS;
	same = v == c->dr_value[slot];
	c->dr_value[slot] = v;
	return c->dr_watch[slot].kind == HWT_WATCH_ACCESS || same;
}

bool hwt_step_live_may_go(struct step_collector *c, struct step_thread *t)
{
	/* While stopping, a thread goes on only to report the interrupt
	 * stop it owes, which comes before it executes anything. */
	if (c->live->stopping)
		return t->interrupt_pending;
	return !t->has_event && t->kind != HWT_RESUME_STOP;
}

int hwt_step_live_after_step(struct step_collector *c, struct step_thread *t,
			   uint64_t pc)
{
	struct step_live *l = c->live;
	/* Read first: DR6 is cleared on a hit, whatever gets reported. */
	int slot = c->dr_used ? hwt_step_dr_hit(c, t) : -1;

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
	if (slot >= 0 && dr_reportable(c, l, (size_t)slot))
		return watch_event(c, t, &c->dr_watch[slot]);
	if (t->kind == HWT_RESUME_STEP)
		return queue_event(c, t, HWT_EVENT_STEPPED, 0, 0);
	if (is_breakpoint(l, pc))
		return queue_event(c, t, HWT_EVENT_BREAKPOINT, 0, 0);
	hwt_step_go_on(c, t, PTRACE_SINGLESTEP, 0);
	return PT_KEEP_GOING;
}

bool hwt_step_live_swallow(struct step_collector *c, struct step_thread *t,
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
	if (atomic_load(&c->interrupt_fired) && !c->live->stopping)
		t->state = PT_STOPPED;   /* the loop sees the flag */
	else
		hwt_step_go_on(c, t, PTRACE_SINGLESTEP, 0);
	return true;
}

int hwt_step_live_signal(struct step_collector *c, struct step_thread *t, int sig)
{
	/* The signal a resume passed to a thread at an event stop (see
	 * start_threads): delivered now, as it was decided. */
	if (sig == t->forward_signal && !c->live->stopping) {
		enum hwt_sig_action act;

		t->forward_signal = 0;
		if (hwt_proc_sig_action(t->tid, sig, &act, NULL) == 0 &&
		    act == HWT_SIG_CAUGHT)
			t->handler_entry_next = true;
		hwt_step_go_on(c, t, PTRACE_SINGLESTEP, sig);
		return PT_KEEP_GOING;
	}
	return queue_event(c, t, HWT_EVENT_SIGNAL, sig, 0);
}

int hwt_step_live_thread_died(struct step_collector *c, struct step_thread *t,
			    int status)
{
	t->interrupt_pending = false;
	queue_event(c, t, HWT_EVENT_THREAD_EXITED,
		    WIFSIGNALED(status) ? WTERMSIG(status) : 0, 0);
	t->event.status = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
	return PT_LIVE_EVENT;
}

int hwt_step_live_born(struct step_collector *c, struct step_thread *t)
{
	t->announce = false;
	return queue_event(c, t, HWT_EVENT_THREAD_CREATED, 0, 0);
}

int hwt_step_live_interrupt_stop(struct step_collector *c, struct step_thread *t)
{
	bool trap = false;
	uint64_t pc;

	t->interrupt_pending = false;
	t->state = PT_STOPPED;
	/* An attached thread's history starts here, and so does that of a
	 * thread born meanwhile whose first stop is this one. */
	if (!t->ring.started && hwt_step_read_pc(t->tid, &pc) == 0) {
		hwt_sw_ring_start(&t->ring, pc);
		if (t->announce)
			return hwt_step_live_born(c, t);
	}
	/* A step that completed before the interrupt: collect its trap now
	 * (it reports without executing anything more). */
	if (hwt_proc_sig_pending(t->tid, SIGTRAP, &trap, NULL) == 0 && trap &&
	    ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0) == 0)
		t->state = PT_RUNNING;
	return PT_KEEP_GOING;
}

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

/* ---- one resume -------------------------------------------------------- */

static const struct hwt_resume_action *action_for(
	const struct hwt_resume_opts *o, pid_t tid)
{
	for (size_t i = 0; i < o->nactions; i++)
		if (o->actions[i].tid == tid)
			return &o->actions[i];
	return NULL;
}

/* Give every live thread its action; named threads must exist. */
static int assign_actions(struct step_collector *c,
			  const struct hwt_resume_opts *o,
			  enum hwt_resume_kind *dflt, struct hwt_err *err)
{
	const struct hwt_resume_action *all = action_for(o, 0);

	*dflt = all ? all->kind : HWT_RESUME_STOP;
	for (size_t i = 0; i < o->nactions; i++) {
		struct step_thread *t;

		if (o->actions[i].tid == 0)
			continue;
		t = hwt_step_thread_find(c, o->actions[i].tid);
		if (!t)
			return hwt_err_set(err, ESRCH,
					   "resume action for thread %d, which "
					   "is not a live thread of process %d",
					   (int)o->actions[i].tid,
					   (int)c->base.pid);
	}
	for (size_t i = 0; i < c->nthreads; i++) {
		struct step_thread *t = c->threads[i];
		const struct hwt_resume_action *a = action_for(o, t->tid);

		t->kind = a ? a->kind : *dflt;
	}
	return 0;
}

/* A queued event still worth reporting to a thread resumed with kind. */
static bool event_due(struct step_thread *t, const struct step_live *l)
{
	uint64_t pc;

	if (!t->has_event)
		return false;
	if (t->event.kind == HWT_EVENT_THREAD_EXITED ||
	    t->event.kind == HWT_EVENT_THREAD_CREATED)
		return true;
	if (t->kind == HWT_RESUME_STOP)
		return false;
	switch (t->event.kind) {
	case HWT_EVENT_BREAKPOINT:
		if (hwt_step_read_pc(t->tid, &pc) == 0 && is_breakpoint(l, pc))
			return true;
		break;
	case HWT_EVENT_STEPPED:
		if (t->kind == HWT_RESUME_STEP)
			return true;
		break;
	default:
		return true;
	}
	t->has_event = false;   /* stale: see hwt-collect.h */
	return false;
}

static void report(struct step_thread *t, struct hwt_collect_event *ev)
{
	*ev = t->event;
	t->has_event = false;
	if (t->state != PT_GONE && hwt_step_read_pc(t->tid, &ev->pc) < 0)
		ev->pc = 0;
}

static int prepare_watches(struct step_collector *c, struct step_live *l,
			   const struct hwt_resume_opts *o,
			   struct hwt_err *err)
{
	char path[64];

	l->memfd = -1;
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
	for (size_t i = 0; i < c->dr_used; i++)
		read_watch(l->memfd, &c->dr_watch[i], &c->dr_value[i]);
	/* Whether debug registers work is known from the first thread. */
	for (size_t i = 0; c->dr_used && i < c->nthreads; i++)
		if (c->threads[i]->state == PT_STOPPED)
			return hwt_step_dr_apply(c, c->threads[i], err);
	return 0;
}

static int prepare(struct step_collector *c, struct step_live *l,
		   const struct hwt_resume_opts *o, struct hwt_err *err)
{
	uint64_t *bps;
	int rc;

	if ((rc = prepare_watches(c, l, o, err)) < 0)
		return rc;
	if (!o->nbreakpoints)
		return 0;
	bps = malloc(o->nbreakpoints * sizeof(*bps));
	if (!bps)
		return hwt_err_set(err, ENOMEM, "out of memory for breakpoints");
	memcpy(bps, o->breakpoints, o->nbreakpoints * sizeof(*bps));
	qsort(bps, o->nbreakpoints, sizeof(*bps), cmp_u64);
	l->breakpoints = bps;
	l->nbreakpoints = o->nbreakpoints;
	return 0;
}

static void release(struct step_live *l)
{
	if (l->memfd >= 0)
		close(l->memfd);
	free(l->watch_values);
	free((void *)l->breakpoints);
}

/* Start every thread whose action is to move. */
static void start_threads(struct step_collector *c,
			  const struct hwt_resume_opts *o)
{
	for (size_t i = 0; i < c->nthreads; i++) {
		struct step_thread *t = c->threads[i];
		const struct hwt_resume_action *a = action_for(o, t->tid);
		int sig;

		if (t->state != PT_STOPPED || t->kind == HWT_RESUME_STOP)
			continue;
		if (!a)
			a = action_for(o, 0);
		sig = a ? a->signal : 0;
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
			    act == HWT_SIG_CAUGHT)
				t->handler_entry_next = true;
		}
		hwt_step_dr_apply(c, t, NULL);
		ptrace(PTRACE_SINGLESTEP, t->tid, 0, sig);
		t->state = PT_RUNNING;
	}
}

/* The first event is queued: bring every other thread to a stop. */
static int stop_all(struct step_collector *c, struct hwt_err *err)
{
	c->live->stopping = true;
	for (size_t i = 0; i < c->nthreads; i++) {
		struct step_thread *t = c->threads[i];

		if (t->state != PT_RUNNING && t->state != PT_LISTENING)
			continue;
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) == 0)
			t->interrupt_pending = true;
		else   /* a zombie leader: no stop will come; its death will */
			t->state = PT_STOPPED;
	}
	return hwt_step_loop(c, err);
}

static void interrupted_event(struct step_collector *c)
{
	struct step_thread *t = c->last && c->last->state != PT_GONE ? c->last
								    : NULL;

	for (size_t i = 0; !t && i < c->nthreads; i++)
		if (c->threads[i]->state != PT_GONE)
			t = c->threads[i];
	if (t)
		queue_event(c, t, HWT_EVENT_INTERRUPTED, 0, 0);
}

static void ended_event(struct step_collector *c, struct hwt_collect_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->tid = c->base.pid;
	if (c->base.end.reason == HWT_STOP_EXITED) {
		ev->kind = HWT_EVENT_EXITED;
		ev->status = c->base.end.status;
	} else {
		ev->kind = HWT_EVENT_KILLED;
		ev->signal = c->base.end.signal;
	}
}

static int run_until_event(struct step_collector *c, struct step_live *l,
			   const struct hwt_resume_opts *o,
			   struct hwt_collect_event *ev, struct hwt_err *err)
{
	struct step_interrupt *in = NULL;
	int rc;

	atomic_store(&c->interrupt_fired, false);
	if (o->interrupt_fd >= 0 &&
	    (rc = hwt_step_interrupt_start(c, o->interrupt_fd, &in, err)) < 0)
		return rc;
	c->live = l;
	start_threads(c, o);
	rc = hwt_step_loop(c, err);
	if (rc == PT_LIVE_EVENT && !l->first)
		interrupted_event(c);   /* the loop saw interrupt_fd */
	if (rc == PT_LIVE_EVENT)
		rc = stop_all(c, err);
	hwt_step_interrupt_stop(in);
	c->live = NULL;
	if (rc == PT_PROCESS_ENDED) {
		ended_event(c, ev);
		return hwt_step_threads_seal(c, err);
	}
	if (rc < 0)
		return rc;
	if (l->first && l->first->has_event) {
		report(l->first, ev);
		return 0;
	}
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i]->has_event) {
			report(c->threads[i], ev);
			return 0;
		}
	return hwt_err_set(err, EPROTO, "the program stopped without an "
			   "event to report");
}

int hwt_step_resume(struct hwt_collector *base,
		  const struct hwt_resume_opts *opts,
		  struct hwt_collect_event *event, struct hwt_err *err)
{
	struct step_collector *c = step_of(base);
	struct step_live l = { .memfd = -1 };
	enum hwt_resume_kind dflt;
	bool moves = false;
	int rc;

	hwt_step_set_wait_flags(c);
	if ((rc = assign_actions(c, opts, &dflt, err)) < 0)
		return rc;
	l.new_thread_kind = dflt == HWT_RESUME_CONT ? HWT_RESUME_CONT
						    : HWT_RESUME_STOP;
	l.report_created = opts->report_thread_created;
	if ((rc = prepare(c, &l, opts, err)) < 0)
		goto out;
	/* Events queued by earlier resumes come first; nothing runs. */
	for (size_t i = 0; i < c->nthreads; i++)
		if (event_due(c->threads[i], &l)) {
			report(c->threads[i], event);
			goto out;
		}
	for (size_t i = 0; i < c->nthreads; i++)
		moves |= c->threads[i]->state != PT_GONE &&
			 c->threads[i]->kind != HWT_RESUME_STOP;
	if (!moves) {
		rc = hwt_err_set(err, EINVAL,
				 "every thread's action is to stay stopped; "
				 "step or continue at least one");
		goto out;
	}
	rc = run_until_event(c, &l, opts, event, err);
	if (rc < 0 && base->state != HWT_COLLECTOR_ENDED) {
		/* Lost track of the program: end it rather than leave it
		 * half-stopped; the history so far is kept. */
		hwt_step_kill_and_reap(c);
		hwt_step_threads_seal(c, NULL);
	}
out:
	release(&l);
	return rc;
}
