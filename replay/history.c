// SPDX-License-Identifier: BSD-2-Clause
/* history.c - the instruction history of one thread, decoded on demand.
 *
 * Opening reads only the decoder's segment index, which gives every
 * segment's item count, so items are numbered 1..count (oldest first, as
 * in GDB) before anything is decoded. hwt_history_get finds the segment by
 * binary search, decodes it into blocks if it is not cached, and finds the
 * instruction inside its block by walking instruction lengths. A bounded
 * LRU of decoded segments and the position of the last answer make walks
 * in either direction O(1) per item, while showing the newest instructions
 * of a huge trace decodes only the newest segment.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "decode.h"
#include "replay-int.h"
#include "util.h"

/* Decoded segments kept: enough for a cursor moving back and forth
 * across a few segment borders; the byte bound wins when segments are
 * large. */
#define CACHE_SLOTS 8
#define CACHE_BYTES (2u << 20)

struct dseg {
	size_t seg;              /* SIZE_MAX: slot free */
	struct hwt_block *blocks;
	uint32_t *starts;        /* item offset of each block in the segment */
	size_t nblocks, bytes;
	uint64_t used;           /* LRU tick */
};

struct hwt_history {
	const struct hwt_decoder *dec;
	const uint8_t *trace;
	size_t size;
	uint8_t *owned;          /* trace bytes read from a bundle */
	uint8_t *mapped;         /* or mapped from it, mapped_size bytes */
	size_t mapped_size;
	struct hwt_sw_chunks *chunks; /* indexed hwt-sw: read chunk by chunk */
	struct hwt_runs_lens lens; /* decoding segments of runs (chunks) */
	struct hwt_runs_marks marks; /* searching them for addresses */
	/* Why a bundle's trace index was not used (the trace was read whole
	 * instead), or empty. */
	char index_note[sizeof(((struct hwt_err *)0)->msg)];
	bool kept;               /* segments read from TRACE.hwtidx */
	struct hwt_image *img;
	struct hwt_segments segs;
	uint64_t count;
	struct dseg cache[CACHE_SLOTS];
	size_t cache_bytes;
	uint64_t tick, decodes;
	int cur;                 /* slot of the last answer, -1 if none */
	size_t cur_blk;
	struct hwt_block_insn *walk; /* the block walked last */
	size_t walk_cap, walk_seg, walk_blk;
	bool walk_valid;
};

/* Number the items of an indexed history 1..count and hand it out, or
 * free it when indexing failed (rc). */
static int finish_open(struct hwt_history *h, int rc,
		       struct hwt_history **out)
{
	uint64_t first = 1;

	if (rc) {
		hwt_history_free(h);
		return rc;
	}
	for (size_t i = 0; i < h->segs.n; i++) {
		h->segs.v[i].first = first;
		first += h->segs.v[i].nitems;
	}
	h->count = first - 1;
	*out = h;
	return 0;
}

/* The segments kept beside a bundle thread's trace (seg_store.c) into
 * h->segs: 0, or why not (note, for the caller to tell). */
static int load_kept(struct hwt_history *h, const struct hwt_bundle *b,
		     size_t thread_idx, char *note, size_t note_size)
{
	const struct hwt_bundle_thread *t;
	struct hwt_err e = { 0 };
	uint8_t *kept = NULL;
	size_t n = 0;
	char *path;
	int rc;

	if (!b || thread_idx >= b->nthreads || h->segs.in.pieces ||
	    !(t = &b->threads[thread_idx])->trace_file)
		return -ENOENT;
	if (!(path = hwt_history_index_path(b, thread_idx)))
		return -ENOMEM;
	{
		char *full = hwt_bundle_path(b, path);

		free(path);
		if (!full)
			return -ENOMEM;
		rc = hwt_read_file(full, 1u << 30, &kept, &n, &e);
		free(full);
	}
	if (rc == -ENOENT)
		return rc;
	if (!rc)
		rc = hwt_segments_load(kept, n, h->dec->format, h->trace,
				       h->size, &h->segs, &e);
	free(kept);
	if (rc) {
		struct hwt_index_in in = h->segs.in;

		snprintf(note, note_size, "%s", e.msg);
		hwt_segments_free(&h->segs);
		h->segs.in = in;   /* the trace is indexed next */
	}
	return rc;
}

/* Whether an hwt-sw trace holds runs (its chunk headers, walked). */
static bool has_runs(const uint8_t *trace, size_t size)
{
	size_t off = 0;

	while (off < size) {
		struct hwt_sw_chunk_hdr h;

		if (hwt_sw_chunk_hdr_unpack_flags(trace + off, size - off,
						  HWT_SW_CHUNK_RUNS_FLAGS |
						  HWT_SW_CHUNK_BRANCHES |
						  HWT_SW_CHUNK_ASYNC, &h,
						  NULL))
			return false;
		if (h.flags & (HWT_SW_CHUNK_TABLE | HWT_SW_CHUNK_RUNS))
			return true;
		off += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
	}
	return false;
}

static int open_trace(const struct hwt_decoder *dec, const uint8_t *trace,
		      size_t size, uint8_t *owned, uint64_t lost_insns,
		      uint64_t end_pc, const struct hwt_cpu_info *cpu,
		      const struct hwt_bundle *b, size_t thread_idx,
		      const struct hwt_pt_piece *pieces, size_t npieces,
		      struct hwt_image *img,
		      struct hwt_history **out,
		      struct hwt_err *err)
{
	struct hwt_history *h;
	int rc;

	if (!img) {
		free(owned);
		return hwt_err_set(err, EINVAL, "a history needs an image to "
				   "decode instructions; create one with "
				   "hwt_image_new");
	}
	if (dec == &hwt_decoder_sw && has_runs(trace, size)) {
		uint8_t *flat;
		size_t flat_n;

		/* Read whole (no index): its runs expanded once. A damaged
		 * one is read as it is, its runs a gap. */
		if (!hwt_sw_runs_flatten(trace, size, &flat, &flat_n, NULL)) {
			free(owned);
			trace = owned = flat;
			size = flat_n;
		}
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		free(owned);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	h->dec = dec;
	h->trace = trace;
	h->size = size;
	h->owned = owned;
	h->img = img;
	h->cur = -1;
	for (int i = 0; i < CACHE_SLOTS; i++)
		h->cache[i].seg = SIZE_MAX;
	h->segs.in = (struct hwt_index_in){
		.cpu = cpu, .bundle = b, .thread = thread_idx,
		.pieces = pieces, .npieces = npieces,
	};
	h->kept = dec != &hwt_decoder_sw &&
		load_kept(h, b, thread_idx, h->index_note,
			  sizeof(h->index_note)) == 0;
	if (h->kept)
		rc = 0;
	else if (dec->index_image)
		rc = dec->index_image(trace, size, lost_insns, end_pc, img,
				      &h->segs, err);
	else
		rc = dec->index(trace, size, lost_insns, &h->segs, err);
	/* The pieces belong to the caller and are needed only here. */
	h->segs.in.pieces = NULL;
	h->segs.in.npieces = 0;
	return finish_open(h, rc, out);
}

int hwt_history_open_sw(const uint8_t *trace, size_t size,
			uint64_t lost_insns, struct hwt_image *img,
			struct hwt_history **out, struct hwt_err *err)
{
	return open_trace(&hwt_decoder_sw, trace, size, NULL, lost_insns, 0,
			  NULL, NULL, 0, NULL, 0, img, out, err);
}

int hwt_history_open_bts(const uint8_t *trace, size_t size, uint64_t end_pc,
			 struct hwt_image *img, struct hwt_history **out,
			 struct hwt_err *err)
{
	return open_trace(&hwt_decoder_bts, trace, size, NULL, 0, end_pc, NULL,
			  NULL, 0, NULL, 0, img, out, err);
}

int hwt_history_open_pt(const uint8_t *trace, size_t size,
			const struct hwt_cpu_info *cpu, struct hwt_image *img,
			struct hwt_history **out, struct hwt_err *err)
{
	return open_trace(&hwt_decoder_pt, trace, size, NULL, 0, 0, cpu, NULL,
			  0, NULL, 0, img, out, err);
}

int hwt_history_open_format(const char *format, const uint8_t *trace,
			    size_t size, struct hwt_image *img,
			    struct hwt_history **out, struct hwt_err *err)
{
	const struct hwt_decoder *dec = hwt_decoder_find(format);

	if (!dec)
		return hwt_err_set(err, ENOTSUP, "no decoder for '%s'; this "
				   "build reads: %s", format ? format : "(none)",
				   hwt_decoder_names());
	return open_trace(dec, trace, size, NULL, 0, 0, NULL, NULL, 0, NULL, 0, img,
			  out, err);
}

/* Per-cpu Intel PT: the thread's history is the pieces of the cpus'
 * traces during which it ran, in time order (replay/pt_switch.c). */
static int open_per_cpu(const struct hwt_bundle *b, size_t thread_idx,
			struct hwt_image *img, struct hwt_history **out,
			struct hwt_err *err)
{
	const struct hwt_bundle_thread *t = &b->threads[thread_idx];
	struct hwt_pt_piece *pieces;
	size_t size, npieces;
	uint8_t *data;
	int rc;

	rc = hwt_pt_thread_pieces(b, t->tid, &data, &size, &pieces, &npieces,
				  err);
	if (rc)
		return rc;
	rc = open_trace(&hwt_decoder_pt, data, size, data, 0, 0, &b->cpu, b,
			thread_idx, pieces, npieces, img, out, err);
	free(pieces);
	return rc;
}

/* A bundle's indexed hwt-sw trace: the segments come from the index and
 * chunks are decompressed as they are decoded. */
static int open_indexed(struct hwt_sw_chunks *chunks, uint64_t lost_insns,
			struct hwt_image *img, struct hwt_history **out,
			struct hwt_err *err)
{
	struct hwt_history *h;
	int rc;

	if (!img || !(h = calloc(1, sizeof(*h)))) {
		hwt_sw_chunks_free(chunks);
		return hwt_err_set(err, img ? ENOMEM : EINVAL, img ?
				   "out of memory" : "a history needs an "
				   "image to decode instructions");
	}
	h->dec = &hwt_decoder_sw;
	h->chunks = chunks;
	h->img = img;
	h->cur = -1;
	for (int i = 0; i < CACHE_SLOTS; i++)
		h->cache[i].seg = SIZE_MAX;
	rc = hwt_sw_index_segments(hwt_sw_chunks_index(chunks), lost_insns,
				   &h->segs, err);
	return finish_open(h, rc, out);
}

int hwt_history_open(const struct hwt_bundle *b, size_t thread_idx,
		     struct hwt_image *img, struct hwt_history **out,
		     struct hwt_err *err)
{
	const struct hwt_bundle_thread *t;
	const struct hwt_decoder *dec;
	char note[sizeof(((struct hwt_err *)0)->msg)] = "";
	uint64_t end_pc;
	uint8_t *data;
	size_t size;
	int rc;

	if (thread_idx >= b->nthreads)
		return hwt_err_set(err, EINVAL, "thread %zu does not exist: "
				   "the bundle has %zu thread(s)", thread_idx,
				   b->nthreads);
	dec = hwt_decoder_find(b->type);
	if (!dec)
		return hwt_err_set(err, ENOTSUP, "bundle type '%s' cannot be "
				   "decoded; this build reads: %s",
				   b->type ? b->type : "(none)",
				   hwt_decoder_names());
	t = &b->threads[thread_idx];
	if (!t->trace_file && b->npt_cpus && dec == &hwt_decoder_pt)
		return open_per_cpu(b, thread_idx, img, out, err);
	if (!t->trace_file)
		return hwt_err_set(err, EINVAL, "thread %lld has no trace",
				   (long long)t->tid);
	if (dec == &hwt_decoder_sw && t->index_file) {
		struct hwt_err ie = { 0 };
		struct hwt_sw_chunks *chunks;

		if (!hwt_sw_chunks_open(b, t, &chunks, &ie))
			return open_indexed(chunks, t->lost_insns, img, out,
					    err);
		if (ie.code == ENOMEM)
			return hwt_err_set(err, ENOMEM, "%s", ie.msg);
		snprintf(note, sizeof(note), "%s", ie.msg);
	}
	/* A trace stored as it is, is mapped: opening then reads only what
	 * the index (kept or made) and the views ask for. */
	if (t->encoding == HWT_TRACE_RAW && t->trace_size) {
		char *path = hwt_bundle_path(b, t->trace_file);
		uint8_t *map = NULL;

		if (!path)
			return hwt_err_set(err, ENOMEM, "out of memory");
		rc = hwt_map_file(path, t->trace_size, &map, &size, err);
		free(path);
		if (rc)
			return hwt_err_prefix(err, "trace of thread %lld: ",
					      (long long)t->tid);
		end_pc = hwt_bundle_thread_faulted(b, thread_idx) ?
			b->stop_pc : 0;
		rc = open_trace(dec, map, size, NULL, t->lost_insns, end_pc,
				&b->cpu, b, thread_idx, NULL, 0, img, out,
				err);
		if (rc) {
			hwt_unmap_file(map, size);
		} else {
			(*out)->mapped = map;
			(*out)->mapped_size = size;
		}
		return rc;
	}
	rc = hwt_bundle_load_trace(b, t, &data, &size, err);
	if (rc)
		return hwt_err_prefix(err, "trace of thread %lld: ",
				      (long long)t->tid);
	/* The only current pc a bundle gives is the faulting thread's. */
	end_pc = hwt_bundle_thread_faulted(b, thread_idx) ? b->stop_pc : 0;
	rc = open_trace(dec, data, size, data, t->lost_insns, end_pc,
			&b->cpu, b, thread_idx, NULL, 0, img, out, err);
	if (!rc && note[0])
		snprintf((*out)->index_note, sizeof((*out)->index_note), "%s",
			 note);
	return rc;
}

char *hwt_history_index_path(const struct hwt_bundle *b, size_t thread)
{
	const struct hwt_bundle_thread *t = &b->threads[thread];
	char *path;

	/* A CoreSight buffer holds the trace of several sources. */
	if (thread < b->nsources &&
	    asprintf(&path, "%s.%02x.hwtidx", t->trace_file,
		     b->sources[thread].trace_id) < 0)
		return NULL;
	if (thread >= b->nsources &&
	    asprintf(&path, "%s.hwtidx", t->trace_file) < 0)
		return NULL;
	return path;
}

const char *hwt_history_index_note(const struct hwt_history *h)
{
	return h->index_note[0] ? h->index_note : NULL;
}

bool hwt_history_index_kept(const struct hwt_history *h)
{
	return h->kept;
}

bool hwt_history_runs_kept(const struct hwt_history *h)
{
	const struct hwt_sw_index *ix = h->chunks ?
		hwt_sw_chunks_index(h->chunks) : NULL;

	for (size_t i = 0; ix && i < ix->nchunks; i++)
		if (ix->chunks[i].hdr.flags & HWT_SW_CHUNK_RUNS)
			return true;
	return false;
}

int hwt_history_index_save(const struct hwt_history *h, uint8_t **out,
			   size_t *out_n, struct hwt_err *err)
{
	if (h->chunks || h->dec == &hwt_decoder_sw)
		return hwt_err_set(err, ENOTSUP, "an hwt-sw trace is indexed "
				   "when it is recorded");
	return hwt_segments_save(&h->segs, h->dec->format, h->trace, h->size,
				 out, out_n, err);
}

static void slot_free(struct hwt_history *h, int i)
{
	struct dseg *d = &h->cache[i];

	free(d->blocks);
	free(d->starts);
	h->cache_bytes -= d->bytes;
	memset(d, 0, sizeof(*d));
	d->seg = SIZE_MAX;
	if (h->cur == i)
		h->cur = -1;
}

void hwt_history_free(struct hwt_history *h)
{
	if (!h)
		return;
	for (int i = 0; i < CACHE_SLOTS; i++)
		slot_free(h, i);
	hwt_segments_free(&h->segs);
	free(h->walk);
	free(h->owned);
	hwt_unmap_file(h->mapped, h->mapped_size);
	hwt_sw_chunks_free(h->chunks);
	hwt_runs_lens_free(&h->lens);
	hwt_runs_marks_free(&h->marks);
	free(h);
}

uint64_t hwt_history_count(struct hwt_history *h)
{
	return h->count;
}

int hwt_history_check_range(struct hwt_history *h, uint64_t *first,
			    uint64_t *last, struct hwt_err *err)
{
	if (!*first && !*last) {
		*first = 1;
		*last = h->count;
	}
	if (*first == 0 || *first > *last || *last > h->count)
		return hwt_err_set(err, ERANGE, "items %llu..%llu are not in "
				   "the history (1..%llu)",
				   (unsigned long long)*first,
				   (unsigned long long)*last,
				   (unsigned long long)h->count);
	return 0;
}

uint64_t hwt_history_decodes(const struct hwt_history *h)
{
	return h->decodes;
}

size_t hwt_history_memory(const struct hwt_history *h)
{
	return sizeof(*h) + h->segs.cap * sizeof(*h->segs.v) +
		h->segs.strcap * sizeof(char *) + h->segs.str_bytes +
		h->segs.priv_bytes +
		h->cache_bytes + h->walk_cap * sizeof(*h->walk) +
		(h->owned ? h->size : 0) + h->mapped_size + hwt_runs_lens_memory(&h->lens) +
		(h->chunks ? hwt_sw_chunks_memory(h->chunks) : 0);
}

static size_t find_seg(const struct hwt_history *h, uint64_t index)
{
	size_t lo = 0, hi = h->segs.n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (h->segs.v[mid].first <= index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/* The bytes of indexed segment seg (*local made to read them there) and,
 * for runs, its table. */
static int chunk_of(struct hwt_history *h, const struct hwt_segment *seg,
		    struct hwt_sw_table **tab, const uint8_t **base,
		    size_t *size, struct hwt_segment *local,
		    struct hwt_err *err)
{
	/* The table first: reading its frames may take the slot the
	 * segment's frame would be in. */
	int rc = seg->flags & HWT_SW_SEG_RUNS ?
		hwt_sw_chunks_table(h->chunks, seg->own.table, tab, err) : 0;

	return rc ? rc : hwt_sw_chunks_get(h->chunks, seg, base, size, local,
					   err);
}

static int cached(const struct hwt_history *h, size_t s)
{
	for (int i = 0; i < CACHE_SLOTS; i++) {
		if (h->cache[i].seg == s)
			return i;
	}
	return -1;
}

/* The cache slot holding segment s, decoding it if needed. */
static int load(struct hwt_history *h, size_t s, struct hwt_err *err)
{
	const struct hwt_segment *seg = &h->segs.v[s];
	struct hwt_blocks out = { 0 };
	uint32_t *starts, at = 0;
	int slot = 0, rc;

	if ((slot = cached(h, s)) >= 0)
		return slot;
	slot = 0;
	h->decodes++;
	if (h->chunks && seg->nitems > (seg->reason ? 1u : 0u)) {
		const uint8_t *base;
		struct hwt_segment local;
		size_t size;
		struct hwt_sw_table *tab = NULL;

		rc = chunk_of(h, seg, &tab, &base, &size, &local, err);
		if (!rc && tab)
			rc = hwt_runs_decode(&h->lens, seg->own.table, tab,
					     base, size, &local, h->img, &out,
					     err);
		else if (!rc)
			rc = h->dec->decode(base, size, &local, h->img, &out,
					    err);
		if (rc)
			hwt_err_prefix(err, "decoding with the trace's "
				       "index: ");
	} else {
		rc = h->dec->decode(h->trace, h->size, seg, h->img, &out, err);
	}
	if (rc) {
		free(out.v);
		return rc;
	}
	starts = malloc((out.n ? out.n : 1) * sizeof(*starts));
	for (size_t i = 0; starts && i < out.n; i++) {
		starts[i] = at;
		at += out.v[i].count;
	}
	if (!starts || at != seg->nitems) {
		free(out.v);
		free(starts);
		if (!starts)
			return hwt_err_set(err, ENOMEM, "out of memory");
		return hwt_err_set(err, EIO, "decoder error: segment of %u "
				   "items decoded to %u", seg->nitems, at);
	}
	if (out.n < out.cap) {
		struct hwt_block *p = realloc(out.v, out.n * sizeof(*p));

		if (p)
			out.v = p;
	}
	for (int i = 1; i < CACHE_SLOTS; i++) {
		if (h->cache[slot].seg != SIZE_MAX &&
		    (h->cache[i].seg == SIZE_MAX ||
		     h->cache[i].used < h->cache[slot].used))
			slot = i;
	}
	slot_free(h, slot);
	h->cache[slot] = (struct dseg){
		.seg = s, .blocks = out.v, .starts = starts, .nblocks = out.n,
		.bytes = out.n * (sizeof(*out.v) + sizeof(*starts)),
		.used = ++h->tick,
	};
	h->cache_bytes += h->cache[slot].bytes;
	/* Big segments: keep fewer, but always the one just decoded. */
	while (h->cache_bytes > CACHE_BYTES) {
		int old = -1;

		for (int i = 0; i < CACHE_SLOTS; i++) {
			if (i != slot && h->cache[i].seg != SIZE_MAX &&
			    (old < 0 || h->cache[i].used < h->cache[old].used))
				old = i;
		}
		if (old < 0)
			break;
		slot_free(h, old);
	}
	return slot;
}

static bool in_block(const struct dseg *d, size_t b, uint32_t off)
{
	return b < d->nblocks && d->starts[b] <= off &&
		off - d->starts[b] < d->blocks[b].count;
}

static size_t find_block(const struct dseg *d, size_t hint, uint32_t off)
{
	size_t lo = 0, hi = d->nblocks;

	/* Walks move by one item: the same or a neighbouring block. */
	if (in_block(d, hint, off))
		return hint;
	if (in_block(d, hint + 1, off))
		return hint + 1;
	if (hint > 0 && in_block(d, hint - 1, off))
		return hint - 1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (d->starts[mid] <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/* Addresses, lengths and classes of every instruction of block b. */
static int walk_block(struct hwt_history *h, const struct dseg *d, size_t b,
		      struct hwt_err *err)
{
	const struct hwt_block *blk = &d->blocks[b];
	uint64_t a = blk->begin;

	if (h->walk_valid && h->walk_seg == d->seg && h->walk_blk == b)
		return 0;
	h->walk_valid = false;
	if (blk->count > h->walk_cap) {
		struct hwt_block_insn *p = realloc(h->walk, blk->count * sizeof(*p));

		if (!p)
			return hwt_err_set(err, ENOMEM, "out of memory");
		h->walk = p;
		h->walk_cap = blk->count;
	}
	for (uint32_t i = 0; i < blk->count; i++) {
		enum hwt_insn_class cls;
		uint8_t len;
		int rc = hwt_image_insn_info_isa(h->img, a, blk->isa, &len,
						 &cls);

		if (rc == -ENOMEM)
			return hwt_err_set(err, ENOMEM, "out of memory");
		/* Only the last instruction of a block may lack code: the
		 * decoder extended the block over each of the others. */
		if (rc && i + 1 < blk->count)
			return hwt_err_set(err, EIO, "no code at 0x%llx inside "
					   "a decoded block; the image changed "
					   "after decoding",
					   (unsigned long long)a);
		h->walk[i] = (struct hwt_block_insn){ (uint32_t)(a - blk->begin),
						rc ? 0 : len,
						rc ? HWT_INSN_OTHER : cls };
		a += len;
	}
	h->walk_valid = true;
	h->walk_seg = d->seg;
	h->walk_blk = b;
	return 0;
}

int hwt_history_get(struct hwt_history *h, uint64_t index,
		    struct hwt_item *out, struct hwt_err *err)
{
	const struct hwt_segment *seg;
	const struct hwt_block *blk;
	struct dseg *d;
	uint32_t off, k;
	int rc;

	if (index == 0 || index > h->count)
		return hwt_err_set(err, ERANGE, "item %llu is outside the "
				   "history (1..%llu)",
				   (unsigned long long)index,
				   (unsigned long long)h->count);
	seg = h->cur >= 0 ? &h->segs.v[h->cache[h->cur].seg] : NULL;
	if (!seg || index < seg->first || index - seg->first >= seg->nitems) {
		rc = load(h, find_seg(h, index), err);
		if (rc < 0)
			return rc;
		h->cur = rc;
		h->cur_blk = 0;
	}
	d = &h->cache[h->cur];
	d->used = ++h->tick;
	off = (uint32_t)(index - h->segs.v[d->seg].first);
	h->cur_blk = find_block(d, h->cur_blk, off);
	blk = &d->blocks[h->cur_blk];
	k = off - d->starts[h->cur_blk];
	memset(out, 0, sizeof(*out));
	out->index = index;
	if (blk->flags & HWT_BLOCK_GAP) {
		out->kind = HWT_ITEM_GAP;
		out->gap_reason = blk->reason;
		return 0;
	}
	out->kind = HWT_ITEM_INSN;
	out->timestamp = blk->timestamp;
	if (k == 0 && (blk->flags & HWT_BLOCK_ASYNC))
		out->flags = HWT_ITEM_ASYNC;
	if (k == 0)
		out->flags |= HWT_ITEM_BLOCK;
	out->isa = blk->isa;
	if (k + 1 == blk->count && (blk->flags & HWT_BLOCK_PTWRITE)) {
		out->flags |= HWT_ITEM_PTWRITE;
		out->ptwrite = blk->ptwrite;
	}
	if (blk->count == 1) {
		rc = hwt_image_insn_info_isa(h->img, blk->begin, blk->isa,
					     &out->len,
					 &out->cls);
		if (rc == -ENOMEM)
			return hwt_err_set(err, ENOMEM, "out of memory");
		out->addr = blk->begin;
		return 0;
	}
	rc = walk_block(h, d, h->cur_blk, err);
	if (rc)
		return rc;
	out->addr = blk->begin + h->walk[k].off;
	out->len = h->walk[k].len;
	out->cls = (enum hwt_insn_class)h->walk[k].cls;
	return 0;
}

/* Block b of cached segment d, its first item index, as a run. */
static int run_of(struct hwt_history *h, const struct dseg *d, size_t b,
		  uint64_t index, struct hwt_run *r, struct hwt_err *err)
{
	const struct hwt_block *blk = &d->blocks[b];
	enum hwt_insn_class cls;
	uint8_t len;
	int rc;

	*r = (struct hwt_run){ .index = index, .begin = blk->begin,
			       .end = blk->end, .count = blk->count,
			       .gap = blk->flags & HWT_BLOCK_GAP };
	if (r->gap)
		return 0;
	rc = hwt_image_insn_info_isa(h->img, blk->end, blk->isa, &len, &cls);
	if (rc == -ENOMEM)
		return hwt_err_set(err, ENOMEM, "out of memory");
	r->next = rc ? 0 : blk->end + len;
	return 0;
}

/* The cache slot of segment s, made the one hwt_history_get answers
 * from (load() may have evicted the slot it answered from last). */
static int walk_load(struct hwt_history *h, size_t s, struct hwt_err *err)
{
	int slot = load(h, s, err);

	if (slot < 0)
		return slot;
	h->cur = slot;
	h->cur_blk = 0;
	h->cache[slot].used = ++h->tick;
	return slot;
}

int hwt_history_runs(struct hwt_history *h, uint64_t from,
		     int (*fn)(void *arg, const struct hwt_run *r), void *arg,
		     struct hwt_err *err)
{
	size_t first_seg = 0;

	if (from > h->count)
		return 0;
	if (from > 1)
		first_seg = find_seg(h, from);
	for (size_t s = first_seg; s < h->segs.n; s++) {
		int slot = walk_load(h, s, err);
		const struct dseg *d;

		if (slot < 0)
			return slot;
		d = &h->cache[slot];
		for (size_t b = 0; b < d->nblocks; b++) {
			uint64_t index = h->segs.v[s].first + d->starts[b];
			struct hwt_run r;
			int rc;

			if (index + (d->blocks[b].flags & HWT_BLOCK_GAP ? 1 :
				     d->blocks[b].count) <= from)
				continue;       /* ends before from */
			if ((rc = run_of(h, d, b, index, &r, err)) ||
			    (rc = fn(arg, &r)))
				return rc;
		}
	}
	return 0;
}

int hwt_history_blocks(struct hwt_history *h, uint64_t first, uint64_t last,
		       int (*fn)(void *arg, const struct hwt_block_view *v),
		       void *arg, struct hwt_err *err)
{
	if (first < 1 || last > h->count || first > last)
		return hwt_err_set(err, EINVAL, "items %llu..%llu are not a "
				   "range of the history (1..%llu)",
				   (unsigned long long)first,
				   (unsigned long long)last,
				   (unsigned long long)h->count);
	for (size_t s = find_seg(h, first); s < h->segs.n; s++) {
		int slot = walk_load(h, s, err);
		const struct dseg *d;

		if (slot < 0)
			return slot;
		d = &h->cache[slot];
		for (size_t b = 0; b < d->nblocks; b++) {
			const struct hwt_block *blk = &d->blocks[b];
			uint64_t index = h->segs.v[s].first + d->starts[b];
			uint64_t n = blk->flags & HWT_BLOCK_GAP ? 1 : blk->count;
			uint64_t skip = first > index ? first - index : 0;
			struct hwt_block_view v;
			int rc;

			if (index > last)
				return 0;
			if (index + n <= first)
				continue;
			v = (struct hwt_block_view){
				.index = index + skip,
				.count = (uint32_t)((last - index + 1 < n ?
						     last - index + 1 : n) -
						    skip),
				.gap = blk->flags & HWT_BLOCK_GAP,
				.gap_reason = blk->reason,
				.async = !skip && blk->flags & HWT_BLOCK_ASYNC,
				.isa = blk->isa, .begin = blk->begin,
			};
			if (!v.gap) {
				if ((rc = walk_block(h, d, b, err)))
					return rc;
				v.insns = h->walk + skip;
			}
			if ((rc = fn(arg, &v)))
				return rc;
		}
	}
	return 0;
}

/* The same search in decoded segment d, its items lo..hi (from 0): a
 * block's instructions are walked only where its address range holds
 * one of the addresses. */
static int find_in_blocks(struct hwt_history *h, int slot, uint32_t lo,
			  uint32_t hi, bool back, const uint64_t *set,
			  size_t n, uint32_t *off, struct hwt_err *err)
{
	const struct dseg *d = &h->cache[slot];

	for (size_t k = 0; k < d->nblocks; k++) {
		size_t b = back ? d->nblocks - 1 - k : k;
		const struct hwt_block *blk = &d->blocks[b];
		uint32_t first = d->starts[b], last = first + blk->count - 1;
		size_t at;
		int rc;

		if (back ? first > hi : last < lo)
			continue;
		if (back ? last < lo : first > hi)
			return 0;
		if (blk->flags & HWT_BLOCK_GAP)
			continue;
		at = hwt_addrs_at_least(set, n, blk->begin);
		if (at == n || set[at] > blk->end)
			continue;
		if ((rc = walk_block(h, d, b, err)))
			return rc;
		for (uint32_t j = 0; j < blk->count; j++) {
			uint32_t i = back ? blk->count - 1 - j : j;

			if (first + i < lo || first + i > hi ||
			    !hwt_addrs_hold(set, n,
					    blk->begin + h->walk[i].off))
				continue;
			*off = first + i;
			return 1;
		}
	}
	return 0;
}

int hwt_history_find_pc(struct hwt_history *h, uint64_t lo, uint64_t hi,
			bool back, const uint64_t *set, size_t n,
			uint64_t *at, struct hwt_err *err)
{
	size_t first_seg, last_seg;

	if (lo < 1)
		lo = 1;
	if (hi > h->count)
		hi = h->count;
	if (!n || lo > hi)
		return 0;
	hwt_runs_marks_reset(&h->marks, set, n);
	first_seg = find_seg(h, lo);
	last_seg = find_seg(h, hi);
	for (size_t k = 0; k <= last_seg - first_seg; k++) {
		size_t s = back ? last_seg - k : first_seg + k;
		const struct hwt_segment *seg = &h->segs.v[s];
		uint32_t from = lo > seg->first ? (uint32_t)(lo - seg->first) : 0;
		uint32_t to = hi - seg->first < seg->nitems ?
			(uint32_t)(hi - seg->first) : seg->nitems - 1;
		uint32_t off;
		int rc;

		if (h->chunks && (seg->flags & HWT_SW_SEG_RUNS) &&
		    cached(h, s) < 0) {
			struct hwt_sw_table *tab = NULL;
			struct hwt_segment local;
			const uint8_t *base;
			size_t size;

			rc = chunk_of(h, seg, &tab, &base, &size, &local, err);
			if (!rc)
				rc = hwt_runs_find(&h->marks, seg->own.table,
						   tab, base, size, &local,
						   from, to, back, &off, err);
			if (rc < 0)
				return hwt_err_prefix(err, "searching with "
						      "the trace's index: ");
		} else {
			int slot = walk_load(h, s, err);

			if (slot < 0)
				return slot;
			rc = find_in_blocks(h, slot, from, to, back, set, n,
					    &off, err);
			if (rc < 0)
				return rc;
		}
		if (rc == 1) {
			*at = seg->first + off;
			return 1;
		}
	}
	return 0;
}
