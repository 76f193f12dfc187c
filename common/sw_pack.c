// SPDX-License-Identifier: BSD-2-Clause
/* sw_pack.c - hwt-sw traces compressed frame by frame, with their index.
 *
 * Opening a history must not cost the length of the trace: a billion
 * instructions are a gigabyte of records, and decompressing and scanning
 * them all took most of a second before the first answer. So a bundle
 * stores the trace as zstd frames of whole chunks, each frame up to
 * HWT_SW_INDEX_FRAME_MAX bytes decoded (recorders write chunks of a few
 * kilobytes, which compress far worse alone: a frame of 4 MiB keeps the
 * trace within 1.5x of one frame for all, one of 1 MiB 3x), with an index
 * saying where every frame is, the headers of its chunks and the restart
 * points every HWT_SW_INDEX_STRIDE instructions that the replay engine
 * cuts segments at (layout: sw_index_layout.h). The frames together are
 * still one valid zstd stream, which whole-trace readers decompress as
 * before.
 *
 * The packer takes chunks one at a time and hands each frame to its
 * writer as it fills, so a whole recording streams to disk in bounded
 * memory (collect/spill.c); it may forget its oldest frames to keep the
 * newest within a bound.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "hwt-common.h"
#include "sw_index_layout.h"

/* A compressor and the buffer it writes a frame into: a frame is
 * compressed and written in one call, so packers used from one thread
 * can take turns with one. */
struct hwt_sw_pack_work {
	ZSTD_CCtx *cc;
	uint8_t *zbuf;           /* a compressed frame */
	size_t zcap;
};

struct hwt_sw_packer {
	hwt_sw_pack_write_fn write;
	void *ctx;
	/* Its compressor: shared (hwt_sw_packer_share), or its own, made
	 * with the frame buffer and given back with it. */
	struct hwt_sw_pack_work *work;
	bool shared;
	/* The kept frames, their chunks and cuts; frames[nframes] is the
	 * one being filled while pending_n > 0. */
	struct hwt_sw_index ix;
	size_t frame_cap, chunk_cap, cut_cap;
	uint8_t *pending;        /* chunks of the frame being filled */
	size_t pending_n;
	uint64_t end;            /* bytes written */
	uint64_t decoded;        /* decoded bytes of the kept frames */
	uint64_t insns;          /* instructions of the kept frames */
	/* The translations of the RUNS chunks to come; a TABLE chunk
	 * after a RUNS chunk starts another table. */
	struct hwt_sw_table table;
	bool table_used;
	/* A CUTS chunk's payload, for the RUNS chunk after it. */
	uint8_t *cuts;
	size_t ncuts;
	/* One restart point of a RUNS chunk kept in thin (1: all). */
	unsigned thin;
};

/* Room for one more element of *v (n used of *cap). */
static int grow(void **v, size_t n, size_t *cap, size_t size)
{
	if (n == *cap) {
		size_t ncap = *cap ? 2 * *cap : 64;
		void *p = realloc(*v, ncap * size);

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = ncap;
	}
	return 0;
}

void hwt_sw_packer_free(struct hwt_sw_packer *p)
{
	if (!p)
		return;
	hwt_sw_packer_rest(p, NULL);
	free(p->ix.frames);
	free(p->ix.chunks);
	free(p->ix.cuts);
	free(p);
}

int hwt_sw_packer_new(hwt_sw_pack_write_fn write, void *ctx,
		      struct hwt_sw_packer **out, struct hwt_err *err)
{
	struct hwt_sw_packer *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return hwt_err_set(err, ENOMEM, "out of memory for the trace "
				   "packer");
	p->write = write;
	p->ctx = ctx;
	p->thin = 1;
	*out = p;
	return 0;
}

void hwt_sw_packer_thin(struct hwt_sw_packer *p, unsigned every)
{
	p->thin = every ? every : 1;
}

int hwt_sw_pack_work_new(struct hwt_sw_pack_work **out, struct hwt_err *err)
{
	struct hwt_sw_pack_work *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w || !(w->cc = ZSTD_createCCtx()) ||
	    !(w->zbuf = malloc(w->zcap =
			       ZSTD_compressBound(HWT_SW_INDEX_FRAME_MAX)))) {
		hwt_sw_pack_work_free(w);
		return hwt_err_set(err, ENOMEM, "out of memory for the trace "
				   "packer");
	}
	if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cc,
						ZSTD_c_compressionLevel,
						HWT_SW_ZSTD_LEVEL)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->cc, ZSTD_c_checksumFlag,
						1))) {
		hwt_sw_pack_work_free(w);
		return hwt_err_set(err, EIO, "zstd refused its parameters");
	}
	*out = w;
	return 0;
}

void hwt_sw_pack_work_free(struct hwt_sw_pack_work *w)
{
	if (!w)
		return;
	ZSTD_freeCCtx(w->cc);
	free(w->zbuf);
	free(w);
}

void hwt_sw_packer_share(struct hwt_sw_packer *p, struct hwt_sw_pack_work *w)
{
	if (!p->shared && p->work)
		hwt_sw_pack_work_free(p->work);
	p->work = w;
	p->shared = true;
}

/* The frame buffer and the compressor, made when a chunk first comes
 * (again, after a rest). */
static int ready(struct hwt_sw_packer *p, struct hwt_err *err)
{
	int rc;

	if (!p->work && (rc = hwt_sw_pack_work_new(&p->work, err)))
		return rc;
	if (!p->pending && !(p->pending = malloc(HWT_SW_INDEX_FRAME_MAX)))
		return hwt_err_set(err, ENOMEM, "out of memory for the trace "
				   "packer");
	return 0;
}

int hwt_sw_packer_rest(struct hwt_sw_packer *p, struct hwt_err *err)
{
	int rc = p->pending && err ? hwt_sw_packer_flush(p, err) : 0;

	if (!p->shared) {
		hwt_sw_pack_work_free(p->work);
		p->work = NULL;
	}
	free(p->pending);
	hwt_sw_table_free(&p->table);
	free(p->cuts);
	p->pending = p->cuts = NULL;
	p->pending_n = p->ncuts = 0;
	p->table_used = false;
	return rc;
}

static int add_cut(struct hwt_sw_packer *p,
		   const struct hwt_sw_index_cut *cut)
{
	struct hwt_sw_index *ix = &p->ix;

	if (grow((void **)&ix->cuts, ix->ncuts, &p->cut_cap,
		 sizeof(*ix->cuts)))
		return -ENOMEM;
	ix->cuts[ix->ncuts++] = *cut;
	return 0;
}

/* A RUNS chunk's restart points, at a run's item every
 * HWT_SW_INDEX_STRIDE instructions or more; -EBADMSG when its runs do
 * not hold or disagree with its header. */
static int cut_runs(struct hwt_sw_packer *p, const struct hwt_sw_chunk_hdr *h,
		    const uint8_t *pay)
{
	struct hwt_sw_runs w;
	const struct hwt_sw_tr *tr;
	uint64_t total = 0, last_cut = 0, last;
	uint32_t n;
	bool async;
	int rc;

	hwt_sw_runs_init(&w, &p->table, pay, h->payload_size, 0,
			 h->flags & HWT_SW_CHUNK_PREV, h->first_pc);
	while ((rc = hwt_sw_runs_next(&w, &tr, &n, &async, NULL)) > 0) {
		total += n;
		if (total - last_cut < (uint64_t)HWT_SW_INDEX_STRIDE * p->thin ||
		    !hwt_sw_runs_at_cut(&w) || total >= h->insn_count)
			continue;
		struct hwt_sw_index_cut cut = {
			.rec_off = (uint32_t)(w.p - pay),
			.prev_known = hwt_sw_runs_last(&w, &last),
			.insns = (uint32_t)total, .pc = last,
		};
		if (add_cut(p, &cut))
			return -ENOMEM;
		last_cut = total;
	}
	hwt_sw_runs_last(&w, &last);
	if (rc < 0 || total != h->insn_count || last != h->last_pc)
		return -EBADMSG;
	return 0;
}

/* A RUNS chunk's restart points as its recorder found them (the CUTS
 * chunk before it): in order, inside it, each at a run's item. Its
 * runs are not walked: each segment is checked against its count when
 * it is read (replay/history.c). -EBADMSG when they do not hold. */
static int given_cuts(struct hwt_sw_packer *p, const struct hwt_sw_chunk_hdr *h,
		      const uint8_t *pay)
{
	uint32_t off = 0, insns = 0;

	for (size_t k = 0; k < p->ncuts; k++) {
		const uint8_t *q = p->cuts + k * HWT_SW_CUT_BYTES;
		struct hwt_sw_index_cut cut = {
			.rec_off = hwt_get_le32(q), .insns = hwt_get_le32(q + 4),
			.pc = hwt_get_le64(q + 8), .prev_known = true,
		};

		if (cut.rec_off <= off || cut.rec_off >= h->payload_size ||
		    cut.insns <= insns || cut.insns >= h->insn_count ||
		    (pay[cut.rec_off] & 3) != HWT_SW_RUNS_EXEC ||
		    (pay[cut.rec_off - 1] & 0x80))
			return -EBADMSG;
		if ((k + 1) % p->thin == 0 && add_cut(p, &cut))
			return -ENOMEM;
		off = cut.rec_off;
		insns = cut.insns;
	}
	return 0;
}

/* The chunk c (n bytes) as an index entry with its cuts, appended to the
 * index; -EBADMSG, the index unchanged, when it is not a chunk whose
 * records (or runs) agree with its header, or a table that holds. */
static int index_chunk(struct hwt_sw_packer *p, const uint8_t *c, size_t n)
{
	struct hwt_sw_index *ix = &p->ix;
	struct hwt_sw_index_chunk e = { .first_cut = ix->ncuts,
					.frame = ix->nframes };
	struct hwt_sw_reader r;
	const uint8_t *pay = c + HWT_SW_CHUNK_HDR_SIZE;
	uint64_t total = 1;
	size_t given;
	bool async;
	int rr;

	if (hwt_sw_chunk_hdr_unpack_flags(c, n, HWT_SW_CHUNK_RUNS_FLAGS,
					  &e.hdr, NULL) ||
	    HWT_SW_CHUNK_HDR_SIZE + (size_t)e.hdr.payload_size != n)
		return -EBADMSG;
	if (e.hdr.flags & HWT_SW_CHUNK_CUTS) {
		uint8_t *keep = realloc(p->cuts, e.hdr.payload_size + 1);

		if (!keep)
			return -ENOMEM;
		memcpy(keep, pay, e.hdr.payload_size);
		p->cuts = keep;
		p->ncuts = e.hdr.payload_size / HWT_SW_CUT_BYTES;
		goto add;
	}
	given = p->ncuts;
	p->ncuts = 0;
	if (e.hdr.flags & HWT_SW_CHUNK_TABLE) {
		if (p->table_used) {
			hwt_sw_table_free(&p->table);
			p->table_used = false;
		}
		rr = hwt_sw_table_add(&p->table, pay, e.hdr.payload_size,
				      NULL);
		if (rr)
			return rr == -ENOMEM ? -ENOMEM : -EBADMSG;
		goto add;
	}
	if (e.hdr.flags & HWT_SW_CHUNK_RUNS) {
		p->table_used = true;
		p->ncuts = given;
		rr = given ? given_cuts(p, &e.hdr, pay) :
			cut_runs(p, &e.hdr, pay);
		p->ncuts = 0;
		if (rr) {
			ix->ncuts = e.first_cut;
			return rr;
		}
		goto add;
	}
	hwt_sw_reader_init(&r, pay, e.hdr.payload_size, e.hdr.first_pc);
	for (;;) {
		size_t at;

		/* Most records are one byte, a short step, and most are no
		 * restart point: this loop is what a whole recording costs
		 * per instruction. */
		while (total % HWT_SW_INDEX_STRIDE && r.p < r.end &&
		       *r.p >= 1 && *r.p <= HWT_SW_TAG_STEP_MAX) {
			r.pc += *r.p++;
			total++;
		}
		at = (size_t)(r.p - pay);
		rr = hwt_sw_reader_next(&r, &async, NULL);
		if (rr <= 0)
			break;
		if (total++ % HWT_SW_INDEX_STRIDE == 0) {
			struct hwt_sw_index_cut cut = {
				.rec_off = (uint32_t)at,
				.rec_len = (uint8_t)((size_t)(r.p - pay) - at),
				.async = async, .insns = (uint32_t)total - 1,
				.pc = r.pc,
			};

			if (add_cut(p, &cut))
				goto nomem;
		}
	}
	if (rr < 0 || total != e.hdr.insn_count || r.pc != e.hdr.last_pc) {
		ix->ncuts = e.first_cut;
		return -EBADMSG;
	}
add:
	e.ncuts = ix->ncuts - e.first_cut;
	if (grow((void **)&ix->chunks, ix->nchunks, &p->chunk_cap,
		 sizeof(*ix->chunks)))
		goto nomem;
	ix->chunks[ix->nchunks++] = e;
	return 0;
nomem:
	ix->ncuts = e.first_cut;
	return -ENOMEM;
}

int hwt_sw_packer_flush(struct hwt_sw_packer *p, struct hwt_err *err)
{
	struct hwt_sw_index *ix = &p->ix;
	struct hwt_sw_index_frame *f;
	size_t got;
	int rc;

	if (!p->pending_n)
		return 0;
	if (grow((void **)&ix->frames, ix->nframes, &p->frame_cap,
		 sizeof(*ix->frames)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	got = ZSTD_compress2(p->work->cc, p->work->zbuf, p->work->zcap,
			     p->pending, p->pending_n);
	if (ZSTD_isError(got))
		return hwt_err_set(err, EIO, "compressing the trace: %s",
				   ZSTD_getErrorName(got));
	if ((rc = p->write(p->ctx, p->work->zbuf, got, err)))
		return rc;
	f = &ix->frames[ix->nframes];
	*f = (struct hwt_sw_index_frame){
		.file_off = p->end, .file_len = (uint32_t)got,
		.checksum = hwt_get_le32(p->work->zbuf + got - 4),
		.decoded_len = (uint32_t)p->pending_n,
	};
	/* The chunks not yet in a frame are this one's. */
	f->first_chunk = ix->nframes ? ix->frames[ix->nframes - 1].first_chunk +
		ix->frames[ix->nframes - 1].nchunks : 0;
	f->nchunks = ix->nchunks - f->first_chunk;
	ix->nframes++;
	p->end += got;
	p->decoded += p->pending_n;
	for (size_t k = f->first_chunk; k < ix->nchunks; k++)
		p->insns += ix->chunks[k].hdr.insn_count;
	p->pending_n = 0;
	return 0;
}

int hwt_sw_packer_add(struct hwt_sw_packer *p, const uint8_t *c, size_t n,
		      struct hwt_err *err)
{
	int rc;

	if (n > HWT_SW_INDEX_FRAME_MAX)
		return hwt_err_set(err, EBADMSG, "a %zu-byte chunk", n);
	if ((rc = ready(p, err)))
		return rc;
	if (p->pending_n + n > HWT_SW_INDEX_FRAME_MAX &&
	    (rc = hwt_sw_packer_flush(p, err)))
		return rc;
	rc = index_chunk(p, c, n);
	if (rc == -ENOMEM)
		return hwt_err_set(err, ENOMEM, "out of memory");
	if (rc)
		return hwt_err_set(err, EBADMSG, "not an hwt-sw chunk whose "
				   "records agree with its header");
	memcpy(p->pending + p->pending_n, c, n);
	p->pending_n += n;
	return 0;
}

void hwt_sw_packer_forget(struct hwt_sw_packer *p, uint64_t max_bytes,
			  uint64_t *lost_insns, uint64_t *lost_bytes)
{
	struct hwt_sw_index *ix = &p->ix;
	size_t drop = 0, chunks, cuts;

	if (!max_bytes && p->pending_n) {
		/* The frame being filled goes too. */
		size_t first = ix->nframes ?
			ix->frames[ix->nframes - 1].first_chunk +
			ix->frames[ix->nframes - 1].nchunks : 0;

		for (size_t k = first; k < ix->nchunks; k++)
			*lost_insns += ix->chunks[k].hdr.insn_count;
		*lost_bytes += p->pending_n;
		ix->ncuts = first < ix->nchunks ? ix->chunks[first].first_cut :
			ix->ncuts;
		ix->nchunks = first;
		p->pending_n = 0;
	}
	/* A frame that goes on with runs whose table went with the frame
	 * before it goes too: they cannot be read alone. */
	while (drop < ix->nframes &&
	       (p->end - ix->frames[drop].file_off > max_bytes ||
		(drop && ix->chunks[ix->frames[drop].first_chunk].hdr.flags &
		 (HWT_SW_CHUNK_RUNS | HWT_SW_CHUNK_CUTS)))) {
		const struct hwt_sw_index_frame *f = &ix->frames[drop];

		*lost_bytes += f->decoded_len;
		p->decoded -= f->decoded_len;
		for (size_t k = f->first_chunk;
		     k < f->first_chunk + f->nchunks; k++) {
			*lost_insns += ix->chunks[k].hdr.insn_count;
			p->insns -= ix->chunks[k].hdr.insn_count;
		}
		drop++;
	}
	if (!drop)
		return;
	chunks = drop < ix->nframes ? ix->frames[drop].first_chunk :
		ix->frames[drop - 1].first_chunk + ix->frames[drop - 1].nchunks;
	cuts = chunks < ix->nchunks ? ix->chunks[chunks].first_cut :
		ix->ncuts;
	memmove(ix->frames, ix->frames + drop,
		(ix->nframes - drop) * sizeof(*ix->frames));
	ix->nframes -= drop;
	for (size_t i = 0; i < ix->nframes; i++)
		ix->frames[i].first_chunk -= chunks;
	memmove(ix->chunks, ix->chunks + chunks,
		(ix->nchunks - chunks) * sizeof(*ix->chunks));
	ix->nchunks -= chunks;
	for (size_t i = 0; i < ix->nchunks; i++) {
		ix->chunks[i].first_cut -= cuts;
		ix->chunks[i].frame -= drop;
	}
	if (ix->ncuts > cuts)   /* no cuts yet: no array either */
		memmove(ix->cuts, ix->cuts + cuts,
			(ix->ncuts - cuts) * sizeof(*ix->cuts));
	ix->ncuts -= cuts;
}

uint64_t hwt_sw_packer_kept_from(const struct hwt_sw_packer *p)
{
	return p->ix.nframes ? p->ix.frames[0].file_off : p->end;
}

uint64_t hwt_sw_packer_end(const struct hwt_sw_packer *p)
{
	return p->end;
}

uint64_t hwt_sw_packer_decoded(const struct hwt_sw_packer *p)
{
	return p->decoded;
}

uint64_t hwt_sw_packer_insns(const struct hwt_sw_packer *p)
{
	return p->insns;
}

static uint8_t *index_bytes(const struct hwt_sw_packer *p, size_t *len)
{
	const struct hwt_sw_index *ix = &p->ix;
	uint64_t base = hwt_sw_packer_kept_from(p);
	size_t n = HWT_SWX_HDR_BYTES + ix->nframes * HWT_SWX_FRAME_BYTES +
		ix->nchunks * HWT_SWX_CHUNK_BYTES +
		ix->ncuts * HWT_SWX_CUT_BYTES;
	uint8_t *o = calloc(1, n), *q;

	if (!o)
		return NULL;
	memcpy(o, HWT_SW_INDEX_MAGIC, 4);
	hwt_put_le32(o + 4, HWT_SW_INDEX_VERSION);
	hwt_put_le64(o + 8, p->decoded);
	hwt_put_le32(o + 16, (uint32_t)ix->nframes);
	hwt_put_le32(o + 20, (uint32_t)ix->nchunks);
	hwt_put_le32(o + 24, (uint32_t)ix->ncuts);
	hwt_put_le32(o + 28, HWT_SW_INDEX_STRIDE);
	q = o + HWT_SWX_HDR_BYTES;
	for (size_t i = 0; i < ix->nframes; i++, q += HWT_SWX_FRAME_BYTES) {
		const struct hwt_sw_index_frame *f = &ix->frames[i];

		hwt_put_le64(q, f->file_off - base);
		hwt_put_le32(q + 8, f->file_len);
		hwt_put_le32(q + 12, f->checksum);
		hwt_put_le32(q + 16, f->decoded_len);
		hwt_put_le32(q + 20, (uint32_t)f->nchunks);
	}
	for (size_t i = 0; i < ix->nchunks; i++, q += HWT_SWX_CHUNK_BYTES) {
		const struct hwt_sw_index_chunk *c = &ix->chunks[i];

		hwt_put_le64(q, c->hdr.first_pc);
		hwt_put_le64(q + 8, c->hdr.first_seq);
		hwt_put_le64(q + 16, c->hdr.last_pc);
		hwt_put_le32(q + 24, c->hdr.payload_size);
		hwt_put_le32(q + 28, c->hdr.insn_count);
		hwt_put_le32(q + 32, c->hdr.flags);
		hwt_put_le32(q + 36, (uint32_t)c->ncuts);
	}
	for (size_t i = 0; i < ix->ncuts; i++, q += HWT_SWX_CUT_BYTES) {
		hwt_put_le32(q, ix->cuts[i].rec_off);
		q[4] = ix->cuts[i].rec_len;
		q[5] = (ix->cuts[i].async ? HWT_SWX_CUT_ASYNC : 0) |
			(ix->cuts[i].prev_known ? HWT_SWX_CUT_PREV : 0);
		hwt_put_le64(q + 8, ix->cuts[i].pc);
		hwt_put_le32(q + 16, ix->cuts[i].insns);
	}
	*len = n;
	return o;
}

int hwt_sw_packer_index(struct hwt_sw_packer *p, uint8_t **idx,
			size_t *idx_n, struct hwt_err *err)
{
	size_t raw_n = 0;
	uint8_t *raw;
	int rc;

	*idx = NULL;
	*idx_n = 0;
	if (p->pending_n)
		return hwt_err_set(err, EINVAL, "the trace packer was not "
				   "flushed before its index was asked for");
	if (!(raw = index_bytes(p, &raw_n)))
		return hwt_err_set(err, ENOMEM, "out of memory for the "
				   "trace's index");
	rc = hwt_zstd_pack(raw, raw_n, idx, idx_n, err);
	free(raw);
	return rc;
}

/* ---- a whole trace in memory ---- */

struct membuf {
	uint8_t *v;
	size_t n, cap;
};

static int mem_write(void *ctx, const uint8_t *frame, size_t n,
		     struct hwt_err *err)
{
	struct membuf *m = ctx;

	if (m->cap - m->n < n) {
		size_t cap = m->cap * 2 > m->n + n ? m->cap * 2 : m->n + n;
		uint8_t *v = realloc(m->v, cap);

		if (!v)
			return hwt_err_set(err, ENOMEM, "out of memory");
		m->v = v;
		m->cap = cap;
	}
	memcpy(m->v + m->n, frame, n);
	m->n += n;
	return 0;
}

/* Every chunk of trace into p; -EBADMSG when one is not a plain chunk
 * that holds (the trace then gets no index). */
static int pack_chunks(struct hwt_sw_packer *p, const uint8_t *trace,
		       size_t n, struct hwt_err *err)
{
	size_t off = 0;

	while (off < n) {
		struct hwt_sw_chunk_hdr h;
		size_t len;
		int rc;

		if (hwt_sw_chunk_hdr_unpack_flags(trace + off, n - off,
						  HWT_SW_CHUNK_RUNS_FLAGS, &h, NULL))
			return -EBADMSG;
		len = HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
		if ((rc = hwt_sw_packer_add(p, trace + off, len, err)))
			return rc;
		off += len;
	}
	return hwt_sw_packer_flush(p, err);
}

int hwt_sw_trace_pack(const uint8_t *trace, size_t n, uint8_t **zst,
		      size_t *zst_n, uint8_t **idx, size_t *idx_n,
		      struct hwt_err *err)
{
	struct membuf m = { 0 };
	struct hwt_sw_packer *p = NULL;
	int rc = 0;

	*zst = *idx = NULL;
	*zst_n = *idx_n = 0;
	if (n && n <= HWT_BUNDLE_MAX_DECODED &&
	    !(rc = hwt_sw_packer_new(mem_write, &m, &p, err))) {
		rc = pack_chunks(p, trace, n, err);
		if (!rc)
			rc = hwt_sw_packer_index(p, idx, idx_n, err);
		hwt_sw_packer_free(p);
		if (rc == -EBADMSG) {
			free(m.v);
			m = (struct membuf){ 0 };
		}
	}
	if (rc && rc != -EBADMSG) {
		free(m.v);
		return rc;
	}
	/* A trace that cannot be indexed: one frame. */
	if (!*idx && (rc = hwt_zstd_pack(trace, n, &m.v, &m.n, err)))
		return rc;
	*zst = m.v;
	*zst_n = m.n;
	return 0;
}
