// SPDX-License-Identifier: BSD-2-Clause
/* past_file.c - a bundle's data history file: each thread's register log
 * and the memory history, as the recorder kept them when the program
 * stopped (layout in docs/bundle.md). The file is untrusted: every count
 * is checked against the bytes left before anything is allocated, and
 * every part against the others (runs and entries in order, old bytes
 * inside the file, register deltas that decode to their counts), so what
 * is asked of it later cannot read outside it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "array.h"
#include "hwt-past.h"
#include "sw_index_layout.h"

#define MAGIC_LEN 8u
#define RUN_SIZE 16u
#define ENTRY_SIZE 40u
/* A data history file is read whole; this bounds it. */
#define PAST_FILE_MAX (16ull << 30)

/* ---- writing ------------------------------------------------------------- */

/* Where the layout goes: counted only (its size, pledged to zstd), into
 * a buffer (hwt_past_format), or through a zstd stream into a file a
 * piece at a time, so that a long history is never held twice. */
#define PIECE (1u << 20)

struct out {
	uint64_t size;             /* bytes put */
	bool count_only;
	uint8_t *buf;
	size_t len, cap;
	ZSTD_CCtx *z;
	FILE *f;
	uint8_t *zbuf;
	size_t zcap;
	bool failed;
};

static void drain(struct out *o, ZSTD_EndDirective end)
{
	ZSTD_inBuffer in = { o->buf, o->len, 0 };
	size_t left;

	do {
		ZSTD_outBuffer zo = { o->zbuf, o->zcap, 0 };

		left = ZSTD_compressStream2(o->z, &zo, &in, end);
		if (ZSTD_isError(left) ||
		    fwrite(o->zbuf, 1, zo.pos, o->f) != zo.pos) {
			o->failed = true;
			return;
		}
	} while (end == ZSTD_e_end ? left != 0 : in.pos < in.size);
	o->len = 0;
}

static void put(struct out *o, const void *p, size_t n)
{
	o->size += n;
	if (o->count_only || o->failed || !n)
		return;
	while (n) {
		size_t k;

		if (o->len == o->cap) {
			size_t cap = o->cap ? 2 * o->cap : PIECE;
			uint8_t *v;

			if (o->z) {
				drain(o, ZSTD_e_continue);
				if (o->failed)
					return;
				continue;
			}
			if (!(v = realloc(o->buf, cap))) {
				o->failed = true;
				return;
			}
			o->buf = v;
			o->cap = cap;
		}
		k = o->cap - o->len < n ? o->cap - o->len : n;
		memcpy(o->buf + o->len, p, k);
		o->len += k;
		p = (const uint8_t *)p + k;
		n -= k;
	}
}

static void put64(struct out *o, uint64_t v)
{
	uint8_t b[8];

	hwt_put_le64(b, v);
	put(o, b, 8);
}

static void put_regs(struct out *o, const struct hwt_reglog *l)
{
	put64(o, l->nwords);
	put64(o, l->first);
	put64(o, l->n);
	put64(o, l->nblocks);
	for (size_t i = 0; i < l->nblocks; i++) {
		const struct hwt_reglog_block *b = &l->blocks[i];

		put64(o, b->count);
		put64(o, b->len);
		for (size_t k = 0; k < l->nwords; k++)
			put64(o, b->key[k]);
		put(o, b->data, b->len);
	}
}

static void format(struct out *o, const struct hwt_past *p)
{
	put(o, HWT_PAST_MAGIC, MAGIC_LEN);
	put64(o, p->horizon);
	put64(o, p->nthreads);
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct hwt_past_thread *t = &p->threads[i];

		put64(o, (uint64_t)(uint32_t)t->tid);
		put64(o, t->end_index);
		put64(o, t->last_seq);
		put64(o, t->nruns);
		for (size_t k = 0; k < t->nruns; k++) {
			put64(o, t->runs[k].index);
			put64(o, t->runs[k].seq);
		}
		put_regs(o, &t->regs);
		put_regs(o, &t->fpregs);
	}
	put64(o, p->n);
	for (size_t i = 0; i < p->n; i++) {
		const struct hwt_mem_entry *e = &p->e[i];

		put64(o, e->seq);
		put64(o, e->addr);
		put64(o, e->len);
		put64(o, e->off);
		put64(o, (uint64_t)(uint32_t)e->tid);
	}
	put64(o, p->nbytes);
	put(o, p->bytes, p->nbytes);
}

int hwt_past_format(const struct hwt_past *p, uint8_t **data, size_t *len,
		    struct hwt_err *err)
{
	struct out o = { 0 };

	*data = NULL;
	*len = 0;
	format(&o, p);
	if (o.failed) {
		free(o.buf);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	*data = o.buf ? o.buf : malloc(1);
	*len = o.len;
	return *data ? 0 : hwt_err_set(err, ENOMEM, "out of memory");
}

int hwt_past_write(const char *path, const struct hwt_past *p,
		   struct hwt_err *err)
{
	struct out count = { .count_only = true };
	struct out o = { 0 };
	int rc = 0, code;
	bool ok;

	/* The size first: the frame says it (the reader needs it). */
	format(&count, p);
	o.z = ZSTD_createCCtx();
	o.zcap = ZSTD_CStreamOutSize();
	o.buf = malloc(PIECE);
	o.cap = PIECE;
	o.zbuf = malloc(o.zcap);
	if (!o.z || !o.buf || !o.zbuf ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(o.z, ZSTD_c_compressionLevel,
						HWT_SW_ZSTD_LEVEL)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(o.z, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(o.z, count.size))) {
		rc = hwt_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if (!(o.f = fopen(path, "wbx"))) {
		rc = hwt_err_set(err, errno, "creating %s: %s", path,
				 strerror(errno));
		goto out;
	}
	format(&o, p);
	if (!o.failed)
		drain(&o, ZSTD_e_end);
	ok = !o.failed && o.size == count.size;
	ok = fclose(o.f) == 0 && ok;
	code = errno ? errno : EIO;
	if (!ok) {
		remove(path);
		rc = hwt_err_set(err, code, "writing %s: %s", path,
				 strerror(code));
	}
out:
	ZSTD_freeCCtx(o.z);
	free(o.buf);
	free(o.zbuf);
	return rc;
}

/* ---- reading ------------------------------------------------------------- */

struct in {
	const uint8_t *p, *start, *end;
	struct hwt_err *err;
};

static int bad(struct in *c, const char *what)
{
	return hwt_err_set(c->err, EBADMSG, "data history: %s at byte %zu",
			   what, (size_t)(c->p - c->start));
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

static int read_runs(struct in *c, struct hwt_past_thread *t)
{
	uint64_t n;

	if (!get64(c, &n) || !left(c, n, RUN_SIZE))
		return bad(c, "a count of runs beyond the file");
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

/* A register log of the words a thread's set has (want), or none. */
static int read_regs(struct in *c, struct hwt_reglog *l, unsigned want)
{
	uint64_t nwords, nblocks, total = 0;
	size_t key_size;

	if (!get64(c, &nwords) || (nwords != want && nwords != 0))
		return bad(c, "a register log of an unknown register set");
	l->nwords = (unsigned)nwords;
	key_size = 8 * (size_t)nwords;
	if (!get64(c, &l->first) || !get64(c, &l->n) || !get64(c, &nblocks) ||
	    !left(c, nblocks, 16 + key_size) || (!nwords && nblocks))
		return bad(c, "a register log beyond the file");
	if (nblocks && !(l->blocks = calloc(nblocks, sizeof(*l->blocks))))
		return hwt_err_set(c->err, ENOMEM, "out of memory");
	l->nblocks = l->alloc = nblocks;
	for (size_t i = 0; i < nblocks; i++) {
		struct hwt_reglog_block *b = &l->blocks[i];
		uint64_t count, len;

		/* Blocks before may have taken the bytes counted above. */
		if (!left(c, 1, 16 + key_size))
			return bad(c, "a register block beyond the file");
		get64(c, &count);
		get64(c, &len);
		for (size_t k = 0; k < nwords; k++)
			get64(c, &b->key[k]);
		if (!left(c, len, 1))
			return bad(c, "register deltas beyond the file");
		/* Entries are found by index / HWT_REGLOG_BLOCK: every block
		 * but the newest is full. */
		if (count == 0 || count > HWT_REGLOG_BLOCK ||
		    (i + 1 < nblocks && count != HWT_REGLOG_BLOCK))
			return bad(c, "a register block of a wrong count");
		b->count = (uint32_t)count;
		b->data = (uint8_t *)c->p;
		b->len = b->alloc = (size_t)len;
		c->p += len;
		if (!hwt_reglog_block_valid(l, b))
			return bad(c, "register deltas that do not decode");
		total += count;
	}
	if (total != l->n || l->first + l->n < l->first)
		return bad(c, "a register log whose blocks do not add up");
	return 0;
}

static int read_entries(struct in *c, struct hwt_past *p)
{
	uint64_t n, nbytes;
	const uint8_t *at;

	if (!get64(c, &n) || !left(c, n, ENTRY_SIZE))
		return bad(c, "a count of stores beyond the file");
	if (n && !(p->e = calloc(n, sizeof(*p->e))))
		return hwt_err_set(c->err, ENOMEM, "out of memory");
	hwt_advise_huge(p->e, n * sizeof(*p->e));
	p->n = n;
	at = c->p;
	c->p += n * ENTRY_SIZE;
	if (!get64(c, &nbytes) || nbytes != (uint64_t)(c->end - c->p))
		return bad(c, "old bytes of another length than the file's rest");
	p->bytes = (uint8_t *)c->p;
	p->nbytes = (size_t)nbytes;
	c->p = at;
	for (size_t i = 0; i < n; i++) {
		struct hwt_mem_entry *e = &p->e[i];
		uint64_t tid;

		get64(c, &e->seq);
		get64(c, &e->addr);
		get64(c, &e->len);
		get64(c, &e->off);
		get64(c, &tid);
		if (tid > INT32_MAX)
			return bad(c, "a store's thread out of range");
		e->tid = (int32_t)tid;
		if (i && e->seq < p->e[i - 1].seq)
			return bad(c, "stores out of order");
		if (e->len == 0 || e->addr + e->len < e->addr)
			return bad(c, "a store of no bytes or past the address "
				   "space");
		if (e->off != HWT_MEM_UNKNOWN &&
		    (e->len > HWT_PAST_MAX_STORE || e->off > nbytes ||
		     e->len > nbytes - e->off))
			return bad(c, "a store's old bytes outside the file");
	}
	c->p = c->end;
	return 0;
}

int hwt_past_parse(const uint8_t *data, size_t len, struct hwt_past **out,
		   struct hwt_err *err)
{
	struct in c = { data, data, data + len, err };
	struct hwt_past *p;
	uint64_t nthreads;
	int rc = 0;

	*out = NULL;
	if (len < MAGIC_LEN || memcmp(data, HWT_PAST_MAGIC, MAGIC_LEN))
		return hwt_err_set(err, EBADMSG, "not a data history file "
				   "(no %.7s magic)", HWT_PAST_MAGIC);
	c.p += MAGIC_LEN;
	if (!(p = calloc(1, sizeof(*p))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	if (!get64(&c, &p->horizon) || !get64(&c, &nthreads))
		rc = bad(&c, "a header cut short");
	else if (nthreads > HWT_PAST_MAX_THREADS)
		rc = bad(&c, "more threads than a bundle holds");
	else if (nthreads &&
		 !(p->threads = calloc(nthreads, sizeof(*p->threads))))
		rc = hwt_err_set(err, ENOMEM, "out of memory");
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
			rc = read_regs(&c, &t->regs, HWT_REGLOG_GPR_WORDS);
		if (!rc)
			rc = read_regs(&c, &t->fpregs, HWT_REGLOG_FP_WORDS);
	}
	if (!rc)
		rc = read_entries(&c, p);
	if (rc) {
		hwt_past_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int hwt_past_load(const uint8_t *file, size_t n, struct hwt_past **out,
		  struct hwt_err *err)
{
	uint8_t *data;
	size_t size;
	int rc = hwt_zstd_unpack(file, n, PAST_FILE_MAX, &data, &size, err);

	*out = NULL;
	if (rc < 0) {
		hwt_err_prefix(err, "data history: ");
		return rc == -ENOMEM ? rc : -EBADMSG;
	}
	rc = hwt_past_parse(data, size, out, err);
	if (rc < 0) {
		free(data);
		return rc;
	}
	(*out)->raw = data;
	return 0;
}

int hwt_past_read(const char *path, struct hwt_past **out,
		  struct hwt_err *err)
{
	uint8_t *file;
	size_t n;
	int rc = hwt_read_file(path, PAST_FILE_MAX, &file, &n, err);

	*out = NULL;
	if (rc < 0)
		return rc;
	rc = hwt_past_load(file, n, out, err);
	free(file);
	return rc < 0 ? hwt_err_prefix(err, "%s: ", path) : 0;
}

void hwt_past_free(struct hwt_past *p)
{
	if (!p)
		return;
	/* Deltas and old bytes point into raw (or the caller's buffer). */
	for (size_t i = 0; i < p->nthreads; i++) {
		free(p->threads[i].runs);
		free(p->threads[i].regs.blocks);
		free(p->threads[i].fpregs.blocks);
	}
	free(p->threads);
	free(p->e);
	free(p->raw);
	hwt_mem_index_free(p->index);
	free(p);
}

int hwt_past_index(struct hwt_past *p)
{
	return p->index ? 0 : hwt_mem_index_build(p->e, p->n, &p->index);
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
	for (size_t i = 0; i < p->nthreads; i++)
		threads[i] = (struct hwt_mem_thread){
			.tid = p->threads[i].tid, .runs = p->threads[i].runs,
			.nruns = p->threads[i].nruns,
			.last_seq = p->threads[i].last_seq,
		};
	*out = (struct hwt_mem_history){
		.e = p->e, .n = p->n, .index = p->index, .bytes = p->bytes,
		.horizon = p->horizon,
		.threads = threads, .nthreads = p->nthreads,
		.read_now = read_now, .ctx = ctx,
	};
}
