// SPDX-License-Identifier: BSD-2-Clause
/* ring.c - per-thread bounded ring of hwt-sw chunks (see ring.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "spill.h"

/* First allocation of the closed-chunk queue; it doubles up to capacity. */
#define QUEUE_INITIAL_ALLOC (64u << 10)

uint32_t hwt_sw_ring_chunk_payload_for(uint64_t capacity)
{
	/* Small rings get small chunks so one dropped chunk is not a large
	 * share of the history; large rings cap chunks at 16 KiB so dropping
	 * the oldest loses little and each chunk decodes quickly. */
	uint64_t payload = capacity / 16;

	if (payload > (16u << 10))
		payload = 16u << 10;
	if (payload < HWT_RING_MIN_CHUNK_PAYLOAD)
		payload = HWT_RING_MIN_CHUNK_PAYLOAD;
	return (uint32_t)payload;
}

int hwt_sw_ring_init(struct hwt_sw_ring *r, uint64_t capacity, uint32_t chunk_payload,
		  struct hwt_err *err)
{
	memset(r, 0, sizeof(*r));
	if (chunk_payload < HWT_RING_MIN_CHUNK_PAYLOAD ||
	    chunk_payload > HWT_SW_MAX_CHUNK_PAYLOAD)
		return hwt_err_set(err, EINVAL,
				   "chunk payload of %u bytes is outside [%u, %u]",
				   chunk_payload, HWT_RING_MIN_CHUNK_PAYLOAD,
				   HWT_SW_MAX_CHUNK_PAYLOAD);
	if (capacity < (uint64_t)HWT_SW_CHUNK_HDR_SIZE + chunk_payload ||
	    capacity > SIZE_MAX / 2)
		return hwt_err_set(err, EINVAL,
				   "trace buffer of %llu bytes cannot hold one "
				   "%u-byte chunk; use a larger buffer",
				   (unsigned long long)capacity,
				   HWT_SW_CHUNK_HDR_SIZE + chunk_payload);
	r->open = malloc(chunk_payload);
	if (!r->open)
		return hwt_err_set(err, ENOMEM,
				   "out of memory for a %u-byte trace chunk",
				   chunk_payload);
	r->capacity = r->max_capacity = capacity;
	r->chunk_payload = chunk_payload;
	return 0;
}

/* Copy out of / into the circular queue starting at a logical offset from
 * the head, wrapping at the end of the allocation. */
static void queue_read(const struct hwt_sw_ring *r, size_t at, void *dst,
		       size_t len)
{
	size_t pos = (r->queue_head + at) % r->queue_alloc;
	size_t first = r->queue_alloc - pos < len ? r->queue_alloc - pos : len;

	memcpy(dst, r->queue + pos, first);
	memcpy((uint8_t *)dst + first, r->queue, len - first);
}

static void queue_write(struct hwt_sw_ring *r, const void *src, size_t len)
{
	size_t pos = (r->queue_head + r->queue_used) % r->queue_alloc;
	size_t first = r->queue_alloc - pos < len ? r->queue_alloc - pos : len;

	memcpy(r->queue + pos, src, first);
	memcpy(r->queue, (const uint8_t *)src + first, len - first);
	r->queue_used += len;
}

static void drop_oldest_chunk(struct hwt_sw_ring *r)
{
	uint8_t raw[HWT_SW_CHUNK_HDR_SIZE];
	struct hwt_sw_chunk_hdr hdr;
	size_t bytes;

	queue_read(r, 0, raw, sizeof(raw));
	if (hwt_sw_chunk_hdr_unpack(raw, r->queue_used, &hdr, NULL) < 0) {
		/* Only this file writes the queue, so this means memory
		 * corruption; dropping everything keeps the ring consistent. */
		r->lost_bytes += r->queue_used;
		if (r->budget)
			r->budget->used -= r->queue_used;
		r->queue_head = r->queue_used = 0;
		return;
	}
	bytes = HWT_SW_CHUNK_HDR_SIZE + hdr.payload_size;
	if (r->budget)
		r->budget->used -= bytes;
	if (r->spill) {
		queue_read(r, 0, hwt_sw_spill_scratch(r->spill), bytes);
		hwt_sw_spill_chunk(r->spill, bytes);
	} else {
		r->lost_bytes += bytes;
		r->lost_insns += hdr.insn_count;
	}
	r->queue_head = (r->queue_head + bytes) % r->queue_alloc;
	r->queue_used -= bytes;
}

/* Keep queued chunks plus the open one within capacity. */
static void enforce_capacity(struct hwt_sw_ring *r)
{
	while (r->queue_used > 0 &&
	       r->queue_used + HWT_SW_CHUNK_HDR_SIZE + r->open_size > r->capacity)
		drop_oldest_chunk(r);
}

/* Make room for len more queued bytes; false when memory ran out and the
 * queue could not be shrunk enough either. */
static bool queue_reserve(struct hwt_sw_ring *r, size_t len)
{
	size_t want, grown;
	uint8_t *bigger;

	if (r->queue_alloc - r->queue_used >= len)
		return true;
	want = r->queue_used + len;
	grown = r->queue_alloc * 2 > QUEUE_INITIAL_ALLOC ? r->queue_alloc * 2
							  : QUEUE_INITIAL_ALLOC;
	if (grown < want)
		grown = want;
	if (grown > r->capacity)
		grown = (size_t)r->capacity;
	/* realloc, not a copy: a large block grows in place (mremap), so
	 * growing never holds the old and the new queue at once. */
	bigger = grown >= want ? realloc(r->queue, grown) : NULL;
	if (bigger) {
		size_t old = r->queue_alloc, tail = old - r->queue_head;

		/* Wrapped: the older part, from head to the old end, moves
		 * to the new end; the newer part stays at the start. */
		if (r->queue_used > tail) {
			memmove(bigger + grown - tail, bigger + r->queue_head,
				tail);
			r->queue_head = grown - tail;
		}
		r->queue = bigger;
		r->queue_alloc = grown;
		return true;
	}
	/* Out of memory: keep recording into what we have. */
	while (r->queue_used > 0 && r->queue_alloc - r->queue_used < len)
		drop_oldest_chunk(r);
	return r->queue_alloc - r->queue_used >= len;
}

static void close_open_chunk(struct hwt_sw_ring *r)
{
	uint8_t raw[HWT_SW_CHUNK_HDR_SIZE];
	size_t bytes = HWT_SW_CHUNK_HDR_SIZE + r->open_size;

	r->open_hdr.payload_size = r->open_size;
	if (!queue_reserve(r, bytes)) {
		r->lost_bytes += bytes;
		r->lost_insns += r->open_hdr.insn_count;
		return;
	}
	hwt_sw_chunk_hdr_pack(&r->open_hdr, raw);
	queue_write(r, raw, sizeof(raw));
	queue_write(r, r->open, r->open_size);
	if (r->budget && (r->budget->used += bytes) > r->budget->limit &&
	    !r->budget->in_over) {
		r->budget->in_over = true;
		r->budget->over(r->budget->ctx);
		r->budget->in_over = false;
	}
}

static void open_chunk(struct hwt_sw_ring *r, uint64_t pc)
{
	memset(&r->open_hdr, 0, sizeof(r->open_hdr));
	r->open_hdr.first_pc = pc;
	r->open_hdr.last_pc = pc;
	r->open_hdr.first_seq = r->insn_total;
	r->open_hdr.insn_count = 1;
	r->open_size = 0;
	r->insn_total++;
	enforce_capacity(r);
}

static void reverse(uint8_t *p, size_t n)
{
	size_t i = 0, j = n;

	/* Eight bytes from each end at a time: a window is tens of MiB. */
	while (j - i >= 16) {
		uint64_t a, b;

		memcpy(&a, p + i, 8);
		memcpy(&b, p + j - 8, 8);
		a = __builtin_bswap64(a);
		b = __builtin_bswap64(b);
		memcpy(p + i, &b, 8);
		memcpy(p + j - 8, &a, 8);
		i += 8;
		j -= 8;
	}
	for (; i + 1 < j; i++, j--) {
		uint8_t c = p[i];

		p[i] = p[j - 1];
		p[j - 1] = c;
	}
}

/* Move the queue's chunks to its start in place (a rotation by three
 * reversals): no second copy of a large ring. */
static void rotate_to_start(struct hwt_sw_ring *r)
{
	if (r->queue_alloc && r->queue_head) {
		reverse(r->queue, r->queue_head);
		reverse(r->queue + r->queue_head, r->queue_alloc - r->queue_head);
		reverse(r->queue, r->queue_alloc);
	}
	r->queue_head = 0;
}

void hwt_sw_ring_set_capacity(struct hwt_sw_ring *r, uint64_t capacity)
{
	uint64_t least = 2u * (HWT_SW_CHUNK_HDR_SIZE + r->chunk_payload);
	uint8_t *smaller;

	if (capacity < least)
		capacity = least;
	if (capacity > r->max_capacity)
		capacity = r->max_capacity;
	if (capacity >= r->capacity) {
		r->capacity = capacity;   /* the queue grows on demand */
		return;
	}
	r->capacity = capacity;
	enforce_capacity(r);
	/* Shared windows move a little at every share (valgrind backend):
	 * memory goes back only when an eighth more than the window is
	 * held, or every small move would rotate and shrink the queue and
	 * then grow it again. */
	if (r->queue_alloc <= capacity + capacity / 8)
		return;
	/* Give the memory back, in place: the queue never grows past
	 * capacity from now on. */
	rotate_to_start(r);
	smaller = realloc(r->queue, r->queue_used ? r->queue_used : 1);
	if (!smaller)
		return;
	r->queue = smaller;
	r->queue_alloc = r->queue_used;
}

void hwt_sw_ring_start(struct hwt_sw_ring *r, uint64_t pc)
{
	r->started = true;
	open_chunk(r, pc);
}

void hwt_sw_ring_gap(struct hwt_sw_ring *r, uint64_t next_pc, uint64_t lost)
{
	close_open_chunk(r);
	r->insn_total += lost;
	open_chunk(r, next_pc);
}

void hwt_sw_ring_skip(struct hwt_sw_ring *r, uint64_t next_pc, uint64_t lost,
		      uint64_t bytes)
{
	r->lost_insns += lost;
	r->lost_bytes += bytes;
	if (r->started) {
		hwt_sw_ring_gap(r, next_pc, lost);
		return;
	}
	r->insn_total += lost;
	hwt_sw_ring_start(r, next_pc);
}

bool hwt_sw_ring_steps(struct hwt_sw_ring *r, const uint8_t *rec, size_t len,
		       uint32_t n, uint64_t last_pc)
{
	/* Leave the room hwt_sw_ring_step keeps for signal deliveries. */
	if (!r->started || len + 3u * HWT_RING_RECORD_ROOM >
	    r->chunk_payload - r->open_size)
		return false;
	memcpy(r->open + r->open_size, rec, len);
	r->open_size += (uint32_t)len;
	r->open_hdr.last_pc = last_pc;
	r->open_hdr.insn_count += n;
	r->insn_total += n;
	if (r->queue_used + HWT_SW_CHUNK_HDR_SIZE + r->open_size > r->capacity)
		enforce_capacity(r);
	return true;
}

void hwt_sw_ring_step(struct hwt_sw_ring *r, uint64_t next_pc, bool async)
{
	uint32_t room = r->chunk_payload - r->open_size;

	/* The transfer into a chunk's first instruction is implicit and the
	 * header has no place to mark it asynchronous, so ordinary steps
	 * close the chunk early enough to leave room for two signal
	 * deliveries (a handler entry and a nested one right after it). */
	if (room < (async ? 1u : 3u) * HWT_RING_RECORD_ROOM) {
		close_open_chunk(r);
		open_chunk(r, next_pc);
		return;
	}
	r->open_size += (uint32_t)hwt_sw_encode_step(r->open_hdr.last_pc,
						      next_pc, async,
						      r->open + r->open_size);
	r->open_hdr.last_pc = next_pc;
	r->open_hdr.insn_count++;
	r->insn_total++;
	if (r->queue_used + HWT_SW_CHUNK_HDR_SIZE + r->open_size > r->capacity)
		enforce_capacity(r);
}

/* Every kept chunk, the open one closed on the copy only, oldest first,
 * into a new contiguous buffer that replaces r->sealed. */
static int lay_out(struct hwt_sw_ring *r, struct hwt_err *err)
{
	size_t size;
	uint8_t *out;

	size = r->queue_used;
	if (r->started)
		size += HWT_SW_CHUNK_HDR_SIZE + r->open_size;
	/* +1: a thread that never ran still gets a valid, empty buffer. */
	out = malloc(size + 1);
	if (!out)
		return hwt_err_set(err, ENOMEM,
				   "out of memory laying out a %zu-byte trace",
				   size);
	if (r->queue_used)
		queue_read(r, 0, out, r->queue_used);
	if (r->started) {
		struct hwt_sw_chunk_hdr hdr = r->open_hdr;

		hdr.payload_size = r->open_size;
		hwt_sw_chunk_hdr_pack(&hdr, out + r->queue_used);
		memcpy(out + r->queue_used + HWT_SW_CHUNK_HDR_SIZE, r->open,
		       r->open_size);
	}
	free(r->sealed);
	r->sealed = out;
	r->sealed_size = size;
	return 0;
}

int hwt_sw_ring_snapshot(struct hwt_sw_ring *r, struct hwt_err *err)
{
	if (!r->open)
		return 0;   /* sealed for good: the layout is final */
	return lay_out(r, err);
}

/* The queue's chunks moved to its start in place, then the open chunk
 * after them: the layout of lay_out in the queue's own memory, so
 * sealing a large ring takes no second copy of it. */
static int lay_out_in_place(struct hwt_sw_ring *r, struct hwt_err *err)
{
	size_t size = r->queue_used, open = 0;
	uint8_t *out;

	rotate_to_start(r);
	if (r->started)
		open = HWT_SW_CHUNK_HDR_SIZE + r->open_size;
	out = realloc(r->queue, size + open + 1);
	if (!out)
		return hwt_err_set(err, ENOMEM, "out of memory laying out a "
				   "%zu-byte trace", size + open);
	if (r->started) {
		struct hwt_sw_chunk_hdr hdr = r->open_hdr;

		hdr.payload_size = r->open_size;
		hwt_sw_chunk_hdr_pack(&hdr, out + size);
		memcpy(out + size + HWT_SW_CHUNK_HDR_SIZE, r->open,
		       r->open_size);
	}
	free(r->sealed);
	r->sealed = out;
	r->sealed_size = size + open;
	r->queue = NULL;
	return 0;
}

int hwt_sw_ring_seal(struct hwt_sw_ring *r, struct hwt_err *err)
{
	int rc;

	if (!r->open)
		return 0;
	if ((rc = lay_out_in_place(r, err)) < 0)
		return rc;
	free(r->queue);
	free(r->open);
	if (r->budget)
		r->budget->used -= r->queue_used;
	r->budget = NULL;   /* done growing: the window is shared no more */
	r->queue = r->open = NULL;
	r->queue_alloc = r->queue_head = r->queue_used = 0;
	return 0;
}

void hwt_sw_ring_free(struct hwt_sw_ring *r)
{
	if (r->budget)
		r->budget->used -= r->queue_used;
	hwt_sw_spill_free(r->spill);
	free(r->queue);
	free(r->open);
	free(r->sealed);
	memset(r, 0, sizeof(*r));
}
