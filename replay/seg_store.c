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
 * Layout, little-endian, decompressed:
 *   header   48 bytes: "HWTG", u32 version, u64 trace size,
 *            u64 fingerprint, u32 segments, u32 reasons, u32 reason bytes,
 *            u32 0, char format[8] (NUL-padded)
 *   segments 56 bytes each: u64 off, u64 len, u64 pc, u32 items,
 *            u32 flags, u64 tsc_begin, u64 tsc_end, u32 reason (0: none,
 *            else 1 + its number), u32 0
 *   reasons  NUL-terminated strings
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "replay-int.h"

#define MAGIC "HWTG"
#define VERSION 1u
#define HDR 48u
#define SEG 56u
#define FORMAT_MAX 8u
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

int hwt_segments_save(const struct hwt_segments *segs, const char *format,
		      const uint8_t *trace, size_t size, uint8_t **out,
		      size_t *out_n, struct hwt_err *err)
{
	size_t raw_n = HDR + segs->n * SEG, rbytes = 0, nreasons = 0;
	uint8_t *raw, *p, *r;
	int rc;

	*out = NULL;
	if (segs->priv || strlen(format) > FORMAT_MAX)
		return hwt_err_set(err, ENOTSUP, "this trace's index holds "
				   "decoded data; it is not kept");
	for (size_t i = 0; i < segs->n; i++)
		if (segs->v[i].reason) {
			rbytes += strlen(segs->v[i].reason) + 1;
			nreasons++;
		}
	if (!(raw = calloc(1, raw_n + rbytes)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	memcpy(raw, MAGIC, 4);
	hwt_put_le32(raw + 4, VERSION);
	hwt_put_le64(raw + 8, size);
	hwt_put_le64(raw + 16, fingerprint(trace, size));
	hwt_put_le32(raw + 24, (uint32_t)segs->n);
	hwt_put_le32(raw + 28, (uint32_t)nreasons);
	hwt_put_le32(raw + 32, (uint32_t)rbytes);
	memcpy(raw + 40, format, strlen(format));
	p = raw + HDR;
	r = raw + raw_n;
	nreasons = 0;
	for (size_t i = 0; i < segs->n; i++, p += SEG) {
		const struct hwt_segment *s = &segs->v[i];

		hwt_put_le64(p, s->off);
		hwt_put_le64(p + 8, s->len);
		hwt_put_le64(p + 16, s->pc);
		hwt_put_le32(p + 24, s->nitems);
		hwt_put_le32(p + 28, s->flags);
		hwt_put_le64(p + 32, s->own.pt.tsc_begin);
		hwt_put_le64(p + 40, s->own.pt.tsc_end);
		if (s->reason) {
			size_t len = strlen(s->reason) + 1;

			hwt_put_le32(p + 48, (uint32_t)++nreasons);
			memcpy(r, s->reason, len);
			r += len;
		}
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

static int parse(const uint8_t *raw, size_t n, const char *format,
		 const uint8_t *trace, size_t size, struct hwt_segments *segs,
		 struct hwt_err *err)
{
	char fmt[FORMAT_MAX + 1] = "";
	size_t nsegs, nreasons, rbytes;
	const char **reasons = NULL;
	const uint8_t *p;
	int rc;

	if (n < HDR || memcmp(raw, MAGIC, 4) ||
	    hwt_get_le32(raw + 4) != VERSION)
		return bad(err, "not a segment index this build reads");
	memcpy(fmt, raw + 40, FORMAT_MAX);
	if (strcmp(fmt, format))
		return bad(err, "it indexes another format");
	if (hwt_get_le64(raw + 8) != size ||
	    hwt_get_le64(raw + 16) != fingerprint(trace, size))
		return bad(err, "the trace is not the one it indexed");
	nsegs = hwt_get_le32(raw + 24);
	nreasons = hwt_get_le32(raw + 28);
	rbytes = hwt_get_le32(raw + 32);
	if ((n - HDR) / SEG < nsegs || n - HDR - nsegs * SEG != rbytes ||
	    nreasons > rbytes)
		return bad(err, "its length does not match its counts");
	if ((rc = load_reasons(raw + HDR + nsegs * SEG, rbytes, nreasons,
			       segs, &reasons, err)))
		return rc;
	p = raw + HDR;
	for (size_t i = 0; i < nsegs && !rc; i++, p += SEG) {
		struct hwt_segment s = {
			.off = hwt_get_le64(p), .len = hwt_get_le64(p + 8),
			.pc = hwt_get_le64(p + 16),
			.nitems = hwt_get_le32(p + 24),
			.flags = hwt_get_le32(p + 28),
			.own.pt = { hwt_get_le64(p + 32), hwt_get_le64(p + 40) },
		};
		uint32_t reason = hwt_get_le32(p + 48);

		if (s.off > size || s.len > size - s.off ||
		    reason > nreasons || hwt_get_le32(p + 52))
			rc = bad(err, "a segment lies outside the trace");
		else {
			s.reason = reason ? reasons[reason - 1] : NULL;
			rc = hwt_segments_push(segs, &s);
			if (rc)
				rc = hwt_err_set(err, ENOMEM, "out of memory");
		}
	}
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
