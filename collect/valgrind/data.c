// SPDX-License-Identifier: BSD-2-Clause
/* data.c - the tool's data history file (vgdata.h) into a bundle's data
 * history (common/hwt-past.h).
 *
 * The ring is walked back from its end, where each thread's state is
 * known (its END event): each run's slots, undone newest first, take the
 * state back an instruction at a time, and each undone slot keeps the
 * value it replaced (the state after the write), so a second walk, oldest
 * first from the state the first reached, writes the registers before
 * every instruction into the forward logs. Stores become memory entries
 * at their instruction's step, numbered in the order the runs came (the
 * ring's order is Valgrind's, which runs one thread at a time).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>

#include "array.h"
#include "valgrind/data.h"
#include "valgrind/vexflags.h"
#include "valgrind/vgdata.h"

/* Bounds on what a file may describe, checked before anything is
 * allocated for it. */
#define MAX_SB_ID (1u << 26)
#define MAX_INSNS 4096u
#define MAX_SLOTS 65536u
#define MAX_BLOCK (1u << 20)
#define MAX_STORE (1u << 16)
#define MAX_THREADS 4096u
/* Bytes the register logs of all threads may take. */
#define REGLOG_CAP (1ull << 30)

struct slot {
	uint32_t kind, insn, a, b, off;
};

struct layout {
	uint64_t id;
	uint32_t ninsn, nexits, nslots, size;
	uint64_t *pc;              /* ninsn */
	uint32_t *accesses;        /* ninsn: memory accesses of each */
	/* nexits: instructions run when taken, | HWT_SW_TR_REP_CHECK on a
	 * rep instruction's count check (hwt_sw_tr_exit_count) */
	uint32_t *exit_insns;
	uint32_t *exit_slots;      /* nexits */
	struct slot *slots;        /* nslots */
};

/* A thread as the walk goes. */
struct wthread {
	pid_t tid;
	uint64_t last_pc;
	bool known;                /* its END was met: state is where the
				    * walk stands */
	bool seen_run;             /* its newest run was met */
	bool dead;                 /* nothing older of it can be told */
	/* A debugger moved it away from cut_rip (HWT_VGD_CAUSE_JUMP): its
	 * next older run ends there. */
	bool cut;
	uint64_t cut_rip;
	/* A signal's handler was entered at signal_pc, and none of its
	 * runs is older yet: if a debugger's stop had it stand there, the
	 * stream counts that instruction as run. */
	bool signal_pending;
	uint64_t signal_pc;
	uint8_t state[HWT_VGD_STATE_SIZE];
	uint64_t index;            /* back: its instructions walked */
	size_t out;                /* its place in p->threads */
};

/* What the first walk met, for the second (oldest last). */
struct item {
	uint64_t pos;              /* its first byte in the ring */
	uint32_t thread;
	bool run;                  /* a run, else a REGS event */
	/* The instruction a debugger stopped the thread at counts as run,
	 * as in the stream, with the registers before it (phantom): when a
	 * debugger moved it (a REGS event, HWT_VGD_CAUSE_JUMP, whose state
	 * after follows: moved), or a signal's handler was entered there
	 * (the STOP event, the state unchanged). */
	bool phantom, moved;
	const struct layout *l;
	uint32_t n;                /* instructions run */
	uint32_t nslots;           /* slots undone */
	uint32_t fault;            /* the instruction that faulted, or
				    * UINT32_MAX */
	uint64_t index;            /* back index of its first instruction */
	uint64_t step;             /* back step of its first instruction */
};

struct build {
	const uint8_t *ring;
	size_t ring_len;
	uint64_t ring_off;         /* of the ring in the file, for errors */
	struct layout *layouts;    /* sorted by id */
	size_t nlayouts, layouts_cap;
	struct wthread *t;
	size_t nt;
	struct item *items;
	size_t nitems, items_cap;
	struct pending {
		uint32_t thread;
		uint64_t index;    /* back index (0: the newest) */
		bool kernel;       /* of no instruction: at index's step */
		uint64_t addr, len;
		const uint8_t *old; /* NULL: unknown */
	} *mem;
	size_t nmem, mem_cap;
	uint64_t steps;            /* back steps walked */
	bool flags_wrong;
	uint64_t mismatch_at;      /* a system call's byte where the walk
				    * disagreed with Valgrind; 0: none */
	/* NULL, or where the register logs go a group at a time as they
	 * grow (never all in memory). */
	struct hwt_past_writer *out;
};

static int bad(struct hwt_err *err, uint64_t at, const char *what)
{
	return hwt_err_set(err, EINVAL, "valgrind data history: %s at byte "
			   "%llu", what, (unsigned long long)at);
}

static uint64_t word(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* ---- layouts ------------------------------------------------------------- */

struct reader {
	const uint8_t *p, *start, *end;
	uint64_t base;
	bool failed;
};

static uint64_t rd_u(struct reader *r, uint64_t max)
{
	uint64_t v = 0;

	if (r->failed || hwt_get_uleb128(&r->p, r->end, &v) != 1 || v > max) {
		r->failed = true;
		return 0;
	}
	return v;
}

static int64_t rd_s(struct reader *r)
{
	uint64_t v = rd_u(r, UINT64_MAX);

	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static void *alloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static void layout_free(struct layout *l)
{
	free(l->pc);
	free(l->accesses);
	free(l->exit_insns);
	free(l->exit_slots);
	free(l->slots);
}

/* One layout at r; its size is checked against its slots. */
static int read_layout(struct build *b, struct reader *r, struct hwt_err *err)
{
	uint64_t at = r->base + (uint64_t)(r->p - r->start);
	uint64_t id = rd_u(r, MAX_SB_ID - 1);
	struct layout l = { .id = id };
	uint64_t prev_end = 0, size = 0;
	uint8_t *rep;
	int rc = 0;

	l.ninsn = (uint32_t)rd_u(r, MAX_INSNS);
	if (r->failed || !l.ninsn)
		return bad(err, at, "a translation without instructions");
	l.pc = alloc_n(l.ninsn, sizeof(*l.pc));
	l.accesses = alloc_n(l.ninsn, sizeof(*l.accesses));
	rep = alloc_n(l.ninsn, sizeof(*rep));
	if (!l.pc || !l.accesses || !rep) {
		free(rep);
		layout_free(&l);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < l.ninsn; i++) {
		uint64_t len;

		l.pc[i] = i ? prev_end + (uint64_t)rd_s(r) : rd_u(r, UINT64_MAX);
		len = rd_u(r, 31);
		rep[i] = len & 1;
		prev_end = l.pc[i] + (len >> 1);
		l.accesses[i] = (uint32_t)rd_u(r, MAX_SLOTS);
	}
	l.nexits = (uint32_t)rd_u(r, MAX_INSNS);
	l.exit_insns = alloc_n(l.nexits, sizeof(*l.exit_insns));
	l.exit_slots = alloc_n(l.nexits, sizeof(*l.exit_slots));
	if (!l.exit_insns || !l.exit_slots) {
		free(rep);
		layout_free(&l);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	for (uint32_t e = 0; e < l.nexits; e++) {
		uint32_t after = (uint32_t)rd_u(r, l.ninsn);

		/* The first exit after a rep instruction is its count check
		 * (as the stream's reader marks it). */
		if (after && rep[after - 1] &&
		    (e == 0 || (l.exit_insns[e - 1] & ~HWT_SW_TR_REP_CHECK) !=
		     after))
			after |= HWT_SW_TR_REP_CHECK;
		l.exit_insns[e] = after;
	}
	free(rep);
	rep = NULL;
	l.nslots = (uint32_t)rd_u(r, MAX_SLOTS);
	if (!r->failed && !(l.slots = alloc_n(l.nslots, sizeof(*l.slots)))) {
		layout_free(&l);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	for (uint32_t s = 0; s < l.nslots && !r->failed; s++) {
		struct slot *sl = &l.slots[s];
		uint32_t kind;

		sl->kind = (uint32_t)rd_u(r, 7);
		sl->insn = (uint32_t)rd_u(r, l.ninsn - 1);
		kind = sl->kind & HWT_VGD_SLOT_KIND_MASK;
		sl->off = (uint32_t)size;
		if (kind == HWT_VGD_SLOT_REG) {
			sl->a = (uint32_t)rd_u(r, HWT_VGD_STATE_SIZE);
			sl->b = (uint32_t)rd_u(r, HWT_VGD_STATE_SIZE - sl->a);
			size += (sl->b + 7u) & ~7u;
		} else if (kind == HWT_VGD_SLOT_MEM) {
			sl->a = (uint32_t)rd_u(r, MAX_STORE);
			size += 8 + ((sl->a + 7u) & ~7u);
		} else if (kind == HWT_VGD_SLOT_UNKNOWN) {
			sl->a = (uint32_t)rd_u(r, MAX_STORE);
			size += 8;
		} else {
			r->failed = true;
		}
		/* Slots come in instruction order. */
		if (s && sl->insn < l.slots[s - 1].insn)
			r->failed = true;
	}
	for (uint32_t e = 0; e < l.nexits; e++)
		l.exit_slots[e] = (uint32_t)rd_u(r, l.nslots);
	size += 8;
	l.size = (uint32_t)rd_u(r, MAX_BLOCK);
	if (r->failed || l.size != size)
		rc = bad(err, at, r->failed ? "a damaged translation layout" :
			 "a block size its slots do not add up to");
	if (rc == 0 && HWT_ARRAY_RESERVE(b->layouts, b->layouts_cap,
					 b->nlayouts + 1, 1024))
		rc = hwt_err_set(err, ENOMEM, "out of memory");
	if (rc < 0) {
		layout_free(&l);
		return rc;
	}
	b->layouts[b->nlayouts++] = l;
	return 0;
}

static int cmp_layout(const void *a, const void *b)
{
	const struct layout *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int read_layouts(struct build *b, const uint8_t *p, size_t len,
			uint64_t base, struct hwt_err *err)
{
	struct reader r = { .p = p, .start = p, .end = p + len, .base = base };

	while (r.p < r.end) {
		int rc = read_layout(b, &r, err);

		if (rc < 0)
			return rc;
	}
	if (b->nlayouts)
		qsort(b->layouts, b->nlayouts, sizeof(*b->layouts),
		      cmp_layout);
	for (size_t i = 1; i < b->nlayouts; i++)
		if (b->layouts[i].id == b->layouts[i - 1].id)
			return bad(err, base, "a translation described twice");
	return 0;
}

static const struct layout *layout_of(const struct build *b, uint64_t id)
{
	size_t lo = 0, hi = b->nlayouts;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->layouts[mid].id == id)
			return &b->layouts[mid];
		if (b->layouts[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- the walk back ------------------------------------------------------- */

static struct wthread *thread_of(struct build *b, uint64_t tid)
{
	for (size_t i = 0; i < b->nt; i++)
		if ((uint64_t)(uint32_t)b->t[i].tid == tid)
			return &b->t[i];
	return NULL;
}

static int push_item(struct build *b, const struct item *it,
		     struct hwt_err *err)
{
	if (HWT_BULK_RESERVE(b->items, b->items_cap, b->nitems + 1))
		return hwt_err_set(err, ENOMEM, "out of memory");
	b->items[b->nitems++] = *it;
	return 0;
}

static int push_mem(struct build *b, const struct pending *m,
		    struct hwt_err *err)
{
	if (HWT_BULK_RESERVE(b->mem, b->mem_cap, b->nmem + 1))
		return hwt_err_set(err, ENOMEM, "out of memory");
	b->mem[b->nmem++] = *m;
	return 0;
}

/* The one instruction of l's first n at pc; UINT32_MAX: none, or more
 * than one (which cannot be told). */
static uint32_t only_at(const struct layout *l, uint32_t n, uint64_t pc)
{
	uint32_t at = UINT32_MAX;

	for (uint32_t k = 0; k < n; k++)
		if (l->pc[k] == pc) {
			if (at != UINT32_MAX)
				return UINT32_MAX;
			at = k;
		}
	return at;
}

/* How many instructions of l's run left by exit a thread ran, its
 * newest run ending at last_pc; 0: none fits. */
static uint32_t newest_run(const struct layout *l, uint32_t n,
			   uint64_t last_pc)
{
	for (uint32_t j = n; j > 0; j--)
		if (l->pc[j - 1] == last_pc)
			return j;
	return 0;
}

static void swap_bytes(uint8_t *a, uint8_t *b, size_t n)
{
	uint8_t tmp[HWT_VGD_STATE_SIZE];
	uint64_t x, y;

	/* Most slots are a register's 8 bytes: no call for those. */
	if (n == 8) {
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		memcpy(a, &y, 8);
		memcpy(b, &x, 8);
		return;
	}
	memcpy(tmp, a, n);
	memcpy(a, b, n);
	memcpy(b, tmp, n);
}

/* The instructions a run left by exit ran (its count check aside). */
static uint32_t exit_insns(const struct layout *l, uint32_t exit)
{
	return exit < l->nexits ? l->exit_insns[exit] & ~HWT_SW_TR_REP_CHECK
				: l->ninsn;
}

/* The last instruction thread ti ran before the item ending at pos,
 * found within a few items back (a rep instruction's iterations are
 * runs one after the other); false: none found. */
static bool prev_pc(const struct build *b, uint64_t pos, uint32_t ti,
		    uint32_t cur, uint64_t *pc)
{
	for (unsigned k = 0; k < 64 && pos >= 8; k++) {
		uint64_t w = word(b->ring + pos - 8), len;
		const struct layout *l;

		if ((w & HWT_VGD_TAG_MASK) == HWT_VGD_TAG_RUN) {
			uint32_t n;

			if (!(l = layout_of(b, w >> 20)) || l->size > pos ||
			    ((w >> 4) & 0xffff) > l->nexits)
				return false;
			if (cur == ti) {
				n = exit_insns(l, (uint32_t)(w >> 4) & 0xffff);
				if (!n)
					return false;
				*pc = l->pc[n - 1];
				return true;
			}
			pos -= l->size;
			continue;
		}
		if ((w & HWT_VGD_TAG_MASK) != HWT_VGD_TAG_EVENT ||
		    (len = w >> 8) + 8 > pos)
			return false;
		if (((w >> 4) & 0xf) == HWT_VGD_EV_THREAD) {
			const struct wthread *t;

			t = thread_of((struct build *)b,
				      word(b->ring + pos - 8 - len));
			cur = t ? (uint32_t)(t - b->t) : UINT32_MAX;
		}
		pos -= 8 + len;
	}
	return false;
}

/* The instructions of l's run left by exit that the history counts: a
 * rep instruction's count check taken right after the same instruction
 * ran executed nothing (hwt_sw_tr_exit_count). */
static uint32_t run_insns(const struct build *b, const struct layout *l,
			  uint32_t exit, uint64_t start, uint32_t ti)
{
	uint32_t n = exit_insns(l, exit);
	uint64_t pc;

	if (exit >= l->nexits || !(l->exit_insns[exit] & HWT_SW_TR_REP_CHECK))
		return n;
	if (n >= 2)
		return l->pc[n - 2] == l->pc[n - 1] ? n - 1 : n;
	return prev_pc(b, start, ti, ti, &pc) && pc == l->pc[0] ? 0 : n;
}

/* What walk_run makes of a run: its instructions that ran are taken,
 * none of it ran, or what ran cannot be told (nothing older of the
 * thread then). */
enum { EXTENT_TAKE, EXTENT_NONE, EXTENT_DEAD };

/* Whether the registers before the faulting instruction can be told: it
 * writes none after one of several memory accesses (which may or may
 * not have been written). */
static bool fault_told(const struct layout *l, uint32_t nslots,
		       uint32_t fault)
{
	if (l->accesses[fault] <= 1)
		return true;
	for (uint32_t s = 0; s < nslots; s++) {
		const struct slot *sl = &l->slots[s];

		if (sl->insn == fault &&
		    (sl->kind & HWT_VGD_SLOT_KIND_MASK) == HWT_VGD_SLOT_REG &&
		    (sl->kind & HWT_VGD_AFTER_ACCESS))
			return false;
	}
	return true;
}

/* How many of the *n instructions of a run of l (open: left in the
 * middle) thread t ran, and which faulted (*fault). Its newest run ends
 * with the instruction it stands at where it faulted (it did not
 * complete: what it wrote before its first memory access is undone, its
 * stores did not happen, what it writes after its only access was not
 * written), else with the last it ran. An open run ends before where a
 * debugger stopped the thread (a snapshot, vgdata.h), moved it from or
 * entered a handler from where it stood (walk_phantom): before its first
 * instruction, nothing of it ran. */
static int extent(const struct layout *l, uint32_t nslots, struct wthread *t,
		  bool open, uint32_t *n, uint32_t *fault)
{
	uint64_t rip = word(t->state + HWT_VGD_RIP);
	uint32_t at;

	if (t->seen_run) {
		/* An older run: a closed one ran to its exit. */
		at = t->cut ? only_at(l, *n, t->cut_rip) : UINT32_MAX;
		t->cut = false;
		if (!open)
			return EXTENT_TAKE;
		if (at == UINT32_MAX)
			return EXTENT_DEAD;
		*n = at;
		return EXTENT_TAKE;
	}
	/* A debugger's move since leaves it where it stands: the same. */
	t->cut = false;
	if (rip == t->last_pc) {
		at = newest_run(l, *n, t->last_pc);
		if (!at || !fault_told(l, nslots, at - 1))
			return EXTENT_DEAD;
		*fault = at - 1;
		*n = at;
	} else if (open) {
		at = only_at(l, *n, rip);
		if (at == 0)
			return EXTENT_NONE;
		if (at == UINT32_MAX || l->pc[at - 1] != t->last_pc)
			return EXTENT_DEAD;
		*n = at;
	} else if (!*n || l->pc[*n - 1] != t->last_pc) {
		return EXTENT_DEAD;
	}
	t->seen_run = true;
	return EXTENT_TAKE;
}

/* The run ending at pos (its word w) of the current thread t. */
static int walk_run(struct build *b, struct wthread *t, uint32_t ti,
		    uint64_t pos, uint64_t w, struct hwt_err *err)
{
	uint64_t id = w >> 20;
	uint32_t exit = (uint32_t)(w >> 4) & 0xffff, n, nslots;
	uint32_t fault = UINT32_MAX;
	const struct layout *l;
	bool open = false;
	uint8_t *blk;

	if (!(l = layout_of(b, id)))
		return bad(err, b->ring_off + pos - 8,
			   "a run of a translation never described");
	if (exit == HWT_VGD_EXIT_OPEN)
		open = true;
	else if (exit > l->nexits)
		return bad(err, b->ring_off + pos - 8, "a run's exit that its "
			   "translation does not have");
	if (l->size > pos)
		return 1;            /* overwritten: the walk ends here */
	if (!t || t->dead)
		return 0;
	if (!t->known) {
		/* Runs newer than its end: not this history's. */
		t->dead = true;
		return 0;
	}
	/* It ran since any stop: a handler entered later was not from
	 * where a debugger stopped it. */
	t->signal_pending = false;
	if (open)
		exit = l->nexits;
	n = run_insns(b, l, exit, pos - l->size, ti);
	nslots = exit < l->nexits ? l->exit_slots[exit] : l->nslots;
	switch (extent(l, nslots, t, open, &n, &fault)) {
	case EXTENT_DEAD:
		t->dead = true;
		return 0;
	case EXTENT_NONE:
		return 0;
	default:
		break;
	}
	if (!n)
		return 0;
	blk = (uint8_t *)(b->ring + pos - l->size);
	for (uint32_t s = nslots; s-- > 0;) {
		const struct slot *sl = &l->slots[s];
		uint32_t kind = sl->kind & HWT_VGD_SLOT_KIND_MASK;
		uint8_t *p = blk + sl->off;

		if (sl->insn >= n || (sl->insn == fault &&
				      (kind != HWT_VGD_SLOT_REG ||
				       (sl->kind & HWT_VGD_AFTER_ACCESS))))
			continue;
		if (kind == HWT_VGD_SLOT_REG) {
			swap_bytes(t->state + sl->a, p, sl->b);
		} else if (word(p)) {
			struct pending m = {
				.thread = ti,
				.index = t->index + (n - 1 - sl->insn),
				.addr = word(p), .len = sl->a,
				.old = kind == HWT_VGD_SLOT_MEM ? p + 8 : NULL,
			};
			int rc;

			if (m.addr + m.len < m.addr)
				return bad(err, b->ring_off + pos - l->size +
					   sl->off, "a store past the end of "
					   "memory");
			if ((rc = push_mem(b, &m, err)) < 0)
				return rc;
		}
	}
	t->index += n;
	b->steps += n;
	return push_item(b, &(struct item){
		.pos = pos - l->size, .thread = ti, .run = true, .l = l,
		.n = n, .nslots = nslots, .fault = fault,
		.index = t->index - 1, .step = b->steps - 1 }, err);
}

/* Whether the registers the walk took back to a system call (after:
 * from the state where the history ends, through every write since)
 * are Valgrind's own before it (before), but for those the call
 * changes: its result, rcx and r11, and everything of a sigreturn or
 * an arch_prctl. A write the tool did not see would show here. */
static bool same_across_call(const uint8_t *after, const uint8_t *before,
			     uint64_t flags_word)
{
	uint64_t nr = word(before + HWT_VGD_RAX);

	if ((flags_word >> HWT_VGD_CAUSE_SHIFT) != HWT_VGD_CAUSE_SYSCALL ||
	    nr == 15 || nr == 158)
		return true;
	for (unsigned r = 0; r < 16; r++) {
		unsigned off = HWT_VGD_RAX + 8 * r;

		/* rax, rcx, r11 */
		if (r == 0 || r == 1 || r == 11)
			continue;
		if (word(after + off) != word(before + off))
			return false;
	}
	return memcmp(after + HWT_VGD_SSEROUND, before + HWT_VGD_SSEROUND,
		      HWT_VGD_FC3210 + 8 - HWT_VGD_SSEROUND) == 0;
}

/* The instruction at from, where a debugger stopped thread t, counted
 * as run (item at, moved: a REGS event the thread's state changes by):
 * the newest of its history when none is yet. It never ran: the run it
 * stood in (Valgrind left the superblock) ended there. */
static int walk_phantom(struct build *b, struct wthread *t, uint64_t from,
			uint64_t at, bool moved, struct hwt_err *err)
{
	if (!t->seen_run) {
		if (from != t->last_pc) {
			t->dead = true;
			return 0;
		}
		t->seen_run = true;
	}
	t->signal_pending = false;
	t->cut = true;
	t->cut_rip = from;
	t->index++;
	b->steps++;
	return push_item(b, &(struct item){
		.pos = at, .thread = (uint32_t)(t - b->t), .phantom = true,
		.moved = moved, .index = t->index - 1, .step = b->steps - 1 },
		err);
}

/* A debugger moved thread t away from the pc of its state (taken back
 * before the move). */
static int walk_jump(struct build *b, struct wthread *t, uint64_t at,
		     struct hwt_err *err)
{
	return walk_phantom(b, t, word(t->state + HWT_VGD_RIP), at, true,
			    err);
}

/* A thread's state where its history ends (END), or before something
 * outside translated code changed it (REGS): p its payload, at its place
 * in the file. */
static int walk_state(struct build *b, struct wthread *t, unsigned kind,
		      const uint8_t *p, uint64_t at, struct hwt_err *err)
{
	uint64_t flags, known = 0;

	/* Valgrind's own flags for the state check ours. */
	if (hwt_vex_flags(word(p + 16 + HWT_VGD_CC_OP),
			  word(p + 16 + HWT_VGD_CC_OP + 8),
			  word(p + 16 + HWT_VGD_CC_OP + 16),
			  word(p + 16 + HWT_VGD_CC_OP + 24), &flags))
		known = 1;
	if (!known || (flags ^ word(p + 8)) & 0x8d5)
		b->flags_wrong = true;
	if (kind == HWT_VGD_EV_REGS && t->known &&
	    !same_across_call(t->state, p + 16, word(p + 8)) &&
	    !b->mismatch_at)
		b->mismatch_at = at;
	if (kind == HWT_VGD_EV_END) {
		if (!t->known) {
			memcpy(t->state, p + 16, HWT_VGD_STATE_SIZE);
			t->known = true;
		} else {
			/* An earlier thread of the same id. */
			t->dead = true;
		}
		return 0;
	}
	if (!t->known) {
		t->dead = true;
		return 0;
	}
	swap_bytes(t->state, (uint8_t *)p + 16, HWT_VGD_STATE_SIZE);
	if ((word(p + 8) >> HWT_VGD_CAUSE_SHIFT) == HWT_VGD_CAUSE_JUMP)
		return walk_jump(b, t, (uint64_t)(p - b->ring), err);
	if ((word(p + 8) >> HWT_VGD_CAUSE_SHIFT) == HWT_VGD_CAUSE_SIGNAL) {
		t->signal_pending = true;
		t->signal_pc = word(t->state + HWT_VGD_RIP);
	}
	return push_item(b, &(struct item){ .pos = (uint64_t)(p - b->ring),
					    .thread = (uint32_t)(t - b->t) },
			 err);
}

static int walk_event(struct build *b, uint64_t pos, uint64_t w,
		      uint32_t *cur, struct hwt_err *err)
{
	uint64_t len = w >> 8, at = b->ring_off + pos - 8;
	unsigned kind = (unsigned)(w >> 4) & 0xf;
	const uint8_t *p;
	struct wthread *t;

	if (len + 8 > pos || len < 8)
		return len + 8 > pos ? 1 : bad(err, at, "an empty event");
	p = b->ring + pos - 8 - len;
	t = thread_of(b, word(p));
	switch (kind) {
	case HWT_VGD_EV_THREAD:
		if (len != 16)
			return bad(err, at, "a thread switch of a wrong size");
		*cur = UINT32_MAX;
		if ((t = thread_of(b, word(p))))
			*cur = (uint32_t)(t - b->t);
		return 0;
	case HWT_VGD_EV_END:
	case HWT_VGD_EV_REGS:
		if (len != 16 + HWT_VGD_STATE_SIZE)
			return bad(err, at, "a register state of a wrong "
				   "size");
		return t && !t->dead ? walk_state(b, t, kind, p, at, err) : 0;
	case HWT_VGD_EV_STOP:
		if (len != 16)
			return bad(err, at, "a stop of a wrong size");
		/* Stopped at the pc its handler was then entered from. */
		if (t && !t->dead && t->known && t->signal_pending &&
		    word(p + 8) == t->signal_pc)
			return walk_phantom(b, t, t->signal_pc, pos - 8 - len,
					    false, err);
		if (t)
			t->signal_pending = false;
		return 0;
	case HWT_VGD_EV_MEM:
	case HWT_VGD_EV_UNKNOWN: {
		uint64_t addr, n;

		if (len < 24)
			return bad(err, at, "a memory event too short");
		addr = word(p + 8);
		n = word(p + 16);
		if ((kind == HWT_VGD_EV_MEM && n > len - 24) ||
		    (kind == HWT_VGD_EV_UNKNOWN && len != 24) ||
		    addr + n < addr)
			return bad(err, at, "a memory event of a wrong size");
		if (!t && *cur != UINT32_MAX)
			t = &b->t[*cur];
		if (!t || t->dead || !t->known)
			return 0;
		/* At the thread's instruction before it (the system call),
		 * walked next. */
		return push_mem(b, &(struct pending){
			.thread = (uint32_t)(t - b->t), .index = t->index,
			.kernel = true, .addr = addr, .len = n,
			.old = kind == HWT_VGD_EV_MEM ? p + 24 : NULL }, err);
	}
	default:
		return bad(err, at, "an event of an unknown kind");
	}
}

static int walk(struct build *b, struct hwt_err *err)
{
	uint64_t pos = b->ring_len;
	uint32_t cur = UINT32_MAX;

	while (pos >= 8) {
		uint64_t w = word(b->ring + pos - 8);
		int rc;

		if ((w & HWT_VGD_TAG_MASK) == HWT_VGD_TAG_RUN) {
			struct wthread *t = cur == UINT32_MAX ? NULL
							      : &b->t[cur];
			const struct layout *l;

			rc = walk_run(b, t, cur, pos, w, err);
			if (rc)
				return rc < 0 ? rc : 0;
			l = layout_of(b, w >> 20);
			pos -= l->size;
		} else if ((w & HWT_VGD_TAG_MASK) == HWT_VGD_TAG_EVENT) {
			rc = walk_event(b, pos, w, &cur, err);
			if (rc)
				return rc < 0 ? rc : 0;
			pos -= 8 + (w >> 8);
		} else {
			/* The oldest lap's remains: where a block of it began
			 * is not known. */
			if (pos == b->ring_len)
				return bad(err, b->ring_off + pos - 8,
					   "a ring that ends in nothing");
			return 0;
		}
	}
	return 0;
}

/* ---- the forward logs ----------------------------------------------------- */

static uint64_t st64(const uint8_t *s, unsigned off)
{
	return word(s + off);
}

/* The x87 80-bit form of a double (Valgrind keeps x87 registers as
 * doubles). */
static void to_x87(uint64_t d, uint8_t out[10])
{
	uint64_t sign = d >> 63, exp = (d >> 52) & 0x7ff,
		 frac = d & ((1ull << 52) - 1), mant;
	uint16_t e;

	if (exp == 0 && frac == 0) {
		mant = 0;
		e = 0;
	} else if (exp == 0x7ff) {
		mant = 1ull << 63 | frac << 11;
		e = 0x7fff;
	} else if (exp == 0) {
		/* Denormal: normalised in the wider exponent. */
		int shift = __builtin_clzll(frac) - 11;

		mant = (frac << 11) << (shift + 1);
		mant |= 1ull << 63;
		e = (uint16_t)(15360 + 1 - (shift + 1));
	} else {
		mant = 1ull << 63 | frac << 11;
		e = (uint16_t)(exp - 1023 + 16383);
	}
	e |= (uint16_t)(sign << 15);
	memcpy(out, &mant, 8);
	memcpy(out + 8, &e, 2);
}

static void to_user(const uint8_t *s, uint64_t pc, uint64_t flags,
		    struct user_regs_struct *r)
{
	const unsigned gpr = HWT_VGD_RAX;

	memset(r, 0, sizeof(*r));
	r->rax = st64(s, gpr + 0 * 8);
	r->rcx = st64(s, gpr + 1 * 8);
	r->rdx = st64(s, gpr + 2 * 8);
	r->rbx = st64(s, gpr + 3 * 8);
	r->rsp = st64(s, gpr + 4 * 8);
	r->rbp = st64(s, gpr + 5 * 8);
	r->rsi = st64(s, gpr + 6 * 8);
	r->rdi = st64(s, gpr + 7 * 8);
	r->r8 = st64(s, gpr + 8 * 8);
	r->r9 = st64(s, gpr + 9 * 8);
	r->r10 = st64(s, gpr + 10 * 8);
	r->r11 = st64(s, gpr + 11 * 8);
	r->r12 = st64(s, gpr + 12 * 8);
	r->r13 = st64(s, gpr + 13 * 8);
	r->r14 = st64(s, gpr + 14 * 8);
	r->r15 = st64(s, gpr + 15 * 8);
	r->rip = pc;
	r->orig_rax = UINT64_MAX;
	r->eflags = flags | 0x2 |
		    (st64(s, HWT_VGD_DFLAG) == UINT64_MAX ? 1u << 10 : 0) |
		    (st64(s, HWT_VGD_IDFLAG) & 1 ? 1u << 21 : 0) |
		    (st64(s, HWT_VGD_ACFLAG) & 1 ? 1u << 18 : 0);
	r->cs = 0x33;
	r->ss = 0x2b;
	r->fs_base = st64(s, HWT_VGD_FS_CONST);
	r->gs_base = st64(s, HWT_VGD_GS_CONST);
}

static void to_fxsave(const uint8_t *s, struct user_fpregs_struct *f)
{
	unsigned top = (unsigned)st64(s, HWT_VGD_FTOP) & 7;
	uint8_t *st = (uint8_t *)f->st_space;
	uint16_t tags = 0;

	memset(f, 0, sizeof(*f));
	f->cwd = (uint16_t)(0x037f | (st64(s, HWT_VGD_FPROUND) & 3) << 10);
	f->swd = (uint16_t)((st64(s, HWT_VGD_FC3210) & 0x4700) | top << 11);
	for (unsigned i = 0; i < 8; i++)
		if (s[HWT_VGD_FPTAG + i])
			tags |= (uint16_t)(1u << i);
	f->ftw = tags;
	f->mxcsr = (uint32_t)(0x1f80 | (st64(s, HWT_VGD_SSEROUND) & 3) << 13);
	f->mxcr_mask = 0xffff;
	for (unsigned i = 0; i < 8; i++)
		to_x87(st64(s, HWT_VGD_FPREG + 8 * ((top + i) & 7)),
		       st + 16 * i);
	for (unsigned i = 0; i < 16; i++)
		memcpy((uint8_t *)f->xmm_space + 16 * i,
		       s + HWT_VGD_YMM0 + 32 * i, 16);
}

static uint64_t flags_of(const uint8_t *s)
{
	uint64_t f = 0;

	hwt_vex_flags(st64(s, HWT_VGD_CC_OP), st64(s, HWT_VGD_CC_OP + 8),
		      st64(s, HWT_VGD_CC_OP + 16), st64(s, HWT_VGD_CC_OP + 24),
		      &f);
	return f;
}

static int add_run(struct hwt_past_thread *pt, uint64_t index, uint64_t seq,
		   struct hwt_err *err)
{
	struct hwt_mem_run *v = realloc(pt->runs,
					(pt->nruns + 1) * sizeof(*v));

	if (!v)
		return hwt_err_set(err, ENOMEM, "out of memory");
	pt->runs = v;
	pt->runs[pt->nruns++] = (struct hwt_mem_run){ index, seq };
	return 0;
}

/* The second walk, oldest first: each thread's registers before each of
 * its instructions, and where each thread's runs fall in the order of
 * all steps. */
/* A thread's state in the second walk, with what was last made of it:
 * most instructions change neither the flags nor the x87/SSE state. */
struct fstate {
	uint8_t s[HWT_VGD_STATE_SIZE];
	uint64_t flags;
	struct user_fpregs_struct f;
	bool flags_stale, fp_stale;
};

static bool overlaps(uint32_t a, uint32_t n, uint32_t lo, uint32_t hi)
{
	return a < hi && a + n > lo;
}

/* The registers before the instruction at pc, index of thread pt (ti
 * of p), step seq: the forward state fs. With a writer, each group of
 * blocks goes to it once the block after it starts. */
static int log_regs(struct build *b, size_t ti, struct hwt_past_thread *pt,
		    struct fstate *fs, uint64_t index, uint64_t pc,
		    uint64_t seq)
{
	struct user_regs_struct r;
	const struct hwt_reglog *l = &pt->regs;

	if (fs->flags_stale)
		fs->flags = flags_of(fs->s);
	to_user(fs->s, pc, fs->flags, &r);
	hwt_reglog_append(&pt->regs, index, &r);
	/* Most instructions leave the x87/SSE state alone: its 512 bytes
	 * are then neither made again nor compared. */
	if (fs->fp_stale) {
		to_fxsave(fs->s, &fs->f);
		hwt_reglog_append(&pt->fpregs, index, &fs->f);
	} else {
		hwt_reglog_append_same(&pt->fpregs, index, &fs->f);
	}
	fs->flags_stale = fs->fp_stale = false;
	pt->last_seq = seq;
	if (b->out && l->nblocks > HWT_PAST_GROUP_BLOCKS &&
	    l->blocks[l->nblocks - 1].count == 1)
		return hwt_past_writer_flush(b->out, ti, pt);
	return 0;
}

static int forward(struct build *b, struct hwt_past *p, struct hwt_err *err)
{
	struct fstate *state = NULL;
	uint32_t last = UINT32_MAX;
	/* Handed to a writer, the logs hold a group each at most. */
	size_t cap = b->out ? SIZE_MAX : REGLOG_CAP / (b->nt ? b->nt : 1);
	int rc = 0;

	if (!(state = alloc_n(b->nt, sizeof(*state))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < b->nt; i++) {
		memcpy(state[i].s, b->t[i].state, HWT_VGD_STATE_SIZE);
		state[i].flags_stale = state[i].fp_stale = true;
		if (b->t[i].out == SIZE_MAX)
			continue;
		hwt_reglog_init(&p->threads[b->t[i].out].regs,
				HWT_REGLOG_GPR_WORDS, cap);
		hwt_reglog_init(&p->threads[b->t[i].out].fpregs,
				HWT_REGLOG_FP_WORDS, cap);
	}
	for (size_t k = b->nitems; k-- > 0 && rc == 0;) {
		const struct item *it = &b->items[k];
		struct wthread *t = &b->t[it->thread];
		struct hwt_past_thread *pt = &p->threads[t->out];
		struct fstate *fs = &state[it->thread];
		uint8_t *s = fs->s;
		const uint8_t *blk = b->ring + it->pos;
		uint32_t slot = 0;

		if ((it->run || it->phantom) && it->thread != last) {
			rc = add_run(pt, t->index - 1 - it->index,
				     b->steps - 1 - it->step, err);
			last = it->thread;
		}
		if (!it->run) {
			/* The instruction a debugger stopped the thread at,
			 * with the registers before it. */
			if (it->phantom && rc == 0)
				rc = log_regs(b, t->out, pt, fs,
					      t->index - 1 - it->index,
					      word(s + HWT_VGD_RIP),
					      b->steps - 1 - it->step);
			if (it->phantom && !it->moved)
				continue;
			/* The state after the event: kept by the first
			 * walk in the event. */
			memcpy(s, blk + 16, HWT_VGD_STATE_SIZE);
			fs->flags_stale = fs->fp_stale = true;
			continue;
		}
		for (uint32_t i = 0; i < it->n && rc == 0; i++) {
			rc = log_regs(b, t->out, pt, fs,
				      t->index - 1 - (it->index - i),
				      it->l->pc[i], b->steps - 1 - (it->step - i));
			if (rc < 0 || i == it->fault)
				break;   /* it did not complete */
			/* Its writes: the slots hold what they wrote. */
			for (; slot < it->nslots &&
			       it->l->slots[slot].insn <= i; slot++) {
				const struct slot *sl = &it->l->slots[slot];

				if ((sl->kind & HWT_VGD_SLOT_KIND_MASK) !=
				    HWT_VGD_SLOT_REG)
					continue;
				memcpy(s + sl->a, blk + sl->off, sl->b);
				if (overlaps(sl->a, sl->b, HWT_VGD_CC_OP,
					     HWT_VGD_CC_OP + 32))
					fs->flags_stale = true;
				if (overlaps(sl->a, sl->b, HWT_VGD_SSEROUND,
					     HWT_VGD_FC3210 + 8))
					fs->fp_stale = true;
			}
		}
	}
	free(state);
	return rc;
}

/* The seq of thread t's step at back index (0: its newest), or false
 * when it is older than what was walked. */
static bool seq_of(const struct build *b, const struct hwt_past *p,
		   const struct wthread *t, uint64_t back, uint64_t *seq)
{
	const struct hwt_past_thread *pt = &p->threads[t->out];
	uint64_t index;

	size_t lo = 0, hi;

	(void)b;
	if (back >= t->index || !pt->nruns)
		return false;
	index = t->index - 1 - back;
	/* The last run at or before index. */
	hi = pt->nruns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pt->runs[mid].index <= index)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return false;
	*seq = pt->runs[lo - 1].seq + (index - pt->runs[lo - 1].index);
	return true;
}

struct ordered {
	struct hwt_mem_entry e;
	size_t ord;
};

static int cmp_ordered(const void *a, const void *b)
{
	const struct ordered *x = a, *y = b;

	if (x->e.seq != y->e.seq)
		return x->e.seq < y->e.seq ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

static int sort_entries(struct hwt_mem_entry *e, size_t n, struct hwt_err *err)
{
	struct ordered *v = alloc_n(n, sizeof(*v));

	if (!v)
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		v[i] = (struct ordered){ e[i], i };
	qsort(v, n, sizeof(*v), cmp_ordered);
	for (size_t i = 0; i < n; i++)
		e[i] = v[i].e;
	free(v);
	return 0;
}

static int memory(struct build *b, struct hwt_past *p, struct hwt_err *err)
{
	size_t nbytes = 0, n = 0, off = 0;
	int rc;

	for (size_t i = 0; i < b->nmem; i++)
		if (b->mem[i].old)
			nbytes += b->mem[i].len;
	p->e = alloc_n(b->nmem, sizeof(*p->e));
	p->bytes = malloc(nbytes ? nbytes : 1);
	if (!p->e || !p->bytes)
		return hwt_err_set(err, ENOMEM, "out of memory");
	/* Oldest first, so that one instruction's stores keep their
	 * order through the sort. */
	for (size_t i = b->nmem; i-- > 0;) {
		const struct pending *m = &b->mem[i];
		const struct wthread *t = &b->t[m->thread];
		uint64_t seq;

		/* A kernel write belongs to the thread's instruction just
		 * before it (its system call). */
		if (!seq_of(b, p, t, m->index, &seq))
			continue;
		p->e[n] = (struct hwt_mem_entry){
			.seq = seq, .addr = m->addr, .len = m->len,
			.off = m->old ? off : HWT_MEM_UNKNOWN,
			.tid = m->kernel ? 0 : t->tid,
		};
		if (m->old) {
			memcpy(p->bytes + off, m->old, m->len);
			off += m->len;
		}
		n++;
	}
	p->n = n;
	p->nbytes = off;
	/* In the order made already, but for a thread's system call
	 * outside the ring's order: sorted, one instruction's stores kept
	 * in their order. */
	for (size_t i = 1; i < n; i++) {
		if (p->e[i - 1].seq <= p->e[i].seq)
			continue;
		if ((rc = sort_entries(p->e, n, err)) < 0)
			return rc;
		break;
	}
	p->horizon = 0;
	return 0;
}

void hwt_vg_data_free(struct hwt_past *p)
{
	hwt_past_index_wait(p);
	for (size_t i = 0; i < p->nthreads; i++) {
		free(p->threads[i].runs);
		hwt_reglog_free(&p->threads[i].regs);
		hwt_reglog_free(&p->threads[i].fpregs);
	}
	free(p->threads);
	free(p->e);
	free(p->bytes);
	hwt_mem_index_free(p->index);
	memset(p, 0, sizeof(*p));
}

int hwt_vg_data_build_to(const uint8_t *file, size_t len,
			 const struct hwt_vg_data_thread *threads, size_t n,
			 struct hwt_past *p, struct hwt_past_writer *out,
			 struct hwt_err *err)
{
	struct build b = { .out = out };
	uint64_t lay_len, ring_len;
	size_t kept = 0;
	int rc;

	memset(p, 0, sizeof(*p));
	if (len < HWT_VGD_MAGIC_LEN + 16 ||
	    memcmp(file, HWT_VGD_MAGIC, HWT_VGD_MAGIC_LEN) != 0)
		return bad(err, 0, "not a data history (no magic)");
	lay_len = word(file + 8);
	ring_len = word(file + 16);
	if (lay_len > len - 24 || ring_len != len - 24 - lay_len ||
	    ring_len % 8)
		return bad(err, 8, "lengths the file does not hold");
	if (n > MAX_THREADS)
		return hwt_err_set(err, E2BIG, "too many threads");
	b.ring = file + 24 + lay_len;
	b.ring_len = ring_len;
	b.ring_off = 24 + lay_len;
	if (!(b.t = alloc_n(n, sizeof(*b.t))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	b.nt = n;
	for (size_t i = 0; i < n; i++)
		b.t[i] = (struct wthread){ .tid = threads[i].tid,
					   .last_pc = threads[i].last_pc };
	rc = read_layouts(&b, file + 24, lay_len, 24, err);
	if (rc == 0)
		rc = walk(&b, err);
	if (rc == 0 && b.flags_wrong)
		rc = hwt_err_set(err, EINVAL, "valgrind data history: flags "
				 "this reader computes differ from "
				 "Valgrind's");
	if (rc == 0 && b.mismatch_at)
		rc = bad(err, b.mismatch_at, "registers taken back to a system "
			 "call differ from Valgrind's there");
	if (rc == 0 && !(p->threads = alloc_n(n, sizeof(*p->threads))))
		rc = hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; rc == 0 && i < n; i++) {
		/* A thread of which no instruction is kept, or whose
		 * registers cannot be told, has no data history. */
		if (!b.t[i].known || !b.t[i].index) {
			b.t[i].out = SIZE_MAX;
			continue;
		}
		b.t[i].out = kept;
		p->threads[kept++] = (struct hwt_past_thread){
			.tid = b.t[i].tid, .end_index = b.t[i].index - 1 };
	}
	p->nthreads = kept;
	if (rc == 0) {
		/* Items of threads left out, and dead threads' runs older
		 * than where they died, are not kept. */
		size_t w = 0;

		for (size_t k = 0; k < b.nitems; k++)
			if (b.t[b.items[k].thread].out != SIZE_MAX)
				b.items[w++] = b.items[k];
		b.nitems = w;
		rc = forward(&b, p, err);
		if (rc == -ENOMEM && !err->msg[0])
			hwt_err_set(err, ENOMEM, "out of memory");
		else if (rc < 0 && !err->msg[0])
			hwt_err_set(err, -rc, "writing the data history: %s",
				    strerror(-rc));
	}
	if (rc == 0) {
		size_t w = 0;

		for (size_t k = 0; k < b.nmem; k++)
			if (b.t[b.mem[k].thread].out != SIZE_MAX)
				b.mem[w++] = b.mem[k];
		b.nmem = w;
		rc = memory(&b, p, err);
	}
	for (size_t i = 0; i < b.nlayouts; i++)
		layout_free(&b.layouts[i]);
	free(b.layouts);
	hwt_bulk_free(b.items, b.items_cap, sizeof(*b.items));
	hwt_bulk_free(b.mem, b.mem_cap, sizeof(*b.mem));
	free(b.t);
	if (rc < 0)
		hwt_vg_data_free(p);
	return rc;
}

int hwt_vg_data_build(const uint8_t *file, size_t len,
		      const struct hwt_vg_data_thread *threads, size_t n,
		      struct hwt_past *p, struct hwt_err *err)
{
	return hwt_vg_data_build_to(file, len, threads, n, p, NULL, err);
}
