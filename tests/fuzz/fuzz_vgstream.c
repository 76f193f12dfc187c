// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_vgstream.c - the valgrind backend's stream reader
 * (collect/valgrind/stream.c), which reads what the hwtrace Valgrind tool
 * wrote: untrusted bytes from a file.
 *
 * Input: [mode byte][stream bytes]. The bytes are fed in pieces of
 * 1 + (mode >> 1) bytes, as the backend reads a growing file, then the
 * stream is finished; mode & 1 keeps the runs in logs expanded at the end
 * (the reader's defer), with a window small enough to drop some. Checked:
 * an error stops reading for good; every thread's sealed ring holds what
 * its counters say, packs with an index and flattens into as many
 * instructions as it kept; the instructions read are the rings'
 * instructions, lost ones included. Seeds: the tool's own streams of real programs
 * (tests/integration/test_fuzz.py), and without valgrind a few written
 * here, with HWT_FUZZ_SEEDS=DIR.
 */
#include "fuzz-common.h"
#include "valgrind/stream.h"
#include "valgrind/vgstream.h"

/* What a ring sealed, its runs kept as they are (defer) or not, is a
 * trace the packer indexes and that flattens into the instructions
 * its counters say were kept. */
static void check_sealed(const struct hwt_sw_ring *g)
{
	uint8_t *zst = NULL, *idx = NULL, *flat = NULL;
	size_t zst_n, idx_n, flat_n, off = 0;
	uint64_t kept = 0;

	if (hwt_sw_trace_pack(g->sealed, g->sealed_size, &zst, &zst_n, &idx,
			      &idx_n, NULL) || !idx)
		abort();
	if (hwt_sw_runs_flatten(g->sealed, g->sealed_size, &flat, &flat_n,
				NULL))
		abort();
	while (off < flat_n) {
		struct hwt_sw_chunk_hdr h;

		if (hwt_sw_chunk_hdr_unpack(flat + off, flat_n - off, &h, NULL))
			abort();
		kept += h.insn_count;
		off += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
	}
	if (kept != g->insn_total - g->lost_insns)
		abort();
	free(zst);
	free(idx);
	free(flat);
}

static void write_seeds(const char *dir)
{
	/* magic; SB 0 of 2 insns at 0x1000 with one exit after 1, implied
	 * (its target 0x1010); SB 1 at 0x1010, its side exits written;
	 * thread 7; run 0, run 1 (so 0 left by its exit), run 0 + its end;
	 * a fault record; run 0, NEXT at 0x1004; END. */
	static const uint8_t seed[] = {
		0x06, 'H', 'W', 'T', 'V', 'G', '0', '2', '\n',
		0x06, 0x00, 0x02, 0x80, 0x20, 0x08, 0x00, 0x06, 0x01, 0x01,
		0x01, 0x00, 0x20,
		0x06, 0x01, 0x01, 0x90, 0x20, 0x02, 0x00, 0x00, 0x00,
		0x0a, 0x07,
		0x00, 0x04, 0x00, 0x05,
		0x1a, 0x07, 0x81, 0x20,
		0x00, 0x42, 0x07, 0x84, 0x20,
		0x2e,
	};
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-synthetic", dir);
	f = fopen(path, "wb");
	if (!f || fwrite(seed, 1, sizeof(seed), f) != sizeof(seed))
		abort();
	fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("HWT_FUZZ_SEEDS");

	(void)argc;
	(void)argv;
	if (seeds) {
		write_seeds(seeds);
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_vg_reader r;
	struct hwt_err err = { 0 };
	uint64_t insns = 0;
	size_t piece;
	int rc;

	if (size < 1)
		return 0;
	piece = 1 + (data[0] >> 1);
	if (hwt_vg_reader_init(&r, 1u << 16, &err))
		abort();
	r.defer = data[0] & 1;
	data++;
	size--;
	rc = 0;
	for (size_t at = 0; rc == 0 && at < size; at += piece)
		rc = hwt_vg_reader_feed(&r, data + at,
					size - at < piece ? size - at : piece,
					&err);
	if (rc < 0 && (err.code == 0 || !err.msg[0]))
		abort();      /* an error always says what */
	hwt_vg_reader_finish(&r, &(struct hwt_err){ 0 });
	for (size_t i = 0; i < r.nthreads; i++) {
		const struct hwt_sw_ring *g = &r.threads[i].ring;

		if (g->lost_insns > g->insn_total ||
		    (g->sealed_size && !g->sealed))
			abort();
		insns += g->insn_total;
		if (g->sealed_size)
			check_sealed(g);
	}
	if (insns != r.insns)
		abort();
	hwt_vg_reader_free(&r);
	return 0;
}
