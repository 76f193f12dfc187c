// SPDX-License-Identifier: BSD-2-Clause
/* test_spill.c - a ring with a spill (hwtrace record --whole): what the
 * ring drops goes to disk instead of being lost; past the spill's bound
 * the oldest is forgotten, the newest kept, the disk space given back,
 * and the counts say exactly what was lost; the staged trace and its
 * index read back as the history's newest instructions, in order. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "hwt-common.h"
#include "ring.h"
#include "spill.h"
#include "util.h"

static char dir[] = "/tmp/hwt-test-spill-XXXXXX";

/* n instructions at random addresses (records of 7 to 9 bytes that do
 * not compress) or, when dense, mostly short steps. */
static uint64_t *make_pcs(size_t n, bool dense)
{
	uint64_t *pcs = malloc(n * sizeof(*pcs)), x = 0x2545f4914f6cdd1dull;

	pcs[0] = 0x400000;
	for (size_t i = 1; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		pcs[i] = dense && x % 8 ? pcs[i - 1] + 1 + x % 15 :
			0x100000000ull + (x >> 16);
	}
	return pcs;
}

struct result {
	uint64_t kept, lost_insns, first_seq;
	bool in_order;           /* kept = the newest pcs, in order */
	uint64_t disk;           /* spill file blocks before staging */
	int rc;
	char msg[512];
};

static struct result record(const uint64_t *pcs, size_t n, uint64_t ring,
			    uint64_t bound, const char *name)
{
	struct hwt_bundle_thread bt = { .tid = 1 };
	struct result res = { .in_order = true };
	struct hwt_sw_index *ix = NULL;
	struct hwt_err err = { 0 };
	struct hwt_sw_ring r;
	struct stat st;
	char path[600], *staging = NULL, final[600];
	uint8_t *zst = NULL, *trace = NULL, *idx = NULL;
	size_t zst_n, idx_n, off = 0, at;

	snprintf(final, sizeof(final), "%s/%s", dir, name);
	if (hwt_sw_ring_init(&r, ring, hwt_sw_ring_chunk_payload_for(ring),
			     &err) ||
	    hwt_sw_spill_new(dir, 1, 0, bound, NULL, &r.spill, &err))
		goto fail;
	hwt_sw_ring_start(&r, pcs[0]);
	for (size_t i = 1; i < n; i++)
		hwt_sw_ring_step(&r, pcs[i], false);
	snprintf(path, sizeof(path), "%s/whole-1.zst", dir);
	if (stat(path, &st) == 0)
		res.disk = (uint64_t)st.st_blocks * 512;
	bt.trace_file = "t.zst";
	if (hwt_sw_ring_seal(&r, &err) ||
	    hwt_bundle_stage_begin(final, &staging, &err) ||
	    hwt_sw_spill_stage(r.spill, r.sealed, r.sealed_size, staging, &bt,
			       &err))
		goto fail;
	bt.lost_insns += r.lost_insns;
	res.lost_insns = bt.lost_insns;
	snprintf(path, sizeof(path), "%s/t.zst", staging);
	if (hwt_read_file(path, 1u << 30, &zst, &zst_n, &err))
		goto fail;
	snprintf(path, sizeof(path), "%s/%s", staging, bt.index_file);
	if (hwt_read_file(path, 1u << 30, &idx, &idx_n, &err) ||
	    hwt_sw_index_parse(idx, idx_n, zst, zst_n, bt.decoded_size, &ix,
			       &err) ||
	    hwt_trace_decompress(zst, zst_n, bt.decoded_size, &trace, &err))
		goto fail;
	/* Walk the kept chunks: their instructions are the last ones. */
	at = n;
	while (off < bt.decoded_size) {
		struct hwt_sw_chunk_hdr h;
		struct hwt_sw_reader rd;
		bool async;
		uint64_t i;

		if (hwt_sw_chunk_hdr_unpack(trace + off, bt.decoded_size - off,
					    &h, &err))
			goto fail;
		if (at == n) {
			res.first_seq = h.first_seq;
			at = h.first_seq;
		}
		res.in_order = res.in_order && h.first_seq == at &&
			h.first_pc == pcs[at];
		hwt_sw_reader_init(&rd, trace + off + HWT_SW_CHUNK_HDR_SIZE,
				   h.payload_size, h.first_pc);
		for (i = 1; hwt_sw_reader_next(&rd, &async, NULL) > 0; i++)
			res.in_order = res.in_order && at + i < n &&
				rd.pc == pcs[at + i];
		at += i;
		res.kept += i;
		off += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
	}
	res.in_order = res.in_order && at == n;
	goto out;
fail:
	res.rc = -(err.code ? err.code : EIO);
	snprintf(res.msg, sizeof(res.msg), "%s", err.msg);
out:
	hwt_sw_index_free(ix);
	free(zst);
	free(idx);
	free(trace);
	free(bt.index_file);
	free(staging);
	hwt_sw_ring_free(&r);
	return res;
}

static void test_whole(void)
{
	enum { N = 3000000 };
	uint64_t *pcs = make_pcs(N, true);
	struct result r = record(pcs, N, 256 << 10, 4ull << 30, "whole");

	CHECK("whole: every instruction kept, in order, none lost",
	      r.rc == 0 && r.kept == N && r.lost_insns == 0 && r.in_order,
	      "rc %d (%s): %llu kept, %llu lost", r.rc, r.msg,
	      (unsigned long long)r.kept, (unsigned long long)r.lost_insns);
	free(pcs);
}

/* Whether the file system under dir gives back the disk of a punched
 * hole: where it does not, the spill keeps the same history but its file
 * keeps its size until removed. */
static bool can_punch(void)
{
	char path[600];
	static char buf[1 << 20];
	struct stat st;
	bool ok = false;
	int fd;

	snprintf(path, sizeof(path), "%s/punch-probe", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return false;
	memset(buf, 1, sizeof(buf));
	if (write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf) && !fsync(fd) &&
	    !fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
		       sizeof(buf)) && !fstat(fd, &st))
		ok = (uint64_t)st.st_blocks * 512 < sizeof(buf) / 2;
	close(fd);
	unlink(path);
	return ok;
}

static void test_bound(void)
{
	enum { N = 3000000 };
	uint64_t *pcs = make_pcs(N, false), bound = 8u << 20;
	struct result r = record(pcs, N, 256 << 10, bound, "bounded");

	CHECK("bound: the newest kept in order, the oldest lost and counted",
	      r.rc == 0 && r.in_order && r.lost_insns > 0 &&
	      r.kept + r.lost_insns == N && r.first_seq == r.lost_insns,
	      "rc %d (%s): %llu kept, %llu lost, first %llu", r.rc, r.msg,
	      (unsigned long long)r.kept, (unsigned long long)r.lost_insns,
	      (unsigned long long)r.first_seq);
	if (!can_punch())
		printf("SKIP bound: the disk the spill holds: the file system "
		       "under %s does not give back punched holes\n", dir);
	else
		CHECK("bound: the disk the spill holds stays within it (holes "
		      "punched)", r.disk <= bound + (4u << 20), "%llu bytes",
		      (unsigned long long)r.disk);
	free(pcs);
}

int main(void)
{
	char cmd[600];

	if (!mkdtemp(dir))
		return 2;
	RUN(test_whole);
	RUN(test_bound);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("warning: could not remove %s\n", dir);
	return check_exit();
}
