// SPDX-License-Identifier: BSD-2-Clause
/* aux.c - read a perf ring buffer shared with the kernel: the sideband
 * records of its data area and the trace bytes of its AUX area.
 *
 * The kernel writes data and then publishes data_head/aux_head; we read
 * the head with acquire so the bytes before it are visible, and publish
 * data_tail/aux_tail with release once we are done with the bytes, so the
 * kernel never overwrites what we still read. Every head the kernel gives
 * is checked against the area sizes: a ring that claims more than it can
 * hold is refused, never read past. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

/* perf_event_header.size is a u16: no record is larger. */
#define RECORD_MAX 65536u

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int hwt_perf_ring_init(struct hwt_perf_ring *r, void *base, size_t base_len,
		       void *aux, size_t aux_len, bool overwrite,
		       struct hwt_err *err)
{
	struct perf_event_mmap_page *meta = base;
	uint64_t off, size;

	memset(r, 0, sizeof(*r));
	if (base_len < sizeof(*meta))
		return hwt_err_set(err, EINVAL, "perf ring of %zu bytes has no "
				   "room for its metadata page", base_len);
	off = meta->data_offset;
	size = meta->data_size;
	/* Kernels before 4.1 leave both 0: the data area follows the page. */
	if (off == 0 && size == 0) {
		off = (uint64_t)sysconf(_SC_PAGESIZE);
		size = base_len > off ? base_len - off : 0;
	}
	if (!pow2(size) || off < sizeof(*meta) || off > base_len ||
	    size > base_len - off)
		return hwt_err_set(err, EINVAL, "perf ring data area (offset "
				   "%llu, %llu bytes) does not fit the %zu "
				   "bytes mapped or is not a power of two",
				   (unsigned long long)off,
				   (unsigned long long)size, base_len);
	r->meta = meta;
	r->data = (uint8_t *)base + off;
	r->data_size = size;
	r->overwrite = overwrite;
	if (!aux)
		return 0;
	if (meta->aux_size != aux_len || !pow2(aux_len))
		return hwt_err_set(err, EINVAL, "perf AUX area of %zu bytes "
				   "does not match aux_size %llu or is not a "
				   "power of two", aux_len,
				   (unsigned long long)meta->aux_size);
	r->aux = aux;
	r->aux_size = aux_len;
	return 0;
}

/* Copy n bytes starting at ring position pos (wrapping) into out. */
static void ring_copy(const uint8_t *ring, uint64_t size, uint64_t pos,
		      uint8_t *out, uint64_t n)
{
	uint64_t at = pos & (size - 1), first = size - at < n ? size - at : n;

	memcpy(out, ring + at, first);
	memcpy(out + first, ring, n - first);
}

static int record_aux(const uint8_t *rec, size_t size,
		      struct hwt_perf_stats *st, struct hwt_err *err)
{
	uint64_t flags;

	/* header, u64 aux_offset, u64 aux_size, u64 flags */
	if (size < sizeof(struct perf_event_header) + 24)
		return hwt_err_set(err, EBADMSG, "perf AUX record of %zu bytes "
				   "is too short", size);
	memcpy(&flags, rec + sizeof(struct perf_event_header) + 16, 8);
	st->aux_records++;
	if (flags & PERF_AUX_FLAG_TRUNCATED)
		st->truncated++;
	if (flags & PERF_AUX_FLAG_PARTIAL)
		st->partial++;
	if (flags & PERF_AUX_FLAG_COLLISION)
		st->collisions++;
	return 0;
}

static int record_lost(const uint8_t *rec, size_t size,
		       struct hwt_perf_stats *st, struct hwt_err *err)
{
	uint64_t lost;

	/* header, u64 id, u64 lost */
	if (size < sizeof(struct perf_event_header) + 16)
		return hwt_err_set(err, EBADMSG, "perf LOST record of %zu "
				   "bytes is too short", size);
	memcpy(&lost, rec + sizeof(struct perf_event_header) + 8, 8);
	st->lost_records += lost;
	return 0;
}

/* header, u32 pid, tid, u64 addr, len, pgoff, 24 bytes of device/inode
 * or build-id, u32 prot, flags, then the NUL-terminated file name. */
#define MMAP2_FIXED 64u

static int record_mmap2(uint8_t *rec, size_t size, hwt_perf_mmap_fn fn,
			void *arg, struct hwt_err *err)
{
	const size_t hdr = sizeof(struct perf_event_header);
	struct hwt_perf_mmap m;
	uint32_t pid, prot;
	size_t name_max;

	if (size < hdr + MMAP2_FIXED + 1)
		return hwt_err_set(err, EBADMSG, "perf MMAP2 record of %zu "
				   "bytes is too short", size);
	name_max = size - hdr - MMAP2_FIXED;
	if (!memchr(rec + hdr + MMAP2_FIXED, '\0', name_max))
		return hwt_err_set(err, EBADMSG, "perf MMAP2 record's file "
				   "name is not terminated within the record");
	memcpy(&prot, rec + hdr + 56, 4);
	if (!(prot & 4 /* PROT_EXEC */) || !fn)
		return 0;
	memcpy(&pid, rec + hdr, 4);
	memcpy(&m.addr, rec + hdr + 8, 8);
	memcpy(&m.len, rec + hdr + 16, 8);
	memcpy(&m.pgoff, rec + hdr + 24, 8);
	m.pid = (pid_t)pid;
	m.path = (const char *)rec + hdr + MMAP2_FIXED;
	return fn(arg, &m, err);
}

int hwt_perf_ring_records(struct hwt_perf_ring *r, struct hwt_perf_stats *st,
			  hwt_perf_mmap_fn fn, void *arg, struct hwt_err *err)
{
	static _Thread_local uint8_t rec[RECORD_MAX];
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail, pos = tail;
	int rc = 0;

	if (head - tail > r->data_size) {
		rc = hwt_err_set(err, EBADMSG, "perf data area claims %llu "
				 "unread bytes but holds %llu",
				 (unsigned long long)(head - tail),
				 (unsigned long long)r->data_size);
		goto out;
	}
	while (pos != head) {
		struct perf_event_header h;
		uint64_t avail = head - pos;

		if (avail < sizeof(h)) {
			rc = hwt_err_set(err, EBADMSG, "perf data area ends in "
					 "the middle of a record header");
			break;
		}
		ring_copy(r->data, r->data_size, pos, (uint8_t *)&h, sizeof(h));
		/* Records are 8-byte aligned, so is every size the kernel
		 * writes; anything else means we lost the record stream. */
		if (h.size < sizeof(h) || h.size % 8 || h.size > avail) {
			rc = hwt_err_set(err, EBADMSG, "bad perf record at ring "
					 "offset %llu: type %u, size %u with "
					 "%llu bytes left", (unsigned long long)
					 (pos & (r->data_size - 1)), h.type,
					 h.size, (unsigned long long)avail);
			break;
		}
		ring_copy(r->data, r->data_size, pos, rec, h.size);
		if (h.type == PERF_RECORD_AUX)
			rc = record_aux(rec, h.size, st, err);
		else if (h.type == PERF_RECORD_LOST)
			rc = record_lost(rec, h.size, st, err);
		else if (h.type == PERF_RECORD_MMAP2)
			rc = record_mmap2(rec, h.size, fn, arg, err);
		if (rc < 0)
			break;
		pos += h.size;
	}
out:
	/* A broken stream cannot be resynchronised: skip all of it. */
	__atomic_store_n(&r->meta->data_tail, head, __ATOMIC_RELEASE);
	return rc;
}

int hwt_perf_buf_append(struct hwt_perf_buf *b, const uint8_t *p, size_t n,
			struct hwt_err *err)
{
	size_t g = b->granule ? b->granule : 1;
	size_t max = b->max - b->max % g;

	/* More than fits: only the newest whole granules of p. */
	if (n > max) {
		size_t skip = n - max;

		skip += (g - skip % g) % g;
		b->dropped += skip + b->len;
		b->len = 0;
		p += skip;
		n -= skip;
	}
	if (b->len + n > max) {
		size_t cut = b->len + n - max;

		cut += (g - cut % g) % g;
		if (cut > b->len)
			cut = b->len;
		memmove(b->data, b->data + cut, b->len - cut);
		b->len -= cut;
		b->dropped += cut;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		uint8_t *d;

		while (cap < b->len + n)
			cap *= 2;
		if (cap > max)
			cap = max;
		d = realloc(b->data, cap);
		if (!d)
			return hwt_err_set(err, ENOMEM, "out of memory for %zu "
					   "bytes of trace", cap);
		b->data = d;
		b->cap = cap;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void hwt_perf_buf_free(struct hwt_perf_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* Append n bytes of the AUX area from ring position pos. */
static int aux_append(struct hwt_perf_ring *r, uint64_t pos, uint64_t n,
		      struct hwt_perf_buf *out, struct hwt_err *err)
{
	uint64_t at = pos & (r->aux_size - 1);
	uint64_t first = r->aux_size - at < n ? r->aux_size - at : n;
	int rc;

	if ((rc = hwt_perf_buf_append(out, r->aux + at, first, err)) < 0)
		return rc;
	return hwt_perf_buf_append(out, r->aux, n - first, err);
}

int hwt_perf_aux_drain(struct hwt_perf_ring *r, struct hwt_perf_buf *out,
		       struct hwt_err *err)
{
	uint64_t head, tail;
	int rc;

	if (!r->aux || r->overwrite)
		return hwt_err_set(err, EINVAL, "perf ring has no AUX area "
				   "mapped for reading and writing");
	head = __atomic_load_n(&r->meta->aux_head, __ATOMIC_ACQUIRE);
	tail = r->meta->aux_tail;
	if (head - tail > r->aux_size) {
		/* The kernel never runs ahead of aux_tail in this mode. */
		__atomic_store_n(&r->meta->aux_tail, head, __ATOMIC_RELEASE);
		out->dropped += head - tail;
		return hwt_err_set(err, EBADMSG, "perf AUX area claims %llu "
				   "unread bytes but holds %llu",
				   (unsigned long long)(head - tail),
				   (unsigned long long)r->aux_size);
	}
	rc = aux_append(r, tail, head - tail, out, err);
	__atomic_store_n(&r->meta->aux_tail, head, __ATOMIC_RELEASE);
	return rc;
}

static bool all_zero(const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

int hwt_perf_aux_snapshot(struct hwt_perf_ring *r, struct hwt_perf_buf *out,
			  struct hwt_err *err)
{
	uint64_t head, at;
	bool wrapped;
	size_t g = out->granule ? out->granule : 1;
	uint64_t n, skip;

	if (!r->aux || !r->overwrite)
		return hwt_err_set(err, EINVAL, "perf ring has no AUX area "
				   "mapped for overwriting");
	head = __atomic_load_n(&r->meta->aux_head, __ATOMIC_ACQUIRE);
	at = head & (r->aux_size - 1);
	/* Some PMUs count aux_head up forever, others keep it an offset in
	 * the area: past aux_size, or trace beyond the write position of a
	 * zero-filled area, both mean the hardware went around. */
	wrapped = head >= r->aux_size ||
		  !all_zero(r->aux + at, r->aux_size - at);
	n = wrapped ? r->aux_size : at;
	/* Records end at the write position: cut whole ones at the front. */
	skip = n % g;
	if (wrapped && head > r->aux_size)
		out->dropped += head - r->aux_size;
	out->dropped += skip;
	return aux_append(r, (wrapped ? at : 0) + skip, n - skip, out, err);
}
