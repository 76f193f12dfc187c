// SPDX-License-Identifier: BSD-2-Clause
/* decode_bts.c - Intel Branch Trace Store records (bundle type
 * "hwtrace-bts"), and hwt_history_to_bts, which writes any history as such
 * records.
 *
 * A trace is a sequence of 24-byte little-endian records, oldest first:
 * u64 from, u64 to, u64 flags (bit 4: predicted, per the Intel SDM; perf's
 * intel_bts AUX buffer has the same layout with a "misc" word). A wrapped
 * ring is written in linear order by whoever saves it; see docs/bts.md.
 * Like perf's intel_bts decoder, records with one zero address are
 * markers: {0, to} is "trace begins at to", {from, 0} is "trace ends after
 * from"; {0, 0} is padding and skipped.
 *
 * Records hold only taken branches, so block k runs from record[k-1].to to
 * record[k].from inclusive and its instructions are found by walking
 * instruction lengths in the image. That makes the item count of a block
 * depend on the code, so indexing walks every block (the decoder's
 * index_image op); a segment is up to BTS_SEG_RECORDS records and decoding
 * one walks its blocks again. A walk that does not land exactly on `from`,
 * passes an instruction that always transfers (jump, call, return) or
 * needs more than BTS_MAX_BLOCK instructions is a gap, and the history
 * continues at that record's `to`.
 *
 * Asynchronous transfers (interrupts, signals) are recorded like branches;
 * one whose `from` is an instruction that cannot branch is marked
 * HWT_ITEM_ASYNC.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "replay-int.h"
#include "array.h"

#define BTS_REC 24u
#define BTS_SEG_RECORDS 4096u
/* Longest block believed: far more than any straight-line code, small
 * enough that a corrupt record costs a bounded walk. */
#define BTS_MAX_BLOCK (1u << 20)
/* Cut a segment when it holds this many items, so counts fit in 32 bits
 * and a decoded segment stays small. */
#define BTS_SEG_ITEMS (1u << 20)

#define BTS_SEG_ASYNC 0x1u   /* first block reached asynchronously */
#define BTS_SEG_TAIL 0x2u    /* one block of nitems from pc, no records */

struct bts_rec {
	uint64_t from, to;
};

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static struct bts_rec rec_at(const uint8_t *trace, size_t k)
{
	return (struct bts_rec){ get64(trace + k * BTS_REC),
				 get64(trace + k * BTS_REC + 8) };
}

/* Instructions from a to b inclusive when b is reached from a by
 * instruction lengths over code that does not always branch; 0 when it is
 * not, -ENOMEM. */
static int64_t reach(struct hwt_image *img, uint64_t a, uint64_t b)
{
	int64_t n = 1;

	while (a != b) {
		enum hwt_insn_class cls;
		uint8_t len;
		int rc = hwt_image_insn_info(img, a, &len, &cls);

		if (rc == -ENOMEM)
			return rc;
		if (rc || cls == HWT_INSN_CALL || cls == HWT_INSN_RET ||
		    cls == HWT_INSN_JUMP || n >= BTS_MAX_BLOCK ||
		    a + len > b || a + len < a)
			return 0;
		a += len;
		n++;
	}
	return n;
}

/* Whether the transfer recorded from `from` to `to` was asynchronous: the
 * instruction there cannot branch (unknown code says nothing). A record
 * back to itself is another iteration of a rep-prefixed instruction, as a
 * single-stepping recorder sees it. */
static bool async_from(struct hwt_image *img, uint64_t from, uint64_t to)
{
	enum hwt_insn_class cls;
	uint8_t len;

	return to != from && hwt_image_insn_info(img, from, &len, &cls) == 0 &&
		cls == HWT_INSN_OTHER;
}

struct bts_index {
	const uint8_t *trace;
	struct hwt_image *img;
	struct hwt_segments *segs;
	struct hwt_segment seg;  /* being built; open when nitems > 0 */
	size_t seg_recs;
	uint64_t cur;            /* start of the current block, 0: unknown */
	bool async;              /* cur was reached asynchronously */
	bool stopped;            /* an end marker closed the trace */
	uint64_t stop_at;        /* its from */
};

/* Push the open segment, which holds the records before record k. */
static int close_seg(struct bts_index *x, size_t k)
{
	int rc = 0;

	if (x->seg.nitems) {
		x->seg.len = k * BTS_REC - x->seg.off;
		rc = hwt_segments_push(x->segs, &x->seg);
	}
	memset(&x->seg, 0, sizeof(x->seg));
	x->seg_recs = 0;
	return rc;
}

static int push_gap(struct bts_index *x, const char *reason)
{
	struct hwt_segment s = { .nitems = 1, .reason = reason };

	return reason ? hwt_segments_push(x->segs, &s) : -ENOMEM;
}

/* Add the block cur..from of record k to the open segment, or a gap when
 * from cannot be reached. */
static int add_block(struct bts_index *x, size_t k, uint64_t from)
{
	int64_t n = reach(x->img, x->cur, from);
	int rc;

	if (n < 0)
		return (int)n;
	if (n == 0) {
		rc = close_seg(x, k);
		return rc ? rc : push_gap(x, hwt_segments_reason(x->segs,
			"bts: cannot reach 0x%llx from 0x%llx (record %zu)",
			(unsigned long long)from, (unsigned long long)x->cur,
			k));
	}
	if (!x->seg.nitems) {
		x->seg.off = k * BTS_REC;
		x->seg.pc = x->cur;
		x->seg.flags = x->async ? BTS_SEG_ASYNC : 0;
	}
	x->seg.nitems += (uint32_t)n;
	x->seg_recs++;
	if (x->seg_recs >= BTS_SEG_RECORDS || x->seg.nitems >= BTS_SEG_ITEMS)
		return close_seg(x, k + 1);
	return 0;
}

static int push_tail(struct bts_index *x, size_t nrec, uint64_t pc,
		     uint32_t n, bool async)
{
	struct hwt_segment s = {
		.off = nrec * BTS_REC, .pc = pc, .nitems = n,
		.flags = BTS_SEG_TAIL | (async ? BTS_SEG_ASYNC : 0),
	};

	return hwt_segments_push(x->segs, &s);
}

/* The history's newest block: from the last record's `to` to the thread's
 * current pc, as GDB completes BTS blocks with the pc it reads. */
static int index_tail(struct bts_index *x, size_t nrec, uint64_t end_pc)
{
	int64_t n;
	int rc;

	if (x->cur && !end_pc)
		/* Only the branch target is known to have been reached. */
		return push_tail(x, nrec, x->cur, 1, x->async);
	if (!end_pc || (x->stopped && end_pc == x->stop_at))
		return 0;
	if (x->cur) {
		n = reach(x->img, x->cur, end_pc);
		if (n < 0)
			return (int)n;
		if (n > 0)
			return push_tail(x, nrec, x->cur, (uint32_t)n,
					 x->async);
		rc = push_gap(x, hwt_segments_reason(x->segs,
			"bts: cannot reach the current pc 0x%llx from "
			"0x%llx", (unsigned long long)end_pc,
			(unsigned long long)x->cur));
	} else if (x->stopped) {
		rc = push_gap(x, hwt_segments_reason(x->segs,
			"bts: tracing was off from 0x%llx until the current "
			"pc 0x%llx", (unsigned long long)x->stop_at,
			(unsigned long long)end_pc));
	} else {
		rc = 0;
	}
	return rc ? rc : push_tail(x, nrec, end_pc, 1, false);
}

static int bts_index_image(const uint8_t *trace, size_t size,
			   uint64_t lost_insns, uint64_t end_pc,
			   struct hwt_image *img, struct hwt_segments *segs,
			   struct hwt_err *err)
{
	struct bts_index x = { .trace = trace, .img = img, .segs = segs };
	size_t nrec = size / BTS_REC;
	int rc = 0;

	if (lost_insns)
		rc = push_gap(&x, hwt_segments_reason(segs, "%llu instructions "
			      "lost (trace buffer wrapped)",
			      (unsigned long long)lost_insns));
	for (size_t k = 0; k < nrec && !rc; k++) {
		struct bts_rec r = rec_at(trace, k);

		if (!r.from && !r.to)
			continue;
		if (!r.from) {
			/* Begin marker: a new block starts at to. */
			rc = close_seg(&x, k);
			if (!rc && x.cur)
				rc = push_gap(&x, hwt_segments_reason(segs,
					"bts: trace restarts at 0x%llx "
					"(record %zu) before the block from "
					"0x%llx ended",
					(unsigned long long)r.to, k,
					(unsigned long long)x.cur));
			else if (!rc && x.stopped)
				rc = push_gap(&x, hwt_segments_reason(segs,
					"bts: tracing was off from 0x%llx "
					"to 0x%llx",
					(unsigned long long)x.stop_at,
					(unsigned long long)r.to));
			x.cur = r.to;
			x.async = x.stopped = false;
			continue;
		}
		if (x.cur) {
			rc = add_block(&x, k, r.from);
		} else if (x.stopped) {
			/* Where tracing resumed is not recorded. */
			rc = push_gap(&x, hwt_segments_reason(segs,
				"bts: tracing was off after 0x%llx; resumed "
				"before a branch from 0x%llx (record %zu)",
				(unsigned long long)x.stop_at,
				(unsigned long long)r.from, k));
			x.stopped = false;
		}
		if (!rc && !r.to) {
			/* End marker: the block ended at from. */
			rc = close_seg(&x, k + 1);
			x.stopped = true;
			x.stop_at = r.from;
			x.cur = 0;
			continue;
		}
		x.cur = r.to;
		x.async = async_from(img, r.from, r.to);
	}
	if (!rc)
		rc = close_seg(&x, nrec);
	if (!rc && size % BTS_REC) {
		rc = push_gap(&x, hwt_segments_reason(segs, "bts: the trace "
			      "ends with %zu bytes that are not a whole "
			      "%u-byte record", size % BTS_REC, BTS_REC));
		/* The newest block's end was in the lost record. */
		x.cur = 0;
		x.stopped = false;
	}
	if (!rc)
		rc = index_tail(&x, nrec, end_pc);
	if (rc)
		return hwt_err_set(err, ENOMEM, "out of memory indexing a "
				   "%zu-byte BTS trace", size);
	return 0;
}

static int bts_decode(const uint8_t *trace, size_t size,
		      const struct hwt_segment *seg, struct hwt_image *img,
		      struct hwt_blocks *out, struct hwt_err *err)
{
	struct hwt_block blk;
	uint64_t pc = seg->pc, total = 0;
	bool async = seg->flags & BTS_SEG_ASYNC;

	if (seg->reason) {
		blk = (struct hwt_block){ .reason = seg->reason, .count = 1,
					  .flags = HWT_BLOCK_GAP };
		return hwt_blocks_push(out, &blk) ? -ENOMEM : 0;
	}
	if (seg->flags & BTS_SEG_TAIL) {
		blk = (struct hwt_block){ .begin = pc, .end = pc,
					  .count = seg->nitems,
					  .flags = async ? HWT_BLOCK_ASYNC : 0 };
		for (uint32_t i = 1; i < seg->nitems; i++) {
			enum hwt_insn_class cls;
			uint8_t len;

			if (hwt_image_insn_info(img, blk.end, &len, &cls))
				goto changed;
			blk.end += len;
		}
		return hwt_blocks_push(out, &blk) ? -ENOMEM : 0;
	}
	if (seg->off > size || seg->len > size - seg->off || seg->len % BTS_REC)
		goto changed;
	for (size_t k = seg->off / BTS_REC;
	     k < (seg->off + seg->len) / BTS_REC; k++) {
		struct bts_rec r = rec_at(trace, k);
		int64_t n;

		if (!r.from && !r.to)
			continue;
		n = r.from ? reach(img, pc, r.from) : 0;
		if (n < 0)
			return hwt_err_set(err, ENOMEM, "out of memory");
		if (n == 0)
			goto changed;
		blk = (struct hwt_block){ .begin = pc, .end = r.from,
					  .count = (uint32_t)n,
					  .flags = async ? HWT_BLOCK_ASYNC : 0 };
		if (hwt_blocks_push(out, &blk))
			return hwt_err_set(err, ENOMEM, "out of memory");
		total += (uint64_t)n;
		pc = r.to;
		async = async_from(img, r.from, r.to);
	}
	if (total == seg->nitems)
		return 0;
changed:
	return hwt_err_set(err, EIO, "BTS segment at offset %llu no longer "
			   "decodes as it did when indexed; the trace and the "
			   "image must not change while a history is open",
			   (unsigned long long)seg->off);
}

const struct hwt_decoder hwt_decoder_bts = {
	.format = HWT_BUNDLE_TYPE_BTS,
	.index_image = bts_index_image,
	.decode = bts_decode,
};

/* ---- writing ----------------------------------------------------------- */

struct bts_out {
	uint8_t *v;
	size_t n, cap;
};

static int emit(struct bts_out *o, uint64_t from, uint64_t to)
{
	if (HWT_ARRAY_RESERVE(o->v, o->cap, o->n + BTS_REC, 64 * BTS_REC))
		return -ENOMEM;
	put64(o->v + o->n, from);
	put64(o->v + o->n + 8, to);
	put64(o->v + o->n + 16, 0);
	o->n += BTS_REC;
	return 0;
}

/* Whether control left insn other than by falling through to next. */
static bool transfers(const struct hwt_item *insn, const struct hwt_item *next)
{
	return insn->len == 0 || insn->cls == HWT_INSN_CALL ||
		insn->cls == HWT_INSN_RET || insn->cls == HWT_INSN_JUMP ||
		(next->flags & HWT_ITEM_ASYNC) ||
		next->addr != insn->addr + insn->len;
}

int hwt_history_to_bts(struct hwt_history *h, uint64_t first, uint64_t last,
		       uint8_t **out, size_t *size, struct hwt_err *err)
{
	struct bts_out o = { 0 };
	struct hwt_item prev = { 0 }, it;
	bool have_prev = false;
	int rc = 0;

	if ((rc = hwt_history_check_range(h, &first, &last, err)) < 0)
		return rc;
	for (uint64_t i = first; i <= last && !rc; i++) {
		rc = hwt_history_get(h, i, &it, err);
		if (rc)
			break;
		if (it.kind == HWT_ITEM_GAP) {
			if (have_prev)
				rc = emit(&o, prev.addr, 0);
			have_prev = false;
			continue;
		}
		if (!have_prev)
			rc = emit(&o, 0, it.addr);
		else if (transfers(&prev, &it))
			rc = emit(&o, prev.addr, it.addr);
		prev = it;
		have_prev = true;
	}
	if (!rc && have_prev)
		rc = emit(&o, prev.addr, 0);
	if (rc) {
		free(o.v);
		return rc == -ENOMEM ? hwt_err_set(err, ENOMEM, "out of memory "
						   "writing BTS records") : rc;
	}
	*out = o.v;
	*size = o.n;
	return 0;
}
