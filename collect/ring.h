/* SPDX-License-Identifier: BSD-2-Clause */
/* ring.h - one thread's bounded trace ring of hwt-sw chunks.
 *
 * The recorder appends one step record per executed instruction to an open
 * chunk. A full chunk is closed (its header filled in) and queued, and the
 * next instruction opens a new chunk. When the queued chunks plus the open
 * one would exceed the ring's capacity, the oldest whole chunks are dropped
 * and counted as lost (or, with a spill, written to disk), so what is
 * kept is always the newest history and every kept chunk decodes on its
 * own.
 */
#ifndef HWT_RING_H
#define HWT_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hwt-common.h"

/* Bytes of payload one record may take, async prefix included. */
#define HWT_RING_RECORD_ROOM (HWT_SW_MAX_RECORD + 1u)
#define HWT_RING_MIN_CHUNK_PAYLOAD (4u * HWT_RING_RECORD_ROOM)

/* Bytes many rings share (the valgrind backend's window for all threads):
 * the closed chunks of every ring count, and a ring that takes the total
 * past limit calls over() to share the window anew at once, instead of
 * at the next look, so the rings together never hold much more than
 * limit however fast one of them grows. */
struct hwt_sw_ring_budget {
	uint64_t limit, used;
	void (*over)(void *ctx);
	void *ctx;
	bool in_over;
};

struct hwt_sw_ring {
	uint64_t capacity;        /* bytes kept: chunk headers + payloads */
	uint64_t max_capacity;    /* the capacity it was made with */
	uint32_t chunk_payload;   /* payload bytes of one chunk at most */

	/* Closed chunks, oldest at queue_head, as a circular byte queue. It
	 * grows on demand up to capacity so idle threads cost little. */
	uint8_t *queue;
	size_t queue_alloc, queue_head, queue_used;

	/* The open chunk: header fields kept unpacked until it closes. */
	uint8_t *open;
	uint32_t open_size;
	struct hwt_sw_chunk_hdr open_hdr;
	bool started;             /* the first instruction has been seen */

	uint64_t insn_total;      /* instructions recorded, lost ones included */
	uint64_t lost_bytes;
	uint64_t lost_insns;

	/* The budget it shares with other rings, or NULL. */
	struct hwt_sw_ring_budget *budget;

	/* hwtrace record --whole: the chunks the ring drops go here
	 * instead of being lost (spill.h); owned, freed with the ring. */
	struct hwt_sw_spill *spill;

	/* After hwt_sw_ring_seal or hwt_sw_ring_snapshot: every chunk, oldest
	 * first, contiguous. */
	uint8_t *sealed;
	size_t sealed_size;
};

/* Prepare an empty ring. capacity must hold at least one chunk header and
 * chunk_payload, and chunk_payload must be within
 * [HWT_RING_MIN_CHUNK_PAYLOAD, HWT_SW_MAX_CHUNK_PAYLOAD]. */
int hwt_sw_ring_init(struct hwt_sw_ring *r, uint64_t capacity, uint32_t chunk_payload,
		  struct hwt_err *err);

/* Chunk payload size suited to a ring of this capacity. */
uint32_t hwt_sw_ring_chunk_payload_for(uint64_t capacity);

/* Keep at most capacity bytes from now on (never less than two chunks,
 * never more than the ring was made with): the oldest chunks beyond it
 * are dropped and counted as lost, and the memory they took is given
 * back once the ring holds an eighth more than capacity; a larger
 * capacity lets the ring grow again. */
void hwt_sw_ring_set_capacity(struct hwt_sw_ring *r, uint64_t capacity);

/* Bytes the ring holds now: closed chunks and the open one. */
static inline uint64_t hwt_sw_ring_used(const struct hwt_sw_ring *r)
{
	return r->queue_used + HWT_SW_CHUNK_HDR_SIZE + r->open_size;
}

/* The thread's first instruction. */
void hwt_sw_ring_start(struct hwt_sw_ring *r, uint64_t pc);

/* The thread moved from the last recorded instruction to next_pc; async
 * marks a signal delivery. Never fails: memory shortage only shortens the
 * kept history (counted as lost). */
void hwt_sw_ring_step(struct hwt_sw_ring *r, uint64_t next_pc, bool async);

/* The thread went on to next_pc after `lost` instructions nobody saw:
 * the open chunk ends and one begins at next_pc, its first_seq that many
 * instructions later (a gap, docs/swtrace.md). */
void hwt_sw_ring_gap(struct hwt_sw_ring *r, uint64_t next_pc, uint64_t lost);

/* The thread went on to next_pc (its first instruction, or one after
 * the last recorded) after `lost` instructions the recorder dropped
 * before they reached the ring (bytes of trace they took): counted as
 * lost, and a gap where the ring had started. */
void hwt_sw_ring_skip(struct hwt_sw_ring *r, uint64_t next_pc, uint64_t lost,
		      uint64_t bytes);

/* n more instructions, ordinary (not asynchronous) steps already encoded
 * as hwt-sw records (len bytes, hwt_sw_encode_step's), the last at
 * last_pc: copied as they are when the open chunk has room for them;
 * false (nothing recorded) when it does not, or before the start: then
 * step them one by one. */
bool hwt_sw_ring_steps(struct hwt_sw_ring *r, const uint8_t *rec, size_t len,
		       uint32_t n, uint64_t last_pc);

/* Address of the last recorded instruction (valid once started). */
static inline uint64_t hwt_sw_ring_last_pc(const struct hwt_sw_ring *r)
{
	return r->open_hdr.last_pc;
}

/* Close the open chunk and lay every kept chunk out contiguously, oldest
 * first, in r->sealed. The ring records nothing more afterwards. */
int hwt_sw_ring_seal(struct hwt_sw_ring *r, struct hwt_err *err);

/* Lay the history so far out in r->sealed like hwt_sw_ring_seal, but keep
 * recording: the buffer is replaced by the next snapshot or seal. */
int hwt_sw_ring_snapshot(struct hwt_sw_ring *r, struct hwt_err *err);

void hwt_sw_ring_free(struct hwt_sw_ring *r);

#endif
