// SPDX-License-Identifier: BSD-2-Clause
/* sw_index.c - reading the index of a compressed hwt-sw trace (written
 * by sw_pack.c; layout in sw_index_layout.h and docs/swtrace.md) and the
 * frames it names.
 *
 * An index is never trusted: it must decode (its own frame's checksum),
 * match the decoded size trace.json gives, and name every frame of the
 * trace file at its offset with its length, decoded length and checksum;
 * the chunk headers of a frame are compared with it when the frame is
 * decompressed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "hwt-common.h"
#include "sw_index_layout.h"

/* The chunks an index may name: plain ones and those of runs. */
#define KNOWN HWT_SW_CHUNK_RUNS_FLAGS

void hwt_sw_index_free(struct hwt_sw_index *ix)
{
	if (!ix)
		return;
	free(ix->frames);
	free(ix->chunks);
	free(ix->cuts);
	free(ix);
}

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
	if (!(z[4] & HWT_ZSTD_FHD_CHECKSUM) ||
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

	for (size_t i = 0; i < ix->nframes; i++, p += HWT_SWX_FRAME_BYTES) {
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
		     i++, p += HWT_SWX_CHUNK_BYTES) {
			struct hwt_sw_index_chunk *c = &ix->chunks[i];
			uint32_t ncuts = hwt_get_le32(p + 36);

			c->hdr.first_pc = hwt_get_le64(p);
			c->hdr.first_seq = hwt_get_le64(p + 8);
			c->hdr.last_pc = hwt_get_le64(p + 16);
			c->hdr.payload_size = hwt_get_le32(p + 24);
			c->hdr.insn_count = hwt_get_le32(p + 28);
			c->hdr.flags = hwt_get_le32(p + 32);
			if (hwt_sw_chunk_hdr_check(&c->hdr, KNOWN, NULL))
				return bad(err, "a chunk header is impossible",
					   i);
			if (ncuts > ix->ncuts - cuts ||
			    ((c->hdr.flags & HWT_SW_CHUNK_RUNS) ?
			     ncuts > c->hdr.insn_count / HWT_SW_INDEX_STRIDE :
			     ncuts != (c->hdr.flags & (HWT_SW_CHUNK_TABLE |
						       HWT_SW_CHUNK_CUTS) ? 0 :
				       (c->hdr.insn_count - 1) /
				       HWT_SW_INDEX_STRIDE)))
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
		      size_t cut_bytes, struct hwt_err *err)
{
	for (size_t i = 0; i < ix->ncuts; i++, p += cut_bytes) {
		ix->cuts[i] = (struct hwt_sw_index_cut){
			.rec_off = hwt_get_le32(p), .rec_len = p[4],
			.async = p[5] & HWT_SWX_CUT_ASYNC,
			.prev_known = p[5] & HWT_SWX_CUT_PREV,
			.pc = hwt_get_le64(p + 8),
			.insns = cut_bytes > 16 ? hwt_get_le32(p + 16) : 0,
		};
		if (p[5] & ~(HWT_SWX_CUT_ASYNC | HWT_SWX_CUT_PREV) || p[6] ||
		    p[7] || (cut_bytes > 16 && hwt_get_le32(p + 20)))
			return bad(err, "a restart point has unknown bits", i);
	}
	for (size_t i = 0; i < ix->nchunks; i++) {
		const struct hwt_sw_index_chunk *c = &ix->chunks[i];
		bool runs = c->hdr.flags & HWT_SW_CHUNK_RUNS;
		/* Records start after the first pc, runs at 0. */
		uint64_t from = runs ? 0 : 1, insns = 0;

		for (size_t k = 0; k < c->ncuts; k++) {
			struct hwt_sw_index_cut *cut =
				&ix->cuts[c->first_cut + k];

			/* Version 1: every stride'th instruction. */
			if (cut_bytes == HWT_SWX_CUT_BYTES_V1)
				cut->insns = (uint32_t)((k + 1) *
							HWT_SW_INDEX_STRIDE);
			if (runs ? cut->rec_off < from || cut->rec_len ||
				   cut->async || cut->insns <= insns ||
				   cut->insns >= c->hdr.insn_count ||
				   cut->rec_off >= c->hdr.payload_size :
			    cut->rec_off < from || !cut->rec_len ||
			    cut->rec_len > HWT_SW_MAX_RECORD ||
			    cut->prev_known ||
			    cut->insns != (k + 1) * HWT_SW_INDEX_STRIDE ||
			    (uint64_t)cut->rec_off + cut->rec_len >
			    c->hdr.payload_size)
				return bad(err, "restart points are out of "
					   "order or outside their chunk", i);
			from = (uint64_t)cut->rec_off + (runs ? 1 :
							 cut->rec_len);
			insns = cut->insns;
		}
	}
	return 0;
}

static int parse_raw(const uint8_t *idx, size_t idx_n, const uint8_t *zst,
		     size_t zst_n, uint64_t decoded_size,
		     struct hwt_sw_index **out, struct hwt_err *err)
{
	size_t nframes, nchunks, ncuts, left, cut_bytes;
	struct hwt_sw_index *ix;
	uint32_t version;
	int rc;

	if (idx_n < HWT_SWX_HDR_BYTES || memcmp(idx, HWT_SW_INDEX_MAGIC, 4))
		return hwt_err_set(err, EINVAL, "not an hwt-sw trace index");
	version = hwt_get_le32(idx + 4);
	cut_bytes = version == 1 ? HWT_SWX_CUT_BYTES_V1 : HWT_SWX_CUT_BYTES;
	if ((version != 1 && version != HWT_SW_INDEX_VERSION) ||
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
	left = idx_n - HWT_SWX_HDR_BYTES;
	if (left / HWT_SWX_FRAME_BYTES < nframes ||
	    (left -= nframes * HWT_SWX_FRAME_BYTES) / HWT_SWX_CHUNK_BYTES < nchunks ||
	    left - nchunks * HWT_SWX_CHUNK_BYTES != ncuts * cut_bytes)
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
	else if (!(rc = parse_frames(ix, idx + HWT_SWX_HDR_BYTES, zst, zst_n, err)) &&
		 !(rc = parse_chunks(ix, idx + HWT_SWX_HDR_BYTES +
				     nframes * HWT_SWX_FRAME_BYTES, err)))
		rc = parse_cuts(ix, idx + HWT_SWX_HDR_BYTES + nframes * HWT_SWX_FRAME_BYTES +
				nchunks * HWT_SWX_CHUNK_BYTES, cut_bytes, err);
	if (rc) {
		hwt_sw_index_free(ix);
		return rc;
	}
	*out = ix;
	return 0;
}

/* The largest index a trace of decoded bytes can have: a frame and a
 * chunk take at least a chunk header, a restart point a byte of runs
 * (HWT_SW_INDEX_STRIDE records of plain steps). */
static uint64_t index_bound(uint64_t decoded)
{
	return HWT_SWX_HDR_BYTES + decoded / HWT_SW_CHUNK_HDR_SIZE *
		(HWT_SWX_FRAME_BYTES + HWT_SWX_CHUNK_BYTES) +
		(decoded + 1) * HWT_SWX_CUT_BYTES;
}

int hwt_sw_index_parse(const uint8_t *idx, size_t idx_n, const uint8_t *zst,
		       size_t zst_n, uint64_t decoded_size,
		       struct hwt_sw_index **out, struct hwt_err *err)
{
	uint8_t *raw;
	size_t raw_n;
	int rc;

	*out = NULL;
	if (decoded_size > HWT_BUNDLE_MAX_DECODED)
		return hwt_err_set(err, EINVAL, "the trace's index is for a "
				   "trace larger than 16 GiB");
	if ((rc = hwt_zstd_unpack(idx, idx_n, index_bound(decoded_size), &raw,
				  &raw_n, err)))
		return hwt_err_prefix(err, "the trace's index: ");
	rc = parse_raw(raw, raw_n, zst, zst_n, decoded_size, out, err);
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

		if (hwt_sw_chunk_hdr_unpack_flags(buf + (c->decoded_off -
							 f->decoded_off),
						  HWT_SW_CHUNK_HDR_SIZE +
						  c->hdr.payload_size, KNOWN,
						  &h, NULL) ||
		    h.flags != c->hdr.flags ||
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
