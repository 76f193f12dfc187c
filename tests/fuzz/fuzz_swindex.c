// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_swindex.c - hwt-sw traces framed for bundles and their index
 * (common/sw_index.c, replay/sw_chunks.c's reading of it).
 *
 * Input: bytes read four ways.
 *   - As a trace: packed for a bundle. When it gets an index, the index
 *     must read back against the frames, the frames decompress to the
 *     input, and the segments built from the index must be exactly those
 *     the replay engine cuts by scanning the trace.
 *   - As the contents of an index for a fixed trace of several frames:
 *     what parses is decoded segment by segment through the frames it
 *     names, which must never read outside them; what does not parse is
 *     refused with a message.
 *   - As the contents of a segment index kept beside a trace
 *     (replay/seg_store.c, `hwtrace index`), its size and fingerprint
 *     made to match the fixed trace so the rest is reached: what loads
 *     has every segment inside the trace; and as one with kept blocks
 *     (a CoreSight index, version 2): what loads has segments holding
 *     its blocks in order, adding up to their items.
 * Seeds (HWT_FUZZ_SEEDS): the fixed trace and its real index.
 */
#include <zstd.h>

#include "decode.h"
#include "fuzz-common.h"

static uint8_t *fixed_zst;
static size_t fixed_zst_n, fixed_n;
static uint8_t *frame_buf;

/* A trace of chunks of a few sizes, some after lost instructions. */
static uint8_t *make_trace(size_t *n)
{
	static const uint32_t counts[] = { 9000, 1, 4097, 600000, 600000,
					   600000, 600000, 600000, 30000 };
	size_t cap = 16u << 20, at = 0;
	uint8_t *t = malloc(cap);
	uint64_t seq = 0, x = 88172645463325252ull;

	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		struct hwt_sw_chunk_hdr h = { .first_pc = 0x400000 + c * 64,
					      .first_seq = seq + (c == 2) * 7,
					      .insn_count = counts[c] };
		size_t hdr_at = at;
		uint64_t pc = h.first_pc;

		at += HWT_SW_CHUNK_HDR_SIZE;
		for (uint32_t i = 1; i < counts[c]; i++) {
			uint64_t next;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			next = x % 8 ? pc + 1 + x % 15 : 0x400000 + (x >> 44);
			at += hwt_sw_encode_step(pc, next, x % 307 == 0,
						 t + at);
			pc = next;
		}
		h.payload_size = (uint32_t)(at - hdr_at -
					    HWT_SW_CHUNK_HDR_SIZE);
		h.last_pc = pc;
		hwt_sw_chunk_hdr_pack(&h, t + hdr_at);
		seq = h.first_seq + counts[c];
	}
	*n = at;
	return t;
}

static void write_seed(const char *dir, const char *name, const void *p,
		       size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "wb")) || fwrite(p, 1, n, f) != n)
		abort();
	fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("HWT_FUZZ_SEEDS");
	uint8_t *trace = make_trace(&fixed_n), *idx, *raw;
	size_t idx_n;
	unsigned long long raw_n;

	(void)argc;
	(void)argv;
	if (hwt_sw_trace_pack(trace, fixed_n, &fixed_zst, &fixed_zst_n, &idx,
			      &idx_n, NULL) || !idx)
		abort();
	raw_n = ZSTD_getFrameContentSize(idx, idx_n);
	raw = malloc(raw_n);
	if (ZSTD_decompress(raw, raw_n, idx, idx_n) != raw_n)
		abort();
	if (seeds) {
		uint8_t kept[56 + 56 + 2 * 48 + 4] = { 0 };

		/* A kept CoreSight index: one segment of a 5-instruction
		 * block and a gap block with its reason. */
		memcpy(kept, "HWTG", 4);
		hwt_put_le32(kept + 4, 2);
		hwt_put_le32(kept + 24, 1);
		hwt_put_le32(kept + 28, 1);
		hwt_put_le32(kept + 32, 4);
		hwt_put_le32(kept + 36, 2);
		hwt_put_le64(kept + 56 + 8, 2);
		hwt_put_le32(kept + 56 + 24, 6);
		hwt_put_le64(kept + 112, 0x1000);
		hwt_put_le64(kept + 112 + 8, 0x1010);
		hwt_put_le32(kept + 112 + 32, 5);
		hwt_put_le32(kept + 112 + 40, HWT_ISA_A64);
		hwt_put_le32(kept + 160 + 32, 1);
		hwt_put_le32(kept + 160 + 36, HWT_BLOCK_GAP);
		hwt_put_le32(kept + 160 + 44, 1);
		memcpy(kept + 208, "gap", 4);
		write_seed(seeds, "seed-kept-blocks", kept, sizeof(kept));
		write_seed(seeds, "seed-index", raw, raw_n);
		/* The trace's first chunks, small enough to mutate. */
		write_seed(seeds, "seed-trace", trace, 40000);
		exit(0);
	}
	free(raw);
	free(idx);
	free(trace);
	frame_buf = malloc(HWT_SW_INDEX_FRAME_MAX);
	fuzz_image();
	return 0;
}

static bool same_segments(const struct hwt_segments *a,
			  const struct hwt_segments *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		const struct hwt_segment *x = &a->v[i], *y = &b->v[i];

		if (x->off != y->off || x->len != y->len || x->pc != y->pc ||
		    x->nitems != y->nitems || x->flags != y->flags ||
		    !x->reason != !y->reason ||
		    (x->reason && strcmp(x->reason, y->reason)))
			return false;
	}
	return true;
}

static void as_trace(const uint8_t *data, size_t size, struct hwt_image *img)
{
	struct hwt_segments scanned = { 0 }, indexed = { 0 };
	struct hwt_sw_index *ix = NULL;
	uint8_t *zst, *idx, *whole = NULL;
	size_t zst_n, idx_n;

	if (hwt_sw_trace_pack(data, size, &zst, &zst_n, &idx, &idx_n, NULL))
		return;
	if (hwt_trace_decompress(zst, zst_n, size, &whole, NULL) ||
	    (size && memcmp(whole, data, size)))
		abort();
	if (idx) {
		if (hwt_sw_index_parse(idx, idx_n, zst, zst_n, size, &ix, NULL))
			abort();
		if (hwt_decoder_sw.index_image(data, size, 0, 0, img, &scanned,
					       NULL) ||
		    hwt_sw_index_segments(ix, 0, &indexed, NULL))
			abort();
		if (!same_segments(&scanned, &indexed))
			abort();
		hwt_segments_free(&scanned);
		hwt_segments_free(&indexed);
		hwt_sw_index_free(ix);
	}
	free(whole);
	free(zst);
	free(idx);
}

/* Decode every segment of a parsed index through its frames. */
static void as_index(const uint8_t *data, size_t size, struct hwt_image *img)
{
	size_t cap = ZSTD_compressBound(size), n, items = 0;
	uint8_t *idx = malloc(cap);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	struct hwt_segments segs = { 0 };
	struct hwt_sw_index *ix = NULL;
	struct hwt_err err = { 0 };

	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	n = ZSTD_compress2(cc, idx, cap, data, size);
	ZSTD_freeCCtx(cc);
	if (ZSTD_isError(n))
		abort();
	if (hwt_sw_index_parse(idx, n, fixed_zst, fixed_zst_n, fixed_n, &ix,
			       &err)) {
		if (!err.msg[0])
			abort();
		free(idx);
		return;
	}
	if (hwt_sw_index_segments(ix, 0, &segs, NULL))
		abort();
	for (size_t i = 0; i < segs.n && items < FUZZ_MAX_ITEMS * 4; i++) {
		const struct hwt_segment *seg = &segs.v[i];
		struct hwt_blocks out = { 0 };
		struct hwt_segment local = *seg;
		size_t f = 0;

		items += seg->nitems;
		if (seg->nitems <= (seg->reason ? 1u : 0u))
			continue;
		while (f + 1 < ix->nframes &&
		       ix->frames[f + 1].decoded_off <= seg->off)
			f++;
		if (seg->off < ix->frames[f].decoded_off ||
		    seg->off + seg->len - ix->frames[f].decoded_off >
		    ix->frames[f].decoded_len)
			abort();    /* a segment outside its frame */
		if (hwt_sw_index_frame_read(ix, fixed_zst, f, frame_buf, NULL))
			continue;
		local.off = seg->off - ix->frames[f].decoded_off;
		hwt_decoder_sw.decode(frame_buf, ix->frames[f].decoded_len,
				      &local, img, &out, NULL);
		free(out.v);
	}
	hwt_segments_free(&segs);
	hwt_sw_index_free(ix);
	free(idx);
}

/* seg_store.c's fingerprint: FNV-1a over the first and last 64 KiB. */
static uint64_t fingerprint(const uint8_t *t, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	size_t head = n < 65536 ? n : 65536;
	size_t tail = n - head < 65536 ? n - head : 65536;

	for (size_t i = 0; i < head; i++)
		h = (h ^ t[i]) * 0x100000001b3ull;
	for (size_t i = n - tail; i < n; i++)
		h = (h ^ t[i]) * 0x100000001b3ull;
	return h;
}

/* data as a kept index's contents, its header made to name format
 * (version 1: 48 bytes, 2: 56) and to match trace, then compressed as
 * seg_store.c stores it: *z malloc'd, *zn its size, 0 when it fails. */
static void kept_blob(const uint8_t *data, size_t size, uint32_t version,
		      const char *format, const uint8_t *trace, size_t tsize,
		      uint8_t **z, size_t *zn)
{
	size_t hdr = version == 2 ? 56 : 48, len = size > hdr ? size : hdr;
	uint8_t *raw = calloc(1, len);
	size_t cap = ZSTD_compressBound(len);
	ZSTD_CCtx *cc = ZSTD_createCCtx();

	memcpy(raw, data, size);
	memcpy(raw, "HWTG", 4);
	if (version == 2)
		hwt_put_le32(raw + 4, 2);
	hwt_put_le64(raw + 8, tsize);
	hwt_put_le64(raw + 16, fingerprint(trace, tsize));
	memset(raw + 40, 0, hdr - 40);
	memcpy(raw + 40, format, strlen(format));
	*z = malloc(cap);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	*zn = ZSTD_compress2(cc, *z, cap, raw, len);
	if (ZSTD_isError(*zn))
		*zn = 0;
	ZSTD_freeCCtx(cc);
	free(raw);
}

static void as_kept(const uint8_t *data, size_t size)
{
	static const uint8_t trace[300] = { 1, 2, 3 };
	struct hwt_segments segs = { 0 };
	uint8_t *z;
	size_t n;

	kept_blob(data, size, 1, "intel-pt", trace, sizeof(trace), &z, &n);
	if (n && !hwt_segments_load(z, n, "intel-pt", trace, sizeof(trace),
				    &segs, NULL))
		for (size_t i = 0; i < segs.n; i++)
			if (segs.v[i].off + segs.v[i].len > sizeof(trace))
				abort();
	hwt_segments_free(&segs);
	free(z);
}

/* The same with kept blocks (version 2, a CoreSight index): whatever
 * loads has segments that hold the blocks in order, each adding up to
 * its items, and blocks the decoder could have made. */
static void as_kept_blocks(const uint8_t *data, size_t size)
{
	static const uint8_t trace[300] = { 4, 5, 6 };
	struct hwt_segments segs = { 0 };
	uint8_t *z;
	size_t n;

	kept_blob(data, size, 2, "coresight", trace, sizeof(trace), &z, &n);
	if (n && !hwt_segments_load(z, n, "coresight", trace, sizeof(trace),
				    &segs, NULL) && segs.priv) {
		const struct hwt_blocks *b = segs.priv;
		uint64_t at = 0;

		if (!segs.priv_blocks)
			abort();
		for (size_t i = 0; i < segs.n; i++) {
			uint64_t items = 0;

			if (segs.v[i].off != at ||
			    segs.v[i].len > b->n - segs.v[i].off ||
			    segs.v[i].own.blocks != b->v)
				abort();
			for (uint64_t k = 0; k < segs.v[i].len; k++) {
				const struct hwt_block *blk = &b->v[at + k];

				if (blk->count == 0 || blk->isa > HWT_ISA_X86_32 ||
				    ((blk->flags & HWT_BLOCK_GAP) &&
				     blk->count != 1))
					abort();
				items += blk->count;
			}
			if (items != segs.v[i].nitems)
				abort();
			at += segs.v[i].len;
		}
		if (at != b->n)
			abort();
	}
	hwt_segments_free(&segs);
	free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_image *img = fuzz_image();

	as_trace(data, size, img);
	as_index(data, size, img);
	as_kept(data, size);
	as_kept_blocks(data, size);
	return 0;
}
