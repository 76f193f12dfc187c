/* reverse.c - moving through a thread's recorded past: a crashed
 * process's whole recorded life, or a live one's history up to where it
 * stopped. `bs`/`bc` move a thread's replay cursor backward, and forward
 * motion inside the history (vcont.c) moves it forward; nothing runs, so
 * every such move answers at once with a stop reply: replaylog:begin /
 * replaylog:end at the history's ends (GDB then says "No more
 * reverse-execution history"), swbreak at a Z0 address. */
#include <stdio.h>
#include <string.h>

#include "server.h"

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

bool reverse_replaying(struct server *s, size_t ti, uint64_t *pc)
{
	struct srv_thread *t = &s->threads[ti];
	struct hwt_item it;
	uint64_t pos;

	if (!t->cursor)
		return false;
	pos = hwt_cursor_pos(t->cursor);
	if (pos >= hwt_history_count(t->hist))
		return false;
	if (hwt_history_get(t->hist, pos, &it, NULL))
		return false;
	*pc = it.addr;
	return true;
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

int reverse_resume(struct server *s, size_t ti, enum hwt_dir dir, bool step,
		   char *reply, size_t cap)
{
	struct srv_thread *t = &s->threads[ti];
	struct hwt_err err = { 0 };
	struct hwt_cursor *c = cursor_of(s, t, &err);
	const char *extra = "";
	uint64_t pc;
	int rc;

	if (!c) {
		snprintf(reply, cap, "E.%s", err.msg);
		return -err.code;
	}
	rc = step ? hwt_cursor_stepi(c, dir, &err)
		  : hwt_cursor_continue(c, dir, s->bps, s->nbps, &err);
	if (rc < 0) {
		snprintf(reply, cap, "E.%s", err.msg);
		return rc;
	}
	if (rc == HWT_BOUNDARY)
		extra = dir == HWT_BACKWARD ? "replaylog:begin;" : "replaylog:end;";
	else if (rc == HWT_HIT)
		extra = reverse_replaying(s, ti, &pc) && breakpoints_hw_at(s, pc) ?
			"hwbreak:;" : "swbreak:;";
	/* GDB takes the thread of a stop reply as the current one without
	 * saying so again with Hg. */
	s->stop_thread = ti;
	s->gthread = ti;
	reverse_stop_reply(s, ti, extra, reply, cap);
	return rc;
}
