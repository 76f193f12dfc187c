// SPDX-License-Identifier: BSD-2-Clause
/* test_module_format.c - hwtrace.ko ring blocks to hwt-sw chunks
 * (collect/module/format.c) on synthetic drained buffers: the launcher's
 * pre-exec blocks dropped, sched records removed, corrupt blocks skipped
 * and counted lost, gaps between blocks accounted, block-step blocks
 * turned into flagged chunks of branch records. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "module/module.h"

#define BS HWTRACE_BLOCK_SIZE

/* A block under construction: records appended, pc and count tracked. */
struct blk {
	uint8_t *p;
	struct hwtrace_block h;
	uint64_t pc;
};

static void blk_start(struct blk *b, uint8_t *at, uint64_t seq,
		      uint64_t first_insn, uint64_t pc, uint32_t flags)
{
	memset(at, 0xee, BS);   /* unused tail: junk the reader must skip */
	b->p = at;
	b->h = (struct hwtrace_block){ .magic = HWTRACE_BLOCK_MAGIC,
		.seq = seq, .first_insn = first_insn, .first_pc = pc,
		.insn_count = 1, .flags = flags };
	b->pc = pc;
}

static void blk_bytes(struct blk *b, const uint8_t *r, size_t n)
{
	memcpy(b->p + sizeof(b->h) + b->h.used, r, n);
	b->h.used += (uint32_t)n;
}

static void blk_step(struct blk *b, uint8_t len)
{
	blk_bytes(b, &len, 1);
	b->pc += len;
	b->h.insn_count++;
}

/* A jump with a delta of k bytes. */
static void blk_jump(struct blk *b, int64_t delta, unsigned k)
{
	uint8_t r[9] = { (uint8_t)(HWT_SW_TAG_JUMP_BASE + k) };

	for (unsigned i = 0; i < k; i++)
		r[1 + i] = (uint8_t)((uint64_t)delta >> (8 * i));
	blk_bytes(b, r, 1 + k);
	b->pc += (uint64_t)delta;
	b->h.insn_count++;
}

static void blk_sched(struct blk *b)
{
	uint8_t r[HWTRACE_REC_SCHED_SIZE] = { HWTRACE_REC_SCHED, 1, 2, 3, 4,
					      5, 6, 7, 8, 1, 0, 0, 0 };

	blk_bytes(b, r, sizeof(r));
}

static void blk_end(struct blk *b)
{
	b->h.last_pc = b->pc;
	memcpy(b->p, &b->h, sizeof(b->h));
}

/* A plain block of n steps of 4 bytes. */
static uint64_t plain(uint8_t *at, uint64_t seq, uint64_t first_insn,
		      uint64_t pc, uint32_t flags, unsigned n)
{
	struct blk b;

	blk_start(&b, at, seq, first_insn, pc, flags);
	for (unsigned i = 0; i < n; i++)
		blk_step(&b, 4);
	blk_end(&b);
	return first_insn + n + 1;
}

/* Decode every chunk of t (branch chunks as written, not expanded);
 * fills pcs (up to cap) and the flags of the first 8 chunks, and returns
 * the count, or -1 on a decode error. */
static long decode_flags(const struct hwt_mod_trace *t, uint64_t *pcs,
			 size_t cap, size_t *nchunks, uint64_t *first_seqs,
			 uint32_t *flags)
{
	const uint8_t *p = t->chunks.data, *end = p + t->chunks.len;
	long n = 0;

	*nchunks = 0;
	while (p < end) {
		struct hwt_sw_chunk_hdr h;
		struct hwt_sw_reader r;
		struct hwt_err err = { 0 };
		bool async;
		int rc;

		if (hwt_sw_chunk_hdr_unpack_flags(p, (size_t)(end - p),
						  HWT_SW_CHUNK_BRANCHES, &h,
						  &err) < 0)
			return -1;
		flags[*nchunks % 8] = h.flags;
		first_seqs[(*nchunks)++ % 8] = h.first_seq;
		hwt_sw_reader_init(&r, p + HWT_SW_CHUNK_HDR_SIZE,
				   h.payload_size, h.first_pc);
		if ((size_t)n < cap)
			pcs[n] = r.pc;
		n++;
		uint32_t count = 1;
		while ((rc = hwt_sw_reader_next(&r, &async, &err)) ==
		       HWT_SW_NEXT) {
			if ((size_t)n < cap)
				pcs[n] = r.pc;
			n++;
			count++;
		}
		if (rc < 0 || count != h.insn_count || r.pc != h.last_pc)
			return -1;
		p += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
	}
	return n;
}

/* decode_flags for plain chunks only: a branch chunk is an error. */
static long decode(const struct hwt_mod_trace *t, uint64_t *pcs, size_t cap,
		   size_t *nchunks, uint64_t *first_seqs)
{
	uint32_t flags[8] = { 0 };
	long n = decode_flags(t, pcs, cap, nchunks, first_seqs, flags);

	for (size_t i = 0; i < *nchunks && i < 8; i++)
		if (flags[i])
			return -1;
	return n;
}

static void test_exec_and_records(void)
{
	uint8_t *buf = calloc(3, BS);
	struct hwt_mod_trace t = { 0 };
	struct hwt_err err = { 0 };
	uint64_t pcs[64], seqs[8], next;
	size_t nchunks;
	struct blk b;
	long n;
	int rc;

	/* The launcher before exec: 5 instructions. */
	next = plain(buf, 7, 0, 0x7f0000001000, 0, 4);
	/* The program from its entry. */
	blk_start(&b, buf + BS, 8, next, 0x401000, HWTRACE_BLK_EXEC);
	blk_step(&b, 3);                 /* 0x401003 */
	blk_sched(&b);
	blk_step(&b, 2);                 /* 0x401005 */
	blk_jump(&b, 0x100, 2);          /* 0x401105 */
	blk_bytes(&b, (const uint8_t[]){ HWTRACE_REC_ASYNC }, 1);
	blk_jump(&b, -0x10, 1);          /* 0x4010f5 */
	blk_jump(&b, -0x400000, 4);      /* 0x10f5 */
	blk_end(&b);
	next = b.h.first_insn + b.h.insn_count;
	plain(buf + 2 * BS, 9, next, 0x2000, 0, 2);

	rc = hwt_mod_convert(buf, 3 * BS, true, &t, &err);
	CHECK("convert", rc == 0 && t.bad_blocks == 0, "rc %d bad %llu: %s",
	      rc, (unsigned long long)t.bad_blocks, err.msg);
	n = decode(&t, pcs, 64, &nchunks, seqs);
	CHECK("launcher blocks dropped, program's kept in one chunk",
	      n == 6 + 3 && nchunks == 1 && pcs[6] == 0x2000,
	      "n %ld chunks %zu", n, nchunks);
	CHECK("addresses survive, sched record removed", n >= 6 &&
	      pcs[0] == 0x401000 && pcs[1] == 0x401003 && pcs[2] == 0x401005 &&
	      pcs[3] == 0x401105 && pcs[4] == 0x4010f5 && pcs[5] == 0x10f5,
	      "pcs %llx %llx %llx %llx %llx %llx",
	      (unsigned long long)pcs[0], (unsigned long long)pcs[1],
	      (unsigned long long)pcs[2], (unsigned long long)pcs[3],
	      (unsigned long long)pcs[4], (unsigned long long)pcs[5]);
	CHECK("sequence counted from exec", seqs[0] == 0 &&
	      t.insn_total == 9 && t.lost_insns == 0, "seq %llu total "
	      "%llu lost %llu", (unsigned long long)seqs[0],
	      (unsigned long long)t.insn_total,
	      (unsigned long long)t.lost_insns);
	hwt_perf_buf_free(&t.chunks);

	/* A thread attached at its creation keeps every block. */
	memset(&t, 0, sizeof(t));
	rc = hwt_mod_convert(buf, 3 * BS, false, &t, &err);
	n = decode(&t, pcs, 64, &nchunks, seqs);
	CHECK("no exec wait keeps all; the exec block starts a chunk",
	      rc == 0 && n == 5 + 6 + 3 && nchunks == 2 && seqs[1] == 5 &&
	      t.insn_total == 14, "n %ld chunks %zu total %llu", n, nchunks,
	      (unsigned long long)t.insn_total);
	hwt_perf_buf_free(&t.chunks);

	/* The exec block wrapped away: all blocks are the program's. */
	memset(&t, 0, sizeof(t));
	rc = hwt_mod_convert(buf + 2 * BS, BS, true, &t, &err);
	n = decode(&t, pcs, 64, &nchunks, seqs);
	CHECK("exec block gone: everything kept, earlier counted lost",
	      rc == 0 && n == 3 && t.lost_insns == 11 && t.insn_total == 14,
	      "n %ld lost %llu total %llu", n, (unsigned long long)t.lost_insns,
	      (unsigned long long)t.insn_total);
	hwt_perf_buf_free(&t.chunks);
	free(buf);
}

/* Three plain blocks, the middle one damaged by fn; the outer two must
 * come through and the middle one's instructions count as lost. */
static void expect_skipped(const char *name, void (*fn)(struct blk *b),
			   const char *needle)
{
	uint8_t *buf = calloc(3, BS);
	struct hwt_mod_trace t = { 0 };
	struct hwt_err err = { 0 };
	uint64_t pcs[64], seqs[8], next;
	size_t nchunks;
	struct blk b;
	long n;
	int rc;

	next = plain(buf, 1, 0, 0x1000, 0, 3);
	blk_start(&b, buf + BS, 2, next, 0x2000, 0);
	blk_step(&b, 1);
	blk_step(&b, 1);
	fn(&b);
	next = b.h.first_insn + 3;
	plain(buf + 2 * BS, 3, next, 0x3000, 0, 3);
	rc = hwt_mod_convert(buf, 3 * BS, false, &t, &err);
	n = decode(&t, pcs, 64, &nchunks, seqs);
	CHECK(name, rc == 0 && t.bad_blocks == 1 && n == 8 && nchunks == 2 &&
	      pcs[4] == 0x3000 && t.lost_insns == 3 && seqs[1] == 7 &&
	      strstr(err.msg, needle), "rc %d bad %llu n %ld lost %llu msg '%s'",
	      rc, (unsigned long long)t.bad_blocks, n,
	      (unsigned long long)t.lost_insns, err.msg);
	hwt_perf_buf_free(&t.chunks);
	free(buf);
}

static void bad_tag(struct blk *b)
{
	blk_bytes(b, (const uint8_t[]){ 0x30 }, 1);
	blk_end(b);
}

static void bad_count(struct blk *b)
{
	blk_end(b);
	b->h.insn_count++;
	memcpy(b->p, &b->h, sizeof(b->h));
}

static void bad_last_pc(struct blk *b)
{
	blk_end(b);
	b->h.last_pc ^= 1;
	memcpy(b->p, &b->h, sizeof(b->h));
}

static void bad_magic(struct blk *b)
{
	blk_end(b);
	b->h.magic ^= 1;
	memcpy(b->p, &b->h, sizeof(b->h));
}

static void bad_used(struct blk *b)
{
	blk_end(b);
	b->h.used = BS;   /* more than a block can hold after its header */
	memcpy(b->p, &b->h, sizeof(b->h));
}

static void cut_jump(struct blk *b)
{
	blk_bytes(b, (const uint8_t[]){ 0x18, 1, 2, 3 }, 4);
	blk_end(b);
}

static void cut_sched(struct blk *b)
{
	blk_bytes(b, (const uint8_t[]){ HWTRACE_REC_SCHED, 1, 2, 3 }, 4);
	blk_end(b);
}

static void seq_back(struct blk *b)
{
	blk_end(b);
	b->h.seq = 1;
	memcpy(b->p, &b->h, sizeof(b->h));
}

/* A block-step block is checked whole like any other. */
static void branch_bad_count(struct blk *b)
{
	blk_end(b);
	b->h.flags |= HWTRACE_BLK_BRANCH;
	b->h.insn_count++;
	memcpy(b->p, &b->h, sizeof(b->h));
}

/* Block-step blocks become chunks flagged HWT_SW_CHUNK_BRANCHES with the
 * same records, between plain ones; a reader that does not expand branch
 * records cannot unpack them. */
static void test_branch_blocks(void)
{
	uint8_t *buf = calloc(3, BS);
	struct hwt_mod_trace t = { 0 };
	struct hwt_err err = { 0 };
	struct hwt_sw_chunk_hdr h;
	uint64_t pcs[64], seqs[8], next;
	uint32_t flags[8] = { 0 };
	size_t nchunks, off;
	struct blk b;
	long n;
	int rc;

	next = plain(buf, 1, 0, 0x1000, 0, 2);
	blk_start(&b, buf + BS, 2, next, 0x401000, 0);
	b.h.flags |= HWTRACE_BLK_BRANCH;
	blk_jump(&b, 0x200, 2);          /* 0x401200: a taken branch */
	blk_sched(&b);
	blk_step(&b, 5);                 /* 0x401205: a step */
	blk_bytes(&b, (const uint8_t[]){ HWTRACE_REC_ASYNC }, 1);
	blk_jump(&b, -0x1205, 2);        /* 0x400000: a handler */
	blk_end(&b);
	next = b.h.first_insn + b.h.insn_count;
	plain(buf + 2 * BS, 3, next, 0x3000, 0, 1);
	rc = hwt_mod_convert(buf, 3 * BS, false, &t, &err);
	n = decode_flags(&t, pcs, 64, &nchunks, seqs, flags);
	CHECK("branch block converted, not refused", rc == 0 &&
	      t.bad_blocks == 0 && nchunks == 3 && n == 3 + 4 + 2 &&
	      t.insn_total == 9, "rc %d bad %llu chunks %zu n %ld: %s", rc,
	      (unsigned long long)t.bad_blocks, nchunks, n, err.msg);
	CHECK("only the branch block's chunk is flagged", flags[0] == 0 &&
	      flags[1] == HWT_SW_CHUNK_BRANCHES && flags[2] == 0,
	      "flags %x %x %x", flags[0], flags[1], flags[2]);
	CHECK("branch records kept as written, sched record removed",
	      n == 9 && pcs[3] == 0x401000 && pcs[4] == 0x401200 &&
	      pcs[5] == 0x401205 && pcs[6] == 0x400000 && pcs[7] == 0x3000 &&
	      seqs[1] == 3 && seqs[2] == 7, "pcs %llx %llx %llx %llx",
	      (unsigned long long)pcs[3], (unsigned long long)pcs[4],
	      (unsigned long long)pcs[5], (unsigned long long)pcs[6]);
	off = HWT_SW_CHUNK_HDR_SIZE + 2;
	rc = t.chunks.len > off ? hwt_sw_chunk_hdr_unpack(t.chunks.data + off,
		t.chunks.len - off, &h, &err) : 0;
	CHECK("a plain reader refuses the branch chunk", rc == -EBADMSG &&
	      strstr(err.msg, "branch records"), "rc %d: %s", rc, err.msg);
	hwt_perf_buf_free(&t.chunks);
	free(buf);
}

/* Blocks that follow on are one chunk; the move into the second block
 * is a record, asynchronous when that block began at a signal handler's
 * entry, and of the right size whatever the distance. */
static void test_joined_blocks(void)
{
	static const uint64_t firsts[] = { 0x1008, 0x1010, 0x7f0000000000,
					   0x1000 };
	uint8_t *buf = calloc(5, BS);
	struct hwt_mod_trace t = { 0 };
	struct hwt_err err = { 0 };
	struct hwt_sw_chunk_hdr h;
	struct hwt_sw_reader r;
	uint64_t next = 0, seen[16];
	bool async, marks[16] = { false };
	size_t n = 0;
	int rc;

	next = plain(buf, 1, 0, 0x1000, 0, 1);                   /* 0x1004 */
	next = plain(buf + BS, 2, next, firsts[0], HWTRACE_BLK_ASYNC, 1);
	next = plain(buf + 2 * BS, 3, next, firsts[1], 0, 1);   /* step 4 */
	next = plain(buf + 3 * BS, 4, next, firsts[2], 0, 1);
	plain(buf + 4 * BS, 5, next, firsts[3], HWTRACE_BLK_ASYNC, 1);
	rc = hwt_mod_convert(buf, 5 * BS, false, &t, &err);
	CHECK("joined: converted", rc == 0 && t.bad_blocks == 0, "rc %d: %s",
	      rc, err.msg);
	rc = hwt_sw_chunk_hdr_unpack(t.chunks.data, t.chunks.len, &h, &err);
	CHECK("joined: five blocks that follow on are one chunk", rc == 0 &&
	      t.chunks.len == HWT_SW_CHUNK_HDR_SIZE + h.payload_size &&
	      h.insn_count == 10 && h.last_pc == 0x1004 && h.flags == 0,
	      "rc %d, %zu bytes, %u insns: %s", rc, t.chunks.len,
	      h.insn_count, err.msg);
	if (rc == 0) {
		hwt_sw_reader_init(&r, t.chunks.data + HWT_SW_CHUNK_HDR_SIZE,
				   h.payload_size, h.first_pc);
		async = false;
		do {
			seen[n] = r.pc;
			marks[n++] = async;
		} while (n < 16 &&
			 hwt_sw_reader_next(&r, &async, &err) == HWT_SW_NEXT);
	}
	CHECK("joined: addresses across the joins", n == 10 &&
	      seen[2] == firsts[0] && seen[4] == firsts[1] &&
	      seen[6] == firsts[2] && seen[8] == firsts[3],
	      "n %zu: %llx %llx %llx %llx", n, (unsigned long long)seen[2],
	      (unsigned long long)seen[4], (unsigned long long)seen[6],
	      (unsigned long long)seen[8]);
	CHECK("joined: handler entries keep their mark, nothing else has one",
	      n == 10 && marks[2] && marks[8] && !marks[1] && !marks[4] &&
	      !marks[6], "marks %d %d %d %d", marks[2], marks[4], marks[6],
	      marks[8]);
	hwt_perf_buf_free(&t.chunks);
	free(buf);
}

static void test_gaps(void)
{
	uint8_t *buf = calloc(3, BS);
	struct hwt_mod_trace t = { 0 };
	struct hwt_err err = { 0 };
	uint64_t pcs[64], seqs[8];
	size_t nchunks;
	long n;
	int rc;

	/* Block seq 5 is gone (ring wrap): 1000 instructions missing. */
	plain(buf, 4, 0, 0x1000, 0, 3);
	plain(buf + BS, 6, 1004, 0x5000, 0, 3);
	rc = hwt_mod_convert(buf, 2 * BS + 100, false, &t, &err);
	n = decode(&t, pcs, 64, &nchunks, seqs);
	CHECK("gap between blocks counted lost", rc == 0 && n == 8 &&
	      seqs[1] == 1004 && t.lost_insns == 1000 && t.insn_total == 1008,
	      "n %ld lost %llu total %llu", n, (unsigned long long)t.lost_insns,
	      (unsigned long long)t.insn_total);
	CHECK("partial trailing block refused", t.bad_blocks == 1 &&
	      strstr(err.msg, "after the last whole"), "bad %llu msg '%s'",
	      (unsigned long long)t.bad_blocks, err.msg);
	hwt_perf_buf_free(&t.chunks);

	memset(&t, 0, sizeof(t));
	rc = hwt_mod_convert(buf, 0, true, &t, &err);
	CHECK("empty drain", rc == 0 && t.chunks.len == 0 &&
	      t.insn_total == 0, "rc %d", rc);
	free(buf);
}

int main(void)
{
	RUN(test_exec_and_records);
	expect_skipped("bad record tag skipped", bad_tag, "tag 0x30");
	expect_skipped("count mismatch skipped", bad_count, "instructions");
	expect_skipped("last pc mismatch skipped", bad_last_pc, "ending at");
	expect_skipped("bad magic skipped", bad_magic, "bad header");
	expect_skipped("oversized used skipped", bad_used, "bad header");
	expect_skipped("cut jump skipped", cut_jump, "jump record cut");
	expect_skipped("cut sched record skipped", cut_sched, "sched record cut");
	expect_skipped("sequence going back skipped", seq_back, "goes back");
	expect_skipped("corrupt branch block skipped", branch_bad_count,
		       "instructions");
	RUN(test_branch_blocks);
	RUN(test_joined_blocks);
	RUN(test_gaps);
	return check_exit();
}
