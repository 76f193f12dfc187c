// SPDX-License-Identifier: BSD-2-Clause
/* reverse.c - moving through a thread's recorded past: a crashed
 * process's whole recorded life, or a live one's history up to where it
 * stopped. `bs`/`bc` move a thread's replay cursor backward, and forward
 * motion inside the history (vcont.c) moves it forward; nothing runs, so
 * every such move answers at once with a stop reply: replaylog:begin /
 * replaylog:end at the history's ends (GDB then says "No more
 * reverse-execution history"), swbreak at a Z0 address. */
#include <stdio.h>
#include <string.h>

#include "hwt-past.h"
#include "server.h"
#include "signals.h"

static struct hwt_cursor *cursor_of(struct server *s, struct srv_thread *t,
				    struct hwt_err *err)
{
	struct hwt_history *h;

	if (t->cursor)
		return t->cursor;
	h = srv_history(s, t, err);
	if (!h)
		return NULL;
	if (hwt_cursor_new(h, s->img, &t->cursor, err))
		return NULL;
	return t->cursor;
}

void reverse_stop_reply(struct server *s, size_t ti, const char *extra,
			char *reply, size_t cap)
{
	int sig = 5;     /* SIGTRAP: a step or breakpoint stop */
	char tid[48];

	/* At the crash, before any move, the stop is the fatal signal; a
	 * core taken as the program began to exit has none (a stop). */
	if (!extra[0] && !s->threads[ti].cursor && s->core->signo)
		sig = hwt_gdb_signal(s->core->signo);
	snprintf(reply, cap, "T%02xthread:%s;%s", sig,
		 srv_tid_str(s, s->threads[ti].tid, tid, sizeof(tid)), extra);
}

/* A write watchpoint in the past: the store nearest to where thread ti
 * stood (from) that changed watched bytes, of any thread, if it comes
 * before where the breakpoints stopped it (now) in the order the
 * history's steps were taken; the cursor (or the writing thread's) moves
 * there. Read and access watches cannot be told from a history of
 * stores. */
static bool past_watch(struct server *s, size_t *ti, enum hwt_dir dir,
		       uint64_t from, uint64_t from_step, char *extra,
		       size_t cap)
{
	struct hwt_cursor *c = s->threads[*ti].cursor;
	uint64_t now = hwt_cursor_pos(c), best_pos = 0, best_step = 0;
	size_t best_ti = SIZE_MAX;
	const struct srv_watch *best = NULL;

	if (!s->ops->past_write)
		return false;
	for (size_t i = 0; i < s->nwatches; i++) {
		const struct srv_watch *w = &s->watches[i];
		uint64_t pos, step;
		size_t wti;

		if (w->kind != 2 ||
		    !s->ops->past_write(s, *ti, from, from_step, now, dir,
					w->addr, w->len, &wti, &pos, &step))
			continue;
		if (best && (dir == HWT_BACKWARD ? step <= best_step :
			     step >= best_step))
			continue;
		best = w;
		best_ti = wti;
		best_pos = pos;
		best_step = step;
	}
	if (!best)
		return false;
	/* Another thread wrote: this one stays where it stood, unless the
	 * history orders all threads' steps, when every thread goes to the
	 * moment of the store (before it backward, after it forward), so
	 * the next motion of any of them starts there. */
	if (best_ti != *ti && hwt_cursor_goto(c, from, NULL) < 0)
		return false;
	for (size_t i = 0; s->ops->past_place && i < s->nthreads; i++) {
		uint64_t pos;
		struct hwt_cursor *other;

		if (i != best_ti &&
		    s->ops->past_place(s, i, best_step +
				       (dir == HWT_FORWARD ? 1 : 0), &pos) &&
		    (other = cursor_of(s, &s->threads[i], NULL)))
			hwt_cursor_goto(other, pos, NULL);
	}
	c = cursor_of(s, &s->threads[best_ti], NULL);
	if (!c || hwt_cursor_goto(c, best_pos, NULL) < 0)
		return false;
	/* The moment the next motion starts from, whichever thread makes
	 * it: positions of threads cannot say "right at that store". */
	s->moment = best_step + (dir == HWT_FORWARD ? 1 : 0);
	s->moment_known = true;
	*ti = best_ti;
	snprintf(extra, cap, "watch:%llx;", (unsigned long long)best->addr);
	return true;
}

/* How far a continue with write watches may go back: to the thread's
 * oldest instruction whose values are known, where the data history
 * begins (a store before it could not be told, so going on would pass
 * it silently); without watches, or values, the history's start. */
static uint64_t watch_bound(struct server *s, size_t ti, enum hwt_dir dir)
{
	uint64_t pos;

	if (dir != HWT_BACKWARD)
		return UINT64_MAX;
	if (!s->nwatches || !s->ops->past_place ||
	    !s->ops->past_place(s, ti, 0, &pos))
		return 0;
	return pos;
}

/* The bound a continue with write watches need not walk past: the
 * nearest watched store found within bound lies there or nearer, and the
 * motion's stop at it (past_watch decides at the stop) must still see the
 * store as coming first. For this thread's own store that is the store's
 * position; for another's, this thread's last instruction before the
 * store backward, its first after it forward. The walk up to it remains:
 * a breakpoint on the way stops first. */
static uint64_t watch_nearer(struct server *s, size_t ti, enum hwt_dir dir,
			     uint64_t from, uint64_t from_step, uint64_t bound)
{
	bool back = dir == HWT_BACKWARD;

	if (!s->ops->past_write || !s->ops->past_place)
		return bound;
	for (size_t i = 0; i < s->nwatches; i++) {
		const struct srv_watch *w = &s->watches[i];
		uint64_t pos, step, near;
		size_t wti;

		if (w->kind != 2 ||
		    !s->ops->past_write(s, ti, from, from_step, bound, dir,
					w->addr, w->len, &wti, &pos, &step))
			continue;
		if (wti == ti)
			near = pos;
		else if (!s->ops->past_place(s, ti, step + (back ? 0 : 1),
					     &near))
			continue;
		else if (back && near-- == 0)
			continue;
		if (back ? near > bound : near < bound)
			bound = near;
	}
	return bound;
}

int reverse_resume(struct server *s, size_t ti, enum hwt_dir dir, bool step,
		   char *reply, size_t cap)
{
	struct srv_thread *t = &s->threads[ti];
	struct hwt_err err = { 0 };
	struct hwt_cursor *c = cursor_of(s, t, &err);
	const char *extra = "";
	char watch_extra[48];
	uint64_t pc, from, from_step, bound = 0;
	int rc;

	if (!c) {
		snprintf(reply, cap, "E.%s", err.msg);
		return -err.code;
	}
	from = hwt_cursor_pos(c);
	/* Where the last watch stop left every thread, if nothing moved
	 * since: the next motion, either way, starts at that moment (the
	 * store there comes first backward when the stop was after it, and
	 * forward when it was before it). */
	from_step = s->moment_known ? s->moment : HWT_MEM_NO_BOUND;
	s->moment_known = false;
	if (!step) {
		bound = watch_bound(s, ti, dir);
		if (s->nwatches)
			bound = watch_nearer(s, ti, dir, from, from_step,
					     bound);
	}
	rc = step ? hwt_cursor_stepi(c, dir, &err)
		  : hwt_cursor_continue_within(c, dir, s->bps, s->nbps, bound,
					       &err);
	if (rc < 0) {
		snprintf(reply, cap, "E.%s", err.msg);
		return rc;
	}
	if (!step && s->nwatches &&
	    past_watch(s, &ti, dir, from, from_step, watch_extra,
		       sizeof(watch_extra))) {
		extra = watch_extra;
		rc = HWT_HIT;
	} else if (rc == HWT_BOUNDARY)
		extra = dir == HWT_BACKWARD ? "replaylog:begin;" : "replaylog:end;";
	else if (rc == HWT_HIT)
		extra = srv_replaying(s, ti, &pc) && breakpoints_hw_at(s, pc) ?
			"hwbreak:;" : "swbreak:;";
	/* GDB takes the thread of a stop reply as the current one without
	 * saying so again with Hg. */
	s->stop_thread = ti;
	s->gthread = ti;
	reverse_stop_reply(s, ti, extra, reply, cap);
	return rc;
}
