// SPDX-License-Identifier: GPL-2.0-only
/*
 * hwt_blockstep.c - optional block-step (HWTRACE_CFG_BLOCKSTEP): with
 * DEBUGCTL.BTF set, TF traps after taken branches only, not after every
 * instruction. Whether the hardware (or hypervisor) honours BTF is found
 * out at run time, per thread; where it does not, the thread falls back
 * to single-step.
 *
 * The module never writes DEBUGCTL (perf owns the other bits): it sets
 * TIF_BLOCKSTEP on the thread, and the context switch code
 * (__switch_to_xtra) sets BTF when the thread is switched in. The CPU
 * clears BTF with every debug exception and the kernel's handler clears
 * TIF_BLOCKSTEP with it, so after each trap the flag is set again: BTF is
 * in force from the thread's next switch-in to its next trap.
 *
 * The probe: a trap taken while BTF was in force (the thread was switched
 * in since the flag was last set) at an address 1..15 bytes after the
 * previous record is a single-step, which BTF would have suppressed (a
 * branch trap lands there only for a taken short forward branch). Two of
 * them and BTF is not honoured; sixteen probe traps with fewer and it
 * is. Until the verdict the blocks are marked HWTRACE_BLK_BRANCH, as a
 * trap may have left instructions out; a fallback removes the marks from
 * the blocks still held, which then hold single steps only.
 */
#include <linux/sched.h>
#include "hwt.h"

#define HWT_BS_PROBES		16	/* probe traps for a BTF verdict */
#define HWT_BS_STEPS		2	/* single-steps seen: no BTF */

static unsigned long hwt_switches(void)
{
	return current->nvcsw + current->nivcsw;
}

/* CONFIG (the thread is not recording): restart from the request. */
void hwt_bs_config(struct hwt_thread *t)
{
	bool on = t->cfg.flags & HWTRACE_CFG_BLOCKSTEP;

	t->bs_mode = on ? HWT_BS_PROBING : HWT_BS_OFF;
	t->bs_probes = 0;
	t->bs_seq = 0;
	hwt_kring_branch(&t->ring, on);
}

/*
 * @t (current) is being armed or has just trapped: let the next switch-in
 * program BTF, unless a debugger steps the thread (its steps are single).
 */
void hwt_bs_arm(struct hwt_thread *t)
{
	if (t->bs_mode != HWT_BS_PROBING && t->bs_mode != HWT_BS_BLOCK)
		return;
	if (test_thread_flag(TIF_SINGLESTEP))
		return;
	set_thread_flag(TIF_BLOCKSTEP);
	t->bs_switches = hwt_switches();
}

/* A debug trap of @t (current) at @pc, before it is recorded. */
void hwt_bs_trap(struct hwt_thread *t, u64 pc)
{
	u64 d = pc - t->last_pc;

	if (t->bs_mode != HWT_BS_PROBING)
		goto arm;
	/* BTF was not in force: no switch-in since, or a debugger's step. */
	if (t->bs_switches == hwt_switches() ||
	    test_thread_flag(TIF_SINGLESTEP))
		goto arm;
	t->bs_probes++;
	if (d >= 1 && d <= 15)
		t->bs_seq++;
	if (t->bs_seq >= HWT_BS_STEPS) {
		t->bs_mode = HWT_BS_FALLBACK;
		hwt_kring_unmark_branch(&t->ring);
	} else if (t->bs_probes >= HWT_BS_PROBES) {
		t->bs_mode = HWT_BS_BLOCK;
	}
arm:
	hwt_bs_arm(t);
}

/* HWTRACE_ST_BS_* for STATUS. */
u32 hwt_bs_state(const struct hwt_thread *t)
{
	switch (t->bs_mode) {
	case HWT_BS_PROBING:
		return HWTRACE_ST_BS_PROBING;
	case HWT_BS_BLOCK:
		return HWTRACE_ST_BS_BLOCK;
	case HWT_BS_FALLBACK:
		return HWTRACE_ST_BS_FALLBACK;
	}
	return 0;
}
