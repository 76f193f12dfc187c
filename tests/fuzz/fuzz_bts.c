// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_bts.c - BTS records, and the writers fed by what they decode to.
 *
 * Input: [8 bytes: current pc selector][24-byte records]. Record addresses
 * below 2^32 are offsets into the fuzzer's own text (so blocks are walked
 * over real code, not just rejected); 0 stays 0 (the markers); larger
 * values are used as they are. The history is walked, written back as BTS
 * records with hwt_history_to_bts and as Intel PT with hwt_pt_encode,
 * which must both accept any history a decoder produces.
 *
 * Seeds (HWT_FUZZ_SEEDS=DIR): walks over the fuzzer's own code written as
 * records, whole and cut short.
 */
#include "fuzz-common.h"

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t map_addr(uint64_t v)
{
	uint64_t span = fuzz_self.text_hi - fuzz_self.text_lo;

	if (v == 0 || v >> 32 || !span)
		return v;
	return fuzz_self.text_lo + v % span;
}

/* Records of a walk through the text from an instruction start, blocks
 * of a few instructions joined by jumps to other starts; addresses as
 * text offsets. */
static size_t seed_walk(struct hwt_image *img, uint8_t *out, size_t max_recs,
			unsigned seed)
{
	uint64_t a = fuzz_self.text_lo + (seed * 7919u) % 4096, rng = seed + 1;
	size_t n = 0;
	struct hwt_insn in;

	while (a < fuzz_self.text_hi && hwt_image_insn(img, a, false, &in))
		a++;
	memset(out, 0, 8);
	for (size_t r = 0; r < max_recs; r++) {
		uint64_t from = a, to;
		int run = 1 + (int)(rng % 8);

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		for (int i = 0; i < run; i++) {
			if (hwt_image_insn(img, a, false, &in) || !in.len)
				break;
			from = a;
			if (in.cls != HWT_INSN_OTHER &&
			    in.cls != HWT_INSN_CJUMP)
				break;
			a += in.len;
		}
		to = fuzz_self.text_lo + (rng >> 20) % (fuzz_self.text_hi - fuzz_self.text_lo);
		while (to < fuzz_self.text_hi && hwt_image_insn(img, to, false, &in))
			to++;
		memcpy(out + 8 + n * 24, (uint64_t[3]){ from - fuzz_self.text_lo,
			to - fuzz_self.text_lo, 0 }, 24);
		n++;
		a = to;
	}
	return 8 + n * 24;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct hwt_image *img;

	(void)argc;
	(void)argv;
	img = fuzz_image();
	if (getenv("HWT_FUZZ_SEEDS")) {
		static uint8_t buf[8 + 200 * 24];

		for (unsigned s = 0; s < 8; s++) {
			char name[32];
			size_t n = seed_walk(img, buf, 10 + 25 * s, s);

			snprintf(name, sizeof(name), "seed-walk-%u", s);
			fuzz_write_seed(getenv("HWT_FUZZ_SEEDS"), name, buf,
					s % 2 ? n - 24 : n, NULL, 0);
		}
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_image *img = fuzz_image();
	struct hwt_history *h = NULL;
	HWT_OPTS(hwt_pt_encode_opts, opts, .psb_period = 256);
	uint8_t *recs, *out = NULL;
	size_t nrec, osize = 0;
	uint64_t end_pc;

	if (size < 8)
		return 0;
	end_pc = map_addr(get64(data));
	/* The decoder keeps a torn last record's bytes: copy them all. */
	nrec = (size - 8) / 24;
	recs = malloc(size - 8 ? size - 8 : 1);
	if (!recs)
		return 0;
	memcpy(recs, data + 8, size - 8);
	for (size_t k = 0; k < nrec; k++) {
		uint64_t v[2] = { map_addr(get64(recs + k * 24)),
				  map_addr(get64(recs + k * 24 + 8)) };

		memcpy(recs + k * 24, v, sizeof(v));
	}
	if (hwt_history_open_bts(recs, size - 8, end_pc, img, &h, NULL) == 0) {
		uint64_t n = hwt_history_count(h);
		uint64_t last = n > FUZZ_MAX_ITEMS ? FUZZ_MAX_ITEMS : n;

		fuzz_walk(h, img);
		if (last && !hwt_history_to_bts(h, 1, last, &out, &osize, NULL))
			free(out);
		if (last && !hwt_pt_encode(h, img, 1, last, &opts, &out, &osize,
					   NULL))
			free(out);
		hwt_history_free(h);
	}
	free(recs);
	return 0;
}
