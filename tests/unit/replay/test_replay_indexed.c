// SPDX-License-Identifier: BSD-2-Clause
/* test_replay_indexed.c - histories of bundles whose hwt-sw trace has an
 * index (common/sw_index.c, replay/sw_chunks.c): the same items as
 * scanning the trace, decoded lazily, and an index that is missing, stale
 * or damaged is not used (the history says why and reads the trace
 * whole), a damaged chunk is an error naming it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay-int.h"
#include "check.h"
#include "sw_chunks_gen.h"

static char dir[] = "/tmp/hwt-test-indexed-XXXXXX";

/* A bundle at dir/name of trace t, compressed; with its index unless
 * idx_from (another trace whose index it gets instead) says otherwise:
 * NULL its own, or no index at all when no_index. */
static struct hwt_bundle *write_bundle(const char *name, const struct gen_trace *t,
				       const struct gen_trace *idx_from,
				       bool no_index)
{
	struct hwt_bundle_thread th = { .tid = 7, .trace_file = "t.zst",
					.encoding = HWT_TRACE_ZSTD,
					.decoded_size = t->n };
	struct hwt_bundle b = { .type = HWT_BUNDLE_TYPE_SW, .pid = 7,
				.threads = &th, .nthreads = 1,
				.cpu = { .vendor = "GenuineIntel" } };
	uint8_t *zst, *idx, *zst2, *idx2;
	size_t zst_n, idx_n, zst2_n, idx2_n;
	struct hwt_bundle *rb = NULL;
	struct hwt_err err = { 0 };
	char final[600], *staging;

	hwt_sw_trace_pack(t->v, t->n, &zst, &zst_n, &idx, &idx_n, &err);
	if (idx_from) {
		hwt_sw_trace_pack(idx_from->v, idx_from->n, &zst2, &zst2_n,
				  &idx2, &idx2_n, &err);
		free(idx);
		free(zst2);
		idx = idx2;
		idx_n = idx2_n;
	}
	th.trace_size = zst_n;
	if (idx && !no_index) {
		th.index_file = "t.idx";
		th.index_size = idx_n;
	}
	snprintf(final, sizeof(final), "%s/%s", dir, name);
	if (hwt_bundle_stage_begin(final, &staging, &err) ||
	    hwt_bundle_stage_write(staging, th.trace_file, zst, zst_n, &err) ||
	    (th.index_file && hwt_bundle_stage_write(staging, th.index_file,
						     idx, idx_n, &err)) ||
	    hwt_bundle_stage_commit(staging, final, &b, &err) ||
	    hwt_bundle_read(final, &rb, &err))
		printf("FAIL setup: %s\n", err.msg);
	free(staging);
	free(zst);
	free(idx);
	return rb;
}

/* Every item of a and b the same; returns the first that differs or 0. */
static uint64_t first_difference(struct hwt_history *a, struct hwt_history *b)
{
	uint64_t n = hwt_history_count(a);

	if (n != hwt_history_count(b))
		return UINT64_MAX;
	for (uint64_t i = n; i >= 1; i--) {
		struct hwt_item x, y;

		if (hwt_history_get(a, i, &x, NULL) ||
		    hwt_history_get(b, i, &y, NULL) || x.kind != y.kind ||
		    x.addr != y.addr || x.flags != y.flags ||
		    (x.kind == HWT_ITEM_GAP &&
		     strcmp(x.gap_reason, y.gap_reason)))
			return i;
	}
	return 0;
}

static void test_same_items(struct hwt_image *img)
{
	struct gen_trace t = { 0 };
	struct hwt_bundle *with, *without;
	struct hwt_history *a = NULL, *b = NULL;
	struct hwt_err err = { 0 };
	struct hwt_item it;
	uint64_t diff;
	int rc;

	gen_chunk(&t, 50000, 1234);
	gen_chunk(&t, 4096, 0);
	gen_chunk(&t, 4097, 0);
	gen_chunk(&t, 1, 5);
	gen_chunk(&t, 200000, 0);
	gen_chunk(&t, 77777, 99);
	/* past the first frame's 4 MiB */
	for (int i = 0; i < 5; i++)
		gen_chunk(&t, 600000, 0);
	with = write_bundle("with", &t, NULL, false);
	without = write_bundle("without", &t, NULL, true);
	rc = hwt_history_open(with, 0, img, &a, &err);
	CHECK("indexed: opens without reading the trace", rc == 0 &&
	      hwt_history_decodes(a) == 0 && !hwt_history_index_note(a),
	      "rc %d (%s)", rc, err.msg);
	if (rc)
		goto out;
	rc = hwt_history_get(a, hwt_history_count(a), &it, &err);
	CHECK("indexed: the newest item decodes one segment", rc == 0 &&
	      hwt_history_decodes(a) == 1 &&
	      hwt_history_memory(a) < (8u << 20), "rc %d, %llu decodes, %zu "
	      "bytes", rc, (unsigned long long)hwt_history_decodes(a),
	      hwt_history_memory(a));
	rc = hwt_history_open(without, 0, img, &b, &err);
	diff = rc ? 1 : first_difference(a, b);
	CHECK("indexed: the same items, gaps and reasons as scanning",
	      rc == 0 && diff == 0, "rc %d, item %llu differs", rc,
	      (unsigned long long)diff);
	CHECK("indexed: instructions and the ring's gaps counted",
	      hwt_history_count(a) == 50000 + 4096 + 4097 + 1 + 200000 +
	      77777 + 5 * 600000 + 3, "%llu items",
	      (unsigned long long)hwt_history_count(a));
out:
	hwt_history_free(a);
	hwt_history_free(b);
	hwt_bundle_free(with);
	hwt_bundle_free(without);
	free(t.v);
}

/* A bundle saved elsewhere (hwt_bundle_copy: LLDB's and GDB's save of
 * a loaded bundle) keeps the trace compressed with its index. */
static void test_copy(struct hwt_image *img)
{
	struct gen_trace t = { 0 };
	struct hwt_bundle *orig, *copy = NULL;
	struct hwt_history *a = NULL, *b = NULL;
	struct hwt_err err = { 0 };
	char path[700];
	int rc;

	gen_chunk(&t, 70000, 0);
	gen_chunk(&t, 9000, 3);
	orig = write_bundle("orig", &t, NULL, false);
	snprintf(path, sizeof(path), "%s/copy", dir);
	rc = hwt_bundle_copy(orig, path, &err);
	if (!rc)
		rc = hwt_bundle_read(path, &copy, &err);
	if (!rc)
		rc = hwt_history_open(copy, 0, img, &a, &err);
	if (!rc)
		rc = hwt_history_open(orig, 0, img, &b, &err);
	CHECK("indexed: a copy keeps the trace compressed and indexed, the "
	      "same items", rc == 0 && copy->threads[0].index_file &&
	      copy->threads[0].encoding == HWT_TRACE_ZSTD &&
	      !hwt_history_index_note(a) && hwt_history_decodes(a) == 0 &&
	      first_difference(a, b) == 0, "rc %d (%s)", rc, err.msg);
	hwt_history_free(a);
	hwt_history_free(b);
	hwt_bundle_free(orig);
	hwt_bundle_free(copy);
	free(t.v);
}

/* An index that cannot be used: the history says why and reads the
 * trace whole; the items are the trace's. */
static void test_not_used(struct hwt_image *img)
{
	struct gen_trace t = { 0 }, other = { .rng = 12345 };
	struct hwt_bundle *stale, *plain;
	struct hwt_history *a = NULL, *b = NULL;
	struct hwt_err err = { 0 };
	char path[700];
	int rc;

	gen_chunk(&t, 30000, 0);
	gen_chunk(&t, 30000, 0);
	gen_chunk(&other, 30000, 0);
	gen_chunk(&other, 30000, 0);
	stale = write_bundle("stale", &t, &other, false);
	plain = write_bundle("plain", &t, NULL, true);
	rc = hwt_history_open(stale, 0, img, &a, &err);
	if (!rc)
		rc = hwt_history_open(plain, 0, img, &b, &err);
	CHECK("indexed: a stale index is not used, and said so",
	      rc == 0 && hwt_history_index_note(a) &&
	      strstr(hwt_history_index_note(a), "stale") &&
	      first_difference(a, b) == 0, "rc %d (%s), note %s", rc,
	      err.msg, a && hwt_history_index_note(a) ?
	      hwt_history_index_note(a) : "(none)");
	hwt_history_free(a);
	a = NULL;
	snprintf(path, sizeof(path), "%s/stale/t.idx", dir);
	unlink(path);
	rc = hwt_history_open(stale, 0, img, &a, &err);
	CHECK("indexed: a missing index file is not used, and said so",
	      rc == 0 && hwt_history_index_note(a) &&
	      strstr(hwt_history_index_note(a), "t.idx") &&
	      first_difference(a, b) == 0, "rc %d (%s)", rc, err.msg);
	hwt_history_free(a);
	hwt_history_free(b);
	hwt_bundle_free(stale);
	hwt_bundle_free(plain);
	free(t.v);
	free(other.v);
}

/* Damage inside a frame that its header does not show: the frame is an
 * error naming it when it is decoded, the others read. */
static void test_damaged_chunk(struct hwt_image *img)
{
	struct gen_trace t = { 0 };
	struct hwt_bundle *bb;
	struct hwt_history *h = NULL;
	struct hwt_err err = { 0 };
	struct hwt_item it;
	char path[700];
	FILE *f;
	int rc, rc_old;

	for (int i = 0; i < 6; i++)
		gen_chunk(&t, 600000, 0);
	bb = write_bundle("damaged", &t, NULL, false);
	/* A byte inside the first of the two frames. */
	snprintf(path, sizeof(path), "%s/damaged/t.zst", dir);
	f = fopen(path, "r+b");
	if (f) {
		uint8_t byte;
		long at = (long)bb->threads[0].trace_size / 4;

		fseek(f, at, SEEK_SET);
		if (fread(&byte, 1, 1, f) == 1) {
			byte ^= 0x5a;
			fseek(f, at, SEEK_SET);
			fwrite(&byte, 1, 1, f);
		}
		fclose(f);
	}
	rc = hwt_history_open(bb, 0, img, &h, &err);
	CHECK("indexed: damage inside a frame does not stop the open",
	      rc == 0, "rc %d (%s)", rc, err.msg);
	if (rc)
		goto out;
	rc = hwt_history_get(h, hwt_history_count(h), &it, &err);
	rc_old = hwt_history_get(h, 1, &it, &err);
	CHECK("indexed: the damaged frame is an error naming it, the other "
	      "reads", rc == 0 && rc_old == -EIO && strstr(err.msg,
							   "frame 0"),
	      "rc %d/%d (%s)", rc, rc_old, err.msg);
out:
	hwt_history_free(h);
	hwt_bundle_free(bb);
	free(t.v);
}

int main(void)
{
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	char cmd[600];

	if (!mkdtemp(dir) || hwt_image_new(&img, &err))
		return 2;
	RUN(test_same_items, img);
	RUN(test_not_used, img);
	RUN(test_copy, img);
	RUN(test_damaged_chunk, img);
	hwt_image_free(img);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("warning: could not remove %s\n", dir);
	return check_exit();
}
