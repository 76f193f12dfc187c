// SPDX-License-Identifier: BSD-2-Clause
/* test_sw_index.c - hwt-sw traces compressed chunk by chunk and their
 * index: what the packer writes reads back, and an index that does not
 * match its trace, or is damaged, is refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "hwt-common.h"
#include "check.h"
#include "sw_chunks_gen.h"

struct packed {
	uint8_t *zst, *idx;
	size_t zst_n, idx_n;
	int rc;
};

static struct packed pack(const struct gen_trace *t)
{
	struct packed p = { 0 };
	struct hwt_err err = { 0 };

	p.rc = hwt_sw_trace_pack(t->v, t->n, &p.zst, &p.zst_n, &p.idx,
				 &p.idx_n, &err);
	return p;
}

static void packed_free(struct packed *p)
{
	free(p->zst);
	free(p->idx);
}

/* The index's own bytes, decompressed, and put back with a checksum:
 * to damage what it says, not how it is stored. */
static uint8_t *raw_index(const struct packed *p, size_t *n)
{
	unsigned long long len = ZSTD_getFrameContentSize(p->idx, p->idx_n);
	uint8_t *raw = malloc(len);

	*n = ZSTD_decompress(raw, len, p->idx, p->idx_n);
	return raw;
}

static int parse_raw(const struct packed *p, const uint8_t *raw, size_t n,
		     uint64_t decoded, struct hwt_err *err)
{
	size_t cap = ZSTD_compressBound(n), got;
	uint8_t *z = malloc(cap);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	struct hwt_sw_index *ix = NULL;
	int rc;

	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	got = ZSTD_compress2(cc, z, cap, raw, n);
	rc = hwt_sw_index_parse(z, got, p->zst, p->zst_n, decoded, &ix, err);
	hwt_sw_index_free(ix);
	ZSTD_freeCCtx(cc);
	free(z);
	return rc;
}

static void test_roundtrip(void)
{
	struct gen_trace t = { 0 };
	uint32_t counts[] = { 10000, 1, 4096, 4097, 8193, 300000 };
	struct hwt_err err = { 0 };
	struct hwt_sw_index *ix = NULL;
	struct packed p;
	uint8_t *whole = NULL, *buf = malloc(HWT_SW_INDEX_FRAME_MAX);
	bool same = true, cuts_ok = true;
	size_t ncuts = 0;
	int rc;

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
		gen_chunk(&t, counts[i], i == 3 ? 777 : 0);
	p = pack(&t);
	CHECK("index: a trace of plain chunks gets one",
	      p.rc == 0 && p.idx && p.idx_n < 2000, "rc %d, %zu bytes", p.rc,
	      p.idx_n);
	rc = hwt_sw_index_parse(p.idx, p.idx_n, p.zst, p.zst_n, t.n, &ix,
				&err);
	CHECK("index: it reads back against its trace", rc == 0 &&
	      ix->nchunks == 6 && ix->decoded_size == t.n, "rc %d (%s)", rc,
	      err.msg);
	for (size_t i = 0; !rc && i < ix->nframes; i++) {
		const struct hwt_sw_index_frame *f = &ix->frames[i];

		same = same && !hwt_sw_index_frame_read(ix, p.zst, i, buf,
							&err) &&
			!memcmp(buf, t.v + f->decoded_off, f->decoded_len);
	}
	for (size_t i = 0; !rc && i < ix->nchunks; i++) {
		const struct hwt_sw_index_chunk *c = &ix->chunks[i];
		struct hwt_sw_reader r;
		uint64_t n = 1;
		bool async;

		same = same && c->hdr.insn_count == counts[i];
		ncuts += c->ncuts;
		/* Each restart point is where the records say instruction
		 * stride * k + 1 begins. */
		hwt_sw_reader_init(&r, t.v + c->decoded_off +
				   HWT_SW_CHUNK_HDR_SIZE, c->hdr.payload_size,
				   c->hdr.first_pc);
		for (size_t k = 0; k < c->ncuts; k++) {
			const struct hwt_sw_index_cut *cut =
				&ix->cuts[c->first_cut + k];
			size_t at = 0;

			while (n <= (k + 1) * HWT_SW_INDEX_STRIDE) {
				at = (size_t)(r.p - (t.v + c->decoded_off +
						     HWT_SW_CHUNK_HDR_SIZE));
				hwt_sw_reader_next(&r, &async, NULL);
				n++;
			}
			cuts_ok = cuts_ok && cut->rec_off == at &&
				cut->pc == r.pc && cut->async == async;
		}
	}
	CHECK("index: every frame decompresses alone to its chunks' bytes", same,
	      "%s", err.msg);
	CHECK("index: restart points every 4096 instructions, where the "
	      "records put them", cuts_ok && ncuts == 2 + 0 + 0 + 1 + 2 + 73,
	      "%zu restart points", ncuts);
	rc = hwt_trace_decompress(p.zst, p.zst_n, t.n, &whole, &err);
	CHECK("index: the frames together decompress to the whole trace",
	      rc == 0 && !memcmp(whole, t.v, t.n), "rc %d (%s)", rc, err.msg);
	free(whole);
	hwt_sw_index_free(ix);
	packed_free(&p);
	free(buf);
	free(t.v);
}

static bool same_index(const struct hwt_sw_index *x,
		       const struct hwt_sw_index *y)
{
	if (!x || !y || x->nframes != y->nframes ||
	    x->nchunks != y->nchunks || x->ncuts != y->ncuts)
		return false;
	for (size_t i = 0; i < x->nchunks; i++) {
		const struct hwt_sw_index_chunk *a = &x->chunks[i];
		const struct hwt_sw_index_chunk *b = &y->chunks[i];

		if (memcmp(&a->hdr, &b->hdr, sizeof(a->hdr)) ||
		    a->decoded_off != b->decoded_off || a->frame != b->frame ||
		    a->ncuts != b->ncuts)
			return false;
	}
	for (size_t i = 0; i < x->nframes; i++)
		if (memcmp(&x->frames[i], &y->frames[i], sizeof(x->frames[i])))
			return false;
	for (size_t i = 0; i < x->ncuts; i++)
		if (x->cuts[i].rec_off != y->cuts[i].rec_off ||
		    x->cuts[i].rec_len != y->cuts[i].rec_len ||
		    x->cuts[i].async != y->cuts[i].async ||
		    x->cuts[i].pc != y->cuts[i].pc)
			return false;
	return true;
}

/* An index with another trace, a damaged one, or one whose numbers
 * were changed: refused with a message, never used. */
static void test_refused(void)
{
	struct gen_trace a = { 0 }, b = { .rng = 12345 };
	struct hwt_err err = { 0 };
	struct hwt_sw_index *ix = NULL, *ix0 = NULL;
	struct packed pa, pb;
	uint8_t *raw, *copy, *buf = malloc(HWT_SW_INDEX_FRAME_MAX);
	size_t raw_n, refused = 0, tried = 0;
	int rc;
	static const struct {
		const char *what;
		size_t off;        /* into the raw index */
		uint8_t xor;
	} edits[] = {
		{ "a version", 4, 2 },
		{ "a decoded size", 8, 1 },
		{ "a frame count", 16, 1 },
		{ "a chunk count", 20, 1 },
		{ "a frame offset", 32, 1 },
		{ "a frame length", 32 + 8, 1 },
		{ "a frame checksum", 32 + 12, 0x10 },
		{ "a frame's decoded length", 32 + 16, 1 },
		{ "a frame's chunk count", 32 + 20, 1 },
		{ "a payload size", 32 + 24 + 24, 1 },
		{ "an instruction count", 32 + 24 + 29, 0x20 },
		{ "flags", 32 + 24 + 32, 1 },
		{ "a restart count", 32 + 24 + 36, 1 },
		{ "a restart offset", 32 + 24 + 3 * 40 + 1, 0x40 },
		{ "a restart length", 32 + 24 + 3 * 40 + 4, 0x0f },
		{ "a restart's spare bits", 32 + 24 + 3 * 40 + 6, 1 },
	};

	gen_chunk(&a, 9000, 0);
	gen_chunk(&a, 5000, 0);
	gen_chunk(&a, 100, 0);
	gen_chunk(&b, 9000, 0);
	gen_chunk(&b, 5000, 0);
	gen_chunk(&b, 100, 0);
	pa = pack(&a);
	pb = pack(&b);
	rc = hwt_sw_index_parse(pa.idx, pa.idx_n, pb.zst, pb.zst_n, a.n, &ix,
				&err);
	CHECK("index: one made for another trace is refused as stale",
	      rc == -EINVAL && !ix && strstr(err.msg, "stale"),
	      "rc %d (%s)", rc, err.msg);
	hwt_sw_index_parse(pa.idx, pa.idx_n, pa.zst, pa.zst_n, a.n, &ix0,
			   &err);
	for (size_t i = 0; i < pa.idx_n; i++) {
		copy = malloc(pa.idx_n);
		memcpy(copy, pa.idx, pa.idx_n);
		copy[i] ^= (uint8_t)(1u << (i % 8));
		rc = hwt_sw_index_parse(copy, pa.idx_n, pa.zst, pa.zst_n, a.n,
					&ix, &err);
		tried++;
		refused += rc != 0 || same_index(ix, ix0);
		hwt_sw_index_free(ix);
		ix = NULL;
		free(copy);
	}
	hwt_sw_index_free(ix0);
	CHECK("index: any bit flipped in the index file is refused, or "
	      "left what it says as it was (zstd's unused bits)",
	      refused == tried, "%zu of %zu refused", refused, tried);
	raw = raw_index(&pa, &raw_n);
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		copy = malloc(raw_n);
		memcpy(copy, raw, raw_n);
		copy[edits[i].off] ^= edits[i].xor;
		rc = parse_raw(&pa, copy, raw_n, a.n, &err);
		CHECK("index: changed numbers are refused", rc == -EINVAL,
		      "%s: rc %d", edits[i].what, rc);
		free(copy);
	}
	/* A header the frames cannot contradict is checked when its chunk
	 * is read. */
	copy = malloc(raw_n);
	memcpy(copy, raw, raw_n);
	copy[32 + 24] ^= 4;    /* chunk 0's first_pc */
	{
		size_t cap = ZSTD_compressBound(raw_n);
		uint8_t *z = malloc(cap);
		ZSTD_CCtx *cc = ZSTD_createCCtx();
		size_t zn;

		ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
		zn = ZSTD_compress2(cc, z, cap, copy, raw_n);
		rc = hwt_sw_index_parse(z, zn, pa.zst, pa.zst_n, a.n, &ix,
					&err);
		if (!rc)
			rc = hwt_sw_index_frame_read(ix, pa.zst, 0, buf, &err);
		CHECK("index: a chunk whose header differs is an error when "
		      "read", rc == -EIO && strstr(err.msg, "differs"),
		      "rc %d (%s)", rc, err.msg);
		hwt_sw_index_free(ix);
		ZSTD_freeCCtx(cc);
		free(z);
	}
	rc = hwt_sw_index_parse(pa.idx, pa.idx_n, pa.zst, pa.zst_n - 1, a.n,
				&ix, &err);
	CHECK("index: a trace file cut short is refused", rc == -EINVAL,
	      "rc %d", rc);
	free(copy);
	free(raw);
	packed_free(&pa);
	packed_free(&pb);
	free(a.v);
	free(b.v);
	free(buf);
}

/* What cannot be indexed is still stored, as one frame, for readers that
 * scan it. */
static void test_not_indexed(void)
{
	struct gen_trace t = { 0 };
	struct hwt_err err = { 0 };
	uint8_t *whole = NULL;
	struct packed p;
	int rc;

	gen_chunk(&t, 5000, 0);
	gen_put(&t, "junk", 4);
	gen_chunk(&t, 5000, 0);
	p = pack(&t);
	rc = hwt_trace_decompress(p.zst, p.zst_n, t.n, &whole, &err);
	CHECK("index: none for a damaged trace, which is kept whole",
	      p.rc == 0 && !p.idx && rc == 0 && !memcmp(whole, t.v, t.n),
	      "rc %d/%d (%s)", p.rc, rc, err.msg);
	free(whole);
	packed_free(&p);
	/* A chunk of branch records is expanded with code: not indexed. */
	t.n = 0;
	gen_chunk(&t, 3000, 0);
	t.v[36] = HWT_SW_CHUNK_BRANCHES;
	p = pack(&t);
	CHECK("index: none for branch chunks", p.rc == 0 && !p.idx,
	      "rc %d", p.rc);
	packed_free(&p);
	t.n = 0;
	p = pack(&t);
	rc = hwt_trace_decompress(p.zst, p.zst_n, 0, &whole, &err);
	CHECK("index: none for an empty trace, which decodes empty",
	      p.rc == 0 && !p.idx && rc == 0, "rc %d/%d (%s)", p.rc, rc,
	      err.msg);
	free(whole);
	packed_free(&p);
	free(t.v);
}

int main(void)
{
	RUN(test_roundtrip);
	RUN(test_refused);
	RUN(test_not_indexed);
	return check_exit();
}
