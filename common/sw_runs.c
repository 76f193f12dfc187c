// SPDX-License-Identifier: BSD-2-Clause
/* sw_runs.c - hwt-sw TABLE and RUNS chunks: superblock runs kept as the
 * valgrind recorder's tool wrote them (hwt-common.h, docs/swtrace.md).
 *
 * Everything here reads untrusted bytes: a table's numbers are bounded
 * (instruction and exit counts, ids, lengths) before anything is
 * allocated for them, and a walk over runs checks every item against
 * the table, so a damaged chunk is an error, never a wrong history.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hwt-common.h"

/* Ids a table may name: the tool numbers its translations from 0, and
 * a table holds those a thread's runs name, so ids run far past the
 * count only in damaged input. */
#define TABLE_ID_SLACK (1u << 16)
#define TABLE_MAX_ID (1u << 26)

/* ---- numbers ------------------------------------------------------------ */

struct nums {
	const uint8_t *p, *end;
	bool bad;
};

static inline uint64_t get_u(struct nums *c)
{
	uint64_t v;

	/* Most numbers of a table (an address delta, an exit) are a byte. */
	if (c->p < c->end && !(*c->p & 0x80))
		return *c->p++;
	if (hwt_get_uleb128(&c->p, c->end, &v) == 1)
		return v;
	c->bad = true;
	return 0;
}

static int64_t get_s(struct nums *c)
{
	uint64_t v = get_u(c);

	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static size_t put_s(uint8_t *out, int64_t v)
{
	return hwt_put_uleb128(out, (uint64_t)v << 1 ^ (uint64_t)(v >> 63));
}

/* ---- tables ------------------------------------------------------------- */

/* A table's translations live in blocks it frees at once: a compiler's
 * window names tens of thousands, and a malloc for each of their arrays
 * was most of what opening its history cost. The blocks double up to
 * HUGE_BLOCK, and blocks that large are asked to be huge pages: on a
 * virtual machine a fault for each 4 KiB of a big table cost as much as
 * reading it. */
struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	uint64_t data[];
};

#define ARENA_BLOCK (256u << 10)
#define HUGE_BLOCK ((size_t)2 << 20)

/* size bytes, 8-aligned, from t's blocks; NULL when memory ran out. */
static void *arena_alloc(struct hwt_sw_table *t, size_t size)
{
	struct arena_block *b = t->blocks;

	size = (size + 7) & ~(size_t)7;
	if (!b || b->cap - b->used < size) {
		size_t cap = b ? 2 * (sizeof(*b) + b->cap) : ARENA_BLOCK;

		if (cap > 2 * HUGE_BLOCK)
			cap = 2 * HUGE_BLOCK;
		if (cap < sizeof(*b) + size)
			cap = sizeof(*b) + size;
		if (!(b = cap >= HUGE_BLOCK ? hwt_huge_alloc(cap) :
		      malloc(cap)))
			return NULL;
		*b = (struct arena_block){ .next = t->blocks,
					   .cap = cap - sizeof(*b) };
		t->blocks = b;
		t->bytes += cap;
	}
	b->used += size;
	return (uint8_t *)b->data + b->used - size;
}

void hwt_sw_table_free(struct hwt_sw_table *t)
{
	for (struct arena_block *b = t->blocks, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	free(t->v);
	free(t->src_at);
	free(t->src);
	*t = (struct hwt_sw_table){ 0 };
}

static int bad_table(struct hwt_err *err, size_t at, const char *what)
{
	return hwt_err_set(err, EBADMSG, "translation table damaged at byte "
			   "%zu: %s", at, what);
}

/* One translation at c into *out, from t's blocks (NULL and a message on
 * damage: what it took stays in the blocks). */
static int read_tr(struct hwt_sw_table *t, struct nums *c,
		   const uint8_t *base, uint64_t *id, struct hwt_sw_tr **out,
		   struct hwt_err *err)
{
	size_t at = (size_t)(c->p - base);
	uint64_t n, nexits, flags, pc;
	struct hwt_sw_tr *tr;

	*out = NULL;
	*id = get_u(c);
	n = get_u(c);
	pc = get_u(c);
	if (c->bad || n == 0 || n > HWT_SW_TR_MAX_INSNS)
		return bad_table(err, at, "an instruction count out of range");
	if (!(tr = arena_alloc(t, sizeof(*tr) + n * sizeof(*tr->pc))))
		goto nomem;
	*tr = (struct hwt_sw_tr){ .ninsns = (uint32_t)n, .id = (uint32_t)*id,
				  .pc = (uint64_t *)(tr + 1) };
	for (uint64_t i = 0; i < n; i++) {
		if (i)
			pc += (uint64_t)get_s(c);
		tr->pc[i] = pc;
	}
	nexits = get_u(c);
	if (c->bad || nexits > HWT_SW_TR_MAX_EXITS)
		return bad_table(err, at, "an exit count out of range");
	tr->nexits = (uint32_t)nexits;
	if (nexits && !(tr->exit_after = arena_alloc(t, nexits *
						     sizeof(*tr->exit_after))))
		goto nomem;
	for (uint64_t k = 0; k < nexits; k++) {
		uint64_t v = get_u(c);

		if (v >> 1 > n)
			return bad_table(err, at, "a side exit past the end");
		tr->exit_after[k] = (uint32_t)(v >> 1) |
			(v & 1 ? HWT_SW_TR_REP_CHECK : 0);
	}
	flags = get_u(c);
	tr->entry = tr->pc[0] + (uint64_t)get_s(c);
	if (c->bad || flags & ~(uint64_t)(HWT_SW_TR_IMPLIED | HWT_SW_TR_FINAL))
		return bad_table(err, at, "unknown flags or a cut number");
	tr->flags = (uint32_t)flags;
	if ((flags & HWT_SW_TR_IMPLIED) && nexits) {
		if (!(tr->target = arena_alloc(t, nexits *
					       sizeof(*tr->target))))
			goto nomem;
		for (uint64_t k = 0; k < nexits; k++)
			tr->target[k] = tr->entry + (uint64_t)get_s(c);
	}
	if (c->bad)
		return bad_table(err, at, "a cut number");
	*out = tr;
	return 0;
nomem:
	return hwt_err_set(err, ENOMEM, "out of memory for translations");
}

/* Room in t for translation id, found at byte at of its chunk; -EBADMSG
 * for an id a table cannot hold or holds already. */
static int take_id(struct hwt_sw_table *t, uint64_t id, size_t at,
		   struct hwt_err *err)
{
	if (id >= TABLE_MAX_ID || id >= 16 * (t->count + 1) + TABLE_ID_SLACK)
		return bad_table(err, at, "an id far past the count");
	if (id >= t->n) {
		size_t want = (size_t)id + 1, cap = t->n ? t->n : 1024;
		struct hwt_sw_tr **v;
		uint32_t *src_at;

		while (cap < want)
			cap *= 2;
		if (!(v = realloc(t->v, cap * sizeof(*v))))
			goto nomem;
		memset(v + t->n, 0, (cap - t->n) * sizeof(*v));
		t->v = v;
		t->bytes += (cap - t->n) * sizeof(*v);
		if (t->src_at) {
			if (!(src_at = realloc(t->src_at,
					       cap * sizeof(*src_at))))
				goto nomem;
			memset(src_at + t->n, 0,
			       (cap - t->n) * sizeof(*src_at));
			t->src_at = src_at;
			t->bytes += (cap - t->n) * sizeof(*src_at);
		}
		t->n = cap;
	}
	if (t->v[id] || (t->src_at && t->src_at[id]))
		return bad_table(err, at, "an id given twice");
	t->count++;
	return 0;
nomem:
	return hwt_err_set(err, ENOMEM, "out of memory for translations");
}

int hwt_sw_table_add(struct hwt_sw_table *t, const uint8_t *pay, size_t n,
		     struct hwt_err *err)
{
	struct nums c = { pay, pay + n, false };

	while (c.p < c.end) {
		size_t at = (size_t)(c.p - pay);
		struct hwt_sw_tr *tr;
		uint64_t id;
		int rc;

		if ((rc = read_tr(t, &c, pay, &id, &tr, err)) ||
		    (rc = take_id(t, id, at, err)))
			return rc;
		t->v[id] = tr;
	}
	return 0;
}

/* Past k numbers at c (where each ends is all a skim needs). */
static void skip_nums(struct nums *c, uint64_t k)
{
	while (k && c->p < c->end)
		k -= !(*c->p++ & 0x80);
	if (k)
		c->bad = true;
}

/* Past one translation at c, saying its id; what read_tr checks of its
 * counts and flags, the rest when it is read. */
static int skim_tr(struct nums *c, const uint8_t *base, uint64_t *id,
		   struct hwt_err *err)
{
	size_t at = (size_t)(c->p - base);
	uint64_t n, nexits, flags;

	*id = get_u(c);
	n = get_u(c);
	skip_nums(c, 1);
	if (c->bad || n == 0 || n > HWT_SW_TR_MAX_INSNS)
		return bad_table(err, at, "an instruction count out of range");
	skip_nums(c, n - 1);
	nexits = get_u(c);
	if (c->bad || nexits > HWT_SW_TR_MAX_EXITS)
		return bad_table(err, at, "an exit count out of range");
	skip_nums(c, nexits);
	flags = get_u(c);
	skip_nums(c, 1);
	if (c->bad || flags & ~(uint64_t)(HWT_SW_TR_IMPLIED | HWT_SW_TR_FINAL))
		return bad_table(err, at, "unknown flags or a cut number");
	if (flags & HWT_SW_TR_IMPLIED)
		skip_nums(c, nexits);
	if (c->bad)
		return bad_table(err, at, "a cut number");
	return 0;
}

int hwt_sw_table_add_lazy(struct hwt_sw_table *t, const uint8_t *pay,
			  size_t n, struct hwt_err *err)
{
	struct nums c = { pay, pay + n, false };
	size_t base = t->src_n;
	uint8_t *src;

	if (n > UINT32_MAX - 1 - base)
		return hwt_err_set(err, E2BIG, "a table of more than 4 GiB");
	if (!t->src_at && t->count)
		return hwt_err_set(err, EINVAL, "a table read whole and in "
				   "part");
	if (!t->src_at && !(t->src_at = calloc(t->n ? t->n : 1,
					       sizeof(*t->src_at))))
		goto nomem;
	if (base + n + 1 > t->src_cap) {
		if (!(src = realloc(t->src, base + n + 1)))
			goto nomem;
		t->src = src;
		t->src_cap = base + n + 1;
	}
	memcpy(t->src + base, pay, n);
	t->src_n = base + n;
	t->bytes += n;
	while (c.p < c.end) {
		size_t at = (size_t)(c.p - pay);
		uint64_t id;
		int rc;

		if ((rc = skim_tr(&c, pay, &id, err)) ||
		    (rc = take_id(t, id, at, err)))
			return rc;
		t->src_at[id] = (uint32_t)(base + at + 1);
	}
	return 0;
nomem:
	return hwt_err_set(err, ENOMEM, "out of memory for translations");
}

int hwt_sw_table_reserve(struct hwt_sw_table *t, size_t bytes,
			 struct hwt_err *err)
{
	/* A translation takes 4 bytes at least: id, count, one pc, exits. */
	size_t ids = bytes / 4 + 1;

	if (t->src || t->v || t->src_at)
		return 0;
	if (ids > TABLE_MAX_ID)
		ids = TABLE_MAX_ID;
	/* calloc gives untouched zero pages: only what is written faults. */
	t->src = malloc(bytes + 1);
	t->v = calloc(ids, sizeof(*t->v));
	t->src_at = calloc(ids, sizeof(*t->src_at));
	if (!t->src || !t->v || !t->src_at) {
		hwt_sw_table_free(t);
		return hwt_err_set(err, ENOMEM, "out of memory for "
				   "translations");
	}
	hwt_advise_huge(t->src, bytes + 1);
	t->src_cap = bytes + 1;
	t->n = ids;
	t->bytes += bytes + 1 + ids * (sizeof(*t->v) + sizeof(*t->src_at));
	return 0;
}

int hwt_sw_table_get(struct hwt_sw_table *t, uint64_t id,
		     const struct hwt_sw_tr **out, struct hwt_err *err)
{
	struct hwt_sw_tr *tr;
	uint64_t read_id;
	struct nums c;
	uint32_t at;
	int rc;

	if (id < t->n && t->v[id]) {
		*out = t->v[id];
		return 0;
	}
	*out = NULL;
	if (id >= t->n || !t->src_at || !t->src_at[id])
		return -ENOENT;
	at = t->src_at[id] - 1;
	c = (struct nums){ t->src + at, t->src + t->src_n, false };
	if ((rc = read_tr(t, &c, t->src, &read_id, &tr, err)))
		return rc;
	if (read_id != id)
		return bad_table(err, at, "another id when read again");
	t->v[id] = tr;
	*out = tr;
	return 0;
}

size_t hwt_sw_tr_encoded_max(const struct hwt_sw_tr *tr)
{
	return 5u * 10u + 10u * tr->ninsns + 20u * tr->nexits;
}

size_t hwt_sw_tr_encode(uint64_t id, const struct hwt_sw_tr *tr, uint8_t *out)
{
	size_t n = 0;

	n += hwt_put_uleb128(out + n, id);
	n += hwt_put_uleb128(out + n, tr->ninsns);
	n += hwt_put_uleb128(out + n, tr->pc[0]);
	for (uint32_t i = 1; i < tr->ninsns; i++)
		n += put_s(out + n, (int64_t)(tr->pc[i] - tr->pc[i - 1]));
	n += hwt_put_uleb128(out + n, tr->nexits);
	for (uint32_t k = 0; k < tr->nexits; k++)
		n += hwt_put_uleb128(out + n, (uint64_t)(tr->exit_after[k] &
					      ~HWT_SW_TR_REP_CHECK) << 1 |
			   !!(tr->exit_after[k] & HWT_SW_TR_REP_CHECK));
	n += hwt_put_uleb128(out + n, tr->flags);
	n += put_s(out + n, (int64_t)(tr->entry - tr->pc[0]));
	if ((tr->flags & HWT_SW_TR_IMPLIED) && tr->nexits)
		for (uint32_t k = 0; k < tr->nexits; k++)
			n += put_s(out + n, (int64_t)(tr->target[k] -
						      tr->entry));
	return n;
}

/* ---- runs --------------------------------------------------------------- */

uint32_t hwt_sw_tr_exit_count(const struct hwt_sw_tr *tr, uint32_t k,
			      bool last_known, uint64_t last_pc)
{
	uint32_t after, n;
	bool before;

	if (k >= tr->nexits)
		return tr->ninsns;
	after = tr->exit_after[k];
	n = after & ~HWT_SW_TR_REP_CHECK;
	if (!(after & HWT_SW_TR_REP_CHECK))
		return n;
	before = n >= 2 ? tr->pc[n - 2] == tr->pc[n - 1]
			: last_known && last_pc == tr->pc[0];
	return before ? n - 1 : n;
}

uint32_t hwt_sw_tr_exit_to(const struct hwt_sw_tr *tr, uint64_t pc)
{
	for (uint32_t k = 0; k < tr->nexits; k++)
		if (tr->target && tr->target[k] == pc)
			return k;
	return tr->nexits;
}

void hwt_sw_runs_init(struct hwt_sw_runs *w, struct hwt_sw_table *tab,
		      const uint8_t *items, size_t size, size_t from,
		      bool last_known, uint64_t last_pc)
{
	*w = (struct hwt_sw_runs){
		.tab = tab, .items = items,
		.p = items + (from < size ? from : size), .end = items + size,
		.last_known = last_known, .last_pc = last_known ? last_pc : 0,
	};
}

static int bad_item(const struct hwt_sw_runs *w, const uint8_t *at,
		    struct hwt_err *err, const char *what)
{
	return hwt_err_set(err, EBADMSG, "runs damaged at item byte %zu: %s",
			   (size_t)(at - w->items), what);
}

/* The run begun is given. */
static int give(struct hwt_sw_runs *w, const struct hwt_sw_tr **tr,
		uint32_t *n, bool *async)
{
	*tr = w->run;
	*n = w->n;
	*async = w->async;
	if (w->n) {
		w->async = false;
		w->last_known = true;
		w->last_tr = w->run;
		w->last_n = w->n;
	}
	if (w->async_after)
		w->async = true;
	w->async_after = false;
	w->run = NULL;
	w->open = false;
	return 1;
}

bool hwt_sw_runs_last(const struct hwt_sw_runs *w, uint64_t *pc)
{
	*pc = w->last_tr ? w->last_tr->pc[w->last_n - 1] : w->last_pc;
	return w->last_known;
}

/* The instructions w's run executed leaving by exit k. */
static uint32_t run_exit_count(const struct hwt_sw_runs *w, uint32_t k)
{
	const struct hwt_sw_tr *tr = w->run;
	uint64_t last;
	bool known;

	if (k >= tr->nexits || !(tr->exit_after[k] & HWT_SW_TR_REP_CHECK))
		return hwt_sw_tr_exit_count(tr, k, false, 0);
	known = hwt_sw_runs_last(w, &last);
	return hwt_sw_tr_exit_count(tr, k, known, last);
}

int hwt_sw_runs_next(struct hwt_sw_runs *w, const struct hwt_sw_tr **tr,
		     uint32_t *n, bool *async, struct hwt_err *err)
{
	while (w->p < w->end) {
		struct nums c = { w->p, w->end, false };
		uint64_t v = get_u(&c), arg = v >> 2, trunc;
		const struct hwt_sw_tr *next;
		int rc;

		if (c.bad)
			return bad_item(w, w->p, err, "a cut number");
		switch (v & 3) {
		case HWT_SW_RUNS_EXEC:
			/* Read already, the common case, without a call. */
			next = arg < w->tab->n ? w->tab->v[arg] : NULL;
			rc = next ? 0 : hwt_sw_table_get(w->tab, arg, &next,
							  err);
			if (rc == -ENOENT)
				return bad_item(w, w->p, err, "a translation "
						"the table lacks");
			if (rc)
				return rc;
			if (w->run) {
				/* Its item stays for the next call. */
				if (w->open)
					w->n = run_exit_count(w,
						hwt_sw_tr_exit_to(w->run,
								  next->entry));
				return give(w, tr, n, async);
			}
			w->run = next;
			w->n = next->ninsns;
			w->open = (next->flags & HWT_SW_TR_IMPLIED) &&
				  next->nexits;
			break;
		case HWT_SW_RUNS_EXIT:
			if (!w->run || arg > w->run->nexits)
				return bad_item(w, w->p, err, "a side exit of "
						"no run");
			w->n = run_exit_count(w, (uint32_t)arg);
			w->open = false;
			break;
		case HWT_SW_RUNS_MARK:
			if (arg == HWT_SW_RUNS_ASYNC) {
				w->p = c.p;
				if (!w->run) {
					w->async = true;
					continue;
				}
				w->async_after = true;
				return give(w, tr, n, async);
			}
			trunc = get_u(&c);
			if (arg != HWT_SW_RUNS_TRUNC || c.bad)
				return bad_item(w, w->p, err, "an unknown mark");
			if (!w->run || trunc > w->run->ninsns)
				return bad_item(w, w->p, err, "a cut past its "
						"run's end");
			w->n = (uint32_t)trunc;
			w->open = false;
			break;
		default:
			return bad_item(w, w->p, err, "an unknown item");
		}
		w->p = c.p;
	}
	return w->run ? give(w, tr, n, async) : 0;
}

bool hwt_sw_runs_at_cut(const struct hwt_sw_runs *w)
{
	return !w->run && !w->async && w->p < w->end &&
		(*w->p & 3) == HWT_SW_RUNS_EXEC;
}

int hwt_sw_runs_each(struct hwt_sw_runs *w, uint64_t max, hwt_sw_insn_fn fn,
		     void *ctx, uint64_t *given, struct hwt_err *err)
{
	const struct hwt_sw_tr *tr;
	uint32_t n;
	bool async;
	int rc;

	*given = 0;
	while (*given < max) {
		if ((rc = hwt_sw_runs_next(w, &tr, &n, &async, err)) <= 0)
			return rc;
		for (uint32_t i = 0; i < n && *given < max; i++) {
			if ((rc = fn(ctx, tr->pc[i], i == 0 && async)))
				return rc;
			++*given;
		}
	}
	return 0;
}

/* ---- flattening --------------------------------------------------------- */

struct flat {
	struct hwt_bytes out;
	struct hwt_sw_chunk_hdr hdr;  /* the plain chunk being filled */
	size_t hdr_at;           /* its header in out */
	bool open;
	uint64_t seq;            /* first_seq of the next instruction */
};

static void flat_close(struct flat *f)
{
	if (!f->open)
		return;
	f->hdr.payload_size = (uint32_t)(f->out.n - f->hdr_at -
					 HWT_SW_CHUNK_HDR_SIZE);
	hwt_sw_chunk_hdr_pack(&f->hdr, f->out.p + f->hdr_at);
	f->open = false;
}

static int flat_insn(void *ctx, uint64_t pc, bool async)
{
	struct flat *f = ctx;
	uint8_t rec[HWT_SW_MAX_RECORD + 1];
	size_t len;

	/* A chunk's first instruction cannot be a handler's entry: the
	 * chunk goes on past its size for it. */
	if (f->open && !async && f->out.n - f->hdr_at >
	    HWT_SW_MAX_CHUNK_PAYLOAD - 2 * sizeof(rec))
		flat_close(f);
	if (!f->open) {
		uint8_t hdr[HWT_SW_CHUNK_HDR_SIZE] = { 0 };

		f->hdr_at = f->out.n;
		f->hdr = (struct hwt_sw_chunk_hdr){
			.first_pc = pc, .first_seq = f->seq, .last_pc = pc,
			.insn_count = 1,
		};
		f->open = true;
		f->seq++;
		return hwt_bytes_put(&f->out, hdr, sizeof(hdr));
	}
	len = hwt_sw_encode_step(f->hdr.last_pc, pc, async, rec);
	f->hdr.last_pc = pc;
	f->hdr.insn_count++;
	f->seq++;
	return hwt_bytes_put(&f->out, rec, len);
}

/* One RUNS chunk into plain chunks: what its header says, exactly. */
static int flat_runs(struct flat *f, struct hwt_sw_table *tab,
		     const struct hwt_sw_chunk_hdr *h, const uint8_t *items,
		     size_t off, struct hwt_err *err)
{
	bool prev = h->flags & HWT_SW_CHUNK_PREV;
	struct hwt_sw_runs w;
	uint64_t given, last;
	int rc;

	/* A chunk that follows on from the plain chunk being filled goes
	 * on in it: the move into its first instruction may be a signal
	 * handler's entry, which only a step record can say. */
	if (!f->open || f->seq != h->first_seq || !prev ||
	    f->hdr.last_pc != h->first_pc)
		flat_close(f);
	f->seq = h->first_seq;
	hwt_sw_runs_init(&w, tab, items, h->payload_size, 0, prev,
			 h->first_pc);
	rc = hwt_sw_runs_each(&w, UINT64_MAX, flat_insn, f, &given, err);
	if (rc == -ENOMEM)
		return hwt_err_set(err, ENOMEM, "out of memory");
	if (rc)
		return hwt_err_prefix(err, "runs chunk at offset %zu: ", off);
	hwt_sw_runs_last(&w, &last);
	if (given != h->insn_count || last != h->last_pc)
		return hwt_err_set(err, EBADMSG, "runs chunk at offset %zu: "
				   "its header says %u instructions ending "
				   "at 0x%llx, its runs give %llu ending at "
				   "0x%llx", off, h->insn_count,
				   (unsigned long long)h->last_pc,
				   (unsigned long long)given,
				   (unsigned long long)last);
	return 0;
}

int hwt_sw_runs_flatten(const uint8_t *trace, size_t n, uint8_t **out,
			size_t *out_n, struct hwt_err *err)
{
	struct hwt_sw_table tab = { 0 };
	struct flat f = { 0 };
	bool table_ended = false;
	size_t off = 0;
	int rc = 0;

	while (off < n && !rc) {
		struct hwt_sw_chunk_hdr h;
		const uint8_t *pay = trace + off + HWT_SW_CHUNK_HDR_SIZE;

		if ((rc = hwt_sw_chunk_hdr_unpack_flags(trace + off, n - off,
				HWT_SW_CHUNK_RUNS_FLAGS, &h, err)))
			break;
		if (h.flags & HWT_SW_CHUNK_CUTS) {
			/* Where a walk may begin: nothing to expand. */
		} else if (h.flags & HWT_SW_CHUNK_TABLE) {
			if (table_ended) {
				hwt_sw_table_free(&tab);
				table_ended = false;
			}
			rc = hwt_sw_table_add(&tab, pay, h.payload_size, err);
		} else if (h.flags & HWT_SW_CHUNK_RUNS) {
			table_ended = true;
			rc = flat_runs(&f, &tab, &h, pay, off, err);
		} else {
			table_ended = true;
			flat_close(&f);
			rc = hwt_bytes_put(&f.out, trace + off,
					   HWT_SW_CHUNK_HDR_SIZE +
					   h.payload_size) ?
				hwt_err_set(err, ENOMEM, "out of memory") : 0;
		}
		off += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
	}
	hwt_sw_table_free(&tab);
	flat_close(&f);
	if (rc) {
		free(f.out.p);
		return rc;
	}
	*out = f.out.p;
	*out_n = f.out.n;
	return 0;
}
