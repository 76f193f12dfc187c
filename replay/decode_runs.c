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
	if (open && hwt_blocks_push(out, &blk))
		goto nomem;
	if (seg->reason) {
		blk = (struct hwt_block){ .reason = seg->reason, .count = 1,
					  .flags = HWT_BLOCK_GAP };
		if (hwt_blocks_push(out, &blk))
			goto nomem;
	}
	return 0;
nomem:
	return hwt_err_set(err, ENOMEM, "out of memory decoding the trace");
}
