// SPDX-License-Identifier: BSD-2-Clause
/* decode_runs.c - blocks straight from a segment of superblock runs
 * (HWT_SW_SEG_RUNS, the Valgrind recorder's RUNS chunks).
 *
 * A run names its translation, whose instructions' addresses the table
 * holds, so a segment becomes blocks a run at a time. Whether one
 * instruction falls through to the next is told by its length, read from
 * the image once per translation and kept by its number (struct
 * hwt_runs_lens) rather
 * than once per instruction executed: a reverse continue over a hundred
 * million instructions walks every block of them. The blocks are the ones
 * the plain records' decoder (decode_sw.c) gives for the same
 * instructions: a step of exactly the instruction's length is the
 * fall-through, anything else (or no code there) ends the block, and an
 * entry into a signal handler always does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "decode.h"
#include "replay-int.h"

/* Bytes of instruction lengths kept at most; past it they start anew
 * (a walk then reads the image again for what it meets). */
#define LENS_MAX_BYTES (64u << 20)

void hwt_runs_lens_free(struct hwt_runs_lens *l)
{
	free(l->at);
	free(l->lens);
	*l = (struct hwt_runs_lens){ 0 };
}

size_t hwt_runs_lens_memory(const struct hwt_runs_lens *l)
{
	return l->nat * sizeof(*l->at) + l->lens_cap;
}

/* Each instruction's length in tr (0: no code there), read once. NULL
 * when memory ran out. */
static const uint8_t *lens_of(struct hwt_runs_lens *l,
			      const struct hwt_sw_tr *tr,
			      struct hwt_image *img)
{
	if (tr->id < l->nat && l->at[tr->id])
		return l->lens + l->at[tr->id] - 1;
	if (l->nlens + tr->ninsns > LENS_MAX_BYTES) {
		memset(l->at, 0, l->nat * sizeof(*l->at));
		l->nlens = 0;
	}
	if (tr->id >= l->nat) {
		size_t n = l->nat ? l->nat : 1024;
		uint32_t *at;

		while (n <= tr->id)
			n *= 2;
		if (!(at = realloc(l->at, n * sizeof(*at))))
			return NULL;
		memset(at + l->nat, 0, (n - l->nat) * sizeof(*at));
		l->at = at;
		l->nat = n;
	}
	if (HWT_ARRAY_RESERVE(l->lens, l->lens_cap, l->nlens + tr->ninsns,
			      4096))
		return NULL;
	for (uint32_t i = 0; i < tr->ninsns; i++) {
		enum hwt_insn_class cls;
		uint8_t len;
		int rc = hwt_image_insn_info(img, tr->pc[i], &len, &cls);

		if (rc == -ENOMEM)
			return NULL;
		l->lens[l->nlens + i] = rc ? 0 : len;
	}
	l->at[tr->id] = (uint32_t)l->nlens + 1;
	l->nlens += tr->ninsns;
	return l->lens + l->at[tr->id] - 1;
}

int hwt_runs_decode(struct hwt_runs_lens *lens, size_t table,
		    struct hwt_sw_table *tab, const uint8_t *base, size_t size,
		    const struct hwt_segment *seg, struct hwt_image *img,
		    struct hwt_blocks *out, struct hwt_err *err)
{
	uint32_t want = seg->nitems - (seg->reason ? 1 : 0), given = 0;
	struct hwt_sw_runs w;
	struct hwt_block blk = { 0 };
	uint64_t next = 0;       /* where the last instruction falls through */
	bool open = false, falls = false;

	if (seg->off > size || seg->len > size - seg->off)
		return hwt_err_set(err, EIO, "runs segment outside its frame");
	if (lens->table != table) {
		/* Another table's translations: the same numbers. */
		hwt_runs_lens_free(lens);
		lens->table = table;
	}
	hwt_sw_runs_init(&w, tab, base + seg->off, seg->len, 0,
			 seg->flags & HWT_SW_SEG_PREV, seg->pc);
	while (given < want) {
		const struct hwt_sw_tr *tr;
		const uint8_t *len;
		uint32_t n;
		bool async;
		int rc = hwt_sw_runs_next(&w, &tr, &n, &async, err);

		if (rc == -ENOMEM)
			goto nomem;
		if (rc < 0)
			return rc;
		if (rc == 0)
			break;
		if (!n)
			continue;
		if (!(len = lens_of(lens, tr, img)))
			goto nomem;
		for (uint32_t i = 0; i < n && given < want; i++, given++) {
			uint64_t pc = tr->pc[i];
			bool entered = i == 0 && async;

			if (open && falls && !entered && next == pc) {
				blk.end = pc;
				blk.count++;
			} else {
				if (open && hwt_blocks_push(out, &blk))
					goto nomem;
				blk = (struct hwt_block){
					.begin = pc, .end = pc, .count = 1,
					.flags = entered ? HWT_BLOCK_ASYNC : 0,
				};
				open = true;
			}
			falls = len[i] != 0;
			next = pc + len[i];
		}
	}
	if (given != want)
		return hwt_err_set(err, EIO, "a runs segment of %u "
				   "instructions gives %u", want, given);
	if ((open && hwt_blocks_push(out, &blk)) ||
	    (seg->reason && hwt_blocks_push_gap(out, seg->reason)))
		goto nomem;
	return 0;
nomem:
	return hwt_err_set(err, ENOMEM, "out of memory decoding the trace");
}

void hwt_runs_marks_free(struct hwt_runs_marks *m)
{
	free(m->by_id);
	*m = (struct hwt_runs_marks){ 0 };
}

void hwt_runs_marks_reset(struct hwt_runs_marks *m, const uint64_t *set,
			  size_t n)
{
	if (m->by_id)
		memset(m->by_id, 0, m->nids);
	m->set = set;
	m->nset = n;
}

/* Whether translation tr has an instruction at one of the set's
 * addresses, each translation looked up once per set; -ENOMEM. */
static int may_hit(struct hwt_runs_marks *m, const struct hwt_sw_tr *tr)
{
	enum { UNSEEN, NONE_THERE, SOME_THERE };

	if (tr->id >= m->nids) {
		size_t n = m->nids ? m->nids : 1024;
		uint8_t *v;

		while (n <= tr->id)
			n *= 2;
		if (!(v = realloc(m->by_id, n)))
			return -ENOMEM;
		memset(v + m->nids, UNSEEN, n - m->nids);
		m->by_id = v;
		m->nids = n;
	}
	if (m->by_id[tr->id] == UNSEEN) {
		bool some = false;

		for (uint32_t i = 0; i < tr->ninsns && !some; i++)
			some = hwt_addrs_hold(m->set, m->nset, tr->pc[i]);
		m->by_id[tr->id] = some ? SOME_THERE : NONE_THERE;
	}
	return m->by_id[tr->id] == SOME_THERE;
}

int hwt_runs_find(struct hwt_runs_marks *m, size_t table,
		  struct hwt_sw_table *tab, const uint8_t *base, size_t size,
		  const struct hwt_segment *seg, uint32_t lo, uint32_t hi,
		  bool back, uint32_t *off, struct hwt_err *err)
{
	uint32_t want = seg->nitems - (seg->reason ? 1 : 0), k = 0;
	struct hwt_sw_runs w;
	int found = 0;

	if (seg->off > size || seg->len > size - seg->off)
		return hwt_err_set(err, EIO, "runs segment outside its frame");
	if (m->table != table) {
		/* Another table's translations: the same numbers. */
		if (m->by_id)
			memset(m->by_id, 0, m->nids);
		m->table = table;
	}
	if (hi >= want)
		hi = want - 1;
	hwt_sw_runs_init(&w, tab, base + seg->off, seg->len, 0,
			 seg->flags & HWT_SW_SEG_PREV, seg->pc);
	while (want && k <= hi) {
		const struct hwt_sw_tr *tr;
		uint32_t n;
		bool async;
		int rc = hwt_sw_runs_next(&w, &tr, &n, &async, err), hit;

		if (rc == -ENOMEM)
			return hwt_err_set(err, ENOMEM, "out of memory");
		if (rc < 0)
			return rc;
		if (rc == 0)
			return hwt_err_set(err, EIO, "a runs segment of %u "
					   "instructions gives %u", want, k);
		hit = n && k + n > lo ? may_hit(m, tr) : 0;
		if (hit < 0)
			return hwt_err_set(err, ENOMEM, "out of memory");
		for (uint32_t i = 0; hit && i < n && k + i <= hi; i++) {
			if (k + i < lo ||
			    !hwt_addrs_hold(m->set, m->nset, tr->pc[i]))
				continue;
			*off = k + i;
			found = 1;
			if (!back)
				return 1;
		}
		k += n;
	}
	return found;
}
