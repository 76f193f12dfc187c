// SPDX-License-Identifier: BSD-2-Clause
/* test_replay_cursor.c - stepping by source line, forward and backward.
 *
 * A small C program is compiled at test time (cc -g -O0) and mapped, not
 * run: a tiny simulator follows its calls, returns and jumps (each
 * conditional jump taken three times, for the loop) to produce the trace.
 * The expected stops are the ones GDB 13 makes with `record full` on the
 * same program built by Debian 12's gcc: the line-table rows and the
 * rules for entering and leaving functions decide them, so the checks
 * name the line, the function, whether the stop is at the start of a row
 * and, where GDB has two candidates on one line, which one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-replay.h"
#include "replay-int.h"
#include "check.h"
#include "xorshift.h"

/* Line numbers matter: the checks below refer to them. */
static const char subject[] =
	"int g;\n"                                 /* 1 */
	"int leaf(int x)\n"                        /* 2 */
	"{\n"                                      /* 3 */
	"\tg += x;\n"                              /* 4 */
	"\treturn x * 2;\n"                        /* 5 */
	"}\n"                                      /* 6 */
	"int mid(int x)\n"                         /* 7 */
	"{\n"                                      /* 8 */
	"\tint y = leaf(x);\n"                     /* 9 */
	"\ty += 1;\n"                              /* 10 */
	"\treturn y;\n"                            /* 11 */
	"}\n"                                      /* 12 */
	"int main(void)\n"                         /* 13 */
	"{\n"                                      /* 14 */
	"\tint a = 1;\n"                           /* 15 */
	"\ta = mid(a) + 3;\n"                      /* 16 */
	"\ta += 7;\n"                              /* 17 */
	"\tfor (int i = 0; i < 3; i++) g++;\n"     /* 18 */
	"\treturn a;\n"                            /* 19 */
	"}\n";                                     /* 20 */

#define LOAD 0x555555554000ull
#define MAXN 4096

static struct hwt_image *img;
static struct hwt_history *hist;
static uint64_t addrs[MAXN];

/* Follow the program from main until main returns. */
static size_t simulate(uint64_t entry)
{
	uint64_t stack[64], jcc[16] = { 0 };
	int sp = 0, taken[16] = { 0 }, njcc = 0;
	uint64_t pc = entry;
	size_t n = 0;

	stack[sp++] = 0;
	while (n < MAXN) {
		struct hwt_insn in;
		uint8_t b[16];
		int32_t rel;
		int k;

		addrs[n++] = pc;
		if (hwt_image_insn(img, pc, false, &in) ||
		    hwt_image_read(img, pc, b, sizeof(b)) < in.len)
			return 0;
		switch (in.cls) {
		case HWT_INSN_CALL:
			if (b[0] != 0xe8 || sp == 64)
				return 0;
			memcpy(&rel, b + 1, 4);
			stack[sp++] = pc + in.len;
			pc += in.len + (uint64_t)(int64_t)rel;
			continue;
		case HWT_INSN_RET:
			pc = stack[--sp];
			if (!pc)
				return n;
			continue;
		case HWT_INSN_JUMP:
			if (b[0] == 0xeb)
				rel = (int8_t)b[1];
			else if (b[0] == 0xe9)
				memcpy(&rel, b + 1, 4);
			else
				return 0;
			pc += in.len + (uint64_t)(int64_t)rel;
			continue;
		case HWT_INSN_CJUMP:
			for (k = 0; k < njcc && jcc[k] != pc; k++)
				;
			if (k == njcc && njcc < 16)
				jcc[njcc++] = pc;
			if (k < 16 && taken[k] < 3) {
				taken[k]++;
				if ((b[0] & 0xf0) == 0x70)
					rel = (int8_t)b[1];
				else
					memcpy(&rel, b + 2, 4);
				pc += in.len + (uint64_t)(int64_t)rel;
				continue;
			}
			break;
		default:
			break;
		}
		pc += in.len;
	}
	return 0;
}

static uint64_t addr_at(uint64_t i)
{
	struct hwt_item it;

	return hwt_history_get(hist, i, &it, NULL) ? 0 : it.addr;
}

static int line_at(uint64_t i)
{
	struct hwt_symbol s;

	return hwt_image_symbolize(img, addr_at(i), &s) ? 0 : s.line;
}

static const char *func_at(uint64_t i)
{
	struct hwt_symbol s;

	if (hwt_image_symbolize(img, addr_at(i), &s) || !s.function)
		return "?";
	return s.function;
}

static bool row_start(uint64_t i)
{
	struct hwt_line l;

	return !hwt_image_line(img, addr_at(i), &l) && l.lo == addr_at(i);
}

static enum hwt_insn_class cls_at(uint64_t i)
{
	struct hwt_item it;

	return hwt_history_get(hist, i, &it, NULL) ? HWT_INSN_OTHER : it.cls;
}

/* The first item at the start of line `line`. */
static uint64_t first_at_line(int line)
{
	for (uint64_t i = 1; i <= hwt_history_count(hist); i++) {
		if (line_at(i) == line && row_start(i))
			return i;
	}
	return 0;
}

static uint64_t first_at_addr(uint64_t a)
{
	for (uint64_t i = 1; i <= hwt_history_count(hist); i++) {
		if (addr_at(i) == a)
			return i;
	}
	return 0;
}

enum move { STEP, NEXT, FINISH };

struct expect {
	const char *name;
	enum move move;
	enum hwt_dir dir;
	int rc;
	const char *func;
	int line;
	bool row_start;          /* false: anywhere in the line */
};

static bool do_move(struct hwt_cursor *c, const struct expect *e)
{
	struct hwt_err err = { 0 };
	uint64_t p;
	int rc;

	rc = e->move == STEP ? hwt_cursor_step(c, e->dir, &err) :
		e->move == NEXT ? hwt_cursor_next(c, e->dir, &err) :
		hwt_cursor_finish(c, e->dir, &err);
	p = hwt_cursor_pos(c);
	CHECK(e->name, rc == e->rc && !strcmp(func_at(p), e->func) &&
	      line_at(p) == e->line && (!e->row_start || row_start(p)),
	      "rc %d (%s) at item %llu %s:%d%s, want %s:%d%s", rc, err.msg,
	      (unsigned long long)p, func_at(p), line_at(p),
	      row_start(p) ? " (row start)" : "", e->func, e->line,
	      e->row_start ? " (row start)" : "");
	return rc == e->rc;
}

static void run(struct hwt_cursor *c, const struct expect *e, size_t n)
{
	for (size_t i = 0; i < n; i++)
		do_move(c, &e[i]);
}

static void test_reverse(struct hwt_cursor *c)
{
	static const struct expect back[] = {
		{ "reverse-next out of a loop", NEXT, HWT_BACKWARD, HWT_MOVED,
		  "main", 18, true },
		{ "reverse-next", NEXT, HWT_BACKWARD, HWT_MOVED, "main", 17, true },
		{ "reverse-next to the return point", NEXT, HWT_BACKWARD,
		  HWT_MOVED, "main", 16, true },
		{ "reverse-next over a call", NEXT, HWT_BACKWARD, HWT_MOVED,
		  "main", 16, true },
	};
	uint64_t p;

	hwt_cursor_goto(c, first_at_line(19), NULL);
	do_move(c, &back[0]);
	/* GDB: the loop's merged row, whose first instruction runs once. */
	p = hwt_cursor_pos(c);
	CHECK("reverse-next out of a loop: first pass", line_at(p - 1) == 18 &&
	      p == first_at_addr(addr_at(p)), "item %llu",
	      (unsigned long long)p);
	do_move(c, &back[1]);
	do_move(c, &back[2]);
	p = hwt_cursor_pos(c);
	CHECK("reverse-next to the return point: after mid returns",
	      cls_at(p - 1) == HWT_INSN_RET && !strcmp(func_at(p - 1), "mid"),
	      "item %llu follows %s", (unsigned long long)p, func_at(p - 1));
	do_move(c, &back[3]);
	p = hwt_cursor_pos(c);
	CHECK("reverse-next over a call: first row of the line",
	      line_at(p - 1) == 15, "item %llu follows line %d",
	      (unsigned long long)p, line_at(p - 1));
}

static void test_into_and_out(struct hwt_cursor *c)
{
	static const struct expect moves[] = {
		{ "step into a function", STEP, HWT_FORWARD, HWT_MOVED, "mid", 9,
		  true },
		{ "step into a nested function", STEP, HWT_FORWARD, HWT_MOVED,
		  "leaf", 4, true },
		{ "reverse-step out of a function", STEP, HWT_BACKWARD,
		  HWT_MOVED, "mid", 9, true },
		{ "reverse-step out again", STEP, HWT_BACKWARD, HWT_MOVED, "main",
		  16, true },
		{ "reverse-step", STEP, HWT_BACKWARD, HWT_MOVED, "main", 15, true },
		{ "reverse-step to the beginning", STEP, HWT_BACKWARD,
		  HWT_BOUNDARY, "main", 14, true },
	};
	uint64_t p;

	hwt_cursor_goto(c, first_at_line(16), NULL);
	do_move(c, &moves[0]);
	p = hwt_cursor_pos(c);
	CHECK("step into a function: after the prologue",
	      line_at(p - 1) == 8 && !strcmp(func_at(p - 1), "mid"),
	      "item %llu follows %s:%d", (unsigned long long)p, func_at(p - 1),
	      line_at(p - 1));
	run(c, moves + 1, 5);
	CHECK("reverse-step to the beginning: item 1", hwt_cursor_pos(c) == 1,
	      "at item %llu", (unsigned long long)hwt_cursor_pos(c));
}

static void test_forward_out(struct hwt_cursor *c)
{
	static const struct expect moves[] = {
		{ "step to the last line", STEP, HWT_FORWARD, HWT_MOVED, "leaf",
		  6, true },
		{ "step out to the next line", STEP, HWT_FORWARD, HWT_MOVED,
		  "mid", 10, true },
		{ "step", STEP, HWT_FORWARD, HWT_MOVED, "mid", 11, true },
		{ "step to a closing brace", STEP, HWT_FORWARD, HWT_MOVED, "mid",
		  12, true },
		{ "step out to a row of the same line", STEP, HWT_FORWARD,
		  HWT_MOVED, "main", 16, true },
		{ "step over the rest of the line", STEP, HWT_FORWARD, HWT_MOVED,
		  "main", 17, true },
		{ "next into a loop", NEXT, HWT_FORWARD, HWT_MOVED, "main", 18,
		  true },
		{ "next over a one-line loop", NEXT, HWT_FORWARD, HWT_MOVED,
		  "main", 19, true },
		{ "next", NEXT, HWT_FORWARD, HWT_MOVED, "main", 20, true },
		{ "next to the end", NEXT, HWT_FORWARD, HWT_BOUNDARY, "main", 20,
		  false },
	};
	static const struct expect back[] = {
		{ "reverse-step into a returned function", STEP, HWT_BACKWARD,
		  HWT_MOVED, "mid", 12, true },
		{ "reverse-step in a callee", STEP, HWT_BACKWARD, HWT_MOVED,
		  "mid", 11, true },
		{ "reverse-step to a line with a call", STEP, HWT_BACKWARD,
		  HWT_MOVED, "mid", 10, true },
		{ "reverse-step into a nested return", STEP, HWT_BACKWARD,
		  HWT_MOVED, "leaf", 6, true },
		{ "reverse-step in the nested callee", STEP, HWT_BACKWARD,
		  HWT_MOVED, "leaf", 5, true },
	};
	uint64_t p;

	hwt_cursor_goto(c, first_at_line(5), NULL);
	run(c, moves, 5);
	p = hwt_cursor_pos(c);
	CHECK("step out to a row of the same line: after the call",
	      cls_at(p - 1) == HWT_INSN_RET, "item %llu",
	      (unsigned long long)p);
	run(c, moves + 5, 5);
	CHECK("next to the end: last item",
	      hwt_cursor_pos(c) == hwt_history_count(hist), "at %llu",
	      (unsigned long long)hwt_cursor_pos(c));

	hwt_cursor_goto(c, first_at_line(17), NULL);
	do_move(c, &(struct expect){ "reverse-step to the return point", STEP,
				     HWT_BACKWARD, HWT_MOVED, "main", 16,
				     true });
	run(c, back, 5);
}

static void test_finish(struct hwt_cursor *c)
{
	uint64_t p, leaf = hwt_image_lookup_function(img, "leaf");
	struct hwt_err err = { 0 };
	int rc;

	hwt_cursor_goto(c, first_at_line(5), NULL);
	do_move(c, &(struct expect){ "finish", FINISH, HWT_FORWARD, HWT_MOVED,
				     "mid", 9, false });
	p = hwt_cursor_pos(c);
	CHECK("finish: right after the call", cls_at(p - 1) == HWT_INSN_RET &&
	      !row_start(p), "item %llu", (unsigned long long)p);
	hwt_cursor_goto(c, first_at_line(5), NULL);
	do_move(c, &(struct expect){ "reverse-finish", FINISH, HWT_BACKWARD,
				     HWT_MOVED, "mid", 9, false });
	CHECK("reverse-finish: at the call", cls_at(hwt_cursor_pos(c)) ==
	      HWT_INSN_CALL, "item %llu", (unsigned long long)hwt_cursor_pos(c));
	hwt_cursor_goto(c, hwt_history_count(hist), NULL);
	rc = hwt_cursor_continue(c, HWT_BACKWARD, &leaf, 1, &err);
	CHECK("reverse-continue to a function", rc == HWT_HIT &&
	      addr_at(hwt_cursor_pos(c)) == leaf, "rc %d", rc);
}

/* Where a continue stops by the definition: the next instruction, one at
 * a time, until one at a breakpoint (HIT), or the bound or history's end
 * (BOUNDARY, at the last instruction reached). */
static uint64_t walk_expect(uint64_t from, bool back, const uint64_t *set,
			    size_t nset, uint64_t bound, int *result)
{
	uint64_t n = hwt_history_count(hist), cur = from;

	*result = HWT_BOUNDARY;
	for (uint64_t i = from;;) {
		uint64_t a;

		if (back ? i <= 1 || i - 1 < bound : i >= n || i + 1 > bound)
			return cur;
		i = back ? i - 1 : i + 1;
		a = addr_at(i);
		for (size_t k = 0; k < nset; k++) {
			if (set[k] == a) {
				*result = HWT_HIT;
				return i;
			}
		}
		cur = i;
	}
}

/* A continue with breakpoints scans a run at a time: it stops where the
 * walk an instruction at a time does, from every kind of place, both
 * ways, with and without a bound, at instruction starts, inside
 * instructions and at addresses the history never reaches. */
static void test_continue_walk(struct hwt_cursor *c)
{
	uint64_t n = hwt_history_count(hist), rng = 0x2545f4914f6cdd1dull;
	size_t cases = 0, wrong = 0;
	char first[160] = "";

	for (uint64_t from = 1; from <= n; from += from < 20 ? 1 : 11) {
		for (int k = 0; k < 12; k++) {
			bool back = k & 1;
			uint64_t set[3], bound, want, got;
			size_t nset = 1 + (size_t)(k / 2) % 3;
			struct hwt_err err = { 0 };
			int rc, want_rc;

			for (size_t j = 0; j < nset; j++) {
				set[j] = addr_at(1 + xorshift64(&rng) % n) +
					 (k % 3 == 2);
			}
			if (k >= 8)
				set[0] = 0x10;    /* never reached */
			bound = k & 2 ? (back ? from / 2 : from + (n - from) / 2)
				      : (back ? 0 : UINT64_MAX);
			want = walk_expect(from, back, set, nset, bound,
					   &want_rc);
			hwt_cursor_goto(c, from, NULL);
			rc = hwt_cursor_continue_within(c, back ? HWT_BACKWARD :
							HWT_FORWARD, set, nset,
							bound, &err);
			got = hwt_cursor_pos(c);
			cases++;
			if (rc == want_rc && got == want)
				continue;
			if (!wrong++)
				snprintf(first, sizeof(first), "from %llu %s, "
					 "bound %llu: rc %d at %llu, want %d "
					 "at %llu", (unsigned long long)from,
					 back ? "back" : "forward",
					 (unsigned long long)bound, rc,
					 (unsigned long long)got, want_rc,
					 (unsigned long long)want);
		}
	}
	CHECK("continue with breakpoints stops where a walk does", wrong == 0,
	      "%zu of %zu cases differ, first %s", wrong, cases, first);
}

static void test_calls(void)
{
	static const struct {
		const char *func;
		int level, lmin, lmax;
	} want[] = {
		{ "main", 0, 14, 16 }, { "mid", 1, 8, 9 }, { "leaf", 2, 3, 6 },
		{ "mid", 1, 9, 12 }, { "main", 0, 16, 20 },
	};
	struct hwt_calls *calls;
	struct hwt_err err = { 0 };
	size_t i = 0, n;
	int rc = hwt_calls_build(hist, img, 0, 0, &calls, &err);

	n = rc ? 0 : hwt_calls_count(calls);
	for (; rc == 0 && i < n && i < 5; i++) {
		const struct hwt_call_segment *s = hwt_calls_get(calls, i);
		size_t fl = s->file ? strlen(s->file) : 0;

		if (strcmp(s->function, want[i].func) ||
		    s->level != want[i].level || s->line_min != want[i].lmin ||
		    s->line_max != want[i].lmax || fl < 6 ||
		    strcmp(s->file + fl - 6, "subj.c"))
			break;
	}
	CHECK("calls with source lines", rc == 0 && n == 5 && i == 5,
	      "rc %d (%s), %zu segments, segment %zu differs", rc, err.msg, n,
	      i);
	if (!rc)
		hwt_calls_free(calls);
}

int main(void)
{
	char dir[] = "/tmp/hwt-test-cursor-XXXXXX", cmd[600], path[512];
	struct hwt_err err = { 0 };
	struct hwt_cursor *c;
	uint8_t *trace;
	size_t n, size = 0;
	FILE *f;
	int rc;

	if (!mkdtemp(dir)) {
		printf("FAIL setup: mkdtemp\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/subj.c", dir);
	f = fopen(path, "w");
	fputs(subject, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cd '%s' && cc -g -O0 -fcf-protection=none "
		 "-o subj subj.c", dir);
	rc = system(cmd);
	snprintf(path, sizeof(path), "%s/subj", dir);
	hwt_image_new(&img, &err);
	if (rc == 0)
		rc = hwt_image_add_elf(img, path, LOAD, &err);
	n = rc ? 0 : simulate(hwt_image_lookup_function(img, "main"));
	CHECK("subject compiled and simulated", rc == 0 && n > 50,
	      "rc %d (%s), %zu instructions", rc, err.msg, n);
	if (rc || n <= 50)
		return check_exit();

	/* Small chunks: moves cross many segments. */
	trace = malloc(n * 16);
	for (size_t s = 0; s < n; s += 7) {
		size_t e = s + 7 < n ? s + 7 : n, at = size;
		struct hwt_sw_chunk_hdr h = {
			.first_pc = addrs[s], .first_seq = s,
			.last_pc = addrs[e - 1], .insn_count = (uint32_t)(e - s),
		};

		size += HWT_SW_CHUNK_HDR_SIZE;
		for (size_t i = s + 1; i < e; i++)
			size += hwt_sw_encode_step(addrs[i - 1], addrs[i], false,
						   trace + size);
		h.payload_size = (uint32_t)(size - at - HWT_SW_CHUNK_HDR_SIZE);
		hwt_sw_chunk_hdr_pack(&h, trace + at);
	}
	rc = hwt_history_open_sw(trace, size, 0, img, &hist, &err);
	if (!rc)
		rc = hwt_cursor_new(hist, img, &c, &err);
	CHECK("cursor over the subject", rc == 0, "rc %d: %s", rc, err.msg);
	if (!rc) {
		RUN(test_reverse, c);
		RUN(test_into_and_out, c);
		RUN(test_forward_out, c);
		RUN(test_finish, c);
		RUN(test_continue_walk, c);
		RUN(test_calls);
		hwt_cursor_free(c);
		hwt_history_free(hist);
	}
	free(trace);
	hwt_image_free(img);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("warning: could not remove %s\n", dir);
	return check_exit();
}
