// SPDX-License-Identifier: BSD-2-Clause
/* core_past.c - a bundle's data history served post-mortem: registers
 * and memory before any kept instruction, the core being the memory
 * where the history ends (common/hwt-past.h). Positions count back from
 * the history's end, whose last instruction is the thread's end_index
 * (the one it stood at when the core was taken), as target_live.c's
 * count back from where a live thread stands. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

#include "hwt-past.h"
#include "server.h"

int core_past_open(struct server *s, struct hwt_err *err)
{
	char *path;
	int rc;

	if (!s->bundle->data_history)
		return 0;
	if (!(path = hwt_bundle_path(s->bundle, s->bundle->data_history)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	rc = hwt_past_read(path, &s->past, err);
	free(path);
	if (rc < 0)
		return rc;
	s->past_threads = calloc(s->past->nthreads ? s->past->nthreads : 1,
				 sizeof(*s->past_threads));
	if (!s->past_threads)
		return hwt_err_set(err, ENOMEM, "out of memory");
	return 0;
}

void core_past_close(struct server *s)
{
	hwt_past_free(s->past);
	free(s->past_threads);
	s->past = NULL;
	s->past_threads = NULL;
}

/* The data history's thread of server thread t and the instruction index
 * of position pos in its history. */
static const struct hwt_past_thread *index_at(struct server *s,
					      struct srv_thread *t,
					      uint64_t pos, uint64_t *index)
{
	const struct hwt_past_thread *pt;
	struct hwt_history *h;
	uint64_t back;

	if (!s->past || !(pt = hwt_past_thread_of(s->past, (int32_t)t->tid)) ||
	    !(h = srv_history(s, t, NULL)) || pos > hwt_history_count(h))
		return NULL;
	back = hwt_history_count(h) - pos;
	if (back > pt->end_index)
		return NULL;
	*index = pt->end_index - back;
	return pt;
}

/* The position in thread t's history of its instruction index (pt: its
 * data history); false: not kept there. */
static bool pos_of(struct server *s, struct srv_thread *t,
		   const struct hwt_past_thread *pt, uint64_t index,
		   uint64_t *pos)
{
	struct hwt_history *h = srv_history(s, t, NULL);

	if (!h || index > pt->end_index ||
	    pt->end_index - index >= hwt_history_count(h))
		return false;
	*pos = hwt_history_count(h) - (pt->end_index - index);
	return true;
}

static size_t now_of(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct server *s = ctx;

	return s->ops->mem_read(s, addr, buf, len);
}

/* The memory view, its stores read when memory of the past is first
 * asked; a file whose stores cannot be read leaves that memory
 * unavailable. Who wrote what walks the stores: their index, which
 * memory at a point needs (indexed), is built beside it meanwhile, and
 * asked for when the walk meets a store that may have changed nothing. */
static void past_view(struct server *s, struct hwt_mem_history *h,
		      bool indexed)
{
	struct hwt_err err = { 0 };

	if (hwt_past_memory_begin(s->past, &err) < 0 && !s->past_warned) {
		s->past_warned = true;
		fprintf(stderr, "hwt-server: memory of the past unavailable: "
			"%s\n", err.msg);
	}
	if (indexed)
		hwt_past_index_wait(s->past);
	hwt_past_mem_view(s->past, s->past_threads, now_of, s, h);
}

bool core_past_reg(struct server *s, size_t ti, uint64_t pc, int regno,
		   uint8_t *out)
{
	struct srv_thread *t = &s->threads[ti];
	const struct hwt_past_thread *pt;
	struct core_thread past = { .tid = t->tid };
	struct user_regs_struct r;
	uint64_t index;

	if (!t->cursor ||
	    !(pt = index_at(s, t, hwt_cursor_pos(t->cursor), &index)) ||
	    hwt_past_regs(s->past, pt, false, index, &r) < 0 || r.rip != pc)
		return false;
	_Static_assert(sizeof(r) == CORE_GREGS_SIZE, "user_regs_struct");
	_Static_assert(sizeof(struct user_fpregs_struct) == CORE_FXSAVE_SIZE,
		       "user_fpregs_struct");
	memcpy(past.gregs, &r, sizeof(r));
	past.have_fp = hwt_past_regs(s->past, pt, true, index,
				     past.fxsave) == 0;
	return tdesc_reg_value(&past, regno, out);
}

size_t core_past_mem(struct server *s, size_t ti, uint64_t addr, void *buf,
		     size_t len)
{
	struct srv_thread *t = &s->threads[ti];
	struct hwt_mem_history h;
	uint64_t index;
	int n;

	if (!t->cursor || !index_at(s, t, hwt_cursor_pos(t->cursor), &index))
		return 0;
	past_view(s, &h, true);
	n = hwt_mem_history_at(&h, (int32_t)t->tid, index, addr, buf, len);
	return n > 0 ? (size_t)n : 0;
}

bool core_past_write(struct server *s, size_t ti, uint64_t pos,
		     uint64_t from_step, uint64_t until, enum hwt_dir dir,
		     uint64_t addr, uint64_t len, size_t *wti, uint64_t *wpos,
		     uint64_t *step)
{
	const struct hwt_past_thread *wpt;
	struct hwt_write_query q = {
		.tid = (int32_t)s->threads[ti].tid,
		.dir = dir == HWT_BACKWARD ? -1 : 1, .addr = addr, .len = len,
		.from_step = from_step,
	};
	struct hwt_write_found w;
	struct hwt_mem_history h;
	int rc;

	if (!index_at(s, &s->threads[ti], pos, &q.from))
		return false;
	if (!index_at(s, &s->threads[ti], until, &q.until))
		q.until = HWT_MEM_NO_BOUND;
	past_view(s, &h, false);
	rc = hwt_mem_history_find_write(&h, &q, &w);
	if (rc == -EAGAIN) {
		past_view(s, &h, true);
		rc = hwt_mem_history_find_write(&h, &q, &w);
	}
	if (rc != 1)
		return false;
	*step = w.step;
	for (*wti = 0; *wti < s->nthreads && s->threads[*wti].tid != w.tid;
	     (*wti)++)
		;
	/* Backward, the stop is at the store; forward, after it. */
	return *wti < s->nthreads &&
	       (wpt = hwt_past_thread_of(s->past, w.tid)) &&
	       pos_of(s, &s->threads[*wti], wpt,
		      w.index + (dir == HWT_FORWARD ? 1 : 0), wpos);
}

bool core_past_place(struct server *s, size_t ti, uint64_t step,
		     uint64_t *pos)
{
	struct srv_thread *t = &s->threads[ti];
	const struct hwt_past_thread *pt;
	struct hwt_mem_history h;
	uint64_t index;

	if (!s->past || !(pt = hwt_past_thread_of(s->past, (int32_t)t->tid)))
		return false;
	past_view(s, &h, false);
	if (!hwt_mem_history_index_at(&h, (int32_t)t->tid, step, &index))
		return false;
	/* Past its newest instruction: where it stands at the end. */
	return pos_of(s, t, pt, index > pt->end_index ? pt->end_index : index,
		      pos);
}
