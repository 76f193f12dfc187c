// SPDX-License-Identifier: BSD-2-Clause
/* seg_store.c - a trace's segment index kept beside it.
 *
 * Indexing an Intel PT or BTS trace decodes all of it to count the items
 * of each segment: 4.8 s for 52 M instructions of PT, at every open.
 * `hwtrace index` keeps the segments in TRACE.hwtidx (one zstd frame with
 * its checksum) and a history opened later reads them instead. The file
 * names the format, the trace's size and a fingerprint of its first and
 * last 64 KiB; one that does not match, or does not parse, is not used
 * (the trace is indexed as without it), and decoding checks every
 * segment's item count against what the file says.
 *
 * A CoreSight index holds the blocks OpenCSD decoded (the segments count
 * blocks, not trace bytes: decode_etm.c), so they are kept too (version
 * 2): opening then runs no decoder at all. Every kept block is checked
 * as it is read, and the blocks of each segment must add up to its items.
 * The index says nothing of the image: a kept index of a trace whose
 * program changed is used as it is, as for Intel PT.
 *
 * Layout, little-endian, decompressed:
 *   header   48 bytes: "HWTG", u32 version (1, or 2 with blocks),
 *            u64 trace size, u64 fingerprint, u32 segments, u32 reasons,
 *            u32 reason bytes, u32 blocks (version 1: 0),
 *            char format[8] (NUL-padded; version 2: format[16], the
 *            header 56 bytes)
 *   segments 56 bytes each: u64 off, u64 len, u64 pc, u32 items,
 *            u32 flags, u64 tsc_begin, u64 tsc_end, u32 reason (0: none,
 *            else 1 + its number), u32 0
 *   blocks   (version 2) 48 bytes each: u64 begin, u64 end, u64
 *            timestamp, u64 ptwrite, u32 count, u32 flags, u32 isa,
 *            u32 reason
 *   reasons  NUL-terminated strings, the segments' then the blocks'
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "replay-int.h"

#define MAGIC "HWTG"
#define VERSION 1u
#define VERSION_BLOCKS 2u
#define HDR 48u
#define HDR_BLOCKS 56u
#define SEG 56u
#define BLK 48u
#define BLOCK_FLAGS (HWT_BLOCK_GAP | HWT_BLOCK_ASYNC | HWT_BLOCK_PTWRITE)
#define FORMAT_MAX 8u
#define FORMAT_MAX_BLOCKS 16u
#define EDGE (64u << 10)

/* FNV-1a over the first and last EDGE bytes and the size. */
static uint64_t fingerprint(const uint8_t *t, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	size_t head = n < EDGE ? n : EDGE, tail = n - head < EDGE ?
		n - head : EDGE;

	for (size_t i = 0; i < head; i++)
		h = (h ^ t[i]) * 0x100000001b3ull;
	for (size_t i = n - tail; i < n; i++)
		h = (h ^ t[i]) * 0x100000001b3ull;
	return h;
}

/* reason, if any, appended at *r and its number (1 + how many came
 * before) put in field. */
static void put_reason(uint8_t *field, const char *reason, uint8_t **r,
		       size_t *nreasons)
{
	size_t len;

	if (!reason)
		return;
	len = strlen(reason) + 1;
	hwt_put_le32(field, (uint32_t)++*nreasons);
	memcpy(*r, reason, len);
	*r += len;
}

int hwt_segments_save(const struct hwt_segments *segs, const char *format,
		      const uint8_t *trace, size_t size, uint8_t **out,
		      size_t *out_n, struct hwt_err *err)
{
	const struct hwt_blocks *blocks = segs->priv_blocks ? segs->priv : NULL;
	size_t nblocks = blocks ? blocks->n : 0;
	size_t hdr = blocks ? HDR_BLOCKS : HDR;
	size_t raw_n = hdr + segs->n * SEG + nblocks * BLK, rbytes = 0;
	size_t nreasons = 0;
	uint8_t *raw, *p, *r;
	int rc;

	*out = NULL;
	if (segs->priv && !blocks)
		return hwt_err_set(err, ENOTSUP, "this trace's index holds "
				   "decoded data; it is not kept");
	if (strlen(format) > (blocks ? FORMAT_MAX_BLOCKS : FORMAT_MAX))
		return hwt_err_set(err, EINVAL, "format name '%s' too long "
				   "for a kept index", format);
	for (size_t i = 0; i < segs->n; i++)
		if (segs->v[i].reason) {
			rbytes += strlen(segs->v[i].reason) + 1;
			nreasons++;
		}
	for (size_t i = 0; i < nblocks; i++)
		if (blocks->v[i].reason) {
			rbytes += strlen(blocks->v[i].reason) + 1;
			nreasons++;
		}
	if (!(raw = calloc(1, raw_n + rbytes)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	memcpy(raw, MAGIC, 4);
	hwt_put_le32(raw + 4, blocks ? VERSION_BLOCKS : VERSION);
	hwt_put_le64(raw + 8, size);
	hwt_put_le64(raw + 16, fingerprint(trace, size));
	hwt_put_le32(raw + 24, (uint32_t)segs->n);
	hwt_put_le32(raw + 28, (uint32_t)nreasons);
	hwt_put_le32(raw + 32, (uint32_t)rbytes);
	hwt_put_le32(raw + 36, (uint32_t)nblocks);
	memcpy(raw + 40, format, strlen(format));
	p = raw + hdr;
	r = raw + raw_n;
	nreasons = 0;
	for (size_t i = 0; i < segs->n; i++, p += SEG) {
		const struct hwt_segment *s = &segs->v[i];

		hwt_put_le64(p, s->off);
		hwt_put_le64(p + 8, s->len);
		hwt_put_le64(p + 16, s->pc);
		hwt_put_le32(p + 24, s->nitems);
		hwt_put_le32(p + 28, s->flags);
		if (!blocks) {      /* else own points into the blocks */
			hwt_put_le64(p + 32, s->own.pt.tsc_begin);
			hwt_put_le64(p + 40, s->own.pt.tsc_end);
		}
		put_reason(p + 48, s->reason, &r, &nreasons);
	}
	for (size_t i = 0; i < nblocks; i++, p += BLK) {
		const struct hwt_block *b = &blocks->v[i];

		hwt_put_le64(p, b->begin);
		hwt_put_le64(p + 8, b->end);
		hwt_put_le64(p + 16, b->timestamp);
		hwt_put_le64(p + 24, b->ptwrite);
		hwt_put_le32(p + 32, b->count);
		hwt_put_le32(p + 36, b->flags);
		hwt_put_le32(p + 40, (uint32_t)b->isa);
		put_reason(p + 44, b->reason, &r, &nreasons);
	}
	rc = hwt_zstd_pack(raw, raw_n + rbytes, out, out_n, err);
	free(raw);
	return rc;
}

static int bad(struct hwt_err *err, const char *what)
{
	return hwt_err_set(err, EINVAL, "the trace's kept index is stale or "
			   "damaged: %s", what);
}

/* The reasons of raw (rbytes at r): a pointer to each, kept in segs. */
static int load_reasons(const uint8_t *r, size_t rbytes, size_t nreasons,
			struct hwt_segments *segs, const char ***out,
			struct hwt_err *err)
{
	const char **v = calloc(nreasons ? nreasons : 1, sizeof(*v));
	size_t at = 0;

	if (!v)
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < nreasons; i++) {
		const uint8_t *end = memchr(r + at, 0, rbytes - at);

		if (at >= rbytes || !end) {
			free(v);
			return bad(err, "its reasons run past their bytes");
		}
		if (!(v[i] = hwt_segments_reason(segs, "%s",
						 (const char *)r + at))) {
			free(v);
			return hwt_err_set(err, ENOMEM, "out of memory");
		}
		at = (size_t)(end - r) + 1;
	}
	*out = v;
	return 0;
}

/* The kept blocks at p (version 2) into segs->priv, each checked. */
static int load_blocks(const uint8_t *p, size_t nblocks,
		       const char **reasons, size_t nreasons,
		       struct hwt_segments *segs, struct hwt_err *err)
{
	struct hwt_blocks *b = calloc(1, sizeof(*b));

	if (!b || !(b->v = calloc(nblocks ? nblocks : 1, sizeof(*b->v)))) {
		free(b);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	b->cap = nblocks ? nblocks : 1;
	segs->priv = b;
	segs->priv_free = hwt_blocks_priv_free;
	segs->priv_blocks = true;
	segs->priv_bytes = b->cap * sizeof(*b->v);
	for (size_t i = 0; i < nblocks; i++, p += BLK) {
		struct hwt_block k = {
			.begin = hwt_get_le64(p), .end = hwt_get_le64(p + 8),
			.timestamp = hwt_get_le64(p + 16),
			.ptwrite = hwt_get_le64(p + 24),
			.count = hwt_get_le32(p + 32),
			.flags = hwt_get_le32(p + 36),
		};
		uint32_t isa = hwt_get_le32(p + 40), reason = hwt_get_le32(p + 44);
		bool gap = k.flags & HWT_BLOCK_GAP;

		if (k.count == 0 || (k.flags & ~BLOCK_FLAGS) ||
		    isa > HWT_ISA_X86_32 || reason > nreasons ||
		    (gap && k.count != 1) || (!gap && k.end < k.begin))
			return bad(err, "a block out of range");
		k.isa = (enum hwt_isa)isa;
		k.reason = reason ? reasons[reason - 1] : NULL;
		b->v[b->n++] = k;
	}
	return 0;
}

/* Version 2: segment s counts the kept blocks [off, off + len), which
 * follow on from the segment before (at) and add up to its items. */
static int check_block_segment(const struct hwt_segments *segs,
			       const struct hwt_segment *s, uint64_t *at,
			       struct hwt_err *err)
{
	const struct hwt_blocks *b = segs->priv;
	uint64_t items = 0;

	if (s->off != *at || s->len == 0 || s->len > b->n - s->off)
		return bad(err, "a segment lies outside the blocks");
	for (uint64_t i = s->off; i < s->off + s->len; i++)
		items += b->v[i].count;
	if (items != s->nitems)
		return bad(err, "a segment's blocks do not add up to its "
			   "items");
	*at = s->off + s->len;
	return 0;
}

static int parse(const uint8_t *raw, size_t n, const char *format,
		 const uint8_t *trace, size_t size, struct hwt_segments *segs,
		 struct hwt_err *err)
{
	char fmt[FORMAT_MAX_BLOCKS + 1] = "";
	size_t nsegs, nreasons, rbytes, nblocks, hdr;
	const char **reasons = NULL;
	const uint8_t *p;
	uint64_t at = 0;
	uint32_t version;
	int rc;

	if (n < HDR || memcmp(raw, MAGIC, 4) ||
	    ((version = hwt_get_le32(raw + 4)) != VERSION &&
	     version != VERSION_BLOCKS))
		return bad(err, "not a segment index this build reads");
	hdr = version == VERSION_BLOCKS ? HDR_BLOCKS : HDR;
	if (n < hdr)
		return bad(err, "its length does not match its counts");
	memcpy(fmt, raw + 40, hdr - 40);
	if (strcmp(fmt, format))
		return bad(err, "it indexes another format");
	if (hwt_get_le64(raw + 8) != size ||
	    hwt_get_le64(raw + 16) != fingerprint(trace, size))
		return bad(err, "the trace is not the one it indexed");
	nsegs = hwt_get_le32(raw + 24);
	nreasons = hwt_get_le32(raw + 28);
	rbytes = hwt_get_le32(raw + 32);
	nblocks = version == VERSION_BLOCKS ? hwt_get_le32(raw + 36) : 0;
	if ((n - hdr) / SEG < nsegs ||
	    (n - hdr - nsegs * SEG) / BLK < nblocks ||
	    n - hdr - nsegs * SEG - nblocks * BLK != rbytes ||
	    nreasons > rbytes || (version == VERSION_BLOCKS && !nblocks))
		return bad(err, "its length does not match its counts");
	if ((rc = load_reasons(raw + hdr + nsegs * SEG + nblocks * BLK,
			       rbytes, nreasons, segs, &reasons, err)))
		return rc;
	if (nblocks && (rc = load_blocks(raw + hdr + nsegs * SEG, nblocks,
					 reasons, nreasons, segs, err))) {
		free(reasons);
		return rc;
	}
	p = raw + hdr;
	for (size_t i = 0; i < nsegs && !rc; i++, p += SEG) {
		struct hwt_segment s = {
			.off = hwt_get_le64(p), .len = hwt_get_le64(p + 8),
			.pc = hwt_get_le64(p + 16),
			.nitems = hwt_get_le32(p + 24),
			.flags = hwt_get_le32(p + 28),
			.own.pt = { hwt_get_le64(p + 32), hwt_get_le64(p + 40) },
		};
		uint32_t reason = hwt_get_le32(p + 48);

		if (reason > nreasons || hwt_get_le32(p + 52))
			rc = bad(err, "a segment out of range");
		else if (nblocks)
			rc = check_block_segment(segs, &s, &at, err);
		else if (s.off > size || s.len > size - s.off)
			rc = bad(err, "a segment lies outside the trace");
		if (!rc) {
			if (nblocks)
				s.own.blocks = ((const struct hwt_blocks *)
						segs->priv)->v;
			s.reason = reason ? reasons[reason - 1] : NULL;
			rc = hwt_segments_push(segs, &s);
			if (rc)
				rc = hwt_err_set(err, ENOMEM, "out of memory");
		}
	}
	if (!rc && at != nblocks)
		rc = bad(err, "blocks that no segment holds");
	free(reasons);
	return rc;
}

int hwt_segments_load(const uint8_t *in, size_t n, const char *format,
		      const uint8_t *trace, size_t size,
		      struct hwt_segments *segs, struct hwt_err *err)
{
	uint8_t *raw;
	size_t raw_n;
	int rc;

	/* A segment holds an item at least, an item a byte of trace, a
	 * reason at most a few KB. */
	if ((rc = hwt_zstd_unpack(in, n, HDR + (size + 1) *
				  (uint64_t)(SEG + 4096), &raw, &raw_n, err)))
		return hwt_err_prefix(err, "the trace's kept index: ");
	rc = parse(raw, raw_n, format, trace, size, segs, err);
	free(raw);
	return rc;
}
