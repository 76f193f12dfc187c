// SPDX-License-Identifier: BSD-2-Clause
/* test_live_rules.c - the rules of live control (collect/live.c) over a
 * scripted backend, for orders of events a real program produces only
 * now and then: a step that completes just as interrupt_fd stops the
 * program must be reported as the step, never hidden behind the
 * interrupt (GDB would then step the thread again: in non-stop mode, a
 * displaced step over a call ran the call from the scratch pad). */
#include <string.h>

#include "check.h"
#include "live.h"

/* One thread, tid 7, at pc 0x1000; run and stop_all do what the test
 * scripts: queue an event on the thread (HWT_EVENT_STEPPED is 0, hence
 * the flags), or see interrupt_fd. */
struct script {
	struct hwt_live *l;
	struct hwt_live_thread t;
	bool run_event, stop_event;       /* queue these: */
	enum hwt_event_kind during_run, during_stop;
	bool interrupt_in_run;
};

static size_t nthreads(void *ctx)
{
	(void)ctx;
	return 1;
}

static struct hwt_live_thread *thread(void *ctx, size_t i, pid_t *tid,
				      bool *gone)
{
	struct script *s = ctx;

	(void)i;
	*tid = 7;
	*gone = false;
	return &s->t;
}

static int read_pc(void *ctx, pid_t tid, uint64_t *pc)
{
	(void)ctx;
	(void)tid;
	*pc = 0x1000;
	return 0;
}

static bool is_breakpoint(void *ctx, uint64_t pc)
{
	(void)ctx;
	(void)pc;
	return false;
}

static int prepare(void *ctx, const struct hwt_resume_opts *o,
		   struct hwt_err *err)
{
	(void)ctx;
	(void)o;
	(void)err;
	return 0;
}

static int run(void *ctx, const struct hwt_resume_opts *o, struct hwt_err *err)
{
	struct script *s = ctx;

	(void)o;
	(void)err;
	if (s->run_event)
		hwt_live_queue(s->l, &s->t, 7, s->during_run, 0, 0);
	if (s->interrupt_in_run)
		s->l->interrupted = true;
	return 0;
}

static int stop_all(void *ctx, struct hwt_err *err)
{
	struct script *s = ctx;

	(void)err;
	if (s->stop_event)
		hwt_live_queue(s->l, &s->t, 7, s->during_stop, 0, 0);
	return 0;
}

static void release(void *ctx, bool ended)
{
	(void)ctx;
	(void)ended;
}

static bool ended(void *ctx, struct hwt_collect_end *end)
{
	(void)ctx;
	(void)end;
	return false;
}

static const struct hwt_live_ops ops = {
	.nthreads = nthreads, .thread = thread, .read_pc = read_pc,
	.is_breakpoint = is_breakpoint, .prepare = prepare, .run = run,
	.stop_all = stop_all, .release = release, .ended = ended,
};

/* One resume of thread 7 with action kind; the event it reports. */
static int resume(struct script *s, enum hwt_resume_kind kind,
		  struct hwt_collect_event *ev)
{
	static struct hwt_live l;
	struct hwt_resume_action a = { .tid = 7, .kind = kind };
	struct hwt_resume_opts o = { .sz = sizeof(o), .actions = &a,
				     .nactions = 1, .interrupt_fd = -1 };
	struct hwt_err err = { 0 };

	memset(&l, 0, sizeof(l));
	l.ops = &ops;
	l.ctx = s;
	l.pid = 7;
	s->l = &l;
	memset(ev, 0, sizeof(*ev));
	return hwt_live_resume(&l, &o, ev, &err);
}

int main(void)
{
	struct hwt_collect_event ev;
	struct script s;
	int rc;

	/* The step completed; the interrupt was seen first, the step's
	 * trap only while stopping. */
	memset(&s, 0, sizeof(s));
	s.interrupt_in_run = true;
	s.stop_event = true;
	s.during_stop = HWT_EVENT_STEPPED;
	rc = resume(&s, HWT_RESUME_STEP, &ev);
	CHECK("live rules: a step completed as the interrupt came is "
	      "reported as the step", rc == 0 && ev.kind == HWT_EVENT_STEPPED,
	      "rc %d kind %d", rc, (int)ev.kind);

	/* The interrupt alone: reported as such. */
	memset(&s, 0, sizeof(s));
	s.interrupt_in_run = true;
	rc = resume(&s, HWT_RESUME_CONT, &ev);
	CHECK("live rules: an interrupt with nothing else is INTERRUPTED",
	      rc == 0 && ev.kind == HWT_EVENT_INTERRUPTED,
	      "rc %d kind %d", rc, (int)ev.kind);

	/* A real event first: an interrupt after it changes nothing. */
	memset(&s, 0, sizeof(s));
	s.run_event = true;
	s.during_run = HWT_EVENT_BREAKPOINT;
	s.interrupt_in_run = true;
	rc = resume(&s, HWT_RESUME_CONT, &ev);
	CHECK("live rules: an event before the interrupt is the one reported",
	      rc == 0 && ev.kind == HWT_EVENT_BREAKPOINT,
	      "rc %d kind %d", rc, (int)ev.kind);

	/* First real event wins over a later one on the same thread. */
	memset(&s, 0, sizeof(s));
	s.run_event = s.stop_event = true;
	s.during_run = HWT_EVENT_SIGNAL;
	s.during_stop = HWT_EVENT_STEPPED;
	rc = resume(&s, HWT_RESUME_STEP, &ev);
	CHECK("live rules: of two events on a thread the first is reported",
	      rc == 0 && ev.kind == HWT_EVENT_SIGNAL,
	      "rc %d kind %d", rc, (int)ev.kind);
	return check_exit();
}
