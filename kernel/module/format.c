/* format.c - hwtrace.ko's ring blocks to hwt-sw chunks.
 *
 * A module block is an hwt-sw chunk in all but its header and one record:
 * both start at an absolute pc, count their instructions, end with a
 * checked last pc, and share the step, jump and async records. The module
 * adds a 13-byte scheduling record (HWTRACE_REC_SCHED), which hwt-sw has
 * no use for and which is dropped here. Every block is checked whole
 * (records walked, count and last pc compared) before its chunk is
 * written, so a corrupt block costs only its own instructions. A block
 * of branch records (HWTRACE_BLK_BRANCH, block-step) is checked the same
 * way and becomes a chunk flagged HWT_SW_CHUNK_BRANCHES (and
 * HWT_SW_CHUNK_ASYNC when a signal handler's entry starts it): its records
 * may be branch targets with straight-line code left out, which the
 * replay engine expands with the program image (replay/expand_sw.c). */
#include <errno.h>
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

int hwt_mod_convert(const uint8_t *buf, size_t len, bool from_exec,
		    struct hwt_mod_trace *t, struct hwt_err *err)
{
	size_t nblocks = len / HWTRACE_BLOCK_SIZE, start = 0;
	uint64_t base = 0, next = 0, last_seq = 0;
	bool have_prev = false, reported = false;
	uint8_t chunk[HWT_SW_CHUNK_HDR_SIZE + PAYLOAD_MAX];
	struct hwtrace_block h;

	/* The input bounds the output: a chunk is never larger than its
	 * block. */
	if (t->chunks.max == 0)
		t->chunks.max = len;
	t->chunks.granule = 1;
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
		struct hwt_sw_chunk_hdr ch;
		int n, rc;

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
			n = walk(&h, blk + HDR_SIZE,
				 chunk + HWT_SW_CHUNK_HDR_SIZE, b, &why);
		if (n < 0) {
			t->bad_blocks++;
			if (!reported)
				hwt_err_set(err, EBADMSG, "%s", why.msg);
			reported = true;
			continue;
		}
		/* Blocks skipped or dropped before this one show as a gap. */
		t->lost_insns += h.first_insn - next;
		ch = (struct hwt_sw_chunk_hdr){
			.payload_size = (uint32_t)n,
			.first_pc = h.first_pc,
			.first_seq = h.first_insn - base,
			.last_pc = h.last_pc,
			.insn_count = h.insn_count,
			.flags = h.flags & HWTRACE_BLK_BRANCH ?
				HWT_SW_CHUNK_BRANCHES |
				(h.flags & HWTRACE_BLK_ASYNC ?
				 HWT_SW_CHUNK_ASYNC : 0) : 0,
		};
		hwt_sw_chunk_hdr_pack(&ch, chunk);
		rc = hwt_perf_buf_append(&t->chunks, chunk,
					 HWT_SW_CHUNK_HDR_SIZE + (size_t)n, err);
		if (rc < 0)
			return rc;
		next = h.first_insn + h.insn_count;
		last_seq = h.seq;
		have_prev = true;
		t->insn_total = next - base;
	}
	/* Trailing bytes short of a block: DRAIN never returns them. */
	if (len % HWTRACE_BLOCK_SIZE) {
		t->bad_blocks++;
		if (!reported)
			hwt_err_set(err, EBADMSG, "%zu bytes after the last "
				    "whole module block", len % HWTRACE_BLOCK_SIZE);
	}
	return 0;
}
