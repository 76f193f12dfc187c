// SPDX-License-Identifier: BSD-2-Clause
/* calls.c - function-call segments with nesting levels, like GDB's
 * `record function-call-history`.
 *
 * A segment is a maximal run of instructions in one function instance.
 * Segments are linked to the segment they would return to (up), which is
 * the call stack as far as the trace shows it:
 *   - a call (not to the next instruction, which is PIC's way to read the
 *     pc) or an asynchronous entry (signal handler) opens a segment one
 *     level deeper;
 *   - a return (on Arm only one that transferred control: a conditional
 *     return not taken, or one a hardware decoder reports inside a
 *     straight range, is an ordinary instruction; an x86 return always
 *     transfers, even to the next address) goes back to the level of the nearest segment up the stack
 *     that is in the function returned to; if none is (recording began
 *     deeper than the caller, or the stack was switched), one level up;
 *   - a jump to another function's first instruction (tail call, PLT stub
 *     to its target) or a fall-through into another function switches
 *     function at the same level; a jump into the middle of a function
 *     that is up the stack (longjmp, sigreturn) pops back to its level.
 * Levels are shifted at the end so the smallest is 0, as GDB shows them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "replay-int.h"
#include "array.h"

/* How far up the stack a return or long jump looks for its function;
 * bounds the cost of a corrupted stack, not real recursion. */
#define MAX_STACK_SEARCH 4096

static bool arm_isa(enum hwt_isa isa)
{
	return isa == HWT_ISA_A64 || isa == HWT_ISA_A32 || isa == HWT_ISA_T32;
}

struct cseg {
	struct hwt_call_segment pub;
	uint64_t func;           /* start address; 0 when unknown */
	ssize_t up;              /* segment returned to, -1 if unknown */
};

struct hwt_calls {
	struct cseg *v;
	size_t n, cap;
};

static ssize_t push_seg(struct hwt_calls *c, uint64_t index, int level,
			ssize_t up, uint64_t func, const char *name, bool gap)
{
	if (HWT_ARRAY_RESERVE(c->v, c->cap, c->n + 1, 256))
		return -ENOMEM;
	c->v[c->n] = (struct cseg){
		.pub = { .first = index, .last = index, .level = level,
			 .function = name, .gap = gap },
		.func = func, .up = up,
	};
	return (ssize_t)c->n++;
}

/* The nearest segment from s upwards that runs func, or -1. */
static ssize_t on_stack(const struct hwt_calls *c, ssize_t s, uint64_t func)
{
	for (int i = 0; s >= 0 && i < MAX_STACK_SEARCH; i++) {
		if (c->v[s].func == func)
			return s;
		s = c->v[s].up;
	}
	return -1;
}

/* The state of a build between instructions. */
struct build {
	struct hwt_calls *c;
	struct hwt_image *img;
	ssize_t cur;             /* segment of the last instruction; -1 */
	int level, min_level;
	/* The instruction before, once there was one (a gap keeps it). */
	uint64_t prev_addr;
	uint8_t prev_len, prev_cls;
	enum hwt_isa prev_isa;
	struct hwt_func func;    /* the function looked up last; .end 0:
				  * none yet */
};

/* A gap item: the stack is unknown after it; the level is kept. */
static int add_gap(struct build *b, uint64_t index)
{
	if (b->cur >= 0)
		b->level = b->c->v[b->cur].pub.level;
	if (push_seg(b->c, index, b->level, -1, 0, NULL, true) < 0)
		return -ENOMEM;
	b->cur = -1;
	return 0;
}

/* The level and up of the segment addr begins when it is the current
 * one's successor (seq: addr follows the instruction before); false when
 * addr stays in the current segment. */
static bool next_segment(struct build *b, uint64_t addr, bool seq,
			 bool async, int *level, ssize_t *up)
{
	const struct cseg *p = &b->c->v[b->cur];
	uint64_t func = b->func.start;
	ssize_t s;

	*level = p->pub.level;
	*up = p->up;
	if (async || (b->prev_cls == HWT_INSN_CALL && !seq)) {
		(*level)++;
		*up = b->cur;
	} else if (b->prev_cls == HWT_INSN_RET &&
		   !(seq && arm_isa(b->prev_isa))) {
		s = on_stack(b->c, p->up, func);
		if (s >= 0) {
			*level = b->c->v[s].pub.level;
			*up = b->c->v[s].up;
		} else {
			/* Returned past where the trace begins: one level
			 * up, under the caller's caller if known. */
			(*level)--;
			*up = p->up >= 0 ? b->c->v[p->up].up : -1;
		}
	} else if (func != p->func) {
		s = !seq && func && addr != func ?
			on_stack(b->c, p->up, func) : -1;
		if (s >= 0) {
			*level = b->c->v[s].pub.level;
			*up = b->c->v[s].up;
		}
	} else {
		return false;
	}
	return true;
}

/* The line of addr counts in its segment when it is in the segment's
 * file: like GDB, not the headers inlined into the function. */
static void add_line(struct build *b, uint64_t addr)
{
	struct hwt_call_segment *p = &b->c->v[b->cur].pub;
	struct hwt_line ln;

	if (hwt_image_line(b->img, addr, &ln))
		return;
	if (!p->file)
		p->file = ln.file;
	if (hwt_same_file(ln.file, p->file)) {
		if (!p->line_min || ln.line < p->line_min)
			p->line_min = ln.line;
		if (ln.line > p->line_max)
			p->line_max = ln.line;
	}
}

/* Instruction number index at addr. */
static int add_insn(struct build *b, uint64_t index, uint64_t addr,
		    uint8_t len, uint8_t cls, enum hwt_isa isa, bool async)
{
	bool seq = b->prev_len && addr == b->prev_addr + b->prev_len;
	bool open = true;
	int level = b->level;
	ssize_t up = -1, s;

	if (addr < b->func.start || addr >= b->func.end) {
		b->func = (struct hwt_func){ 0 };
		hwt_image_func(b->img, addr, &b->func);
	}
	if (b->cur >= 0)
		open = next_segment(b, addr, seq, async, &level, &up);
	if (open) {
		struct hwt_line ln;

		s = push_seg(b->c, index, level, up, b->func.start,
			     b->func.name, false);
		if (s < 0)
			return -ENOMEM;
		b->cur = s;
		b->level = level;
		if (level < b->min_level)
			b->min_level = level;
		if (b->func.start && !hwt_image_line(b->img, b->func.start,
						     &ln))
			b->c->v[s].pub.file = ln.file;
	}
	b->c->v[b->cur].pub.last = index;
	add_line(b, addr);
	b->prev_addr = addr;
	b->prev_len = len;
	b->prev_cls = cls;
	b->prev_isa = isa;
	return 0;
}

static int add_block(void *arg, const struct hwt_block_view *v)
{
	struct build *b = arg;

	if (v->gap)
		return add_gap(b, v->index);
	for (uint32_t k = 0; k < v->count; k++) {
		int rc = add_insn(b, v->index + k, v->begin + v->insns[k].off,
				  v->insns[k].len, v->insns[k].cls, v->isa,
				  k == 0 && v->async);

		if (rc)
			return rc;
	}
	return 0;
}

int hwt_calls_build(struct hwt_history *h, struct hwt_image *img,
		    uint64_t first, uint64_t last, struct hwt_calls **out,
		    struct hwt_err *err)
{
	struct build b = { .img = img, .cur = -1 };
	int rc;

	if (!img)
		return hwt_err_set(err, EINVAL, "building calls needs the "
				   "image the history was opened with");
	if (first == 0 && last == 0) {
		first = 1;
		last = hwt_history_count(h);
	}
	if (!(b.c = calloc(1, sizeof(*b.c))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	rc = hwt_history_blocks(h, first, last, add_block, &b, err);
	if (rc) {
		hwt_calls_free(b.c);
		if (rc == -ENOMEM)
			return hwt_err_set(err, ENOMEM, "out of memory "
					   "building the call history");
		return rc;
	}
	for (size_t i = 0; i < b.c->n; i++)
		b.c->v[i].pub.level -= b.min_level;
	*out = b.c;
	return 0;
}

size_t hwt_calls_count(const struct hwt_calls *c)
{
	return c->n;
}

const struct hwt_call_segment *hwt_calls_get(const struct hwt_calls *c,
					     size_t i)
{
	return i < c->n ? &c->v[i].pub : NULL;
}

void hwt_calls_free(struct hwt_calls *c)
{
	if (!c)
		return;
	free(c->v);
	free(c);
}
