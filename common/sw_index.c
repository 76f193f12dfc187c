/* sw_index.c - hwt-sw traces compressed frame by frame, and their index.
 *
 * Opening a history must not cost the length of the trace: a billion
 * instructions are a gigabyte of records, and decompressing and scanning
 * them all took most of a second before the first answer. So a bundle
 * stores the trace as zstd frames of whole chunks, each frame up to
 * HWT_SW_INDEX_FRAME_MAX bytes decoded (recorders write chunks of a few
 * kilobytes, which compress far worse alone: a frame of 4 MiB keeps the
 * trace within 1.5x of one frame for all, one of 1 MiB 3x), with an index
 * saying where every frame is, the headers of its chunks and the restart
 * points every HWT_SW_INDEX_STRIDE instructions that the replay engine
 * cuts segments at. The frames together are still one valid zstd
 * stream, which whole-trace readers decompress as before.
 *
 * Index file: one zstd frame with its content checksum (damage to the
 * index itself is found before any of it is believed) of, little-endian:
 *   header   32 bytes: "HWTI", u32 version, u64 decoded size,
 *            u32 frames, u32 chunks, u32 cuts, u32 stride
 *   frames   24 bytes each: u64 offset in the file, u32 length,
 *            u32 content checksum, u32 decoded length, u32 chunks
 *   chunks   40 bytes each: u64 first_pc, u64 first_seq, u64 last_pc,
 *            u32 payload_size, u32 insn_count, u32 flags (0), u32 cuts
 *   cuts     16 bytes each, chunk by chunk: u32 record offset in the
 *            payload, u8 record length, u8 async, u16 0, u64 pc
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "hwt-common.h"

#define LEVEL 3
#define HDR_BYTES 32u
#define FRAME_BYTES 24u
#define CHUNK_BYTES 40u
#define CUT_BYTES 16u
/* Frame_Header_Descriptor bit 2: the frame ends with a content checksum
 * (RFC 8878, 3.1.1.1.1). */
#define ZSTD_FHD_CHECKSUM 0x04u

struct packer {
	const uint8_t *trace;
	size_t n;
	struct hwt_sw_index ix;
	size_t frame_cap, chunk_cap, cut_cap;
};

static void index_release(struct hwt_sw_index *ix)
{
	free(ix->frames);
	free(ix->chunks);
	free(ix->cuts);
	memset(ix, 0, sizeof(*ix));
}

void hwt_sw_index_free(struct hwt_sw_index *ix)
{
	if (!ix)
		return;
	index_release(ix);
	free(ix);
}

/* Room for one more element of *v (*n used of *cap). */
static int grow(void **v, size_t n, size_t *cap, size_t size)
{
	if (n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		void *p = realloc(*v, ncap * size);

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = ncap;
	}
	return 0;
}

/* The chunk at off as an index entry with its cuts, or -EBADMSG when it
 * is not a plain chunk whose records agree with its header. */
static int index_chunk(struct packer *pk, size_t off)
{
	struct hwt_sw_index *ix = &pk->ix;
	struct hwt_sw_index_chunk c = { .decoded_off = off };
	struct hwt_sw_reader r;
	const uint8_t *pay;
	uint64_t total = 1;
	bool async;
	int rr;

	if (hwt_sw_chunk_hdr_unpack(pk->trace + off, pk->n - off, &c.hdr,
				    NULL))
		return -EBADMSG;
	pay = pk->trace + off + HWT_SW_CHUNK_HDR_SIZE;
	c.first_cut = ix->ncuts;
	hwt_sw_reader_init(&r, pay, c.hdr.payload_size, c.hdr.first_pc);
	for (;;) {
		size_t at = (size_t)(r.p - pay);

		rr = hwt_sw_reader_next(&r, &async, NULL);
		if (rr <= 0)
			break;
		if (total++ % HWT_SW_INDEX_STRIDE == 0) {
			if (grow((void **)&ix->cuts, ix->ncuts, &pk->cut_cap,
				 sizeof(*ix->cuts)))
				return -ENOMEM;
			ix->cuts[ix->ncuts++] = (struct hwt_sw_index_cut){
				.rec_off = (uint32_t)at,
				.rec_len = (uint8_t)((size_t)(r.p - pay) - at),
				.async = async, .pc = r.pc,
			};
		}
	}
	if (rr < 0 || total != c.hdr.insn_count || r.pc != c.hdr.last_pc)
		return -EBADMSG;
	c.ncuts = ix->ncuts - c.first_cut;
	if (grow((void **)&ix->chunks, ix->nchunks, &pk->chunk_cap,
		 sizeof(*ix->chunks)))
		return -ENOMEM;
	ix->chunks[ix->nchunks++] = c;
	return 0;
}

/* Group the chunks into frames of at most HWT_SW_INDEX_FRAME_MAX bytes
 * (a chunk is at most 1 MiB and its header). */
static int make_frames(struct packer *pk)
{
	struct hwt_sw_index *ix = &pk->ix;

	for (size_t i = 0; i < ix->nchunks; i++) {
		struct hwt_sw_index_chunk *c = &ix->chunks[i];
		uint32_t len = HWT_SW_CHUNK_HDR_SIZE + c->hdr.payload_size;
		struct hwt_sw_index_frame *f = ix->nframes ?
			&ix->frames[ix->nframes - 1] : NULL;

		if (!f || f->decoded_len + len > HWT_SW_INDEX_FRAME_MAX) {
			if (grow((void **)&ix->frames, ix->nframes,
				 &pk->frame_cap, sizeof(*ix->frames)))
				return -ENOMEM;
			f = &ix->frames[ix->nframes++];
			*f = (struct hwt_sw_index_frame){
				.decoded_off = c->decoded_off, .first_chunk = i,
			};
		}
		f->decoded_len += len;
		f->nchunks++;
		c->frame = ix->nframes - 1;
	}
	return 0;
}

static uint8_t *index_pack(const struct hwt_sw_index *ix, size_t *len)
{
	size_t n = HDR_BYTES + ix->nframes * FRAME_BYTES +
		ix->nchunks * CHUNK_BYTES + ix->ncuts * CUT_BYTES;
	uint8_t *o = calloc(1, n), *p;

	if (!o)
		return NULL;
	memcpy(o, HWT_SW_INDEX_MAGIC, 4);
	hwt_put_le32(o + 4, HWT_SW_INDEX_VERSION);
	hwt_put_le64(o + 8, ix->decoded_size);
	hwt_put_le32(o + 16, (uint32_t)ix->nframes);
	hwt_put_le32(o + 20, (uint32_t)ix->nchunks);
	hwt_put_le32(o + 24, (uint32_t)ix->ncuts);
	hwt_put_le32(o + 28, HWT_SW_INDEX_STRIDE);
	p = o + HDR_BYTES;
	for (size_t i = 0; i < ix->nframes; i++, p += FRAME_BYTES) {
		const struct hwt_sw_index_frame *f = &ix->frames[i];

		hwt_put_le64(p, f->file_off);
		hwt_put_le32(p + 8, f->file_len);
		hwt_put_le32(p + 12, f->checksum);
		hwt_put_le32(p + 16, f->decoded_len);
		hwt_put_le32(p + 20, (uint32_t)f->nchunks);
	}
	for (size_t i = 0; i < ix->nchunks; i++, p += CHUNK_BYTES) {
		const struct hwt_sw_index_chunk *c = &ix->chunks[i];

		hwt_put_le64(p, c->hdr.first_pc);
		hwt_put_le64(p + 8, c->hdr.first_seq);
		hwt_put_le64(p + 16, c->hdr.last_pc);
		hwt_put_le32(p + 24, c->hdr.payload_size);
		hwt_put_le32(p + 28, c->hdr.insn_count);
		hwt_put_le32(p + 32, c->hdr.flags);
		hwt_put_le32(p + 36, (uint32_t)c->ncuts);
	}
	for (size_t i = 0; i < ix->ncuts; i++, p += CUT_BYTES) {
		hwt_put_le32(p, ix->cuts[i].rec_off);
		p[4] = ix->cuts[i].rec_len;
		p[5] = ix->cuts[i].async;
		hwt_put_le64(p + 8, ix->cuts[i].pc);
	}
	*len = n;
	return o;
}

static int compress_err(size_t got, struct hwt_err *err)
{
	return hwt_err_set(err, EIO, "compressing the trace: %s",
			   ZSTD_getErrorName(got));
}

static int pack_index(ZSTD_CCtx *cc, const struct hwt_sw_index *ix,
		      uint8_t **out, size_t *out_n, struct hwt_err *err)
{
	size_t raw_n = 0, cap, got;
	uint8_t *raw = index_pack(ix, &raw_n);

	cap = ZSTD_compressBound(raw_n);
	if (!raw || !(*out = malloc(cap))) {
		free(raw);
		return hwt_err_set(err, ENOMEM, "out of memory for the "
				   "trace's index");
	}
	got = ZSTD_compress2(cc, *out, cap, raw, raw_n);
	free(raw);
	if (ZSTD_isError(got))
		return compress_err(got, err);
	*out_n = got;
	return 0;
}

/* Each frame of the index into out (room for cap). */
static int pack_frames(ZSTD_CCtx *cc, struct packer *pk, uint8_t *out,
		       size_t cap, size_t *out_n, struct hwt_err *err)
{
	size_t at = 0;

	for (size_t i = 0; i < pk->ix.nframes; i++) {
		struct hwt_sw_index_frame *f = &pk->ix.frames[i];
		size_t got = ZSTD_compress2(cc, out + at, cap - at,
					    pk->trace + f->decoded_off,
					    f->decoded_len);

		if (ZSTD_isError(got))
			return compress_err(got, err);
		f->file_off = at;
		f->file_len = (uint32_t)got;
		f->checksum = hwt_get_le32(out + at + got - 4);
		at += got;
	}
	*out_n = at;
	return 0;
}

int hwt_sw_trace_pack(const uint8_t *trace, size_t n, uint8_t **zst,
		      size_t *zst_n, uint8_t **idx, size_t *idx_n,
		      struct hwt_err *err)
{
	struct packer pk = { .trace = trace, .n = n };
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t off = 0, cap = 0, got;
	bool indexable = n <= HWT_BUNDLE_MAX_DECODED;
	int rc = 0;

	*zst = *idx = NULL;
	*zst_n = *idx_n = 0;
	while (off < n && indexable) {
		rc = index_chunk(&pk, off);
		if (rc == -ENOMEM)
			goto nomem;
		indexable = rc == 0;
		if (indexable)
			off += HWT_SW_CHUNK_HDR_SIZE +
				pk.ix.chunks[pk.ix.nchunks - 1].hdr.payload_size;
	}
	rc = 0;
	if (!indexable)
		index_release(&pk.ix);
	else if (make_frames(&pk))
		goto nomem;
	/* Frames bound to their sum: compressBound of the whole plus a
	 * frame's header and checksum per frame covers it. */
	cap = ZSTD_compressBound(n) + (pk.ix.nframes + 1) * 32;
	if (!cc || !(*zst = malloc(cap)))
		goto nomem;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel,
						LEVEL)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1))) {
		rc = hwt_err_set(err, EIO, "zstd refused its parameters");
		goto fail;
	}
	if (pk.ix.nframes) {
		pk.ix.decoded_size = n;
		if ((rc = pack_frames(cc, &pk, *zst, cap, zst_n, err)) ||
		    (rc = pack_index(cc, &pk.ix, idx, idx_n, err)))
			goto fail;
	} else {
		got = ZSTD_compress2(cc, *zst, cap, trace, n);
		if (ZSTD_isError(got)) {
			rc = compress_err(got, err);
			goto fail;
		}
		*zst_n = got;
	}
	goto out;
nomem:
	rc = hwt_err_set(err, ENOMEM, "out of memory compressing %zu bytes "
			 "of trace", n);
fail:
	free(*zst);
	*zst = NULL;
	*zst_n = 0;
	free(*idx);
	*idx = NULL;
	*idx_n = 0;
out:
	index_release(&pk.ix);
	ZSTD_freeCCtx(cc);
	return rc;
}

/* ---- reading ---- */

static int bad(struct hwt_err *err, const char *what, size_t i)
{
	return hwt_err_set(err, EINVAL, "the trace's index is stale or "
			   "damaged: %s (entry %zu)", what, i);
}

/* Frame f must be in zst where the index says, decode to its length and
 * end with the checksum the index names. */
static int check_frame(const struct hwt_sw_index_frame *f, size_t i,
		       const uint8_t *zst, size_t zst_n, uint64_t at,
		       struct hwt_err *err)
{
	const uint8_t *z = zst + at;

	if (f->file_off != at || f->file_len > zst_n - at || f->file_len < 9)
		return bad(err, "its frames do not tile the trace file", i);
	if (ZSTD_getFrameContentSize(z, f->file_len) != f->decoded_len)
		return bad(err, "a frame decodes to another length", i);
	if (ZSTD_findFrameCompressedSize(z, f->file_len) != f->file_len)
		return bad(err, "a frame's length differs", i);
	if (!(z[4] & ZSTD_FHD_CHECKSUM) ||
	    hwt_get_le32(z + f->file_len - 4) != f->checksum)
		return bad(err, "a frame's checksum differs", i);
	return 0;
}

static int parse_frames(struct hwt_sw_index *ix, const uint8_t *p,
			const uint8_t *zst, size_t zst_n, struct hwt_err *err)
{
	uint64_t file_at = 0;
	size_t chunks = 0;
	int rc;

	for (size_t i = 0; i < ix->nframes; i++, p += FRAME_BYTES) {
		struct hwt_sw_index_frame *f = &ix->frames[i];

		f->file_off = hwt_get_le64(p);
		f->file_len = hwt_get_le32(p + 8);
		f->checksum = hwt_get_le32(p + 12);
		f->decoded_len = hwt_get_le32(p + 16);
		f->nchunks = hwt_get_le32(p + 20);
		f->first_chunk = chunks;
		if (!f->nchunks || f->nchunks > ix->nchunks - chunks ||
		    f->decoded_len > HWT_SW_INDEX_FRAME_MAX)
			return bad(err, "a frame's chunks do not fit", i);
		chunks += f->nchunks;
		if ((rc = check_frame(f, i, zst, zst_n, file_at, err)))
			return rc;
		file_at += f->file_len;
	}
	if (chunks != ix->nchunks || file_at != zst_n)
		return bad(err, "its frames do not cover the trace", 0);
	return 0;
}

static int parse_chunks(struct hwt_sw_index *ix, const uint8_t *p,
			struct hwt_err *err)
{
	uint64_t decoded_at = 0;
	size_t cuts = 0;

	for (size_t fi = 0; fi < ix->nframes; fi++) {
		struct hwt_sw_index_frame *f = &ix->frames[fi];
		uint64_t in_frame = 0;

		f->decoded_off = decoded_at;
		for (size_t i = f->first_chunk; i < f->first_chunk + f->nchunks;
		     i++, p += CHUNK_BYTES) {
			struct hwt_sw_index_chunk *c = &ix->chunks[i];
			uint32_t ncuts = hwt_get_le32(p + 36);

			c->hdr.first_pc = hwt_get_le64(p);
			c->hdr.first_seq = hwt_get_le64(p + 8);
			c->hdr.last_pc = hwt_get_le64(p + 16);
			c->hdr.payload_size = hwt_get_le32(p + 24);
			c->hdr.insn_count = hwt_get_le32(p + 28);
			c->hdr.flags = hwt_get_le32(p + 32);
			if (c->hdr.flags ||
			    c->hdr.payload_size > HWT_SW_MAX_CHUNK_PAYLOAD ||
			    !c->hdr.insn_count ||
			    c->hdr.insn_count - 1 > c->hdr.payload_size)
				return bad(err, "a chunk header is impossible",
					   i);
			if (ncuts != (c->hdr.insn_count - 1) /
			    HWT_SW_INDEX_STRIDE || ncuts > ix->ncuts - cuts)
				return bad(err, "a chunk's restart points do "
					   "not fit its instructions", i);
			c->decoded_off = decoded_at + in_frame;
			c->frame = fi;
			c->first_cut = cuts;
			c->ncuts = ncuts;
			cuts += ncuts;
			in_frame += HWT_SW_CHUNK_HDR_SIZE +
				(uint64_t)c->hdr.payload_size;
		}
		if (in_frame != f->decoded_len)
			return bad(err, "a frame's chunks add up to another "
				   "length", fi);
		decoded_at += in_frame;
	}
	if (cuts != ix->ncuts || decoded_at != ix->decoded_size)
		return bad(err, "its chunks do not cover the trace", 0);
	return 0;
}

static int parse_cuts(struct hwt_sw_index *ix, const uint8_t *p,
		      struct hwt_err *err)
{
	for (size_t i = 0; i < ix->ncuts; i++, p += CUT_BYTES) {
		ix->cuts[i] = (struct hwt_sw_index_cut){
			.rec_off = hwt_get_le32(p), .rec_len = p[4],
			.async = p[5] == 1, .pc = hwt_get_le64(p + 8),
		};
		if (p[5] > 1 || p[6] || p[7])
			return bad(err, "a restart point has unknown bits", i);
	}
	for (size_t i = 0; i < ix->nchunks; i++) {
		const struct hwt_sw_index_chunk *c = &ix->chunks[i];
		uint64_t from = 1;    /* records start after the first pc */

		for (size_t k = 0; k < c->ncuts; k++) {
			const struct hwt_sw_index_cut *cut =
				&ix->cuts[c->first_cut + k];

			if (cut->rec_off < from || !cut->rec_len ||
			    cut->rec_len > HWT_SW_MAX_RECORD ||
			    (uint64_t)cut->rec_off + cut->rec_len >
			    c->hdr.payload_size)
				return bad(err, "restart points are out of "
					   "order or outside their chunk", i);
			from = (uint64_t)cut->rec_off + cut->rec_len;
		}
	}
	return 0;
}

static int parse_raw(const uint8_t *idx, size_t idx_n, const uint8_t *zst,
		     size_t zst_n, uint64_t decoded_size,
		     struct hwt_sw_index **out, struct hwt_err *err)
{
	size_t nframes, nchunks, ncuts, left;
	struct hwt_sw_index *ix;
	int rc;

	if (idx_n < HDR_BYTES || memcmp(idx, HWT_SW_INDEX_MAGIC, 4))
		return hwt_err_set(err, EINVAL, "not an hwt-sw trace index");
	if (hwt_get_le32(idx + 4) != HWT_SW_INDEX_VERSION ||
	    hwt_get_le32(idx + 28) != HWT_SW_INDEX_STRIDE)
		return hwt_err_set(err, EINVAL, "a trace index of version %u "
				   "with stride %u; this build reads version "
				   "%u with stride %u", hwt_get_le32(idx + 4),
				   hwt_get_le32(idx + 28),
				   HWT_SW_INDEX_VERSION, HWT_SW_INDEX_STRIDE);
	if (hwt_get_le64(idx + 8) != decoded_size)
		return bad(err, "it indexes a trace of another size", 0);
	nframes = hwt_get_le32(idx + 16);
	nchunks = hwt_get_le32(idx + 20);
	ncuts = hwt_get_le32(idx + 24);
	left = idx_n - HDR_BYTES;
	if (left / FRAME_BYTES < nframes ||
	    (left -= nframes * FRAME_BYTES) / CHUNK_BYTES < nchunks ||
	    left - nchunks * CHUNK_BYTES != ncuts * CUT_BYTES)
		return bad(err, "its length does not match its counts", 0);
	if (!(ix = calloc(1, sizeof(*ix))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	*ix = (struct hwt_sw_index){
		.decoded_size = decoded_size, .nframes = nframes,
		.nchunks = nchunks, .ncuts = ncuts,
		.frames = calloc(nframes ? nframes : 1, sizeof(*ix->frames)),
		.chunks = calloc(nchunks ? nchunks : 1, sizeof(*ix->chunks)),
		.cuts = calloc(ncuts ? ncuts : 1, sizeof(*ix->cuts)),
	};
	if (!ix->frames || !ix->chunks || !ix->cuts)
		rc = hwt_err_set(err, ENOMEM, "out of memory");
	else if (!(rc = parse_frames(ix, idx + HDR_BYTES, zst, zst_n, err)) &&
		 !(rc = parse_chunks(ix, idx + HDR_BYTES +
				     nframes * FRAME_BYTES, err)))
		rc = parse_cuts(ix, idx + HDR_BYTES + nframes * FRAME_BYTES +
				nchunks * CHUNK_BYTES, err);
	if (rc) {
		hwt_sw_index_free(ix);
		return rc;
	}
	*out = ix;
	return 0;
}

/* The largest index a trace of decoded bytes can have: a frame and a
 * chunk take at least a chunk header, a restart point
 * HWT_SW_INDEX_STRIDE records. */
static uint64_t index_bound(uint64_t decoded)
{
	return HDR_BYTES + decoded / HWT_SW_CHUNK_HDR_SIZE *
		(FRAME_BYTES + CHUNK_BYTES) +
		(decoded / HWT_SW_INDEX_STRIDE + 1) * CUT_BYTES;
}

int hwt_sw_index_parse(const uint8_t *idx, size_t idx_n, const uint8_t *zst,
		       size_t zst_n, uint64_t decoded_size,
		       struct hwt_sw_index **out, struct hwt_err *err)
{
	unsigned long long raw_n = ZSTD_getFrameContentSize(idx, idx_n);
	uint8_t *raw;
	size_t got;
	int rc;

	*out = NULL;
	if (raw_n == ZSTD_CONTENTSIZE_ERROR ||
	    raw_n == ZSTD_CONTENTSIZE_UNKNOWN ||
	    ZSTD_findFrameCompressedSize(idx, idx_n) != idx_n ||
	    !(idx_n > 4 && (idx[4] & ZSTD_FHD_CHECKSUM)))
		return hwt_err_set(err, EINVAL, "the trace's index is not one "
				   "checksummed zstd frame");
	if (decoded_size > HWT_BUNDLE_MAX_DECODED ||
	    raw_n > index_bound(decoded_size))
		return hwt_err_set(err, EINVAL, "the trace's index decodes to "
				   "%llu bytes, more than a %llu-byte trace "
				   "can need", raw_n,
				   (unsigned long long)decoded_size);
	if (!(raw = malloc(raw_n ? (size_t)raw_n : 1)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	got = ZSTD_decompress(raw, (size_t)raw_n, idx, idx_n);
	if (ZSTD_isError(got) || got != raw_n)
		rc = hwt_err_set(err, EINVAL, "the trace's index is damaged: "
				 "%s", ZSTD_isError(got) ?
				 ZSTD_getErrorName(got) : "short");
	else
		rc = parse_raw(raw, (size_t)raw_n, zst, zst_n, decoded_size,
			       out, err);
	free(raw);
	return rc;
}

int hwt_sw_index_frame_read(const struct hwt_sw_index *ix, const uint8_t *zst,
			    size_t i, uint8_t *buf, struct hwt_err *err)
{
	const struct hwt_sw_index_frame *f = &ix->frames[i];
	size_t got = ZSTD_decompress(buf, f->decoded_len, zst + f->file_off,
				     f->file_len);

	if (ZSTD_isError(got))
		return hwt_err_set(err, EIO, "frame %zu of the trace is "
				   "damaged: %s", i, ZSTD_getErrorName(got));
	if (got != f->decoded_len)
		goto differs;
	for (size_t k = f->first_chunk; k < f->first_chunk + f->nchunks; k++) {
		const struct hwt_sw_index_chunk *c = &ix->chunks[k];
		struct hwt_sw_chunk_hdr h;

		if (hwt_sw_chunk_hdr_unpack(buf + (c->decoded_off -
						   f->decoded_off),
					    HWT_SW_CHUNK_HDR_SIZE +
					    c->hdr.payload_size, &h, NULL) ||
		    h.payload_size != c->hdr.payload_size ||
		    h.first_pc != c->hdr.first_pc ||
		    h.first_seq != c->hdr.first_seq ||
		    h.last_pc != c->hdr.last_pc ||
		    h.insn_count != c->hdr.insn_count)
			goto differs;
	}
	return 0;
differs:
	return hwt_err_set(err, EIO, "frame %zu of the trace differs from the "
			   "trace's index", i);
}
