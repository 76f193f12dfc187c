// SPDX-License-Identifier: GPL-2.0-only
/*
 * hwt_recorder.c - the software recorder: the trap flag (TF) in a traced
 * thread's saved user flags makes the CPU raise a debug exception after
 * every user instruction; a DIE_DEBUG notifier records the address and
 * swallows the trap when it is ours alone.
 *
 * Whose trap is it? DR6.BS says a single-step happened. The notifier
 * lets it through to the normal path (SIGTRAP) when a debugger asked for
 * the step (TIF_SINGLESTEP, set by PTRACE_SINGLESTEP), and it lets
 * hardware breakpoint hits (virtual_dr6 B0-B3) through in any case; it
 * removes its own BS bit and stale B0-B3 bits of disabled registers.
 *
 * The trap flag does not survive everything, so tracepoints fill in:
 *  - syscalls: SYSCALL masks TF and the return through IRET traps only
 *    after the first instruction back in user mode: sys_exit records
 *    that instruction (the return address, or the context sigreturn
 *    restored);
 *  - signal delivery clears TF for the handler: signal_deliver queues the
 *    thread's task_work, which records the handler entry (async) and sets
 *    TF again; sigreturn restores the saved flags and with them TF;
 *  - fork/clone copy TF into the child: sched_process_fork clears it in
 *    the child before it first runs, so children are not recorded and
 *    never see a stray trap, unless the parent records with
 *    HWTRACE_CFG_FOLLOW: then hwt_follow.c makes the child join the
 *    session and arm itself before its first instruction;
 *  - exec resets the flags: hwt_exec.c marks the thread, and sys_exit of
 *    execve starts a block at the new entry point and sets TF again;
 *  - exit: sched_process_exit lets a detached thread leave the hash even
 *    if it never returned to user mode to clear its flag.
 */
#include <linux/kdebug.h>
#include <linux/ktime.h>
#include <linux/sched/signal.h>
#include <linux/sched/task_stack.h>
#include <linux/signal.h>
#include <linux/smp.h>
#include <linux/tracepoint.h>
#include <asm/debugreg.h>
#include <asm/ptrace.h>
#include "hwt.h"

static int hwt_die_notify(struct notifier_block *nb, unsigned long val,
			  void *data)
{
	struct die_args *args = data;
	struct pt_regs *regs = args->regs;
	unsigned long *dr6 = (unsigned long *)args->err;
	struct hwt_thread *t;
	int ret = NOTIFY_DONE, sig = 0;
	bool debugger;

	if (val != DIE_DEBUG || !user_mode(regs) || !(*dr6 & DR_STEP))
		return NOTIFY_DONE;
	rcu_read_lock();
	t = hwt_thread_lookup_rcu(current);
	if (!t)
		goto out;
	debugger = test_thread_flag(TIF_SINGLESTEP);
	if (READ_ONCE(t->armed) && READ_ONCE(t->enabled) &&
	    READ_ONCE(t->sess)) {
		/*
		 * The common case, without the hash lock: a concurrent
		 * DISABLE or DETACH at worst lets this one instruction in;
		 * the ring is freed only after an RCU grace period.
		 */
		sig = hwt_record(t, regs->ip, HWT_ADD_TRAP);
	} else {
		spin_lock(&hwt_hash_lock);
		if (!t->armed) {
			/* Not our TF (the program's own, or a debugger's). */
			spin_unlock(&hwt_hash_lock);
			goto out;
		}
		/*
		 * Disabled or detached: drop our TF on its first trap. While
		 * a debugger steps, TF is its too; the first trap after it
		 * resumes the thread clears it.
		 */
		if (!debugger) {
			regs->flags &= ~X86_EFLAGS_TF;
			t->armed = false;
			if (!t->sess)
				hwt_thread_unhash_locked(t);
		}
		spin_unlock(&hwt_hash_lock);
	}
	if (debugger)
		goto out;	/* the debugger's step: deliver it */
	/*
	 * The hw-breakpoint notifier ran first: it moved the hits of
	 * registered breakpoints into virtual_dr6 and cleared them here.
	 * B0-B3 bits left in DR6 match a debug register no breakpoint is
	 * enabled for (the CPU may report those), which no trap but ours
	 * would have exposed: drop them with our BS bit.
	 */
	*dr6 &= ~(DR_STEP | DR_TRAP_BITS);
	current->thread.virtual_dr6 &= ~DR_STEP;
	/* A hardware breakpoint hit in the same trap still gets its signal. */
	if (!(current->thread.virtual_dr6 & DR_TRAP_BITS))
		ret = NOTIFY_STOP;
out:
	rcu_read_unlock();
	if (sig)
		send_sig(sig, current, 0);
	return ret;
}

static struct notifier_block hwt_die_nb = {
	.notifier_call = hwt_die_notify,
};

static void hwt_sys_exit(void *data, struct pt_regs *regs, long ret)
{
	struct hwt_thread *t;
	unsigned long flags;
	bool exec;
	int sig = 0;

	rcu_read_lock();
	t = hwt_thread_lookup_rcu(current);
	if (!t)
		goto out;
	spin_lock_irqsave(&hwt_hash_lock, flags);
	exec = t->exec_pending;
	t->exec_pending = false;
	if (t->enabled && t->sess && exec) {
		/* exec reset the flags: record the entry and set TF again. */
		hwt_arm_current(t);
		sig = hwt_record(t, regs->ip, HWT_ADD_EXEC);
	} else if (t->enabled && t->sess && t->armed &&
		   (regs->flags & X86_EFLAGS_TF)) {
		sig = hwt_record(t, regs->ip, 0);
	}
	spin_unlock_irqrestore(&hwt_hash_lock, flags);
out:
	rcu_read_unlock();
	if (sig)
		send_sig(sig, current, 0);
}

static void hwt_signal_deliver(void *data, int sig, struct kernel_siginfo *info,
			       struct k_sigaction *ka)
{
	struct hwt_thread *t;

	/* Only a handler that runs clears TF; ignored and default do not. */
	if (ka->sa.sa_handler == SIG_IGN || ka->sa.sa_handler == SIG_DFL)
		return;
	rcu_read_lock();
	t = hwt_thread_lookup_rcu(current);
	if (t && t->armed && t->enabled) {
		WRITE_ONCE(t->signal_pending, true);
		hwt_thread_kick(t);
	}
	rcu_read_unlock();
}

static void hwt_fork(void *data, struct task_struct *parent,
		     struct task_struct *child)
{
	struct hwt_thread *t;

	rcu_read_lock();
	t = hwt_thread_lookup_rcu(parent);
	/* The child has not run yet: its saved registers are stable. */
	if (t && t->armed)
		task_pt_regs(child)->flags &= ~X86_EFLAGS_TF;
	/* Followed, it arms itself on its way to user mode. */
	if (t)
		hwt_follow_fork(t, child);
	rcu_read_unlock();
}

/* sched_process_exit: the thread runs no more user code. */
static void hwt_exit(void *data, struct task_struct *p)
{
	struct hwt_thread *t;
	unsigned long flags;

	rcu_read_lock();
	t = hwt_thread_lookup_rcu(p);
	if (t) {
		spin_lock_irqsave(&hwt_hash_lock, flags);
		t->armed = false;
		if (!t->sess)
			hwt_thread_unhash_locked(t);
		spin_unlock_irqrestore(&hwt_hash_lock, flags);
	}
	rcu_read_unlock();
}

/*
 * The probes, in registration order (hwt_tp.c registers them while a
 * thread is hashed). The die notifier stays registered while the module
 * is loaded: it runs only on debug exceptions.
 */
const struct hwt_probe hwt_recorder_probes[] = {
	{ "sys_exit", hwt_sys_exit },
	{ "signal_deliver", hwt_signal_deliver },
	{ "sched_process_fork", hwt_fork },
	{ "sched_process_exit", hwt_exit },
	{ }
};

int hwt_recorder_init(void)
{
	return register_die_notifier(&hwt_die_nb);
}

void hwt_recorder_exit(void)
{
	/* Waits for notifier calls in progress (synchronize_rcu). */
	unregister_die_notifier(&hwt_die_nb);
}
