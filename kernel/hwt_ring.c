// SPDX-License-Identifier: GPL-2.0-only
/*
 * hwt_kring.c - the per-thread ring of self-contained blocks.
 *
 * A ring is a whole number of HWTRACE_BLOCK_SIZE blocks. Each block starts
 * with an absolute address, so dropping the oldest block (wrap mode) never
 * leaves undecodable bytes behind. Records are those of hwt-sw
 * (docs/swtrace.md) plus a scheduling record; the caller holds the
 * thread's lock.
 */
#include <linux/bug.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include "hwt.h"

#define HWT_HDR_SIZE	sizeof(struct hwtrace_block)
#define HWT_PAYLOAD	(HWTRACE_BLOCK_SIZE - HWT_HDR_SIZE)
/* Worst case for one add: sched record, async prefix, 9-byte delta. */
#define HWT_MAX_ADD	(HWTRACE_REC_SCHED_SIZE + 1 + 9)

static_assert(sizeof(struct hwtrace_block) == 48);

static struct hwtrace_block *hwt_block(struct hwt_kring *r, u64 seq)
{
	return r->base + (u32)(seq % r->nblocks) * HWTRACE_BLOCK_SIZE;
}

int hwt_kring_alloc(struct hwt_kring *r, u32 size)
{
	void *base = vmalloc_user(size);

	if (!base)
		return -ENOMEM;
	hwt_kring_free(r);
	r->base = base;
	r->size = size;
	r->nblocks = size / HWTRACE_BLOCK_SIZE;
	hwt_kring_reset(r);
	return 0;
}

void hwt_kring_free(struct hwt_kring *r)
{
	/* Pages still mapped by user space stay alive through their map. */
	vfree(r->base);
	r->base = NULL;
}

void hwt_kring_reset(struct hwt_kring *r)
{
	r->head = 0;
	r->tail = 0;
	r->open = false;
	r->full = false;
	r->signalled = false;
	r->wrapped = false;
	r->branch_seq = 0;
	r->insns = 0;
	r->lost = 0;
}

void hwt_kring_close(struct hwt_kring *r)
{
	r->open = false;
}

/* Mark the blocks opened from now on HWTRACE_BLK_BRANCH, or stop. */
void hwt_kring_branch(struct hwt_kring *r, bool on)
{
	if (on == r->branch)
		return;
	r->open = false;	/* a block is marked or not as a whole */
	r->branch = on;
	r->branch_seq = r->head;
}

/*
 * Block-step fell back: the marked blocks the ring holds hold single
 * steps only; unmark them, and the open block goes on unmarked.
 */
void hwt_kring_unmark_branch(struct hwt_kring *r)
{
	u64 seq;

	for (seq = max(r->tail, r->branch_seq); seq < r->head; seq++)
		hwt_block(r, seq)->flags &= ~HWTRACE_BLK_BRANCH;
	r->branch = false;
}

/* Open block r->head at @pc; false when there is no room (signal mode). */
static bool hwt_open_block(struct hwt_kring *r, u64 pc, unsigned int flags,
			   bool wrap)
{
	struct hwtrace_block *b;

	if (r->head - r->tail == r->nblocks) {
		if (!wrap)
			return false;
		/* Drop the oldest block; its instructions become lost. */
		r->lost += hwt_block(r, r->tail)->insn_count;
		r->tail++;
		r->wrapped = true;
	}
	b = hwt_block(r, r->head);
	b->magic = HWTRACE_BLOCK_MAGIC;
	b->used = 0;
	b->seq = r->head;
	b->first_insn = r->insns;
	b->first_pc = pc;
	b->last_pc = pc;
	b->insn_count = 1;
	b->flags = 0;
	if (flags & HWT_ADD_EXEC)
		b->flags |= HWTRACE_BLK_EXEC;
	if (flags & HWT_ADD_ASYNC)
		b->flags |= HWTRACE_BLK_ASYNC;
	if (r->branch)
		b->flags |= HWTRACE_BLK_BRANCH;
	r->head++;
	r->open = true;
	return true;
}

static u8 *hwt_put_delta(u8 *p, s64 d)
{
	unsigned int n = 1;

	if (d >= 1 && d <= 15) {
		*p++ = (u8)d;
		return p;
	}
	while (n < 8 && (d < -(1LL << (8 * n - 1)) ||
			 d >= (1LL << (8 * n - 1))))
		n++;
	*p++ = 0x10 + n;
	while (n--) {
		*p++ = (u8)d;
		d >>= 8;
	}
	return p;
}

/*
 * Add the instruction at @pc. Returns HWT_ADD_SIGNAL when a signal-mode
 * ring has just become full (the caller sends the signal, unlocked).
 */
int hwt_kring_add(struct hwt_kring *r, u64 pc, unsigned int flags, bool wrap,
		 u64 ts, u32 cpu)
{
	struct hwtrace_block *b;
	u8 *p, *start;

	if (r->open) {
		b = hwt_block(r, r->head - 1);
		if (flags & HWT_ADD_EXEC || b->used + HWT_MAX_ADD > HWT_PAYLOAD) {
			r->open = false;
		} else {
			start = (u8 *)(b + 1) + b->used;
			p = start;
			if (flags & HWT_ADD_SCHED) {
				*p++ = HWTRACE_REC_SCHED;
				memcpy(p, &ts, 8);
				memcpy(p + 8, &cpu, 4);
				p += 12;
			}
			if (flags & HWT_ADD_ASYNC)
				*p++ = HWTRACE_REC_ASYNC;
			p = hwt_put_delta(p, (s64)(pc - b->last_pc));
			b->used += p - start;
			b->last_pc = pc;
			b->insn_count++;
			r->insns++;
			return 0;
		}
	}
	if (!hwt_open_block(r, pc, flags, wrap)) {
		r->insns++;
		r->lost++;
		r->full = true;
		if (r->signalled)
			return 0;
		r->signalled = true;
		return HWT_ADD_SIGNAL;
	}
	r->insns++;
	return 0;
}

/*
 * Copy block @seq to @dst if the ring still holds it; the open block is
 * closed first so that what is copied is final.
 */
bool hwt_kring_copy_block(struct hwt_kring *r, u64 seq, void *dst)
{
	if (seq < r->tail || seq >= r->head)
		return false;
	if (seq == r->head - 1)
		r->open = false;
	memcpy(dst, hwt_block(r, seq), HWTRACE_BLOCK_SIZE);
	return true;
}
