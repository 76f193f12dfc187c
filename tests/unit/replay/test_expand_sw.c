// SPDX-License-Identifier: BSD-2-Clause
/* test_expand_sw.c - hwt-sw chunks of branch records (block-step, flag
 * HWT_SW_CHUNK_BRANCHES) expanded with the image (replay/expand_sw.c).
 *
 * Real exact histories of the test programs, recorded with the ptrace
 * backend, are cut down to the records block-step writes and expanded
 * back; the result must be the recorded history address for address, also
 * with single steps mixed in and through hwtrace.ko's block format
 * (collect/module/format.c). Hand-made code covers every walking rule, an
 * unreachable record (a gap, then the history goes on), chunk borders,
 * corrupt chunks and garbage. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "collect_util.h"
#include "hwt-collect.h"
#include "hwt-replay.h"
#include "replay-int.h"
#include "module/module.h"
#include "self_image.h"

static char progdir[PATH_MAX];

/* ---- building traces ------------------------------------------------- */

struct tbuf {
	uint8_t *p;
	size_t n, cap;
};

static void tb_put(struct tbuf *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 4096;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

/* A chunk being written into a tbuf. */
struct chunk {
	struct tbuf *out;
	size_t at;
	struct hwt_sw_chunk_hdr h;
};

static void ch_begin(struct chunk *c, struct tbuf *out, uint64_t pc,
		     uint64_t seq, uint32_t flags)
{
	uint8_t z[HWT_SW_CHUNK_HDR_SIZE] = { 0 };

	c->out = out;
	c->at = out->n;
	c->h = (struct hwt_sw_chunk_hdr){ .first_pc = pc, .first_seq = seq,
		.last_pc = pc, .insn_count = 1, .flags = flags };
	tb_put(out, z, sizeof(z));
}

static void ch_rec(struct chunk *c, uint64_t next, bool async)
{
	uint8_t r[HWT_SW_MAX_RECORD + 1];
	size_t n = hwt_sw_encode_step(c->h.last_pc, next, async, r);

	tb_put(c->out, r, n);
	c->h.payload_size += (uint32_t)n;
	c->h.last_pc = next;
	c->h.insn_count++;
}

static void ch_end(struct chunk *c)
{
	hwt_sw_chunk_hdr_pack(&c->h, c->out->p + c->at);
}

/* ---- block-step records from an exact history ------------------------ */

/* Whether block-step records the instruction i of hs: one reached by a
 * taken branch (the next address is not the previous instruction's
 * fall-through, or there is no code to tell; jumps, calls and returns
 * always branch, even to the next instruction) or by a system call (the
 * module records after every one), and a handler's entry (async). The
 * module also knows where a signal interrupted the thread (the system
 * call's exit, or the trap): the nearest an exact history has is the
 * instruction before the handler, kept too. steps: also keep about one
 * in four others, as single steps. */
static bool keep1(struct hwt_image *img, const struct history *hs, size_t i,
		  uint64_t *steps)
{
	struct hwt_insn in;

	if (hs->async[i] || (i + 1 < hs->n && hs->async[i + 1]))
		return true;
	if (hwt_image_insn(img, hs->pc[i - 1], false, &in) ||
	    (in.cls != HWT_INSN_OTHER && in.cls != HWT_INSN_CJUMP) ||
	    hs->pc[i] != hs->pc[i - 1] + in.len)
		return true;
	return *steps && xorshift64(steps) % 4 == 0;
}

/* The target of the direct branch at addr, 0 for any other: worked out
 * here from Zydis's decoded operands, apart from the raw-immediate path
 * replay takes. */
static uint64_t direct_target(struct hwt_image *img, uint64_t addr)
{
	static ZydisDecoder dec;
	static bool ready;
	uint8_t code[HWT_MAX_INSN];
	size_t len = hwt_image_read(img, addr, code, sizeof(code));
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZyanU64 target;

	if (!ready) {
		if (ZYAN_FAILED(ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64,
						 ZYDIS_STACK_WIDTH_64)))
			abort();
		ready = true;
	}
	if (ZYAN_FAILED(ZydisDecoderDecodeFull(&dec, code, len, &in, ops)) ||
	    in.operand_count_visible != 1 ||
	    ops[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE ||
	    !ops[0].imm.is_relative ||
	    ZYAN_FAILED(ZydisCalcAbsoluteAddress(&in, &ops[0], addr, &target)))
		return 0;
	return target;
}

/* The records of hs (marks[i]: instruction i is one; marks[0] is the
 * start). Branch records mixed with steps are ambiguous in two ways: a
 * conditional branch not taken whose target is the next record gives the
 * same records as one taken to it (expansion takes it), and passing the
 * next record's address before a branch back to it gives the same
 * records as stepping onto it (expansion stops there). Where the history
 * went the other way, the instruction after the branch, or the earlier
 * visit, is kept as a step so that the expansion must be exact;
 * ambiguous[0] and [1] count them. */
static bool *keep_marks(struct hwt_image *img, const struct history *hs,
			uint64_t steps, size_t ambiguous[2])
{
	bool *k = calloc(hs->n, sizeof(*k));
	size_t prev = 0;

	ambiguous[0] = ambiguous[1] = 0;
	if (!k)
		abort();
	k[0] = true;
	for (size_t i = 1; i < hs->n; i++)
		k[i] = keep1(img, hs, i, &steps);
	/* Where the thread ended is known apart from the records (its pc
	 * at exit, the BTS decoder's end_pc). */
	k[hs->n - 1] = true;
	for (size_t i = 1; i < hs->n; i++) {
		if (!k[i])
			continue;
		for (size_t j = prev; j < i && !hs->async[i]; j++) {
			struct hwt_insn in;

			if (j > prev && hs->pc[j] == hs->pc[i] && !k[j]) {
				k[j] = true;
				ambiguous[1]++;
			}
			if (!hwt_image_insn(img, hs->pc[j], false, &in) &&
			    in.cls == HWT_INSN_CJUMP && !k[j + 1] &&
			    direct_target(img, hs->pc[j]) == hs->pc[i]) {
				k[j + 1] = true;
				ambiguous[0]++;
			}
		}
		prev = i;
	}
	return k;
}

/* Branch chunks of the records of hs, a new chunk (continuing the
 * previous one) after chunk_bytes of payload; returns the records. */
static size_t derive(struct hwt_image *img, const struct history *hs,
		     uint64_t steps, size_t chunk_bytes, struct tbuf *out,
		     size_t ambiguous[2])
{
	bool *k = keep_marks(img, hs, steps, ambiguous);
	struct chunk c;
	size_t kept = 0;

	ch_begin(&c, out, hs->pc[0], 0, HWT_SW_CHUNK_BRANCHES);
	for (size_t i = 1; i < hs->n; i++) {
		if (!k[i])
			continue;
		kept++;
		if (c.h.payload_size >= chunk_bytes && !hs->async[i]) {
			uint64_t seq = c.h.first_seq + c.h.insn_count;

			ch_end(&c);
			ch_begin(&c, out, hs->pc[i], seq,
				 HWT_SW_CHUNK_BRANCHES);
			continue;
		}
		ch_rec(&c, hs->pc[i], hs->async[i]);
	}
	ch_end(&c);
	free(k);
	return kept;
}

/* Whether h's items are exactly hs's instructions; why says where not. */
static bool same(struct hwt_history *h, const struct history *hs,
		 char *why, size_t wsz)
{
	struct hwt_err err = { 0 };
	struct hwt_item it;

	for (size_t i = 0; i < hs->n; i++) {
		if (i == hwt_history_count(h))
			break;
		if (hwt_history_get(h, i + 1, &it, &err)) {
			snprintf(why, wsz, "item %zu: %s", i + 1, err.msg);
			return false;
		}
		if (it.kind != HWT_ITEM_INSN || it.addr != hs->pc[i] ||
		    !(it.flags & HWT_ITEM_ASYNC) != !hs->async[i]) {
			snprintf(why, wsz, "item %zu: %s 0x%llx flags %x, "
				 "recorded 0x%llx%s", i + 1,
				 it.kind == HWT_ITEM_GAP ? it.gap_reason :
				 "insn", (unsigned long long)it.addr, it.flags,
				 (unsigned long long)hs->pc[i],
				 hs->async[i] ? " async" : "");
			return false;
		}
	}
	if (hwt_history_count(h) != hs->n) {
		snprintf(why, wsz, "%llu items, recorded %zu",
			 (unsigned long long)hwt_history_count(h), hs->n);
		return false;
	}
	return true;
}

/* ---- real programs ---------------------------------------------------- */

/* Record prog with the ptrace backend: its first thread's exact history
 * and an image of the modules it ran. */
static bool record_prog(const char *prog, struct history *hs,
			struct hwt_image **img, char *why, size_t wsz)
{
	struct hwt_collect_opts opts = { .sz = sizeof(opts),
					 .backend = "ptrace" };
	char path[PATH_MAX + 64];
	char *argv[] = { path, NULL };
	const struct hwt_collect_thread *t;
	const struct hwt_collect_module *m;
	struct hwt_collector *c = NULL;
	struct hwt_collect_end end;
	struct hwt_err err = { 0 };
	size_t nm;
	bool ok = false;

	snprintf(path, sizeof(path), "%s/%s", progdir, prog);
	*img = NULL;
	memset(hs, 0, sizeof(*hs));
	fflush(stdout);
	if (hwt_collect_launch(&opts, argv, &c, &err) ||
	    hwt_collect_run(c, &end, &err) || hwt_image_new(img, &err)) {
		snprintf(why, wsz, "%s", err.msg);
		goto out;
	}
	if (!hwt_collect_threads(c, &t)) {
		snprintf(why, wsz, "no thread recorded");
		goto out;
	}
	*hs = history_decode(&t[0]);
	if (!hs->ok || hs->n < 2 || t[0].lost_insns) {
		snprintf(why, wsz, "history of %zu, %llu lost: %s", hs->n,
			 (unsigned long long)t[0].lost_insns, hs->why);
		goto out;
	}
	nm = hwt_collect_modules(c, &m);
	for (size_t i = 0; i < nm; i++) {
		if (m[i].path[0] == '[')
			continue;   /* [vdso] and the like: no file */
		if (hwt_image_add_elf(*img, m[i].path, m[i].load_address,
				      &err)) {
			snprintf(why, wsz, "%s", err.msg);
			goto out;
		}
	}
	ok = true;
out:
	hwt_collect_close(c);
	return ok;
}

static void test_program(const char *prog, bool steps_too)
{
	char name[160], why[800];
	struct hwt_history *h = NULL;
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	struct tbuf tb = { 0 };
	struct history hs;
	size_t kept, amb[2];
	struct timespec t0, t1;
	int rc;

	snprintf(name, sizeof(name), "%s: record with ptrace", prog);
	if (!record_prog(prog, &hs, &img, why, sizeof(why))) {
		CHECK(name, false, "%s", why);
		goto out;
	}
	kept = derive(img, &hs, 0, 16384, &tb, amb);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = hwt_history_open_sw(tb.p, tb.n, 0, img, &h, &err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	snprintf(name, sizeof(name), "%s: expanded branch records are the "
		 "exact history", prog);
	CHECK(name, rc == 0 && hwt_history_decodes(h) == 0 &&
	      same(h, &hs, why, sizeof(why)), "rc %d %s / %s", rc, err.msg,
	      rc ? "" : why);
	printf("INFO %s: %zu instructions (%zu signal handler entries) "
	       "from %zu records in %zu bytes, expanded at open in %.1f ms; "
	       "steps kept at ambiguous points: %zu after a conditional "
	       "branch not taken to the next record, %zu at an earlier visit "
	       "of it\n", prog, hs.n, hs.asyncs, kept, tb.n,
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e6, amb[0], amb[1]);
	if (!strcmp(prog, "signal"))
		CHECK("signal: a handler entry is among the records",
		      hs.asyncs > 0, "no asynchronous transfer recorded");
	hwt_history_free(h);
	h = NULL;
	if (steps_too) {
		tb.n = 0;
		derive(img, &hs, 0x9e3779b97f4a7c15ull, 4096, &tb, amb);
		rc = hwt_history_open_sw(tb.p, tb.n, 0, img, &h, &err);
		snprintf(name, sizeof(name), "%s: steps mixed with branch "
			 "records", prog);
		CHECK(name, rc == 0 && same(h, &hs, why, sizeof(why)),
		      "rc %d %s / %s", rc, err.msg, rc ? "" : why);
		hwt_history_free(h);
		h = NULL;
	}
out:
	free(tb.p);
	history_free(&hs);
	hwt_image_free(img);
}

/* The same records as hwtrace.ko writes them: BRANCH blocks of
 * HWTRACE_BLOCK_SIZE bytes with sched records, through hwt_mod_convert;
 * every block after the first starts at a record and continues the
 * previous one. */
struct mblocks {
	uint8_t *buf;
	size_t nb, cap, used;
	struct hwtrace_block h;
	uint64_t seq;
};

static uint8_t *mb_cur(struct mblocks *m)
{
	return m->buf + (m->nb - 1) * HWTRACE_BLOCK_SIZE;
}

static void mb_close(struct mblocks *m)
{
	if (!m->nb)
		return;
	memcpy(mb_cur(m), &m->h, sizeof(m->h));
	m->seq += m->h.insn_count;
}

static void mb_open(struct mblocks *m, uint64_t pc)
{
	mb_close(m);
	if (m->nb == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		m->buf = realloc(m->buf, m->cap * HWTRACE_BLOCK_SIZE);
		if (!m->buf)
			abort();
	}
	m->nb++;
	memset(mb_cur(m), 0, HWTRACE_BLOCK_SIZE);
	m->h = (struct hwtrace_block){ .magic = HWTRACE_BLOCK_MAGIC,
		.seq = m->nb, .first_insn = m->seq, .first_pc = pc,
		.last_pc = pc, .insn_count = 1, .flags = HWTRACE_BLK_BRANCH };
	m->used = 0;
}

static void mb_put(struct mblocks *m, const uint8_t *r, size_t n)
{
	memcpy(mb_cur(m) + sizeof(m->h) + m->used, r, n);
	m->used += n;
	m->h.used = (uint32_t)m->used;
}

static void test_module_blocks(const char *prog)
{
	const size_t room = HWTRACE_BLOCK_SIZE - sizeof(struct hwtrace_block);
	struct mblocks m = { 0 };
	struct hwt_mod_trace t = { 0 };
	struct hwt_history *h = NULL;
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	struct history hs;
	bool *k = NULL;
	size_t amb[2];
	uint8_t r[HWT_SW_MAX_RECORD + 1], sched[HWTRACE_REC_SCHED_SIZE];
	char why[800];
	int rc;

	if (!record_prog(prog, &hs, &img, why, sizeof(why))) {
		CHECK("module blocks: record", false, "%s", why);
		goto out;
	}
	memset(sched, 7, sizeof(sched));
	sched[0] = HWTRACE_REC_SCHED;
	k = keep_marks(img, &hs, 0, amb);
	mb_open(&m, hs.pc[0]);
	for (size_t i = 1; i < hs.n; i++) {
		size_t n;

		if (!k[i])
			continue;
		if (m.used + sizeof(sched) + sizeof(r) > room &&
		    !hs.async[i]) {
			mb_open(&m, hs.pc[i]);
			continue;
		}
		/* A scheduling record now and then, which adds nothing. */
		if (m.h.insn_count % 50 == 0)
			mb_put(&m, sched, sizeof(sched));
		n = hwt_sw_encode_step(m.h.last_pc, hs.pc[i], hs.async[i], r);
		mb_put(&m, r, n);
		m.h.last_pc = hs.pc[i];
		m.h.insn_count++;
	}
	mb_close(&m);
	rc = hwt_mod_convert(m.buf, m.nb * HWTRACE_BLOCK_SIZE, false, &t, &err);
	CHECK("module blocks: BRANCH blocks convert", rc == 0 &&
	      t.bad_blocks == 0 && m.nb > 2, "rc %d, %llu of %zu blocks bad: "
	      "%s", rc, (unsigned long long)t.bad_blocks, m.nb, err.msg);
	rc = hwt_history_open_sw(t.chunks.data, t.chunks.len, 0, img, &h,
				 &err);
	CHECK("module blocks: expanded across blocks is the exact history",
	      rc == 0 && same(h, &hs, why, sizeof(why)), "rc %d %s / %s", rc,
	      err.msg, rc ? "" : why);
	printf("INFO module blocks: %zu instructions in %zu blocks\n", hs.n,
	       m.nb);
	hwt_history_free(h);
out:
	hwt_perf_buf_free(&t.chunks);
	free(k);
	free(m.buf);
	history_free(&hs);
	hwt_image_free(img);
}

/* ---- hand-made code ----------------------------------------------------- */

#define B 0x10000ull

static const uint8_t code[] = {
	0x90,                           /* 00 nop */
	0x74, 0x03,                     /* 01 je 06 */
	0xeb, 0xfb,                     /* 03 jmp 00 */
	0xc3,                           /* 05 ret */
	0x48, 0x89, 0xc3,               /* 06 mov %rax,%rbx */
	0xe8, 0x12, 0x00, 0x00, 0x00,   /* 09 call 20 */
	0xff, 0xd0,                     /* 0e call *%rax */
	0x0f, 0x05,                     /* 10 syscall */
	0xeb, 0xfe,                     /* 12 jmp 12 */
	0x90, 0x90, 0x90, 0x90, 0x90, 0x90, /* 14..1f nop */
	0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	0x90,                           /* 20 nop */
	0xc3,                           /* 21 ret */
	0xff, 0xe0,                     /* 22 jmp *%rax */
	0x0f, 0x0b,                     /* 24 ud2; 26: no code */
};

/* An expected item: an address, or a gap whose reason holds needle. */
struct want {
	uint64_t addr;
	bool async;
	const char *needle;
};

#define I(a) { (a), false, NULL }
#define A(a) { (a), true, NULL }
#define G(needle) { 0, false, (needle) }
#define R(a) { (a), false }
#define RA(a) { (a), true }

static bool items_are(struct hwt_history *h, const struct want *w, size_t n,
		      char *why, size_t wsz)
{
	struct hwt_err err = { 0 };
	struct hwt_item it;

	if (hwt_history_count(h) != n) {
		snprintf(why, wsz, "%llu items, want %zu",
			 (unsigned long long)hwt_history_count(h), n);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		bool ok;

		if (hwt_history_get(h, i + 1, &it, &err)) {
			snprintf(why, wsz, "item %zu: %s", i + 1, err.msg);
			return false;
		}
		ok = w[i].needle ? it.kind == HWT_ITEM_GAP &&
			strstr(it.gap_reason, w[i].needle) :
			it.kind == HWT_ITEM_INSN && it.addr == w[i].addr &&
			!(it.flags & HWT_ITEM_ASYNC) == !w[i].async;
		if (!ok) {
			snprintf(why, wsz, "item %zu is %s 0x%llx%s, want "
				 "%s 0x%llx", i + 1, it.kind == HWT_ITEM_GAP ?
				 it.gap_reason : "insn",
				 (unsigned long long)it.addr,
				 it.flags & HWT_ITEM_ASYNC ? " async" : "",
				 w[i].needle ? w[i].needle : "insn",
				 (unsigned long long)w[i].addr);
			return false;
		}
	}
	return true;
}

/* An image holding bytes at base, through a temporary file at path. */
static struct hwt_image *bytes_image(char *path, const uint8_t *bytes,
				     size_t size, uint64_t base)
{
	struct hwt_image *img = NULL;
	struct hwt_err err = { 0 };
	int fd = mkstemp(path);
	bool ok = fd >= 0 && write(fd, bytes, size) == (ssize_t)size;

	if (fd >= 0)
		close(fd);
	if (!ok || hwt_image_new(&img, &err) ||
	    hwt_image_add_raw(img, path, 0, size, base, HWT_ISA_X86_64, &err)) {
		CHECK("hand-made code image", false, "%s", err.msg);
		hwt_image_free(img);
		return NULL;
	}
	return img;
}

static struct hwt_image *code_image(char *path)
{
	return bytes_image(path, code, sizeof(code), B);
}

static void test_rules(struct hwt_image *img)
{
	static const struct { uint64_t t; bool async; } recs[] = {
		R(B + 0x06), R(B + 0x20), R(B + 0x0e), R(B + 0x22),
		R(B + 0x10), R(B + 0x12), R(B + 0x12), RA(B),
		R(B + 0x05), R(B + 0x14), R(B + 0x15), R(0x90000),
		R(B), RA(B + 0x24), R(B),
	};
	static const struct want want[] = {
		I(B), I(B + 1), I(B + 6),            /* je taken */
		I(B + 9), I(B + 0x20),                /* direct call */
		I(B + 0x21), I(B + 0x0e),             /* ret lands */
		I(B + 0x22),                           /* call * lands */
		I(B + 0x10),                           /* jmp * lands */
		I(B + 0x12),                           /* syscall lands */
		I(B + 0x12),                           /* same address */
		A(B),                            /* async */
		G("0x10005 cannot be reached from 0x10000 (the "
		  "code from 0x10000 loops"),
		I(B + 5),                              /* resumes there */
		I(B + 0x14),                           /* ret lands */
		I(B + 0x15),                           /* a step */
		I(B + 0x16), I(B + 0x17), I(B + 0x18), I(B + 0x19),
		I(B + 0x1a), I(B + 0x1b), I(B + 0x1c), I(B + 0x1d),
		I(B + 0x1e), I(B + 0x1f), I(B + 0x20), I(B + 0x21),
		I(0x90000),                            /* ret lands anywhere */
		G("no code at 0x90000"),
		I(B),
		A(B + 0x24),
		G("no code at 0x10026"),
		I(B),
	};
	struct hwt_history *h = NULL;
	struct hwt_err err = { 0 };
	struct tbuf tb = { 0 };
	struct chunk c;
	char why[600];
	int rc;

	ch_begin(&c, &tb, B, 0, HWT_SW_CHUNK_BRANCHES);
	for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++)
		ch_rec(&c, recs[i].t, recs[i].async);
	ch_end(&c);
	rc = hwt_history_open_sw(tb.p, tb.n, 0, img, &h, &err);
	CHECK("rules: taken/not taken, calls, returns, indirect, system call, "
	      "async; loop and missing code are gaps, then the history goes "
	      "on", rc == 0 && items_are(h, want, sizeof(want) /
					 sizeof(want[0]), why, sizeof(why)),
	      "rc %d %s / %s", rc, err.msg, rc ? "" : why);
	hwt_history_free(h);
	free(tb.p);
}

/* Chunk borders: a branch chunk that follows on is reached from the
 * previous one's last pc, one flagged ASYNC or after lost instructions
 * is not; plain chunks and branch chunks mix. */
static void test_borders(struct hwt_image *img)
{
	static const struct want want[] = {
		I(B), I(B + 1), I(B + 6),          /* chunk 1 */
		I(B + 9), I(B + 0x20),              /* chunk 2, walked to */
		A(B + 0x10),                   /* chunk 3: async */
		G("5 instructions lost"),
		I(B + 0x20), I(B + 0x21),           /* chunk 4, not walked */
		I(B + 0x0e),
		I(B + 0x22), I(B + 0x24),           /* plain chunk 5 */
	};
	struct hwt_history *h = NULL;
	struct hwt_err err = { 0 };
	struct tbuf tb = { 0 };
	struct chunk c;
	char why[600];
	int rc;

	ch_begin(&c, &tb, B, 0, HWT_SW_CHUNK_BRANCHES);
	ch_rec(&c, B + 6, false);
	ch_end(&c);
	ch_begin(&c, &tb, B + 0x20, 2, HWT_SW_CHUNK_BRANCHES);
	ch_end(&c);
	ch_begin(&c, &tb, B + 0x10, 3, HWT_SW_CHUNK_BRANCHES |
		 HWT_SW_CHUNK_ASYNC);
	ch_end(&c);
	ch_begin(&c, &tb, B + 0x20, 9, HWT_SW_CHUNK_BRANCHES);
	ch_rec(&c, B + 0x0e, false);
	ch_end(&c);
	ch_begin(&c, &tb, B + 0x22, 11, 0);
	ch_rec(&c, B + 0x24, false);
	ch_end(&c);
	rc = hwt_history_open_sw(tb.p, tb.n, 0, img, &h, &err);
	CHECK("borders: continued, async and lost chunks; plain mixed in",
	      rc == 0 && items_are(h, want, sizeof(want) / sizeof(want[0]),
				   why, sizeof(why)), "rc %d %s / %s", rc,
	      err.msg, rc ? "" : why);
	hwt_history_free(h);
	free(tb.p);
}

/* A branch chunk whose header disagrees with its records is one gap; a
 * bad record keeps what came before it; the next chunk is unharmed. */
static void test_corrupt(struct hwt_image *img)
{
	static const struct want want[] = {
		G("header says 2 instructions ending at 0x10007"),
		I(B), I(B + 1), I(B + 6),
		G("bad record tag 0x30"),
		I(B + 0x22), I(B + 0x10),
	};
	struct hwt_history *h = NULL;
	struct hwt_err err = { 0 };
	struct tbuf tb = { 0 };
	struct chunk c;
	char why[600];
	int rc;

	ch_begin(&c, &tb, B, 0, HWT_SW_CHUNK_BRANCHES);
	ch_rec(&c, B + 6, false);
	c.h.last_pc = B + 7;
	ch_end(&c);
	ch_begin(&c, &tb, B, 2, HWT_SW_CHUNK_BRANCHES);
	ch_rec(&c, B + 6, false);
	tb_put(&tb, "\x30\x01", 2);   /* a bad tag, then a step */
	c.h.payload_size += 2;
	c.h.insn_count++;
	c.h.last_pc++;
	ch_end(&c);
	ch_begin(&c, &tb, B + 0x22, 5, HWT_SW_CHUNK_BRANCHES);
	ch_rec(&c, B + 0x10, false);
	ch_end(&c);
	rc = hwt_history_open_sw(tb.p, tb.n, 0, img, &h, &err);
	CHECK("corrupt branch chunks: whole-chunk gap, gap after a bad "
	      "record, next chunk intact", rc == 0 &&
	      items_are(h, want, sizeof(want) / sizeof(want[0]), why,
			sizeof(why)), "rc %d %s / %s", rc, err.msg,
	      rc ? "" : why);
	hwt_history_free(h);
	free(tb.p);
}

/* Garbage: branch chunks of random records over this program's own code
 * and random addresses, and random bytes; every item must be readable
 * and the counts must add up. */
static void test_garbage(void)
{
	struct self_image si = self_image_find();
	struct hwt_image *img = NULL;
	struct hwt_err err = { 0 };
	uint64_t rng = 0x1234567, pool[4096];
	size_t npool, bad = 0, items = 0, gaps = 0;
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	if (n <= 0 || hwt_image_new(&img, &err)) {
		CHECK("garbage: image", false, "%s", err.msg);
		return;
	}
	path[n] = 0;
	if (hwt_image_add_elf(img, path, si.load, &err)) {
		CHECK("garbage: image of this program", false, "%s", err.msg);
		hwt_image_free(img);
		return;
	}
	npool = self_image_insn_sample(img, &si, &rng, pool, 4096);
	for (int round = 0; round < 300 && npool; round++) {
		struct hwt_history *h = NULL;
		struct tbuf tb = { 0 };
		struct chunk c;
		int nchunks = 1 + (int)(xorshift64(&rng) % 4);

		for (int k = 0; k < nchunks; k++) {
			int nrec = (int)(xorshift64(&rng) % 200);

			ch_begin(&c, &tb, pool[xorshift64(&rng) % npool],
				 (uint64_t)k * 1000, HWT_SW_CHUNK_BRANCHES |
				 (xorshift64(&rng) % 5 ? 0 :
				  HWT_SW_CHUNK_ASYNC));
			for (int j = 0; j < nrec; j++) {
				uint64_t v = xorshift64(&rng);
				uint64_t t = v % 7 == 0 ? v :
					v % 7 == 1 ? c.h.last_pc + v % 64 :
					pool[v % npool];

				ch_rec(&c, t, v % 11 == 0);
			}
			ch_end(&c);
		}
		/* Flip some bytes: headers, tags and deltas. */
		for (int k = (int)(xorshift64(&rng) % 4); k > 0 && tb.n; k--)
			tb.p[xorshift64(&rng) % tb.n] ^=
				(uint8_t)(1u << (xorshift64(&rng) % 8));
		if (hwt_history_open_sw(tb.p, tb.n, 0, img, &h, &err)) {
			bad++;
		} else {
			uint64_t cnt = hwt_history_count(h);

			for (uint64_t i = 1; i <= cnt; i++) {
				struct hwt_item it;

				if (hwt_history_get(h, i, &it, &err)) {
					bad++;
					break;
				}
				items++;
				gaps += it.kind == HWT_ITEM_GAP;
			}
		}
		hwt_history_free(h);
		free(tb.p);
	}
	CHECK("garbage branch chunks: every item readable", bad == 0 &&
	      items > 0 && gaps > 0, "%zu failures, %zu items, %zu gaps: %s",
	      bad, items, gaps, err.msg);
	hwt_image_free(img);
}

/* Block-step is the module backend's: any other refuses it, unless the
 * caller's struct predates the field (its sz says so). */
static void test_options(void)
{
	struct hwt_collect_opts opts = { .sz = sizeof(opts),
					 .backend = "ptrace",
					 .block_step = true };
	char *argv[] = { "/bin/true", NULL };
	struct hwt_collector *c = NULL;
	struct hwt_collect_end end;
	struct hwt_err err = { 0 };
	int rc;

	rc = hwt_collect_launch(&opts, argv, &c, &err);
	CHECK("block-step refused by the ptrace backend", rc == -EINVAL &&
	      !c && strstr(err.msg, "block-step") && strstr(err.msg, "module"),
	      "rc %d: %s", rc, err.msg);
	hwt_collect_close(c);
	c = NULL;
	opts.sz = offsetof(struct hwt_collect_opts, block_step);
	rc = hwt_collect_launch(&opts, argv, &c, &err);
	if (!rc)
		rc = hwt_collect_run(c, &end, &err);
	CHECK("block-step beyond the caller's sz is not seen", rc == 0,
	      "rc %d: %s", rc, err.msg);
	hwt_collect_close(c);
}

/* Code the decoder does not know (an APX instruction, REX2 prefix d5,
 * which Zydis 4.0 cannot decode): block-step expansion must make it a
 * gap naming the bytes and resume at the next record; the Intel PT
 * encoder must stop tracing before it and resume after it, so that a
 * decoder shows a gap there and never walks the bytes wrongly; and a
 * listing shows the bytes, not "(no code)". */
static void test_undecodable(void)
{
	static const uint8_t apx[] = {
		0x90,                           /* 00 nop */
		0xd5, 0x19, 0x01, 0xc8,         /* 01 APX add (REX2) */
		0x90,                           /* 05 nop */
		0xc3,                           /* 06 ret */
	};
	const uint64_t base = 0x30000;
	static const struct want expanded[] = {
		I(0x30000),
		G("the bytes at 0x30001 do not decode"),
		I(0x30006), I(0x30040),
	};
	static const struct want encoded[] = {
		I(0x30000), G("tracing was off from 0x30001"), I(0x30005),
		I(0x30006),
	};
	char tmp[] = "/tmp/hwt-apx-XXXXXX", why[600], line[256];
	struct hwt_image *img = bytes_image(tmp, apx, sizeof(apx), base);
	struct hwt_history *h = NULL, *pt = NULL;
	struct hwt_err err = { 0 };
	struct hwt_cpu_info cpu = { .vendor = "GenuineIntel", .family = 6,
				    .model = 0x55 };
	struct tbuf tb = { 0 }, steps = { 0 };
	struct hwt_item it;
	struct chunk c;
	uint8_t *stream = NULL;
	size_t size = 0;
	int rc;

	if (!img)
		return;
	ch_begin(&c, &tb, base, 0, HWT_SW_CHUNK_BRANCHES);
	ch_rec(&c, base + 6, false);
	ch_rec(&c, base + 0x40, false);
	ch_end(&c);
	rc = hwt_history_open_sw(tb.p, tb.n, 0, img, &h, &err);
	CHECK("undecodable: expansion makes a gap naming the bytes and "
	      "resumes at the next record",
	      rc == 0 && items_are(h, expanded, sizeof(expanded) /
				   sizeof(expanded[0]), why, sizeof(why)),
	      "rc %d %s / %s", rc, err.msg, rc ? "" : why);
	hwt_history_free(h);
	h = NULL;

	/* An exact (single-step) history through it, encoded as PT */
	ch_begin(&c, &steps, base, 0, 0);
	ch_rec(&c, base + 1, false);
	ch_rec(&c, base + 5, false);
	ch_rec(&c, base + 6, false);
	ch_rec(&c, base + 0x40, false);
	ch_end(&c);
	rc = hwt_history_open_sw(steps.p, steps.n, 0, img, &h, &err);
	if (!rc)
		rc = hwt_history_get(h, 2, &it, &err);
	line[0] = '\0';
	if (!rc)
		rc = hwt_format_item(img, "1", &it, false, line, sizeof(line)) < 0;
	CHECK("undecodable: the listing shows the bytes",
	      rc == 0 && strstr(line, "undecodable: d5 19 01 c8") &&
	      !strstr(line, "(no code)"), "rc %d %s: '%s'", rc, err.msg, line);
	if (!rc)
		rc = hwt_pt_encode(h, img, 0, 0, NULL, &stream, &size, &err);
	if (!rc)
		rc = hwt_history_open_pt(stream, size, &cpu, img, &pt, &err);
	CHECK("undecodable: Intel PT encoding stops before the bytes and "
	      "resumes after them, a gap where they are",
	      rc == 0 && items_are(pt, encoded, sizeof(encoded) /
				   sizeof(encoded[0]), why, sizeof(why)),
	      "rc %d %s / %s", rc, err.msg, rc ? "" : why);
	hwt_history_free(pt);
	hwt_history_free(h);
	free(stream);
	free(tb.p);
	free(steps.p);
	hwt_image_free(img);
	unlink(tmp);
}

int main(int argc, char **argv)
{
	static const char *const progs[] = {
		"loops", "recursion", "switch", "fnptr", "signal", "qsort",
	};
	char exe[PATH_MAX + 16], tmp[] = "/tmp/hwt-expand-XXXXXX";
	struct hwt_image *img;

	(void)argc;
	img = code_image(tmp);
	if (img) {
		RUN(test_rules, img);
		RUN(test_borders, img);
		RUN(test_corrupt, img);
		hwt_image_free(img);
		unlink(tmp);
	}
	RUN(test_undecodable);
	RUN(test_garbage);
	RUN(test_options);
	if (!check_programs_dir(progdir, sizeof(progdir)))
		return 2;
	snprintf(exe, sizeof(exe), "%s/loops", progdir);
	if (access(exe, X_OK)) {
		printf("SKIP expand real programs: %s is not built (make "
		       "programs)\n", exe);
		return check_exit();
	}
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		RUN(test_program, progs[i], i == 0);
	RUN(test_module_blocks, "signal");
	return check_exit();
}
