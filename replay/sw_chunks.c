// SPDX-License-Identifier: BSD-2-Clause
/* sw_chunks.c - an indexed hwt-sw trace read frame by frame.
 *
 * A history opened on a bundle whose compressed hwt-sw trace has an
 * index (common/sw_index.c) maps the trace file and decompresses a frame
 * of chunks only when one of its segments is decoded, keeping the few
 * last used: opening costs the index, not the trace, and the newest view
 * decodes one frame (at most 4 MiB) of a gigabyte of history.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "decode.h"
#include "replay-int.h"
#include "util.h"

/* Decoded frames kept: a cursor crossing a frame's border goes back and
 * forth between two. */
#define SLOTS 3
/* A frame's buffer from this size on is in huge pages. */
#define HUGE_SLOT ((size_t)1 << 20)

struct slot {
	size_t frame;            /* SIZE_MAX: free */
	uint8_t *bytes;
	uint64_t used;
};

struct hwt_sw_chunks {
	struct hwt_sw_index *ix;
	uint8_t *map;            /* the compressed trace file */
	size_t map_size;
	struct slot slots[SLOTS];
	size_t slot_size;        /* the largest frame's decoded bytes */
	uint64_t tick;
	/* The table last read (its first chunk, SIZE_MAX: none). */
	struct hwt_sw_table table;
	size_t table_first;
};

void hwt_sw_chunks_free(struct hwt_sw_chunks *c)
{
	if (!c)
		return;
	for (int i = 0; i < SLOTS; i++)
		free(c->slots[i].bytes);
	hwt_sw_table_free(&c->table);
	hwt_unmap_file(c->map, c->map_size);
	hwt_sw_index_free(c->ix);
	free(c);
}

int hwt_sw_chunks_open(const struct hwt_bundle *b,
		       const struct hwt_bundle_thread *t,
		       struct hwt_sw_chunks **out, struct hwt_err *err)
{
	struct hwt_sw_chunks *c;
	uint8_t *idx = NULL;
	size_t idx_n = 0;
	char *path;
	int rc;

	*out = NULL;
	if (!t->index_file || t->encoding != HWT_TRACE_ZSTD)
		return hwt_err_set(err, ENOENT, "the trace has no index");
	if (!(c = calloc(1, sizeof(*c))) ||
	    !(path = hwt_bundle_path(b, t->trace_file))) {
		free(c);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	for (int i = 0; i < SLOTS; i++)
		c->slots[i].frame = SIZE_MAX;
	c->table_first = SIZE_MAX;
	rc = hwt_map_file(path, t->trace_size, &c->map, &c->map_size, err);
	free(path);
	if (!rc)
		rc = hwt_bundle_load_file(b, t->index_file, t->index_size,
					  &idx, &idx_n, err);
	if (!rc)
		rc = hwt_sw_index_parse(idx, idx_n, c->map, c->map_size,
					t->decoded_size, &c->ix, err);
	free(idx);
	if (rc) {
		hwt_sw_chunks_free(c);
		return rc;
	}
	for (size_t i = 0; i < c->ix->nframes; i++)
		if (c->ix->frames[i].decoded_len > c->slot_size)
			c->slot_size = c->ix->frames[i].decoded_len;
	*out = c;
	return 0;
}

const struct hwt_sw_index *hwt_sw_chunks_index(const struct hwt_sw_chunks *c)
{
	return c->ix;
}

/* The frame whose decoded bytes hold offset off. */
static size_t find_frame(const struct hwt_sw_index *ix, uint64_t off)
{
	size_t lo = 0, hi = ix->nframes;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ix->frames[mid].decoded_off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

int hwt_sw_chunks_get(struct hwt_sw_chunks *c, const struct hwt_segment *seg,
		      const uint8_t **base, size_t *size,
		      struct hwt_segment *local, struct hwt_err *err)
{
	size_t i = find_frame(c->ix, seg->off);
	const struct hwt_sw_index_frame *f = &c->ix->frames[i];
	struct slot *s = &c->slots[0];
	int rc;

	for (int k = 0; k < SLOTS; k++) {
		if (c->slots[k].frame == i) {
			s = &c->slots[k];
			goto found;
		}
		if (c->slots[k].used < s->used)
			s = &c->slots[k];
	}
	/* Frames are megabytes, and on a virtual machine a fault for each
	 * 4 KiB page of one cost more than its decompression; but a huge
	 * page is cleared whole, 2 MiB for each of a make's hundreds of
	 * short histories of kilobytes. */
	if (!s->bytes &&
	    !(s->bytes = c->slot_size >= HUGE_SLOT ?
	      hwt_huge_alloc(c->slot_size) : malloc(c->slot_size + 1)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	s->frame = SIZE_MAX;
	if ((rc = hwt_sw_index_frame_read(c->ix, c->map, i, s->bytes, err)))
		return rc;
	s->frame = i;
found:
	s->used = ++c->tick;
	*base = s->bytes;
	*size = f->decoded_len;
	*local = *seg;
	local->off = seg->off - f->decoded_off;
	return 0;
}

/* The payload bytes of the TABLE chunks from chunk first on. */
static size_t table_bytes(const struct hwt_sw_index *ix, size_t first)
{
	size_t n = 0;

	for (size_t k = first; k < ix->nchunks &&
	     (ix->chunks[k].hdr.flags & HWT_SW_CHUNK_TABLE); k++)
		n += ix->chunks[k].hdr.payload_size;
	return n;
}

int hwt_sw_chunks_table(struct hwt_sw_chunks *c, size_t first,
			struct hwt_sw_table **out, struct hwt_err *err)
{
	const struct hwt_sw_index *ix = c->ix;
	int rc = 0;

	if (c->table_first == first) {
		*out = &c->table;
		return 0;
	}
	hwt_sw_table_free(&c->table);
	c->table_first = SIZE_MAX;
	rc = hwt_sw_table_reserve(&c->table, table_bytes(ix, first), err);
	for (size_t k = first; k < ix->nchunks && !rc &&
	     (ix->chunks[k].hdr.flags & HWT_SW_CHUNK_TABLE); k++) {
		const struct hwt_sw_index_chunk *e = &ix->chunks[k];
		struct hwt_segment seg = { .off = e->decoded_off }, local;
		const uint8_t *base;
		size_t size;

		rc = hwt_sw_chunks_get(c, &seg, &base, &size, &local, err);
		if (!rc)
			rc = hwt_sw_table_add_lazy(&c->table, base +
						   local.off +
						   HWT_SW_CHUNK_HDR_SIZE,
						   e->hdr.payload_size, err);
	}
	if (rc) {
		hwt_sw_table_free(&c->table);
		return hwt_err_prefix(err, "the trace's translations: ");
	}
	c->table_first = first;
	*out = &c->table;
	return 0;
}

size_t hwt_sw_chunks_memory(const struct hwt_sw_chunks *c)
{
	size_t n = sizeof(*c) + c->table.bytes +
		c->ix->nframes * sizeof(*c->ix->frames) +
		c->ix->nchunks * sizeof(*c->ix->chunks) +
		c->ix->ncuts * sizeof(*c->ix->cuts);

	for (int i = 0; i < SLOTS; i++)
		if (c->slots[i].bytes)
			n += c->slot_size;
	return n;
}
