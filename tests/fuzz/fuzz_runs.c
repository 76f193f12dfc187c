// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_runs.c - blocks and address searches straight from superblock runs
 * (replay/decode_runs.c), as a bundle's indexed trace reaches them.
 *
 * Input: [table length, 2 bytes LE][a TABLE chunk's payload][a RUNS
 * chunk's items]. When the table reads, the runs' instructions are
 * listed by walking them; the segment of that many: hwt_runs_decode must
 * give exactly the blocks the plain records' decoder gives for them, and
 * hwt_runs_find for the address of one of them (the input's last byte
 * says which) the first instruction there; runs that do not walk are
 * refused with a message, never read outside the input.
 * Seeds (HWT_FUZZ_SEEDS): translations over the fuzzer's own code.
 */
#include "array.h"
#include "decode.h"
#include "fuzz-common.h"
#include "replay-int.h"

#define MAX_INSNS 20000u

static int list_insn(void *ctx, uint64_t pc, bool async)
{
	(void)async;
	return hwt_bytes_put(ctx, &pc, sizeof(pc));
}

static void seeds(const char *dir)
{
	struct hwt_bytes in = { 0 }, tab = { 0 };
	uint8_t buf[512], len[2];
	uint64_t pc[3][6];

	fuzz_image();
	for (uint32_t id = 0; id < 3; id++) {
		struct hwt_sw_tr tr = { .ninsns = 6, .pc = pc[id] };

		for (uint32_t i = 0; i < 6; i++)
			pc[id][i] = fuzz_self.text_lo + 0x40 * id + i;
		tr.entry = pc[id][0];
		hwt_bytes_put(&tab, buf, hwt_sw_tr_encode(id, &tr, buf));
	}
	len[0] = (uint8_t)tab.n;
	len[1] = (uint8_t)(tab.n >> 8);
	hwt_bytes_put(&in, len, 2);
	hwt_bytes_put(&in, tab.p, tab.n);
	for (int i = 0; i < 40; i++) {
		uint8_t item = (uint8_t)((i * 7 % 3) << 2 | HWT_SW_RUNS_EXEC);

		hwt_bytes_put(&in, &item, 1);
	}
	fuzz_write_seed(dir, "seed-runs", in.p, in.n, NULL, 0);
	hwt_bytes_free(&in);
	hwt_bytes_free(&tab);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (getenv("HWT_FUZZ_SEEDS")) {
		seeds(getenv("HWT_FUZZ_SEEDS"));
		exit(0);
	}
	return 0;
}

/* The blocks of the plain records of the instructions listed. */
static int plain_blocks(const uint64_t *pcs, size_t n, struct hwt_image *img,
			struct hwt_blocks *out)
{
	struct hwt_bytes rec = { 0 };
	struct hwt_segment seg = { .pc = pcs[0], .nitems = (uint32_t)n,
				   .flags = HWT_SW_SEG_EXPANDED };
	uint8_t r[HWT_SW_MAX_RECORD + 1];
	int rc;

	for (size_t i = 1; i < n; i++)
		hwt_bytes_put(&rec, r, hwt_sw_encode_step(pcs[i - 1], pcs[i],
							  false, r));
	seg.len = rec.n;
	seg.own.bytes = rec.p ? rec.p : r;   /* one instruction: none */
	rc = hwt_decoder_sw.decode(NULL, 0, &seg, img, out, NULL);
	hwt_bytes_free(&rec);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_image *img = fuzz_image();
	struct hwt_sw_table tab = { 0 };
	struct hwt_bytes pcs = { 0 };
	struct hwt_runs_lens lens = { 0 };
	struct hwt_runs_marks marks = { 0 };
	struct hwt_blocks got = { 0 }, want = { 0 };
	struct hwt_err err = { 0 };
	struct hwt_sw_runs w;
	struct hwt_segment seg;
	const uint8_t *items;
	size_t tlen, n;
	uint64_t given, set[1];
	uint32_t off = 0;
	bool async = false;
	int rc;

	if (size < 3)
		return 0;
	tlen = data[0] | (size_t)data[1] << 8;
	if (tlen > size - 2 || hwt_sw_table_add(&tab, data + 2, tlen, &err))
		goto out;
	items = data + 2 + tlen;
	n = size - 2 - tlen;
	hwt_sw_runs_init(&w, &tab, items, n, 0, false, 0);
	rc = hwt_sw_runs_each(&w, MAX_INSNS, list_insn, &pcs, &given, &err);
	seg = (struct hwt_segment){ .len = n, .flags = HWT_SW_SEG_RUNS,
				    .nitems = (uint32_t)given };
	if (rc < 0) {
		/* A segment claiming one more than was walked. */
		seg.nitems++;
		rc = hwt_runs_decode(&lens, 0, &tab, items, n, &seg, img, &got,
				     &err);
		if (rc >= 0 || !err.msg[0])
			abort();
		goto out;
	}
	if (!given)
		goto out;
	/* Handler entries make blocks the list of pcs does not say. */
	hwt_sw_runs_init(&w, &tab, items, n, 0, false, 0);
	while (hwt_sw_runs_next(&w, &(const struct hwt_sw_tr *){ NULL },
				&(uint32_t){ 0 }, &async, NULL) == 1 && !async)
		;
	rc = hwt_runs_decode(&lens, 0, &tab, items, n, &seg, img, &got, &err);
	if (rc < 0)
		abort();
	if (!async) {
		if (plain_blocks((const uint64_t *)pcs.p, given, img, &want) ||
		    want.n != got.n)
			abort();
		for (size_t i = 0; i < got.n; i++)
			if (got.v[i].begin != want.v[i].begin ||
			    got.v[i].end != want.v[i].end ||
			    got.v[i].count != want.v[i].count)
				abort();
	}
	set[0] = ((const uint64_t *)pcs.p)[data[size - 1] % given];
	hwt_runs_marks_reset(&marks, set, 1);
	rc = hwt_runs_find(&marks, 0, &tab, items, n, &seg, 0,
			   (uint32_t)given - 1, false, &off, &err);
	if (rc != 1 || off > data[size - 1] % given ||
	    ((const uint64_t *)pcs.p)[off] != set[0])
		abort();
out:
	free(got.v);
	free(want.v);
	hwt_runs_lens_free(&lens);
	hwt_runs_marks_free(&marks);
	hwt_bytes_free(&pcs);
	hwt_sw_table_free(&tab);
	return 0;
}
