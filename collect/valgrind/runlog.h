/* SPDX-License-Identifier: BSD-2-Clause */
/* runlog.h - one thread's newest superblock runs, kept as the tool wrote
 * them (vgstream.h's EXEC and EXIT items, a few bytes a superblock) and
 * turned into hwt-sw only when the recording ends (stream.c).
 *
 * A flight recorder drops most of what it sees: a program that runs ten
 * times its window loses nine tenths. Turning every run into hwt-sw step
 * records as it is read (a byte or more an instruction) costs more than
 * the program's own run under Valgrind; keeping the tool's items costs a
 * copy of a few bytes, and only the window left at the end is expanded.
 *
 * The log is a queue of chunks, oldest first. A chunk starts at a
 * superblock run (never between a run and its exit) and says what came
 * before it (the last instruction run), so the oldest chunks can be
 * dropped whole, counted as lost, and the rest still expand exactly.
 */
#ifndef HWT_VG_RUNLOG_H
#define HWT_VG_RUNLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/* A log counts in the window (capacity, budget) for what it will take
 * expanded: its instructions at 5/4 byte each (hwt-sw takes 1.1 to 1.2
 * on real programs, a byte a step within a superblock and a few a jump),
 * or its own bytes where those are more. So the window keeps as many
 * instructions as it would hold in hwt-sw, in a fraction of the memory,
 * and the rings the logs expand into at the end stay within it. */
static inline uint64_t hwt_vg_log_weight_of(uint64_t insns, uint64_t bytes)
{
	uint64_t w = insns + insns / 4;

	return w > bytes ? w : bytes;
}

/* Where a walk over a chunk's items may begin (a RUNS chunk's restart
 * point, hwt-common.h): the item's byte, the chunk's instructions
 * before it and the last of them. */
struct hwt_vg_log_cut {
	uint32_t off, insns;
	uint64_t pc;
};

struct hwt_vg_log_chunk {
	uint64_t insns;           /* instructions its runs executed */
	uint64_t weight;          /* its weight, fixed when it closed */
	uint64_t prev_pc;         /* the instruction run before its first */
	bool prev_known;          /* false: nothing ran before it */
	/* Restart points found as runs were logged, one at the first run
	 * at or past every HWT_SW_INDEX_STRIDE instructions from the last
	 * (cut_at); a packer then need not walk the items for them. */
	struct hwt_vg_log_cut *cuts;
	uint32_t ncuts, cuts_cap;
	uint64_t cut_at;
	uint32_t used, alloc;     /* bytes of items, bytes allocated */
	uint8_t items[];
};

/* A restart point of c before the item at its byte off, after insns
 * instructions, the last at pc. Without memory for it there is none:
 * the segments around it are longer. */
void hwt_vg_log_add_cut(struct hwt_vg_log_chunk *c, uint32_t off,
			uint64_t insns, uint64_t pc);

/* Whether a run beginning in c after insns instructions is where a
 * restart point goes. */
static inline bool hwt_vg_log_cut_due(const struct hwt_vg_log_chunk *c,
				      uint64_t insns)
{
	return insns - c->cut_at >= HWT_SW_INDEX_STRIDE;
}

/* The same as a count: a run beginning once that many instructions more
 * than c's insns ran is where the next restart point goes (a loop adding
 * runs counts them before it adds them to c). */
static inline uint64_t hwt_vg_log_cut_in(const struct hwt_vg_log_chunk *c)
{
	uint64_t due = c->cut_at + HWT_SW_INDEX_STRIDE;

	return due > c->insns ? due - c->insns : 0;
}

struct hwt_vg_runlog {
	uint64_t capacity;        /* weight kept at most (ring bytes) */
	uint64_t max_capacity;    /* the capacity it was made with */
	uint32_t chunk_bytes;     /* a chunk closes at this many bytes */
	/* The chunks, oldest at chunks[head], a circular array. */
	struct hwt_vg_log_chunk **chunks;
	size_t nchunks, head, alloc;
	uint64_t weight;          /* of the closed chunks */
	/* Dropped to stay within capacity, not yet told to the ring: the
	 * expansion starts after them. */
	uint64_t lost_insns, lost_bytes;
	/* Shared with every thread's log and ring (the window), or NULL. */
	struct hwt_sw_ring_budget *budget;
	bool failed;              /* memory ran out: runs are dropped */
	/* A dropped chunk kept mapped for the next one to open, or NULL. */
	struct hwt_vg_log_chunk *spare;
	/* --whole: the chunks dropped from the window are held here, oldest
	 * first, not lost, until the reader spills them (keep.h); their
	 * instructions count in spilled_insns once spilled. */
	bool hold;
	struct hwt_vg_log_chunk **held;
	size_t nheld, held_cap;
	uint64_t spilled_insns;
};

/* An empty log keeping at most capacity (its weight, in ring bytes). */
void hwt_vg_log_init(struct hwt_vg_runlog *l, uint64_t capacity,
		     struct hwt_sw_ring_budget *budget);

/* Keep at most capacity from now on (at least two chunks, at most what
 * the log was made with); the oldest chunks beyond it are dropped. */
void hwt_vg_log_set_capacity(struct hwt_vg_runlog *l, uint64_t capacity);

/* The chunk items go to. A superblock run (start) opens a new chunk when
 * the open one is full, its header saying what ran before; NULL when
 * memory ran out (the run is not kept, the log says so by failed). */
struct hwt_vg_log_chunk *hwt_vg_log_open(struct hwt_vg_runlog *l, bool start,
					 bool prev_known, uint64_t prev_pc);

/* Append len bytes (at most HWT_VG_LOG_MAX_ITEM) to the open chunk. */
#define HWT_VG_LOG_MAX_ITEM 24u
static inline bool hwt_vg_log_put(struct hwt_vg_log_chunk *c,
				  const uint8_t *p, size_t len)
{
	if (c->used + len > c->alloc)
		return false;
	for (size_t i = 0; i < len; i++)
		c->items[c->used + i] = p[i];
	c->used += (uint32_t)len;
	return true;
}

/* Room for another item in c, growing it (a chunk's items past its
 * size: a run's exit and marks stay with it); false when memory ran
 * out. *c may move. */
bool hwt_vg_log_grow(struct hwt_vg_runlog *l, struct hwt_vg_log_chunk **c);

/* Chunk i, oldest first (i < nchunks). */
static inline struct hwt_vg_log_chunk *
hwt_vg_log_chunk(const struct hwt_vg_runlog *l, size_t i)
{
	return l->chunks[(l->head + i) % l->alloc];
}

/* The log's weight now: its closed chunks' and the open one's. */
static inline uint64_t hwt_vg_log_weight(const struct hwt_vg_runlog *l)
{
	const struct hwt_vg_log_chunk *open =
		l->nchunks ? hwt_vg_log_chunk(l, l->nchunks - 1) : NULL;

	return l->weight + (open ? hwt_vg_log_weight_of(open->insns,
							 open->used) : 0);
}

/* The chunk held longest (hold), taken from the log: the caller spills
 * it and gives it back with hwt_vg_log_chunk_free. NULL: none held. */
struct hwt_vg_log_chunk *hwt_vg_log_take_held(struct hwt_vg_runlog *l);
void hwt_vg_log_chunk_free(struct hwt_vg_log_chunk *c);

/* The oldest chunk goes, not counted lost (it was expanded). */
void hwt_vg_log_release_oldest(struct hwt_vg_runlog *l);

/* Forget every chunk and the loss count (they were expanded). */
void hwt_vg_log_clear(struct hwt_vg_runlog *l);

void hwt_vg_log_free(struct hwt_vg_runlog *l);

#endif
