// SPDX-License-Identifier: BSD-2-Clause
/* test_bts.c - the Intel BTS decoder and hwt_history_to_bts.
 *
 * Synthetic BTS records over the test program's own code (mapped from
 * /proc/self/exe at its run-time load address): walks of straight runs
 * that end where a branch record sends them elsewhere, so every address
 * the history gives back can be compared with the one the walk took. Then
 * damaged records (unreachable blocks, targets without code, padding, a
 * torn last record, markers), and end to end: a program recorded by
 * `hwtrace record` (hwt-sw), converted to BTS records, decodes to the same
 * items, also when read back as an "hwtrace-bts" bundle. */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hwt-replay.h"
#include "check.h"
#include "self_image.h"

static struct self_image self_img;
static uint64_t rng = 0x9e3779b97f4a7c15ull;



/* Instruction starts of the program's text, by a linear sweep. */
static uint64_t pool[8192];
static size_t npool;

static void make_pool(struct hwt_image *img)
{
	npool = self_image_insn_sample(img, &self_img, &rng, pool,
				       sizeof(pool) / sizeof(pool[0]));
}

struct recs {
	uint8_t *v;
	size_t n, cap;      /* bytes */
};

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static void add_rec(struct recs *r, uint64_t from, uint64_t to)
{
	if (r->n + 24 > r->cap) {
		r->cap = r->cap ? 2 * r->cap : 4096;
		r->v = realloc(r->v, r->cap);
	}
	put64(r->v + r->n, from);
	put64(r->v + r->n + 8, to);
	put64(r->v + r->n + 16, xorshift64(&rng) & 0x10);  /* predicted or not */
	r->n += 24;
}

/* A walk of n instructions; ends[k] is the index of the last instruction
 * of block k (the from of record k + 1, after the begin record). Blocks
 * end at random or at an instruction that always branches. */
static size_t make_walk(struct hwt_image *img, size_t n, uint64_t *addrs,
			bool *async, size_t *ends, struct recs *r)
{
	uint64_t cur = pool[0];
	size_t run = 1 + xorshift64(&rng) % 12, nb = 0;

	r->n = 0;
	add_rec(r, 0, cur);
	memset(async, 0, n * sizeof(*async));
	for (size_t i = 0; i < n; i++) {
		struct hwt_insn in;
		uint64_t to;
		bool jump;

		addrs[i] = cur;
		if (hwt_image_insn(img, cur, false, &in) || !in.len)
			abort();
		jump = --run == 0 || in.cls == HWT_INSN_CALL ||
			in.cls == HWT_INSN_RET || in.cls == HWT_INSN_JUMP;
		if (i + 1 == n) {
			ends[nb++] = i;
			add_rec(r, cur, 0);
			break;
		}
		if (!jump) {
			cur += in.len;
			continue;
		}
		ends[nb++] = i;
		to = pool[xorshift64(&rng) % npool];
		add_rec(r, cur, to);
		/* A record back to the same instruction is a rep iteration. */
		async[i + 1] = in.cls == HWT_INSN_OTHER && to != cur;
		cur = to;
		run = 1 + xorshift64(&rng) % 12;
	}
	return nb;
}

/* Items first.. against addrs[0..n); the first bad index or 0. */
static uint64_t check_items(struct hwt_history *h, uint64_t first,
			    const uint64_t *addrs, const bool *async, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		struct hwt_item it;

		if (hwt_history_get(h, first + j, &it, NULL) ||
		    it.kind != HWT_ITEM_INSN || it.addr != addrs[j] ||
		    (async && !!(it.flags & HWT_ITEM_ASYNC) != async[j]))
			return first + j;
	}
	return 0;
}

static bool gap_at(struct hwt_history *h, uint64_t i, const char *want)
{
	struct hwt_item it;

	return !hwt_history_get(h, i, &it, NULL) && it.kind == HWT_ITEM_GAP &&
		strstr(it.gap_reason, want);
}

enum { N = 100000 };
static uint64_t addrs[N];
static bool async[N];
static size_t ends[N];

static void test_synthetic(struct hwt_image *img)
{
	struct recs r = { 0 };
	struct hwt_history *h = NULL;
	struct hwt_err err = { 0 };
	size_t nb = make_walk(img, N, addrs, async, ends, &r);
	uint64_t bad;
	int rc;

	rc = hwt_history_open_bts(r.v, r.n, 0, img, &h, &err);
	CHECK("bts: opens", rc == 0, "%s", err.msg);
	if (rc)
		return;
	CHECK("bts: item count is the walk's", hwt_history_count(h) == N,
	      "%llu items for %d instructions in %zu blocks",
	      (unsigned long long)hwt_history_count(h), N, nb);
	{
		struct hwt_item it;

		rc = hwt_history_get(h, N, &it, &err);
		CHECK("bts: the newest item is the last instruction",
		      rc == 0 && it.addr == addrs[N - 1], "rc %d", rc);
	}
	bad = check_items(h, 1, addrs, async, N);
	CHECK("bts: every address and async flag as walked", bad == 0,
	      "item %llu differs", (unsigned long long)bad);
	hwt_history_free(h);

	/* Without the end marker the current pc ends the newest block. */
	{
		size_t k = ends[nb - 2] + 1;   /* first insn of the last block */

		rc = hwt_history_open_bts(r.v, r.n - 24, addrs[N - 1], img, &h,
					  &err);
		CHECK("bts: the current pc ends the history",
		      rc == 0 && hwt_history_count(h) == N &&
		      !check_items(h, 1, addrs, async, N), "%s", err.msg);
		hwt_history_free(h);
		rc = hwt_history_open_bts(r.v, r.n - 24, 0, img, &h, &err);
		CHECK("bts: without it only the last target is known",
		      rc == 0 && hwt_history_count(h) == k + 1 &&
		      !check_items(h, 1, addrs, async, k + 1), "%s", err.msg);
		hwt_history_free(h);
	}
	free(r.v);
}

/* Small traces with one kind of damage each. */
static void test_damage(struct hwt_image *img)
{
	enum { M = 2000 };
	static uint64_t a[M];
	static bool as[M];
	static size_t e[M];
	struct recs r = { 0 };
	struct hwt_history *h = NULL;
	struct hwt_err err = { 0 };
	size_t nb = make_walk(img, M, a, as, e, &r), k = nb / 2;
	uint8_t *copy = malloc(r.n + 5 * 24);
	uint64_t end_k = e[k], n;
	int rc;

	/* Record k + 1 (block k's from) gets a from its block cannot
	 * reach: block k becomes a gap; block k + 1 starts at its to. */
	memcpy(copy, r.v, r.n);
	put64(copy + (k + 1) * 24, 0x2000);
	rc = hwt_history_open_bts(copy, r.n, 0, img, &h, &err);
	n = e[k - 1] + 1;
	CHECK("bts damage: unreachable from",
	      rc == 0 && hwt_history_count(h) == M - (end_k - n + 1) + 1 &&
	      !check_items(h, 1, a, as, n) && gap_at(h, n + 1, "cannot reach") &&
	      !check_items(h, n + 2, a + end_k + 1, NULL, M - end_k - 1),
	      "rc %d count %llu", rc,
	      (unsigned long long)(h ? hwt_history_count(h) : 0));
	hwt_history_free(h);
	h = NULL;

	/* Record k + 1's to points at no code: block k + 1 cannot be
	 * walked and is a gap; the history goes on after it. */
	memcpy(copy, r.v, r.n);
	put64(copy + (k + 1) * 24 + 8, 0x1000);
	rc = hwt_history_open_bts(copy, r.n, 0, img, &h, &err);
	n = end_k + 1;
	CHECK("bts damage: target without code",
	      rc == 0 && !check_items(h, 1, a, as, n) &&
	      gap_at(h, n + 1, "cannot reach") &&
	      !check_items(h, n + 2, a + e[k + 1] + 1, NULL,
			   M - e[k + 1] - 1), "rc %d", rc);
	hwt_history_free(h);
	h = NULL;

	/* Padding records anywhere change nothing. */
	memcpy(copy, r.v, 24);
	memset(copy + 24, 0, 48);
	memcpy(copy + 72, r.v + 24, r.n - 24);
	memset(copy + 72 + r.n - 24, 0, 24);
	rc = hwt_history_open_bts(copy, r.n + 72, 0, img, &h, &err);
	CHECK("bts damage: padding records are skipped",
	      rc == 0 && hwt_history_count(h) == M &&
	      !check_items(h, 1, a, as, M), "rc %d", rc);
	hwt_history_free(h);
	h = NULL;

	/* A torn last record: the newest block is lost, a gap says so. */
	memcpy(copy, r.v, r.n);
	rc = hwt_history_open_bts(copy, r.n - 24 + 7, 0, img, &h, &err);
	n = e[nb - 2] + 1;
	CHECK("bts damage: torn last record",
	      rc == 0 && hwt_history_count(h) == n + 1 &&
	      !check_items(h, 1, a, as, n) &&
	      gap_at(h, n + 1, "not a whole 24-byte record"), "rc %d", rc);
	hwt_history_free(h);
	h = NULL;

	/* Tracing off and on between blocks k and k + 1. */
	memcpy(copy, r.v, (k + 2) * 24);
	put64(copy + (k + 1) * 24 + 8, 0);
	put64(copy + (k + 2) * 24, 0);
	put64(copy + (k + 2) * 24 + 8, a[end_k + 1]);
	put64(copy + (k + 2) * 24 + 16, 0);
	memcpy(copy + (k + 3) * 24, r.v + (k + 2) * 24, r.n - (k + 2) * 24);
	rc = hwt_history_open_bts(copy, r.n + 24, 0, img, &h, &err);
	n = end_k + 1;
	CHECK("bts damage: tracing off and on is a gap",
	      rc == 0 && hwt_history_count(h) == M + 1 &&
	      !check_items(h, 1, a, as, n) && gap_at(h, n + 1, "tracing was off") &&
	      !check_items(h, n + 2, a + n, NULL, M - n), "rc %d", rc);
	hwt_history_free(h);
	h = NULL;

	/* Random bytes: whatever they decode to, every item reads. */
	for (int round = 0; round < 20; round++) {
		size_t sz = xorshift64(&rng) % (r.n + 1);
		uint64_t cnt;
		bool ok = true;

		memcpy(copy, r.v, r.n);
		for (int j = 0; j < 8; j++)
			copy[xorshift64(&rng) % r.n] = (uint8_t)xorshift64(&rng);
		rc = hwt_history_open_bts(copy, sz, xorshift64(&rng) % 2 ? a[5] : 0,
					  img, &h, &err);
		cnt = rc ? 0 : hwt_history_count(h);
		for (uint64_t i = 1; i <= cnt && ok; i++) {
			struct hwt_item it;

			ok = hwt_history_get(h, i, &it, &err) == 0;
		}
		hwt_history_free(h);
		h = NULL;
		if (rc || !ok) {
			CHECK("bts damage: random corruption reads", false,
			      "round %d: %s", round, err.msg);
			break;
		}
		if (round == 19)
			CHECK("bts damage: random corruption reads", true, " ");
	}
	free(copy);
	free(r.v);
}

/* ---- end to end ---------------------------------------------------------*/

static char build_dir[PATH_MAX], prog_dir[PATH_MAX];

static bool same_items(struct hwt_history *a, struct hwt_history *b,
		       uint64_t *bad)
{
	uint64_t n = hwt_history_count(a);

	*bad = 0;
	if (n != hwt_history_count(b))
		return false;
	for (uint64_t i = 1; i <= n; i++) {
		struct hwt_item x, y;

		if (hwt_history_get(a, i, &x, NULL) ||
		    hwt_history_get(b, i, &y, NULL) || x.kind != y.kind ||
		    x.addr != y.addr || x.len != y.len || x.cls != y.cls ||
		    (x.flags & HWT_ITEM_ASYNC) != (y.flags & HWT_ITEM_ASYNC)) {
			printf("  | item %llu: %d 0x%llx len %u cls %d flags %u "
			       "vs %d 0x%llx len %u cls %d flags %u\n",
			       (unsigned long long)i, x.kind,
			       (unsigned long long)x.addr, x.len, x.cls,
			       x.flags, y.kind, (unsigned long long)y.addr,
			       y.len, y.cls, y.flags);
			*bad = i;
			return false;
		}
	}
	return true;
}

static int write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "w");
	int ok = f && fwrite(data, 1, size, f) == size;

	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : -1;
}

/* A copy of the hwt-sw bundle src as an "hwtrace-bts" bundle in dst,
 * sharing its modules through an absolute systemPath. */
static int write_bts_bundle(const char *dst, const struct hwt_bundle *src,
			    const uint8_t *recs, size_t size)
{
	char path[PATH_MAX + 64];
	FILE *f;

	mkdir(dst, 0755);
	snprintf(path, sizeof(path), "%s/t.bts", dst);
	if (write_file(path, recs, size))
		return -1;
	snprintf(path, sizeof(path), "%s/trace.json", dst);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"type\": \"hwtrace-bts\", \"version\": 1, \"cpuInfo\": "
		"{\"vendor\": \"GenuineIntel\", \"family\": 6, \"model\": 85, "
		"\"stepping\": 4}, \"processes\": [{\"pid\": %lld, \"threads\": "
		"[{\"tid\": %lld, \"btsTrace\": \"t.bts\", \"traceSize\": %zu}], "
		"\"modules\": [", (long long)src->pid,
		(long long)src->threads[0].tid, size);
	for (size_t i = 0; i < src->nmodules; i++) {
		char *p = src->modules[i].file ?
			hwt_bundle_path(src, src->modules[i].file) : NULL;

		fprintf(f, "%s{\"systemPath\": \"%s\", \"loadAddress\": %llu}",
			i ? ", " : "", p ? p : src->modules[i].system_path,
			(unsigned long long)src->modules[i].load_address);
		free(p);
	}
	fprintf(f, "]}]}\n");
	return fclose(f) ? -1 : 0;
}

static void test_end_to_end(void)
{
	char tmp[] = "/tmp/hwt-bts-XXXXXX", cmd[3 * PATH_MAX], bdir[64],
		bts_dir[64];
	struct hwt_bundle *b = NULL, *bb = NULL;
	struct hwt_image *img = NULL, *img2 = NULL;
	struct hwt_history *sw = NULL, *bts = NULL, *bts2 = NULL;
	struct hwt_err err = { 0 };
	uint8_t *recs = NULL;
	size_t size = 0;
	uint64_t bad = 0;
	char prog[PATH_MAX + 32];
	int rc;

	snprintf(prog, sizeof(prog), "%s/signal", prog_dir);
	if (access(prog, X_OK) || !mkdtemp(tmp)) {
		printf("SKIP bts end to end: %s is not built (make programs)\n",
		       prog);
		return;
	}
	snprintf(bdir, sizeof(bdir), "%s/sw", tmp);
	snprintf(bts_dir, sizeof(bts_dir), "%s/bts", tmp);
	/* The exact reference recorder: what is converted is a native run. */
	snprintf(cmd, sizeof(cmd), "%s/hwtrace record --backend ptrace -o %s "
		 "-- %s >/dev/null 2>&1", build_dir, bdir, prog);
	rc = system(cmd);
	CHECK("bts e2e: hwtrace record signal", rc == 0, "'%s' gave %d", cmd,
	      rc);
	if (rc)
		goto out;
	rc = hwt_bundle_read(bdir, &b, &err);
	if (!rc)
		rc = hwt_image_new(&img, &err);
	if (!rc)
		rc = hwt_image_add_bundle(img, b, &err);
	if (!rc)
		rc = hwt_history_open(b, 0, img, &sw, &err);
	if (!rc)
		rc = hwt_history_to_bts(sw, 0, 0, &recs, &size, &err);
	if (!rc)
		rc = hwt_history_open_bts(recs, size, 0, img, &bts, &err);
	CHECK("bts e2e: convert and open", rc == 0, "%s", err.msg);
	if (rc)
		goto out;
	CHECK("bts e2e: BTS history is the hwt-sw history",
	      same_items(sw, bts, &bad),
	      "%llu vs %llu items, first difference at %llu (%zu records)",
	      (unsigned long long)hwt_history_count(sw),
	      (unsigned long long)hwt_history_count(bts),
	      (unsigned long long)bad, size / 24);
	printf("  | %llu instructions, %zu BTS records\n",
	       (unsigned long long)hwt_history_count(sw), size / 24);
	rc = write_bts_bundle(bts_dir, b, recs, size) ? -EIO :
		hwt_bundle_read(bts_dir, &bb, &err);
	if (!rc)
		rc = hwt_image_new(&img2, &err);
	if (!rc)
		rc = hwt_image_add_bundle(img2, bb, &err);
	if (!rc)
		rc = hwt_history_open(bb, 0, img2, &bts2, &err);
	CHECK("bts e2e: as an hwtrace-bts bundle",
	      rc == 0 && same_items(sw, bts2, &bad), "rc %d %s at %llu", rc,
	      err.msg, (unsigned long long)bad);
out:
	hwt_history_free(bts2);
	hwt_history_free(bts);
	hwt_history_free(sw);
	hwt_image_free(img2);
	hwt_image_free(img);
	hwt_bundle_free(bb);
	hwt_bundle_free(b);
	free(recs);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd))
		printf("  | could not remove %s\n", tmp);
}

int main(int argc, char **argv)
{
	struct hwt_image *img = NULL;
	struct hwt_err err = { 0 };
	int rc;

	(void)argc;
	(void)argv;
	if (!check_build_dir(build_dir, sizeof(build_dir)) ||
	    !check_programs_dir(prog_dir, sizeof(prog_dir)))
		return 1;
	self_img = self_image_find();
	rc = hwt_image_new(&img, &err);
	if (!rc)
		rc = hwt_image_add_elf(img, "/proc/self/exe", self_img.load, &err);
	CHECK("bts: map own code", rc == 0, "%s", err.msg);
	if (rc)
		return check_exit();
	make_pool(img);
	RUN(test_synthetic, img);
	RUN(test_damage, img);
	hwt_image_free(img);
	RUN(test_end_to_end);
	return check_exit();
}
