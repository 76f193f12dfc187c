// SPDX-License-Identifier: BSD-2-Clause
/* test_replay_calls.c - function-call segments and call-depth moves.
 *
 * The subjects are functions written in assembly inside this program, with
 * labels at the interesting instructions; a trace is a list of label
 * ranges walked instruction by instruction, so each control transfer the
 * test wants (call, return, tail call, long jump, signal) is spelled out
 * exactly and does not depend on the compiler. */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-replay.h"
#include "check.h"

#define FN(name) ".globl " #name "\n.type " #name ",@function\n" #name ":\n"
#define END(name) ".size " #name ", .-" #name "\n"
#define L(name) ".globl " #name "\n" #name ":\n"

__asm__(".text\n"
	FN(c_top) "nop\n" L(c_top_call) "call c_main\n" L(c_top_after)
	"nop\n ret\n" END(c_top)
	FN(c_main) "nop\n"
	L(c_main_call_a) "call c_a\n"
	L(c_main_after_a) "nop\n"
	L(c_main_pic) "call 1f\n 1: pop %rax\n"
	L(c_main_tail) "jmp c_t\n"
	L(c_main_resume) "nop\n"
	L(c_main_sig) "nop\n"
	L(c_main_end) "ret\n" END(c_main)
	FN(c_a) "nop\n"
	L(c_a_call_leaf) "call c_leaf\n"
	L(c_a_after_leaf) "nop\n"
	L(c_a_call_deep) "call c_deep\n"
	L(c_a_ret) "ret\n" END(c_a)
	FN(c_leaf) "nop\n" L(c_leaf_ret) "ret\n" END(c_leaf)
	FN(c_deep) "nop\n" L(c_deep_jmp) "jmp *%rax\n" END(c_deep)
	FN(c_t) "nop\n" L(c_t_ret) "ret\n" END(c_t)
	FN(c_handler) "nop\n" L(c_handler_ret) "ret\n" END(c_handler)
	FN(c_restorer) "mov $15, %eax\n" L(c_restorer_sys) "syscall\n"
	END(c_restorer));

extern const char c_top[], c_top_call[], c_top_after[], c_main[],
	c_main_call_a[], c_main_after_a[], c_main_pic[], c_main_tail[],
	c_main_resume[], c_main_sig[], c_main_end[], c_a[], c_a_call_leaf[],
	c_a_after_leaf[], c_a_call_deep[], c_a_ret[], c_leaf[], c_leaf_ret[],
	c_deep[], c_deep_jmp[], c_t[], c_t_ret[], c_handler[], c_handler_ret[],
	c_restorer[], c_restorer_sys[];

static uint64_t self_load;
static struct hwt_image *img;

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	uint64_t lo = UINT64_MAX;

	(void)size;
	(void)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type == PT_LOAD &&
		    info->dlpi_phdr[i].p_vaddr < lo)
			lo = info->dlpi_phdr[i].p_vaddr;
	}
	self_load = info->dlpi_addr + (lo & ~(uint64_t)4095);
	return 1;
}

static uint64_t A(const char *p)
{
	return (uint64_t)(uintptr_t)p;
}

/* ---- building traces ---- */

#define MAXSEQ 20000

struct seq {
	uint64_t a[MAXSEQ];
	bool async[MAXSEQ];
	size_t n;
	bool next_async;
};

/* Append the instructions from..to, both included. */
static void walk(struct seq *s, const char *from, const char *to)
{
	uint64_t a = A(from);

	for (;;) {
		struct hwt_insn in;

		s->async[s->n] = s->next_async;
		s->next_async = false;
		s->a[s->n++] = a;
		if (a == A(to) || hwt_image_insn(img, a, false, &in)) {
			if (a != A(to)) {
				printf("FAIL setup: walk to %p\n", (void *)to);
				exit(1);
			}
			return;
		}
		a += in.len;
	}
}

static uint8_t *encode(const struct seq *s, size_t per_chunk, size_t *size)
{
	uint8_t *buf = malloc(s->n * (HWT_SW_MAX_RECORD + 1) +
			      (s->n / per_chunk + 1) * HWT_SW_CHUNK_HDR_SIZE);
	size_t n = 0;

	for (size_t c = 0; c < s->n; c += per_chunk) {
		size_t e = c + per_chunk < s->n ? c + per_chunk : s->n, at = n;
		struct hwt_sw_chunk_hdr h = {
			.first_pc = s->a[c], .first_seq = c,
			.last_pc = s->a[e - 1], .insn_count = (uint32_t)(e - c),
		};

		n += HWT_SW_CHUNK_HDR_SIZE;
		for (size_t i = c + 1; i < e; i++)
			n += hwt_sw_encode_step(s->a[i - 1], s->a[i], s->async[i],
						buf + n);
		h.payload_size = (uint32_t)(n - at - HWT_SW_CHUNK_HDR_SIZE);
		hwt_sw_chunk_hdr_pack(&h, buf + at);
	}
	*size = n;
	return buf;
}

/* Offset of the k-th (0-based) chunk header. */
static size_t chunk_at(const uint8_t *buf, size_t size, int k)
{
	size_t off = 0;

	while (k-- > 0) {
		struct hwt_sw_chunk_hdr h;

		hwt_sw_chunk_hdr_unpack(buf + off, size - off, &h, NULL);
		off += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
	}
	return off;
}

struct run {
	uint8_t *trace;
	struct hwt_history *h;
	struct hwt_calls *calls;
};

static void run_open(struct run *r, const struct seq *s, size_t per_chunk)
{
	struct hwt_err err = { 0 };
	size_t size;
	int rc;

	r->trace = encode(s, per_chunk, &size);
	rc = hwt_history_open_sw(r->trace, size, 0, img, &r->h, &err);
	if (!rc)
		rc = hwt_calls_build(r->h, img, 0, 0, &r->calls, &err);
	if (rc) {
		printf("FAIL setup: %s\n", err.msg);
		exit(1);
	}
}

static void run_close(struct run *r)
{
	hwt_calls_free(r->calls);
	hwt_history_free(r->h);
	free(r->trace);
}

/* Segments as "name:level name:level ...", gaps as "gap:level". */
static const char *shape(const struct hwt_calls *c)
{
	static char buf[4096];
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < hwt_calls_count(c) && n < sizeof(buf) - 64; i++) {
		const struct hwt_call_segment *s = hwt_calls_get(c, i);

		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s:%d",
				      i ? " " : "", s->gap ? "gap" :
				      s->function ? s->function : "?",
				      s->level);
	}
	return buf;
}

/* Segments cover the items in order, without holes or overlaps. */
static bool contiguous(const struct hwt_calls *c, uint64_t count)
{
	uint64_t next = 1;

	for (size_t i = 0; i < hwt_calls_count(c); i++) {
		const struct hwt_call_segment *s = hwt_calls_get(c, i);

		if (s->first != next || s->last < s->first)
			return false;
		next = s->last + 1;
	}
	return next == count + 1;
}

/* ---- calls ---- */

static void test_call_return_tail(void)
{
	static struct seq s;
	struct run r;
	const char *want = "c_main:1 c_a:2 c_leaf:3 c_a:2 c_main:1 c_t:1 c_top:0";

	s.n = 0;
	walk(&s, c_main, c_main_call_a);
	walk(&s, c_a, c_a_call_leaf);
	walk(&s, c_leaf, c_leaf_ret);
	walk(&s, c_a_after_leaf, c_a_after_leaf);
	walk(&s, c_a_ret, c_a_ret);
	walk(&s, c_main_after_a, c_main_tail);   /* PIC call, then tail */
	walk(&s, c_t, c_t_ret);
	walk(&s, c_top_after, c_top_after);      /* not on the stack */
	run_open(&r, &s, 5);
	CHECK("calls: call, return, PIC call, tail call",
	      !strcmp(shape(r.calls), want), "got  %s\nwant %s",
	      shape(r.calls), want);
	CHECK("calls: segments cover items",
	      contiguous(r.calls, hwt_history_count(r.h)) &&
	      hwt_calls_get(r.calls, 1)->first == 3 &&
	      hwt_calls_get(r.calls, 1)->last == 4, "bad item ranges");
	run_close(&r);
}

static void test_longjmp(void)
{
	static struct seq s;
	struct run r;
	const char *want = "c_main:0 c_a:1 c_deep:2 c_main:0";

	s.n = 0;
	walk(&s, c_main, c_main_call_a);
	walk(&s, c_a, c_a_call_deep);
	walk(&s, c_deep, c_deep_jmp);
	walk(&s, c_main_resume, c_main_sig);
	run_open(&r, &s, 1000);
	CHECK("calls: longjmp pops to the frame on the stack",
	      !strcmp(shape(r.calls), want), "got  %s\nwant %s",
	      shape(r.calls), want);
	run_close(&r);
}

static void test_started_deep(void)
{
	static struct seq s;
	struct run r;
	const char *want = "c_leaf:3 c_a:2 c_main:1 c_top:0";

	s.n = 0;
	walk(&s, c_leaf, c_leaf_ret);
	walk(&s, c_a_after_leaf, c_a_after_leaf);
	walk(&s, c_a_ret, c_a_ret);
	walk(&s, c_main_after_a, c_main_after_a);
	walk(&s, c_main_end, c_main_end);
	walk(&s, c_top_after, c_top_after);
	run_open(&r, &s, 1000);
	CHECK("calls: returns above where recording began",
	      !strcmp(shape(r.calls), want), "got  %s\nwant %s",
	      shape(r.calls), want);
	run_close(&r);
}

static void test_no_drift(void)
{
	static struct seq s;
	struct run r;
	bool ok = true;
	int maxl = 0;

	s.n = 0;
	walk(&s, c_main, c_main);
	for (int i = 0; i < 1000; i++) {
		walk(&s, c_main_call_a, c_main_call_a);
		walk(&s, c_a, c_a_call_leaf);
		walk(&s, c_leaf, c_leaf_ret);
		walk(&s, c_a_after_leaf, c_a_after_leaf);
		walk(&s, c_a_ret, c_a_ret);
		walk(&s, c_main_after_a, c_main_after_a);
	}
	run_open(&r, &s, 333);
	for (size_t i = 0; i < hwt_calls_count(r.calls); i++) {
		const struct hwt_call_segment *g = hwt_calls_get(r.calls, i);
		int want = !strcmp(g->function, "c_main") ? 0 :
			!strcmp(g->function, "c_a") ? 1 : 2;

		ok &= g->level == want;
		if (g->level > maxl)
			maxl = g->level;
	}
	CHECK("calls: 1000 calls and returns do not drift",
	      ok && maxl == 2 && hwt_calls_count(r.calls) == 1 + 4 * 1000 &&
	      contiguous(r.calls, hwt_history_count(r.h)),
	      "%zu segments, max level %d", hwt_calls_count(r.calls), maxl);
	run_close(&r);
}

static void test_signal(void)
{
	static struct seq s;
	struct run r;
	const char *want = "c_main:0 c_handler:1 c_restorer:0 c_main:0";
	const char *want2 = "c_main:0 c_a:1 c_handler:2 c_restorer:1 c_a:1 "
		"c_main:0";

	s.n = 0;
	walk(&s, c_main_resume, c_main_sig);
	s.next_async = true;
	walk(&s, c_handler, c_handler_ret);
	walk(&s, c_restorer, c_restorer_sys);
	walk(&s, c_main_end, c_main_end);
	run_open(&r, &s, 1000);
	CHECK("calls: signal handler one level deeper",
	      !strcmp(shape(r.calls), want), "got  %s\nwant %s",
	      shape(r.calls), want);
	run_close(&r);

	s.n = 0;
	walk(&s, c_main, c_main_call_a);
	walk(&s, c_a, c_a);
	s.next_async = true;
	walk(&s, c_handler, c_handler_ret);
	walk(&s, c_restorer, c_restorer_sys);
	walk(&s, c_a_after_leaf, c_a_after_leaf);
	walk(&s, c_a_ret, c_a_ret);
	walk(&s, c_main_after_a, c_main_after_a);
	run_open(&r, &s, 1000);
	CHECK("calls: signal in a callee keeps the stack",
	      !strcmp(shape(r.calls), want2), "got  %s\nwant %s",
	      shape(r.calls), want2);
	run_close(&r);
}

static void test_gap(void)
{
	static struct seq s;
	struct run r;
	struct hwt_err err = { 0 };
	struct hwt_calls *part;
	size_t size;
	const char *want = "c_main:0 c_a:1 gap:1 c_a:1 c_main:0";
	int rc;

	s.n = 0;
	walk(&s, c_main, c_main_call_a);      /* 2 */
	walk(&s, c_a, c_a);                   /* 1, chunk ends */
	walk(&s, c_a_call_leaf, c_a_call_leaf); /* lost with the chunk... */
	walk(&s, c_leaf, c_leaf);             /* ... */
	walk(&s, c_leaf_ret, c_leaf_ret);     /* ... 3 */
	walk(&s, c_a_after_leaf, c_a_after_leaf);
	walk(&s, c_a_ret, c_a_ret);
	walk(&s, c_main_after_a, c_main_after_a);
	r.trace = encode(&s, 3, &size);
	/* Break the second chunk's magic: its instructions become a gap. */
	r.trace[chunk_at(r.trace, size, 1)] ^= 0x55;
	rc = hwt_history_open_sw(r.trace, size, 0, img, &r.h, &err);
	if (!rc)
		rc = hwt_calls_build(r.h, img, 0, 0, &r.calls, &err);
	CHECK("calls: gap segment", rc == 0 && !strcmp(shape(r.calls), want),
	      "rc %d %s\ngot  %s\nwant %s", rc, err.msg, rc ? "" :
	      shape(r.calls), want);
	rc = hwt_calls_build(r.h, img, 3, 6, &part, &err);
	CHECK("calls: part of the history", rc == 0 &&
	      hwt_calls_count(part) == 3 && hwt_calls_get(part, 0)->first == 3 &&
	      hwt_calls_get(part, 2)->last == 6, "rc %d: %s", rc, err.msg);
	if (!rc)
		hwt_calls_free(part);
	rc = hwt_calls_build(r.h, img, 5, 99, &part, &err);
	CHECK("calls: bad range", rc == -EINVAL && strstr(err.msg, "5..99"),
	      "rc %d: %s", rc, err.msg);
	run_close(&r);
}

/* ---- moves by call depth ---- */

static uint64_t pos_addr(struct hwt_cursor *c, struct hwt_history *h)
{
	struct hwt_item it;

	hwt_history_get(h, hwt_cursor_pos(c), &it, NULL);
	return it.addr;
}

/* Index of the k-th (1-based) item at addr. */
static uint64_t nth(struct hwt_history *h, const char *addr, int k)
{
	for (uint64_t i = 1; i <= hwt_history_count(h); i++) {
		struct hwt_item it;

		if (!hwt_history_get(h, i, &it, NULL) &&
		    it.kind == HWT_ITEM_INSN && it.addr == A(addr) && --k == 0)
			return i;
	}
	return 0;
}

static void test_cursor(void)
{
	static struct seq s;
	struct hwt_err err = { 0 };
	struct hwt_cursor *c;
	struct run r;
	uint64_t bps[2];
	int rc;

	s.n = 0;
	walk(&s, c_main, c_main_call_a);
	walk(&s, c_a, c_a_call_leaf);
	walk(&s, c_leaf, c_leaf_ret);
	walk(&s, c_a_after_leaf, c_a_after_leaf);
	walk(&s, c_a_call_leaf, c_a_call_leaf);   /* c_leaf again */
	walk(&s, c_leaf, c_leaf_ret);
	walk(&s, c_a_after_leaf, c_a_after_leaf);
	walk(&s, c_a_ret, c_a_ret);
	walk(&s, c_main_after_a, c_main_resume);
	s.next_async = true;
	walk(&s, c_handler, c_handler_ret);
	walk(&s, c_restorer, c_restorer_sys);
	walk(&s, c_main_sig, c_main_end);
	run_open(&r, &s, 4);
	rc = hwt_cursor_new(r.h, img, &c, &err);
	CHECK("cursor: starts at the newest", rc == 0 &&
	      hwt_cursor_pos(c) == hwt_history_count(r.h) &&
	      pos_addr(c, r.h) == A(c_main_end), "rc %d: %s", rc, err.msg);

	hwt_cursor_goto(c, nth(r.h, c_leaf_ret, 2), &err);
	rc = hwt_cursor_finish(c, HWT_BACKWARD, &err);
	CHECK("cursor: reverse finish to the call", rc == HWT_MOVED &&
	      hwt_cursor_pos(c) == nth(r.h, c_a_call_leaf, 2), "rc %d pos %llu",
	      rc, (unsigned long long)hwt_cursor_pos(c));
	rc = hwt_cursor_finish(c, HWT_BACKWARD, &err);
	CHECK("cursor: reverse finish out of c_a", rc == HWT_MOVED &&
	      pos_addr(c, r.h) == A(c_main_call_a), "rc %d at %#llx", rc,
	      (unsigned long long)pos_addr(c, r.h));
	rc = hwt_cursor_finish(c, HWT_BACKWARD, &err);
	CHECK("cursor: reverse finish at the top", rc == HWT_BOUNDARY &&
	      hwt_cursor_pos(c) == 1, "rc %d pos %llu", rc,
	      (unsigned long long)hwt_cursor_pos(c));
	hwt_cursor_goto(c, nth(r.h, c_leaf, 1), &err);
	rc = hwt_cursor_finish(c, HWT_FORWARD, &err);
	CHECK("cursor: finish to after the call", rc == HWT_MOVED &&
	      hwt_cursor_pos(c) == nth(r.h, c_a_after_leaf, 1), "rc %d pos %llu",
	      rc, (unsigned long long)hwt_cursor_pos(c));
	rc = hwt_cursor_finish(c, HWT_FORWARD, &err);
	CHECK("cursor: finish over the second call", rc == HWT_MOVED &&
	      pos_addr(c, r.h) == A(c_main_after_a), "at %#llx",
	      (unsigned long long)pos_addr(c, r.h));

	/* Signal: handler and sigreturn trampoline are frames of their own. */
	hwt_cursor_goto(c, nth(r.h, c_handler, 1), &err);
	rc = hwt_cursor_finish(c, HWT_BACKWARD, &err);
	CHECK("cursor: reverse finish out of a handler", rc == HWT_MOVED &&
	      pos_addr(c, r.h) == A(c_main_resume), "rc %d at %#llx", rc,
	      (unsigned long long)pos_addr(c, r.h));
	hwt_cursor_goto(c, nth(r.h, c_handler, 1), &err);
	rc = hwt_cursor_finish(c, HWT_FORWARD, &err);
	CHECK("cursor: finish a handler to the trampoline", rc == HWT_MOVED &&
	      pos_addr(c, r.h) == A(c_restorer), "rc %d at %#llx", rc,
	      (unsigned long long)pos_addr(c, r.h));
	rc = hwt_cursor_finish(c, HWT_FORWARD, &err);
	CHECK("cursor: finish the trampoline", rc == HWT_MOVED &&
	      pos_addr(c, r.h) == A(c_main_sig), "rc %d at %#llx", rc,
	      (unsigned long long)pos_addr(c, r.h));

	/* A signal handler and its trampoline are stepped over. */
	hwt_cursor_goto(c, nth(r.h, c_main_resume, 1), &err);
	rc = hwt_cursor_next(c, HWT_FORWARD, &err);
	CHECK("cursor: next over a signal handler", rc == HWT_BOUNDARY &&
	      hwt_cursor_pos(c) == hwt_history_count(r.h), "rc %d at %#llx",
	      rc, (unsigned long long)pos_addr(c, r.h));

	/* Without line information `next` leaves the function. */
	hwt_cursor_goto(c, nth(r.h, c_a, 1), &err);
	rc = hwt_cursor_next(c, HWT_FORWARD, &err);
	CHECK("cursor: next without lines", rc == HWT_MOVED &&
	      pos_addr(c, r.h) == A(c_main_after_a), "rc %d at %#llx", rc,
	      (unsigned long long)pos_addr(c, r.h));

	/* continue: the nearest hit, never the current position. */
	hwt_cursor_goto(c, nth(r.h, c_leaf, 1), &err);
	bps[0] = A(c_leaf);
	bps[1] = A(c_restorer);
	rc = hwt_cursor_continue(c, HWT_FORWARD, bps, 2, &err);
	CHECK("cursor: continue to the next hit", rc == HWT_HIT &&
	      hwt_cursor_pos(c) == nth(r.h, c_leaf, 2), "rc %d pos %llu", rc,
	      (unsigned long long)hwt_cursor_pos(c));
	rc = hwt_cursor_continue(c, HWT_FORWARD, bps, 2, &err);
	CHECK("cursor: continue to another address", rc == HWT_HIT &&
	      pos_addr(c, r.h) == A(c_restorer), "rc %d", rc);
	rc = hwt_cursor_continue(c, HWT_FORWARD, bps, 2, &err);
	CHECK("cursor: continue to the end", rc == HWT_BOUNDARY &&
	      hwt_cursor_pos(c) == hwt_history_count(r.h), "rc %d pos %llu", rc,
	      (unsigned long long)hwt_cursor_pos(c));
	rc = hwt_cursor_continue(c, HWT_BACKWARD, bps, 1, &err);
	CHECK("cursor: reverse continue", rc == HWT_HIT &&
	      hwt_cursor_pos(c) == nth(r.h, c_leaf, 2), "rc %d pos %llu", rc,
	      (unsigned long long)hwt_cursor_pos(c));

	/* stepi and the ends of the history. */
	hwt_cursor_goto(c, 2, &err);
	rc = hwt_cursor_stepi(c, HWT_BACKWARD, &err);
	CHECK("cursor: stepi back", rc == HWT_MOVED && hwt_cursor_pos(c) == 1,
	      "rc %d", rc);
	rc = hwt_cursor_stepi(c, HWT_BACKWARD, &err);
	CHECK("cursor: stepi before the first", rc == HWT_BOUNDARY &&
	      hwt_cursor_pos(c) == 1, "rc %d", rc);
	rc = hwt_cursor_goto(c, hwt_history_count(r.h) + 1, &err);
	CHECK("cursor: goto past the end", rc == -ERANGE, "rc %d", rc);
	hwt_cursor_free(c);
	run_close(&r);
}

/* A long jump back into the frame being stepped ends the callee: `next`
 * then runs on in that frame, out of it, and stops in its caller. */
static void test_cursor_longjmp(void)
{
	static struct seq s;
	struct hwt_err err = { 0 };
	struct hwt_cursor *c;
	struct run r;
	int rc;

	s.n = 0;
	walk(&s, c_top, c_top_call);
	walk(&s, c_main, c_main_call_a);
	walk(&s, c_a, c_a);
	walk(&s, c_a_call_deep, c_a_call_deep);
	walk(&s, c_deep, c_deep_jmp);
	walk(&s, c_main_resume, c_main_end);
	walk(&s, c_top_after, c_top_after);
	walk(&s, c_top_after + 1, c_top_after + 1);
	run_open(&r, &s, 1000);
	hwt_cursor_new(r.h, img, &c, &err);
	hwt_cursor_goto(c, nth(r.h, c_main_call_a, 1), &err);
	rc = hwt_cursor_next(c, HWT_FORWARD, &err);
	CHECK("cursor: next over a longjmp", rc == HWT_MOVED &&
	      pos_addr(c, r.h) == A(c_top_after), "rc %d at %#llx", rc,
	      (unsigned long long)pos_addr(c, r.h));
	hwt_cursor_free(c);
	run_close(&r);
}

/* A continue without breakpoints seeks to its bound: it must stop where
 * walking every instruction stops (a breakpoint at an address nothing
 * runs makes the walk), from every instruction, either way, for every
 * bound, gaps at the bound included. */
static void continue_seek_is_walk(struct hwt_cursor *c, struct hwt_history *h)
{
	const uint64_t nowhere = 1, n = hwt_history_count(h);
	struct hwt_err err = { 0 };
	struct hwt_item it;
	size_t bad = 0, tried = 0;

	for (uint64_t from = 1; from <= n; from++) {
		if (hwt_history_get(h, from, &it, NULL) ||
		    it.kind != HWT_ITEM_INSN)
			continue;
		for (int d = 0; d < 2; d++) {
			enum hwt_dir dir = d ? HWT_FORWARD : HWT_BACKWARD;

			for (uint64_t bound = 0; bound <= n + 1; bound++) {
				uint64_t b = bound == n + 1 ? UINT64_MAX : bound,
					 walked;
				int rw, rs;

				hwt_cursor_goto(c, from, &err);
				rw = hwt_cursor_continue_within(c, dir, &nowhere,
								1, b, &err);
				walked = hwt_cursor_pos(c);
				hwt_cursor_goto(c, from, &err);
				rs = hwt_cursor_continue_within(c, dir, NULL, 0,
								b, &err);
				tried++;
				bad += rw != rs || walked != hwt_cursor_pos(c);
			}
		}
	}
	CHECK("cursor gap: a continue without breakpoints stops where the "
	      "walk does", tried > 20 && bad == 0, "%zu of %zu differ", bad,
	      tried);
}

/* A gap stops finish on its far side; stepi goes over it. */
static void test_cursor_gap(void)
{
	static struct seq s;
	struct hwt_err err = { 0 };
	struct hwt_cursor *c;
	struct hwt_item it;
	struct run r;
	size_t size;
	int rc;

	s.n = 0;
	walk(&s, c_main, c_main_call_a);          /* chunk 1 */
	walk(&s, c_a, c_a_after_leaf);            /* chunk 2 (3 insns) */
	walk(&s, c_a_call_deep, c_a_ret);         /* chunk 3 */
	walk(&s, c_main_after_a, c_main_after_a);
	r.trace = encode(&s, 2, &size);
	r.trace[chunk_at(r.trace, size, 1)] ^= 0x55;
	hwt_history_open_sw(r.trace, size, 0, img, &r.h, &err);
	r.calls = NULL;
	hwt_cursor_new(r.h, img, &c, &err);
	hwt_history_get(r.h, 3, &it, NULL);
	CHECK("cursor gap: setup", it.kind == HWT_ITEM_GAP, "item 3 is no gap");
	hwt_cursor_goto(c, 4, &err);
	rc = hwt_cursor_finish(c, HWT_BACKWARD, &err);
	CHECK("cursor gap: finish stops beyond a gap", rc == HWT_BOUNDARY &&
	      hwt_cursor_pos(c) == 2, "rc %d pos %llu", rc,
	      (unsigned long long)hwt_cursor_pos(c));
	rc = hwt_cursor_stepi(c, HWT_FORWARD, &err);
	CHECK("cursor gap: stepi over a gap", rc == HWT_MOVED &&
	      hwt_cursor_pos(c) == 4, "rc %d pos %llu", rc,
	      (unsigned long long)hwt_cursor_pos(c));
	rc = hwt_cursor_goto(c, 3, &err);
	CHECK("cursor gap: goto a gap", rc == -EINVAL && strstr(err.msg, "gap"),
	      "rc %d: %s", rc, err.msg);
	continue_seek_is_walk(c, r.h);
	hwt_cursor_free(c);
	run_close(&r);
}

int main(void)
{
	struct hwt_err err = { 0 };

	dl_iterate_phdr(phdr_cb, NULL);
	hwt_image_new(&img, &err);
	if (hwt_image_add_elf(img, "/proc/self/exe", self_load, &err)) {
		printf("FAIL setup: %s\n", err.msg);
		return 1;
	}
	RUN(test_call_return_tail);
	RUN(test_longjmp);
	RUN(test_started_deep);
	RUN(test_no_drift);
	RUN(test_signal);
	RUN(test_gap);
	RUN(test_cursor);
	RUN(test_cursor_longjmp);
	RUN(test_cursor_gap);
	hwt_image_free(img);
	return check_exit();
}
