// SPDX-License-Identifier: BSD-2-Clause
/* test_valgrind_stream.c - the valgrind backend's stream reader
 * (collect/valgrind/stream.c) on streams written here item by item, as
 * the tool writes them: superblock runs and exits become the executed
 * instructions in order per thread, rep-prefixed iterations count as a
 * cpu counts them, a fault ends its superblock at the faulting
 * instruction, a signal makes the next instruction an asynchronous entry;
 * pieces of any size read the same; and every malformed stream is a
 * clear error that keeps what came before it. The tests run again with
 * the runs kept in logs and expanded at the end (the reader's defer),
 * which must give the same histories; a log smaller than the history
 * keeps its newest part, with the instructions before it counted lost. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hwt-common.h"
#include "valgrind/keep.h"
#include "valgrind/stream.h"
#include "valgrind/vgstream.h"

struct stream {
	uint8_t *b;               /* own, or a larger buffer (start_in) */
	size_t n;
	uint8_t own[8192];
};

/* The second round: every reader keeps its runs for later. */
static bool defer_runs;

static int reader_init(struct hwt_vg_reader *r, uint64_t capacity,
		       struct hwt_err *err)
{
	int rc = hwt_vg_reader_init(r, capacity, err);

	r->defer = defer_runs;
	return rc;
}

static void u(struct stream *s, uint64_t v)
{
	while (v >= 0x80) {
		s->b[s->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	s->b[s->n++] = (uint8_t)v;
}

static void zz(struct stream *s, int64_t v)
{
	u(s, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void rec(struct stream *s, unsigned kind)
{
	u(s, (uint64_t)kind << 2 | HWT_VG_RECORD);
}

static void start_in(struct stream *s, uint8_t *buf)
{
	s->b = buf;
	memcpy(s->b, HWT_VG_MAGIC, HWT_VG_MAGIC_LEN);
	s->n = HWT_VG_MAGIC_LEN;
}

static void start(struct stream *s)
{
	start_in(s, s->own);
}

/* A copy of from, in to's own buffer. */
static void copy_stream(struct stream *to, const struct stream *from)
{
	to->b = to->own;
	to->n = from->n;
	memcpy(to->b, from->b, from->n);
}

/* A superblock of n instructions at pcs (lengths from the gaps, the last
 * one 1 byte; rep marks instruction i rep-prefixed) and exits leaving
 * after exits_after[k] instructions; flags (HWT_VG_SB_*), entered at
 * entry (0: its first instruction) and, implied, its exits' targets. */
static void sb_told(struct stream *s, uint64_t id, const uint64_t *pc,
		    size_t n, const bool *rep, const uint32_t *after,
		    size_t nexits, unsigned flags, uint64_t entry,
		    const uint64_t *target)
{
	uint64_t end = 0;

	rec(s, HWT_VG_REC_SB);
	u(s, id);
	u(s, n);
	for (size_t i = 0; i < n; i++) {
		uint64_t len = i + 1 < n && pc[i + 1] > pc[i] &&
			       pc[i + 1] - pc[i] <= 15 ? pc[i + 1] - pc[i] : 1;

		if (i == 0)
			u(s, pc[0]);
		else
			zz(s, (int64_t)(pc[i] - end));
		u(s, len << 1 | (rep && rep[i]));
		end = pc[i] + len;
	}
	u(s, nexits);
	for (size_t k = 0; k < nexits; k++)
		u(s, after[k]);
	u(s, flags);
	entry = entry ? entry : pc[0];
	zz(s, (int64_t)(entry - pc[0]));
	for (size_t k = 0; (flags & HWT_VG_SB_IMPLIED) && k < nexits; k++)
		zz(s, (int64_t)(target[k] - entry));
}

/* A superblock whose every exit taken is written. */
static void sb(struct stream *s, uint64_t id, const uint64_t *pc, size_t n,
	       const bool *rep, const uint32_t *after, size_t nexits)
{
	sb_told(s, id, pc, n, rep, after, nexits, 0, 0, NULL);
}

/* An executable mapping of file path: MAP. */
static void map(struct stream *s, uint64_t start, uint64_t len, uint64_t off,
		const char *path)
{
	rec(s, HWT_VG_REC_MAP);
	u(s, start);
	u(s, len);
	u(s, off);
	u(s, HWT_VG_MAP_R | HWT_VG_MAP_X);
	u(s, strlen(path));
	memcpy(s->b + s->n, path, strlen(path));
	s->n += strlen(path);
}

static void thread(struct stream *s, unsigned kind, uint64_t tid)
{
	rec(s, kind);
	u(s, tid);
}

static void run(struct stream *s, uint64_t id)
{
	u(s, id << 2 | HWT_VG_EXEC);
}

static void leave(struct stream *s, uint64_t k)
{
	u(s, k << 2 | HWT_VG_EXIT);
}

/* Every instruction of a thread's sealed ring, async marks in *async;
 * runs kept as they are (defer) expanded by hwt_sw_runs_flatten. */
static size_t history(const struct hwt_vg_thread *t, uint64_t *pcs,
		      bool *async, size_t cap)
{
	uint8_t *p = NULL;
	size_t off = 0, n = 0, size = 0;
	struct hwt_err err = { 0 };

	if (t->ring.sealed_size &&
	    hwt_sw_runs_flatten(t->ring.sealed, t->ring.sealed_size, &p,
				&size, &err) < 0) {
		printf("  (flattening: %s)\n", err.msg);
		return 0;
	}
	while (off < size) {
		struct hwt_sw_chunk_hdr h;
		struct hwt_sw_reader rd;
		bool a = false;
		int rc;

		if (hwt_sw_chunk_hdr_unpack(p + off, size - off, &h,
					    &err) < 0) {
			free(p);
			return 0;
		}
		hwt_sw_reader_init(&rd, p + off + HWT_SW_CHUNK_HDR_SIZE,
				   h.payload_size, h.first_pc);
		do {
			if (n < cap) {
				pcs[n] = rd.pc;
				async[n] = a;
			}
			n++;
			rc = hwt_sw_reader_next(&rd, &a, &err);
		} while (rc == HWT_SW_NEXT);
		off += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
	}
	free(p);
	return n;
}

static bool same(const uint64_t *got, size_t n, const uint64_t *want,
		 size_t m)
{
	return n == m && !memcmp(got, want, n * sizeof(*got));
}

static int read_all(struct hwt_vg_reader *r, const struct stream *s,
		    size_t piece, struct hwt_err *err)
{
	int rc = reader_init(r, 1u << 20, err);

	for (size_t at = 0; rc == 0 && at < s->n; at += piece)
		rc = hwt_vg_reader_feed(r, s->b + at,
					s->n - at < piece ? s->n - at : piece,
					err);
	if (rc == 0)
		rc = hwt_vg_reader_finish(r, err);
	return rc;
}

/* A stream read whole, in pieces of piece bytes, and the history of one
 * of its threads (none when it has no such thread). Free o->r after. */
struct outcome {
	struct hwt_vg_reader r;
	struct hwt_err err;
	int rc;
	uint64_t pcs[64];
	bool async[64];
	size_t n;
};

static void read_thread(struct outcome *o, const struct stream *s,
			size_t piece, size_t thread)
{
	memset(o, 0, sizeof(*o));
	o->rc = read_all(&o->r, s, piece, &o->err);
	if (o->rc == 0 && thread < o->r.nthreads)
		o->n = history(&o->r.threads[thread], o->pcs, o->async, 64);
}

/* main at 0x1000: a loop superblock run three times, left by its side
 * exit the third time, then a call's superblock run to its end. */
static void test_runs_and_exits(void)
{
	static const uint64_t loop[] = { 0x1000, 0x1003, 0x1007 };
	static const uint64_t tail[] = { 0x1009, 0x2000, 0x2001 };
	static const uint32_t loop_exit[] = { 2 };
	static const uint64_t want[] = { 0x1000, 0x1003, 0x1007,
		0x1000, 0x1003, 0x1007, 0x1000, 0x1003,
		0x1009, 0x2000, 0x2001 };
	struct outcome o;
	struct stream s;

	start(&s);
	sb(&s, 0, loop, 3, NULL, loop_exit, 1);
	sb(&s, 1, tail, 3, NULL, NULL, 0);
	thread(&s, HWT_VG_REC_THREAD, 77);
	run(&s, 0);
	run(&s, 0);
	run(&s, 0);
	leave(&s, 0);
	run(&s, 1);
	rec(&s, HWT_VG_REC_END);
	for (size_t piece = 1; piece <= s.n; piece = piece * 3 + 1) {
		read_thread(&o, &s, piece, 0);
		CHECK("stream: runs and a side exit give the executed "
		      "instructions, in pieces of any size",
		      o.rc == 0 && o.r.ended && o.r.nthreads == 1 &&
		      o.r.threads[0].tid == 77 &&
		      same(o.pcs, o.n, want, sizeof(want) / sizeof(*want)),
		      "piece %zu: rc %d (%s), %zu instructions", piece, o.rc,
		      o.err.msg, o.n);
		hwt_vg_reader_free(&o.r);
	}
}

/* A rep stos of 3 iterations: Valgrind runs a superblock of two copies
 * of it (each checking its count first) and one more whose check finds
 * the count exhausted. A cpu steps the instruction three times. */
static void test_rep_iterations(void)
{
	static const uint64_t before[] = { 0x3000, 0x3003 };
	static const uint64_t reps[] = { 0x3003, 0x3003 };
	static const bool rep_flags[] = { true, true };
	static const uint32_t reps_exit[] = { 1, 2 };   /* count checks */
	static const uint64_t after[] = { 0x3006 };
	static const bool prefix_flags[] = { false, true };
	static const uint32_t prefix_exit[] = { 2 };
	static const uint64_t want[] = { 0x3000, 0x3003, 0x3003, 0x3003,
		0x3006 };
	static const uint64_t want_zero[] = { 0x3000, 0x3003, 0x3006 };
	struct outcome o;
	struct stream s;

	start(&s);
	sb(&s, 0, before, 2, prefix_flags, prefix_exit, 1);
	sb(&s, 1, reps, 2, rep_flags, reps_exit, 2);
	sb(&s, 2, after, 1, NULL, NULL, 0);
	thread(&s, HWT_VG_REC_THREAD, 5);
	run(&s, 0);     /* mov, first iteration, on to the copies */
	run(&s, 1);     /* two iterations */
	run(&s, 1);     /* the count check finds 0 */
	leave(&s, 0);
	run(&s, 2);
	rec(&s, HWT_VG_REC_END);
	read_thread(&o, &s, s.n, 0);
	CHECK("stream: a rep instruction runs once per iteration",
	      same(o.pcs, o.n, want, 5), "rc %d, %zu instructions", o.rc, o.n);
	hwt_vg_reader_free(&o.r);

	/* Reached with a zero count: it runs once. */
	start(&s);
	sb(&s, 0, before, 2, prefix_flags, prefix_exit, 1);
	sb(&s, 1, after, 1, NULL, NULL, 0);
	thread(&s, HWT_VG_REC_THREAD, 5);
	run(&s, 0);
	leave(&s, 0);
	run(&s, 1);
	rec(&s, HWT_VG_REC_END);
	read_thread(&o, &s, s.n, 0);
	CHECK("stream: a rep instruction with a zero count runs once",
	      same(o.pcs, o.n, want_zero, 3), "rc %d, %zu instructions", o.rc,
	      o.n);
	hwt_vg_reader_free(&o.r);
}

/* Two threads; a fault in the middle of a superblock; a handler entered
 * asynchronously. */
static void test_threads_faults_signals(void)
{
	static const uint64_t a[] = { 0x4000, 0x4004, 0x4008, 0x400c };
	static const uint64_t h[] = { 0x5000, 0x5001 };
	static const uint64_t want1[] = { 0x4000, 0x4004, 0x5000, 0x5001 };
	static const uint64_t want2[] = { 0x4000, 0x4004, 0x4008, 0x400c };
	struct hwt_vg_reader r;
	struct hwt_err err = { 0 };
	struct stream s;
	uint64_t pcs[64];
	bool async[64];
	size_t n1 = 0, n2 = 0;
	int rc;

	start(&s);
	sb(&s, 0, a, 4, NULL, NULL, 0);
	sb(&s, 1, h, 2, NULL, NULL, 0);
	thread(&s, HWT_VG_REC_THREAD, 10);
	run(&s, 0);
	thread(&s, HWT_VG_REC_BORN, 11);
	run(&s, 0);
	/* Thread 10 faults at 0x4004 and enters its handler. */
	rec(&s, HWT_VG_REC_AT);
	u(&s, 10);
	u(&s, 0x4004);
	rec(&s, HWT_VG_REC_SIGNAL);
	u(&s, 10);
	u(&s, 11);
	thread(&s, HWT_VG_REC_THREAD, 10);
	run(&s, 1);
	thread(&s, HWT_VG_REC_GONE, 11);
	rec(&s, HWT_VG_REC_END);
	rc = read_all(&r, &s, s.n, &err);
	if (rc == 0 && r.nthreads == 2) {
		n1 = history(&r.threads[0], pcs, async, 64);
		CHECK("stream: a fault ends the superblock, the handler entry "
		      "is asynchronous",
		      same(pcs, n1, want1, 4) && !async[1] && async[2] &&
		      !async[3], "%zu instructions", n1);
		n2 = history(&r.threads[1], pcs, async, 64);
	}
	CHECK("stream: each thread has its own history",
	      rc == 0 && r.nthreads == 2 && r.threads[1].tid == 11 &&
	      r.threads[1].exited && same(pcs, n2, want2, 4),
	      "rc %d (%s), %zu threads, %zu instructions", rc, err.msg,
	      r.nthreads, n2);
	hwt_vg_reader_free(&r);
}

/* A thread's superblock stays where it is while later translations
 * grow the table (the run is written when the next one starts). */
static void test_many_translations(void)
{
	static const uint64_t a[] = { 0x6000, 0x6001 };
	static const uint64_t b[] = { 0x7000 };
	static const uint64_t want[] = { 0x6000, 0x6001, 0x7000 };
	struct hwt_vg_reader r;
	struct hwt_err err = { 0 };
	struct stream *s = calloc(1, sizeof(*s) + 4096 * 16);
	uint64_t pcs[8];
	bool async[8];
	size_t n = 0;
	int rc;

	start(s);
	sb(s, 0, a, 2, NULL, NULL, 0);
	thread(s, HWT_VG_REC_THREAD, 9);
	run(s, 0);
	rc = reader_init(&r, 1u << 20, &err);
	if (rc == 0)
		rc = hwt_vg_reader_feed(&r, s->b, s->n, &err);
	/* Fed in steps: the table grows between the run and the next,
	 * to numbers whose runs take three bytes. */
	for (uint64_t id = 1; rc == 0 && id < 5000; id++) {
		start(s);
		s->n = 0;
		sb(s, id, b, 1, NULL, NULL, 0);
		rc = hwt_vg_reader_feed(&r, s->b, s->n, &err);
	}
	s->n = 0;
	run(s, 4999);
	rec(s, HWT_VG_REC_END);
	if (rc == 0)
		rc = hwt_vg_reader_feed(&r, s->b, s->n, &err);
	if (rc == 0)
		rc = hwt_vg_reader_finish(&r, &err);
	if (rc == 0)
		n = history(&r.threads[0], pcs, async, 8);
	CHECK("stream: a run survives the translation table growing",
	      rc == 0 && same(pcs, n, want, 3), "rc %d (%s), %zu instructions",
	      rc, err.msg, n);
	hwt_vg_reader_free(&r);
	free(s);
}

/* An exec under Valgrind: the new program's tool continues the stream
 * with EXEC, numbering its translations from 0 again; the others ended.
 * The thread that exec'd goes on as a new history of the new program,
 * its history before kept with the old program's modules. */
static void test_exec(void)
{
	static const uint64_t old[] = { 0x8000, 0x8002 };
	static const uint64_t new_[] = { 0x9000 };
	static const uint64_t after[] = { 0x9000 };
	uint64_t pcs[8];
	bool async[8];
	struct outcome o;
	struct stream s;
	size_t before_n = 0;

	start(&s);
	map(&s, 0x8000, 0x1000, 0, "/bin/sh");
	sb(&s, 0, old, 2, NULL, NULL, 0);
	thread(&s, HWT_VG_REC_THREAD, 20);
	thread(&s, HWT_VG_REC_BORN, 21);
	run(&s, 0);
	thread(&s, HWT_VG_REC_THREAD, 20);
	run(&s, 0);
	rec(&s, HWT_VG_REC_EXEC);
	map(&s, 0x8000, 0x1000, 0, "/bin/sh");
	sb(&s, 0, new_, 1, NULL, NULL, 0);
	run(&s, 0);
	rec(&s, HWT_VG_REC_END);
	read_thread(&o, &s, 3, 2);
	if (o.rc == 0 && o.r.nthreads == 3)
		before_n = history(&o.r.threads[0], pcs, async, 8);
	CHECK("stream: an exec goes on as a new history of the thread that "
	      "made it, with the new program's translations",
	      o.rc == 0 && o.r.nthreads == 3 && o.r.threads[2].tid == 20 &&
	      o.r.threads[2].exec == 1 &&
	      same(o.pcs, o.n, after, 1),
	      "rc %d (%s), %zu threads, %zu instructions", o.rc, o.err.msg,
	      o.r.nthreads, o.n);
	CHECK("stream: the history before the exec ends there, with the old "
	      "program",
	      o.rc == 0 && o.r.nthreads == 3 && o.r.threads[0].tid == 20 &&
	      o.r.threads[0].exec == 0 && o.r.threads[0].exited &&
	      same(pcs, before_n, old, 2),
	      "%zu instructions", before_n);
	/* The same file at the same address before and after: one module
	 * of each program. */
	CHECK("stream: each program has its modules",
	      o.rc == 0 && o.r.modules.n == 2 && o.r.modules.v[0].exec == 0 &&
	      o.r.modules.v[1].exec == 1 && o.r.modules.exec == 1,
	      "%zu modules", o.r.modules.n);
	hwt_vg_reader_free(&o.r);
}

/* The tool's byte bound: it says so and stops; what came before stays. */
static void test_bound(void)
{
	static const uint64_t a[] = { 0xa000, 0xa001 };
	struct outcome o;
	struct stream s;

	start(&s);
	sb(&s, 0, a, 2, NULL, NULL, 0);
	thread(&s, HWT_VG_REC_THREAD, 4);
	run(&s, 0);
	rec(&s, HWT_VG_REC_FULL);
	u(&s, 1u << 20);
	read_thread(&o, &s, s.n, 0);
	CHECK("stream: the tool's bound is said, with what came before",
	      o.rc == 0 && o.r.full && o.r.bound == 1u << 20 && !o.r.ended &&
	      o.r.nthreads == 1 && o.n == 2,
	      "rc %d (%s), full %d bound %llu, %zu instructions", o.rc,
	      o.err.msg, o.r.full, (unsigned long long)o.r.bound, o.n);
	hwt_vg_reader_free(&o.r);
}

static void test_modules(void)
{
	static const char path[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	struct hwt_vg_reader r;
	struct hwt_err err = { 0 };
	struct stream s;
	int rc;

	start(&s);
	map(&s, 0x4800000, 0x1000, 0, path);
	rec(&s, HWT_VG_REC_MAP);          /* anonymous code: no module */
	u(&s, 0x9000000);
	u(&s, 0x1000);
	u(&s, 0);
	u(&s, HWT_VG_MAP_X);
	u(&s, 0);
	rec(&s, HWT_VG_REC_END);
	rc = read_all(&r, &s, 7, &err);
	CHECK("stream: executable file mappings are modules",
	      rc == 0 && r.modules.n == 1 &&
	      !strcmp(r.modules.v[0].path, path) &&
	      r.modules.v[0].load_address == 0x4800000,
	      "rc %d (%s), %zu modules", rc, err.msg, r.modules.n);
	hwt_vg_reader_free(&r);
}

/* One malformed stream: the error names what is wrong, and the
 * instructions before it are kept. */
static void expect_bad(const char *name, const struct stream *s,
		       const char *msg, bool kept)
{
	struct hwt_vg_reader r;
	struct hwt_err err = { 0 }, ignored = { 0 };
	uint64_t pcs[16];
	bool async[16];
	size_t n;
	int rc = reader_init(&r, 1u << 20, &err);

	if (rc == 0)
		rc = hwt_vg_reader_feed(&r, s->b, s->n, &err);
	/* What was read before the error is still sealed and kept. */
	if (rc == 0)
		rc = hwt_vg_reader_finish(&r, &err);
	else
		hwt_vg_reader_finish(&r, &ignored);
	n = r.nthreads ? history(&r.threads[0], pcs, async, 16) : 0;
	CHECK(name, rc < 0 && strstr(err.msg, msg) && (!kept || n == 2),
	      "rc %d, \"%s\", %zu instructions kept", rc, err.msg, n);
	hwt_vg_reader_free(&r);
}

static void test_bad_streams(void)
{
	static const uint64_t pc[] = { 0x1000, 0x1001 };
	static const uint32_t exit2[] = { 2 };
	struct stream s, good;

	start(&good);
	sb(&good, 0, pc, 2, NULL, exit2, 1);
	thread(&good, HWT_VG_REC_THREAD, 3);
	run(&good, 0);

	copy_stream(&s, &good);
	memcpy(s.b, "NOTVG01\n", 8);
	expect_bad("stream: a wrong magic", &s, "not a hwtrace valgrind", false);
	copy_stream(&s, &good);
	run(&s, 9);
	expect_bad("stream: an unknown superblock", &s, "unknown superblock",
		   true);
	copy_stream(&s, &good);
	sb(&s, 5, pc, 2, NULL, NULL, 0);
	expect_bad("stream: superblocks out of order", &s, "out of order",
		   true);
	copy_stream(&s, &good);
	leave(&s, 3);
	expect_bad("stream: an exit the superblock does not have", &s,
		   "side exit of no superblock", true);
	copy_stream(&s, &good);
	rec(&s, HWT_VG_REC_SB);
	u(&s, 1);
	u(&s, 100000);
	expect_bad("stream: a superblock too long", &s, "instruction count",
		   true);
	copy_stream(&s, &good);
	rec(&s, HWT_VG_REC_SB);
	u(&s, 1);
	u(&s, 1);
	u(&s, 0x1000);
	u(&s, 0);
	expect_bad("stream: an instruction of length 0", &s,
		   "instruction length", true);
	copy_stream(&s, &good);
	rec(&s, HWT_VG_REC_SB);
	u(&s, 1);
	u(&s, 1);
	u(&s, 0x1000);
	u(&s, 2);
	u(&s, 1);
	u(&s, 5);
	expect_bad("stream: an exit past the end", &s, "past the superblock",
		   true);
	copy_stream(&s, &good);
	thread(&s, HWT_VG_REC_THREAD, 0);
	expect_bad("stream: thread id 0", &s, "thread id out of range", true);
	copy_stream(&s, &good);
	rec(&s, 99);
	expect_bad("stream: an unknown record", &s, "unknown record", true);
	copy_stream(&s, &good);
	u(&s, 3);
	expect_bad("stream: a malformed item", &s, "malformed item", true);
	copy_stream(&s, &good);
	for (int i = 0; i < 11; i++)
		s.b[s.n++] = 0xff;
	s.b[s.n++] = 0x01;
	expect_bad("stream: a number longer than 64 bits", &s,
		   "malformed number", true);
	copy_stream(&s, &good);
	rec(&s, HWT_VG_REC_SIGNAL);
	u(&s, 3);
	u(&s, 65);
	expect_bad("stream: a signal out of range", &s, "signal out of range",
		   true);
	copy_stream(&s, &good);
	rec(&s, HWT_VG_REC_END);
	run(&s, 0);
	expect_bad("stream: data after the end", &s, "after the end", true);
	copy_stream(&s, &good);
	rec(&s, HWT_VG_REC_SB);
	u(&s, 1);
	expect_bad("stream: cut in the middle of an item (the tool died)", &s,
		   "ends in the middle of an item", true);
	copy_stream(&s, &good);
	s.n = 4;
	expect_bad("stream: cut inside the magic", &s,
		   "ends in the middle of an item", false);
}

/* Implied superblocks (vgstream.h): their side exits are not written,
 * where the thread goes next tells them. A at 0x1000 leaves after one
 * instruction for 0x2000 (B), after three for 0x3000 (C, or R: code at
 * 0x7000 that Valgrind runs for 0x3000), else at its end for 0x100d (D).
 * F's end writes itself (FINAL). H is a signal handler. */
enum { A, B, C, D, F, R, H };

static void implied_start(struct stream *s)
{
	static const uint64_t a[] = { 0x1000, 0x1004, 0x1008, 0x100c };
	static const uint32_t a_after[] = { 1, 3 };
	static const uint64_t a_to[] = { 0x2000, 0x3000 };
	static const uint64_t b[] = { 0x2000, 0x2001 };
	static const uint64_t c[] = { 0x3000 };
	static const uint64_t d[] = { 0x100d };
	static const uint64_t f[] = { 0x6000, 0x6004 };
	static const uint32_t f_after[] = { 1 };
	static const uint64_t f_to[] = { 0x2000 };
	static const uint64_t r[] = { 0x7000, 0x7001 };
	static const uint64_t h[] = { 0x5000 };

	start(s);
	sb_told(s, A, a, 4, NULL, a_after, 2, HWT_VG_SB_IMPLIED, 0, a_to);
	sb(s, B, b, 2, NULL, NULL, 0);
	sb(s, C, c, 1, NULL, NULL, 0);
	sb(s, D, d, 1, NULL, NULL, 0);
	sb_told(s, F, f, 2, NULL, f_after, 1,
		HWT_VG_SB_IMPLIED | HWT_VG_SB_FINAL, 0, f_to);
	sb_told(s, R, r, 2, NULL, NULL, 0, 0, 0x3000, NULL);
	sb(s, H, h, 1, NULL, NULL, 0);
	thread(s, HWT_VG_REC_THREAD, 77);
}

/* want, n instructions, times times over. */
static bool same_times(const uint64_t *got, size_t n, const uint64_t *want,
		       size_t m, size_t times)
{
	for (size_t i = 0; i < times; i++)
		if (n < (i + 1) * m || !same(got + i * m, m, want, m))
			return false;
	return n == times * m;
}

/* The stream s ends; its first thread's history is want (n
 * instructions) times times over, with an asynchronous entry at async_at
 * (SIZE_MAX: none). */
static void expect_implied_times(const char *name, struct stream *s,
				 const uint64_t *want, size_t n,
				 size_t async_at, size_t times)
{
	struct outcome o;

	rec(s, HWT_VG_REC_END);
	read_thread(&o, s, s->n, 0);
	/* Counted as read as they are written. */
	CHECK(name, o.rc == 0 && same_times(o.pcs, o.n, want, n, times) &&
	      o.r.insns == o.n &&
	      (async_at == SIZE_MAX ||
	       (o.async[async_at] && !o.async[async_at - 1])),
	      "rc %d (%s), %zu instructions, %llu counted", o.rc, o.err.msg,
	      o.n, (unsigned long long)o.r.insns);
	hwt_vg_reader_free(&o.r);
}

/* kind (AT, NEXT, SIGNAL) for thread tid at a (a pc or a signal). */
static void told(struct stream *s, unsigned kind, uint64_t tid, uint64_t a)
{
	rec(s, kind);
	u(s, tid);
	u(s, a);
}

static void expect_implied(const char *name, struct stream *s,
			   const uint64_t *want, size_t n, size_t async_at)
{
	expect_implied_times(name, s, want, n, async_at, 1);
}

static void test_implied_exits(void)
{
	static const uint64_t to_b[] = { 0x1000, 0x2000, 0x2001 };
	static const uint64_t to_c[] = { 0x1000, 0x1004, 0x1008, 0x3000 };
	static const uint64_t to_d[] = { 0x1000, 0x1004, 0x1008, 0x100c,
		0x100d };
	static const uint64_t to_r[] = { 0x1000, 0x1004, 0x1008, 0x7000,
		0x7001 };
	static const uint64_t to_h[] = { 0x1000, 0x5000 };
	static const uint64_t f_runs[] = { 0x6000, 0x6004, 0x6000, 0x2000,
		0x2001 };
	static const uint64_t fault[] = { 0x1000, 0x1004, 0x5000 };
	static const uint64_t killed[] = { 0x1000, 0x1004, 0x1008 };
	static const uint64_t stopped[] = { 0x1000, 0x1004 };
	static const uint64_t t78[] = { 0x1000, 0x2000, 0x2001 };
	struct outcome o;
	struct stream s;

	/* Three times over: the reader's loop over runs (log_runs) sees
	 * the later ones. */
	implied_start(&s);
	for (int i = 0; i < 3; i++) {
		run(&s, A);
		run(&s, B);
	}
	expect_implied_times("implied: the next run's entry is a side exit's "
			     "target: left there", &s, to_b, 3, SIZE_MAX, 3);
	implied_start(&s);
	for (int i = 0; i < 3; i++) {
		run(&s, A);
		run(&s, C);
	}
	expect_implied_times("implied: the second side exit's", &s, to_c, 4,
			     SIZE_MAX, 3);
	implied_start(&s);
	for (int i = 0; i < 3; i++) {
		run(&s, A);
		run(&s, D);
	}
	expect_implied_times("implied: no side exit's: ran to its end", &s,
			     to_d, 5, SIZE_MAX, 3);
	implied_start(&s);
	for (int i = 0; i < 3; i++) {
		run(&s, A);
		run(&s, R);
	}
	expect_implied_times("implied: a redirected run counts by its entry, "
			     "not its code", &s, to_r, 5, SIZE_MAX, 3);
	implied_start(&s);
	run(&s, A);
	told(&s, HWT_VG_REC_NEXT, 77, 0x2000);
	told(&s, HWT_VG_REC_SIGNAL, 77, 10);
	run(&s, H);
	expect_implied("implied: a signal's handler next: NEXT says where "
		       "the run left", &s, to_h, 2, 1);
	implied_start(&s);
	for (int i = 0; i < 3; i++) {
		run(&s, F);
		leave(&s, 1);
		run(&s, F);
		run(&s, B);
	}
	expect_implied_times("implied with a final exit: its end is written, "
			     "its side exits are not", &s, f_runs, 5, SIZE_MAX,
			     3);
	implied_start(&s);
	run(&s, A);
	told(&s, HWT_VG_REC_AT, 77, 0x1004);
	told(&s, HWT_VG_REC_SIGNAL, 77, 11);
	run(&s, H);
	expect_implied("implied: a fault inside the run ends it there", &s,
		       fault, 3, 2);
	implied_start(&s);
	run(&s, A);
	told(&s, HWT_VG_REC_AT, 77, 0x3000);
	thread(&s, HWT_VG_REC_GONE, 77);
	expect_implied("implied: a thread killed where a side exit leads "
		       "left by it", &s, killed, 3, SIZE_MAX);
	implied_start(&s);
	run(&s, A);
	told(&s, HWT_VG_REC_NEXT, 77, 0x1008);
	expect_implied("implied: NEXT inside the run: it ran up to there",
		       &s, stopped, 2, SIZE_MAX);

	/* Each thread's open run waits for its own next run. */
	implied_start(&s);
	run(&s, A);
	thread(&s, HWT_VG_REC_BORN, 78);
	run(&s, A);
	run(&s, B);
	thread(&s, HWT_VG_REC_THREAD, 77);
	run(&s, C);
	rec(&s, HWT_VG_REC_END);
	read_thread(&o, &s, s.n, 0);
	CHECK("implied: two threads' open runs, each told by its own next run",
	      o.rc == 0 && same(o.pcs, o.n, to_c, 4) && o.r.nthreads == 2 &&
	      history(&o.r.threads[1], o.pcs, o.async, 64) == 3 &&
	      same(o.pcs, 3, t78, 3), "rc %d (%s), %zu instructions", o.rc,
	      o.err.msg, o.n);
	hwt_vg_reader_free(&o.r);

	implied_start(&s);
	run(&s, A);
	leave(&s, 3);
	expect_bad("implied: an exit past its end is an error", &s,
		   "side exit of no superblock", false);
	start(&s);
	rec(&s, HWT_VG_REC_SB);
	u(&s, 0);
	u(&s, 1);
	u(&s, 0x1000);
	u(&s, 2);
	u(&s, 0);
	u(&s, 4);
	zz(&s, 0);
	expect_bad("implied: unknown superblock flags are an error", &s,
		   "unknown superblock flags", false);
}

/* Under live control the program stops with the stream read so far:
 * inside a superblock (a breakpoint at its second instruction) the
 * history ends at the stop pc, after a whole run at the next superblock's
 * first instruction; going on writes nothing twice. */
static void test_stops(void)
{
	static const uint64_t loop[] = { 0x1000, 0x1003, 0x1007 };
	static const uint64_t tail[] = { 0x1009, 0x2000, 0x2001 };
	static const uint32_t loop_exit[] = { 2 };
	static const uint64_t at_mid[] = { 0x1000, 0x1003, 0x1007,
		0x1000, 0x1003 };
	static const uint64_t at_loop[] = { 0x1000, 0x1003,
		0x1000, 0x1003, 0x1007, 0x1000 };
	static const uint64_t whole[] = { 0x1000, 0x1003,
		0x1000, 0x1003, 0x1007, 0x1000, 0x1003, 0x1009, 0x2000,
		0x2001 };
	struct hwt_vg_reader r;
	struct hwt_err err = { 0 };
	struct stream s;
	uint64_t pcs[64];
	bool async[64];
	size_t n = 0, fed = 0;
	int rc;

	start(&s);
	sb(&s, 0, loop, 3, NULL, loop_exit, 1);
	sb(&s, 1, tail, 3, NULL, NULL, 0);
	thread(&s, HWT_VG_REC_THREAD, 77);
	run(&s, 0);
	run(&s, 0);
	rc = reader_init(&r, 1u << 20, &err);
	if (rc == 0)
		rc = hwt_vg_reader_feed(&r, s.b, s.n, &err);
	fed = s.n;
	if (rc == 0)
		rc = hwt_vg_reader_stop_at(&r, 77, 0x1003, true, &err);
	if (rc == 0)
		rc = hwt_sw_ring_snapshot(&r.threads[0].ring, &err);
	if (rc == 0)
		n = history(&r.threads[0], pcs, async, 64);
	CHECK("stop inside a superblock: the history ends at the stop pc",
	      rc == 0 && same(pcs, n, at_mid, 5), "rc %d (%s), %zu "
	      "instructions, last 0x%llx", rc, err.msg, n,
	      n ? (unsigned long long)pcs[n - 1] : 0ull);
	/* The same stop asked again changes nothing. */
	if (rc == 0)
		rc = hwt_vg_reader_stop_at(&r, 77, 0x1003, true, &err);
	/* It goes on: the run leaves by its exit, then a whole run of the
	 * loop, and the thread stops between superblocks at the loop's
	 * start, itself an instruction of the last run. */
	leave(&s, 0);
	run(&s, 0);
	if (rc == 0)
		rc = hwt_vg_reader_feed(&r, s.b + fed, s.n - fed, &err);
	fed = s.n;
	if (rc == 0)
		rc = hwt_vg_reader_stop_at(&r, 77, 0x1000, false, &err);
	if (rc == 0)
		rc = hwt_sw_ring_snapshot(&r.threads[0].ring, &err);
	n = rc == 0 ? history(&r.threads[0], pcs, async, 64) : 0;
	CHECK("stop between superblocks: the last run is whole and the "
	      "next instruction is last",
	      rc == 0 && same(pcs + 3, n - 3, at_loop, 6),
	      "rc %d (%s), %zu instructions", rc, err.msg, n);
	run(&s, 0);
	leave(&s, 0);
	run(&s, 1);
	rec(&s, HWT_VG_REC_END);
	if (rc == 0)
		rc = hwt_vg_reader_feed(&r, s.b + fed, s.n - fed, &err);
	if (rc == 0)
		rc = hwt_vg_reader_finish(&r, &err);
	n = rc == 0 ? history(&r.threads[0], pcs, async, 64) : 0;
	CHECK("after the stops the history is every instruction once",
	      rc == 0 && n == 13 && same(pcs, 3, loop, 3) &&
	      same(pcs + 3, 10, whole, 10) && r.insns == 13,
	      "rc %d (%s), %zu instructions, %llu counted", rc, err.msg, n,
	      (unsigned long long)r.insns);
	hwt_vg_reader_free(&r);
}

/* At END a stream's translations go, its last run written first, unless
 * the process forked a followed child (FORKS), whose stream may still
 * share them. */
static void test_end_translations(void)
{
	static const uint64_t loop[] = { 0x1000, 0x1003, 0x1007 };
	static const uint64_t want[] = { 0x1000, 0x1003, 0x1007,
		0x1000, 0x1003, 0x1007 };

	for (int forks = 0; forks < 2; forks++) {
		struct hwt_vg_reader r;
		struct hwt_err err = { 0 };
		struct stream st;
		uint64_t pcs[16];
		bool async[16];
		size_t n = 0, kept;
		int rc;

		start(&st);
		sb(&st, 0, loop, 3, NULL, NULL, 0);
		thread(&st, HWT_VG_REC_THREAD, 10);
		run(&st, 0);
		if (forks)
			rec(&st, HWT_VG_REC_FORKS);
		run(&st, 0);
		rec(&st, HWT_VG_REC_END);
		rc = reader_init(&r, 1u << 20, &err);
		if (rc == 0)
			rc = hwt_vg_reader_feed(&r, st.b, st.n, &err);
		kept = r.nsbs;
		if (rc == 0)
			rc = hwt_vg_reader_finish(&r, &err);
		if (rc == 0 && r.nthreads == 1)
			n = history(&r.threads[0], pcs, async, 16);
		CHECK(forks ? "end: a stream that forked keeps its translations "
			      "for its children" :
			      "end: a stream that did not fork drops its "
			      "translations, its history whole",
		      rc == 0 && kept == (forks ? 1u : 0u) &&
		      same(pcs, n, want, 6),
		      "rc %d (%s), %zu translations kept, %zu instructions",
		      rc, err.msg, kept, n);
		hwt_vg_reader_free(&r);
	}
}

/* A forked child's stream shares its parent's first translations (FORK):
 * read before the parent's stream has them, it waits and then goes on;
 * without a way to find parents, or from a parent that ended short, it is
 * an error. */
struct family {
	struct hwt_vg_reader *parent;
	pid_t parent_pid;
};

/* A long stream (about 200000 runs of four translations, some left by
 * side exits, some rep iterations judged from the run before) read
 * whole, then with its runs in a log of a small window: the log keeps
 * the newest runs, exactly the end of the whole history, and counts
 * every instruction before them lost. reps_only: the runs are mostly a
 * rep instruction's count check, which ran nothing when the run before
 * ended at it: the oldest run kept is one whose count depends on a run
 * the log dropped. */
static int gather(void *ctx, uint64_t pc, bool async)
{
	uint64_t **at = ctx;

	*(*at)++ = pc;
	return 0;
}

/* The restart points the recorder found in a kept ring (its CUTS
 * chunks, into the packer's index): a walk begun at each gives the
 * instructions of the history there (pcs, n of them, after lost). Their
 * count in *ncuts. */
static bool cuts_agree(const struct hwt_sw_ring *ring, const uint64_t *pcs,
		       size_t n, uint64_t lost, size_t *ncuts)
{
	uint8_t *zst = NULL, *idx = NULL;
	size_t zst_n, idx_n, off = 0, k = 0;
	struct hwt_sw_table tab = { 0 };
	bool ok = true;

	*ncuts = 0;
	if (hwt_sw_trace_pack(ring->sealed, ring->sealed_size, &zst, &zst_n,
			      &idx, &idx_n, NULL) || !idx)
		ok = false;
	while (ok && off < ring->sealed_size) {
		struct hwt_sw_chunk_hdr h;
		const uint8_t *pay = ring->sealed + off + HWT_SW_CHUNK_HDR_SIZE;

		if (hwt_sw_chunk_hdr_unpack_flags(ring->sealed + off,
						  ring->sealed_size - off,
						  HWT_SW_CHUNK_RUNS_FLAGS, &h,
						  NULL))
			return false;
		if (h.flags & HWT_SW_CHUNK_TABLE)
			ok = !hwt_sw_table_add(&tab, pay, h.payload_size, NULL);
		for (size_t c = 0; ok && (h.flags & HWT_SW_CHUNK_CUTS) &&
		     c < h.payload_size / HWT_SW_CUT_BYTES; c++, k++) {
			const uint8_t *q = pay + c * HWT_SW_CUT_BYTES;
			const uint8_t *runs = pay + h.payload_size +
				HWT_SW_CHUNK_HDR_SIZE;
			struct hwt_sw_chunk_hdr rh;
			uint64_t got[64], *at = got, given, pos;
			struct hwt_sw_runs w;

			hwt_sw_chunk_hdr_unpack_flags(runs - HWT_SW_CHUNK_HDR_SIZE,
						      HWT_SW_CHUNK_HDR_SIZE +
						      (1u << 20),
						      HWT_SW_CHUNK_RUNS_FLAGS,
						      &rh, NULL);
			pos = rh.first_seq - lost + hwt_get_le32(q + 4);
			hwt_sw_runs_init(&w, &tab, runs, rh.payload_size,
					 hwt_get_le32(q), true,
					 hwt_get_le64(q + 8));
			hwt_sw_runs_each(&w, 64, gather, &at, &given, NULL);
			ok = pos < n && pcs[pos - 1] == hwt_get_le64(q + 8) &&
				!memcmp(got, pcs + pos,
					(size_t)given * sizeof(*got)) &&
				(given == 64 || pos + given == n);
		}
		off += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
	}
	hwt_sw_table_free(&tab);
	free(zst);
	free(idx);
	*ncuts = k;
	return ok;
}

/* The long stream of log_window in s (big: its buffer). */
static void long_stream(struct stream *s, uint8_t *big, bool reps_only)
{
	static const uint64_t a[] = { 0x1000, 0x1003, 0x1007, 0x1009 };
	static const uint32_t a_exits[] = { 1, 3 };
	static const uint64_t reps[] = { 0x3003, 0x3003 };
	static const bool rep_flags[] = { true, true };
	static const uint32_t reps_exits[] = { 1, 2 };
	static const uint64_t c[] = { 0x5000 };
	static const uint64_t d[] = { 0x6000, 0x6002, 0x6004 };
	static const uint32_t d_exits[] = { 2 };
	uint32_t seed = 12345;

	start_in(s, big);
	sb(s, 0, a, 4, NULL, a_exits, 2);
	sb(s, 1, reps, 2, rep_flags, reps_exits, 2);
	sb(s, 2, c, 1, NULL, NULL, 0);
	sb(s, 3, d, 3, NULL, d_exits, 1);
	thread(s, HWT_VG_REC_THREAD, 3);
	for (int i = 0; i < 200000; i++) {
		uint32_t id;

		seed = seed * 1103515245u + 12345u;
		id = (seed >> 16) % 4;
		if (reps_only && id != 2)
			id = 1;
		run(s, id);
		if (reps_only && id == 1)
			leave(s, 0);   /* nothing ran, unless after another */
		else if (id != 2 && (seed >> 20) % 3 == 0)
			leave(s, id == 3 ? 0 : (seed >> 24) % 2);
		if ((seed >> 8) % 5000 == 0) {
			rec(s, HWT_VG_REC_SIGNAL);
			u(s, 3);
			u(s, 10);
		}
	}
	rec(s, HWT_VG_REC_END);
}

/* s read in pieces into r with its runs kept in a log of capacity, up
 * to its end (the log kept, keep.h) but not finished. */
static int read_kept(struct hwt_vg_reader *r, const struct stream *s,
		     uint64_t capacity, struct hwt_err *err)
{
	int rc = hwt_vg_reader_init(r, capacity, err);

	r->defer = true;
	for (size_t at = 0; rc == 0 && at < s->n; at += 4096)
		rc = hwt_vg_reader_feed(r, s->b + at, s->n - at < 4096 ?
					s->n - at : 4096, err);
	return rc;
}

static void log_window(bool reps_only)
{
	struct hwt_vg_reader whole, window;
	struct hwt_err err = { 0 };
	struct stream *s = malloc(sizeof(*s));
	uint8_t *big = malloc(4u << 20);
	size_t cap = 4u << 20, nw = 0, nk = 0;
	uint64_t *pw = malloc(cap * sizeof(*pw)), *pk = malloc(cap * sizeof(*pk));
	bool *aw = malloc(cap), *ak = malloc(cap);
	const struct hwt_sw_ring *rw, *rk;
	int rc, rc2;

	long_stream(s, big, reps_only);
	defer_runs = false;
	rc = read_all(&whole, s, 4096, &err);
	rc2 = read_kept(&window, s, 64u << 10, &err);
	if (rc2 == 0)
		rc2 = hwt_vg_reader_finish(&window, &err);
	if (rc == 0 && rc2 == 0) {
		nw = history(&whole.threads[0], pw, aw, cap);
		nk = history(&window.threads[0], pk, ak, cap);
	}
	rw = &whole.threads[0].ring;
	rk = &window.threads[0].ring;
	check_prefix = reps_only ? "reps: " : "";
	CHECK("log window: the whole history, read as it comes, is all there",
	      rc == 0 && rw->lost_insns == 0 && nw == rw->insn_total &&
	      nw == whole.insns && nw > 50000,
	      "rc %d (%s), %zu instructions of %llu", rc, err.msg, nw,
	      (unsigned long long)rw->insn_total);
	CHECK("log window: a small log keeps the newest runs, the end of the "
	      "whole history exactly, async entries too",
	      rc2 == 0 && nk > 5000 && nk < nw / 4 && nk <= nw &&
	      !memcmp(pk + 1, pw + nw - nk + 1, (nk - 1) * sizeof(*pk)) &&
	      !memcmp(ak + 1, aw + nw - nk + 1, nk - 1) && pk[0] == pw[nw - nk],
	      "rc %d (%s), kept %zu of %zu", rc2, err.msg, nk, nw);
	if (!reps_only) {
		size_t ncuts = 0;
		bool agree = rc2 == 0 && cuts_agree(rk, pk, nk, rk->lost_insns,
						    &ncuts);

		CHECK("log window: kept as runs, with restart points where "
		      "walks go on as the history does",
		      agree && ncuts >= nk / 8192 && ncuts > 0,
		      "%zu restart points for "
		      "%zu instructions", ncuts, nk);
	}
	CHECK("log window: what it dropped is counted lost, exactly",
	      rc2 == 0 && rk->insn_total == nw && window.insns == nw &&
	      rk->lost_insns == nw - nk && rk->lost_bytes > 0,
	      "total %llu of %zu, lost %llu, kept %zu",
	      (unsigned long long)rk->insn_total, nw,
	      (unsigned long long)rk->lost_insns, nk);
	check_prefix = "";
	hwt_vg_reader_free(&whole);
	hwt_vg_reader_free(&window);
	free(big);
	free(s);
	free(pw);
	free(pk);
	free(aw);
	free(ak);
}

static void test_log_window(void)
{
	log_window(false);
	log_window(true);
}

/* A stream that has ended keeps its threads' logs as they are (keep.h),
 * weighed in the window as the logs were; when the window needs room
 * the oldest of a kept log goes, a piece at a time, and what is left is
 * exactly the newest part of the history, every instruction before it
 * counted lost. */
static void test_kept_evict(void)
{
	struct hwt_vg_reader whole, kept;
	struct hwt_err err = { 0 };
	struct stream *s = malloc(sizeof(*s));
	uint8_t *big = malloc(4u << 20);
	size_t cap = 4u << 20, nw = 0, nk = 0;
	uint64_t *pw = malloc(cap * sizeof(*pw)), *pk = malloc(cap * sizeof(*pk));
	bool *aw = malloc(cap), *ak = malloc(cap);
	uint64_t before = 0, weight = 0, freed = 0, after = 0, all_freed = 0;
	struct hwt_vg_thread *t = NULL;
	size_t ncuts = 0;
	int rc, rc2;

	long_stream(s, big, false);
	rc = read_all(&whole, s, 4096, &err);
	rc2 = read_kept(&kept, s, 1u << 20, &err);
	if (rc2 == 0) {
		t = &kept.threads[0];
		before = hwt_vg_thread_window_used(t);
		weight = t->kept_weight;
		freed = hwt_vg_thread_evict(t, weight / 2);
		after = hwt_vg_thread_window_used(t);
	}
	CHECK("evict: a kept log weighs in the window as its log did",
	      rc2 == 0 && kept.ended && t->log.nchunks == 0 && weight > 0 &&
	      weight == hwt_vg_kept_weight(&t->kept) + freed &&
	      kept.budget == NULL,
	      "rc %d (%s), kept weight %llu", rc2, err.msg,
	      (unsigned long long)weight);
	CHECK("evict: the oldest pieces go until the weight asked for is "
	      "gone, and no more than a piece beyond it",
	      rc2 == 0 && freed >= weight / 2 && freed < weight &&
	      before - after == freed && t->kept_weight == weight - freed &&
	      freed - weight / 2 < 2 * (1u << 20),
	      "asked %llu of %llu, freed %llu, window %llu -> %llu",
	      (unsigned long long)(weight / 2), (unsigned long long)weight,
	      (unsigned long long)freed, (unsigned long long)before,
	      (unsigned long long)after);
	if (rc == 0 && rc2 == 0 && (rc2 = hwt_vg_reader_finish(&kept,
							      &err)) == 0) {
		nw = history(&whole.threads[0], pw, aw, cap);
		nk = history(&kept.threads[0], pk, ak, cap);
	}
	CHECK("evict: what is left is the newest of the history exactly, "
	      "with its restart points, the rest counted lost",
	      rc2 == 0 && nk > 0 && nk < nw && nw > 50000 &&
	      !memcmp(pk + 1, pw + nw - nk + 1, (nk - 1) * sizeof(*pk)) &&
	      !memcmp(ak + 1, aw + nw - nk + 1, nk - 1) &&
	      pk[0] == pw[nw - nk] &&
	      kept.threads[0].ring.insn_total == nw &&
	      kept.threads[0].ring.lost_insns == nw - nk &&
	      cuts_agree(&kept.threads[0].ring, pk, nk,
			 kept.threads[0].ring.lost_insns, &ncuts) && ncuts > 0,
	      "rc %d (%s), kept %zu of %zu, lost %llu, %zu restart points",
	      rc2, err.msg, nk, nw,
	      (unsigned long long)kept.threads[0].ring.lost_insns, ncuts);
	hwt_vg_reader_free(&kept);
	rc2 = read_kept(&kept, s, 1u << 20, &err);
	if (rc2 == 0) {
		t = &kept.threads[0];
		weight = hwt_vg_thread_window_used(t);
		all_freed = hwt_vg_thread_evict(t, UINT64_MAX);
		rc2 = hwt_vg_reader_finish(&kept, &err);
	}
	CHECK("evict: asked for everything, the kept log goes whole, its "
	      "table too, all of it counted lost",
	      rc2 == 0 && t->kept.n == 0 && t->kept_weight == 0 &&
	      all_freed + hwt_sw_ring_used(&t->ring) >= weight &&
	      history(t, pk, ak, cap) == 0 && t->ring.lost_insns == nw &&
	      t->ring.insn_total == nw,
	      "rc %d (%s), freed %llu of %llu, lost %llu of %zu", rc2,
	      err.msg, (unsigned long long)all_freed,
	      (unsigned long long)weight,
	      (unsigned long long)t->ring.lost_insns, nw);
	hwt_vg_reader_free(&whole);
	hwt_vg_reader_free(&kept);
	free(big);
	free(s);
	free(pw);
	free(pk);
	free(aw);
	free(ak);
}

static struct hwt_vg_reader *parent_of(void *ctx, pid_t pid)
{
	struct family *f = ctx;

	return pid == f->parent_pid ? f->parent : NULL;
}

static void test_fork(void)
{
	static const uint64_t loop[] = { 0x1000, 0x1003, 0x1007 };
	static const uint64_t tail[] = { 0x1009, 0x2000, 0x2001 };
	static const uint64_t want[] = { 0x1000, 0x1003, 0x1007, 0x1009,
		0x2000, 0x2001 };
	struct hwt_vg_reader parent, child;
	struct family fam = { &parent, 10 };
	struct hwt_err err = { 0 };
	struct stream ps, cs;
	uint64_t pcs[64];
	bool async[64];
	size_t n = 0;
	int rc;

	start(&ps);
	sb(&ps, 0, loop, 3, NULL, NULL, 0);
	thread(&ps, HWT_VG_REC_THREAD, 10);
	run(&ps, 0);
	rec(&ps, HWT_VG_REC_FORKS);
	rec(&ps, HWT_VG_REC_END);
	start(&cs);
	rec(&cs, HWT_VG_REC_FORK);
	u(&cs, 10);
	u(&cs, 1);
	thread(&cs, HWT_VG_REC_THREAD, 11);
	run(&cs, 0);
	sb(&cs, 1, tail, 3, NULL, NULL, 0);
	run(&cs, 1);
	rec(&cs, HWT_VG_REC_END);
	reader_init(&parent, 1u << 20, &err);
	rc = reader_init(&child, 1u << 20, &err);
	child.parent_of = parent_of;
	child.parent_ctx = &fam;
	/* The child's stream first: it waits for the parent's. */
	if (rc == 0)
		rc = hwt_vg_reader_feed(&child, cs.b, cs.n, &err);
	CHECK("fork: a child read before its parent's translations waits",
	      rc == 0 && child.waiting_parent && child.nthreads == 0,
	      "rc %d (%s), waiting %d", rc, err.msg, child.waiting_parent);
	if (rc == 0)
		rc = hwt_vg_reader_feed(&parent, ps.b, ps.n, &err);
	CHECK("fork: an ended parent keeps its translations for a child yet "
	      "to take them", rc == 0 && parent.ended && parent.nsbs == 1,
	      "rc %d (%s), %zu translations", rc, err.msg, parent.nsbs);
	if (rc == 0)
		rc = hwt_vg_reader_feed(&child, NULL, 0, &err);
	CHECK("fork: once its one child has taken them, they go",
	      rc == 0 && parent.nsbs == 0, "rc %d (%s), %zu translations", rc,
	      err.msg, parent.nsbs);
	if (rc == 0)
		rc = hwt_vg_reader_finish(&child, &err);
	if (rc == 0 && child.nthreads == 1)
		n = history(&child.threads[0], pcs, async, 64);
	CHECK("fork: then its history runs the shared and its own "
	      "translations", rc == 0 && child.nthreads == 1 &&
	      child.threads[0].tid == 11 && same(pcs, n, want, 6),
	      "rc %d (%s), %zu instructions", rc, err.msg, n);
	hwt_vg_reader_free(&child);

	/* The parent ended with fewer translations than the child names. */
	cs.b[HWT_VG_MAGIC_LEN + 2] = 5;
	hwt_vg_reader_finish(&parent, &err);
	parent.ended = true;
	reader_init(&child, 1u << 20, &err);
	child.parent_of = parent_of;
	child.parent_ctx = &fam;
	rc = hwt_vg_reader_feed(&child, cs.b, cs.n, &err);
	CHECK("fork: more translations than the ended parent's is an error",
	      rc == -EINVAL && strstr(err.msg, "fork"), "rc %d (%s)", rc,
	      err.msg);
	hwt_vg_reader_free(&child);
	reader_init(&child, 1u << 20, &err);
	rc = hwt_vg_reader_feed(&child, cs.b, cs.n, &err);
	CHECK("fork: a child's stream where none is followed is an error",
	      rc == -EINVAL && strstr(err.msg, "forked child"), "rc %d (%s)",
	      rc, err.msg);
	hwt_vg_reader_free(&child);
	hwt_vg_reader_free(&parent);
}

/* The tests of streams, whichever way the reader keeps runs. */
static void test_streams(void)
{
	RUN(test_runs_and_exits);
	RUN(test_rep_iterations);
	RUN(test_implied_exits);
	RUN(test_threads_faults_signals);
	RUN(test_many_translations);
	RUN(test_exec);
	RUN(test_bound);
	RUN(test_modules);
	RUN(test_bad_streams);
	RUN(test_end_translations);
	RUN(test_fork);
}

int main(void)
{
	test_streams();
	/* Stops are live control's, which writes every run as it comes. */
	RUN(test_stops);
	RUN(test_log_window);
	RUN(test_kept_evict);
	defer_runs = true;
	check_prefix = "runs kept for later: ";
	test_streams();
	return check_exit();
}
