/* reverse.c - execution for a process that can only move through its
 * recorded past. `bs`/`bc` move a thread's replay cursor backward, `s`/`c`
 * forward; nothing ever runs, so every resume answers at once with a stop
 * reply: replaylog:begin / replaylog:end at the history's ends (GDB then
 * says "No more reverse-execution history"), swbreak at a Z0 address. The
 * end of the history is the crash: forward motion stops there. */
#include <stdio.h>
#include <string.h>

#include "server.h"

/* GDB's own signal numbers (gdb/signals.def) where Linux's differ. */
static int gdb_signal(int linux_sig)
{
	switch (linux_sig) {
	case 7: return 10;     /* SIGBUS */
	case 10: return 30;    /* SIGUSR1 */
	case 12: return 31;    /* SIGUSR2 */
	case 31: return 12;    /* SIGSYS */
	default:
		return linux_sig > 0 && linux_sig < 16 ? linux_sig : 143;
	}
}

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

	/* At the crash, before any move, the stop is the fatal signal. */
	if (!extra[0] && !s->threads[ti].cursor)
		sig = gdb_signal(s->core->signo);
	snprintf(reply, cap, "T%02xthread:%llx;%s", sig,
		 (unsigned long long)s->threads[ti].tid, extra);
}

int reverse_resume(struct server *s, size_t ti, enum hwt_dir dir, bool step,
		   char *reply, size_t cap)
{
	struct srv_thread *t = &s->threads[ti];
	struct hwt_err err = { 0 };
	struct hwt_cursor *c = cursor_of(s, t, &err);
	const char *extra = "";
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
		extra = "swbreak:;";
	/* GDB takes the thread of a stop reply as the current one without
	 * saying so again with Hg. */
	s->stop_thread = ti;
	s->gthread = ti;
	reverse_stop_reply(s, ti, extra, reply, cap);
	return 0;
}
