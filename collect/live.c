// SPDX-License-Identifier: BSD-2-Clause
/* live.c - the rules of live control, for every backend (live.h). */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>

#include "live.h"

/* The i-th thread's live part, tid and whether it is gone. */
static struct hwt_live_thread *nth(const struct hwt_live *l, size_t i,
				   pid_t *tid, bool *gone)
{
	return l->ops->thread(l->ctx, i, tid, gone);
}

static struct hwt_live_thread *find(const struct hwt_live *l, pid_t tid,
				    bool *gone)
{
	size_t n = l->ops->nthreads(l->ctx);

	for (size_t i = 0; i < n; i++) {
		pid_t t;
		struct hwt_live_thread *lt = nth(l, i, &t, gone);

		if (t == tid)
			return lt;
	}
	return NULL;
}

void hwt_live_queue(struct hwt_live *l, struct hwt_live_thread *t, pid_t tid,
		    enum hwt_event_kind kind, int sig, uint64_t data_addr)
{
	if (t->has_event && kind != HWT_EVENT_THREAD_EXITED &&
	    t->event.kind != HWT_EVENT_INTERRUPTED)
		return;
	memset(&t->event, 0, sizeof(t->event));
	t->event.kind = kind;
	t->event.tid = tid;
	t->event.signal = sig;
	t->event.data_addr = data_addr;
	t->has_event = true;
	if (!l->stopping && !l->first_tid)
		l->first_tid = tid;
}

void hwt_live_died(struct hwt_live *l, struct hwt_live_thread *t, pid_t tid,
		   int status)
{
	hwt_live_queue(l, t, tid, HWT_EVENT_THREAD_EXITED,
		       WIFSIGNALED(status) ? WTERMSIG(status) : 0, 0);
	t->event.status = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

void hwt_live_born(const struct hwt_live *l, struct hwt_live_thread *t,
		   bool *announce)
{
	t->kind = l->new_kind;
	*announce = l->report_created;
}

bool hwt_live_holds(const struct hwt_live *l, const struct hwt_live_thread *t)
{
	return l->stopping || t->has_event || t->kind == HWT_RESUME_STOP;
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

const struct hwt_resume_action *hwt_live_action(const struct hwt_resume_opts *o,
						pid_t tid)
{
	const struct hwt_resume_action *a = action_for(o, tid);

	return a ? a : action_for(o, 0);
}

/* Give every thread its action; named threads must be live ones. Threads
 * born during the resume continue if the others do by default, else
 * stay stopped at their first instruction. */
static int assign_actions(struct hwt_live *l, const struct hwt_resume_opts *o,
			  struct hwt_err *err)
{
	const struct hwt_resume_action *all = action_for(o, 0);
	enum hwt_resume_kind dflt = all ? all->kind : HWT_RESUME_STOP;
	size_t n = l->ops->nthreads(l->ctx);
	bool gone;

	/* A thread that died since it was named is known: its death may
	 * be the event still to report. */
	for (size_t i = 0; i < o->nactions; i++)
		if (o->actions[i].tid && !find(l, o->actions[i].tid, &gone))
			return hwt_err_set(err, ESRCH, "resume action for "
					   "thread %d, which is not a thread "
					   "of process %d",
					   (int)o->actions[i].tid, (int)l->pid);
	for (size_t i = 0; i < n; i++) {
		pid_t tid;
		struct hwt_live_thread *t = nth(l, i, &tid, &gone);
		const struct hwt_resume_action *a = action_for(o, tid);

		t->kind = a ? a->kind : dflt;
	}
	l->new_kind = dflt == HWT_RESUME_CONT ? HWT_RESUME_CONT
					      : HWT_RESUME_STOP;
	l->report_created = o->report_thread_created;
	return 0;
}

/* A queued event still worth reporting to the thread's new action: a
 * breakpoint whose address is no breakpoint any more, a step done for a
 * thread now told to continue, anything for a thread told to stay, are
 * not (a birth or a death always is). Stale ones are dropped. */
static bool event_due(struct hwt_live *l, struct hwt_live_thread *t,
		      pid_t tid)
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
		if (l->ops->read_pc(l->ctx, tid, &pc) == 0 &&
		    l->ops->is_breakpoint(l->ctx, pc))
			return true;
		break;
	case HWT_EVENT_STEPPED:
		if (t->kind == HWT_RESUME_STEP)
			return true;
		break;
	default:
		return true;
	}
	t->has_event = false;
	return false;
}

static void report(struct hwt_live *l, struct hwt_live_thread *t, pid_t tid,
		   bool gone, struct hwt_collect_event *ev)
{
	*ev = t->event;
	t->has_event = false;
	l->last_tid = tid;
	if (gone || l->ops->read_pc(l->ctx, tid, &ev->pc) < 0)
		ev->pc = 0;
}

/* Report the first queued event that pick accepts: 0, or -ENOENT. */
static int report_queued(struct hwt_live *l, struct hwt_collect_event *ev,
			 bool (*pick)(struct hwt_live *, struct hwt_live_thread *,
				      pid_t, bool))
{
	size_t n = l->ops->nthreads(l->ctx);

	for (size_t i = 0; i < n; i++) {
		pid_t tid;
		bool gone;
		struct hwt_live_thread *t = nth(l, i, &tid, &gone);

		if (pick(l, t, tid, gone)) {
			report(l, t, tid, gone, ev);
			return 0;
		}
	}
	return -ENOENT;
}

static bool pick_due(struct hwt_live *l, struct hwt_live_thread *t, pid_t tid,
		     bool gone)
{
	return (!gone || t->has_event) && event_due(l, t, tid);
}

static bool pick_death(struct hwt_live *l, struct hwt_live_thread *t,
		       pid_t tid, bool gone)
{
	return t->has_event && t->event.kind == HWT_EVENT_THREAD_EXITED;
}

static bool pick_first(struct hwt_live *l, struct hwt_live_thread *t,
		       pid_t tid, bool gone)
{
	return t->has_event && tid == l->first_tid;
}

static bool pick_any(struct hwt_live *l, struct hwt_live_thread *t, pid_t tid,
		     bool gone)
{
	return t->has_event;
}

/* How the process ended, as the last event of a live session. */
static void report_end(const struct hwt_collect_end *end, pid_t pid,
		       struct hwt_collect_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->tid = pid;
	if (end->reason == HWT_STOP_EXITED) {
		ev->kind = HWT_EVENT_EXITED;
		ev->status = end->status;
	} else {
		ev->kind = HWT_EVENT_KILLED;
		ev->signal = end->signal;
	}
}

/* interrupt_fd stopped the program: an INTERRUPTED event on the thread
 * of the last event reported, else the first live one. */
static void queue_interrupted(struct hwt_live *l)
{
	size_t n = l->ops->nthreads(l->ctx);
	struct hwt_live_thread *t;
	pid_t tid = l->last_tid;
	bool gone = true;

	t = tid ? find(l, tid, &gone) : NULL;
	for (size_t i = 0; (!t || gone) && i < n; i++)
		t = nth(l, i, &tid, &gone);
	if (t && !gone)
		hwt_live_queue(l, t, tid, HWT_EVENT_INTERRUPTED, 0, 0);
}

static bool any_moves(struct hwt_live *l)
{
	size_t n = l->ops->nthreads(l->ctx);

	for (size_t i = 0; i < n; i++) {
		pid_t tid;
		bool gone;
		struct hwt_live_thread *t = nth(l, i, &tid, &gone);

		if (!gone && t->kind != HWT_RESUME_STOP)
			return true;
	}
	return false;
}

int hwt_live_resume(struct hwt_live *l, const struct hwt_resume_opts *o,
		    struct hwt_collect_event *ev, struct hwt_err *err)
{
	struct hwt_collect_end end;
	int rc;

	if ((rc = assign_actions(l, o, err)) < 0)
		return rc;
	if ((rc = l->ops->prepare(l->ctx, o, err)) < 0)
		goto out;
	/* Events queued by earlier resumes come first; nothing runs. Then
	 * the end of a process that ended with them. */
	if (report_queued(l, ev, pick_due) == 0)
		goto out;
	if (l->ops->ended(l->ctx, &end)) {
		report_end(&end, l->pid, ev);
		goto out;
	}
	if (!any_moves(l)) {
		rc = hwt_err_set(err, EINVAL, "every thread's action is to "
				 "stay stopped; step or continue at least one");
		goto out;
	}
	l->first_tid = 0;
	l->stopping = false;
	l->interrupted = false;
	rc = l->ops->run(l->ctx, o, err);
	if (rc == 0 && !l->first_tid && l->interrupted)
		queue_interrupted(l);
	if (rc == 0) {
		l->stopping = true;
		rc = l->ops->stop_all(l->ctx, err);
	}
	l->stopping = false;
	if (rc == HWT_LIVE_ENDED) {
		/* Threads reaped in the same wait as the process exited
		 * before it: their events first, the end at the next
		 * resume. */
		rc = 0;
		if (report_queued(l, ev, pick_death) != 0 &&
		    l->ops->ended(l->ctx, &end))
			report_end(&end, l->pid, ev);
		goto out;
	}
	if (rc < 0)
		goto out;
	if (report_queued(l, ev, pick_first) != 0 &&
	    report_queued(l, ev, pick_any) != 0)
		rc = hwt_err_set(err, EPROTO, "process %d stopped without an "
				 "event to report", (int)l->pid);
out:
	l->ops->release(l->ctx, l->ops->ended(l->ctx, &end));
	return rc;
}
