// SPDX-License-Identifier: GPL-2.0-only
/*
 * hwt_arm.c - a traced thread armed and its instructions recorded: the
 * trap flag set in its saved user flags, and each address into its ring.
 * The trap notifier and tracepoints (hwt_recorder.c) and the thread's own
 * sync before it returns to user mode (hwt_thread.c) share these.
 */
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/smp.h>
#include <linux/ktime.h>
#include <asm/ptrace.h>
#include "hwt.h"

/* Caller holds hwt_hash_lock; runs in @t's own task context. */
bool hwt_arm_current(struct hwt_thread *t)
{
	struct pt_regs *regs = task_pt_regs(current);

	lockdep_assert_held(&hwt_hash_lock);
	regs->flags |= X86_EFLAGS_TF;
	/*
	 * TF is ours now: if a debugger had forced it for a step, its
	 * resume must not clear it (user_disable_single_step clears TF only
	 * under TIF_FORCED_TF).
	 */
	clear_thread_flag(TIF_FORCED_TF);
	WRITE_ONCE(t->armed, true);
	spin_lock(&t->lock);
	hwt_bs_arm(t);
	spin_unlock(&t->lock);
	return true;
}

/*
 * Record @pc for @t, which is current. Any context; takes t->lock.
 * Returns the signal to send to current (signal-on-full) once the caller
 * holds no lock of ours, or 0.
 */
int hwt_record(struct hwt_thread *t, u64 pc, unsigned int flags)
{
	unsigned long irqflags, sw;
	int sig = 0;
	u64 ts = 0;
	u32 cpu = 0;

	spin_lock_irqsave(&t->lock, irqflags);
	if (t->cfg.flags & HWTRACE_CFG_SCHED_TS) {
		sw = current->nvcsw + current->nivcsw;
		cpu = raw_smp_processor_id();
		if (sw != t->last_switches || cpu != t->last_cpu) {
			t->last_switches = sw;
			t->last_cpu = cpu;
			ts = ktime_get_ns();
			flags |= HWT_ADD_SCHED;
		}
	}
	if (flags & HWT_ADD_TRAP)
		hwt_bs_trap(t, pc);
	t->last_pc = pc;
	if (hwt_kring_add(&t->ring, pc, flags,
			 t->cfg.flags & HWTRACE_CFG_WRAP, ts, cpu) ==
	    HWT_ADD_SIGNAL)
		sig = t->cfg.signal;
	spin_unlock_irqrestore(&t->lock, irqflags);
	return sig;
}
