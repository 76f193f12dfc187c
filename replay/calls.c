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

int hwt_calls_build(struct hwt_history *h, struct hwt_image *img,
		    uint64_t first, uint64_t last, struct hwt_calls **out,
		    struct hwt_err *err)
{
	struct hwt_calls *c;
	struct hwt_item prev = { 0 };
	ssize_t cur = -1;
	int level = 0, min_level = 0, rc = 0;

	if (!img)
		return hwt_err_set(err, EINVAL, "building calls needs the "
				   "image the history was opened with");
	if (first == 0 && last == 0) {
		first = 1;
		last = hwt_history_count(h);
	}
	if (first == 0 || first > last || last > hwt_history_count(h))
		return hwt_err_set(err, EINVAL, "items %llu..%llu are not a "
				   "range of the history (1..%llu)",
				   (unsigned long long)first,
				   (unsigned long long)last,
				   (unsigned long long)hwt_history_count(h));
	c = calloc(1, sizeof(*c));
	if (!c)
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (uint64_t i = first; i <= last; i++) {
		struct hwt_item it;
		struct hwt_func f = { 0 };
		struct hwt_line ln;
		ssize_t s, up = -1;
		bool seq, open = true;

		rc = hwt_history_get(h, i, &it, err);
		if (rc)
			break;
		if (it.kind == HWT_ITEM_GAP) {
			/* The stack is unknown after a gap; keep the level. */
			if (cur >= 0)
				level = c->v[cur].pub.level;
			rc = (int)push_seg(c, i, level, -1, 0, NULL, true);
			if (rc < 0)
				break;
			rc = 0;
			cur = -1;
			continue;
		}
		hwt_image_func(img, it.addr, &f);
		if (cur >= 0) {
			struct cseg *p = &c->v[cur];

			seq = prev.len && it.addr == prev.addr + prev.len;
			level = p->pub.level;
			up = p->up;
			if (it.flags & HWT_ITEM_ASYNC ||
			    (prev.cls == HWT_INSN_CALL && !seq)) {
				level++;
				up = cur;
			} else if (prev.cls == HWT_INSN_RET &&
				   !(seq && arm_isa(prev.isa))) {
				s = on_stack(c, p->up, f.start);
				if (s >= 0) {
					level = c->v[s].pub.level;
					up = c->v[s].up;
				} else {
					/* Returned past where the trace
					 * begins: one level up, under the
					 * caller's caller if known. */
					level--;
					up = p->up >= 0 ? c->v[p->up].up : -1;
				}
			} else if (f.start != p->func) {
				s = !seq && f.start && it.addr != f.start ?
					on_stack(c, p->up, f.start) : -1;
				if (s >= 0) {
					level = c->v[s].pub.level;
					up = c->v[s].up;
				}
			} else {
				open = false;
			}
		}
		if (open) {
			s = push_seg(c, i, level, up, f.start, f.name, false);
			if (s < 0) {
				rc = -ENOMEM;
				break;
			}
			cur = s;
			if (level < min_level)
				min_level = level;
			/* Like GDB, lines count only in the function's own
			 * file, not in the headers inlined into it. */
			if (f.start && !hwt_image_line(img, f.start, &ln))
				c->v[cur].pub.file = ln.file;
		}
		c->v[cur].pub.last = i;
		if (!hwt_image_line(img, it.addr, &ln)) {
			struct hwt_call_segment *p = &c->v[cur].pub;

			if (!p->file)
				p->file = ln.file;
			if (hwt_same_file(ln.file, p->file)) {
				if (!p->line_min || ln.line < p->line_min)
					p->line_min = ln.line;
				if (ln.line > p->line_max)
					p->line_max = ln.line;
			}
		}
		prev = it;
	}
	if (rc) {
		hwt_calls_free(c);
		if (rc == -ENOMEM)
			return hwt_err_set(err, ENOMEM, "out of memory "
					   "building the call history");
		return rc;
	}
	for (size_t i = 0; i < c->n; i++)
		c->v[i].pub.level -= min_level;
	*out = c;
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
