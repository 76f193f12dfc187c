// SPDX-License-Identifier: BSD-2-Clause
/* test_sw_runs.c - TABLE and RUNS chunks (common/sw_runs.c): tables read
 * back what was written, runs give the instructions the valgrind
 * recorder's expansion gives (implied and explicit exits, marks, rep
 * count checks), damage is an error, and a trace of runs is packed with
 * restart points a walk begun at gives the same instructions. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hwt-common.h"
#include "check.h"

/* T0: three instructions, side exit 0 after one to 0x2000 (implied).
 * T1: two, no exit. T2: a rep instruction twice, exits its count checks. */
static uint64_t pc0[] = { 0x1000, 0x1002, 0x1005 };
static uint32_t ex0[] = { 1 };
static uint64_t tg0[] = { 0x2000 };
static uint64_t pc1[] = { 0x2000, 0x2004 };
static uint64_t pc2[] = { 0x3000, 0x3000 };
static uint32_t ex2[] = { 1 | HWT_SW_TR_REP_CHECK, 2 | HWT_SW_TR_REP_CHECK };

static const struct hwt_sw_tr trs[] = {
	{ .ninsns = 3, .nexits = 1, .flags = HWT_SW_TR_IMPLIED,
	  .entry = 0x1000, .pc = pc0, .exit_after = ex0, .target = tg0 },
	{ .ninsns = 2, .entry = 0x2000, .pc = pc1 },
	{ .ninsns = 2, .nexits = 2, .entry = 0x3000, .pc = pc2,
	  .exit_after = ex2 },
};

static size_t table_bytes(uint8_t *out)
{
	size_t n = 0;

	for (size_t i = 0; i < 3; i++)
		n += hwt_sw_tr_encode(i * 2, &trs[i], out + n);
	return n;
}

static struct hwt_sw_table table;
/* Whether load_table reads its translations as runs name them. */
static bool lazy_table;

static void load_table(void)
{
	uint8_t buf[512];
	struct hwt_err err = { 0 };
	size_t n = table_bytes(buf);

	hwt_sw_table_free(&table);
	if ((lazy_table ? hwt_sw_table_add_lazy(&table, buf, n, &err) :
	     hwt_sw_table_add(&table, buf, n, &err)))
		printf("  (table: %s)\n", err.msg);
}

static bool same_tr(const struct hwt_sw_tr *a, const struct hwt_sw_tr *b)
{
	return a && a->ninsns == b->ninsns && a->nexits == b->nexits &&
		a->flags == b->flags && a->entry == b->entry &&
		!memcmp(a->pc, b->pc, b->ninsns * 8) &&
		(!b->nexits || !memcmp(a->exit_after, b->exit_after,
				       b->nexits * 4)) &&
		(!b->target || !memcmp(a->target, b->target,
				       b->nexits * 8)) &&
		(b->target || !a->target);
}

typedef int (*table_add_fn)(struct hwt_sw_table *t, const uint8_t *pay,
			    size_t n, struct hwt_err *err);

/* t (holding buf already) refuses buf again, and buf cut short anywhere
 * (t freed after). */
static void refuses_damage(const char *what, table_add_fn add,
			   struct hwt_sw_table *t, const uint8_t *buf, size_t n)
{
	struct hwt_err err = { 0 };
	char name[80];
	int rc = add(t, buf, n, &err);

	snprintf(name, sizeof(name), "%s: an id given twice is an error",
		 what);
	CHECK(name, rc == -EBADMSG, "rc %d", rc);
	hwt_sw_table_free(t);
	for (size_t cut = 1; cut < n; cut += 3) {
		rc = add(t, buf, cut, &err);
		hwt_sw_table_free(t);
		if (rc != -EBADMSG)
			break;
	}
	snprintf(name, sizeof(name), "%s: cut short anywhere is an error",
		 what);
	CHECK(name, rc == -EBADMSG, "rc %d", rc);
}

static void test_table(void)
{
	uint8_t buf[512];
	struct hwt_sw_table t = { 0 };
	struct hwt_err err = { 0 };
	size_t n = table_bytes(buf);
	bool same = true;
	int rc = hwt_sw_table_add(&t, buf, n, &err);

	for (size_t i = 0; rc == 0 && i < 3; i++)
		same = same && same_tr(t.v[i * 2], &trs[i]);
	CHECK("table: what was written reads back, ids as given",
	      rc == 0 && same && t.count == 3 && !t.v[1], "rc %d (%s)", rc,
	      err.msg);
	refuses_damage("table", hwt_sw_table_add, &t, buf, n);
	{
		/* id 0, 0 instructions; id 0, 5000; a flag 4. */
		const uint8_t zero[] = { 0, 0, 0 };
		const uint8_t many[] = { 0, 0x88, 0x27, 0 };
		const uint8_t flags[] = { 0, 1, 0x10, 0, 4, 0 };
		const uint8_t far[] = { 0xff, 0xff, 0x7f, 1, 0x10, 0, 0, 0 };

		CHECK("table: impossible numbers are errors",
		      hwt_sw_table_add(&t, zero, 3, &err) == -EBADMSG &&
		      hwt_sw_table_add(&t, many, 4, &err) == -EBADMSG &&
		      hwt_sw_table_add(&t, flags, 6, &err) == -EBADMSG &&
		      hwt_sw_table_add(&t, far, 8, &err) == -EBADMSG &&
		      t.count == 0, "count %zu", t.count);
		hwt_sw_table_free(&t);
	}
}

/* A table read in part: the same translations, each read when asked;
 * damage the skim cannot see is an error for that translation only. */
static void test_table_lazy(void)
{
	uint8_t buf[512], copy[512];
	struct hwt_sw_table t = { 0 };
	struct hwt_err err = { 0 };
	const struct hwt_sw_tr *tr;
	size_t n = table_bytes(buf);
	bool same = true, unread;
	int rc;

	memcpy(copy, buf, n);
	rc = hwt_sw_table_add_lazy(&t, copy, n, &err);
	/* The table keeps its own copy of what it was given. */
	memset(copy, 0xee, n);
	unread = rc == 0 && !t.v[0] && !t.v[2] && !t.v[4];
	for (size_t i = 0; rc == 0 && i < 3; i++)
		same = same && !hwt_sw_table_get(&t, i * 2, &tr, &err) &&
			same_tr(tr, &trs[i]) && t.v[i * 2] == tr;
	CHECK("lazy table: nothing read at first, each read when asked, as "
	      "written", unread && same && t.count == 3, "rc %d (%s)", rc,
	      err.msg);
	CHECK("lazy table: an id it lacks is -ENOENT",
	      hwt_sw_table_get(&t, 1, &tr, &err) == -ENOENT &&
	      hwt_sw_table_get(&t, 5000, &tr, &err) == -ENOENT && !tr,
	      "see above");
	refuses_damage("lazy table", hwt_sw_table_add_lazy, &t, buf, n);
	/* Id 0's side exit (byte 7: id, count, two bytes of address, two
	 * deltas, exit count) now past its three instructions. */
	memcpy(copy, buf, n);
	copy[7] = 0x40;
	rc = hwt_sw_table_add_lazy(&t, copy, n, &err);
	CHECK("lazy table: a damaged translation is an error when read, the "
	      "others read",
	      rc == 0 && hwt_sw_table_get(&t, 0, &tr, &err) == -EBADMSG &&
	      strstr(err.msg, "side exit") &&
	      !hwt_sw_table_get(&t, 2, &tr, &err) && same_tr(tr, &trs[1]) &&
	      !hwt_sw_table_get(&t, 4, &tr, &err) && same_tr(tr, &trs[2]),
	      "rc %d (%s)", rc, err.msg);
	hwt_sw_table_free(&t);
	rc = hwt_sw_table_add(&t, buf, n, &err);
	CHECK("lazy table: not added to a table read whole",
	      !rc && hwt_sw_table_add_lazy(&t, buf, 0, &err) == -EINVAL,
	      "rc %d", rc);
	hwt_sw_table_free(&t);
}

/* Items as numbers: each below 128 is one byte. */
static int walk(const uint8_t *items, size_t n, uint64_t *pcs, bool *async,
		size_t cap, size_t *got, struct hwt_err *err)
{
	struct hwt_sw_runs w;
	const struct hwt_sw_tr *tr;
	uint32_t k;
	bool a;
	int rc;

	*got = 0;
	hwt_sw_runs_init(&w, &table, items, n, 0, false, 0);
	while ((rc = hwt_sw_runs_next(&w, &tr, &k, &a, err)) > 0)
		for (uint32_t i = 0; i < k && *got < cap; i++) {
			async[*got] = i == 0 && a;
			pcs[(*got)++] = tr->pc[i];
		}
	return rc;
}

#define EXEC(id) ((id) << 2)
#define EXIT(k) ((k) << 2 | 1)
#define MARK(kind) ((kind) << 2 | 2)

static bool runs_give(const uint8_t *items, size_t n, const uint64_t *want,
		      size_t m, size_t async_at)
{
	uint64_t pcs[32];
	bool async[32];
	struct hwt_err err = { 0 };
	size_t got;
	int rc = walk(items, n, pcs, async, 32, &got, &err);

	if (rc || got != m || memcmp(pcs, want, m * 8)) {
		printf("  (rc %d %s, %zu instructions:", rc, err.msg, got);
		for (size_t i = 0; i < got; i++)
			printf(" %llx", (unsigned long long)pcs[i]);
		printf(")\n");
		return false;
	}
	for (size_t i = 0; i < got; i++)
		if (async[i] != (i == async_at))
			return false;
	return true;
}

static void test_runs(void)
{
	const uint8_t implied[] = { EXEC(0), EXEC(2) };
	const uint8_t whole[] = { EXEC(0), EXEC(0) };
	const uint8_t side[] = { EXEC(0), EXIT(0) };
	const uint8_t end[] = { EXEC(0), EXIT(1), EXEC(2) };
	const uint8_t async[] = { EXEC(2), MARK(1), EXEC(2) };
	const uint8_t trunc[] = { EXEC(0), MARK(2), 2 };
	const uint8_t trunc0[] = { MARK(1), EXEC(2), MARK(2), 0, EXEC(2) };
	/* The rep instruction: its copy's check taken right after it ran
	 * ran nothing; taken first, with 0x3000 before, the same. */
	const uint8_t rep[] = { EXEC(4), EXIT(1) };
	const uint8_t rep_first[] = { EXEC(4), EXIT(1), EXEC(4), EXIT(0) };

	load_table();
	CHECK("runs: an implied side exit is told by the next run's entry",
	      runs_give(implied, 2, (uint64_t[]){ 0x1000, 0x2000, 0x2004 },
			3, SIZE_MAX), "see above");
	CHECK("runs: an entry no side exit goes to: the run went to its end",
	      runs_give(whole, 2, (uint64_t[]){ 0x1000, 0x1002, 0x1005,
					       0x1000, 0x1002, 0x1005 }, 6,
			SIZE_MAX), "see above");
	CHECK("runs: an exit said is taken, the last run whole",
	      runs_give(side, 2, (uint64_t[]){ 0x1000 }, 1, SIZE_MAX) &&
	      runs_give(end, 3, (uint64_t[]){ 0x1000, 0x1002, 0x1005,
					     0x2000, 0x2004 }, 5, SIZE_MAX),
	      "see above");
	CHECK("runs: a signal's handler entry marks the next instruction",
	      runs_give(async, 3, (uint64_t[]){ 0x2000, 0x2004, 0x2000,
					       0x2004 }, 4, 2), "see above");
	CHECK("runs: a fault cuts its run",
	      runs_give(trunc, 3, (uint64_t[]){ 0x1000, 0x1002 }, 2,
			SIZE_MAX), "see above");
	CHECK("runs: a handler entry stays for the next instruction run",
	      runs_give(trunc0, 5, (uint64_t[]){ 0x2000, 0x2004 }, 2, 0),
	      "see above");
	CHECK("runs: a rep instruction's exhausted check ran nothing",
	      runs_give(rep, 2, (uint64_t[]){ 0x3000 }, 1, SIZE_MAX) &&
	      runs_give(rep_first, 4, (uint64_t[]){ 0x3000 }, 1, SIZE_MAX),
	      "see above");
}

static void test_bad_runs(void)
{
	static const struct { const char *what; uint8_t v[4]; size_t n; }
	bad[] = {
		{ "an unknown translation", { EXEC(1) }, 1 },
		{ "a translation past the table", { EXEC(31) }, 1 },
		{ "an exit of no run", { EXIT(0) }, 1 },
		{ "an exit past the translation's", { EXEC(0), EXIT(2) }, 2 },
		{ "an unknown mark", { EXEC(0), MARK(3), 0 }, 3 },
		{ "an item of kind 3", { 3 }, 1 },
		{ "a number cut short", { EXEC(0), 0x80 }, 2 },
		{ "a cut past the run's end", { EXEC(0), MARK(2), 4 }, 3 },
		{ "a cut of no run", { MARK(2), 1 }, 2 },
		{ "a cut without its count", { EXEC(0), MARK(2) }, 2 },
	};
	bool ok = true;

	load_table();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t pcs[8];
		bool async[8];
		struct hwt_err err = { 0 };
		size_t got;
		int rc = walk(bad[i].v, bad[i].n, pcs, async, 8, &got, &err);

		if (rc != -EBADMSG || !strstr(err.msg, "runs damaged")) {
			printf("  (%s: rc %d %s)\n", bad[i].what, rc, err.msg);
			ok = false;
		}
	}
	CHECK("runs: damaged items are errors naming their byte", ok,
	      "see above");
}

static void put_chunk(struct hwt_bytes *t, const struct hwt_sw_chunk_hdr *h,
		      const uint8_t *pay)
{
	uint8_t hdr[HWT_SW_CHUNK_HDR_SIZE];

	hwt_sw_chunk_hdr_pack(h, hdr);
	hwt_bytes_put(t, hdr, sizeof(hdr));
	hwt_bytes_put(t, pay, h->payload_size);
}

/* A trace of a table and a RUNS chunk of loops of T0 and T1: reps
 * times (T0 leaving by its implied side exit, T1), then T0 whole. */
static void runs_trace(struct hwt_bytes *t, size_t reps, uint64_t last_pc)
{
	uint8_t tab[512];
	struct hwt_sw_chunk_hdr h = { .flags = HWT_SW_CHUNK_TABLE,
				      .payload_size = (uint32_t)
					table_bytes(tab) };
	struct hwt_bytes items = { 0 };

	put_chunk(t, &h, tab);
	for (size_t i = 0; i < reps; i++)
		hwt_bytes_put(&items, (uint8_t[]){ EXEC(0), EXEC(2) }, 2);
	hwt_bytes_put(&items, (uint8_t[]){ EXEC(0) }, 1);
	h = (struct hwt_sw_chunk_hdr){
		.flags = HWT_SW_CHUNK_RUNS | HWT_SW_CHUNK_PREV,
		.first_pc = 0x777, .first_seq = 10, .last_pc = last_pc,
		.insn_count = (uint32_t)(3 * reps + 3),
		.payload_size = (uint32_t)items.n,
	};
	put_chunk(t, &h, items.p);
	hwt_bytes_free(&items);
}

/* The same walks, the table read as the runs name its translations. */
static void test_runs_lazy(void)
{
	lazy_table = true;
	check_prefix = "lazy table, ";
	test_runs();
	test_bad_runs();
	check_prefix = "";
	lazy_table = false;
}

static void test_flatten(void)
{
	struct hwt_bytes t = { 0 };
	struct hwt_err err = { 0 };
	struct hwt_sw_chunk_hdr h;
	struct hwt_sw_reader r;
	uint8_t *flat = NULL;
	size_t n = 0, insns = 1;
	bool async;
	int rc;

	runs_trace(&t, 1000, 0x1005);
	rc = hwt_sw_runs_flatten(t.p, t.n, &flat, &n, &err);
	if (rc == 0)
		rc = hwt_sw_chunk_hdr_unpack(flat, n, &h, &err);
	if (rc == 0) {
		hwt_sw_reader_init(&r, flat + HWT_SW_CHUNK_HDR_SIZE,
				   h.payload_size, h.first_pc);
		while (hwt_sw_reader_next(&r, &async, NULL) == HWT_SW_NEXT)
			insns++;
	}
	CHECK("flatten: runs become one plain chunk of their instructions",
	      rc == 0 && h.first_pc == 0x1000 && h.first_seq == 10 &&
	      h.insn_count == 3003 && insns == 3003 && r.pc == 0x1005 &&
	      n == HWT_SW_CHUNK_HDR_SIZE + h.payload_size,
	      "rc %d (%s), %zu instructions", rc, err.msg, insns);
	free(flat);
	t.n = 0;
	runs_trace(&t, 1000, 0x1002);
	rc = hwt_sw_runs_flatten(t.p, t.n, &flat, &n, &err);
	CHECK("flatten: runs that disagree with their header are an error",
	      rc == -EBADMSG && strstr(err.msg, "its header says"),
	      "rc %d (%s)", rc, err.msg);
	t.n = 0;
	runs_trace(&t, 10, 0x1005);
	t.p[HWT_SW_CHUNK_HDR_SIZE] = 0;   /* the table's first id: 0 -> 0 */
	t.p[HWT_SW_CHUNK_HDR_SIZE + 1] = 0;  /* and 0 instructions */
	rc = hwt_sw_runs_flatten(t.p, t.n, &flat, &n, &err);
	CHECK("flatten: a damaged table is an error", rc == -EBADMSG,
	      "rc %d (%s)", rc, err.msg);
	hwt_bytes_free(&t);
}

struct collect {
	uint64_t *pcs;
	size_t n;
};

static int collect_insn(void *ctx, uint64_t pc, bool async)
{
	struct collect *c = ctx;

	c->pcs[c->n++] = pc;
	return 0;
}

/* The trace t again with a CUTS chunk before its RUNS chunk: cuts as
 * ix found them, or with the second past the chunk's items (bad 1) or
 * before the first (bad 2). */
static struct hwt_sw_index *repack(const struct hwt_bytes *t,
				   const struct hwt_sw_index *ix, int bad)
{
	const struct hwt_sw_index_chunk *c = &ix->chunks[1];
	struct hwt_bytes u = { 0 }, cuts = { 0 };
	struct hwt_sw_chunk_hdr h = { .flags = HWT_SW_CHUNK_CUTS };
	struct hwt_sw_index *out = NULL;
	uint8_t *zst = NULL, *idx = NULL;
	size_t zst_n, idx_n, runs = (size_t)c->decoded_off;

	for (size_t k = 0; k < c->ncuts; k++) {
		const struct hwt_sw_index_cut *cut = &ix->cuts[c->first_cut + k];
		uint8_t q[HWT_SW_CUT_BYTES];

		hwt_put_le32(q, bad == 1 && k == 1 ? c->hdr.payload_size :
			     cut->rec_off);
		hwt_put_le32(q + 4, bad == 2 && k == 1 ? 1 : cut->insns);
		hwt_put_le64(q + 8, cut->pc);
		hwt_bytes_put(&cuts, q, sizeof(q));
	}
	h.payload_size = (uint32_t)cuts.n;
	hwt_bytes_put(&u, t->p, runs);
	put_chunk(&u, &h, cuts.p);
	hwt_bytes_put(&u, t->p + runs, t->n - runs);
	if (!hwt_sw_trace_pack(u.p, u.n, &zst, &zst_n, &idx, &idx_n, NULL) &&
	    idx)
		hwt_sw_index_parse(idx, idx_n, zst, zst_n, u.n, &out, NULL);
	free(zst);
	free(idx);
	hwt_bytes_free(&u);
	hwt_bytes_free(&cuts);
	return out;
}

static void given_cuts(const struct hwt_bytes *t, const struct hwt_sw_index *ix)
{
	struct hwt_sw_index *again = repack(t, ix, 0), *moved, *back;
	bool same = again && again->nchunks == 3 &&
		again->chunks[2].ncuts == ix->chunks[1].ncuts;

	for (size_t k = 0; same && k < ix->chunks[1].ncuts; k++) {
		const struct hwt_sw_index_cut *a = &ix->cuts[k];
		const struct hwt_sw_index_cut *b =
			&again->cuts[again->chunks[2].first_cut + k];

		same = a->rec_off == b->rec_off && a->insns == b->insns &&
			a->pc == b->pc && b->prev_known;
	}
	CHECK("pack: restart points a recorder gives are the index's",
	      same, "%zu chunks", again ? again->nchunks : 0);
	moved = repack(t, ix, 1);
	back = repack(t, ix, 2);
	CHECK("pack: given restart points outside their chunk or going back "
	      "are refused (no index)", !moved && !back, "indexed");
	hwt_sw_index_free(again);
	hwt_sw_index_free(moved);
	hwt_sw_index_free(back);
}

static void test_pack(void)
{
	struct hwt_bytes t = { 0 };
	struct hwt_err err = { 0 };
	struct hwt_sw_index *ix = NULL;
	uint8_t *zst = NULL, *idx = NULL, *buf = malloc(HWT_SW_INDEX_FRAME_MAX);
	size_t zst_n, idx_n, reps = 5000;
	uint64_t *all = malloc((3 * reps + 3) * 8);
	struct collect c = { all, 0 };
	bool cuts_ok = true, same = true;
	int rc;

	load_table();
	runs_trace(&t, reps, 0x1005);
	rc = hwt_sw_trace_pack(t.p, t.n, &zst, &zst_n, &idx, &idx_n, &err);
	if (!rc && idx)
		rc = hwt_sw_index_parse(idx, idx_n, zst, zst_n, t.n, &ix,
					&err);
	CHECK("pack: a trace of a table and runs gets an index",
	      rc == 0 && idx && ix && ix->nchunks == 2 &&
	      ix->chunks[0].hdr.flags == HWT_SW_CHUNK_TABLE &&
	      ix->chunks[1].ncuts == 3, "rc %d (%s), %zu chunks, %zu cuts",
	      rc, err.msg, ix ? ix->nchunks : 0,
	      ix && ix->nchunks > 1 ? ix->chunks[1].ncuts : 0);
	if (rc || !ix || ix->nchunks != 2)
		goto out;
	/* The whole chunk, then each walk begun at a restart point. */
	{
		const uint8_t *items = t.p + t.n - ix->chunks[1].hdr.payload_size;
		uint32_t size = ix->chunks[1].hdr.payload_size;
		struct hwt_sw_runs w;
		uint64_t given;

		hwt_sw_runs_init(&w, &table, items, size, 0, true, 0x777);
		hwt_sw_runs_each(&w, UINT64_MAX, collect_insn, &c, &given,
				 &err);
		for (size_t k = 0; k < ix->chunks[1].ncuts; k++) {
			const struct hwt_sw_index_cut *cut =
				&ix->cuts[ix->chunks[1].first_cut + k];
			uint64_t part[8];
			struct collect pc = { part, 0 };

			cuts_ok = cuts_ok && cut->insns >= (k + 1) * 4096 &&
				cut->insns < (k + 1) * 4096 + 3 &&
				cut->prev_known && cut->rec_len == 0 &&
				cut->pc == all[cut->insns - 1];
			hwt_sw_runs_init(&w, &table, items, size, cut->rec_off,
					 cut->prev_known, cut->pc);
			hwt_sw_runs_each(&w, 8, collect_insn, &pc, &given,
					 &err);
			same = same && given == 8 &&
				!memcmp(part, all + cut->insns, sizeof(part));
		}
	}
	CHECK("pack: restart points every 4096 instructions or so, at a run",
	      cuts_ok && c.n == 3 * reps + 3, "%zu instructions", c.n);
	CHECK("pack: a walk begun at a restart point goes on as the whole",
	      same, "differs");
	rc = hwt_sw_index_frame_read(ix, zst, 0, buf, &err);
	CHECK("pack: its frame reads back against the index", rc == 0,
	      "rc %d (%s)", rc, err.msg);
	given_cuts(&t, ix);
out:
	hwt_sw_index_free(ix);
	free(zst);
	free(idx);
	free(buf);
	free(all);
	hwt_bytes_free(&t);
}

static int count_write(void *ctx, const uint8_t *frame, size_t n,
		       struct hwt_err *err)
{
	*(size_t *)ctx += n;
	return 0;
}

static int append_write(void *ctx, const uint8_t *frame, size_t n,
			struct hwt_err *err)
{
	hwt_bytes_put(ctx, frame, n);
	return 0;
}

/* The index of trace t as a packer keeping one restart point in thin
 * writes it (a spill's, for older history), or NULL. */
static struct hwt_sw_index *pack_thin(const struct hwt_bytes *t, unsigned thin)
{
	struct hwt_bytes zst = { 0 };
	struct hwt_sw_packer *p = NULL;
	struct hwt_sw_index *ix = NULL;
	uint8_t *idx = NULL;
	size_t idx_n, off = 0;
	int rc = hwt_sw_packer_new(append_write, &zst, &p, NULL);

	if (!rc)
		hwt_sw_packer_thin(p, thin);
	while (!rc && off < t->n) {
		struct hwt_sw_chunk_hdr h;

		if (hwt_sw_chunk_hdr_unpack_flags(t->p + off, t->n - off,
						  HWT_SW_CHUNK_RUNS_FLAGS, &h,
						  NULL))
			break;
		rc = hwt_sw_packer_add(p, t->p + off, HWT_SW_CHUNK_HDR_SIZE +
				       h.payload_size, NULL);
		off += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
	}
	if (!rc && !hwt_sw_packer_flush(p, NULL) &&
	    !hwt_sw_packer_index(p, &idx, &idx_n, NULL))
		hwt_sw_index_parse(idx, idx_n, zst.p, zst.n, t->n, &ix, NULL);
	hwt_sw_packer_free(p);
	free(idx);
	hwt_bytes_free(&zst);
	return ix;
}

/* One restart point in four: a quarter of them, each at a run 16 K
 * instructions or more from the last, the index still valid, and a walk
 * begun at each goes on as the whole. */
static void test_pack_thin(void)
{
	struct hwt_bytes t = { 0 };
	struct hwt_err err = { 0 };
	size_t reps = 30000;
	uint64_t *all = malloc((3 * reps + 3) * 8);
	struct collect c = { all, 0 };
	struct hwt_sw_index *full, *thin;
	bool same = true;

	load_table();
	runs_trace(&t, reps, 0x1005);
	full = pack_thin(&t, 1);
	thin = pack_thin(&t, 4);
	CHECK("pack thin: one restart point in four",
	      full && thin && full->nchunks == 2 && thin->nchunks == 2 &&
	      full->chunks[1].ncuts == 21 && thin->chunks[1].ncuts == 5,
	      "%zu and %zu cuts", full ? full->ncuts : 0,
	      thin ? thin->ncuts : 0);
	if (!full || !thin || thin->nchunks != 2)
		goto out;
	{
		const uint8_t *items = t.p + t.n - thin->chunks[1].hdr.payload_size;
		uint32_t size = thin->chunks[1].hdr.payload_size;
		struct hwt_sw_runs w;
		uint64_t given, last = 0;

		hwt_sw_runs_init(&w, &table, items, size, 0, true, 0x777);
		hwt_sw_runs_each(&w, UINT64_MAX, collect_insn, &c, &given,
				 &err);
		for (size_t k = 0; k < thin->chunks[1].ncuts; k++) {
			const struct hwt_sw_index_cut *cut = &thin->cuts[k];
			uint64_t part[8];
			struct collect pc = { part, 0 };

			same = same && cut->insns >= last + 4 * 4096 &&
				cut->pc == all[cut->insns - 1];
			last = cut->insns;
			hwt_sw_runs_init(&w, &table, items, size, cut->rec_off,
					 cut->prev_known, cut->pc);
			hwt_sw_runs_each(&w, 8, collect_insn, &pc, &given,
					 &err);
			same = same && given == 8 &&
				!memcmp(part, all + cut->insns, sizeof(part));
		}
	}
	CHECK("pack thin: each restart point 16 K instructions on, a walk "
	      "from it as the whole", same && c.n == 3 * reps + 3,
	      "differs (%zu instructions)", c.n);
out:
	hwt_sw_index_free(full);
	hwt_sw_index_free(thin);
	free(all);
	hwt_bytes_free(&t);
}

/* Frames of groups (a table and its runs, each group a frame of its
 * own, a --whole spill's), one group going on into a second frame:
 * forgetting the frame with its table forgets that second frame too,
 * never keeps runs without their table. */
static void test_forget_groups(void)
{
	struct hwt_bytes t = { 0 };
	struct hwt_sw_packer *p = NULL;
	struct hwt_err err = { 0 };
	uint64_t lost = 0, lost_bytes = 0;
	size_t written = 0, tab_n, runs_at;
	uint8_t *idx = NULL;
	size_t idx_n = 0;
	struct hwt_sw_index *ix = NULL;
	int rc;

	load_table();
	runs_trace(&t, 100, 0x1005);
	runs_at = HWT_SW_CHUNK_HDR_SIZE + hwt_get_le32(t.p + 4);
	tab_n = runs_at;
	rc = hwt_sw_packer_new(count_write, &written, &p, &err);
	/* Frames: table and runs | its runs again (a continuation) | table
	 * and runs: 'T' adds the table, 'R' the runs, '|' ends a frame. */
	for (const char *op = "TR|R|TR|"; !rc && *op; op++)
		rc = *op == 'T' ? hwt_sw_packer_add(p, t.p, tab_n, &err) :
			*op == 'R' ? hwt_sw_packer_add(p, t.p + runs_at,
						       t.n - runs_at, &err) :
			hwt_sw_packer_flush(p, &err);
	if (!rc) {
		/* Keep about the last frame's bytes: the first goes, and
		 * the continuation with it. */
		uint64_t end = hwt_sw_packer_end(p);

		hwt_sw_packer_forget(p, end - hwt_sw_packer_kept_from(p) - 1,
				     &lost, &lost_bytes);
		rc = hwt_sw_packer_index(p, &idx, &idx_n, &err);
	}
	CHECK("forget: runs whose table went go with it, counted lost",
	      rc == 0 && lost == 2 * 303 && hwt_sw_packer_insns(p) == 303,
	      "rc %d (%s), lost %llu, kept %llu", rc, err.msg,
	      (unsigned long long)lost,
	      (unsigned long long)(p ? hwt_sw_packer_insns(p) : 0));
	hwt_sw_packer_free(p);
	hwt_sw_index_free(ix);
	free(idx);
	hwt_bytes_free(&t);
}

int main(void)
{
	RUN(test_table);
	RUN(test_table_lazy);
	RUN(test_runs);
	RUN(test_bad_runs);
	RUN(test_runs_lazy);
	RUN(test_flatten);
	RUN(test_pack);
	RUN(test_pack_thin);
	RUN(test_forget_groups);
	hwt_sw_table_free(&table);
	return check_exit();
}
