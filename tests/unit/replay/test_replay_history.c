// SPDX-License-Identifier: BSD-2-Clause
/* test_replay_history.c - hwt-sw decoding, lazy history, gaps, memory.
 *
 * Traces are synthesized with hwt_sw_encode_step over the test program's
 * own code (mapped from /proc/self/exe at its real load address): random
 * walks that run straight through code and jump at random, so every
 * address the history gives back can be compared with the one encoded. */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hwt-replay.h"
#include "replay-int.h"
#include "check.h"
#include "self_image.h"

static struct self_image self_img;
static uint64_t rng = 0x243f6a8885a308d3ull;



static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Instruction starts found by a linear sweep of the program's text. */
static uint64_t pool[8192];
static size_t npool;

static void make_pool(struct hwt_image *img)
{
	npool = self_image_insn_sample(img, &self_img, &rng, pool,
				       sizeof(pool) / sizeof(pool[0]));
}

/* A walk of n instructions: straight runs of 1..12 instructions joined by
 * jumps, now and then an address without code, an instruction repeated
 * (like rep movs under single-step) or a signal-like async transfer. */
static void make_walk(struct hwt_image *img, size_t n, uint64_t *addrs,
		      bool *async)
{
	uint64_t cur = pool[0];
	size_t run = 0;

	memset(async, 0, n * sizeof(*async));
	for (size_t i = 0; i < n; i++) {
		struct hwt_insn in;
		uint64_t r = xorshift64(&rng);

		addrs[i] = cur;
		if (i + 1 == n)
			break;
		if (r % 1000 == 0) {
			cur = 0x1000 + (r >> 20) % 64;
		} else if (r % 2003 == 1) {
			/* same address again */
		} else if (run == 0 || hwt_image_insn(img, cur, false, &in) ||
			   !in.len) {
			cur = pool[(r >> 8) % npool];
			run = 1 + (r >> 40) % 12;
			async[i + 1] = (r >> 32) % 300 == 0;
		} else {
			/* An async transfer that happens to land on the
			 * next instruction must still start a block. */
			cur += in.len;
			run--;
			async[i + 1] = (r >> 32) % 5000 == 1;
		}
	}
}

struct trace {
	uint8_t *buf;
	size_t size, cap;
	size_t *chunk_off;       /* offset of each chunk's header */
	size_t nchunks;
	size_t *rec_off;         /* offset of the record leading to insn i */
};

static void put(struct trace *t, const void *p, size_t n)
{
	if (t->size + n > t->cap) {
		t->cap = (t->size + n) * 2;
		t->buf = realloc(t->buf, t->cap);
	}
	memcpy(t->buf + t->size, p, n);
	t->size += n;
}

/* Chunks of per_chunk instructions; the first says seq0 came before. */
static void encode(struct trace *t, const uint64_t *addrs, const bool *async,
		   size_t n, size_t per_chunk, uint64_t seq0)
{
	t->chunk_off = realloc(t->chunk_off, (t->nchunks + n / per_chunk + 2) *
			       sizeof(size_t));
	t->rec_off = realloc(t->rec_off, n * sizeof(size_t));
	for (size_t s = 0; s < n; s += per_chunk) {
		size_t e = s + per_chunk < n ? s + per_chunk : n, hdr_at;
		struct hwt_sw_chunk_hdr h = {
			.first_pc = addrs[s], .first_seq = seq0 + s,
			.last_pc = addrs[e - 1], .insn_count = (uint32_t)(e - s),
		};
		uint8_t hb[HWT_SW_CHUNK_HDR_SIZE] = { 0 };

		hdr_at = t->size;
		t->chunk_off[t->nchunks++] = hdr_at;
		put(t, hb, sizeof(hb));
		t->rec_off[s] = 0;
		for (size_t i = s + 1; i < e; i++) {
			uint8_t rec[HWT_SW_MAX_RECORD + 1];
			size_t len = hwt_sw_encode_step(addrs[i - 1], addrs[i],
							async[i], rec);

			t->rec_off[i] = t->size;
			put(t, rec, len);
		}
		h.payload_size = (uint32_t)(t->size - hdr_at - sizeof(hb));
		hwt_sw_chunk_hdr_pack(&h, t->buf + hdr_at);
	}
}

static void trace_free(struct trace *t)
{
	free(t->buf);
	free(t->chunk_off);
	free(t->rec_off);
	memset(t, 0, sizeof(*t));
}

/* Compare items first..first+n-1 with addrs; returns the first bad index
 * or 0. */
static uint64_t check_items(struct hwt_history *h, struct hwt_image *img,
			    uint64_t first, const uint64_t *addrs,
			    const bool *async, size_t n, bool backward)
{
	for (size_t k = 0; k < n; k++) {
		size_t j = backward ? n - 1 - k : k;
		struct hwt_item it;
		struct hwt_insn in;
		int rc = hwt_history_get(h, first + j, &it, NULL);
		int irc = hwt_image_insn(img, addrs[j], false, &in);

		if (rc || it.kind != HWT_ITEM_INSN || it.addr != addrs[j] ||
		    it.index != first + j ||
		    !!(it.flags & HWT_ITEM_ASYNC) != (async && async[j]) ||
		    it.len != (irc ? 0 : in.len) ||
		    (!irc && it.cls != in.cls))
			return first + j;
	}
	return 0;
}

static void test_addresses(struct hwt_image *img)
{
	enum { N = 200000 };
	static uint64_t addrs[N];
	static bool async[N];
	struct trace t = { 0 };
	struct hwt_history *h;
	struct hwt_err err = { 0 };
	uint64_t bad;
	bool ok = true;
	int rc;

	make_walk(img, N, addrs, async);
	encode(&t, addrs, async, N, 10000, 0);
	rc = hwt_history_open_sw(t.buf, t.size, 0, img, &h, &err);
	CHECK("history opens", rc == 0, "rc %d: %s", rc, err.msg);
	if (rc)
		return;
	CHECK("history count", hwt_history_count(h) == N, "count %llu",
	      (unsigned long long)hwt_history_count(h));
	bad = check_items(h, img, 1, addrs, async, N, false);
	CHECK("history forward", !bad, "item %llu differs",
	      (unsigned long long)bad);
	bad = check_items(h, img, 1, addrs, async, N, true);
	CHECK("history backward", !bad, "item %llu differs",
	      (unsigned long long)bad);
	for (int k = 0; k < 20000 && ok; k++) {
		uint64_t i = xorshift64(&rng) % N;

		ok = !check_items(h, img, i + 1, addrs + i, async + i, 1, false);
	}
	CHECK("history random access", ok, "a random item differs");
	rc = hwt_history_get(h, 0, &(struct hwt_item){ 0 }, &err);
	CHECK("history item 0", rc == -ERANGE && strstr(err.msg, "outside"),
	      "rc %d: %s", rc, err.msg);
	rc = hwt_history_get(h, N + 1, &(struct hwt_item){ 0 }, &err);
	CHECK("history item past end", rc == -ERANGE, "rc %d", rc);
	hwt_history_free(h);
	trace_free(&t);
}

/* Showing the newest instructions decodes only the newest segment. */
static void test_lazy(struct hwt_image *img)
{
	enum { N = 1000000 };
	static uint64_t addrs[N];
	static bool async[N];
	struct trace t = { 0 };
	struct hwt_history *h;
	struct hwt_err err = { 0 };
	uint64_t bad, n;

	make_walk(img, N, addrs, async);
	encode(&t, addrs, async, N, 60000, 0);
	hwt_history_open_sw(t.buf, t.size, 0, img, &h, &err);
	n = hwt_history_count(h);
	CHECK("lazy: open decodes nothing", hwt_history_decodes(h) == 0,
	      "%llu decodes", (unsigned long long)hwt_history_decodes(h));
	bad = check_items(h, img, n - 99, addrs + N - 100, async + N - 100,
			  100, true);
	CHECK("lazy: last 100 items right", !bad, "item %llu",
	      (unsigned long long)bad);
	CHECK("lazy: last 100 decode one segment", hwt_history_decodes(h) == 1,
	      "%llu decodes", (unsigned long long)hwt_history_decodes(h));
	check_items(h, img, 1, addrs, async, 1, false);
	CHECK("lazy: first item decodes one more", hwt_history_decodes(h) == 2,
	      "%llu decodes", (unsigned long long)hwt_history_decodes(h));
	hwt_history_free(h);
	trace_free(&t);
}

/* Speed and memory over a 5M-instruction history. */
static void test_big(struct hwt_image *img)
{
	enum { N = 5000000 };
	uint64_t *addrs = malloc(N * sizeof(*addrs));
	bool *async = calloc(N, sizeof(*async));
	struct trace t = { 0 };
	struct hwt_history *h;
	struct hwt_err err = { 0 };
	struct hwt_item it;
	double t0, t1, t2, t3;
	uint64_t sum = 0;
	size_t mem;
	int rc = 0;

	make_walk(img, N, addrs, async);
	encode(&t, addrs, async, N, 65536, 0);
	t0 = now();
	hwt_history_open_sw(t.buf, t.size, 0, img, &h, &err);
	t1 = now();
	for (uint64_t i = 1; i <= N && !rc; i++) {
		rc = hwt_history_get(h, i, &it, &err);
		sum += it.addr;
	}
	t2 = now();
	for (uint64_t i = N; i >= 1 && !rc; i--) {
		rc = hwt_history_get(h, i, &it, &err);
		sum -= it.addr;
	}
	t3 = now();
	mem = hwt_history_memory(h) + t.size;
	CHECK("big: every item", rc == 0 && sum == 0, "rc %d: %s", rc, err.msg);
	printf("INFO big: %d insns, trace %.2f B/insn, open %.1f ms, forward "
	       "%.1f M insn/s, backward %.1f M insn/s, %llu decodes\n", N,
	       (double)t.size / N, (t1 - t0) * 1e3, N / (t2 - t1) / 1e6,
	       N / (t3 - t2) / 1e6,
	       (unsigned long long)hwt_history_decodes(h));
	printf("INFO big: history memory %zu bytes + trace = %.2f B/insn\n",
	       hwt_history_memory(h), (double)mem / N);
	CHECK("big: at most 2 bytes per instruction", mem <= 2ull * N,
	      "%.2f B/insn", (double)mem / N);
	hwt_history_free(h);
	trace_free(&t);
	free(addrs);
	free(async);
}

static bool item_is_gap(struct hwt_history *h, uint64_t i, const char *has,
			const char *has2)
{
	struct hwt_item it;

	return !hwt_history_get(h, i, &it, NULL) && it.kind == HWT_ITEM_GAP &&
		it.gap_reason && strstr(it.gap_reason, has) &&
		(!has2 || strstr(it.gap_reason, has2));
}

static const char *reason_of(struct hwt_history *h, uint64_t i)
{
	struct hwt_item it;

	if (hwt_history_get(h, i, &it, NULL))
		return "(error)";
	return it.kind == HWT_ITEM_GAP ? it.gap_reason : "(instruction)";
}

static void test_gaps(struct hwt_image *img)
{
	enum { N = 5000, C = 1000 };
	static uint64_t addrs[N];
	static bool async[N];
	struct trace t = { 0 };
	struct hwt_history *h;
	struct hwt_sw_chunk_hdr hd;
	char want[128];
	uint8_t *copy;
	size_t at;

	make_walk(img, N, addrs, async);

	/* The ring dropped 1000 instructions before the first chunk. */
	encode(&t, addrs, async, N, C, 1000);
	hwt_history_open_sw(t.buf, t.size, 0, img, &h, NULL);
	CHECK("gap: lost before first chunk", hwt_history_count(h) == N + 1 &&
	      item_is_gap(h, 1, "1000 instructions lost (trace buffer wrapped)",
			  NULL) && !check_items(h, img, 2, addrs, async, N, false),
	      "count %llu, item 1: %s", (unsigned long long)hwt_history_count(h),
	      reason_of(h, 1));
	hwt_history_free(h);
	trace_free(&t);

	/* ... or only the bundle says so. */
	encode(&t, addrs, async, N, C, 0);
	hwt_history_open_sw(t.buf, t.size, 77, img, &h, NULL);
	CHECK("gap: lost_insns", item_is_gap(h, 1, "77 instructions lost", NULL),
	      "item 1: %s", reason_of(h, 1));
	hwt_history_free(h);

	/* Chunks 1-2 then a chunk whose first_seq skips 500. */
	trace_free(&t);
	encode(&t, addrs, async, 2 * C, C, 0);
	encode(&t, addrs + 2 * C, async + 2 * C, N - 2 * C, C, 2 * C + 500);
	hwt_history_open_sw(t.buf, t.size, 0, img, &h, NULL);
	CHECK("gap: buffer wrapped between chunks", hwt_history_count(h) ==
	      N + 1 && item_is_gap(h, 2 * C + 1, "500 instructions lost", NULL) &&
	      !check_items(h, img, 2 * C + 2, addrs + 2 * C, async + 2 * C,
			   N - 2 * C, false),
	      "item %d: %s", 2 * C + 1, reason_of(h, 2 * C + 1));
	hwt_history_free(h);
	trace_free(&t);

	/* A damaged header: its chunk is skipped up to the next "HWTC". */
	encode(&t, addrs, async, N, C, 0);
	copy = malloc(t.size);
	memcpy(copy, t.buf, t.size);
	copy[t.chunk_off[2] + 1] ^= 0xff;
	hwt_history_open_sw(copy, t.size, 0, img, &h, NULL);
	snprintf(want, sizeof(want), "corrupt trace at offset %zu: %zu bytes "
		 "skipped (bad chunk magic)", t.chunk_off[2],
		 t.chunk_off[3] - t.chunk_off[2]);
	CHECK("gap: bad header skipped", hwt_history_count(h) == N - C + 1 &&
	      item_is_gap(h, 2 * C + 1, want, "1000 instructions lost") &&
	      !check_items(h, img, 1, addrs, async, 2 * C, false) &&
	      !check_items(h, img, 2 * C + 2, addrs + 3 * C, async + 3 * C,
			   N - 3 * C, false),
	      "count %llu, item %d: %s", (unsigned long long)hwt_history_count(h),
	      2 * C + 1, reason_of(h, 2 * C + 1));
	hwt_history_free(h);

	/* A bad record tag keeps the instructions before it. */
	memcpy(copy, t.buf, t.size);
	at = t.rec_off[C + 300];
	copy[at] = 0x7f;
	hwt_history_open_sw(copy, t.size, 0, img, &h, NULL);
	snprintf(want, sizeof(want), "corrupt trace in chunk 2 at offset %zu: "
		 "bad record tag 0x7f", at);
	CHECK("gap: bad record tag", hwt_history_count(h) == N - C + 300 + 1 &&
	      !check_items(h, img, 1, addrs, async, C + 300, false) &&
	      item_is_gap(h, C + 301, want, NULL) &&
	      !check_items(h, img, C + 302, addrs + 2 * C, async + 2 * C,
			   N - 2 * C, false),
	      "count %llu, item %d: %s", (unsigned long long)hwt_history_count(h),
	      C + 301, reason_of(h, C + 301));
	hwt_history_free(h);

	/* Records that disagree with their header lose the whole chunk. */
	memcpy(copy, t.buf, t.size);
	hwt_sw_chunk_hdr_unpack(copy + t.chunk_off[1], t.size - t.chunk_off[1],
				&hd, NULL);
	hd.last_pc ^= 1;
	hwt_sw_chunk_hdr_pack(&hd, copy + t.chunk_off[1]);
	hwt_history_open_sw(copy, t.size, 0, img, &h, NULL);
	CHECK("gap: header disagrees with records", hwt_history_count(h) ==
	      N - C + 1 && item_is_gap(h, C + 1, "corrupt trace in chunk 2",
				       "header says 1000 instructions") &&
	      !check_items(h, img, C + 2, addrs + 2 * C, async + 2 * C,
			   N - 2 * C, false),
	      "item %d: %s", C + 1, reason_of(h, C + 1));
	hwt_history_free(h);

	/* A trace cut in its last chunk. */
	hwt_history_open_sw(t.buf, t.size - 7, 0, img, &h, NULL);
	CHECK("gap: truncated trace", hwt_history_count(h) == N - C + 1 &&
	      item_is_gap(h, N - C + 1, "bytes skipped", "runs past the end"),
	      "count %llu, last: %s", (unsigned long long)hwt_history_count(h),
	      reason_of(h, hwt_history_count(h)));
	hwt_history_free(h);
	free(copy);
	trace_free(&t);
}

/* hwt_history_runs gives the items hwt_history_get gives, run by run. */
struct runs_check {
	struct hwt_history *h;
	uint64_t next_index;     /* item the next run starts at */
	char why[160];
};

static int check_run(void *arg, const struct hwt_run *r)
{
	struct runs_check *c = arg;
	struct hwt_item it = { 0 };

	if (r->index != c->next_index) {
		snprintf(c->why, sizeof(c->why), "run at item %llu, expected "
			 "%llu", (unsigned long long)r->index,
			 (unsigned long long)c->next_index);
		return 1;
	}
	for (uint32_t k = 0; k < r->count; k++) {
		uint64_t i = c->next_index + k;

		if (hwt_history_get(c->h, i, &it, NULL) ||
		    (it.kind == HWT_ITEM_GAP) != r->gap ||
		    (!r->gap && k == 0 && it.addr != r->begin) ||
		    (!r->gap && k + 1 == r->count &&
		     (it.addr != r->end || r->next != (it.len ?
							it.addr + it.len : 0)))) {
			snprintf(c->why, sizeof(c->why), "item %llu disagrees "
				 "with run 0x%llx..0x%llx",
				 (unsigned long long)i,
				 (unsigned long long)r->begin,
				 (unsigned long long)r->end);
			return 1;
		}
	}
	c->next_index += r->count;
	return 0;
}

/* The first run given, then stop (1). */
struct first_run {
	uint64_t index;
	uint32_t count;
	bool gap;
};

static int first_run(void *arg, const struct hwt_run *r)
{
	struct first_run *f = arg;

	*f = (struct first_run){ r->index, r->count, r->gap };
	return 1;
}

static void test_runs(struct hwt_image *img)
{
	enum { N = 5000, C = 1000 };
	static uint64_t addrs[N];
	static bool async[N];
	struct trace t = { 0 };
	struct hwt_history *h;
	struct runs_check c = { .next_index = 1 };
	int rc;

	make_walk(img, N, addrs, async);
	/* A gap between chunks, so gap runs are covered too. */
	encode(&t, addrs, async, 2 * C, C, 0);
	encode(&t, addrs + 2 * C, async + 2 * C, N - 2 * C, C, 2 * C + 500);
	hwt_history_open_sw(t.buf, t.size, 0, img, &h, NULL);
	c.h = h;
	rc = hwt_history_runs(h, 1, check_run, &c, NULL);
	CHECK("runs: the items of hwt_history_get, gap included",
	      rc == 0 && c.next_index == hwt_history_count(h) + 1,
	      "rc %d, %llu of %llu items: %s", rc,
	      (unsigned long long)c.next_index - 1,
	      (unsigned long long)hwt_history_count(h), c.why);
	/* From an item deep in the history: the runs from the segment that
	 * holds it on, the first one holding it, the same items. */
	for (uint64_t from = 2; from <= hwt_history_count(h);
	     from += hwt_history_count(h) / 7) {
		struct runs_check tail = { .h = h };
		struct first_run fr = { 0 };

		rc = hwt_history_runs(h, from, first_run, &fr, NULL);
		tail.next_index = fr.index;
		if (rc == 1)
			rc = hwt_history_runs(h, from, check_run, &tail, NULL);
		CHECK("runs: from an item on, the same runs, the first one "
		      "holding it and the history's end reached",
		      rc == 0 && fr.index <= from &&
		      from < fr.index + (fr.gap ? 1 : fr.count) &&
		      tail.next_index == hwt_history_count(h) + 1,
		      "from %llu: rc %d, first run at %llu of %u: %s",
		      (unsigned long long)from, rc,
		      (unsigned long long)fr.index, fr.count, tail.why);
	}
	hwt_history_free(h);
	/* The newest runs of a long history cost what they alone cost:
	 * GDB gets a long history's newest part that way. */
	hwt_history_open_sw(t.buf, t.size, 0, img, &h, NULL);
	{
		struct first_run fr = { 0 };

		rc = hwt_history_runs(h, hwt_history_count(h), first_run, &fr,
				      NULL);
		CHECK("runs: from the last item, only the last segment is "
		      "decoded", rc == 1 && hwt_history_decodes(h) == 1,
		      "rc %d, %llu decodes", rc,
		      (unsigned long long)hwt_history_decodes(h));
	}
	{
		struct first_run fr = { 0 };

		CHECK("runs: from past the end, none",
		      hwt_history_runs(h, hwt_history_count(h) + 1, first_run,
				       &fr, NULL) == 0 && fr.index == 0,
		      "a run at %llu", (unsigned long long)fr.index);
	}
	hwt_history_free(h);
	trace_free(&t);
}

/* Random damage never crashes and every item stays readable. */
static void test_fuzz(struct hwt_image *img)
{
	enum { N = 2000 };
	static uint64_t addrs[N];
	static bool async[N];
	struct trace t = { 0 };
	uint8_t *copy;
	int bad = -1;

	make_walk(img, N, addrs, async);
	encode(&t, addrs, async, N, 400, 0);
	copy = malloc(t.size);
	for (int round = 0; round < 300 && bad < 0; round++) {
		struct hwt_history *h;
		struct hwt_err err = { 0 };
		int flips = 1 + (int)(xorshift64(&rng) % 20), rc;

		memcpy(copy, t.buf, t.size);
		for (int k = 0; k < flips; k++)
			copy[xorshift64(&rng) % t.size] ^= (uint8_t)(1 + xorshift64(&rng) % 255);
		rc = hwt_history_open_sw(copy, t.size - xorshift64(&rng) % 3, 0, img,
					 &h, &err);
		for (uint64_t i = hwt_history_count(h); i >= 1 && !rc; i--) {
			struct hwt_item it;

			rc = hwt_history_get(h, i, &it, &err);
			if (!rc && it.kind == HWT_ITEM_GAP && !it.gap_reason)
				rc = -1;
		}
		if (rc)
			bad = round;
		hwt_history_free(h);
	}
	CHECK("fuzz: damaged traces stay readable", bad < 0, "round %d", bad);
	free(copy);
	trace_free(&t);
}

static void test_bundle(struct hwt_image *img)
{
	enum { N = 3000 };
	static uint64_t addrs[N];
	static bool async[N];
	char dir[] = "/tmp/hwt-test-history-XXXXXX", final[600], *staging;
	struct hwt_bundle_thread th = { .tid = 4242, .trace_file = "t.hwtsw" };
	struct hwt_bundle_module mod = { .system_path = "/proc/self/exe",
					 .load_address = self_img.load };
	struct hwt_bundle b = { .type = HWT_BUNDLE_TYPE_SW, .pid = 4242,
				.threads = &th, .nthreads = 1, .modules = &mod,
				.nmodules = 1, .cpu = { .vendor = "AuthenticAMD" } };
	struct hwt_bundle *rb = NULL;
	struct hwt_history *h = NULL;
	struct hwt_image *bimg;
	struct hwt_err err = { 0 };
	struct trace t = { 0 };
	char cmd[700];
	int rc;

	make_walk(img, N, addrs, async);
	encode(&t, addrs, async, N, 1000, 0);
	th.trace_size = t.size;
	th.insn_total = N;
	if (!mkdtemp(dir))
		return;
	snprintf(final, sizeof(final), "%s/bundle", dir);
	rc = hwt_bundle_stage_begin(final, &staging, &err);
	if (!rc)
		rc = hwt_bundle_stage_write(staging, th.trace_file, t.buf, t.size,
					    &err);
	if (!rc) {
		rc = hwt_bundle_stage_commit(staging, final, &b, &err);
		free(staging);
	}
	if (!rc)
		rc = hwt_bundle_read(final, &rb, &err);
	CHECK("bundle: written and read", rc == 0, "rc %d: %s", rc, err.msg);
	if (rc)
		goto out;
	hwt_image_new(&bimg, &err);
	rc = hwt_image_add_bundle(bimg, rb, &err);
	if (!rc)
		rc = hwt_history_open(rb, 0, bimg, &h, &err);
	CHECK("bundle: history", rc == 0 && hwt_history_count(h) == N &&
	      !check_items(h, bimg, 1, addrs, async, N, false),
	      "rc %d: %s", rc, err.msg);
	CHECK("bundle: history owns the trace",
	      h && hwt_history_memory(h) >= t.size, "memory %zu",
	      h ? hwt_history_memory(h) : 0);
	hwt_history_free(h);
	rc = hwt_history_open(rb, 1, bimg, &h, &err);
	CHECK("bundle: no such thread", rc == -EINVAL &&
	      strstr(err.msg, "1 thread"), "rc %d: %s", rc, err.msg);
	free(rb->type);
	rb->type = strdup("no-such-format");
	rc = hwt_history_open(rb, 0, bimg, &h, &err);
	CHECK("bundle: unknown format", rc == -ENOTSUP &&
	      strstr(err.msg, "no-such-format") && strstr(err.msg, "hwtrace-sw"),
	      "rc %d: %s", rc, err.msg);
	hwt_image_free(bimg);
	hwt_bundle_free(rb);
out:
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("warning: could not remove %s\n", dir);
	trace_free(&t);
}

int main(void)
{
	struct hwt_image *img;
	struct hwt_err err = { 0 };

	self_img = self_image_find();
	hwt_image_new(&img, &err);
	if (hwt_image_add_elf(img, "/proc/self/exe", self_img.load, &err)) {
		printf("FAIL setup: %s\n", err.msg);
		return 1;
	}
	make_pool(img);
	RUN(test_addresses, img);
	RUN(test_lazy, img);
	RUN(test_gaps, img);
	RUN(test_runs, img);
	RUN(test_fuzz, img);
	RUN(test_bundle, img);
	RUN(test_big, img);
	hwt_image_free(img);
	return check_exit();
}
