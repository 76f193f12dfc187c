// SPDX-License-Identifier: BSD-2-Clause
/* cursor.c - a position in the history moved like (reverse) execution.
 *
 * The moves follow GDB's infrun over a `record` target, so that a user
 * sees the same stops in hwtrace as in GDB (checked against GDB 13 with
 * `record full` on -O0 code):
 *   - stepping ranges are line-table rows as GDB reduces them (lines.c);
 *     forward, a step ends at the start of a row of another line;
 *     backward, at the start of the row it is in, except at a function's
 *     entry, where it goes on back into the caller;
 *   - entering a row in its middle (returning into a caller, stepping
 *     back onto a call) makes that row the stepping range;
 *   - `step` enters callees that have line information: forward to the
 *     end of the prologue (the end of the function's first row), backward
 *     through the callee's return to the start of its last row; PLT stubs
 *     and the dynamic linker's lazy binding are stepped through to the
 *     function they lead to; `next` and callees without line information
 *     are stepped over;
 *   - signal handlers (asynchronous entries) are always stepped over.
 * Call depth comes from the instruction classes: a call is one frame
 * deeper (except a call to the next instruction, PIC's way to read the
 * pc), a return one shallower; a signal delivery adds the signal frame
 * and the handler's, the sigreturn (a syscall that does not fall through)
 * leaves the signal frame. Forward moves also track which function each
 * frame they entered runs, so a long jump back into one of them (GDB
 * stops there too) ends the frames below; a long jump to a frame above
 * where the move began is not recognized. A gap in the trace ends any
 * move but stepi and continue at the first instruction beyond it,
 * reported as a boundary: call depth and line are unknown across it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "replay-int.h"

struct hwt_cursor {
	struct hwt_history *h;
	struct hwt_image *img;
	struct hwt_item it;      /* the instruction at the position */
};

int hwt_cursor_new(struct hwt_history *h, struct hwt_image *img,
		   struct hwt_cursor **out, struct hwt_err *err)
{
	struct hwt_cursor *c;
	uint64_t i = hwt_history_count(h);
	int rc;

	if (!img)
		return hwt_err_set(err, EINVAL, "a cursor needs the image the "
				   "history was opened with");
	c = calloc(1, sizeof(*c));
	if (!c)
		return hwt_err_set(err, ENOMEM, "out of memory");
	c->h = h;
	c->img = img;
	for (; i > 0; i--) {
		rc = hwt_history_get(h, i, &c->it, err);
		if (rc) {
			free(c);
			return rc;
		}
		if (c->it.kind == HWT_ITEM_INSN) {
			*out = c;
			return 0;
		}
	}
	free(c);
	return hwt_err_set(err, ENODATA, "the history holds no instructions; "
			   "record for longer or check the trace");
}

void hwt_cursor_free(struct hwt_cursor *c)
{
	free(c);
}

uint64_t hwt_cursor_pos(const struct hwt_cursor *c)
{
	return c->it.index;
}

int hwt_cursor_goto(struct hwt_cursor *c, uint64_t index, struct hwt_err *err)
{
	struct hwt_item it;
	int rc = hwt_history_get(c->h, index, &it, err);

	if (rc)
		return rc;
	if (it.kind != HWT_ITEM_INSN)
		return hwt_err_set(err, EINVAL, "item %llu is a gap (%s); go "
				   "to an instruction before or after it",
				   (unsigned long long)index, it.gap_reason);
	c->it = it;
	return 0;
}

/* The next instruction from cur in dir, skipping gap items (*gap tells).
 * 0: found, 1: none left (a boundary), or a negative errno. */
static int adjacent(struct hwt_cursor *c, const struct hwt_item *cur,
		    enum hwt_dir dir, struct hwt_item *nx, bool *gap,
		    struct hwt_err *err)
{
	uint64_t i = cur->index, n = hwt_history_count(c->h);
	int rc;

	*gap = false;
	for (;;) {
		if (dir == HWT_BACKWARD ? i <= 1 : i >= n)
			return 1;
		i = dir == HWT_BACKWARD ? i - 1 : i + 1;
		rc = hwt_history_get(c->h, i, nx, err);
		if (rc)
			return rc;
		if (nx->kind == HWT_ITEM_INSN)
			return 0;
		*gap = true;
	}
}

/* Change of call depth from instruction a to b, executed next. */
static int depth_step(const struct hwt_item *a, const struct hwt_item *b)
{
	bool seq = a->len && b->addr == a->addr + a->len;

	if (b->flags & HWT_ITEM_ASYNC)
		return 2 + (a->cls == HWT_INSN_CALL) - (a->cls == HWT_INSN_RET);
	switch (a->cls) {
	case HWT_INSN_CALL:
		return seq ? 0 : 1;
	case HWT_INSN_RET:
		return -1;
	case HWT_INSN_SYSCALL:
		return seq ? 0 : -1;
	default:
		return 0;
	}
}

static int stop(struct hwt_cursor *c, const struct hwt_item *it, int result)
{
	c->it = *it;
	return result;
}

int hwt_cursor_stepi(struct hwt_cursor *c, enum hwt_dir dir,
		     struct hwt_err *err)
{
	struct hwt_item nx;
	bool gap;
	int rc = adjacent(c, &c->it, dir, &nx, &gap, err);

	if (rc < 0)
		return rc;
	return rc ? HWT_BOUNDARY : stop(c, &nx, HWT_MOVED);
}

static uint64_t func_start(struct hwt_cursor *c, uint64_t addr)
{
	struct hwt_func f;

	return hwt_image_func(c->img, addr, &f) ? 0 : f.start;
}

/* Functions of the frames a forward move has entered, by depth (0: the
 * frame it started in). A jump from elsewhere into the middle of one of
 * them is a long jump back to that frame (longjmp, exception unwinding),
 * which counting calls and returns alone would never notice. */
struct frames {
	uint64_t *fn;
	size_t cap;
};

static int frames_set(struct frames *f, int depth, uint64_t fn)
{
	if (HWT_ARRAY_RESERVE(f->fn, f->cap, (size_t)depth + 1, 64))
		return -ENOMEM;
	f->fn[depth] = fn;
	return 0;
}

/* The call depth after the forward step from cur to nx; *depth < 0 once
 * the starting frame is left. */
static int forward_depth(struct hwt_cursor *c, struct frames *f,
			 const struct hwt_item *cur, const struct hwt_item *nx,
			 int *depth)
{
	int d = depth_step(cur, nx), rc = 0;
	uint64_t g;

	if (d || *depth < 0 || (cur->len && nx->addr == cur->addr + cur->len)) {
		/* Frames a signal delivery pushes below the handler's have
		 * no function of their own. */
		for (int k = *depth + 1; k <= *depth + d && !rc; k++)
			rc = frames_set(f, k, k == *depth + d ?
					func_start(c, nx->addr) : 0);
		*depth += d;
		return rc;
	}
	g = func_start(c, nx->addr);
	if (g == f->fn[*depth])
		return 0;
	for (int k = *depth - 1; g && nx->addr != g && k >= 0; k--) {
		if (f->fn[k] == g) {
			*depth = k;
			return 0;
		}
	}
	/* A tail call or a jump: the same frame, another function. */
	f->fn[*depth] = g;
	return 0;
}

static int finish(struct hwt_cursor *c, enum hwt_dir dir, struct frames *f,
		  struct hwt_err *err)
{
	struct hwt_item cur = c->it, nx;
	int depth = 0, rc;
	bool gap;

	if (frames_set(f, 0, func_start(c, cur.addr)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (;;) {
		rc = adjacent(c, &cur, dir, &nx, &gap, err);
		if (rc < 0)
			return rc;
		if (rc)
			return stop(c, &cur, HWT_BOUNDARY);
		if (gap)
			return stop(c, &nx, HWT_BOUNDARY);
		if (dir == HWT_BACKWARD)
			depth -= depth_step(&nx, &cur);
		else if (forward_depth(c, f, &cur, &nx, &depth))
			return hwt_err_set(err, ENOMEM, "out of memory");
		/* Forward: the caller's instruction after the return;
		 * backward: the caller's call instruction. */
		if (depth < 0)
			return stop(c, &nx, HWT_MOVED);
		cur = nx;
	}
}

int hwt_cursor_finish(struct hwt_cursor *c, enum hwt_dir dir,
		      struct hwt_err *err)
{
	struct frames f = { 0 };
	int rc = finish(c, dir, &f, err);

	free(f.fn);
	return rc;
}

static int addr_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A continue with no breakpoint: nothing on the way can stop it, so it
 * seeks to the instruction nearest the bound on this side of it (past
 * the gaps there) instead of walking every instruction between. */
static int continue_to_bound(struct hwt_cursor *c, enum hwt_dir dir,
			     uint64_t bound, struct hwt_err *err)
{
	uint64_t n = hwt_history_count(c->h), i;
	struct hwt_item it;
	int rc;

	if (dir == HWT_BACKWARD)
		i = bound > 1 ? bound : 1;
	else
		i = bound < n ? bound : n;
	for (;; i = dir == HWT_BACKWARD ? i + 1 : i - 1) {
		if (dir == HWT_BACKWARD ? i >= c->it.index : i <= c->it.index)
			return HWT_BOUNDARY;
		rc = hwt_history_get(c->h, i, &it, err);
		if (rc)
			return rc;
		if (it.kind == HWT_ITEM_INSN)
			return stop(c, &it, HWT_BOUNDARY);
	}
}

/* The nearest instruction at a breakpoint, found by
 * hwt_history_find_pc: a loop of a few instructions costs a lookup per
 * run of it, not per instruction. Gaps do not stop a continue: the
 * breakpoint may lie beyond. */
int hwt_cursor_continue_within(struct hwt_cursor *c, enum hwt_dir dir,
			       const uint64_t *addrs, size_t naddrs,
			       uint64_t bound, struct hwt_err *err)
{
	uint64_t n = hwt_history_count(c->h), at = c->it.index, lo, hi, hit;
	bool back = dir == HWT_BACKWARD;
	struct hwt_item it;
	uint64_t *set;
	int rc;

	if (!naddrs)
		return continue_to_bound(c, dir, bound, err);
	set = malloc(naddrs * sizeof(*set));
	if (!set)
		return hwt_err_set(err, ENOMEM, "out of memory");
	memcpy(set, addrs, naddrs * sizeof(*set));
	qsort(set, naddrs, sizeof(*set), addr_cmp);
	if (back) {
		lo = bound > 1 ? bound : 1;
		hi = at - 1;
	} else {
		lo = at + 1;
		hi = bound < n ? bound : n;
	}
	rc = at == 0 || lo > hi ? 0 :
		hwt_history_find_pc(c->h, lo, hi, back, set, naddrs, &hit, err);
	free(set);
	if (rc == 1 && (rc = hwt_history_get(c->h, hit, &it, err)) == 0)
		return stop(c, &it, HWT_HIT);
	if (rc < 0)
		return rc;
	return continue_to_bound(c, dir, bound, err);
}

int hwt_cursor_continue(struct hwt_cursor *c, enum hwt_dir dir,
			const uint64_t *addrs, size_t naddrs,
			struct hwt_err *err)
{
	return hwt_cursor_continue_within(c, dir, addrs, naddrs,
					  dir == HWT_BACKWARD ? 0 : UINT64_MAX,
					  err);
}

/* ---- stepping by line ---- */

struct range {
	uint64_t lo, hi;         /* the stepping range */
	int line;                /* the line being stepped, 0 if none */
	const char *file;
};

static void range_at(struct hwt_cursor *c, const struct hwt_item *it,
		     struct range *r)
{
	struct hwt_line l;
	struct hwt_func f;

	if (!hwt_image_line(c->img, it->addr, &l)) {
		*r = (struct range){ l.lo, l.hi, l.line, l.file };
		return;
	}
	/* No line information: like GDB, step until the function is left. */
	if (!hwt_image_func(c->img, it->addr, &f))
		*r = (struct range){ f.start, f.end, 0, NULL };
	else
		*r = (struct range){ it->addr,
				     it->addr + (it->len ? it->len : 1), 0,
				     NULL };
}

/* Where `step` stops in a function entered at addr: the end of its first
 * row (the prologue), pushed to the end of the row it falls in, as GDB's
 * skip_prologue_using_sal and handle_step_into_function do. False when
 * addr is no function's entry or the function has no line information. */
static bool step_target(struct hwt_cursor *c, uint64_t addr, uint64_t *target)
{
	struct hwt_func f;
	struct hwt_line l;
	uint64_t t;

	/* The dynamic linker binding a PLT entry is stepped through. */
	if (hwt_image_func(c->img, addr, &f) || f.start != addr ||
	    hwt_image_line(c->img, addr, &l) ||
	    hwt_image_in_linker(c->img, addr))
		return false;
	t = l.hi < f.end ? l.hi : addr;
	if (!hwt_image_line(c->img, t, &l) && l.lo != t && l.hi < f.end)
		t = l.hi;
	*target = t;
	return true;
}

/* Code `step` goes through to the function it leads to: PLT stubs and
 * the dynamic linker's lazy binding. */
static bool is_trampoline(struct hwt_cursor *c, uint64_t addr)
{
	struct hwt_func f;
	size_t n;

	if (hwt_image_in_linker(c->img, addr))
		return true;
	if (hwt_image_func(c->img, addr, &f) || !f.name)
		return false;
	n = strlen(f.name);
	return n > 4 && !strcmp(f.name + n - 4, "@plt");
}

static int step_line(struct hwt_cursor *c, enum hwt_dir dir, bool over,
		     struct frames *f, struct hwt_err *err)
{
	struct hwt_item cur = c->it, nx;
	struct range r;
	uint64_t resume = 0;
	int depth = 0, rc;
	bool gap, resuming = false, through = false;

	range_at(c, &cur, &r);
	if (frames_set(f, 0, func_start(c, cur.addr)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (;;) {
		struct hwt_line l;
		bool entered, differs;
		int nd;

		rc = adjacent(c, &cur, dir, &nx, &gap, err);
		if (rc < 0)
			return rc;
		if (rc)
			return stop(c, &cur, HWT_BOUNDARY);
		if (gap)
			return stop(c, &nx, HWT_BOUNDARY);
		/* entered: this step went into a callee, forward through its
		 * call or backward through its return. */
		nd = depth;
		if (dir == HWT_BACKWARD)
			nd -= depth_step(&nx, &cur);
		else if (forward_depth(c, f, &cur, &nx, &nd))
			return hwt_err_set(err, ENOMEM, "out of memory");
		entered = nd == depth + 1 && (dir == HWT_FORWARD ?
					      cur.cls == HWT_INSN_CALL :
					      nx.cls == HWT_INSN_RET);
		depth = nd;
		cur = nx;
		if (depth > 0) {
			if (over)
				continue;
			if (dir == HWT_BACKWARD) {
				/* Into the callee from its end: its last row
				 * becomes the range, the callee the frame. */
				if (entered && depth == 1 &&
				    !hwt_image_line(c->img, cur.addr, &l)) {
					depth = 0;
					r.lo = l.lo;
					r.hi = l.hi;
					if (cur.addr == l.lo)
						return stop(c, &cur, HWT_MOVED);
				}
				continue;
			}
			if (resuming) {
				if (depth == 1 && cur.addr == resume)
					return stop(c, &cur, HWT_MOVED);
				continue;
			}
			if ((entered || through) && depth == 1 &&
			    step_target(c, cur.addr, &resume)) {
				through = false;
				if (cur.addr == resume)
					return stop(c, &cur, HWT_MOVED);
				resuming = true;
			} else if (entered && depth == 1) {
				through = is_trampoline(c, cur.addr);
			}
			continue;
		}
		/* At or above the frame being stepped; a return made the
		 * caller that frame. */
		if (depth < 0 && frames_set(f, 0, func_start(c, cur.addr)))
			return hwt_err_set(err, ENOMEM, "out of memory");
		depth = 0;
		resuming = through = false;
		if (cur.addr >= r.lo && cur.addr < r.hi) {
			if (dir == HWT_BACKWARD && cur.addr == r.lo &&
			    cur.addr != func_start(c, cur.addr))
				return stop(c, &cur, HWT_MOVED);
			continue;
		}
		if (hwt_image_line(c->img, cur.addr, &l))
			return stop(c, &cur, HWT_MOVED);
		differs = l.line != r.line || !hwt_same_file(l.file, r.file);
		if (cur.addr == l.lo && differs && l.is_stmt)
			return stop(c, &cur, HWT_MOVED);
		/* Entered a row in its middle (or a non-statement row): it
		 * becomes the range; the line only changes for the former. */
		r.lo = l.lo;
		r.hi = l.hi;
		if (cur.addr != l.lo || !differs) {
			r.line = l.line;
			r.file = l.file;
		}
	}
}

int hwt_cursor_step(struct hwt_cursor *c, enum hwt_dir dir,
		    struct hwt_err *err)
{
	struct frames f = { 0 };
	int rc = step_line(c, dir, false, &f, err);

	free(f.fn);
	return rc;
}

int hwt_cursor_next(struct hwt_cursor *c, enum hwt_dir dir,
		    struct hwt_err *err)
{
	struct frames f = { 0 };
	int rc = step_line(c, dir, true, &f, err);

	free(f.fn);
	return rc;
}
