// SPDX-License-Identifier: BSD-2-Clause
/* target.c - what handlers ask of whichever target the session has. */
#include <stdlib.h>
#include <string.h>

#include "server.h"

struct hwt_history *srv_history(struct server *s, struct srv_thread *t,
				struct hwt_err *err)
{
	return s->ops->history(s, t, err);
}

bool srv_replaying(struct server *s, size_t ti, uint64_t *pc)
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

/* The thread that stands in its past: the general one if it does. */
static bool past_thread(struct server *s, size_t *ti)
{
	uint64_t pc;

	if (s->gthread < s->nthreads && srv_replaying(s, s->gthread, &pc)) {
		*ti = s->gthread;
		return true;
	}
	for (size_t i = 0; i < s->nthreads; i++)
		if (srv_replaying(s, i, &pc)) {
			*ti = i;
			return true;
		}
	return false;
}

bool srv_in_past(struct server *s)
{
	size_t ti;

	return past_thread(s, &ti);
}

/* The threads share one memory: once any of them stands in its past,
 * the memory of that moment is asked for: what the target's history
 * knows there (the ptrace recorder keeps the old bytes of every store),
 * and bytes that never change (the read-only segments of the program's
 * files, as GDB's own btrace replay reads). The rest is unavailable,
 * never today's bytes shown as the past's. */
size_t srv_read_memory(struct server *s, uint64_t addr, void *buf, size_t len)
{
	size_t ti, n = 0;

	if (!past_thread(s, &ti))
		return s->ops->mem_read(s, addr, buf, len);
	if (s->ops->past_mem)
		n = s->ops->past_mem(s, ti, addr, buf, len);
	if (n == 0 && s->img)
		n = hwt_image_read_constant(s->img, addr, buf, len);
	return n;
}

int srv_record_start(struct server *s, struct hwt_err *err)
{
	return s->ops->record_start ? s->ops->record_start(s, err) : 0;
}

void srv_invalidate(struct server *s)
{
	for (size_t i = 0; i < s->nthreads; i++) {
		struct srv_thread *t = &s->threads[i];

		if (t->cursor)
			hwt_cursor_free(t->cursor);
		if (t->hist)
			hwt_history_free(t->hist);
		free(t->btrace_xml);
		t->cursor = NULL;
		t->hist = NULL;
		t->btrace_xml = NULL;
		t->btrace_len = 0;
		/* GDB's copy is behind now: "delta" is refused and "new"
		 * gives the trace again. */
		t->btrace_served = false;
		t->regs_ok = false;
		t->xstate_ok = false;
	}
}
