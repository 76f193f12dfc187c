// SPDX-License-Identifier: BSD-2-Clause
/* memhist.c - memory as it was before any kept step: the memory where
 * the history ends with the old bytes of that step and every later one
 * put back, newest first. Asked the same way of a live recorder's log
 * (collect/ptrace/memlog.c, the stopped process being the end) and of a
 * bundle's data history (the core being the end).
 *
 * Each thread's instruction index maps to a step through its runs: the
 * steps where it was stepped after another thread; its later
 * instructions follow on until the next run or its newest step.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-past.h"

static const struct hwt_mem_thread *thread_of(const struct hwt_mem_history *h,
					      int32_t tid)
{
	for (size_t i = 0; i < h->nthreads; i++)
		if (h->threads[i].tid == tid)
			return &h->threads[i];
	return NULL;
}

/* The run of thread t holding its instruction index (by_seq false) or
 * its step seq (by_seq true): runs are sorted by both. Its position in
 * t->runs plus one; 0 when before the first. */
static size_t run_holding(const struct hwt_mem_thread *t, uint64_t key,
			  bool by_seq)
{
	size_t lo = 0, hi = t->nruns;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if ((by_seq ? t->runs[mid].seq : t->runs[mid].index) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether step seq (not before run lo - 1 starts) is one of the run's
 * instructions: those up to the next run's index, or, in the last run,
 * up to the thread's newest step. A step after them is another
 * thread's. */
static bool in_run(const struct hwt_mem_thread *t, size_t lo, uint64_t seq)
{
	const struct hwt_mem_run *r = &t->runs[lo - 1];

	if (lo == t->nruns)
		return seq <= t->last_seq;
	return seq < t->runs[lo].seq &&
	       seq - r->seq < t->runs[lo].index - r->index;
}

/* The step at which thread t stood before its instruction index. */
static bool step_of_index(const struct hwt_mem_thread *t, uint64_t index,
			  uint64_t *seq)
{
	size_t lo = run_holding(t, index, false);

	if (lo == 0)
		return false;
	*seq = t->runs[lo - 1].seq + (index - t->runs[lo - 1].index);
	return in_run(t, lo, *seq);
}

/* The instruction index of thread t at step seq; false when t did not
 * take that step. */
static bool index_of_step(const struct hwt_mem_thread *t, uint64_t seq,
			  uint64_t *index)
{
	size_t lo = run_holding(t, seq, true);

	if (lo == 0)
		return false;
	*index = t->runs[lo - 1].index + (seq - t->runs[lo - 1].seq);
	return in_run(t, lo, seq);
}

/* The first of e[0 .. n) (sorted by seq) at or after step seq. */
static size_t first_at(const struct hwt_mem_entry *e, size_t n, uint64_t seq)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Memory before step seq; known[i] says which bytes are known. */
static void bytes_before(const struct hwt_mem_history *h, uint64_t seq,
			 uint64_t addr, uint8_t *out, bool *known, size_t len)
{
	size_t got, indexed = 0;

	memset(known, 0, len);
	if (seq < h->horizon)
		return;
	got = h->read_now(h->ctx, addr, out, len);
	for (size_t i = 0; i < got && i < len; i++)
		known[i] = true;
	/* The indexed stores are older than the rest: walked newest first,
	 * those come before them. */
	if (h->index && addr + len > addr)
		indexed = hwt_mem_index_count(h->index);
	for (size_t i = h->n; i-- > indexed && h->e[i].seq >= seq;) {
		const struct hwt_mem_entry *e = &h->e[i];
		uint64_t lo = e->addr > addr ? e->addr : addr;
		uint64_t hi = e->addr + e->len < addr + len ?
			e->addr + e->len : addr + len;

		for (uint64_t a = lo; a < hi; a++) {
			known[a - addr] = e->off != HWT_MEM_UNKNOWN;
			if (known[a - addr])
				out[a - addr] = h->bytes[e->off + (a - e->addr)];
		}
	}
	if (indexed)
		hwt_mem_index_before(h->index, h->e, h->bytes,
				     (uint32_t)first_at(h->e, indexed, seq), addr,
				     out, known, len);
}

int hwt_mem_history_at(const struct hwt_mem_history *h, int32_t tid,
		       uint64_t index, uint64_t addr, void *buf, size_t len)
{
	const struct hwt_mem_thread *t = thread_of(h, tid);
	bool *known;
	uint64_t seq;
	size_t n;

	if (!t)
		return -ENOENT;
	if (!step_of_index(t, index, &seq) || !len)
		return 0;
	if (addr + len < addr)
		len = (size_t)(0 - addr);    /* up to the address space's end */
	if (len > INT32_MAX)
		len = INT32_MAX;
	if (!(known = calloc(len, sizeof(*known))))
		return -ENOMEM;
	bytes_before(h, seq, addr, buf, known, len);
	for (n = 0; n < len && known[n]; n++)
		;
	free(known);
	return (int)n;
}

/* Whether the store kept in entry e changed a byte of [addr, addr+len):
 * its old bytes against the memory right after its step; -1: unknown. */
static int changed(const struct hwt_mem_history *h,
		   const struct hwt_mem_entry *e, uint64_t addr, uint64_t len)
{
	uint64_t lo = e->addr > addr ? e->addr : addr;
	uint64_t hi = e->addr + e->len < addr + len ? e->addr + e->len
						      : addr + len;
	uint8_t after[64];
	bool known[64];

	if (hi - lo > sizeof(after))
		hi = lo + sizeof(after);
	bytes_before(h, e->seq + 1, lo, after, known, (size_t)(hi - lo));
	for (uint64_t a = lo; a < hi; a++) {
		if (!known[a - lo])
			return -1;
		if (after[a - lo] != h->bytes[e->off + (a - e->addr)])
			return 1;
	}
	return 0;
}

bool hwt_mem_history_index_at(const struct hwt_mem_history *h, int32_t tid,
			      uint64_t step, uint64_t *index)
{
	const struct hwt_mem_thread *t = thread_of(h, tid);
	size_t lo;

	if (!t || !t->nruns)
		return false;
	/* Before the horizon nothing is known: its first moment is the
	 * nearest that is. */
	if (step < h->horizon)
		step = h->horizon;
	lo = run_holding(t, step, true);
	if (lo == 0)                    /* before its first recorded step */
		*index = t->runs[0].index;
	else if (in_run(t, lo, step))
		*index = t->runs[lo - 1].index + (step - t->runs[lo - 1].seq);
	else if (lo < t->nruns)         /* others stepped: its next run */
		*index = t->runs[lo].index;
	else                            /* after its newest step */
		*index = t->runs[lo - 1].index +
			 (t->last_seq - t->runs[lo - 1].seq) + 1;
	return true;
}

int hwt_mem_history_writes(const struct hwt_mem_history *h, uint64_t addr,
			   uint64_t len,
			   bool (*each)(void *ctx, const struct hwt_mem_write *w),
			   void *ctx, bool *cut)
{
	struct hwt_mem_write w;
	int count = 0;

	*cut = false;
	if (!len || len > HWT_MEM_WATCH_MAX || addr + len < addr)
		return -EINVAL;
	for (size_t i = h->n; i-- > 0;) {
		const struct hwt_mem_entry *e = &h->e[i];
		const struct hwt_mem_thread *t;
		bool known_after[HWT_MEM_WATCH_MAX];
		int ch;

		if (e->seq < h->horizon) {
			*cut = h->horizon > 0;
			break;
		}
		if (e->addr >= addr + len || e->addr + e->len <= addr)
			continue;
		if (e->off == HWT_MEM_UNKNOWN ||
		    (ch = changed(h, e, addr, len)) < 0) {
			*cut = true;
			break;
		}
		if (!ch || !(t = thread_of(h, e->tid)) ||
		    !index_of_step(t, e->seq, &w.index))
			continue;
		w.tid = e->tid;
		w.seq = e->seq;
		bytes_before(h, e->seq, addr, w.before, w.known, (size_t)len);
		bytes_before(h, e->seq + 1, addr, w.after, known_after,
			     (size_t)len);
		for (size_t k = 0; k < len; k++)
			w.known[k] = w.known[k] && known_after[k];
		count++;
		if (!each(ctx, &w))
			break;
	}
	return count;
}

int hwt_mem_history_find_write(const struct hwt_mem_history *h,
			       const struct hwt_write_query *q,
			       struct hwt_write_found *out)
{
	const struct hwt_mem_thread *t = thread_of(h, q->tid), *w;
	uint64_t seq, bound, addr = q->addr, len = q->len;
	int dir = q->dir;
	size_t i;

	if (!t)
		return -ENOENT;
	if (!len || len > HWT_MEM_WATCH_MAX || addr + len < addr)
		return -EINVAL;
	if (q->from_step != HWT_MEM_NO_BOUND)
		seq = q->from_step;
	else if (!step_of_index(t, q->from, &seq))
		return 0;
	if (q->until == HWT_MEM_NO_BOUND || !step_of_index(t, q->until, &bound))
		bound = dir < 0 ? 0 : UINT64_MAX;
	/* Backward: the newest step before seq; forward: the oldest from
	 * seq on (the step at seq itself is the instruction there). */
	if (dir < 0) {
		for (i = h->n; i > 0 && h->e[i - 1].seq >= seq; i--)
			;
	} else {
		for (i = 0; i < h->n && h->e[i].seq < seq; i++)
			;
	}
	for (;;) {
		const struct hwt_mem_entry *e;
		int ch;

		if (dir < 0 ? i == 0 : i == h->n)
			return 0;
		e = dir < 0 ? &h->e[--i] : &h->e[i++];
		if (e->seq < h->horizon ||
		    (dir < 0 ? e->seq < bound : e->seq >= bound))
			return 0;
		if (e->addr >= addr + len || e->addr + e->len <= addr)
			continue;
		/* Bytes that cannot be told stop the search: a write there
		 * may or may not have happened. */
		if (e->off == HWT_MEM_UNKNOWN)
			return 0;
		if (!h->index && h->index_pending)
			return -EAGAIN;
		if ((ch = changed(h, e, addr, len)) < 0)
			return 0;
		if (!ch || !(w = thread_of(h, e->tid)) ||
		    !index_of_step(w, e->seq, &out->index))
			continue;
		out->tid = e->tid;
		out->step = e->seq;
		return 1;
	}
}
