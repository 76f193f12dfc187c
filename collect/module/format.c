// SPDX-License-Identifier: BSD-2-Clause
/* format.c - hwtrace.ko's ring blocks to hwt-sw chunks.
 *
 * A module block is an hwt-sw chunk in all but its header and one record:
 * both start at an absolute pc, count their instructions, end with a
 * checked last pc, and share the step, jump and async records. The module
 * adds a 13-byte scheduling record (HWTRACE_REC_SCHED), which hwt-sw has
 * no use for and which is dropped here. Every block is checked whole
 * (records walked, count and last pc compared) before it is written, so a
 * corrupt block costs only its own instructions. Blocks that follow on
 * from each other (no instruction lost between them, the same kind, no
 * exec) are joined into one chunk with a record for the move between
 * them: a block the module closed early (a drain while the thread was
 * stopped) may begin at a signal handler's entry, which only a record
 * inside a chunk can mark as asynchronous. A block
 * of branch records (HWTRACE_BLK_BRANCH, block-step) is checked the same
 * way and becomes a chunk flagged HWT_SW_CHUNK_BRANCHES (and
 * HWT_SW_CHUNK_ASYNC when a signal handler's entry starts it): its records
 * may be branch targets with straight-line code left out, which the
 * replay engine expands with the program image (replay/expand_sw.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "module.h"

#define HDR_SIZE sizeof(struct hwtrace_block)
#define PAYLOAD_MAX (HWTRACE_BLOCK_SIZE - HDR_SIZE)

_Static_assert(sizeof(struct hwtrace_block) == 48,
	       "hwtrace block header layout changed");

/* Walk a block's records into out (the chunk payload, sched records
 * removed); returns the payload size or -EBADMSG with err set. */
static int walk(const struct hwtrace_block *h, const uint8_t *p,
		uint8_t *out, uint64_t blockno, struct hwt_err *err)
{
	uint64_t pc = h->first_pc, count = 1;
	size_t i = 0, o = 0;

	while (i < h->used) {
		uint8_t tag = p[i];
		size_t n;

		if (tag >= 1 && tag <= HWT_SW_TAG_STEP_MAX) {
			pc += tag;
			count++;
			n = 1;
		} else if (tag > HWT_SW_TAG_JUMP_BASE &&
			   tag <= HWT_SW_TAG_JUMP_BASE + 8) {
			size_t k = tag - HWT_SW_TAG_JUMP_BASE;
			uint64_t d = 0;

			if (h->used - i < 1 + k)
				return hwt_err_set(err, EBADMSG, "module block "
						   "%llu: jump record cut at "
						   "byte %zu", (unsigned long long)
						   blockno, i);
			for (size_t b = 0; b < k; b++)
				d |= (uint64_t)p[i + 1 + b] << (8 * b);
			/* Sign-extend the k-byte two's complement delta. */
			if (k < 8 && (d >> (8 * k - 1)) & 1)
				d |= ~0ull << (8 * k);
			pc += d;
			count++;
			n = 1 + k;
		} else if (tag == HWTRACE_REC_ASYNC) {
			n = 1;
		} else if (tag == HWTRACE_REC_SCHED) {
			if (h->used - i < HWTRACE_REC_SCHED_SIZE)
				return hwt_err_set(err, EBADMSG, "module block "
						   "%llu: sched record cut at "
						   "byte %zu", (unsigned long long)
						   blockno, i);
			i += HWTRACE_REC_SCHED_SIZE;
			continue;
		} else {
			return hwt_err_set(err, EBADMSG, "module block %llu: "
					   "bad record tag 0x%02x at byte %zu",
					   (unsigned long long)blockno, tag, i);
		}
		memcpy(out + o, p + i, n);
		o += n;
		i += n;
	}
	if (count != h->insn_count || pc != h->last_pc)
		return hwt_err_set(err, EBADMSG, "module block %llu: records "
				   "give %llu instructions ending at 0x%llx, "
				   "the header %u ending at 0x%llx",
				   (unsigned long long)blockno,
				   (unsigned long long)count,
				   (unsigned long long)pc, h->insn_count,
				   (unsigned long long)h->last_pc);
	return (int)o;
}

static bool header_ok(const uint8_t *blk, struct hwtrace_block *h)
{
	memcpy(h, blk, HDR_SIZE);
	return h->magic == HWTRACE_BLOCK_MAGIC && h->used <= PAYLOAD_MAX &&
	       h->insn_count >= 1;
}

/* The chunk being built: blocks that follow on from each other without a
 * lost instruction are joined, the move from one block's last pc to the
 * next block's first written as a record (asynchronous when the next
 * block began at a signal handler's entry, which a chunk header could not
 * say). */
struct pending {
	uint8_t *buf;             /* header + up to HWT_SW_MAX_CHUNK_PAYLOAD */
	struct hwt_sw_chunk_hdr hdr;
	bool open;
	bool branches;            /* block-step records */
};

static int flush(struct pending *pc, struct hwt_mod_trace *t,
		 struct hwt_err *err)
{
	if (!pc->open)
		return 0;
	pc->open = false;
	hwt_sw_chunk_hdr_pack(&pc->hdr, pc->buf);
	return hwt_perf_buf_append(&t->chunks, pc->buf, HWT_SW_CHUNK_HDR_SIZE +
				   pc->hdr.payload_size, err);
}

/* Bytes of the record that moves pc by delta: a step tag for 1..15, else
 * a jump with the fewest delta bytes that hold it signed. */
static size_t transfer_record(uint64_t delta, bool async, uint8_t *out)
{
	size_t n = 0, k = 1;

	if (async)
		out[n++] = HWT_SW_TAG_ASYNC;
	if (!async && delta >= 1 && delta <= HWT_SW_TAG_STEP_MAX) {
		out[n++] = (uint8_t)delta;
		return n;
	}
	while (k < 8) {
		int64_t lo = -((int64_t)1 << (8 * k - 1));

		if ((int64_t)delta >= lo && (int64_t)delta < -lo)
			break;
		k++;
	}
	out[n++] = (uint8_t)(HWT_SW_TAG_JUMP_BASE + k);
	for (size_t b = 0; b < k; b++)
		out[n++] = (uint8_t)(delta >> (8 * b));
	return n;
}

/* Add one walked block (payload n bytes at p) to the pending chunk, or
 * start a new chunk with it. */
static int add_block(struct pending *pc, const struct hwtrace_block *h,
		     const uint8_t *p, size_t n, uint64_t first_seq,
		     bool follows_on, struct hwt_mod_trace *t,
		     struct hwt_err *err)
{
	bool branches = h->flags & HWTRACE_BLK_BRANCH;
	bool async = h->flags & HWTRACE_BLK_ASYNC;
	uint8_t rec[1 + 1 + 8];
	size_t rn;
	int rc;

	if (pc->open && follows_on && branches == pc->branches &&
	    !(h->flags & HWTRACE_BLK_EXEC) &&
	    pc->hdr.payload_size + sizeof(rec) + n <=
	    HWT_SW_MAX_CHUNK_PAYLOAD) {
		uint8_t *at = pc->buf + HWT_SW_CHUNK_HDR_SIZE +
			      pc->hdr.payload_size;

		rn = transfer_record(h->first_pc - pc->hdr.last_pc, async, rec);
		memcpy(at, rec, rn);
		memcpy(at + rn, p, n);
		pc->hdr.payload_size += (uint32_t)(rn + n);
		pc->hdr.insn_count += h->insn_count;
		pc->hdr.last_pc = h->last_pc;
		return 0;
	}
	if ((rc = flush(pc, t, err)) < 0)
		return rc;
	pc->open = true;
	pc->branches = branches;
	pc->hdr = (struct hwt_sw_chunk_hdr){
		.payload_size = (uint32_t)n,
		.first_pc = h->first_pc,
		.first_seq = first_seq,
		.last_pc = h->last_pc,
		.insn_count = h->insn_count,
		.flags = branches ? HWT_SW_CHUNK_BRANCHES |
			 (async ? HWT_SW_CHUNK_ASYNC : 0) : 0,
	};
	memcpy(pc->buf + HWT_SW_CHUNK_HDR_SIZE, p, n);
	return 0;
}

int hwt_mod_convert(const uint8_t *buf, size_t len, bool from_exec,
		    struct hwt_mod_trace *t, struct hwt_err *err)
{
	size_t nblocks = len / HWTRACE_BLOCK_SIZE, start = 0;
	uint64_t base = 0, next = 0, last_seq = 0;
	bool have_prev = false, reported = false, follows_on = false;
	uint8_t payload[PAYLOAD_MAX];
	struct pending pc = { 0 };
	struct hwtrace_block h;
	int rc = 0;

	/* The input bounds the output: a block adds its payload and either
	 * a chunk header or a joining record, both shorter than its own
	 * header. */
	if (t->chunks.max == 0)
		t->chunks.max = len;
	t->chunks.granule = 1;
	if (nblocks && !(pc.buf = malloc(HWT_SW_CHUNK_HDR_SIZE +
					 HWT_SW_MAX_CHUNK_PAYLOAD)))
		return hwt_err_set(err, ENOMEM, "out of memory converting "
				   "module blocks");
	/* Blocks before the program's exec are the launcher's. Without an
	 * exec block (dropped by the ring) every block is the program's,
	 * and the launcher's few instructions count as lost. */
	if (from_exec)
		for (size_t b = 0; b < nblocks; b++)
			if (header_ok(buf + b * HWTRACE_BLOCK_SIZE, &h) &&
			    (h.flags & HWTRACE_BLK_EXEC)) {
				start = b;
				base = next = h.first_insn;
				break;
			}
	for (size_t b = start; b < nblocks; b++) {
		const uint8_t *blk = buf + b * HWTRACE_BLOCK_SIZE;
		struct hwt_err why = { 0 };
		int n;

		if (!header_ok(blk, &h))
			n = hwt_err_set(&why, EBADMSG, "module block %zu: bad "
					"header (magic 0x%08x, %u bytes used, "
					"%u instructions)", b, h.magic, h.used,
					h.insn_count);
		else if ((have_prev && h.seq <= last_seq) || h.first_insn < next)
			n = hwt_err_set(&why, EBADMSG, "module block %zu: "
					"sequence %llu or first instruction "
					"%llu goes back", b,
					(unsigned long long)h.seq,
					(unsigned long long)h.first_insn);
		else
			n = walk(&h, blk + HDR_SIZE, payload, b, &why);
		if (n < 0) {
			t->bad_blocks++;
			if (!reported)
				hwt_err_set(err, EBADMSG, "%s", why.msg);
			reported = true;
			follows_on = false;
			continue;
		}
		/* Blocks skipped or dropped before this one show as a gap. */
		t->lost_insns += h.first_insn - next;
		rc = add_block(&pc, &h, payload, (size_t)n, h.first_insn - base,
			       follows_on && h.first_insn == next, t, err);
		if (rc < 0)
			goto out;
		next = h.first_insn + h.insn_count;
		last_seq = h.seq;
		have_prev = true;
		follows_on = true;
		t->insn_total = next - base;
	}
	rc = flush(&pc, t, err);
	/* Trailing bytes short of a block: DRAIN never returns them. */
	if (rc == 0 && len % HWTRACE_BLOCK_SIZE) {
		t->bad_blocks++;
		if (!reported)
			hwt_err_set(err, EBADMSG, "%zu bytes after the last "
				    "whole module block", len % HWTRACE_BLOCK_SIZE);
	}
out:
	free(pc.buf);
	return rc;
}
