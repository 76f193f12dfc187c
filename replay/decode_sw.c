// SPDX-License-Identifier: BSD-2-Clause
/* decode_sw.c - the hwt-sw software trace format (see hwt-common.h).
 *
 * Indexing walks every chunk header and the records of every chunk (a
 * byte scan, no image access), so that the number of items each segment
 * decodes to is exact before anything is decoded: item numbers must not
 * change when a corrupt chunk is discovered later. Chunks are cut into
 * segments of at most SW_SEG_INSNS instructions, restartable at a record
 * boundary with a known pc, so a reader that wants the last few
 * instructions decodes a few thousand, not a megabyte-sized chunk, and the
 * cache of decoded segments stays small.
 *
 * Corruption becomes gap items and never stops the walk:
 *   - a bad header: scan forward for the next "HWTC" that unpacks;
 *   - a bad or truncated record: keep the instructions before it, then a
 *     gap;
 *   - records that disagree with the header's count or last pc: the whole
 *     chunk is a gap (the records cannot be trusted, and which of them are
 *     wrong cannot be told);
 *   - first_seq jumping forward: instructions were dropped when the
 *     recorder's ring wrapped.
 *
 * Chunks of branch records (HWT_SW_CHUNK_BRANCHES, block-step) are checked
 * whole the same way and then expanded with the image into plain records
 * (expand_sw.c): the one place indexing reads code, done once when the
 * history is opened so that item numbers never change.
 */
#include <errno.h>
#include <string.h>

#include "array.h"
#include "decode.h"
#include "replay-int.h"

struct sw_index {
	const uint8_t *trace;
	size_t size;
	struct hwt_segments *segs;
	struct hwt_image *img;
	struct hwt_sw_expand *ex; /* made at the first branch chunk */
	/* The previous chunk was a branch chunk whose records all held:
	 * a branch chunk following on from it starts from its last pc. */
	bool branch_prev;
	uint64_t branch_last;
	unsigned chunk;          /* 1-based number of the current chunk */
	/* bytes skipped looking for a header, reported with the next gap */
	size_t skip_off, skip_len;
	struct hwt_err skip_err;
};

static int push_gap(struct sw_index *x, const char *reason)
{
	struct hwt_segment s = { .nitems = 1, .reason = reason };

	return reason ? hwt_segments_push(x->segs, &s) : -ENOMEM;
}

/* One gap for skipped bytes and the instructions lost with them. */
static int flush_skip(struct sw_index *x, uint64_t lost)
{
	const char *r;

	if (!x->skip_len && !lost)
		return 0;
	if (!x->skip_len)
		r = hwt_segments_reason(x->segs, "%llu instructions lost "
					"(trace buffer wrapped)",
					(unsigned long long)lost);
	else if (!lost)
		r = hwt_segments_reason(x->segs, "corrupt trace at offset %zu: "
					"%zu bytes skipped (%s)", x->skip_off,
					x->skip_len, x->skip_err.msg);
	else
		r = hwt_segments_reason(x->segs, "corrupt trace at offset %zu: "
					"%zu bytes skipped (%s); %llu "
					"instructions lost", x->skip_off,
					x->skip_len, x->skip_err.msg,
					(unsigned long long)lost);
	x->skip_len = 0;
	return push_gap(x, r);
}

/* Offset of the next position at or after from where a valid chunk header
 * starts, or size. */
static size_t next_header(const struct sw_index *x, size_t from)
{
	while (from < x->size) {
		const uint8_t *p = memmem(x->trace + from, x->size - from,
					  HWT_SW_CHUNK_MAGIC, 4);
		struct hwt_sw_chunk_hdr h;

		if (!p)
			break;
		from = (size_t)(p - x->trace);
		if (!hwt_sw_chunk_hdr_unpack_flags(p, x->size - from,
						   HWT_SW_CHUNK_BRANCHES |
						   HWT_SW_CHUNK_ASYNC, &h,
						   NULL))
			return from;
		from++;
	}
	return x->size;
}

static int push_piece(struct sw_index *x, size_t pay_off, size_t from,
		      size_t to, uint64_t pc, uint32_t n, bool async)
{
	struct hwt_segment s = {
		.off = pay_off + from, .len = to - from, .pc = pc, .nitems = n,
		.flags = async ? HWT_SW_SEG_ASYNC : 0,
	};

	return hwt_segments_push(x->segs, &s);
}

/* The whole chunk at off as one gap: its records do not add up to its
 * header. */
static int push_mismatch(struct sw_index *x, size_t off,
			 const struct hwt_sw_chunk_hdr *h, uint64_t total,
			 uint64_t last)
{
	return push_gap(x, hwt_segments_reason(x->segs, "corrupt trace in "
		"chunk %u at offset %zu: header says %u instructions ending "
		"at 0x%llx, records give %llu ending at 0x%llx", x->chunk, off,
		h->insn_count, (unsigned long long)h->last_pc,
		(unsigned long long)total, (unsigned long long)last));
}

/* Walk the records of the chunk at off into segments. */
static int index_chunk(struct sw_index *x, size_t off,
		       const struct hwt_sw_chunk_hdr *h)
{
	size_t pay = off + HWT_SW_CHUNK_HDR_SIZE, mark = x->segs->n;
	size_t piece = 0, at = 0;
	struct hwt_sw_reader r;
	struct hwt_err e = { 0 };
	uint64_t piece_pc = h->first_pc, total = 1;
	uint32_t piece_n = 1;
	bool piece_async = false, async;
	const char *why;
	int rc, rr;

	hwt_sw_reader_init(&r, x->trace + pay, h->payload_size, h->first_pc);
	for (;;) {
		at = (size_t)(r.p - (x->trace + pay));
		rr = hwt_sw_reader_next(&r, &async, &e);
		if (rr <= 0)
			break;
		total++;
		if (piece_n < HWT_SW_SEG_INSNS) {
			piece_n++;
			continue;
		}
		/* Cut before this record: the next segment starts at the
		 * instruction it leads to. */
		rc = push_piece(x, pay, piece, at, piece_pc, piece_n,
				piece_async);
		if (rc)
			return rc;
		piece = (size_t)(r.p - (x->trace + pay));
		piece_pc = r.pc;
		piece_n = 1;
		piece_async = async;
	}
	rc = push_piece(x, pay, piece, at, piece_pc, piece_n, piece_async);
	if (rc)
		return rc;
	if (rr < 0) {
		/* Keep what decoded before the bad record. */
		why = hwt_segments_reason(x->segs, "corrupt trace in chunk %u "
					  "at offset %zu: %s", x->chunk,
					  pay + at, e.msg);
		if (!why)
			return -ENOMEM;
		x->segs->v[x->segs->n - 1].reason = why;
		x->segs->v[x->segs->n - 1].nitems++;
		return 0;
	}
	if (total == h->insn_count && r.pc == h->last_pc)
		return 0;
	x->segs->n = mark;
	return push_mismatch(x, off, h, total, r.pc);
}

/* A chunk of branch records: checked like a plain one (a corrupt record
 * ends it, a count or last pc that disagrees makes it one gap), then the
 * records before any bad one are expanded with the image. */
static int index_branch_chunk(struct sw_index *x, size_t off,
			      const struct hwt_sw_chunk_hdr *h, bool follows)
{
	size_t pay = off + HWT_SW_CHUNK_HDR_SIZE, at = 0;
	struct hwt_sw_reader r;
	struct hwt_err e = { 0 };
	uint64_t total = 1;
	bool async;
	int rc, rr;

	hwt_sw_reader_init(&r, x->trace + pay, h->payload_size, h->first_pc);
	for (;;) {
		at = (size_t)(r.p - (x->trace + pay));
		rr = hwt_sw_reader_next(&r, &async, &e);
		if (rr <= 0)
			break;
		total++;
	}
	if (rr == 0 && (total != h->insn_count || r.pc != h->last_pc)) {
		x->branch_prev = false;
		return push_mismatch(x, off, h, total, r.pc);
	}
	if (!x->ex && hwt_sw_expand_new(x->img, &x->ex))
		return -ENOMEM;
	follows = follows && x->branch_prev &&
		!(h->flags & HWT_SW_CHUNK_ASYNC);
	rc = hwt_sw_expand_chunk(x->ex, x->trace + pay, rr < 0 ? at :
				 h->payload_size, h,
				 follows ? &x->branch_last : NULL, x->chunk,
				 x->segs);
	x->branch_prev = rr == 0;
	x->branch_last = h->last_pc;
	if (rc || rr == 0)
		return rc;
	return push_gap(x, hwt_segments_reason(x->segs, "corrupt trace in "
						"chunk %u at offset %zu: %s",
						x->chunk, pay + at, e.msg));
}

/* What every chunk starts with, found by scanning or from the index:
 * the gaps before it (instructions the ring dropped, skipped bytes,
 * chunks out of order). Sets *follows when it continues the previous
 * chunk with nothing lost between them. */
static int chunk_begin(struct sw_index *x, size_t off,
		       const struct hwt_sw_chunk_hdr *h, uint64_t lost_insns,
		       uint64_t *next_seq, bool *follows)
{
	uint64_t lost = 0;
	int rc;

	x->chunk++;
	/* The first chunk's first_seq counts what the ring dropped before
	 * it; the bundle's count is the fallback. */
	if (x->chunk == 1)
		lost = h->first_seq ? h->first_seq : lost_insns;
	else if (h->first_seq > *next_seq)
		lost = h->first_seq - *next_seq;
	*follows = x->chunk > 1 && !lost && !x->skip_len &&
		h->first_seq == *next_seq;
	rc = flush_skip(x, lost);
	if (!rc && x->chunk > 1 && h->first_seq < *next_seq)
		rc = push_gap(x, hwt_segments_reason(x->segs,
			"chunk %u at offset %zu goes back to instruction %llu "
			"after %llu; chunks are out of order", x->chunk, off,
			(unsigned long long)h->first_seq,
			(unsigned long long)*next_seq));
	if (!(h->flags & HWT_SW_CHUNK_BRANCHES))
		x->branch_prev = false;
	*next_seq = h->first_seq + h->insn_count;
	return rc;
}

static int sw_index(const uint8_t *trace, size_t size, uint64_t lost_insns,
		    uint64_t end_pc, struct hwt_image *img,
		    struct hwt_segments *segs, struct hwt_err *err)
{
	struct sw_index x = { .trace = trace, .size = size, .segs = segs,
			      .img = img };
	uint64_t next_seq = 0;
	size_t off = 0;
	int rc = 0;

	while (off < size && !rc) {
		struct hwt_sw_chunk_hdr h;
		struct hwt_err e = { 0 };
		size_t next;
		bool follows;

		if (hwt_sw_chunk_hdr_unpack_flags(trace + off, size - off,
						  HWT_SW_CHUNK_BRANCHES |
						  HWT_SW_CHUNK_ASYNC, &h,
						  &e)) {
			next = next_header(&x, off + 1);
			if (!x.skip_len) {
				x.skip_off = off;
				x.skip_err = e;
			}
			x.skip_len += next - off;
			off = next;
			continue;
		}
		rc = chunk_begin(&x, off, &h, lost_insns, &next_seq, &follows);
		if (!rc)
			rc = h.flags & HWT_SW_CHUNK_BRANCHES ?
				index_branch_chunk(&x, off, &h, follows) :
				index_chunk(&x, off, &h);
		off += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
	}
	if (!rc)
		rc = flush_skip(&x, x.chunk ? 0 : lost_insns);
	if (x.ex)
		hwt_sw_expand_finish(x.ex, segs);
	hwt_sw_expand_free(x.ex);
	if (rc)
		return hwt_err_set(err, ENOMEM, "out of memory indexing a "
				   "%zu-byte trace", size);
	return 0;
}

/* The pieces of an indexed chunk, from its restart points: the same
 * segments index_chunk cuts by reading the records. */
static int index_cuts(struct sw_index *x, const struct hwt_sw_index *ix,
		      const struct hwt_sw_index_chunk *c)
{
	size_t pay = c->decoded_off + HWT_SW_CHUNK_HDR_SIZE, from = 0;
	uint64_t pc = c->hdr.first_pc;
	bool async = false;
	int rc = 0;

	for (size_t k = 0; k < c->ncuts && !rc; k++) {
		const struct hwt_sw_index_cut *cut = &ix->cuts[c->first_cut + k];

		rc = push_piece(x, pay, from, cut->rec_off, pc,
				HWT_SW_SEG_INSNS, async);
		from = cut->rec_off + cut->rec_len;
		pc = cut->pc;
		async = cut->async;
	}
	if (!rc)
		rc = push_piece(x, pay, from, c->hdr.payload_size, pc,
				c->hdr.insn_count -
				(uint32_t)(c->ncuts * HWT_SW_SEG_INSNS), async);
	return rc;
}

/* The pieces of an indexed RUNS chunk, from its restart points, read
 * with the table that begins at the index's chunk table. */
static int index_run_cuts(struct sw_index *x, const struct hwt_sw_index *ix,
			  const struct hwt_sw_index_chunk *c, size_t table)
{
	size_t pay = c->decoded_off + HWT_SW_CHUNK_HDR_SIZE;
	struct hwt_segment s = {
		.off = pay, .len = c->hdr.payload_size, .pc = c->hdr.first_pc,
		.flags = HWT_SW_SEG_RUNS | (c->hdr.flags & HWT_SW_CHUNK_PREV ?
					    HWT_SW_SEG_PREV : 0),
		.own.table = table,
	};
	uint32_t at = 0;
	int rc = 0;

	for (size_t k = 0; k <= c->ncuts && !rc; k++) {
		const struct hwt_sw_index_cut *cut = k < c->ncuts ?
			&ix->cuts[c->first_cut + k] : NULL;
		uint32_t upto = cut ? cut->insns : c->hdr.insn_count;

		s.nitems = upto - at;
		rc = hwt_segments_push(x->segs, &s);
		if (!cut)
			break;
		s.off = pay + cut->rec_off;
		s.len = c->hdr.payload_size - cut->rec_off;
		s.pc = cut->pc;
		s.flags = HWT_SW_SEG_RUNS |
			(cut->prev_known ? HWT_SW_SEG_PREV : 0);
		at = upto;
	}
	return rc;
}

int hwt_sw_index_segments(const struct hwt_sw_index *ix, uint64_t lost_insns,
			  struct hwt_segments *segs, struct hwt_err *err)
{
	struct sw_index x = { .segs = segs, .size = ix->decoded_size };
	uint64_t next_seq = 0;
	size_t table = SIZE_MAX;
	bool table_ended = true;
	/* A segment per chunk and restart point, and a gap between chunks
	 * at most: reserved at once, as doubling copies them into fresh
	 * pages several times over. */
	int rc = HWT_ARRAY_RESERVE(segs->v, segs->cap, segs->n + 2 *
				   (ix->nchunks + ix->ncuts) + 1, 64);

	for (size_t i = 0; i < ix->nchunks && !rc; i++) {
		const struct hwt_sw_index_chunk *c = &ix->chunks[i];
		bool follows;

		/* A table holds no instruction: the runs after it name its
		 * translations. Restart points are in the index already. */
		if (c->hdr.flags & HWT_SW_CHUNK_CUTS)
			continue;
		if (c->hdr.flags & HWT_SW_CHUNK_TABLE) {
			if (table_ended)
				table = i;
			table_ended = false;
			continue;
		}
		table_ended = true;
		rc = chunk_begin(&x, c->decoded_off, &c->hdr, lost_insns,
				 &next_seq, &follows);
		if (!rc)
			rc = c->hdr.flags & HWT_SW_CHUNK_RUNS ?
				index_run_cuts(&x, ix, c, table) :
				index_cuts(&x, ix, c);
	}
	if (!rc)
		rc = flush_skip(&x, x.chunk ? 0 : lost_insns);
	if (rc)
		return hwt_err_set(err, ENOMEM, "out of memory indexing a "
				   "%llu-byte trace",
				   (unsigned long long)ix->decoded_size);
	return 0;
}

static int sw_decode(const uint8_t *trace, size_t size,
		     const struct hwt_segment *seg, struct hwt_image *img,
		     struct hwt_blocks *out, struct hwt_err *err)
{
	uint32_t ninsn = seg->nitems - (seg->reason ? 1 : 0), n = 1;
	bool expanded = seg->flags & HWT_SW_SEG_EXPANDED;
	struct hwt_sw_reader r;
	struct hwt_block blk;
	enum hwt_insn_class cls;
	uint8_t len;
	bool async;
	int rc;

	if (ninsn) {
		if (!expanded && (seg->off > size ||
				  seg->len > size - seg->off))
			goto changed;
		hwt_sw_reader_init(&r, expanded ? seg->own.bytes :
				   trace + seg->off, seg->len, seg->pc);
		blk = (struct hwt_block){
			.begin = seg->pc, .end = seg->pc, .count = 1,
			.flags = seg->flags & HWT_SW_SEG_ASYNC ?
				HWT_BLOCK_ASYNC : 0,
		};
		for (;;) {
			uint64_t pc = r.pc;

			rc = hwt_sw_reader_next(&r, &async, NULL);
			if (rc == HWT_SW_END)
				break;
			if (rc < 0 || ++n > ninsn)
				goto changed;
			rc = hwt_image_insn_info(img, pc, &len, &cls);
			if (rc == -ENOMEM)
				goto nomem;
			/* A step over exactly the instruction's length is
			 * the fall-through; anything else was a transfer.
			 * Without code at pc nothing is known: the block
			 * ends, which is always correct. */
			if (!rc && !async && r.pc - pc == len) {
				blk.end = r.pc;
				blk.count++;
				continue;
			}
			if (hwt_blocks_push(out, &blk))
				goto nomem;
			blk = (struct hwt_block){
				.begin = r.pc, .end = r.pc, .count = 1,
				.flags = async ? HWT_BLOCK_ASYNC : 0,
			};
		}
		if (n != ninsn)
			goto changed;
		if (hwt_blocks_push(out, &blk))
			goto nomem;
	}
	if (seg->reason && hwt_blocks_push_gap(out, seg->reason))
		goto nomem;
	return 0;
changed:
	return hwt_err_set(err, EIO, "hwt-sw segment at offset %llu no longer "
			   "decodes as it did when indexed; the trace must "
			   "not change while a history is open",
			   (unsigned long long)seg->off);
nomem:
	return hwt_err_set(err, ENOMEM, "out of memory decoding the trace");
}

const struct hwt_decoder hwt_decoder_sw = {
	.format = HWT_BUNDLE_TYPE_SW,
	.index_image = sw_index,
	.decode = sw_decode,
};
