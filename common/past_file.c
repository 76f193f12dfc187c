// SPDX-License-Identifier: BSD-2-Clause
/* past_file.c - a bundle's data history file: each thread's register log
 * and the memory history, as the recorder kept them when the program
 * stopped (layout in docs/bundle.md).
 *
 * The file is a table of contents and independently compressed zstd
 * frames, so that opening it costs the table only: a thread's registers
 * are read a group of blocks at a time when first asked, the stores and
 * their old bytes when memory is first asked. The file is untrusted: the
 * table is checked whole when it is opened (every count against its
 * bounds, every frame inside the file), each frame when it is read (its
 * size as the table says, its checksum, its parts against each other), so
 * what is asked of it later cannot read outside it. A damaged table
 * refuses the file; a damaged frame leaves what it holds unknown. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "array.h"
#include "hwt-past.h"
#include "past_pack.h"
#include "sw_index_layout.h"

#define MAGIC_LEN 8u
/* The file's last bytes: the table's frame (offset, size), then this. */
#define TRAILER_MAGIC "HWTPEND2"
#define TRAILER_SIZE 24u
#define RUN_SIZE 16u
#define ENTRY_SIZE 40u           /* a store in memory */
#define PACKED_STORE_MIN 3u      /* and in the file: three numbers */
#define GROUP_ENTRY_SIZE 16u
#define PAST_FILE_MAX (16ull << 30)
/* What a frame may decode to: the table, a group of packed register
 * blocks (at most every word changed in every entry, its mask and pc ten
 * bytes each), the stores and old bytes. */
#define TOC_MAX (1ull << 30)
#define GROUP_RAW_MAX \
	((uint64_t)HWT_PAST_GROUP_BLOCKS * \
	 (10 + 8 * HWT_REGLOG_MAX_WORDS + \
	  (HWT_REGLOG_BLOCK - 1) * (20 + 8 * HWT_REGLOG_MAX_WORDS)))
#define MEMORY_RAW_MAX PAST_FILE_MAX

/* ---- writing ------------------------------------------------------------- */

/* Bytes in memory: the table, assembled before it is compressed. */
struct vec {
	uint8_t *p;
	size_t len, cap;
	bool failed;
};

static void vec_put(struct vec *v, const void *p, size_t n)
{
	if (v->failed || !n)
		return;
	if (HWT_ARRAY_RESERVE(v->p, v->cap, v->len + n, 4096)) {
		v->failed = true;
		return;
	}
	memcpy(v->p + v->len, p, n);
	v->len += n;
}

static void vec_put64(struct vec *v, uint64_t x)
{
	uint8_t b[8];

	hwt_put_le64(b, x);
	vec_put(v, b, 8);
}

/* The file as it is written: plain bytes, or a frame's raw bytes going
 * through zstd a piece at a time, so that a long history is never held
 * twice. */
#define PIECE (1u << 20)

struct out {
	FILE *f;
	uint64_t pos;              /* the file's length so far */
	uint64_t frame_at;         /* where the open frame starts */
	ZSTD_CCtx *z;
	uint8_t *buf, *zbuf;
	size_t len, zcap;
	bool failed;
};

static void put_plain(struct out *o, const void *p, size_t n)
{
	if (o->failed)
		return;
	if (fwrite(p, 1, n, o->f) != n)
		o->failed = true;
	o->pos += n;
}

static void drain(struct out *o, ZSTD_EndDirective end)
{
	ZSTD_inBuffer in = { o->buf, o->len, 0 };
	size_t left;

	do {
		ZSTD_outBuffer zo = { o->zbuf, o->zcap, 0 };

		left = ZSTD_compressStream2(o->z, &zo, &in, end);
		if (ZSTD_isError(left)) {
			o->failed = true;
			return;
		}
		put_plain(o, o->zbuf, zo.pos);
	} while (end == ZSTD_e_end ? left != 0 : in.pos < in.size);
	o->len = 0;
}

/* A frame of size raw bytes (the frame says it: a reader checks it). */
static void frame_begin(struct out *o, uint64_t size)
{
	o->frame_at = o->pos;
	if (ZSTD_isError(ZSTD_CCtx_reset(o->z, ZSTD_reset_session_only)) ||
	    ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(o->z, size)))
		o->failed = true;
}

static void put(struct out *o, const void *p, size_t n)
{
	while (n && !o->failed) {
		size_t k = PIECE - o->len < n ? PIECE - o->len : n;

		memcpy(o->buf + o->len, p, k);
		o->len += k;
		p = (const uint8_t *)p + k;
		n -= k;
		if (o->len == PIECE)
			drain(o, ZSTD_e_continue);
	}
}

/* The frame ends; the table says where it is. */
static void frame_end(struct out *o, struct vec *toc)
{
	if (!o->failed)
		drain(o, ZSTD_e_end);
	vec_put64(toc, o->frame_at);
	vec_put64(toc, o->pos - o->frame_at);
}

/* A register log's groups as written so far: their frames, the blocks
 * they hold, and the log's oldest entry then (a log that starts again
 * has them written anew). */
struct log_out {
	struct hwt_frame_ref *refs;
	size_t nrefs, cap;
	size_t written;            /* blocks */
	uint64_t first;
};

struct hwt_past_writer {
	struct out o;
	FILE *f;
	char *path;                /* NULL: into memory */
	struct log_out (*logs)[2];
	size_t nlogs;
	struct hwt_bytes packed;   /* a frame's packed bytes (past_pack.h) */
};

/* Blocks [from, to) of l (which: 0 general registers, 1 x87/SSE),
 * packed, as one frame. */
static int put_group(struct hwt_past_writer *w, struct log_out *lo,
		     const struct hwt_reglog *l, int which, size_t from,
		     size_t to)
{
	struct out *o = &w->o;

	if (HWT_ARRAY_RESERVE(lo->refs, lo->cap, lo->nrefs + 1, 16))
		return -ENOMEM;
	w->packed.n = 0;
	if (hwt_past_pack_blocks(l, which, from, to, &w->packed))
		return -ENOMEM;
	frame_begin(o, w->packed.n);
	put(o, w->packed.p, w->packed.n);
	if (!o->failed)
		drain(o, ZSTD_e_end);
	lo->refs[lo->nrefs++] = (struct hwt_frame_ref){
		o->frame_at, o->pos - o->frame_at };
	lo->written = to;
	return o->failed ? -EIO : 0;
}

/* Thread ti's log which: its groups from the first not written, the
 * last of them only if all (a log handed over while it grows keeps its
 * newest block open). */
static int put_groups(struct hwt_past_writer *w, size_t ti, int which,
		      struct hwt_reglog *l, bool all, bool release)
{
	struct log_out *lo;
	size_t done;
	int rc = 0;

	if (ti >= w->nlogs) {
		size_t n = ti + 1;
		struct log_out (*v)[2] = realloc(w->logs, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memset(v + w->nlogs, 0, (n - w->nlogs) * sizeof(*v));
		w->logs = v;
		w->nlogs = n;
	}
	lo = &w->logs[ti][which];
	/* Started again (a gap in the thread's entries): what was written
	 * of it is left unnamed. */
	if (lo->written && (l->first != lo->first || l->nblocks < lo->written))
		lo->nrefs = lo->written = 0;
	lo->first = l->first;
	done = all ? l->nblocks : l->nblocks ? l->nblocks - 1 : 0;
	while (rc == 0 && lo->written < done &&
	       (all || done - lo->written >= HWT_PAST_GROUP_BLOCKS)) {
		size_t to = lo->written + HWT_PAST_GROUP_BLOCKS;
		size_t from = lo->written;

		rc = put_group(w, lo, l, which, from, to < done ? to : done);
		if (rc == 0 && release)
			hwt_reglog_release(l, from, lo->written);
	}
	return rc;
}

static int writer_new(FILE *f, char *path, struct hwt_past_writer **out)
{
	struct hwt_past_writer *w = calloc(1, sizeof(*w));

	*out = w;
	if (!w)
		return -ENOMEM;
	w->f = w->o.f = f;
	w->path = path;
	w->o.z = ZSTD_createCCtx();
	w->o.zcap = ZSTD_CStreamOutSize();
	w->o.buf = malloc(PIECE);
	w->o.zbuf = malloc(w->o.zcap);
	if (!w->o.z || !w->o.buf || !w->o.zbuf ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->o.z,
						ZSTD_c_compressionLevel,
						HWT_SW_ZSTD_LEVEL)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->o.z, ZSTD_c_checksumFlag,
						1)))
		return -ENOMEM;
	put_plain(&w->o, HWT_PAST_MAGIC, MAGIC_LEN);
	return w->o.failed ? -EIO : 0;
}

static void writer_free(struct hwt_past_writer *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nlogs; i++)
		for (int k = 0; k < 2; k++)
			free(w->logs[i][k].refs);
	free(w->logs);
	hwt_bytes_free(&w->packed);
	ZSTD_freeCCtx(w->o.z);
	free(w->o.buf);
	free(w->o.zbuf);
	free(w->path);
	free(w);
}

int hwt_past_writer_open(const char *path, struct hwt_past_writer **out,
			 struct hwt_err *err)
{
	FILE *f = fopen(path, "wbx");
	char *copy = strdup(path);
	int rc, code = errno;

	*out = NULL;
	if (!f || !copy) {
		if (f)
			fclose(f);
		free(copy);
		return f ? hwt_err_set(err, ENOMEM, "out of memory") :
		       hwt_err_set(err, code, "creating %s: %s", path,
				   strerror(code));
	}
	if ((rc = writer_new(f, copy, out)) < 0) {
		if (*out) {
			hwt_past_writer_abort(*out);
		} else {
			fclose(f);
			remove(path);
			free(copy);
		}
		*out = NULL;
		return hwt_err_set(err, -rc, "writing %s: %s", path,
				   strerror(-rc));
	}
	return 0;
}

int hwt_past_writer_flush(struct hwt_past_writer *w, size_t ti,
			  struct hwt_past_thread *t)
{
	int rc = put_groups(w, ti, 0, &t->regs, false, true);

	return rc ? rc : put_groups(w, ti, 1, &t->fpregs, false, true);
}

void hwt_past_writer_abort(struct hwt_past_writer *w)
{
	if (!w)
		return;
	fclose(w->f);
	if (w->path)
		remove(w->path);
	writer_free(w);
}

/* The rest of p: the groups not written, the stores and old bytes, the
 * table and the trailer. */
static int writer_end(struct hwt_past_writer *w, const struct hwt_past *p)
{
	struct out *o = &w->o;
	struct vec toc = { 0 };
	uint8_t trailer[TRAILER_SIZE];
	int rc = 0;

	vec_put64(&toc, p->horizon);
	vec_put64(&toc, p->nthreads);
	for (size_t i = 0; rc == 0 && i < p->nthreads; i++) {
		struct hwt_past_thread *t = &p->threads[i];

		/* p's logs are not changed: nothing is released. */
		rc = put_groups(w, i, 0, &t->regs, true, false);
		if (rc == 0)
			rc = put_groups(w, i, 1, &t->fpregs, true, false);
		vec_put64(&toc, (uint64_t)(uint32_t)t->tid);
		vec_put64(&toc, t->end_index);
		vec_put64(&toc, t->last_seq);
		vec_put64(&toc, t->nruns);
		for (size_t k = 0; k < t->nruns; k++) {
			vec_put64(&toc, t->runs[k].index);
			vec_put64(&toc, t->runs[k].seq);
		}
		for (int k = 0; rc == 0 && k < 2; k++) {
			const struct hwt_reglog *l = k ? &t->fpregs : &t->regs;
			const struct log_out *lo = &w->logs[i][k];

			vec_put64(&toc, l->nwords);
			vec_put64(&toc, l->first);
			vec_put64(&toc, l->n);
			vec_put64(&toc, lo->nrefs);
			for (size_t g = 0; g < lo->nrefs; g++) {
				vec_put64(&toc, lo->refs[g].off);
				vec_put64(&toc, lo->refs[g].csize);
			}
		}
	}
	if (rc)
		goto out;
	vec_put64(&toc, p->n);
	w->packed.n = 0;
	if ((rc = hwt_past_pack_stores(p->e, p->n, &w->packed)) < 0)
		goto out;
	frame_begin(o, w->packed.n);
	put(o, w->packed.p, w->packed.n);
	frame_end(o, &toc);
	vec_put64(&toc, p->nbytes);
	frame_begin(o, p->nbytes);
	put(o, p->bytes, p->nbytes);
	frame_end(o, &toc);
	if (toc.failed) {
		rc = -ENOMEM;
	} else {
		uint64_t at = o->pos;

		frame_begin(o, toc.len);
		put(o, toc.p, toc.len);
		if (!o->failed)
			drain(o, ZSTD_e_end);
		hwt_put_le64(trailer, at);
		hwt_put_le64(trailer + 8, o->pos - at);
		memcpy(trailer + 16, TRAILER_MAGIC, 8);
		put_plain(o, trailer, TRAILER_SIZE);
		rc = o->failed ? -EIO : 0;
	}
out:
	free(toc.p);
	return rc;
}

int hwt_past_writer_finish(struct hwt_past_writer *w, const struct hwt_past *p,
			   struct hwt_err *err)
{
	int rc = writer_end(w, p), code;
	const char *path = w->path;

	errno = 0;
	if (rc == 0 && fflush(w->f) != 0)
		rc = -(errno ? errno : EIO);
	if (rc < 0) {
		code = rc == -EIO && errno ? errno : -rc;
		hwt_err_set(err, code, "writing %s: %s", path,
			    rc == -EINVAL ? "stores out of step order" :
			    strerror(code));
		hwt_past_writer_abort(w);
		return -code;
	}
	code = fclose(w->f) == 0 ? 0 : errno ? errno : EIO;
	w->f = NULL;
	if (code) {
		remove(path);
		hwt_err_set(err, code, "writing %s: %s", path, strerror(code));
	}
	writer_free(w);
	return -code;
}

int hwt_past_write(const char *path, const struct hwt_past *p,
		   struct hwt_err *err)
{
	struct hwt_past_writer *w;
	int rc = hwt_past_writer_open(path, &w, err);

	return rc < 0 ? rc : hwt_past_writer_finish(w, p, err);
}

int hwt_past_format(const struct hwt_past *p, uint8_t **data, size_t *len,
		    struct hwt_err *err)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	struct hwt_past_writer *w = NULL;
	int rc;

	*data = NULL;
	*len = 0;
	if (!f)
		return hwt_err_set(err, ENOMEM, "out of memory");
	rc = writer_new(f, NULL, &w);
	if (rc == 0)
		rc = writer_end(w, p);
	writer_free(w);
	if (fclose(f) != 0 || rc < 0) {
		free(buf);
		return rc == -EINVAL ? hwt_err_set(err, EINVAL, "stores out "
						   "of step order") :
		       hwt_err_set(err, ENOMEM, "out of memory");
	}
	*data = (uint8_t *)buf;
	*len = size;
	return 0;
}

/* ---- reading: frames ------------------------------------------------------ */

/* The frame f of p's file, which must decode to exactly want bytes (or,
 * want UINT64_MAX, at most max), into *out (malloc'd; at least 1 byte). */
static int unpack(const struct hwt_past *p, struct hwt_frame_ref f,
		  uint64_t want, uint64_t max, const char *what,
		  uint8_t **out, size_t *len, struct hwt_err *err)
{
	const uint8_t *src;
	unsigned long long size;
	uint8_t *buf;
	size_t got;

	*out = NULL;
	if (f.off < MAGIC_LEN || f.off > p->file_len - TRAILER_SIZE ||
	    f.csize > p->file_len - TRAILER_SIZE - f.off || !f.csize)
		return hwt_err_set(err, EBADMSG, "data history: %s outside the "
				   "file", what);
	src = p->file + f.off;
	size = ZSTD_getFrameContentSize(src, (size_t)f.csize);
	if (ZSTD_findFrameCompressedSize(src, (size_t)f.csize) != f.csize ||
	    size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR ||
	    (want != UINT64_MAX ? size != want : size > max))
		return hwt_err_set(err, EBADMSG, "data history: %s not a frame "
				   "of its size at byte %" PRIu64, what, f.off);
	if (!(buf = malloc(size ? (size_t)size : 1)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	got = ZSTD_decompress(buf, (size_t)size, src, (size_t)f.csize);
	if (ZSTD_isError(got) || got != size) {
		free(buf);
		return hwt_err_set(err, EBADMSG, "data history: %s damaged at "
				   "byte %" PRIu64 " (%s)", what, f.off,
				   ZSTD_isError(got) ? ZSTD_getErrorName(got) :
				   "short");
	}
	*out = buf;
	*len = (size_t)size;
	return 0;
}

/* ---- reading: the table --------------------------------------------------- */

struct in {
	const uint8_t *p, *start, *end;
	struct hwt_err *err;
};

static int bad(struct in *c, const char *what)
{
	return hwt_err_set(c->err, EBADMSG, "data history: %s at byte %zu "
			   "of its table", what, (size_t)(c->p - c->start));
}

static bool left(const struct in *c, uint64_t n, uint64_t size)
{
	return size == 0 || n <= (uint64_t)(c->end - c->p) / size;
}

static bool get64(struct in *c, uint64_t *v)
{
	if (c->end - c->p < 8)
		return false;
	*v = hwt_get_le64(c->p);
	c->p += 8;
	return true;
}

static bool get_tid(struct in *c, int32_t *tid)
{
	uint64_t v;

	if (!get64(c, &v) || v == 0 || v > INT32_MAX)
		return false;
	*tid = (int32_t)v;
	return true;
}

static bool get_frame(struct in *c, uint64_t toc_at, struct hwt_frame_ref *f)
{
	/* Every frame lies between the magic and the table. */
	return get64(c, &f->off) && get64(c, &f->csize) &&
	       f->off >= MAGIC_LEN && f->off <= toc_at && f->csize &&
	       f->csize <= toc_at - f->off;
}

static int read_runs(struct in *c, struct hwt_past_thread *t)
{
	uint64_t n;

	if (!get64(c, &n) || !left(c, n, RUN_SIZE))
		return bad(c, "a count of runs beyond the table");
	if (n && !(t->runs = calloc(n, sizeof(*t->runs))))
		return hwt_err_set(c->err, ENOMEM, "out of memory");
	t->nruns = n;
	for (size_t k = 0; k < n; k++) {
		get64(c, &t->runs[k].index);
		get64(c, &t->runs[k].seq);
		if (k && (t->runs[k].index <= t->runs[k - 1].index ||
			  t->runs[k].seq <= t->runs[k - 1].seq))
			return bad(c, "runs out of order");
	}
	if (n && t->last_seq < t->runs[n - 1].seq)
		return bad(c, "a thread's newest step before its last run");
	return 0;
}

/* A register log of the words a thread's set has (want), or none: its
 * header and where its groups are; the blocks are read when asked. */
static int read_regs(struct in *c, uint64_t toc_at, struct hwt_past_thread *t,
		     int which, unsigned want)
{
	struct hwt_reglog *l = which ? &t->fpregs : &t->regs;
	uint64_t nwords, ngroups, nblocks;

	if (!get64(c, &nwords) || (nwords != want && nwords != 0))
		return bad(c, "a register log of an unknown register set");
	l->nwords = (unsigned)nwords;
	if (!get64(c, &l->first) || !get64(c, &l->n) || !get64(c, &ngroups) ||
	    !left(c, ngroups, GROUP_ENTRY_SIZE))
		return bad(c, "a register log beyond the table");
	/* Entries are found by index / HWT_REGLOG_BLOCK: every block but
	 * the newest is full. */
	nblocks = l->n / HWT_REGLOG_BLOCK + (l->n % HWT_REGLOG_BLOCK != 0);
	if ((!nwords && l->n) || l->first + l->n < l->first ||
	    ngroups != (nblocks + HWT_PAST_GROUP_BLOCKS - 1) /
		       HWT_PAST_GROUP_BLOCKS)
		return bad(c, "a register log whose groups do not add up");
	if (ngroups && (!(l->blocks = calloc(nblocks, sizeof(*l->blocks))) ||
			!(t->groups[which] = calloc(ngroups,
						    sizeof(**t->groups)))))
		return hwt_err_set(c->err, ENOMEM, "out of memory");
	l->nblocks = l->alloc = nblocks;
	t->ngroups[which] = ngroups;
	for (size_t g = 0; g < ngroups; g++) {
		struct hwt_frame_ref f;

		if (!get_frame(c, toc_at, &f))
			return bad(c, "a register group outside the file");
		t->groups[which][g].off = f.off;
		t->groups[which][g].csize = f.csize;
	}
	return 0;
}

static int read_toc(struct hwt_past *p, const uint8_t *data, size_t len,
		    uint64_t toc_at, struct hwt_err *err)
{
	struct in c = { data, data, data + len, err };
	uint64_t nthreads, n;
	int rc = 0;

	if (!get64(&c, &p->horizon) || !get64(&c, &nthreads))
		return bad(&c, "a header cut short");
	if (nthreads > HWT_PAST_MAX_THREADS)
		return bad(&c, "more threads than a bundle holds");
	if (nthreads && !(p->threads = calloc(nthreads, sizeof(*p->threads))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; !rc && i < nthreads; i++) {
		struct hwt_past_thread *t = &p->threads[i];

		p->nthreads = i + 1;
		if (!get_tid(&c, &t->tid) || !get64(&c, &t->end_index) ||
		    !get64(&c, &t->last_seq))
			rc = bad(&c, "a thread cut short or of a wrong tid");
		else if (hwt_past_thread_of(p, t->tid) != t)
			rc = bad(&c, "a thread twice");
		if (!rc)
			rc = read_runs(&c, t);
		if (!rc)
			rc = read_regs(&c, toc_at, t, 0,
				       HWT_REGLOG_GPR_WORDS);
		if (!rc)
			rc = read_regs(&c, toc_at, t, 1,
				       HWT_REGLOG_FP_WORDS);
	}
	if (rc)
		return rc;
	if (!get64(&c, &n) || n > MEMORY_RAW_MAX / ENTRY_SIZE ||
	    !get_frame(&c, toc_at, &p->stores))
		return bad(&c, "a count of stores or their frame out of "
			   "bounds");
	p->n = (size_t)n;
	if (!get64(&c, &n) || n > MEMORY_RAW_MAX ||
	    !get_frame(&c, toc_at, &p->old_bytes))
		return bad(&c, "a count of old bytes or their frame out of "
			   "bounds");
	p->nbytes = (size_t)n;
	if (c.p != c.end)
		return bad(&c, "bytes after the table's end");
	return 0;
}

/* The file's bytes are p->file: its trailer, then its table. */
static int open_file(struct hwt_past *p, struct hwt_err *err)
{
	const uint8_t *tail;
	struct hwt_frame_ref toc;
	uint8_t *data;
	size_t len;
	int rc;

	if (p->file_len >= MAGIC_LEN &&
	    memcmp(p->file, HWT_PAST_MAGIC_OLD, MAGIC_LEN) == 0)
		return hwt_err_set(err, EBADMSG, "a data history of format 2 "
				   "(%.8s, from an older hwtrace), which this "
				   "one does not read: record again",
				   HWT_PAST_MAGIC_OLD);
	if (p->file_len < MAGIC_LEN ||
	    memcmp(p->file, HWT_PAST_MAGIC, MAGIC_LEN))
		return hwt_err_set(err, EBADMSG, "not a data history file "
				   "(no %.8s magic)", HWT_PAST_MAGIC);
	if (p->file_len < MAGIC_LEN + TRAILER_SIZE ||
	    memcmp(p->file + p->file_len - 8, TRAILER_MAGIC, 8))
		return hwt_err_set(err, EBADMSG, "data history: cut short (no "
				   "table at its end, %zu bytes)",
				   p->file_len);
	tail = p->file + p->file_len - TRAILER_SIZE;
	toc.off = hwt_get_le64(tail);
	toc.csize = hwt_get_le64(tail + 8);
	if (toc.off > p->file_len - TRAILER_SIZE ||
	    toc.csize != p->file_len - TRAILER_SIZE - toc.off)
		return hwt_err_set(err, EBADMSG, "data history: a table "
				   "that does not end the file");
	if ((rc = unpack(p, toc, UINT64_MAX, TOC_MAX, "its table", &data,
			 &len, err)) < 0)
		return rc;
	rc = read_toc(p, data, len, toc.off, err);
	free(data);
	return rc;
}

static int open_past(const uint8_t *file, size_t n, bool mapped,
		     struct hwt_past **out, struct hwt_err *err)
{
	struct hwt_past *p = calloc(1, sizeof(*p));
	int rc;

	*out = NULL;
	if (!p) {
		if (mapped)
			munmap((void *)file, n);
		else
			free((void *)file);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	p->file = file;
	p->file_len = n;
	p->mapped = mapped;
	if ((rc = open_file(p, err)) < 0) {
		hwt_past_free(p);
		return rc == -ENOMEM ? rc : -EBADMSG;
	}
	*out = p;
	return 0;
}

int hwt_past_load(const uint8_t *file, size_t n, struct hwt_past **out,
		  struct hwt_err *err)
{
	uint8_t *copy = malloc(n ? n : 1);

	*out = NULL;
	if (!copy)
		return hwt_err_set(err, ENOMEM, "out of memory");
	memcpy(copy, file, n);
	return open_past(copy, n, false, out, err);
}

int hwt_past_read(const char *path, struct hwt_past **out,
		  struct hwt_err *err)
{
	struct stat st;
	void *map;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc, code;

	*out = NULL;
	if (fd < 0)
		return hwt_err_set(err, errno, "%s: %s", path,
				   strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		code = errno && !S_ISREG(st.st_mode) ? errno : EINVAL;
		close(fd);
		return hwt_err_set(err, code, "%s: not a regular file", path);
	}
	if (st.st_size < (off_t)(MAGIC_LEN + TRAILER_SIZE) ||
	    (uint64_t)st.st_size > PAST_FILE_MAX) {
		close(fd);
		return hwt_err_set(err, EBADMSG, "%s: data history: %lld bytes "
				   "is no data history file", path,
				   (long long)st.st_size);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	code = errno;
	close(fd);
	if (map == MAP_FAILED)
		return hwt_err_set(err, code, "%s: %s", path, strerror(code));
	rc = open_past(map, (size_t)st.st_size, true, out, err);
	return rc < 0 ? hwt_err_prefix(err, "%s: ", path) : 0;
}

void hwt_past_free(struct hwt_past *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nthreads; i++) {
		struct hwt_past_thread *t = &p->threads[i];

		free(t->runs);
		free(t->regs.blocks);
		free(t->fpregs.blocks);
		for (int w = 0; w < 2; w++) {
			for (size_t g = 0; g < t->ngroups[w]; g++)
				free(t->groups[w][g].raw);
			free(t->groups[w]);
		}
	}
	hwt_past_index_wait(p);
	free(p->threads);
	free(p->e);
	free(p->bytes);
	hwt_mem_index_free(p->index);
	if (p->mapped)
		munmap((void *)p->file, p->file_len);
	else
		free((void *)p->file);
	free(p);
}

/* ---- reading: registers --------------------------------------------------- */

/* Group g of thread t's log (which): its blocks, each checked. */
static int read_group(struct hwt_past *p, struct hwt_past_thread *t,
		      int which, size_t g)
{
	struct hwt_reglog *l = which ? &t->fpregs : &t->regs;
	struct hwt_past_group *grp = &t->groups[which][g];
	struct hwt_frame_ref f = { grp->off, grp->csize };
	struct hwt_err err = { 0 };
	size_t from = g * HWT_PAST_GROUP_BLOCKS, to, len;
	uint8_t *raw;
	int rc;

	to = from + HWT_PAST_GROUP_BLOCKS < l->nblocks ?
	     from + HWT_PAST_GROUP_BLOCKS : l->nblocks;
	if ((rc = unpack(p, f, UINT64_MAX, GROUP_RAW_MAX, "a register group",
			 &raw, &len, &err)) < 0)
		return grp->state = rc;
	/* Nothing of a damaged group is believed: its blocks stay empty. */
	rc = hwt_past_unpack_blocks(l, which, from, to, raw, raw + len,
				    &grp->raw);
	free(raw);
	return grp->state = rc < 0 ? rc : 1;
}

int hwt_past_regs(struct hwt_past *p, const struct hwt_past_thread *t,
		  bool fp, uint64_t index, void *out)
{
	int which = fp ? 1 : 0;
	struct hwt_past_thread *mt = &p->threads[t - p->threads];
	const struct hwt_reglog *l = fp ? &t->fpregs : &t->regs;
	size_t g;
	int rc;

	if (index < l->first || index - l->first >= l->n)
		return -ENOENT;
	g = (size_t)((index - l->first) / HWT_REGLOG_BLOCK /
		     HWT_PAST_GROUP_BLOCKS);
	if (g < t->ngroups[which] && mt->groups[which][g].state <= 0) {
		if (mt->groups[which][g].state < 0)
			return -EBADMSG;
		if ((rc = read_group(p, mt, which, g)) < 0)
			return rc == -ENOMEM ? rc : -EBADMSG;
	}
	return hwt_reglog_get(l, index, out);
}

/* ---- reading: memory ------------------------------------------------------ */

static int read_stores(struct hwt_past *p, struct hwt_err *err)
{
	const char *wrong;
	uint8_t *raw;
	size_t len, at;
	int rc;

	if ((rc = unpack(p, p->old_bytes, p->nbytes, 0, "its old bytes",
			 &p->bytes, &len, err)) < 0)
		return rc;
	if ((rc = unpack(p, p->stores, UINT64_MAX,
			 (uint64_t)p->n * HWT_PAST_PACKED_STORE_MAX,
			 "its stores", &raw, &len, err)) < 0)
		return rc;
	/* Checked before the entries are allocated: a small frame cannot
	 * ask for many. */
	if (len / PACKED_STORE_MIN < p->n) {
		free(raw);
		return hwt_err_set(err, EBADMSG, "data history: fewer stores "
				   "than its table counts");
	}
	if (p->n && !(p->e = calloc(p->n, sizeof(*p->e)))) {
		free(raw);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	hwt_advise_huge(p->e, p->n * sizeof(*p->e));
	rc = hwt_past_unpack_stores(raw, raw + len, p->e, p->n, p->nbytes,
				    &wrong, &at);
	free(raw);
	if (rc < 0)
		return hwt_err_set(err, EBADMSG, "data history: %s at store "
				   "%zu", wrong, at);
	return 0;
}

struct hwt_past_index_job {
	pthread_t thread;
	const struct hwt_mem_entry *e;
	size_t n;
	struct hwt_mem_index *index;
};

static void *build_index(void *arg)
{
	struct hwt_past_index_job *job = arg;

	/* Without the index memory is found, more slowly, by walking. */
	hwt_mem_index_build(job->e, job->n, &job->index);
	return NULL;
}

void hwt_past_index_wait(struct hwt_past *p)
{
	struct hwt_past_index_job *job = p->index_job;

	if (!job)
		return;
	pthread_join(job->thread, NULL);
	p->index = job->index;
	p->index_job = NULL;
	free(job);
}

int hwt_past_memory(struct hwt_past *p, struct hwt_err *err)
{
	int rc = hwt_past_memory_begin(p, err);

	hwt_past_index_wait(p);
	return rc;
}

int hwt_past_memory_begin(struct hwt_past *p, struct hwt_err *err)
{
	struct hwt_past_index_job *job;
	int rc = 0;

	if (p->file && p->memory < 0)
		return hwt_err_set(err, -p->memory, "data history: its stores "
				   "could not be read");
	if (p->file && p->memory == 0) {
		rc = read_stores(p, err);
		if (rc < 0) {
			free(p->e);
			free(p->bytes);
			p->e = NULL;
			p->bytes = NULL;
			p->memory = rc;
			return rc;
		}
		p->memory = 1;
	}
	if (p->index || p->index_job)
		return rc;
	job = calloc(1, sizeof(*job));
	if (job) {
		*job = (struct hwt_past_index_job){ .e = p->e, .n = p->n };
		if (pthread_create(&job->thread, NULL, build_index, job) == 0) {
			p->index_job = job;
			return rc;
		}
	}
	free(job);
	/* Without the index memory is found, more slowly, by walking. */
	hwt_mem_index_build(p->e, p->n, &p->index);
	return rc;
}

const struct hwt_past_thread *hwt_past_thread_of(const struct hwt_past *p,
						 int32_t tid)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == tid)
			return &p->threads[i];
	return NULL;
}

void hwt_past_mem_view(const struct hwt_past *p, struct hwt_mem_thread *threads,
		       size_t (*read_now)(void *, uint64_t, void *, size_t),
		       void *ctx, struct hwt_mem_history *out)
{
	/* A file's stores not read (or not readable): nothing of memory's
	 * past is known, rather than the present taken for it. */
	bool known = !p->file || p->memory == 1;

	for (size_t i = 0; i < p->nthreads; i++)
		threads[i] = (struct hwt_mem_thread){
			.tid = p->threads[i].tid, .runs = p->threads[i].runs,
			.nruns = p->threads[i].nruns,
			.last_seq = p->threads[i].last_seq,
		};
	*out = (struct hwt_mem_history){
		.e = known ? p->e : NULL, .n = known ? p->n : 0,
		.index = known ? p->index : NULL,
		.index_pending = known && p->index_job,
		.bytes = known ? p->bytes : NULL,
		.horizon = known ? p->horizon : HWT_MEM_NO_BOUND,
		.threads = threads, .nthreads = p->nthreads,
		.read_now = read_now, .ctx = ctx,
	};
}
