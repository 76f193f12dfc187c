// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_past_pack.c - the data history file's packed forms
 * (common/past_pack.c) as a frame's contents decode to them, past the
 * zstd checksums that stop most of fuzz_past's inputs first.
 *
 * Input: [selector][shape byte][packed bytes]. Selector % 3: 0 a group
 * of general-register blocks, 1 of x87/SSE blocks (shape % 32: how
 * many blocks but one; shape / 32: the newest's count, 0 for a full
 * one), 2 stores (shape: how many, their old bytes 8 each). What unpacks must
 * answer every entry from inside its blocks, hold stores within their
 * old bytes and in step order, and pack again to bytes that unpack to
 * the same; what does not unpack leaves the log's blocks empty.
 * Seeds (HWT_FUZZ_SEEDS): the unit test's sample history, packed.
 */
#include "fuzz-common.h"
#include "past_pack.h"
#include "../past_sample.h"

static void seed(const char *dir, const char *name, uint8_t sel,
		 uint8_t shape, const struct hwt_bytes *b)
{
	uint8_t head[2] = { sel, shape };

	fuzz_write_seed(dir, name, head, 2, b->p, b->n);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (getenv("HWT_FUZZ_SEEDS")) {
		const char *dir = getenv("HWT_FUZZ_SEEDS");
		struct past_sample s;
		struct hwt_bytes b = { 0 };
		const struct hwt_reglog *l;

		past_sample_build(&s);
		l = &s.t[0].regs;
		if (hwt_past_pack_blocks(l, 0, 0, 2, &b) == 0)
			seed(dir, "seed-regs", 0, 1, &b);
		b.n = 0;
		l = &s.t[0].fpregs;
		if (hwt_past_pack_blocks(l, 1, 0, 1, &b) == 0)
			seed(dir, "seed-fpregs", 1, 0, &b);
		b.n = 0;
		if (hwt_past_pack_stores(s.e, 21, &b) == 0)
			seed(dir, "seed-stores", 2, 21, &b);
		hwt_bytes_free(&b);
		past_sample_free(&s);
		exit(0);
	}
	return 0;
}

static void blocks(int which, uint8_t shape, const uint8_t *p, size_t n)
{
	struct hwt_reglog l, again;
	struct hwt_reglog_block bl[HWT_PAST_GROUP_BLOCKS],
		bl2[HWT_PAST_GROUP_BLOCKS];
	size_t nblocks = 1 + shape % HWT_PAST_GROUP_BLOCKS;
	uint64_t newest = shape / HWT_PAST_GROUP_BLOCKS ?
			  1 + (shape / HWT_PAST_GROUP_BLOCKS) * 97u :
			  HWT_REGLOG_BLOCK;
	uint64_t words[HWT_REGLOG_MAX_WORDS], words2[HWT_REGLOG_MAX_WORDS];
	struct hwt_bytes packed = { 0 };
	uint8_t *owned = NULL, *owned2 = NULL;

	hwt_reglog_init(&l, which ? HWT_REGLOG_FP_WORDS : HWT_REGLOG_GPR_WORDS,
			SIZE_MAX);
	memset(bl, 0, sizeof(bl));
	l.blocks = bl;
	l.nblocks = l.alloc = nblocks;
	l.first = 1000;
	l.n = (uint64_t)(nblocks - 1) * HWT_REGLOG_BLOCK + newest;
	if (hwt_past_unpack_blocks(&l, which, 0, nblocks, p, p + n,
				   &owned) < 0) {
		for (size_t i = 0; i < nblocks; i++)
			if (bl[i].count || bl[i].data)
				abort();
		return;
	}
	/* Packed again, the same entries. */
	again = l;
	memset(bl2, 0, sizeof(bl2));
	again.blocks = bl2;
	if (hwt_past_pack_blocks(&l, which, 0, nblocks, &packed) < 0 ||
	    hwt_past_unpack_blocks(&again, which, 0, nblocks, packed.p,
				   packed.p + packed.n, &owned2) < 0)
		abort();
	for (uint64_t i = l.first; i < l.first + l.n; i++)
		if (hwt_reglog_get(&l, i, words) != 0 ||
		    hwt_reglog_get(&again, i, words2) != 0 ||
		    memcmp(words, words2, 8 * (size_t)l.nwords))
			abort();
	free(owned);
	free(owned2);
	hwt_bytes_free(&packed);
}

static void stores(uint8_t shape, const uint8_t *p, size_t n)
{
	struct hwt_mem_entry e[256], e2[256];
	size_t count = shape, nbytes = 8 * (size_t)shape, at;
	struct hwt_bytes packed = { 0 };
	const char *wrong;

	if (hwt_past_unpack_stores(p, p + n, e, count, nbytes, &wrong,
				   &at) < 0) {
		if (!wrong || at > count)
			abort();
		return;
	}
	for (size_t i = 0; i < count; i++)
		if ((i && e[i].seq < e[i - 1].seq) || !e[i].len ||
		    (e[i].off != HWT_MEM_UNKNOWN &&
		     (e[i].off > nbytes || e[i].len > nbytes - e[i].off)))
			abort();
	if (hwt_past_pack_stores(e, count, &packed) < 0 ||
	    hwt_past_unpack_stores(packed.p, packed.p + packed.n, e2, count,
				   nbytes, &wrong, &at) < 0)
		abort();
	for (size_t i = 0; i < count; i++)
		if (e2[i].seq != e[i].seq || e2[i].addr != e[i].addr ||
		    e2[i].len != e[i].len || e2[i].off != e[i].off ||
		    e2[i].tid != e[i].tid)
			abort();
	hwt_bytes_free(&packed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	switch (data[0] % 3) {
	case 0:
	case 1:
		blocks(data[0] % 3, data[1], data + 2, size - 2);
		break;
	default:
		stores(data[1], data + 2, size - 2);
		break;
	}
	return 0;
}
