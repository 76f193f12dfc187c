/* SPDX-License-Identifier: BSD-2-Clause */
/* keep.h - a thread's log of runs (runlog.h) stored as it is: hwt-sw
 * TABLE chunks holding the translations its runs name, then its chunks
 * as RUNS chunks (hwt-common.h, docs/swtrace.md).
 *
 * Expanding a window of 50 M instructions into step records and packing
 * them costs more than half a second after the program has ended; kept
 * as runs they are copied, and whoever reads the history expands only
 * the part it is asked for.
 */
#ifndef HWT_VG_KEEP_H
#define HWT_VG_KEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "array.h"
#include "hwt-common.h"
#include "valgrind/runlog.h"

/* Translation id (0 <= id < ntr). */
typedef const struct hwt_sw_tr *(*hwt_vg_tr_of_fn)(void *ctx, uint32_t id);

struct hwt_vg_keep_in {
	uint32_t ntr;            /* translations 0 .. ntr - 1 exist */
	hwt_vg_tr_of_fn tr_of;
	void *ctx;
	uint64_t first_seq;      /* instructions before the log's kept
				  * chunks, the dropped ones included */
	uint64_t last_pc;        /* the last instruction the log ran */
	size_t spare;            /* room out keeps after what is appended
				  * (for what is to go before it) */
};

/* Append the log's chunks to out as TABLE and RUNS chunks, then release
 * them; the log's own counts (lost) stay. Chunks of no instruction are
 * left out. On an error (-E2BIG: a chunk does not fit a RUNS chunk;
 * -ENOMEM) nothing is appended and the log is as it was. */
int hwt_vg_keep_log(struct hwt_vg_runlog *l, const struct hwt_vg_keep_in *in,
		    struct hwt_bytes *out, struct hwt_err *err);

/* The same for chunks v[0 .. n - 1] (consecutive, oldest first, v[n - 1]
 * ending at in->last_pc), left as they are: a group of a TABLE chunk and
 * their RUNS chunks that reads on its own (a --whole spill's). */
int hwt_vg_keep_chunks(struct hwt_vg_log_chunk *const *v, size_t n,
		       const struct hwt_vg_keep_in *in, struct hwt_bytes *out,
		       struct hwt_err *err);

/* What a group out of hwt_vg_keep_log weighs in the window: each RUNS
 * chunk as the log chunk it was (runlog.h), TABLE and CUTS chunks their
 * bytes. A log kept when its stream ended still counts in the window the
 * recording shares, as it did while it grew. */
uint64_t hwt_vg_kept_weight(const struct hwt_bytes *kept);

/* What hwt_vg_kept_drop_oldest took out. */
struct hwt_vg_kept_drop {
	uint64_t weight;         /* as hwt_vg_kept_weight counts it */
	uint64_t insns;          /* instructions of the RUNS chunks dropped */
	uint64_t bytes;          /* their payload bytes */
};

/* Drop the oldest RUNS chunks of a group out of hwt_vg_keep_log, each
 * with the CUTS chunk before it, until at least want weight is gone;
 * with its last RUNS chunk the group's TABLE goes too and kept is left
 * empty. The rest stays a group that reads on its own: each RUNS chunk
 * says where it starts (first_seq, the instruction before it), so the
 * drop reads as instructions lost. Memory beyond what is left goes back
 * where that is worth it. */
void hwt_vg_kept_drop_oldest(struct hwt_bytes *kept, uint64_t want,
			     struct hwt_vg_kept_drop *out);

#endif
