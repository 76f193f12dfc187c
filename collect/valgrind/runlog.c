// SPDX-License-Identifier: BSD-2-Clause
/* runlog.c - a thread's newest superblock runs as the tool wrote them
 * (runlog.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "runlog.h"

/* Chunks are mapped, not malloc'd: a log's memory goes back to the
 * system the moment a chunk is dropped or expanded, whatever else the
 * recorder allocates meanwhile (the rings the expansion fills). */
static struct hwt_vg_log_chunk *chunk_map(uint32_t alloc)
{
	void *p = mmap(NULL, sizeof(struct hwt_vg_log_chunk) + alloc,
		       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void chunk_unmap(struct hwt_vg_log_chunk *c)
{
	free(c->cuts);
	munmap(c, sizeof(*c) + c->alloc);
}

void hwt_vg_log_add_cut(struct hwt_vg_log_chunk *c, uint32_t off,
			uint64_t insns, uint64_t pc)
{
	if (insns > UINT32_MAX)
		return;
	if (c->ncuts == c->cuts_cap) {
		uint32_t cap = c->cuts_cap ? 2 * c->cuts_cap : 64;
		struct hwt_vg_log_cut *v = realloc(c->cuts, cap * sizeof(*v));

		if (!v)
			return;
		c->cuts = v;
		c->cuts_cap = cap;
	}
	c->cuts[c->ncuts++] = (struct hwt_vg_log_cut){
		.off = off, .insns = (uint32_t)insns, .pc = pc,
	};
	c->cut_at = insns;
}

/* A chunk closes at a sixteenth of the capacity (some eighth of the
 * log's bytes), within these: dropping one loses little of the window,
 * and a small window still has several. */
#define CHUNK_MIN (4u << 10)
/* Kept as it is, a chunk is a RUNS chunk's payload (at most
 * HWT_SW_MAX_CHUNK_PAYLOAD): it closes with room left for the run's
 * exit and marks that stay with it. */
#define CHUNK_MAX ((1u << 20) - (4u << 10))

void hwt_vg_log_init(struct hwt_vg_runlog *l, uint64_t capacity,
		     struct hwt_sw_ring_budget *budget)
{
	uint64_t chunk = capacity / 16;

	*l = (struct hwt_vg_runlog){
		.capacity = capacity,
		.max_capacity = capacity,
		.chunk_bytes = (uint32_t)(chunk < CHUNK_MIN ? CHUNK_MIN :
					  chunk > CHUNK_MAX ? CHUNK_MAX : chunk),
		.budget = budget,
	};
}

/* The oldest chunk leaves the log (not the open one, last). */
static struct hwt_vg_log_chunk *unlink_oldest(struct hwt_vg_runlog *l)
{
	struct hwt_vg_log_chunk *c = l->chunks[l->head];

	l->weight -= c->weight;
	if (l->budget)
		l->budget->used -= c->weight;
	l->head = (l->head + 1) % l->alloc;
	l->nchunks--;
	return c;
}

/* The oldest chunk goes; the log keeps one of its size for the next it
 * opens: a flight recorder drops a chunk for every chunk it opens, and
 * mapping each afresh cost its every page a fault and a clearing (a
 * tenth of the reader's time on a python loop). */
static void pop_oldest(struct hwt_vg_runlog *l)
{
	struct hwt_vg_log_chunk *c = unlink_oldest(l);

	if (!l->spare && c->alloc == l->chunk_bytes + 4u * HWT_VG_LOG_MAX_ITEM) {
		free(c->cuts);
		c->cuts = NULL;
		l->spare = c;
		return;
	}
	chunk_unmap(c);
}

/* The oldest chunk leaves the window: lost, or held to be spilled. */
static void drop_oldest(struct hwt_vg_runlog *l)
{
	struct hwt_vg_log_chunk *c = l->chunks[l->head];
	struct hwt_vg_log_chunk **held = l->held;

	if (l->hold && l->nheld == l->held_cap &&
	    (held = realloc(l->held, (l->held_cap ? 2 * l->held_cap : 8) *
			    sizeof(*held)))) {
		l->held = held;
		l->held_cap = l->held_cap ? 2 * l->held_cap : 8;
	}
	if (!l->hold || l->nheld == l->held_cap) {
		l->lost_insns += c->insns;
		l->lost_bytes += c->used;
		pop_oldest(l);
		return;
	}
	l->held[l->nheld++] = unlink_oldest(l);
}

struct hwt_vg_log_chunk *hwt_vg_log_take_held(struct hwt_vg_runlog *l)
{
	struct hwt_vg_log_chunk *c;

	if (!l->nheld)
		return NULL;
	c = l->held[0];
	memmove(l->held, l->held + 1, --l->nheld * sizeof(*l->held));
	return c;
}

void hwt_vg_log_chunk_free(struct hwt_vg_log_chunk *c)
{
	chunk_unmap(c);
}

/* Drop the oldest closed chunks while the log weighs more than its
 * capacity. */
static void enforce_capacity(struct hwt_vg_runlog *l)
{
	while (l->nchunks > 1 && hwt_vg_log_weight(l) > l->capacity)
		drop_oldest(l);
}

void hwt_vg_log_set_capacity(struct hwt_vg_runlog *l, uint64_t capacity)
{
	uint64_t least = 4u * (uint64_t)l->chunk_bytes;

	if (capacity < least)
		capacity = least;
	if (capacity > l->max_capacity)
		capacity = l->max_capacity;
	l->capacity = capacity;
	enforce_capacity(l);
}

/* The open chunk is closed: its bytes count in the log and the window. */
static void close_open(struct hwt_vg_runlog *l)
{
	struct hwt_vg_log_chunk *c;

	if (!l->nchunks)
		return;
	c = hwt_vg_log_chunk(l, l->nchunks - 1);
	c->weight = hwt_vg_log_weight_of(c->insns, c->used);
	l->weight += c->weight;
	if (l->budget && (l->budget->used += c->weight) > l->budget->limit &&
	    !l->budget->in_over) {
		l->budget->in_over = true;
		l->budget->over(l->budget->ctx);
		l->budget->in_over = false;
	}
}

static bool reserve_slot(struct hwt_vg_runlog *l)
{
	struct hwt_vg_log_chunk **grown;
	size_t alloc;

	if (l->nchunks < l->alloc)
		return true;
	alloc = l->alloc ? 2 * l->alloc : 16;
	if (!(grown = malloc(alloc * sizeof(*grown))))
		return false;
	for (size_t i = 0; i < l->nchunks; i++)
		grown[i] = hwt_vg_log_chunk(l, i);
	free(l->chunks);
	l->chunks = grown;
	l->alloc = alloc;
	l->head = 0;
	return true;
}

struct hwt_vg_log_chunk *hwt_vg_log_open(struct hwt_vg_runlog *l, bool start,
					 bool prev_known, uint64_t prev_pc)
{
	struct hwt_vg_log_chunk *c = l->nchunks ?
		hwt_vg_log_chunk(l, l->nchunks - 1) : NULL;
	uint32_t alloc = l->chunk_bytes + 4u * HWT_VG_LOG_MAX_ITEM;

	if (c && !(start && c->used >= l->chunk_bytes))
		return c;
	if (!c && !start)
		return NULL;   /* an exit or mark of a run nobody kept */
	close_open(l);
	enforce_capacity(l);
	if (!reserve_slot(l) ||
	    !(c = l->spare ? l->spare : chunk_map(alloc))) {
		l->failed = true;
		return NULL;
	}
	l->spare = NULL;
	*c = (struct hwt_vg_log_chunk){ .prev_pc = prev_pc,
					.prev_known = prev_known,
					.alloc = alloc };
	l->chunks[(l->head + l->nchunks) % l->alloc] = c;
	l->nchunks++;
	return c;
}

bool hwt_vg_log_grow(struct hwt_vg_runlog *l, struct hwt_vg_log_chunk **c)
{
	struct hwt_vg_log_chunk *grown;
	uint32_t alloc = 2 * (*c)->alloc;

	if (alloc < (*c)->alloc || !(grown = chunk_map(alloc))) {
		l->failed = true;
		return false;
	}
	memcpy(grown, *c, sizeof(**c) + (*c)->used);
	grown->alloc = alloc;
	(*c)->cuts = NULL;        /* grown has them now */
	chunk_unmap(*c);
	l->chunks[(l->head + l->nchunks - 1) % l->alloc] = grown;
	*c = grown;
	return true;
}

void hwt_vg_log_release_oldest(struct hwt_vg_runlog *l)
{
	if (l->nchunks > 1) {
		pop_oldest(l);
	} else if (l->nchunks) {
		/* The open chunk, never counted. */
		chunk_unmap(l->chunks[l->head]);
		l->nchunks = l->head = 0;
	}
}

void hwt_vg_log_clear(struct hwt_vg_runlog *l)
{
	while (l->nchunks)
		hwt_vg_log_release_oldest(l);
	l->lost_insns = l->lost_bytes = 0;
}

void hwt_vg_log_free(struct hwt_vg_runlog *l)
{
	if (l->spare)
		chunk_unmap(l->spare);
	l->spare = NULL;
	for (size_t i = 0; i < l->nheld; i++)
		chunk_unmap(l->held[i]);
	free(l->held);
	l->held = NULL;
	l->nheld = l->held_cap = 0;
	hwt_vg_log_clear(l);
	free(l->chunks);
	l->chunks = NULL;
	l->alloc = 0;
}
