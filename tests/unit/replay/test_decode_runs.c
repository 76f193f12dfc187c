// SPDX-License-Identifier: BSD-2-Clause
/* test_decode_runs.c - blocks straight from superblock runs
 * (replay/decode_runs.c) are the blocks the plain records' decoder gives
 * for the same instructions: random translations over code of mixed
 * instruction lengths, over addresses without code, chased jumps,
 * repeated rep copies, runs that go on where the one before ended; runs
 * left by side exits, cut short, entering signal handlers; a segment
 * ending inside a run, one with a gap after it, one that claims more than
 * its runs give; and the search of runs for instructions at given
 * addresses (a continue's breakpoints). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array.h"
#include "decode.h"
#include "replay-int.h"
#include "check.h"

#define BASE 0x400000u
#define NOCODE 0x900000u         /* no code is mapped there */
#define PATTERN_INSNS 3          /* nop; mov %rax,%rbx; xchg %ax,%ax */
#define REPEATS 2000
#define NTRS 300
#define NRUNS 20000
#define PAIRS 40                 /* translations that follow on in pairs */

static const uint8_t pattern[] = { 0x90, 0x48, 0x89, 0xc3, 0x66, 0x90 };
static const uint8_t pattern_off[PATTERN_INSNS] = { 0, 1, 4 };
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? rng % n : 0;
}

/* The address of instruction k of the code (k past it: its end). */
static uint64_t insn_at(uint64_t k)
{
	return BASE + (k / PATTERN_INSNS) * sizeof(pattern) +
		pattern_off[k % PATTERN_INSNS];
}

static uint64_t some_pc(void)
{
	uint64_t r = rnd(20);

	if (r == 0)
		return NOCODE + rnd(64);
	if (r == 1)              /* inside an instruction: decodes anew */
		return BASE + rnd(REPEATS * sizeof(pattern));
	return insn_at(rnd(REPEATS * PATTERN_INSNS - 40));
}

/* The code's instruction after pc, if pc starts one of them. */
static uint64_t after(uint64_t pc)
{
	uint64_t off = pc - BASE, k;

	if (pc < BASE || off >= REPEATS * sizeof(pattern))
		return pc + 1;
	for (k = 0; k < PATTERN_INSNS; k++)
		if (pattern_off[k] == off % sizeof(pattern))
			return insn_at((off / sizeof(pattern)) *
				       PATTERN_INSNS + k + 1);
	return pc + 1;
}

static struct hwt_image *code_image(char *path)
{
	uint8_t *code = malloc(REPEATS * sizeof(pattern));
	struct hwt_image *img = NULL;
	struct hwt_err err = { 0 };
	int fd = mkstemp(path);
	bool ok;

	for (size_t i = 0; code && i < REPEATS; i++)
		memcpy(code + i * sizeof(pattern), pattern, sizeof(pattern));
	ok = code && fd >= 0 && write(fd, code, REPEATS * sizeof(pattern)) ==
		(ssize_t)(REPEATS * sizeof(pattern));
	if (fd >= 0)
		close(fd);
	free(code);
	if (!ok || hwt_image_new(&img, &err) ||
	    hwt_image_add_raw(img, path, 0, REPEATS * sizeof(pattern), BASE,
			      HWT_ISA_X86_64, &err)) {
		CHECK("runs: a code image", false, "%s", err.msg);
		hwt_image_free(img);
		return NULL;
	}
	return img;
}

static void put_u(struct hwt_bytes *b, uint64_t v)
{
	do {
		uint8_t c = (uint8_t)(v & 0x7f);

		v >>= 7;
		hwt_bytes_put(b, (uint8_t[]){ (uint8_t)(c | (v ? 0x80 : 0)) },
			      1);
	} while (v);
}

/* A table of NTRS random translations, read into tab. */
static int make_table(struct hwt_sw_table *tab, struct hwt_sw_tr *trs)
{
	struct hwt_bytes pay = { 0 };
	struct hwt_err err = { 0 };
	int rc;

	for (uint32_t id = 0; id < NTRS; id++) {
		struct hwt_sw_tr *tr = &trs[id];
		uint8_t buf[4096];

		tr->ninsns = 1 + (uint32_t)rnd(20);
		tr->pc = calloc(tr->ninsns, sizeof(*tr->pc));
		/* Odd ones below PAIRS go on where the one before ends. */
		tr->pc[0] = id % 2 && id < PAIRS ?
			after(trs[id - 1].pc[trs[id - 1].ninsns - 1]) :
			some_pc();
		for (uint32_t i = 1; i < tr->ninsns; i++) {
			uint64_t r = rnd(10);

			tr->pc[i] = r < 7 ? after(tr->pc[i - 1]) :
				r == 7 ? tr->pc[i - 1] : some_pc();
		}
		tr->nexits = (uint32_t)rnd(3);
		tr->exit_after = calloc(tr->nexits + 1,
					sizeof(*tr->exit_after));
		for (uint32_t k = 0; k < tr->nexits; k++)
			tr->exit_after[k] = 1 + (uint32_t)rnd(tr->ninsns);
		tr->entry = tr->pc[0];
		hwt_bytes_put(&pay, buf, hwt_sw_tr_encode(id, tr, buf));
	}
	rc = hwt_sw_table_add(tab, pay.p, pay.n, &err);
	if (rc)
		printf("table: %s\n", err.msg);
	hwt_bytes_free(&pay);
	return rc;
}

/* NRUNS runs of random translations, some left by a side exit, cut
 * short or followed by a signal handler's entry. */
static void make_runs(struct hwt_bytes *items, const struct hwt_sw_tr *trs)
{
	uint32_t last = 1;

	for (size_t i = 0; i < NRUNS; i++) {
		uint32_t id = last % 2 == 0 && last < PAIRS && rnd(2) ?
			last + 1 : (uint32_t)rnd(NTRS);
		uint64_t r = rnd(12);

		last = id;

		put_u(items, (uint64_t)id << 2 | HWT_SW_RUNS_EXEC);
		if (r == 0)
			put_u(items, rnd(trs[id].nexits + 1) << 2 |
			      HWT_SW_RUNS_EXIT);
		else if (r == 1) {
			put_u(items, HWT_SW_RUNS_TRUNC << 2 | HWT_SW_RUNS_MARK);
			put_u(items, rnd(trs[id].ninsns + 1));
		} else if (r == 2)
			put_u(items, HWT_SW_RUNS_ASYNC << 2 | HWT_SW_RUNS_MARK);
	}
}

static int record_insn(void *ctx, uint64_t pc, bool async)
{
	struct { struct hwt_bytes rec; uint64_t first, last; bool started,
		 async; } *o = ctx;
	uint8_t r[HWT_SW_MAX_RECORD + 1];

	if (!o->started) {
		o->started = true;
		o->first = o->last = pc;
		o->async = async;
		return 0;
	}
	hwt_bytes_put(&o->rec, r, hwt_sw_encode_step(o->last, pc, async, r));
	o->last = pc;
	return 0;
}

/* The blocks decode_sw.c gives for the first n instructions of the runs,
 * written out as plain records. */
static int plain_blocks(struct hwt_sw_table *tab, const struct hwt_bytes *items,
			uint64_t n, struct hwt_image *img, struct hwt_blocks *out)
{
	struct { struct hwt_bytes rec; uint64_t first, last; bool started,
		 async; } o = { 0 };
	struct hwt_err err = { 0 };
	struct hwt_sw_runs w;
	struct hwt_segment seg;
	uint64_t given;
	int rc;

	hwt_sw_runs_init(&w, tab, items->p, items->n, 0, true, 0x777);
	rc = hwt_sw_runs_each(&w, n, record_insn, &o, &given, &err);
	seg = (struct hwt_segment){
		.pc = o.first, .nitems = (uint32_t)given, .len = o.rec.n,
		.own.bytes = o.rec.p ? o.rec.p : items->p,
		.flags = HWT_SW_SEG_EXPANDED | (o.async ? HWT_SW_SEG_ASYNC : 0),
	};
	if (!rc)
		rc = hwt_decoder_sw.decode(NULL, 0, &seg, img, out, &err);
	hwt_bytes_free(&o.rec);
	return rc;
}

static bool same_blocks(const struct hwt_blocks *a, const struct hwt_blocks *b,
			size_t *at)
{
	for (*at = 0; *at < a->n && *at < b->n; ++*at) {
		const struct hwt_block *x = &a->v[*at], *y = &b->v[*at];

		if (x->begin != y->begin || x->end != y->end ||
		    x->count != y->count || x->flags != y->flags)
			return false;
	}
	return a->n == b->n;
}

static uint64_t count_insns(struct hwt_sw_table *tab,
			    const struct hwt_bytes *items)
{
	struct hwt_sw_runs w;
	const struct hwt_sw_tr *tr;
	struct hwt_err err = { 0 };
	uint64_t total = 0;
	uint32_t n;
	bool async;

	hwt_sw_runs_init(&w, tab, items->p, items->n, 0, true, 0x777);
	while (hwt_sw_runs_next(&w, &tr, &n, &async, &err) == 1)
		total += n;
	return total;
}

static void test_same_blocks(struct hwt_image *img)
{
	static struct hwt_sw_tr trs[NTRS];
	struct hwt_sw_table tab = { 0 };
	struct hwt_bytes items = { 0 };
	struct hwt_runs_lens lens = { 0 };
	struct hwt_blocks want = { 0 }, got = { 0 }, again = { 0 };
	struct hwt_err err = { 0 };
	struct hwt_segment seg;
	uint64_t total;
	size_t at = 0, blocks;
	bool fell = false;
	int rc;

	if (make_table(&tab, trs))
		goto out;
	make_runs(&items, trs);
	total = count_insns(&tab, &items);
	seg = (struct hwt_segment){
		.len = items.n, .pc = 0x777, .nitems = (uint32_t)total,
		.flags = HWT_SW_SEG_RUNS | HWT_SW_SEG_PREV,
	};
	rc = plain_blocks(&tab, &items, total, img, &want);
	if (!rc)
		rc = hwt_runs_decode(&lens, 0, &tab, items.p, items.n, &seg,
				     img, &got, &err);
	for (size_t i = 0; i < want.n; i++)
		fell = fell || want.v[i].count > 3;
	blocks = want.n;
	CHECK("runs: the blocks of plain records of the same instructions",
	      rc == 0 && same_blocks(&want, &got, &at) && fell &&
	      blocks > NRUNS / 2, "rc %d (%s), block %zu of %zu/%zu differs",
	      rc, err.msg, at, want.n, got.n);
	/* Lengths read before, and again for another table's numbers. */
	rc = hwt_runs_decode(&lens, 0, &tab, items.p, items.n, &seg, img,
			     &again, &err);
	CHECK("runs: the same again from the lengths kept", rc == 0 &&
	      same_blocks(&want, &again, &at), "rc %d, block %zu", rc, at);
	again.n = 0;
	rc = hwt_runs_decode(&lens, 1, &tab, items.p, items.n, &seg, img,
			     &again, &err);
	CHECK("runs: the same with another table's lengths dropped",
	      rc == 0 && lens.table == 1 && same_blocks(&want, &again, &at),
	      "rc %d, block %zu", rc, at);

	/* A segment ending inside a run, then a gap. */
	want.n = got.n = 0;
	seg.nitems = (uint32_t)total - 7 + 1;
	seg.reason = "lost";
	rc = plain_blocks(&tab, &items, total - 7, img, &want);
	if (!rc)
		rc = hwt_runs_decode(&lens, 1, &tab, items.p, items.n, &seg,
				     img, &got, &err);
	CHECK("runs: a segment ending inside a run, its gap after it",
	      rc == 0 && got.n == want.n + 1 &&
	      (got.n--, same_blocks(&want, &got, &at)) &&
	      got.v[got.n].flags == HWT_BLOCK_GAP &&
	      got.v[got.n].reason == seg.reason, "rc %d (%s), block %zu",
	      rc, err.msg, at);

	/* More than the runs give: the trace is not what was indexed. */
	got.n = 0;
	seg.reason = NULL;
	seg.nitems = (uint32_t)total + 1;
	rc = hwt_runs_decode(&lens, 1, &tab, items.p, items.n, &seg, img,
			     &got, &err);
	CHECK("runs: a segment its runs fall short of is refused",
	      rc == -EIO && strstr(err.msg, "gives"), "rc %d (%s)", rc,
	      err.msg);
	seg.off = items.n + 1;
	rc = hwt_runs_decode(&lens, 1, &tab, items.p, items.n, &seg, img,
			     &got, &err);
	CHECK("runs: a segment outside its frame is refused",
	      rc == -EIO && strstr(err.msg, "outside"), "rc %d (%s)", rc,
	      err.msg);
out:
	hwt_runs_lens_free(&lens);
	free(want.v);
	free(got.v);
	free(again.v);
	hwt_bytes_free(&items);
	hwt_sw_table_free(&tab);
	for (size_t i = 0; i < NTRS; i++) {
		free(trs[i].pc);
		free(trs[i].exit_after);
	}
}

static int list_insn(void *ctx, uint64_t pc, bool async)
{
	hwt_bytes_put(ctx, &pc, sizeof(pc));
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* hwt_runs_find against looking at every instruction: random address
 * sets (of the code's, of no code's, none run) and ranges, both ways. */
static void test_find(struct hwt_image *img)
{
	static struct hwt_sw_tr trs[NTRS];
	struct hwt_sw_table tab = { 0 };
	struct hwt_bytes items = { 0 }, all = { 0 };
	struct hwt_runs_marks marks = { 0 };
	struct hwt_err err = { 0 };
	struct hwt_sw_runs w;
	struct hwt_segment seg;
	const uint64_t *pcs;
	uint64_t total, given;
	size_t bad = 0, hits = 0, asked = 0;
	int rc;

	if (make_table(&tab, trs))
		goto out;
	make_runs(&items, trs);
	hwt_sw_runs_init(&w, &tab, items.p, items.n, 0, true, 0x777);
	hwt_sw_runs_each(&w, UINT64_MAX, list_insn, &all, &given, &err);
	pcs = (const uint64_t *)all.p;
	total = given;
	seg = (struct hwt_segment){
		.len = items.n, .pc = 0x777, .nitems = (uint32_t)total,
		.flags = HWT_SW_SEG_RUNS | HWT_SW_SEG_PREV,
	};
	for (int q = 0; q < 300; q++) {
		uint64_t set[4];
		size_t n = 1 + rnd(4);
		uint32_t lo = (uint32_t)rnd(total), hi = lo + (uint32_t)rnd(
			q % 2 ? 50 : total), off = 0, want_off = 0;
		bool back = q % 3 == 0;
		int want = 0;

		for (size_t i = 0; i < n; i++)
			set[i] = q % 7 == 0 ? NOCODE + 0x1000 + i :
				pcs[rnd(total)];
		/* At the range's ends exactly. */
		if (q % 5 == 0 && lo < total)
			set[0] = pcs[q % 10 ? lo : hi < total ? hi : total - 1];
		qsort(set, n, sizeof(*set), cmp_u64);
		for (uint32_t k = lo; k <= hi && k < total; k++) {
			if (!bsearch(&pcs[k], set, n, sizeof(*set), cmp_u64))
				continue;
			want = 1;
			want_off = k;
			if (!back)
				break;
		}
		hwt_runs_marks_reset(&marks, set, n);
		rc = hwt_runs_find(&marks, 0, &tab, items.p, items.n, &seg, lo,
				   hi, back, &off, &err);
		asked++;
		hits += want;
		bad += rc != want || (want && off != want_off);
	}
	CHECK("find: the nearest instruction at an address, either way, as "
	      "looking at each gives", bad == 0 && hits > asked / 4 &&
	      hits < asked, "%zu of %zu differ (%zu found)", bad, asked,
	      hits);
	seg.nitems = (uint32_t)total + 5;
	rc = hwt_runs_find(&marks, 0, &tab, items.p, items.n, &seg,
			   (uint32_t)total, (uint32_t)total + 4, false,
			   &(uint32_t){ 0 }, &err);
	CHECK("find: a segment its runs fall short of is refused",
	      rc == -EIO && strstr(err.msg, "gives"), "rc %d (%s)", rc,
	      err.msg);
out:
	hwt_runs_marks_free(&marks);
	hwt_bytes_free(&items);
	hwt_bytes_free(&all);
	hwt_sw_table_free(&tab);
	for (size_t i = 0; i < NTRS; i++) {
		free(trs[i].pc);
		free(trs[i].exit_after);
	}
}

int main(void)
{
	char path[] = "/tmp/hwt-test-runs-XXXXXX";
	struct hwt_image *img = code_image(path);

	if (!img)
		return check_exit();
	RUN(test_same_blocks, img);
	RUN(test_find, img);
	hwt_image_free(img);
	unlink(path);
	return check_exit();
}
