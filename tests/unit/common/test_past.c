// SPDX-License-Identifier: BSD-2-Clause
/* test_past.c - values of the past (common/hwt-past.h): the register log
 * gives back every entry across its blocks, the memory history gives the
 * bytes before any kept step and who wrote them, a data history file
 * reads back to the same answers, and a file cut short or inconsistent
 * anywhere is refused with a message, never half read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "check.h"
#include "past_pack.h"
#include "past_sample.h"

/* Thread 100's registers (fp: x87/SSE) before instruction index, as a
 * recorder's logs or a file give them. */
typedef int (*regs_of)(void *ctx, bool fp, uint64_t index, void *out);

static int sample_regs(void *ctx, bool fp, uint64_t index, void *out)
{
	struct past_sample *s = ctx;

	return hwt_reglog_get(fp ? &s->t[0].fpregs : &s->t[0].regs, index,
			      out);
}

static int file_regs(void *ctx, bool fp, uint64_t index, void *out)
{
	struct hwt_past *p = ctx;

	return hwt_past_regs(p, hwt_past_thread_of(p, 100), fp, index, out);
}

/* The answers past_sample.h promises, asked of h and of thread 100's
 * registers. */
static void check_answers(const char *what, const struct hwt_mem_history *h,
			  regs_of regs, void *ctx)
{
	struct user_regs_struct r;
	struct user_fpregs_struct fp;
	uint8_t b[4];
	bool ok = true;
	char name[160];
	int n;

	for (uint64_t i = 0; i < SAMPLE_REGS; i += 7)
		ok &= regs(ctx, false, i, &r) == 0 &&
		      r.rip == 0x400000 + 4 * i && r.rax == i * i &&
		      r.rsp == 0x7fff0000 - 8 * (i % 7);
	snprintf(name, sizeof(name), "%s: registers before every "
		 "instruction, across blocks", what);
	CHECK(name, ok && regs(ctx, false, SAMPLE_REGS, &r) == -ENOENT,
	      "a register entry differs");
	for (uint64_t i = 0; i < SAMPLE_REGS; i += 5)
		ok &= regs(ctx, true, i, &fp) == 0 &&
		      fp.xmm_space[0] == i / 3 && fp.mxcsr == 0x1f80;
	snprintf(name, sizeof(name), "%s: the x87/SSE state before every "
		 "instruction", what);
	CHECK(name, ok, "an x87/SSE entry differs");
	for (uint64_t i = 0; i < 10; i++) {
		n = hwt_mem_history_at(h, 100, i, 0x1000, b, 1);
		ok &= n == 1 && b[0] == (i ? i - 1 : 0xee);
		n = hwt_mem_history_at(h, 200, i, 0x1004, b, 1);
		ok &= n == 1 && b[0] == (i ? 10 + i - 1 : 0xee);
	}
	snprintf(name, sizeof(name), "%s: each thread's store target holds "
		 "what was there before each of its instructions", what);
	CHECK(name, ok, "a byte of the past differs");
	n = hwt_mem_history_at(h, 200, 10, 0x1004, b, 1);
	snprintf(name, sizeof(name), "%s: where the history ends, memory is "
		 "the present's", what);
	CHECK(name, n == 1 && b[0] == 19, "%d, %u", n, b[0]);
	n = hwt_mem_history_at(h, 100, 5, 0x2000, b, 4);
	snprintf(name, sizeof(name), "%s: bytes made unknown later are "
		 "unknown before", what);
	CHECK(name, n == 0, "%d", n);
	n = hwt_mem_history_at(h, 100, 5, 0x3001, b, 4);
	snprintf(name, sizeof(name), "%s: bytes no step touched are the "
		 "present's", what);
	CHECK(name, n == 4 && b[0] == ((0x01 ^ 0x5a) & 0xff), "%d", n);
	snprintf(name, sizeof(name), "%s: no memory for an instruction past "
		 "a thread's steps, nor for a thread not there", what);
	CHECK(name, hwt_mem_history_at(h, 200, 11, 0x3000, b, 1) == 0 &&
	      hwt_mem_history_at(h, 300, 0, 0x3000, b, 1) == -ENOENT,
	      "answered");
#define ANY HWT_MEM_NO_BOUND
	static const struct {
		const char *what;
		struct hwt_write_query q;
		int found;
		int32_t wtid;
		uint64_t windex, step;
	} finds[] = {
		{ "backward: the newest store that changed the bytes",
		  { 200, 10, -1, ANY, 0x1004, 1, ANY }, 1, 200, 9, 19 },
		{ "across threads: thread 100's last store, from thread "
		  "200's history", { 200, 3, -1, ANY, 0x1000, 4, ANY },
		  1, 100, 9, 9 },
		{ "forward: the store at the position itself first",
		  { 100, 5, 1, ANY, 0x1000, 1, ANY }, 1, 100, 5, 5 },
		{ "backward to a bound: the store at the bound is reached",
		  { 200, 10, -1, 9, 0x1004, 1, ANY }, 1, 200, 9, 19 },
		{ "backward to a bound: one before it is not",
		  { 200, 10, -1, 10, 0x1004, 1, ANY }, 0, 0, 0, 0 },
		{ "across threads, another thread's store before the bound "
		  "in the order of steps is not reached",
		  { 200, 3, -1, 0, 0x1000, 4, ANY }, 0, 0, 0, 0 },
		{ "forward to a bound: the store at it is not reached (not "
		  "executed)", { 100, 5, 1, 5, 0x1000, 1, ANY }, 0, 0, 0, 0 },
		{ "none before the first store", { 100, 0, -1, ANY,
		  0x1000, 1, ANY }, 0, 0, 0, 0 },
		{ "backward from a moment in the order of steps (another "
		  "thread's store found there), not from the thread's own "
		  "position", { 100, 5, -1, ANY, 0x1004, 1, 19 },
		  1, 200, 8, 18 },
		{ "a range of more than 64 bytes is refused",
		  { 100, 5, -1, ANY, 0x1000, 65, ANY }, -EINVAL, 0, 0,
		  0 },
	};
#undef ANY
	for (size_t i = 0; i < sizeof(finds) / sizeof(finds[0]); i++) {
		struct hwt_write_found w = { 0 };

		n = hwt_mem_history_find_write(h, &finds[i].q, &w);
		snprintf(name, sizeof(name), "%s: who wrote, %s", what,
			 finds[i].what);
		CHECK(name, n == finds[i].found && (n != 1 ||
		      (w.tid == finds[i].wtid && w.index == finds[i].windex &&
		       w.step == finds[i].step)), "%d %d %llu step %llu", n,
		      w.tid, (unsigned long long)w.index,
		      (unsigned long long)w.step);
	}
}

struct seen {
	size_t n;
	struct hwt_mem_write first, last;
};

static bool collect(void *ctx, const struct hwt_mem_write *w)
{
	struct seen *s = ctx;

	if (!s->n++)
		s->first = *w;
	s->last = *w;
	return true;
}

/* Every write to a range, newest first, and where the list must stop. */
static void test_writes(void)
{
	struct past_sample s;
	struct hwt_mem_thread threads[2];
	struct hwt_mem_history h;
	struct seen seen = { 0 };
	bool cut = true;
	int n;

	past_sample_build(&s);
	hwt_past_mem_view(&s.p, threads, sample_now, NULL, &h);
	n = hwt_mem_history_writes(&h, 0x1000, 4, collect, &seen, &cut);
	CHECK("writes: each store that changed the range, newest first, to "
	      "the history's start", n == 10 && seen.n == 10 && !cut &&
	      seen.first.tid == 100 && seen.first.index == 9 &&
	      seen.first.before[0] == 8 && seen.first.after[0] == 9 &&
	      seen.first.known[0] && seen.last.index == 0 &&
	      seen.last.before[0] == 0xee && seen.last.after[0] == 0,
	      "%d writes, cut %d, first %d:%llu", n, cut, seen.first.tid,
	      (unsigned long long)seen.first.index);
	CHECK("writes: bytes after a store the range does not cover are the "
	      "present's", seen.first.known[3] &&
	      seen.first.after[3] == sample_byte_now(0x1003), "%02x",
	      seen.first.after[3]);
	memset(&seen, 0, sizeof(seen));
	n = hwt_mem_history_writes(&h, 0x2ffc, 8, collect, &seen, &cut);
	CHECK("writes: a range made unknown stops the list, said so",
	      n == 0 && cut, "%d writes, cut %d", n, cut);
	CHECK("writes: a range of more than 64 bytes is refused",
	      hwt_mem_history_writes(&h, 0x1000, 65, collect, &seen, &cut) ==
	      -EINVAL, "accepted");
	past_sample_free(&s);
}

/* The sample as a file's bytes. */
static uint8_t *sample_bytes(size_t *len)
{
	struct past_sample s;
	struct hwt_err err = { 0 };
	uint8_t *data = NULL;

	past_sample_build(&s);
	CHECK("file: the sample formats", hwt_past_format(&s.p, &data, len,
	      &err) == 0, "%s", err.msg);
	past_sample_free(&s);
	return data;
}

static void test_views_and_file(void)
{
	static char path[] = "/tmp/hwt-test-past-XXXXXX";
	struct past_sample s;
	struct hwt_mem_thread threads[2];
	struct hwt_mem_history h;
	struct hwt_past *p = NULL;
	struct hwt_err err = { 0 };
	int fd = mkstemp(path);

	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	past_sample_build(&s);
	hwt_past_mem_view(&s.p, threads, sample_now, NULL, &h);
	check_answers("logs", &h, sample_regs, &s);
	CHECK("write: a data history file is written",
	      hwt_past_write(path, &s.p, &err) == 0, "%s", err.msg);
	CHECK("read: the file opens", hwt_past_read(path, &p, &err) == 0,
	      "%s", err.msg);
	if (p) {
		const struct hwt_past_thread *t100 = hwt_past_thread_of(p, 100);
		uint8_t b;

		CHECK("read: opening reads no register group and no store",
		      t100 && t100->groups[0][0].state == 0 &&
		      t100->groups[0][1].state == 0 && !p->e && !p->bytes &&
		      p->n == 21 && p->nbytes == 20, "groups %d %d, stores %p",
		      t100 ? t100->groups[0][0].state : -9,
		      t100 ? t100->groups[0][1].state : -9, (void *)p->e);
		hwt_past_mem_view(p, threads, sample_now, NULL, &h);
		CHECK("read: before its stores are read, no memory of the "
		      "past is known (not the present's)",
		      hwt_mem_history_at(&h, 100, 3, 0x1000, &b, 1) == 0,
		      "answered %u", b);
		CHECK("read: a register read reads its group only",
		      file_regs(p, false, SAMPLE_LATE, &(struct user_regs_struct){ 0 })
		      == 0 && t100->groups[0][0].state == 0 &&
		      t100->groups[0][1].state == 1, "groups %d %d",
		      t100->groups[0][0].state, t100->groups[0][1].state);
		CHECK("read: its stores read when asked",
		      hwt_past_memory(p, &err) == 0, "%s", err.msg);
		hwt_past_mem_view(p, threads, sample_now, NULL, &h);
		check_answers("file", &h, file_regs, p);
		CHECK("read: threads and their ends as written",
		      p->nthreads == 2 &&
		      hwt_past_thread_of(p, 200)->end_index == 10 &&
		      t100->regs.nblocks == HWT_PAST_GROUP_BLOCKS + 1 && t100->ngroups[0] == 2 &&
		      hwt_past_thread_of(p, 200)->fpregs.nwords == 0,
		      "%zu threads", p->nthreads);
		hwt_past_free(p);
	}
	if (hwt_past_read(path, &p, &err) == 0) {
		struct hwt_write_found w;
		struct hwt_write_query none = {
			200, 10, -1, HWT_MEM_NO_BOUND, 0x9000, 8,
			HWT_MEM_NO_BOUND,
		}, some = none;
		int rn, rs;

		some.addr = 0x1004;
		some.len = 1;
		CHECK("read beside: the stores read, their index built by a "
		      "thread meanwhile", hwt_past_memory_begin(p, &err) == 0,
		      "%s", err.msg);
		hwt_past_mem_view(p, threads, sample_now, NULL, &h);
		rn = hwt_mem_history_find_write(&h, &none, &w);
		rs = hwt_mem_history_find_write(&h, &some, &w);
		CHECK("read beside: who wrote walks the stores at once, and asks "
		      "for the index only at a store whose change it must "
		      "tell", h.index_pending && !h.index && rn == 0 &&
		      rs == -EAGAIN, "pending %d, %d %d", h.index_pending, rn,
		      rs);
		hwt_past_index_wait(p);
		hwt_past_mem_view(p, threads, sample_now, NULL, &h);
		CHECK("read beside: waited for, the index is there",
		      !h.index_pending && h.index, "pending %d",
		      h.index_pending);
		check_answers("file, indexed beside", &h, file_regs, p);
		hwt_past_free(p);
	}
	/* Freed while its index is being built: the thread is waited for
	 * (ASan would see it use freed stores). */
	if (hwt_past_read(path, &p, &err) == 0) {
		hwt_past_memory_begin(p, &err);
		hwt_past_free(p);
	}
	unlink(path);
	past_sample_free(&s);
}

/* The sample's file, and what its table (decoded) says. */
struct sample_file {
	uint8_t *file, *toc;
	size_t len, toc_len;
	uint64_t toc_at;
};

static bool sample_open(struct sample_file *f)
{
	unsigned long long size;
	uint64_t csize;

	memset(f, 0, sizeof(*f));
	if (!(f->file = sample_bytes(&f->len)))
		return false;
	f->toc_at = hwt_get_le64(f->file + f->len - 24);
	csize = hwt_get_le64(f->file + f->len - 16);
	size = ZSTD_getFrameContentSize(f->file + f->toc_at, csize);
	f->toc_len = (size_t)size;
	f->toc = malloc(f->toc_len);
	return f->toc && ZSTD_decompress(f->toc, f->toc_len, f->file + f->toc_at,
					 csize) == f->toc_len;
}

static void sample_close(struct sample_file *f)
{
	free(f->file);
	free(f->toc);
}

/* Stores packed as docs/bundle.md tells, in whatever order they come (the
 * recorder's packer refuses stores out of order): each a number each for
 * its step's and address's differences from the store before, its length
 * with the unknown and other-thread flags, its thread if other, its old
 * bytes' place against where the store before left off. */
static void put_number(struct hwt_bytes *out, uint64_t v)
{
	uint8_t b[10];

	hwt_bytes_put(out, b, hwt_put_uleb128(b, v));
}

static uint64_t zig(uint64_t d)
{
	return d << 1 ^ (uint64_t)((int64_t)d >> 63);
}

static void pack_stores_as_told(const struct hwt_mem_entry *e, size_t n,
				struct hwt_bytes *out)
{
	uint64_t seq = 0, addr = 0, next = 0;
	uint32_t tid = 0;

	for (size_t i = 0; i < n; i++) {
		bool unknown = e[i].off == HWT_MEM_UNKNOWN;
		bool other = (uint32_t)e[i].tid != tid;

		put_number(out, e[i].seq - seq);
		put_number(out, zig(e[i].addr - addr));
		put_number(out, e[i].len << 2 | (uint64_t)unknown << 1 | other);
		if (other)
			put_number(out, (uint32_t)e[i].tid);
		if (!unknown) {
			put_number(out, zig(e[i].off - next));
			next = e[i].off + e[i].len;
		}
		seq = e[i].seq;
		addr = e[i].addr;
		tid = (uint32_t)e[i].tid;
	}
}

/* f's file with frame (n bytes, raw; NULL: none) put before its table,
 * the table's u64 at frame_ref (if frame) pointing at it, and its u64 at
 * at set to v (at SIZE_MAX: none). */
static uint8_t *rebuilt(const struct sample_file *f, const void *frame,
			size_t n, size_t frame_ref, size_t at, uint64_t v,
			size_t *len)
{
	size_t bound = ZSTD_compressBound(n) + ZSTD_compressBound(f->toc_len);
	uint8_t *toc = malloc(f->toc_len), *out = malloc(f->toc_at + bound + 24);
	size_t pos = (size_t)f->toc_at, k;

	if (!toc || !out) {
		free(toc);
		free(out);
		return NULL;
	}
	memcpy(out, f->file, pos);
	memcpy(toc, f->toc, f->toc_len);
	if (frame) {
		k = ZSTD_compress(out + pos, bound, frame, n, 1);
		hwt_put_le64(toc + frame_ref, pos);
		hwt_put_le64(toc + frame_ref + 8, k);
		pos += k;
	}
	if (at != SIZE_MAX)
		hwt_put_le64(toc + at, v);
	k = ZSTD_compress(out + pos, bound, toc, f->toc_len, 1);
	hwt_put_le64(out + pos + k, pos);
	hwt_put_le64(out + pos + k + 8, k);
	memcpy(out + pos + k + 16, "HWTPEND2", 8);
	*len = pos + k + 24;
	free(toc);
	return out;
}

/* Every cut of the file and a damaged table are refused with a message;
 * a damaged frame leaves what it holds unknown, and the rest answers. */
static void test_damaged_file(void)
{
	struct sample_file f;
	struct hwt_past *p;
	struct hwt_err err = { 0 };
	size_t refused = 0, tried = 0;

	if (!sample_open(&f)) {
		CHECK("file: the sample's table decodes", false, "no");
		sample_close(&f);
		return;
	}
	/* Every cut near its ends (magic, table, trailer), one in 61
	 * between (each loads a copy of the file). */
	for (size_t cut = 0; cut < f.len; cut++) {
		if (cut > 64 && cut + 256 < f.len && cut % 61)
			continue;
		tried++;
		err.msg[0] = '\0';
		if (hwt_past_load(f.file, cut, &p, &err) == -EBADMSG &&
		    err.msg[0] && !p)
			refused++;
		else
			hwt_past_free(p);
	}
	CHECK("file: every cut of it is refused with a message",
	      refused == tried, "%zu of %zu", refused, tried);
	f.file[f.toc_at + 8] ^= 0x40;
	err.msg[0] = '\0';
	CHECK("file: a byte changed in its table is refused",
	      hwt_past_load(f.file, f.len, &p, &err) == -EBADMSG && !p &&
	      strstr(err.msg, "data history"), "%s", err.msg);
	f.file[f.toc_at + 8] ^= 0x40;
	{
		/* Thread 100's second register group: its frame is at the
		 * table's byte 112 (after header, thread, run and the first
		 * group's reference). */
		uint64_t at = hwt_get_le64(f.toc + 112);
		struct user_regs_struct r;
		uint8_t b;
		struct hwt_mem_thread threads[2];
		struct hwt_mem_history h;

		f.file[at + 20] ^= 0x40;
		CHECK("file: a byte changed in a register group: it opens",
		      hwt_past_load(f.file, f.len, &p, &err) == 0, "%s",
		      err.msg);
		f.file[at + 20] ^= 0x40;
		if (p) {
			CHECK("file: that group's registers are unavailable, "
			      "the other group's and memory answer",
			      file_regs(p, false, SAMPLE_LATE, &r) == -EBADMSG &&
			      file_regs(p, false, SAMPLE_LATE, &r) == -EBADMSG &&
			      file_regs(p, false, 700, &r) == 0 &&
			      r.rip == 0x400000 + 4 * 700 &&
			      hwt_past_memory(p, &err) == 0, "%s", err.msg);
			hwt_past_free(p);
		}
		at = hwt_get_le64(f.toc + f.toc_len - 40);
		f.file[at + 20] ^= 0x40;
		CHECK("file: a byte changed in its stores: it opens",
		      hwt_past_load(f.file, f.len, &p, &err) == 0, "%s",
		      err.msg);
		f.file[at + 20] ^= 0x40;
		if (p) {
			err.msg[0] = '\0';
			CHECK("file: its memory is then unknown, said so, and "
			      "its registers answer",
			      hwt_past_memory(p, &err) == -EBADMSG &&
			      strstr(err.msg, "stores") &&
			      file_regs(p, false, 700, &r) == 0, "%s",
			      err.msg);
			hwt_past_mem_view(p, threads, sample_now, NULL, &h);
			CHECK("file: memory of the past unknown, not the "
			      "present's",
			      hwt_mem_history_at(&h, 100, 3, 0x1000, &b, 1) ==
			      0, "answered %u", b);
			hwt_past_free(p);
		}
	}
	sample_close(&f);
}

/* A damaged field of each kind in the table is refused with a message
 * and where; in a register group or the stores, what it holds is
 * unknown. */
static void test_damage(void)
{
	struct sample_file f;
	struct hwt_past *p = NULL;
	struct hwt_err err = { 0 };
	/* Byte offsets of fields in the sample's table: horizon, threads,
	 * then thread 100: tid, end, newest step, runs (one), its register
	 * log: words, first, count, groups (two), then their frames. */
	const size_t threads_at = 8, tid0_at = 16, nruns0_at = 40,
		     nwords0_at = 64, nregs0_at = 80, group0_at = 96;
	uint8_t *file;
	size_t len;

	if (!sample_open(&f)) {
		sample_close(&f);
		return;
	}
	struct { const char *what; size_t at; uint64_t v; } bad[] = {
		{ "more threads than a bundle holds", threads_at, 5000 },
		{ "a thread of tid 0", tid0_at, 0 },
		{ "a count of runs beyond the table", nruns0_at, 1ull << 40 },
		{ "a register log of an unknown register set", nwords0_at, 5 },
		{ "a register log whose groups do not add up", nregs0_at, 5 },
		{ "a register group outside the file", group0_at, 1ull << 40 },
		{ "a count of stores out of bounds", f.toc_len - 48,
		  1ull << 40 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[128];
		int rc = -1;

		p = NULL;
		if ((file = rebuilt(&f, NULL, 0, 0, bad[i].at, bad[i].v,
				    &len))) {
			err.msg[0] = '\0';
			rc = hwt_past_load(file, len, &p, &err);
		}
		snprintf(name, sizeof(name), "damage: %s is refused",
			 bad[i].what);
		CHECK(name, rc == -EBADMSG && !p && strstr(err.msg, "at byte"),
		      "%d: %s", rc, err.msg);
		if (rc == 0)
			hwt_past_free(p);
		free(file);
	}
	{
		/* Thread 100's first group, decoded: block 0's count, then
		 * its first delta's mask (4 bytes for 27 words) after the
		 * count, delta bytes and key. */
		struct hwt_frame_ref g = { hwt_get_le64(f.toc + group0_at),
					   hwt_get_le64(f.toc + group0_at + 8) };
		size_t n = (size_t)ZSTD_getFrameContentSize(f.file + g.off,
							     g.csize);
		uint8_t *raw = malloc(n), *spliced;
		const uint8_t *mask_at;
		uint64_t mask;
		struct user_regs_struct r;

		if (!raw || ZSTD_decompress(raw, n, f.file + g.off, g.csize) != n) {
			CHECK("damage: the sample's group decodes", false, "no");
			free(raw);
			sample_close(&f);
			return;
		}
		/* Block 0's count, 1024, is two bytes: 5 in two bytes. */
		CHECK("damage: the sample's first block counts 1024",
		      n > 2 && raw[0] == 0x80 && raw[1] == 0x08, "%02x %02x",
		      raw[0], raw[1]);
		raw[0] = 0x85;
		raw[1] = 0x00;
		file = rebuilt(&f, raw, n, group0_at, SIZE_MAX, 0, &len);
		CHECK("damage: a register block of a wrong count: its group's "
		      "registers unavailable, the next group's answer",
		      file && hwt_past_load(file, len, &p, &err) == 0 &&
		      file_regs(p, false, 5, &r) == -EBADMSG &&
		      file_regs(p, false, SAMPLE_LATE, &r) == 0, "%s", err.msg);
		hwt_past_free(p);
		free(file);
		raw[0] = 0x80;
		raw[1] = 0x08;
		/* The first delta's mask (a number after the count and the
		 * key) names bit 27 too, past the general registers. */
		mask_at = raw + 2 + 8 * HWT_REGLOG_GPR_WORDS;
		spliced = malloc(n + 10);
		if (spliced && hwt_get_uleb128(&mask_at, raw + n, &mask) == 1) {
			size_t head = (size_t)(mask_at - raw), k;

			k = (size_t)(raw + 2 + 8 * HWT_REGLOG_GPR_WORDS - raw);
			memcpy(spliced, raw, k);
			k += hwt_put_uleb128(spliced + k, mask | 1ull << 27);
			memcpy(spliced + k, raw + head, n - head);
			file = rebuilt(&f, spliced, k + n - head, group0_at,
				       SIZE_MAX, 0, &len);
		} else {
			file = NULL;
		}
		CHECK("damage: a register delta naming a word past the set: "
		      "its group's registers unavailable", file &&
		      hwt_past_load(file, len, &p, &err) == 0 &&
		      file_regs(p, false, 5, &r) == -EBADMSG, "%s", err.msg);
		hwt_past_free(p);
		free(file);
		free(spliced);
		free(raw);
	}
	{
		/* The stores, decoded (21, their old bytes 20), changed,
		 * packed again as the format says, whatever they hold. */
		size_t ref = f.toc_len - 40;
		struct hwt_frame_ref g = { hwt_get_le64(f.toc + ref),
					   hwt_get_le64(f.toc + ref + 8) };
		size_t n = (size_t)ZSTD_getFrameContentSize(f.file + g.off,
							     g.csize), at;
		uint8_t *raw = malloc(n);
		struct hwt_mem_entry e[21];
		const char *wrong;
		static const struct { const char *what; size_t i; int field;
				      uint64_t v; }
		stores[] = {
			{ "stores out of order", 20, 0, 0 },
			{ "old bytes outside the file", 0, 1, 1 << 20 },
		};

		CHECK("damage: the sample's stores decode",
		      raw && ZSTD_decompress(raw, n, f.file + g.off, g.csize) ==
		      n && hwt_past_unpack_stores(raw, raw + n, e, 21,
						  20, &wrong, &at) == 0,
		      "store %zu", at);
		for (size_t i = 0; i < sizeof(stores) / sizeof(stores[0]);
		     i++) {
			struct hwt_mem_entry d[21];
			struct hwt_bytes packed = { 0 };
			char name[128];

			memcpy(d, e, sizeof(d));
			if (stores[i].field == 0)
				d[stores[i].i].seq = stores[i].v;
			else
				d[stores[i].i].off = stores[i].v;
			pack_stores_as_told(d, 21, &packed);
			file = packed.p ? rebuilt(&f, packed.p, packed.n, ref,
						  SIZE_MAX, 0, &len) : NULL;
			err.msg[0] = '\0';
			snprintf(name, sizeof(name), "damage: %s: memory "
				 "unknown, said so", stores[i].what);
			CHECK(name, file && hwt_past_load(file, len, &p, &err) ==
			      0 && hwt_past_memory(p, &err) == -EBADMSG &&
			      strstr(err.msg, stores[i].what), "%s", err.msg);
			hwt_past_free(p);
			free(file);
			hwt_bytes_free(&packed);
		}
		free(raw);
	}
	sample_close(&f);
}

/* A log handed to a writer as it grows: what is written is released,
 * memory holds about a group, and the file reads back every entry; a
 * log that starts again (a gap in its entries) has only its new part
 * named in the file. */
static void test_writer(void)
{
	static char path[] = "/tmp/hwt-test-past-w-XXXXXX";
	const uint64_t total = 8 * HWT_PAST_GROUP_BLOCKS * HWT_REGLOG_BLOCK +
			       777, restart = 5000000;
	struct hwt_past_thread t = { .tid = 7 };
	struct hwt_past p = { .threads = &t, .nthreads = 1 };
	struct hwt_past_writer *w = NULL;
	struct hwt_past *back = NULL;
	struct hwt_err err = { 0 };
	struct user_regs_struct r;
	size_t most = 0, wrong = 0;
	int fd = mkstemp(path), rc = 0;

	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	hwt_reglog_init(&t.regs, HWT_REGLOG_GPR_WORDS, SIZE_MAX);
	CHECK("writer: opens", hwt_past_writer_open(path, &w, &err) == 0,
	      "%s", err.msg);
	if (!w)
		return;
	memset(&r, 0, sizeof(r));
	/* A first part of 2 groups, then (a gap) the log starts again. */
	for (uint64_t i = 0; i < 2 * HWT_PAST_GROUP_BLOCKS * HWT_REGLOG_BLOCK +
			      5 && rc == 0; i++) {
		r.rip = 0xdead0000 + i;
		hwt_reglog_append(&t.regs, i, &r);
		rc = hwt_past_writer_flush(w, 0, &t);
	}
	for (uint64_t i = 0; i < total && rc == 0; i++) {
		r.rip = 0x400000 + 4 * i;
		r.rax = i * 7;
		r.rcx = i / 3;
		hwt_reglog_append(&t.regs, restart + i, &r);
		if (t.regs.blocks[t.regs.nblocks - 1].count == 1)
			rc = hwt_past_writer_flush(w, 0, &t);
		if (t.regs.bytes > most)
			most = t.regs.bytes;
	}
	t.end_index = restart + total - 1;
	CHECK("writer: groups flushed as the log grows", rc == 0, "%d", rc);
	/* Entries of about 28 bytes, their blocks' room up to twice that:
	 * 8 groups would take 7 MB. */
	CHECK("writer: the log held about a group at most, not the whole",
	      most < (HWT_PAST_GROUP_BLOCKS + 2) * 64 * HWT_REGLOG_BLOCK,
	      "%zu bytes", most);
	CHECK("writer: written blocks answer nothing more in memory",
	      hwt_reglog_get(&t.regs, restart + 5, &r) == -ENOENT, "answered");
	CHECK("writer: finishes", hwt_past_writer_finish(w, &p, &err) == 0,
	      "%s", err.msg);
	hwt_reglog_free(&t.regs);
	CHECK("writer: the file opens", hwt_past_read(path, &back, &err) == 0,
	      "%s", err.msg);
	if (back) {
		const struct hwt_past_thread *bt = &back->threads[0];

		for (uint64_t i = 0; i < total; i += 13)
			wrong += hwt_past_regs(back, bt, false, restart + i,
					       &r) != 0 ||
				 r.rip != 0x400000 + 4 * i || r.rax != i * 7 ||
				 r.rcx != i / 3;
		CHECK("writer: every entry reads back from the file, the part "
		      "before the log started again not", wrong == 0 &&
		      bt->regs.first == restart && bt->regs.n == total &&
		      hwt_past_regs(back, bt, false, 100, &r) == -ENOENT,
		      "%zu wrong, first %llu, n %llu", wrong,
		      (unsigned long long)bt->regs.first,
		      (unsigned long long)bt->regs.n);
		hwt_past_free(back);
	}
	unlink(path);
}

static uint64_t rnd(uint64_t n);

/* Packed, registers read back exactly whatever they hold: a pc that
 * jumps back and forth by any amount, words that change at random (every
 * one at times), an x87/SSE state that mostly does not; and stores
 * of any thread, address and length, some unknown. */
static void test_packed(void)
{
	const uint64_t total = 3 * HWT_REGLOG_BLOCK + 123;
	struct hwt_past_thread t = { .tid = 9, .end_index = total - 1 };
	struct hwt_mem_entry e[300];
	uint8_t bytes[300 * 8];
	struct hwt_past p = { .threads = &t, .nthreads = 1, .e = e, .n = 300,
			      .bytes = bytes };
	struct hwt_past *back = NULL;
	struct hwt_err err = { 0 };
	uint64_t words[HWT_REGLOG_FP_WORDS] = { 0 }, got[HWT_REGLOG_FP_WORDS];
	struct user_regs_struct r;
	uint8_t *data = NULL;
	size_t len = 0, wrong = 0, wrong_fp = 0, wrong_mem = 0;

	hwt_reglog_init(&t.regs, HWT_REGLOG_GPR_WORDS, SIZE_MAX);
	hwt_reglog_init(&t.fpregs, HWT_REGLOG_FP_WORDS, SIZE_MAX);
	memset(&r, 0, sizeof(r));
	for (uint64_t i = 0; i < total; i++) {
		uint64_t *w = (uint64_t *)&r;

		r.rip = i % 5 == 0 ? rnd(UINT64_MAX) : r.rip - 40 + rnd(80);
		for (unsigned k = 0; k < HWT_REGLOG_GPR_WORDS; k++)
			if (i % 97 == 0 || rnd(9) == 0)
				w[k] = rnd(4) ? rnd(1000) : rnd(UINT64_MAX);
		hwt_reglog_append(&t.regs, i, &r);
		if (rnd(20) == 0)
			words[rnd(HWT_REGLOG_FP_WORDS)] = rnd(UINT64_MAX);
		hwt_reglog_append(&t.fpregs, i, words);
	}
	for (size_t i = 0; i < 300; i++) {
		e[i] = (struct hwt_mem_entry){
			.seq = i * 3 + rnd(3), .addr = rnd(2) ? 0x7000 + rnd(64) :
			rnd(UINT64_MAX / 2), .len = 1 + rnd(8),
			.off = rnd(7) ? i * 8 : HWT_MEM_UNKNOWN,
			.tid = rnd(3) ? 9 : 10,
		};
		bytes[i * 8] = (uint8_t)i;
	}
	p.nbytes = sizeof(bytes);
	CHECK("packed: a history with any values is written",
	      hwt_past_format(&p, &data, &len, &err) == 0 &&
	      hwt_past_load(data, len, &back, &err) == 0, "%s", err.msg);
	if (back) {
		const struct hwt_past_thread *bt = &back->threads[0];

		for (uint64_t i = 0; i < total; i++) {
			struct user_regs_struct want;
			uint64_t fp_want[HWT_REGLOG_FP_WORDS];

			hwt_reglog_get(&t.regs, i, &want);
			hwt_reglog_get(&t.fpregs, i, fp_want);
			wrong += hwt_past_regs(back, bt, false, i, &r) != 0 ||
				 memcmp(&r, &want, sizeof(r));
			wrong_fp += hwt_past_regs(back, bt, true, i, got) != 0 ||
				    memcmp(got, fp_want, sizeof(got));
		}
		if (hwt_past_memory(back, &err) == 0)
			for (size_t i = 0; i < 300; i++)
				wrong_mem += back->e[i].seq != e[i].seq ||
					     back->e[i].addr != e[i].addr ||
					     back->e[i].len != e[i].len ||
					     back->e[i].off != e[i].off ||
					     back->e[i].tid != e[i].tid;
		CHECK("packed: every register entry and store reads back "
		      "exactly", wrong == 0 && wrong_fp == 0 && wrong_mem == 0 &&
		      back->n == 300, "%zu, %zu x87/SSE, %zu stores wrong "
		      "(%s)", wrong, wrong_fp, wrong_mem, err.msg);
		hwt_past_free(back);
	}
	{
		/* Stores out of step order cannot be packed. */
		uint64_t seq = e[5].seq;
		uint8_t *d2 = NULL;
		size_t l2 = 0;

		e[5].seq = e[4].seq - 1;
		CHECK("packed: stores out of order are not written",
		      hwt_past_format(&p, &d2, &l2, &err) < 0, "written");
		e[5].seq = seq;
		free(d2);
	}
	if (data && len > 8) {
		memcpy(data, HWT_PAST_MAGIC_OLD, 8);
		err.msg[0] = '\0';
		CHECK("packed: a file of format 2 is refused by name",
		      hwt_past_load(data, len, &back, &err) == -EBADMSG &&
		      !back && strstr(err.msg, "format 2"), "%s", err.msg);
	}
	free(data);
	hwt_reglog_free(&t.regs);
	hwt_reglog_free(&t.fpregs);
}

/* A thread's place at each step of the order of all threads: its own
 * instruction there, and, at another thread's step between two of its
 * runs, its next run's first instruction (the one it has yet to take). */
static void test_place(void)
{
	/* Thread 1 takes steps 0..4 and 10..14, thread 2 steps 5..9. */
	static const struct hwt_mem_run runs1[] = { { 0, 0 }, { 5, 10 } },
					runs2[] = { { 0, 5 } };
	const struct hwt_mem_thread threads[] = {
		{ .tid = 1, .runs = runs1, .nruns = 2, .last_seq = 14 },
		{ .tid = 2, .runs = runs2, .nruns = 1, .last_seq = 9 },
	};
	const struct hwt_mem_history h = { .threads = threads,
					   .nthreads = 2 };
	static const uint64_t want1[] = { 0, 1, 2, 3, 4, 5, 5, 5, 5, 5, 5, 6,
					  7, 8, 9, 10, 10 },
			      want2[] = { 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 5,
					  5, 5, 5, 5, 5 };
	size_t bad = 0;
	uint64_t index;

	for (uint64_t step = 0; step < 17; step++) {
		bad += !hwt_mem_history_index_at(&h, 1, step, &index) ||
		       index != want1[step];
		bad += !hwt_mem_history_index_at(&h, 2, step, &index) ||
		       index != want2[step];
	}
	CHECK("a thread's place between its runs is its next run", bad == 0,
	      "%zu places differ", bad);
}

/* A log past its bound keeps its newest entries, right, within the
 * bound and not far below it, however long it runs. */
static void test_reglog_bound(void)
{
	const size_t cap = 256u << 10;
	struct hwt_reglog l;
	struct user_regs_struct r;
	size_t over = 0, low = 0, wrong = 0;
	const uint64_t total = 200000;

	hwt_reglog_init(&l, HWT_REGLOG_GPR_WORDS, cap);
	memset(&r, 0, sizeof(r));
	for (uint64_t i = 0; i < total; i++) {
		r.rip = 0x400000 + 4 * i;
		r.rax = i * 3;
		r.rbx = i / 5;
		hwt_reglog_append(&l, i, &r);
		over += l.bytes > cap;
		/* Once full, a drop leaves 7/8 of the bound less a block. */
		low += i > 50000 && l.bytes < cap / 2;
	}
	for (uint64_t i = l.first; i < total; i += 97)
		wrong += hwt_reglog_get(&l, i, &r) != 0 ||
			 r.rip != 0x400000 + 4 * i || r.rax != i * 3 ||
			 r.rbx != i / 5;
	CHECK("register log: past its bound it keeps the newest entries, "
	      "right, within the bound and near it", over == 0 &&
	      low == 0 && wrong == 0 && l.first > 0 &&
	      l.first + l.n == total && hwt_reglog_get(&l, l.first - 1, &r) ==
	      -ENOENT, "%zu appends over, %zu far below, %zu wrong, "
	      "first %llu, n %llu", over, low, wrong,
	      (unsigned long long)l.first, (unsigned long long)l.n);
	hwt_reglog_free(&l);
}

/* Entries appended as unchanged (hwt_reglog_append_same) read back as
 * the entry before them, across block boundaries, after a change and
 * after a gap that starts the log again. */
static void test_reglog_same(void)
{
	struct hwt_reglog l;
	struct user_regs_struct r;
	size_t wrong = 0;
	const uint64_t total = 3 * HWT_REGLOG_BLOCK + 17, gap = 5000;

	hwt_reglog_init(&l, HWT_REGLOG_GPR_WORDS, SIZE_MAX);
	memset(&r, 0, sizeof(r));
	for (uint64_t i = 0; i < total; i++) {
		uint64_t at = i < total / 2 ? i : gap + i;

		/* Every seventh entry changes; the one after a gap too. */
		if (i % 7 == 0 || i == total / 2) {
			r.rax = i;
			hwt_reglog_append(&l, at, &r);
		} else {
			hwt_reglog_append_same(&l, at, &r);
		}
	}
	for (uint64_t i = total / 2; i < total; i++) {
		uint64_t want = i % 7 == 0 || i == total / 2 ? i :
				(i / 7 * 7 > total / 2 ? i / 7 * 7 : total / 2);

		wrong += hwt_reglog_get(&l, gap + i, &r) != 0 || r.rax != want;
	}
	CHECK("register log: entries appended as unchanged read back as the "
	      "one before, across blocks and after a gap", wrong == 0 &&
	      l.first == gap + total / 2 && l.n == total - total / 2,
	      "%zu wrong, first %llu, n %llu", wrong,
	      (unsigned long long)l.first, (unsigned long long)l.n);
	hwt_reglog_free(&l);
}

static uint64_t rnd_state = 42;

static uint64_t rnd(uint64_t n)
{
	rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
	return (rnd_state >> 17) % n;
}

static size_t index_now(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	/* A hole at 0x1300..0x1340: memory the present does not have. */
	for (size_t i = 0; i < len; i++) {
		if (addr + i >= 0x1300 && addr + i < 0x1340)
			return i;
		((uint8_t *)buf)[i] = (uint8_t)((addr + i) * 7);
	}
	return len;
}

/* Memory at any point, found through the address index (over all the
 * stores, or the older half with the newer walked), is what walking every
 * store gives: random stores of 1 to 20 bytes, aligned or not, across
 * granules, several at a step, some unknown, some wider than a page. */
/* Where test_index's narrow stores lie: addresses that differ in every
 * digit the index sorts by, and two far past any program's, the last
 * near the address space's end (a history's stores never wrap round
 * it: hwt_past_unpack_stores refuses them). */
static const uint64_t index_region[5] = {
	0x1000, 0x5a5a5a5a000, 0x7ffd12345000, 1ull << 59 | 0x1000,
	UINT64_MAX - 0x800,
};

static void test_index(void)
{
	enum { N = 4000, QUERIES = 4000 };
	struct hwt_mem_entry *e = calloc(N, sizeof(*e));
	uint8_t *bytes = malloc(N * 8192);
	struct hwt_mem_run run = { 0, 0 };
	struct hwt_mem_thread th = { .tid = 1, .runs = &run, .nruns = 1 };
	struct hwt_mem_history walk = { .e = e, .n = N, .bytes = bytes,
					.threads = &th, .nthreads = 1,
					.read_now = index_now }, fast, half;
	struct hwt_mem_index *all = NULL, *older = NULL;
	size_t off = 0, bad = 0, badw = 0, known = 0;
	uint64_t seq = 1;

	for (size_t i = 0; i < N; i++) {
		seq += rnd(3) ? 1 : 0;
		e[i].seq = seq;
		e[i].tid = 1;
		e[i].len = rnd(50) ? 1 + rnd(20) : 4097 + rnd(2000);
		e[i].addr = e[i].len > 4096 ? 0x800 + rnd(0x400)
					    : index_region[rnd(5)] + rnd(0x400);
		e[i].off = rnd(40) ? off : HWT_MEM_UNKNOWN;
		if (e[i].off != HWT_MEM_UNKNOWN)
			for (uint64_t k = 0; k < e[i].len; k++)
				bytes[off++] = (uint8_t)rnd(256);
	}
	th.last_seq = seq + 1;
	CHECK("index: built", hwt_mem_index_build(e, N, &all) == 0 &&
	      hwt_mem_index_build(e, N / 2, &older) == 0 &&
	      hwt_mem_index_count(all) == N, "build failed");
	if (!all || !older)
		goto out;
	fast = walk;
	fast.index = all;
	half = walk;
	half.index = older;
	for (size_t q = 0; q < QUERIES; q++) {
		uint64_t at = rnd(seq + 2), len = 1 + rnd(q % 10 ? 40 : 3000),
			 addr = q % 3 ? 0x7f0 + rnd(0xc40) :
			 index_region[rnd(5)] - 0x10 + rnd(0x400);
		uint8_t a[3000], b[3000], c[3000];
		int na = hwt_mem_history_at(&walk, 1, at, addr, a, len),
		    nb = hwt_mem_history_at(&fast, 1, at, addr, b, len),
		    nc = hwt_mem_history_at(&half, 1, at, addr, c, len);

		known += na > 0;
		bad += na != nb || na != nc || (na > 0 &&
		       (memcmp(a, b, (size_t)na) || memcmp(a, c, (size_t)na)));
	}
	for (size_t q = 0; q < 400; q++) {
		struct hwt_write_query wq = {
			.tid = 1, .from = rnd(seq + 2), .dir = rnd(2) ? 1 : -1,
			.until = HWT_MEM_NO_BOUND,
			.addr = index_region[rnd(5)] + rnd(0x400),
			.len = 1 + rnd(16), .from_step = HWT_MEM_NO_BOUND,
		};
		struct hwt_write_found x = { 0 }, y = { 0 };
		int rx = hwt_mem_history_find_write(&walk, &wq, &x),
		    ry = hwt_mem_history_find_write(&fast, &wq, &y);

		badw += rx != ry || x.step != y.step || x.index != y.index;
	}
	CHECK("index: memory at every point is what walking every store "
	      "gives", bad == 0 && known > QUERIES / 4, "%zu of %d differ "
	      "(%zu with bytes known)", bad, QUERIES, known);
	CHECK("index: who wrote finds the same stores", badw == 0,
	      "%zu of 400 differ", badw);
out:
	hwt_mem_index_free(all);
	hwt_mem_index_free(older);
	free(e);
	free(bytes);
}

int main(void)
{
	RUN(test_place);
	RUN(test_reglog_bound);
	RUN(test_reglog_same);
	RUN(test_index);
	RUN(test_views_and_file);
	RUN(test_writer);
	RUN(test_packed);
	RUN(test_writes);
	RUN(test_damaged_file);
	RUN(test_damage);
	return check_exit();
}
