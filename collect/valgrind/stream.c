// SPDX-License-Identifier: BSD-2-Clause
/* stream.c - the hwtrace Valgrind tool's stream into hwt-sw rings
 * (stream.h, vgstream.h), directly or through each thread's log of runs
 * (runlog.h). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "stream.h"
#include "spill.h"
#include "valgrind/keep.h"
#include "valgrind/vgstream.h"

struct hwt_vg_sb {
	/* Its instructions, side exits (exit_after: instructions run when
	 * exit k is taken, HWT_SW_TR_REP_CHECK on a rep instruction's count
	 * check), flags (HWT_VG_SB_*), entry (the address it runs for) and,
	 * implied, its exits' targets. */
	struct hwt_sw_tr tr;
	/* The hwt-sw step records from pc[i - 1] to pc[i] for i = 1 ..
	 * ninsns - 1, one after the other: record i at enc[enc_off[i]],
	 * enc_off[ninsns] their end. Made on a run's first use, so a run
	 * is copied into the ring, not encoded instruction by instruction. */
	uint8_t *enc;
	uint32_t *enc_off;
};

#define REP_CHECK HWT_SW_TR_REP_CHECK
/* hwt_vg_sb_hot.next_n: no exit led there (the run went on to its end
 * as far as it had run). A translation holds far fewer instructions. */
#define NEXT_NONE UINT16_MAX

/* A thread's log holds the tool's EXEC and EXIT items as they are and
 * these marks of its own (V & 3 == HWT_VG_RECORD, kind V >> 2): */
enum {
	LOG_ASYNC = 1,  /* the next instruction enters a signal handler */
	LOG_TRUNC = 2,  /* the run executed N instructions (a fault): N */
};

/* The instructions t's run executed leaving by exit k, k its count of
 * side exits for its end (hwt_sw_tr_exit_count: a rep instruction's
 * exhausted count check ran nothing). */
static uint32_t after_exit(const struct hwt_vg_thread *t, uint64_t k)
{
	return hwt_sw_tr_exit_count(&t->run->tr, (uint32_t)k, t->last_known,
				    t->last_pc);
}

/* The exit a run of implied superblock sb left by, its thread going on
 * at pc: the side exit whose target pc is, else (its count of side
 * exits) its end. */
static uint32_t exit_to(const struct hwt_vg_sb *sb, uint64_t pc)
{
	return hwt_sw_tr_exit_to(&sb->tr, pc);
}

/* t runs sb next: whole, unless an exit or a fault says otherwise. */
static void start_run(struct hwt_vg_thread *t, struct hwt_vg_sb *sb)
{
	t->run = sb;
	t->run_insns = sb->tr.ninsns;
	t->run_done = 0;
	t->run_open = (sb->tr.flags & HWT_VG_SB_IMPLIED) && sb->tr.nexits;
}

/* t's open run left for pc. */
static void leave_for(struct hwt_vg_thread *t, uint64_t pc)
{
	t->run_insns = after_exit(t, exit_to(t->run, pc));
	t->run_open = false;
}

/* If pc is one of the instructions t's run has run, the run ends there,
 * with pc (executed) or before it (never before what a stop wrote of
 * it): true. */
static bool cut_at(struct hwt_vg_thread *t, uint64_t pc, bool executed)
{
	for (uint32_t i = 0; t->run && i < t->run_insns; i++)
		if (t->run->tr.pc[i] == pc) {
			uint32_t n = i + (executed ? 1 : 0);

			t->run_insns = n > t->run_done ? n : t->run_done;
			t->run_open = false;
			return true;
		}
	return false;
}

/* A fault at pc (AT): t's run ends at the faulting instruction, or an
 * open run left for pc. */
static void fault_at(struct hwt_vg_thread *t, uint64_t pc)
{
	if (!cut_at(t, pc, true) && t->run_open)
		leave_for(t, pc);
}

/* t goes on at pc (NEXT, a stop): an open run ran up to pc, or left for
 * it. */
static void goes_on_at(struct hwt_vg_thread *t, uint64_t pc)
{
	if (t->run_open && !cut_at(t, pc, false))
		leave_for(t, pc);
}

/* Reading one item: running out of bytes is not an error until the
 * stream ends; a malformed number is. */
enum { CUR_OK, CUR_SHORT, CUR_BAD };

struct cursor {
	const uint8_t *p, *end;
	int state;
};

static uint64_t get_u(struct cursor *c)
{
	uint64_t v;
	int rc;

	/* The first number that fails says why; the rest read nothing. */
	if (c->state != CUR_OK)
		return 0;
	if ((rc = hwt_get_uleb128(&c->p, c->end, &v)) == 1)
		return v;
	c->state = rc < 0 ? CUR_BAD : CUR_SHORT;
	c->p = c->end;
	return 0;
}

/* get_u for an item's first number, most often one to three bytes (a
 * run of one of the first 2 M translations): without a call. */
static inline uint64_t get_item(struct cursor *c)
{
	const uint8_t *p = c->p;

	if (c->end - p >= 3) {
		if (!(p[0] & 0x80)) {
			c->p = p + 1;
			return p[0];
		}
		if (!(p[1] & 0x80)) {
			c->p = p + 2;
			return (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
		}
		if (!(p[2] & 0x80)) {
			c->p = p + 3;
			return (uint64_t)(p[0] & 0x7f) |
			       (uint64_t)(p[1] & 0x7f) << 7 |
			       (uint64_t)p[2] << 14;
		}
	}
	return get_u(c);
}

static int64_t get_s(struct cursor *c)
{
	uint64_t z = get_u(c);

	return (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
}

static int bad(struct hwt_vg_reader *r, struct hwt_err *err, const char *what)
{
	return hwt_err_set(err, EINVAL, "valgrind trace stream: %s at byte "
			   "%llu", what, (unsigned long long)r->offset);
}

int hwt_vg_reader_init(struct hwt_vg_reader *r, uint64_t ring_capacity,
		       struct hwt_err *err)
{
	*r = (struct hwt_vg_reader){ .ring_capacity = ring_capacity };
	return 0;
}

static struct hwt_vg_thread *find(struct hwt_vg_reader *r, uint64_t tid)
{
	/* The newest first: a tid the system reused is the live one. */
	for (size_t i = r->nthreads; i-- > 0;)
		if ((uint64_t)r->threads[i].tid == tid)
			return &r->threads[i];
	return NULL;
}

/* Forget the oldest exited thread (its history too) to make room for a
 * new one, as the ptrace recorder does: a bundle holds at most
 * HWT_BUNDLE_MAX_THREADS threads, a program may make any number over its
 * life. False when every thread is alive. */
static bool evict_oldest_exited(struct hwt_vg_reader *r)
{
	size_t cur = r->cur ? (size_t)(r->cur - r->threads) : SIZE_MAX;

	for (size_t i = 0; i < r->nthreads; i++) {
		if (!r->threads[i].exited || i == cur)
			continue;
		hwt_sw_ring_free(&r->threads[i].ring);
		hwt_vg_log_free(&r->threads[i].log);
		memmove(&r->threads[i], &r->threads[i + 1],
			(r->nthreads - i - 1) * sizeof(*r->threads));
		r->nthreads--;
		r->evicted++;
		if (cur != SIZE_MAX && cur > i)
			r->cur = &r->threads[cur - 1];
		return true;
	}
	return false;
}

static struct hwt_vg_thread *add(struct hwt_vg_reader *r, uint64_t tid,
				 struct hwt_err *err)
{
	struct hwt_vg_thread *t;
	size_t cur;
	int rc;

	if (r->nthreads == HWT_BUNDLE_MAX_THREADS && !evict_oldest_exited(r)) {
		bad(r, err, "more than 4096 threads alive at once, the most a "
		    "bundle holds");
		return NULL;
	}
	cur = r->cur ? (size_t)(r->cur - r->threads) : SIZE_MAX;
	if (HWT_ARRAY_RESERVE(r->threads, r->threads_cap, r->nthreads + 1,
			      8)) {
		hwt_err_set(err, ENOMEM, "out of memory for threads");
		return NULL;
	}
	if (cur != SIZE_MAX)
		r->cur = &r->threads[cur];
	t = &r->threads[r->nthreads];
	*t = (struct hwt_vg_thread){ .tid = (pid_t)tid,
				     .exec = r->modules.exec };
	rc = hwt_sw_ring_init(&t->ring, r->ring_capacity,
			      hwt_sw_ring_chunk_payload_for(r->ring_capacity),
			      err);
	t->ring.budget = r->budget;
	if (r->defer) {
		hwt_vg_log_init(&t->log, r->ring_capacity, r->budget);
		t->log.hold = r->whole_dir != NULL;
	}
	if (rc == 0 && r->whole_dir)
		rc = hwt_sw_spill_new(r->whole_dir, t->tid, t->exec,
				      r->whole_bound,
				      r->pack_work, &t->ring.spill, err);
	if (rc < 0) {
		hwt_sw_ring_free(&t->ring);
		return NULL;
	}
	r->nthreads++;
	return t;
}

/* The thread named by a record: an os tid, found or new. */
static struct hwt_vg_thread *thread_of(struct hwt_vg_reader *r, uint64_t tid,
				       bool born, struct hwt_err *err)
{
	struct hwt_vg_thread *t;

	if (tid == 0 || tid > INT_MAX) {
		bad(r, err, "a thread id out of range");
		return NULL;
	}
	t = find(r, tid);
	if (t && !(born && t->exited))
		return t;
	return add(r, tid, err);
}

/* One executed instruction into t's ring. The instruction a stopped
 * thread stood at was written already (hwt_vg_reader_stop_at): when the
 * thread goes on from there it is not written twice. */
static void write_insn(struct hwt_vg_reader *r, struct hwt_vg_thread *t,
		       uint64_t pc)
{
	if (t->ahead) {
		t->ahead = false;
		if (pc == t->last_pc && !t->async_next)
			return;
	}
	if (t->gap_insns || t->gap_bytes) {
		/* After runs the log dropped (expand_log). */
		hwt_sw_ring_skip(&t->ring, pc, t->gap_insns, t->gap_bytes);
		t->gap_insns = t->gap_bytes = 0;
		t->async_next = false;
	} else if (!t->ring.started) {
		hwt_sw_ring_start(&t->ring, pc);
	} else {
		hwt_sw_ring_step(&t->ring, pc, t->async_next);
		t->async_next = false;
	}
	t->last_pc = pc;
	t->last_known = true;
	if (!t->expanding)
		r->insns++;
}

/* sb's step records (enc, enc_off); false when memory ran out. */
static bool encode_sb(struct hwt_vg_sb *sb)
{
	uint8_t *enc = malloc((size_t)sb->tr.ninsns * HWT_SW_MAX_RECORD + 1);
	uint32_t *off = malloc(((size_t)sb->tr.ninsns + 1) * sizeof(*off));
	uint32_t at = 0;

	if (!enc || !off) {
		free(enc);
		free(off);
		return false;
	}
	off[0] = 0;
	for (uint32_t i = 1; i < sb->tr.ninsns; i++) {
		off[i] = at;
		at += (uint32_t)hwt_sw_encode_step(sb->tr.pc[i - 1], sb->tr.pc[i],
						   false, enc + at);
	}
	off[sb->tr.ninsns] = at;
	sb->enc = enc;
	sb->enc_off = off;
	return true;
}

/* Write t's current run up to its instruction upto (exclusive). Its
 * first instruction goes through write_insn (the move into it may be a
 * signal's, or the instruction a stop wrote already); the rest, steps
 * inside the superblock, are copied as encoded records when the ring's
 * open chunk has room, one by one otherwise. */
static void write_upto(struct hwt_vg_reader *r, struct hwt_vg_thread *t,
		       uint32_t upto)
{
	struct hwt_vg_sb *sb = t->run;
	uint32_t i = t->run_done;

	if (i < upto)
		write_insn(r, t, sb->tr.pc[i++]);
	if (i < upto && (sb->enc || encode_sb(sb)) &&
	    hwt_sw_ring_steps(&t->ring, sb->enc + sb->enc_off[i],
			      sb->enc_off[upto] - sb->enc_off[i], upto - i,
			      sb->tr.pc[upto - 1])) {
		t->last_pc = sb->tr.pc[upto - 1];
		if (!t->expanding)
			r->insns += upto - i;
		i = upto;
	}
	for (; i < upto; i++)
		write_insn(r, t, sb->tr.pc[i]);
	if (upto > t->run_done)
		t->run_done = upto;
}

/* Write what t's last superblock run executed. */
static void write_run(struct hwt_vg_reader *r, struct hwt_vg_thread *t)
{
	if (!t->run)
		return;
	write_upto(r, t, t->run_insns);
	t->run = NULL;
	t->run_done = 0;
	t->run_open = false;
}

/* r->defer: the last instruction t ran, for a chunk's header and the
 * rare exit that needs it (exit_count). Kept as the run that ran it and
 * looked up only then: a run's addresses are far in memory. */
static uint64_t log_last_pc(const struct hwt_vg_reader *r,
			    const struct hwt_vg_thread *t)
{
	return t->last_lazy ? r->sbs[t->last_run]->tr.pc[t->last_n - 1]
			    : t->last_pc;
}

/* r->defer: t's run ends. What it executed counts in its chunk of the
 * log, and its last instruction is what the next run's exits are judged
 * from, as when it is written. */
static void log_end_run(struct hwt_vg_reader *r, struct hwt_vg_thread *t)
{
	uint32_t n;

	if (!t->log_in_run)
		return;
	n = t->run_insns;
	if (n) {
		t->last_run = t->log_run;
		t->last_n = n;
		t->last_lazy = t->last_known = true;
		t->log_async = false;
	}
	t->log_cur->insns += n;
	r->insns += n;
	t->log_in_run = false;
	t->run_open = false;
}

/* t's run ends: written, or logged (r->defer). */
static void end_run(struct hwt_vg_reader *r, struct hwt_vg_thread *t)
{
	if (r->defer)
		log_end_run(r, t);
	else
		write_run(r, t);
}

static const struct hwt_sw_tr *tr_of(void *ctx, uint32_t id)
{
	return &((const struct hwt_vg_reader *)ctx)->sbs[id]->tr;
}

/* --whole: chunks v[0 .. n - 1] of t's log (the last ending at last_pc)
 * as a group of its spill (keep.h); counted spilled, or lost when they
 * cannot be kept. */
static void spill_chunks(const struct hwt_vg_reader *r,
			 struct hwt_vg_thread *t,
			 struct hwt_vg_log_chunk *const *v, size_t n,
			 uint64_t last_pc)
{
	struct hwt_vg_runlog *l = &t->log;
	struct hwt_vg_keep_in in = {
		.ntr = (uint32_t)r->nsbs, .tr_of = tr_of, .ctx = (void *)r,
		.first_seq = t->ring.insn_total + l->lost_insns +
			l->spilled_insns,
		.last_pc = last_pc,
	};
	struct hwt_bytes g = { 0 };
	struct hwt_err e = { 0 };
	uint64_t insns = 0, bytes = 0;

	for (size_t i = 0; i < n; i++) {
		insns += v[i]->insns;
		bytes += v[i]->used;
	}
	if (hwt_vg_keep_chunks(v, n, &in, &g, &e)) {
		l->lost_insns += insns;
		l->lost_bytes += bytes;
	} else {
		hwt_sw_spill_group(t->ring.spill, g.p, g.n);
		l->spilled_insns += insns;
	}
	hwt_bytes_free(&g);
}

/* --whole: the chunks t's log dropped from the window, into its spill,
 * each ending where the next one (held or still in the log) begins. */
static void spill_held(const struct hwt_vg_reader *r, struct hwt_vg_thread *t)
{
	struct hwt_vg_runlog *l = &t->log;
	struct hwt_vg_log_chunk *c;

	while (t->ring.spill && (c = hwt_vg_log_take_held(l))) {
		const struct hwt_vg_log_chunk *next = l->nheld ? l->held[0] :
			l->nchunks ? hwt_vg_log_chunk(l, 0) : NULL;

		spill_chunks(r, t, &c, 1, next ? next->prev_pc :
			     log_last_pc(r, t));
		hwt_vg_log_chunk_free(c);
	}
}

/* --whole, the translations about to go (an exec): everything t's log
 * holds into its spill, its counts into the ring's, so that what the
 * thread runs next follows it there. */
static void spill_all(struct hwt_vg_reader *r, struct hwt_vg_thread *t)
{
	struct hwt_vg_runlog *l = &t->log;
	struct hwt_vg_log_chunk **v;

	end_run(r, t);
	spill_held(r, t);
	if (l->nchunks && (v = malloc(l->nchunks * sizeof(*v)))) {
		for (size_t i = 0; i < l->nchunks; i++)
			v[i] = hwt_vg_log_chunk(l, i);
		spill_chunks(r, t, v, l->nchunks, log_last_pc(r, t));
		free(v);
	} else {
		for (size_t i = 0; i < l->nchunks; i++)
			l->lost_insns += hwt_vg_log_chunk(l, i)->insns;
	}
	t->ring.insn_total += l->lost_insns + l->spilled_insns;
	t->ring.lost_insns += l->lost_insns;
	t->ring.lost_bytes += l->lost_bytes;
	l->spilled_insns = 0;
	hwt_vg_log_clear(l);
	t->log_cur = NULL;
	/* The translations the last run's address is read from go. */
	if (t->last_known)
		t->last_pc = log_last_pc(r, t);
	t->last_lazy = false;
}

/* Append an item of len bytes to t's log; start: it begins a run (EXEC,
 * LOG_ASYNC), where a full chunk gives way to a new one. */
static int log_item(const struct hwt_vg_reader *r, struct hwt_vg_thread *t,
		    const uint8_t *p, size_t len, bool start,
		    struct hwt_err *err)
{
	struct hwt_vg_log_chunk *c = t->log_cur;
	bool need_open = !c || (start && c->used >= t->log.chunk_bytes);

	/* The common case: room in the open chunk. */
	if (!need_open && hwt_vg_log_put(c, p, len))
		return 0;
	if (need_open) {
		c = t->log_cur = hwt_vg_log_open(&t->log, start,
						 t->last_known,
						 t->last_known ? log_last_pc(r, t)
							       : 0);
		spill_held(r, t);
	}
	if (c && !hwt_vg_log_put(c, p, len) &&
	    hwt_vg_log_grow(&t->log, &t->log_cur))
		hwt_vg_log_put(c = t->log_cur, p, len);
	if (!c || t->log.failed)
		return hwt_err_set(err, ENOMEM, "out of memory for the "
				   "trace window");
	return 0;
}

/* A mark of the log's own: kind, then n when has_n. */
static int log_mark(const struct hwt_vg_reader *r, struct hwt_vg_thread *t,
		    unsigned kind, bool has_n, uint64_t n, struct hwt_err *err)
{
	uint8_t buf[HWT_VG_LOG_MAX_ITEM];
	size_t len = hwt_put_uleb128(buf, (uint64_t)kind << 2 | HWT_VG_RECORD);

	if (has_n)
		len += hwt_put_uleb128(buf + len, n);
	if (kind == LOG_ASYNC)
		t->log_async = true;
	return log_item(r, t, buf, len, kind == LOG_ASYNC, err);
}

/* Turn t's log into hwt-sw in its ring, oldest run first, as if each had
 * been written when read; the runs the log dropped are a loss before
 * them. t's last run has ended (log_end_run). */
static void expand_log(struct hwt_vg_reader *r, struct hwt_vg_thread *t)
{
	struct hwt_vg_runlog *l = &t->log;
	struct hwt_sw_ring_budget *b = t->ring.budget;
	bool in_over = b && b->in_over;
	const struct hwt_vg_log_chunk *first;

	if (!l->nchunks)
		return;
	/* The ring keeps what the thread's share of the window held, as
	 * the window counts it (runlog.h: where the code expands to more
	 * than that, its oldest go), so the rings together stay within
	 * the window; and no window is shared halfway. */
	hwt_sw_ring_set_capacity(&t->ring, hwt_vg_thread_window_used(t));
	if (b)
		b->in_over = true;
	t->expanding = true;
	first = hwt_vg_log_chunk(l, 0);
	t->gap_insns = l->lost_insns;
	t->gap_bytes = l->lost_bytes;
	t->last_known = first->prev_known;
	t->last_pc = first->prev_pc;
	t->last_lazy = false;
	t->async_next = false;
	/* Each chunk goes once expanded: the rings filling up and the logs
	 * still to expand share the window's memory. */
	for (; l->nchunks; hwt_vg_log_release_oldest(l)) {
		const struct hwt_vg_log_chunk *c = hwt_vg_log_chunk(l, 0);
		/* The reader wrote it: every number whole. */
		struct cursor cur = { c->items, c->items + c->used, CUR_OK };

		while (cur.p < cur.end && cur.state == CUR_OK) {
			uint64_t v = get_item(&cur), arg = v >> 2;

			switch (v & 3) {
			case HWT_VG_EXEC:
				if (arg >= r->nsbs)
					goto out;   /* never: checked when read */
				/* As when it was logged (log_exec). */
				if (t->run_open)
					t->run_insns = after_exit(t, exit_to(
						t->run, r->sbs[arg]->tr.entry));
				write_run(r, t);
				start_run(t, r->sbs[arg]);
				break;
			case HWT_VG_EXIT:
				if (t->run && arg <= t->run->tr.nexits)
					t->run_insns = after_exit(t, arg);
				t->run_open = false;
				break;
			default:
				if (arg == LOG_ASYNC) {
					write_run(r, t);
					t->async_next = true;
				} else if (arg == LOG_TRUNC) {
					arg = get_u(&cur);
					if (t->run && arg <= t->run->tr.ninsns)
						t->run_insns = (uint32_t)arg;
					t->run_open = false;
				}
				break;
			}
		}
	}
out:
	write_run(r, t);
	t->expanding = false;
	if (b)
		b->in_over = in_over;
	hwt_vg_log_clear(l);
	t->log_cur = NULL;
}

/* Every thread's runs so far into its ring: the translations they name
 * are about to go. */
static void expand_all(struct hwt_vg_reader *r)
{
	for (size_t i = 0; i < r->nthreads; i++) {
		end_run(r, &r->threads[i]);
		if (r->defer)
			expand_log(r, &r->threads[i]);
	}
}

/* keep_all for thread t. */
static void keep_log(struct hwt_vg_reader *r, struct hwt_vg_thread *t)
{
	struct hwt_vg_runlog *l = &t->log;
	struct hwt_vg_keep_in in = { .ntr = (uint32_t)r->nsbs,
				     .tr_of = tr_of, .ctx = r };
	struct hwt_err e = { 0 };
	uint64_t insns = 0;

	end_run(r, t);
	spill_held(r, t);
	in.first_seq = t->ring.insn_total + l->lost_insns + l->spilled_insns;
	t->ring.insn_total += l->spilled_insns;
	l->spilled_insns = 0;
	if (!l->nchunks)
		return;
	for (size_t k = 0; k < l->nchunks; k++)
		insns += hwt_vg_log_chunk(l, k)->insns;
	in.last_pc = t->last_known ? log_last_pc(r, t) : 0;
	/* The ring's chunks go before the kept ones (append_kept). */
	in.spare = t->ring.queue_used + t->ring.open_size +
		HWT_SW_CHUNK_HDR_SIZE;
	if (hwt_vg_keep_log(l, &in, &t->kept, &e)) {
		expand_log(r, t);
		return;
	}
	t->ring.insn_total += l->lost_insns + insns;
	t->ring.lost_insns += l->lost_insns;
	t->ring.lost_bytes += l->lost_bytes;
	hwt_vg_log_clear(l);
	/* The log's weight leaves the window: the kept one's joins. */
	t->kept_weight = hwt_vg_kept_weight(&t->kept);
	if (r->budget)
		r->budget->used += t->kept_weight;
}

/* The stream is over: every thread's log is kept as it is, to follow
 * its ring's chunks (keep.h); one that cannot be is expanded. */
static void keep_all(struct hwt_vg_reader *r)
{
	for (size_t i = 0; r->defer && i < r->nthreads; i++) {
		struct hwt_vg_thread *t = &r->threads[i];

		keep_log(r, t);
		/* Nothing is logged after the end: its spare chunk goes too
		 * (a megabyte for each of a make's compilers). */
		hwt_vg_log_free(&t->log);
		t->log_cur = NULL;
	}
	for (size_t i = 0; !r->defer && i < r->nthreads; i++)
		end_run(r, &r->threads[i]);
}

/* r->defer: t's logged run left by exit k (its count of side exits:
 * at its end). */
static void log_left(const struct hwt_vg_reader *r, struct hwt_vg_thread *t,
		     uint64_t k)
{
	const struct hwt_vg_sb_hot *h = &r->hot[t->log_run];
	uint32_t after;

	t->run_open = false;
	if (k == h->nexits) {
		t->run_insns = h->ninsns;
		return;
	}
	after = r->exits[h->first_exit + k];
	t->run_insns = !(after & REP_CHECK) ? after :
		hwt_sw_tr_exit_count(&r->sbs[t->log_run]->tr, (uint32_t)k,
				     t->last_known,
				     t->last_known ? log_last_pc(r, t) : 0);
}

/* r->defer: t's run left at exit k (item bytes at p). */
static int log_exit(struct hwt_vg_reader *r, struct hwt_vg_thread *t,
		    uint64_t k, const uint8_t *p, size_t len,
		    struct hwt_err *err)
{
	if (!t || !t->log_in_run || k > r->hot[t->log_run].nexits)
		return bad(r, err, "a side exit of no superblock");
	log_left(r, t, k);
	return log_item(r, t, p, len, false, err);
}

/* r->defer: t runs translation id (item bytes at p). Where t's run
 * before it left, if its superblock is implied, is where id enters; the
 * log says it the same way (expand_log). */
static int log_exec(struct hwt_vg_reader *r, struct hwt_vg_thread *t,
		    uint32_t id, const uint8_t *p, size_t len,
		    struct hwt_err *err)
{
	int rc;

	if (t->run_open) {
		uint32_t k = exit_to(r->sbs[t->log_run], r->sbs[id]->tr.entry);
		uint8_t item[10];

		/* A chunk read on its own must not need the next one's first
		 * run to tell where its last run left: a run that opens a new
		 * chunk says so in the old one. */
		if (t->log_cur && t->log_cur->used >= t->log.chunk_bytes) {
			rc = log_exit(r, t, k, item, hwt_put_uleb128(item, (uint64_t)k
					<< 2 | HWT_VG_EXIT), err);
			if (rc < 0)
				return rc;
		} else {
			log_left(r, t, k);
		}
	}
	log_end_run(r, t);
	if (t->log_cur && t->log_cur->used < t->log.chunk_bytes &&
	    !t->log_async && hwt_vg_log_cut_due(t->log_cur, t->log_cur->insns))
		hwt_vg_log_add_cut(t->log_cur, t->log_cur->used,
				   t->log_cur->insns, log_last_pc(r, t));
	if ((rc = log_item(r, t, p, len, true, err)) < 0)
		return rc;
	t->log_run = id;
	t->run_insns = r->hot[id].ninsns;
	t->run_open = (r->hot[id].flags & HWT_VG_SB_IMPLIED) &&
		      r->hot[id].nexits;
	t->log_in_run = true;
	return 0;
}

/* r->defer: t's open run left for pc: the exit that says so goes into
 * the log, as the tool would have written it. */
static int log_exit_to(struct hwt_vg_reader *r, struct hwt_vg_thread *t,
		       uint64_t pc, struct hwt_err *err)
{
	uint32_t k = exit_to(r->sbs[t->log_run], pc);
	uint8_t item[10];

	return log_exit(r, t, k, item,
			hwt_put_uleb128(item, (uint64_t)k << 2 | HWT_VG_EXIT), err);
}

/* r->defer: t's run executed its first n instructions, no more (a fault
 * or a stop inside it). */
static int log_cut(struct hwt_vg_reader *r, struct hwt_vg_thread *t,
		   uint32_t n, struct hwt_err *err)
{
	bool was_open = t->run_open;

	t->run_open = false;
	if (n == t->run_insns && !was_open)
		return 0;
	t->run_insns = n;
	return log_mark(r, t, LOG_TRUNC, true, n, err);
}

/* r->defer: a fault ends t's run at pc, if pc is one of its
 * instructions; else an open run left for pc. */
static int log_fault(struct hwt_vg_reader *r, struct hwt_vg_thread *t,
		     uint64_t pc, struct hwt_err *err)
{
	const struct hwt_vg_sb *sb;

	r->last_at_tid = t->tid;
	r->last_at_pc = pc;
	if (!t->log_in_run)
		return 0;
	sb = r->sbs[t->log_run];
	for (uint32_t i = 0; i < t->run_insns; i++)
		if (sb->tr.pc[i] == pc)
			return log_cut(r, t, i + 1, err);
	return t->run_open ? log_exit_to(r, t, pc, err) : 0;
}

/* r->defer: t goes on at pc (NEXT): an open run ran up to pc if pc is
 * one of its instructions, else left for pc. */
static int log_next(struct hwt_vg_reader *r, struct hwt_vg_thread *t,
		    uint64_t pc, struct hwt_err *err)
{
	const struct hwt_vg_sb *sb;

	if (!t->log_in_run || !t->run_open)
		return 0;
	sb = r->sbs[t->log_run];
	for (uint32_t i = 0; i < sb->tr.ninsns; i++)
		if (sb->tr.pc[i] == pc)
			return log_cut(r, t, i, err);
	return log_exit_to(r, t, pc, err);
}

uint64_t hwt_vg_thread_window_used(const struct hwt_vg_thread *t)
{
	return hwt_sw_ring_used(&t->ring) + hwt_vg_log_weight(&t->log) +
		t->kept_weight;
}

/* Nothing newer than the ring's last chunks is left, the oldest of the
 * thread's history: they go too rather than stand for all of it, and
 * the thread keeps its counts alone, every instruction lost. */
static uint64_t drop_ring(struct hwt_vg_thread *t)
{
	struct hwt_sw_ring *r = &t->ring;
	uint64_t used = hwt_sw_ring_used(r), total = r->insn_total;
	uint64_t bytes = r->lost_bytes + r->queue_used + r->open_size;

	hwt_sw_ring_free(r);
	r->insn_total = r->lost_insns = total;
	r->lost_bytes = bytes;
	return used - hwt_sw_ring_used(r);
}

uint64_t hwt_vg_thread_evict(struct hwt_vg_thread *t, uint64_t excess)
{
	uint64_t before = hwt_sw_ring_used(&t->ring), freed;
	struct hwt_vg_kept_drop d = { 0 };

	if (t->ring.spill || t->ring.sealed)
		return 0;   /* --whole: spilled, not dropped; sealed: done */
	/* The ring's chunks are the oldest (append_kept). */
	hwt_sw_ring_set_capacity(&t->ring, before > excess ?
				 before - excess : 0);
	freed = before - hwt_sw_ring_used(&t->ring);
	if (freed < excess && t->kept.n) {
		hwt_vg_kept_drop_oldest(&t->kept, excess - freed, &d);
		t->kept_weight -= d.weight;
		t->ring.lost_insns += d.insns;
		t->ring.lost_bytes += d.bytes;
		if (t->ring.budget)
			t->ring.budget->used -= d.weight;
		freed += d.weight;
	}
	if (freed < excess && !t->kept.n && t->ring.started)
		freed += drop_ring(t);
	return freed;
}

void hwt_vg_thread_spill_ended(struct hwt_vg_thread *t)
{
	struct hwt_sw_spill *sp = t->ring.spill;
	struct hwt_err e = { 0 };
	size_t off = 0;

	if (!sp || hwt_sw_ring_seal(&t->ring, &e))
		return;   /* out of memory: staged from memory at the end */
	while (off + HWT_SW_CHUNK_HDR_SIZE <= t->ring.sealed_size) {
		size_t len = HWT_SW_CHUNK_HDR_SIZE +
			hwt_get_le32(t->ring.sealed + off + 4);

		memcpy(hwt_sw_spill_scratch(sp), t->ring.sealed + off, len);
		hwt_sw_spill_chunk(sp, len);
		off += len;
	}
	free(t->ring.sealed);
	t->ring.sealed = NULL;
	t->ring.sealed_size = 0;
	if (t->kept.n)
		hwt_sw_spill_group(sp, t->kept.p, t->kept.n);
	hwt_sw_spill_rest(sp);
	hwt_bytes_free(&t->kept);
	if (t->ring.budget)
		t->ring.budget->used -= t->kept_weight;
	t->kept_weight = 0;
}

void hwt_vg_thread_set_window(struct hwt_vg_thread *t, uint64_t capacity)
{
	hwt_sw_ring_set_capacity(&t->ring, capacity);
	if (t->log.max_capacity)
		hwt_vg_log_set_capacity(&t->log, capacity);
}

static void sb_free(struct hwt_vg_sb *sb)
{
	free(sb->tr.pc);
	free(sb->tr.exit_after);
	free(sb->tr.target);
	free(sb->enc);
	free(sb->enc_off);
}

static uint64_t log_last_pc(const struct hwt_vg_reader *r,
			    const struct hwt_vg_thread *t);

static void drop_translations(struct hwt_vg_reader *r)
{
	/* The last instruction a thread ran is read from them. */
	for (size_t i = 0; i < r->nthreads; i++) {
		struct hwt_vg_thread *t = &r->threads[i];

		if (t->last_lazy) {
			t->last_pc = log_last_pc(r, t);
			t->last_lazy = false;
		}
	}
	for (size_t i = 0; i < r->nsbs; i++) {
		sb_free(r->sbs[i]);
		free(r->sbs[i]);
	}
	r->nsbs = 0;
	r->nexits = 0;
	if (!r->ended)
		return;   /* an exec: the next program's fill them again */
	/* Megabytes for a compiler's tens of thousands, and a make has
	 * hundreds of ended children. */
	free(r->sbs);
	free(r->hot);
	free(r->exits);
	free(r->targets);
	r->sbs = NULL;
	r->hot = NULL;
	r->exits = NULL;
	r->targets = NULL;
	r->sbs_cap = r->hot_cap = r->exits_cap = r->targets_cap = 0;
}

/* sb becomes translation number r->nsbs (owned by r from now on). */
static int add_translation(struct hwt_vg_reader *r, struct hwt_vg_sb *sb,
			   struct hwt_err *err)
{
	if (HWT_ARRAY_RESERVE(r->sbs, r->sbs_cap, r->nsbs + 1, 1024) ||
	    HWT_ARRAY_RESERVE(r->hot, r->hot_cap, r->nsbs + 1, 1024) ||
	    HWT_ARRAY_RESERVE(r->exits, r->exits_cap,
			      r->nexits + sb->tr.nexits, 4096) ||
	    HWT_ARRAY_RESERVE(r->targets, r->targets_cap,
			      r->nexits + sb->tr.nexits, 4096))
		return hwt_err_set(err, ENOMEM, "out of memory for "
				   "superblocks");
	r->hot[r->nsbs] = (struct hwt_vg_sb_hot){
		.ninsns = (uint16_t)sb->tr.ninsns,
		.nexits = (uint16_t)sb->tr.nexits,
		.first_exit = (uint32_t)r->nexits,
		.next_id = UINT32_MAX,
		.flags = (uint8_t)sb->tr.flags,
	};
	if (sb->tr.nexits)
		memcpy(r->exits + r->nexits, sb->tr.exit_after,
		       sb->tr.nexits * sizeof(*r->exits));
	for (uint32_t k = 0; k < sb->tr.nexits; k++)
		r->targets[r->nexits + k] = sb->tr.target ? sb->tr.target[k] : 0;
	r->nexits += sb->tr.nexits;
	r->sbs[r->nsbs++] = sb;
	return 0;
}

/* Once the stream has ended and every followed child has taken its
 * share of the translations (FORK), nothing needs them any more: they go
 * (a compiler's are megabytes, and a build runs hundreds). A child that
 * was never followed (its stream could not be made) keeps them to the
 * end. */
static void drop_if_done(struct hwt_vg_reader *r)
{
	if (r->ended && r->forks_taken >= r->forks)
		drop_translations(r);
}

/* The end of a superblock record: its flags, entry and, implied, its
 * side exits' targets. */
static int read_sb_exits(struct hwt_vg_reader *r, struct cursor *c,
			 struct hwt_vg_sb *sb, struct hwt_err *err)
{
	uint64_t flags = get_u(c);

	sb->tr.entry = sb->tr.pc[0] + (uint64_t)get_s(c);
	if (c->state != CUR_OK)
		return 0;
	if (flags & ~(uint64_t)(HWT_VG_SB_IMPLIED | HWT_VG_SB_FINAL))
		return bad(r, err, "unknown superblock flags");
	sb->tr.flags = (uint32_t)flags;
	if (!(flags & HWT_VG_SB_IMPLIED) || !sb->tr.nexits)
		return 0;
	if (!(sb->tr.target = malloc(sb->tr.nexits * sizeof(*sb->tr.target))))
		return hwt_err_set(err, ENOMEM, "out of memory for "
				   "superblocks");
	for (uint32_t k = 0; k < sb->tr.nexits; k++)
		sb->tr.target[k] = sb->tr.entry + (uint64_t)get_s(c);
	return 0;
}

static int read_sb(struct hwt_vg_reader *r, struct cursor *c,
		   struct hwt_err *err)
{
	uint64_t id = get_u(c), n = get_u(c), nexits, pc;
	struct hwt_vg_sb sb = { 0 }, *copy;
	uint8_t *rep = NULL;
	int rc = 0;

	if (c->state != CUR_OK)
		return 0;
	if (id != r->nsbs)
		return bad(r, err, "superblocks out of order");
	if (n == 0 || n > HWT_VG_MAX_SB_INSNS)
		return bad(r, err, "a superblock's instruction count out of "
			   "range");
	sb.tr.ninsns = (uint32_t)n;
	sb.tr.pc = malloc(n * sizeof(*sb.tr.pc));
	rep = malloc(n);
	if (!sb.tr.pc || !rep) {
		rc = hwt_err_set(err, ENOMEM, "out of memory for superblocks");
		goto out;
	}
	pc = get_u(c);
	for (uint64_t i = 0; i < n && c->state == CUR_OK; i++) {
		uint64_t v;

		if (i)
			pc += (uint64_t)get_s(c);
		v = get_u(c);
		if (c->state == CUR_OK && (v >> 1 == 0 || v >> 1 > 15)) {
			rc = bad(r, err, "an instruction length out of range");
			goto out;
		}
		sb.tr.pc[i] = pc;
		rep[i] = v & 1;
		pc += v >> 1;
	}
	nexits = get_u(c);
	if (c->state != CUR_OK)
		goto out;
	if (nexits > HWT_VG_MAX_SB_EXITS) {
		rc = bad(r, err, "a superblock's exit count out of range");
		goto out;
	}
	if (nexits && !(sb.tr.exit_after = malloc(nexits *
					       sizeof(*sb.tr.exit_after)))) {
		rc = hwt_err_set(err, ENOMEM, "out of memory for superblocks");
		goto out;
	}
	for (uint64_t k = 0; k < nexits && c->state == CUR_OK; k++) {
		uint64_t after = get_u(c);

		if (c->state != CUR_OK)
			break;
		if (after > n) {
			rc = bad(r, err, "a side exit past the superblock's "
				 "end");
			goto out;
		}
		sb.tr.exit_after[k] = (uint32_t)after;
		/* The first exit after a rep instruction is its count check. */
		if (after && rep[after - 1] &&
		    (k == 0 || (sb.tr.exit_after[k - 1] & ~REP_CHECK) != after))
			sb.tr.exit_after[k] |= REP_CHECK;
	}
	if (c->state != CUR_OK)
		goto out;
	sb.tr.nexits = (uint32_t)nexits;
	if ((rc = read_sb_exits(r, c, &sb, err)) < 0 || c->state != CUR_OK)
		goto out;
	if (!(copy = malloc(sizeof(sb)))) {
		rc = hwt_err_set(err, ENOMEM, "out of memory for superblocks");
		goto out;
	}
	*copy = sb;
	if ((rc = add_translation(r, copy, err)) < 0) {
		free(copy);
		goto out;
	}
	free(rep);
	return 0;
out:
	sb_free(&sb);
	free(rep);
	return rc;
}

static int read_map(struct hwt_vg_reader *r, struct cursor *c,
		    struct hwt_err *err)
{
	uint64_t start = get_u(c), len = get_u(c), off = get_u(c);
	uint64_t flags = get_u(c), plen = get_u(c);
	char path[HWT_VG_MAX_PATH + 1];
	int rc;

	if (c->state != CUR_OK)
		return 0;
	if (plen > HWT_VG_MAX_PATH || len == 0 || flags > 7)
		return bad(r, err, "a mapping out of range");
	if ((size_t)(c->end - c->p) < plen) {
		c->state = CUR_SHORT;
		return 0;
	}
	memcpy(path, c->p, plen);
	path[plen] = '\0';
	c->p += plen;
	if (!plen || path[0] != '/' || memchr(path, '\0', plen) ||
	    !(flags & HWT_VG_MAP_X))
		return 0;
	if (r->tool_path && strcmp(path, r->tool_path) == 0) {
		const char *name = r->tool_alias ? r->tool_alias : path;

		rc = hwt_modset_add(&r->modules, name, start, off, err);
		for (size_t i = 0; rc == 0 && i < r->modules.n; i++)
			if (strcmp(r->modules.v[i].path, name) == 0)
				r->modules.v[i].recorder = true;
		return rc;
	}
	return hwt_modset_add(&r->modules, path, start, off, err);
}

/* r->cur exec'd: its history so far stays with the program it ran, and
 * the thread goes on as a new history of the new program, whose modules
 * are told apart from the old one's (docs/valgrind.md, Processes). */
static int exec_thread(struct hwt_vg_reader *r, struct hwt_err *err)
{
	r->modules.exec++;
	if (!(r->cur = add(r, (uint64_t)r->cur->tid, err)))
		return -(err->code ? err->code : EINVAL);
	return 0;
}

/* A forked child has its parent's mappings: the code it runs up to an
 * exec is the parent's (its modules as the parent's stream has read
 * them, at least up to the fork). */
static int inherit_modules(struct hwt_vg_reader *r,
			   const struct hwt_vg_reader *parent,
			   struct hwt_err *err)
{
	for (size_t i = 0; i < parent->modules.n; i++) {
		const struct hwt_collect_module *m = &parent->modules.v[i];
		int rc = hwt_modset_add(&r->modules, m->path, m->load_address,
					0, err);

		if (rc < 0)
			return rc;
		for (size_t j = 0; m->recorder && j < r->modules.n; j++)
			if (r->modules.v[j].load_address == m->load_address &&
			    !strcmp(r->modules.v[j].path, m->path))
				r->modules.v[j].recorder = true;
	}
	return 0;
}

/* A forked child's stream starts sharing the first n translations of its
 * parent's (process ppid). The parent's stream holds them by the time
 * the child's exists, but may not have been read that far yet: then the
 * record is read again with the next feed. */
static int read_fork(struct hwt_vg_reader *r, struct cursor *c, uint64_t ppid,
		     uint64_t n, struct hwt_err *err)
{
	struct hwt_vg_reader *parent;
	int rc;

	if (!r->parent_of)
		return bad(r, err, "a forked child's stream where none is "
			   "followed");
	if (r->nsbs || r->nthreads || ppid == 0 || ppid > INT_MAX)
		return bad(r, err, "a fork record out of place");
	parent = r->parent_of(r->parent_ctx, (pid_t)ppid);
	r->waiting_parent = !parent || parent->nsbs < n;
	if (r->waiting_parent) {
		if (parent && parent->ended)
			return bad(r, err, "a fork from more translations "
				   "than the parent's stream has");
		c->state = CUR_SHORT;
		return 0;
	}
	while (r->nsbs < n) {
		const struct hwt_vg_sb *p = parent->sbs[r->nsbs];
		struct hwt_vg_sb *sb = calloc(1, sizeof(*sb));

		if (!sb || !(sb->tr.pc = malloc(p->tr.ninsns * sizeof(*sb->tr.pc))) ||
		    (p->tr.nexits && !(sb->tr.exit_after = malloc(
				p->tr.nexits * sizeof(*sb->tr.exit_after)))) ||
		    (p->tr.target && !(sb->tr.target = malloc(
				p->tr.nexits * sizeof(*sb->tr.target))))) {
			if (sb)
				sb_free(sb);
			free(sb);
			return hwt_err_set(err, ENOMEM, "out of memory for "
					   "superblocks");
		}
		sb->tr = (struct hwt_sw_tr){ .ninsns = p->tr.ninsns,
					     .nexits = p->tr.nexits,
					     .pc = sb->tr.pc,
					     .exit_after = sb->tr.exit_after,
					     .flags = p->tr.flags,
					     .entry = p->tr.entry,
					     .target = sb->tr.target };
		memcpy(sb->tr.pc, p->tr.pc, p->tr.ninsns * sizeof(*sb->tr.pc));
		if (p->tr.nexits)
			memcpy(sb->tr.exit_after, p->tr.exit_after,
			       p->tr.nexits * sizeof(*sb->tr.exit_after));
		if (p->tr.target)
			memcpy(sb->tr.target, p->tr.target,
			       p->tr.nexits * sizeof(*sb->tr.target));
		if ((rc = add_translation(r, sb, err)) < 0) {
			sb_free(sb);
			free(sb);
			return rc;
		}
	}
	parent->forks_taken++;
	drop_if_done(parent);
	return inherit_modules(r, parent, err);
}

/* A thread's signal (its handler runs next), fault (AT: it stopped at a
 * pc) or next pc (NEXT), its kind already read. */
static int read_thread_event(struct hwt_vg_reader *r, struct cursor *c,
			     uint64_t kind, struct hwt_err *err)
{
	struct hwt_vg_thread *t;
	uint64_t tid, b;

	tid = get_u(c);
	b = get_u(c);
	if (c->state != CUR_OK)
		return 0;
	if (!(t = thread_of(r, tid, false, err)))
		return -(err->code ? err->code : EINVAL);
	if (kind == HWT_VG_REC_SIGNAL) {
		if (b == 0 || b > 64)
			return bad(r, err, "a signal out of range");
		end_run(r, t);
		if (r->defer)
			return log_mark(r, t, LOG_ASYNC, false, 0, err);
		t->async_next = true;
		return 0;
	}
	if (kind == HWT_VG_REC_NEXT) {
		if (r->defer)
			return log_next(r, t, b, err);
		goes_on_at(t, b);
		return 0;
	}
	if (r->defer)
		return log_fault(r, t, b, err);
	fault_at(t, b);
	r->last_at_tid = t->tid;
	r->last_at_pc = b;
	return 0;
}

/* The program exec'd: only the thread that did lives on, and the new
 * program's translations are numbered anew. */
static int read_exec(struct hwt_vg_reader *r, struct hwt_err *err)
{
	if (r->defer && r->whole_dir)
		for (size_t i = 0; i < r->nthreads; i++)
			spill_all(r, &r->threads[i]);
	else
		expand_all(r);
	for (size_t i = 0; i < r->nthreads; i++)
		if (&r->threads[i] != r->cur ||
		    r->modules.exec < HWT_BUNDLE_MAX_EXECS)
			r->threads[i].exited = true;
	drop_translations(r);
	r->forks = r->forks_taken = 0;
	r->exit_seen = false;
	return r->cur && r->cur->exited ? exec_thread(r, err) : 0;
}

/* One rare record, its kind already read. */
static int read_record(struct hwt_vg_reader *r, struct cursor *c,
		       uint64_t kind, struct hwt_err *err)
{
	struct hwt_vg_thread *t;
	uint64_t a, b;

	switch (kind) {
	case HWT_VG_REC_SB:
		return read_sb(r, c, err);
	case HWT_VG_REC_MAP:
		return read_map(r, c, err);
	case HWT_VG_REC_THREAD:
	case HWT_VG_REC_BORN:
	case HWT_VG_REC_GONE:
		a = get_u(c);
		if (c->state != CUR_OK)
			return 0;
		if (!(t = thread_of(r, a, kind == HWT_VG_REC_BORN, err)))
			return -(err->code ? err->code : EINVAL);
		if (kind == HWT_VG_REC_GONE) {
			end_run(r, t);
			t->exited = true;
		} else {
			r->cur = t;
		}
		return 0;
	case HWT_VG_REC_SIGNAL:
	case HWT_VG_REC_AT:
	case HWT_VG_REC_NEXT:
		return read_thread_event(r, c, kind, err);
	case HWT_VG_REC_UNMAP:
		get_u(c);
		get_u(c);
		return 0;
	case HWT_VG_REC_FULL:
		a = get_u(c);
		if (c->state == CUR_OK) {
			r->full = true;
			r->bound = a;
		}
		return 0;
	case HWT_VG_REC_EXIT:
		a = get_u(c);
		if (c->state == CUR_OK) {
			r->exit_seen = true;
			r->exit_status = (int)(a & 0xff);
		}
		return 0;
	case HWT_VG_REC_END:
		r->ended = true;
		/* Nothing runs any more. */
		keep_all(r);
		drop_if_done(r);
		return 0;
	case HWT_VG_REC_FORKS:
		r->forks++;
		return 0;
	case HWT_VG_REC_EXEC:
		return read_exec(r, err);
	case HWT_VG_REC_FORK:
		a = get_u(c);
		b = get_u(c);
		if (c->state != CUR_OK)
			return 0;
		return read_fork(r, c, a, b, err);
	case HWT_VG_REC_AUXV:
		a = get_u(c);
		if (c->state != CUR_OK)
			return 0;
		if (a > HWT_VG_MAX_AUXV)
			return bad(r, err, "an auxiliary vector too long");
		for (uint64_t i = 0; i < 2 * a; i++)
			r->auxv[i] = get_u(c);
		if (c->state == CUR_OK)
			r->nauxv = (size_t)a;
		return 0;
	default:
		return bad(r, err, "an unknown record");
	}
}

/* Read one item at c: 0 (c->state says whether it was whole) or an
 * error. */
static int read_item(struct hwt_vg_reader *r, struct cursor *c,
		     struct hwt_err *err)
{
	const uint8_t *at = c->p;
	uint64_t v = get_item(c), arg = v >> 2;
	struct hwt_vg_thread *t = r->cur;

	if (c->state != CUR_OK)
		return 0;
	if (r->ended)
		return bad(r, err, "data after the end");
	switch (v & 3) {
	case HWT_VG_EXEC:
		if (!t)
			return bad(r, err, "a superblock run by no thread");
		if (arg >= r->nsbs)
			return bad(r, err, "an unknown superblock");
		if (r->defer)
			return log_exec(r, t, (uint32_t)arg, at,
					(size_t)(c->p - at), err);
		if (t->run_open)
			leave_for(t, r->sbs[arg]->tr.entry);
		write_run(r, t);
		start_run(t, r->sbs[arg]);
		return 0;
	case HWT_VG_EXIT:
		if (r->defer)
			return log_exit(r, t, arg, at, (size_t)(c->p - at),
					err);
		if (!t || !t->run || arg > t->run->tr.nexits)
			return bad(r, err, "a side exit of no superblock");
		t->run_insns = after_exit(t, arg);
		t->run_open = false;
		return 0;
	case HWT_VG_RECORD:
		return read_record(r, c, arg, err);
	default:
		return bad(r, err, "a malformed item");
	}
}

/* The item of at most three bytes at p (three are there), the byte after
 * it; NULL for a longer one. Runs and exits are these. */
static inline const uint8_t *short_item(const uint8_t *p, uint64_t *v)
{
	if (!(p[0] & 0x80)) {
		*v = p[0];
		return p + 1;
	}
	if (!(p[1] & 0x80)) {
		*v = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
		return p + 2;
	}
	if (!(p[2] & 0x80)) {
		*v = (uint64_t)(p[0] & 0x7f) | (uint64_t)(p[1] & 0x7f) << 7 |
		     (uint64_t)p[2] << 14;
		return p + 3;
	}
	return NULL;
}

/* Where run left for translation id, told by its exits' targets (implied
 * exits, log_exec): *n becomes the instructions it ran when one of its
 * exits leads there, else stays. False: that exit is a rep instruction's
 * count check, which read_item judges. */
static inline bool implied_exit(struct hwt_vg_reader *r, uint32_t run,
				uint32_t id, uint32_t *n)
{
	struct hwt_vg_sb_hot *h = &r->hot[run];
	uint32_t k = 0;

	if (h->next_id == id) {
		if (h->next_n != NEXT_NONE)
			*n = h->next_n;
		return true;
	}
	while (k < h->nexits &&
	       r->targets[h->first_exit + k] != r->sbs[id]->tr.entry)
		k++;
	if (k < h->nexits) {
		if (r->exits[h->first_exit + k] & REP_CHECK)
			return false;
		*n = r->exits[h->first_exit + k];
	}
	h->next_id = id;
	h->next_n = k < h->nexits ? (uint16_t)*n : NEXT_NONE;
	return true;
}

/* r->defer: the runs and exits of the current thread at c, as many as
 * follow one another, straight into its log: the bytes as one copy, the
 * state in locals. Most of a stream is these; whatever else comes (a
 * record, a chunk to open, an exit judged from the run before it, an
 * unknown translation, an item cut short) is left at c for read_item. */
static void log_runs(struct hwt_vg_reader *r, struct cursor *c)
{
	struct hwt_vg_thread *t = r->cur;
	struct hwt_vg_log_chunk *ch = t->log_cur;
	const struct hwt_vg_sb_hot *hot = r->hot;
	const uint32_t *exits = r->exits;
	const uint8_t *p = c->p, *span = p, *end = c->end;
	uint64_t nsbs = r->nsbs, done = 0;
	bool in_run = t->log_in_run, open = t->run_open, async = t->log_async;
	uint32_t run = t->log_run, n = t->run_insns;
	uint32_t last_run = t->last_run, last_n = t->last_n;
	bool ended_one = false;
	size_t room;
	uint64_t cut_in;        /* done when the next restart point is due */

	if (!ch || ch->used >= t->log.chunk_bytes)
		return;
	/* Bytes the chunk takes before a run must open another. */
	room = t->log.chunk_bytes - ch->used;
	cut_in = hwt_vg_log_cut_in(ch);
	while (end - p >= 3) {
		uint64_t v;
		const uint8_t *next = short_item(p, &v);

		if (!next)
			break;
		if ((v & 3) == HWT_VG_EXEC) {
			uint32_t id = (uint32_t)(v >> 2);

			if ((v >> 2) >= nsbs || (size_t)(p - span) >= room)
				break;
			if (open && !implied_exit(r, run, id, &n))
				break;
			if (in_run) {
				done += n;
				if (n) {
					last_run = run;
					last_n = n;
					ended_one = true;
					async = false;
				}
			}
			if (!async && done >= cut_in) {
				hwt_vg_log_add_cut(ch, ch->used +
					(uint32_t)(p - span), ch->insns + done,
					ended_one ? r->sbs[last_run]->tr.pc[last_n - 1]
						  : log_last_pc(r, t));
				cut_in = hwt_vg_log_cut_in(ch);
			}
			run = id;
			n = hot[run].ninsns;
			open = (hot[run].flags & HWT_VG_SB_IMPLIED) &&
			       hot[run].nexits;
			in_run = true;
		} else if ((v & 3) == HWT_VG_EXIT) {
			uint32_t after;

			/* An exit stays with its run, past the chunk's size
			 * by its slack at most (hwt_vg_log_open). */
			if (!in_run || (v >> 2) > hot[run].nexits ||
			    (size_t)(next - span) > room + HWT_VG_LOG_MAX_ITEM)
				break;
			after = (v >> 2) == hot[run].nexits ? hot[run].ninsns :
				exits[hot[run].first_exit + (v >> 2)];
			if (after & REP_CHECK)
				break;
			n = after;
			open = false;
		} else {
			break;
		}
		p = next;
	}
	if (p == span)
		return;
	memcpy(ch->items + ch->used, span, (size_t)(p - span));
	ch->used += (uint32_t)(p - span);
	ch->insns += done;
	r->insns += done;
	t->log_in_run = in_run;
	t->log_async = async;
	t->run_open = open;
	t->log_run = run;
	t->run_insns = n;
	if (ended_one) {
		t->last_run = last_run;
		t->last_n = last_n;
		t->last_lazy = t->last_known = true;
	}
	c->p = p;
}

/* len more bytes at data after what r->pending holds. */
static int add_pending(struct hwt_vg_reader *r, const uint8_t *data,
		       size_t len)
{
	if (HWT_ARRAY_RESERVE(r->pending, r->pending_cap,
			      r->npending + len, 4096))
		return -ENOMEM;
	if (len)
		memcpy(r->pending + r->npending, data, len);
	r->npending += len;
	return 0;
}

int hwt_vg_reader_feed(struct hwt_vg_reader *r, const uint8_t *data,
		       size_t len, struct hwt_err *err)
{
	struct cursor c;
	size_t keep;
	bool held;
	int rc = 0;

	if (len == 0 && r->npending == 0)
		return 0;
	/* Most feeds start on an item: they are read where they lie, and
	 * only an item cut at their end is copied (pending). */
	held = r->npending || (!r->magic_seen && len < HWT_VG_MAGIC_LEN);
	if (held) {
		if (add_pending(r, data, len) < 0)
			return hwt_err_set(err, ENOMEM, "out of memory for "
					   "the valgrind trace stream");
		c = (struct cursor){ r->pending, r->pending + r->npending,
				     CUR_OK };
	} else {
		c = (struct cursor){ data, data + len, CUR_OK };
	}
	if (!r->magic_seen) {
		if ((size_t)(c.end - c.p) < HWT_VG_MAGIC_LEN)
			return 0;
		if (memcmp(c.p, HWT_VG_MAGIC, HWT_VG_MAGIC_LEN))
			return hwt_err_set(err, EINVAL, "not a hwtrace "
					   "valgrind trace stream");
		c.p += HWT_VG_MAGIC_LEN;
		r->offset = HWT_VG_MAGIC_LEN;
		r->magic_seen = true;
	}
	while (c.p < c.end) {
		const uint8_t *start = c.p;

		if (r->defer && r->cur && !r->ended) {
			log_runs(r, &c);
			r->offset += (uint64_t)(c.p - start);
			if (c.p == c.end)
				break;
			start = c.p;
		}
		rc = read_item(r, &c, err);
		if (rc < 0)
			break;
		if (c.state == CUR_BAD) {
			rc = bad(r, err, "a malformed number");
			break;
		}
		if (c.state == CUR_SHORT) {
			c.p = start;
			break;
		}
		r->offset += (uint64_t)(c.p - start);
	}
	keep = (size_t)(c.end - c.p);
	if (rc == 0 && keep > HWT_VG_MAX_ITEM && !r->waiting_parent)
		rc = bad(r, err, "an item longer than any the tool writes");
	if (held) {
		memmove(r->pending, c.p, keep);
		r->npending = keep;
	} else if (add_pending(r, c.p, keep) < 0 && rc == 0) {
		rc = hwt_err_set(err, ENOMEM, "out of memory for the "
				 "valgrind trace stream");
	}
	/* What a new share of the window dropped (--whole). */
	for (size_t i = 0; !r->ended && i < r->nthreads; i++)
		spill_held(r, &r->threads[i]);
	return rc;
}

int hwt_vg_reader_stop_at(struct hwt_vg_reader *r, pid_t tid, uint64_t pc,
			  bool mid, struct hwt_err *err)
{
	struct hwt_vg_thread *t = thread_of(r, (uint64_t)tid, false, err);
	uint32_t i = 0;

	if (!t)
		return -(err->code ? err->code : EINVAL);
	if (r->defer)
		return hwt_err_set(err, EINVAL, "a stop of a recording whose "
				   "runs are kept for later");
	goes_on_at(t, pc);
	if (mid && t->run) {
		for (i = t->run_done; i < t->run_insns; i++)
			if (t->run->tr.pc[i] == pc)
				break;
	}
	if (mid && t->run && i < t->run_insns)
		write_upto(r, t, i);
	else
		write_run(r, t);
	if (!(t->ahead && t->last_pc == pc)) {
		if (!t->ahead) {
			t->ran_pc = t->last_pc;
			t->ran_known = t->last_known;
		}
		write_insn(r, t, pc);
		t->ahead = true;
	}
	return 0;
}

void hwt_vg_reader_moved(struct hwt_vg_reader *r, pid_t tid, uint64_t pc)
{
	struct hwt_vg_thread *t = find(r, (uint64_t)tid);

	if (!t || !t->ahead)
		return;
	/* The run it stood in ran what the stop wrote of it, no more
	 * (Valgrind leaves the superblock). */
	if (t->run) {
		t->run_insns = t->run_done;
		t->run_open = false;
	}
	t->ran_pc = t->last_pc;
	t->ran_known = true;
	t->ahead = false;
	t->async_next = true;
	write_insn(r, t, pc);
	t->ahead = true;
}

/* t's kept log after its ring's chunks. The log is tens of megabytes,
 * the ring's chunks little once runs are kept: the ring's go before the
 * log in the log's buffer, which has room for them (keep_all). */
static int append_kept(struct hwt_vg_thread *t, struct hwt_err *err)
{
	size_t ring = t->ring.sealed_size;

	if (HWT_ARRAY_RESERVE(t->kept.p, t->kept.cap, t->kept.n + ring, 4096))
		return hwt_err_set(err, ENOMEM, "out of memory sealing the "
				   "trace of thread %d", (int)t->tid);
	memmove(t->kept.p + ring, t->kept.p, t->kept.n);
	if (ring)
		memcpy(t->kept.p, t->ring.sealed, ring);
	free(t->ring.sealed);
	t->ring.sealed = t->kept.p;
	t->ring.sealed_size = ring + t->kept.n;
	t->kept = (struct hwt_bytes){ 0 };
	if (t->ring.budget)
		t->ring.budget->used -= t->kept_weight;
	t->kept_weight = 0;
	return 0;
}

bool hwt_vg_reader_last_pc(const struct hwt_vg_reader *r,
			   const struct hwt_vg_thread *t, uint64_t *pc)
{
	if (!t->last_known || t->ahead)
		return false;
	*pc = log_last_pc(r, t);
	return true;
}

bool hwt_vg_reader_ran_pc(const struct hwt_vg_reader *r,
			  const struct hwt_vg_thread *t, uint64_t *pc)
{
	if (!t->ahead)
		return hwt_vg_reader_last_pc(r, t, pc);
	*pc = t->ran_pc;
	return t->ran_known;
}

int hwt_vg_reader_finish(struct hwt_vg_reader *r, struct hwt_err *err)
{
	int rc = 0;

	if (!r->ended)
		keep_all(r);
	for (size_t i = 0; i < r->nthreads; i++)
		r->threads[i].exited = true;
	if (r->waiting_parent)
		rc = hwt_err_set(err, EPROTO, "a forked child's stream whose "
				 "parent's stream never described the "
				 "translations it shares");
	else if (r->npending || !r->magic_seen)
		rc = hwt_err_set(err, EIO, "the valgrind trace stream ends "
				 "in the middle of an item at byte %llu",
				 (unsigned long long)r->offset);
	for (size_t i = 0; i < r->nthreads; i++) {
		struct hwt_vg_thread *t = &r->threads[i];
		struct hwt_err e = { 0 };
		int src = hwt_sw_ring_seal(&t->ring, &e);

		if (!src && t->kept.n)
			src = append_kept(t, &e);
		if (src < 0 && rc == 0) {
			*err = e;
			rc = src;
		}
	}
	return rc;
}

void hwt_vg_reader_free(struct hwt_vg_reader *r)
{
	drop_translations(r);
	free(r->sbs);
	free(r->hot);
	free(r->exits);
	free(r->targets);
	for (size_t i = 0; i < r->nthreads; i++) {
		hwt_sw_ring_free(&r->threads[i].ring);
		hwt_vg_log_free(&r->threads[i].log);
		hwt_bytes_free(&r->threads[i].kept);
	}
	free(r->threads);
	hwt_modset_free(&r->modules);
	free(r->pending);
	*r = (struct hwt_vg_reader){ 0 };
}
