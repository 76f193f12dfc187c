// SPDX-License-Identifier: GPL-2.0-only
/*
 * hwt_thread.c - a traced thread: attach with ptrace-equivalent
 * permission, the global task -> thread hash the recorder looks up in
 * trap context, and the task_work that makes the thread set or clear its
 * own trap flag.
 *
 * The trap flag lives in the thread's saved user registers
 * (task_pt_regs). Only the thread itself can change them reliably (a
 * running thread overwrites them at its next kernel entry), so every
 * change of the wanted state is carried out by hwt_thread_sync() running
 * as task_work in the thread on its way back to user mode.
 */
#include <linux/cred.h>
#include <linux/capability.h>
#include <linux/hashtable.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/pid.h>
#include <linux/sched/coredump.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/sched/task_stack.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>
#include "hwt.h"

DEFINE_SPINLOCK(hwt_hash_lock);
static DEFINE_HASHTABLE(hwt_hash, 8);

struct hwt_thread *hwt_thread_lookup_rcu(struct task_struct *task)
{
	struct hwt_thread *t;

	hash_for_each_possible_rcu(hwt_hash, t, hnode, (unsigned long)task)
		if (t->task == task)
			return t;
	return NULL;
}

static void hwt_thread_free_rcu(struct rcu_head *rcu)
{
	struct hwt_thread *t = container_of(rcu, struct hwt_thread, rcu);

	hwt_kring_free(&t->ring);
	put_task_struct(t->task);
	kfree(t);
}

static void hwt_thread_release(struct kref *ref)
{
	struct hwt_thread *t = container_of(ref, struct hwt_thread, ref);

	call_rcu(&t->rcu, hwt_thread_free_rcu);
}

void hwt_thread_put(struct hwt_thread *t)
{
	kref_put(&t->ref, hwt_thread_release);
}

/* Caller holds hwt_hash_lock; the thread carries no trap flag of ours. */
void hwt_thread_unhash_locked(struct hwt_thread *t)
{
	lockdep_assert_held(&hwt_hash_lock);

	if (!t->hashed)
		return;
	hash_del_rcu(&t->hnode);
	t->hashed = false;
	t->armed = false;
	hwt_tp_put();
	/* Not module_put(): this may be the thread's own task_work. */
	hwt_pin_drop(t->pin);
	t->pin = NULL;
	hwt_thread_put(t);
}

/*
 * Runs in the traced thread (task_work) before it returns to user mode,
 * or while it exits: bring the trap flag in line with what is wanted.
 */
static void hwt_thread_sync(struct callback_head *cb)
{
	struct hwt_thread *t = container_of(cb, struct hwt_thread, work);
	struct pt_regs *regs = task_pt_regs(current);
	unsigned long flags;
	bool want;
	int sig = 0;

	clear_bit(0, &t->work_queued);
	smp_mb__after_atomic();
	spin_lock_irqsave(&hwt_hash_lock, flags);
	want = t->sess && t->enabled && !(current->flags & PF_EXITING);
	if (want) {
		bool first = !t->armed || !(regs->flags & X86_EFLAGS_TF);
		bool async = t->signal_pending;

		t->signal_pending = false;
		hwt_arm_current(t);
		/*
		 * The instruction at regs->ip runs next without a trap
		 * before it: record it here (first instruction after
		 * enable, or a signal handler's first instruction).
		 */
		if (first)
			sig = hwt_record(t, regs->ip,
					 async ? HWT_ADD_ASYNC : 0);
	} else if (t->armed && test_thread_flag(TIF_SINGLESTEP) &&
		   !(current->flags & PF_EXITING)) {
		/*
		 * A debugger is stepping the thread and TF is its too: the
		 * thread stays armed and the first trap after the debugger
		 * resumes it clears TF (hwt_recorder.c).
		 */
	} else {
		if (t->armed)
			regs->flags &= ~X86_EFLAGS_TF;
		t->armed = false;
		if (!t->sess)
			hwt_thread_unhash_locked(t);
	}
	spin_unlock_irqrestore(&hwt_hash_lock, flags);
	if (sig)
		send_sig(sig, current, 0);
	hwt_thread_put(t);
}

/* Queue hwt_thread_sync() on the thread unless it is queued already. */
void hwt_thread_kick(struct hwt_thread *t)
{
	unsigned long flags;

	if (test_and_set_bit(0, &t->work_queued))
		return;
	kref_get(&t->ref);
	init_task_work(&t->work, hwt_thread_sync);
	if (task_work_add(t->task, &t->work, TWA_RESUME) == 0)
		return;
	/* The thread has exited: it runs no more user code. */
	clear_bit(0, &t->work_queued);
	spin_lock_irqsave(&hwt_hash_lock, flags);
	t->armed = false;
	if (!t->sess)
		hwt_thread_unhash_locked(t);
	spin_unlock_irqrestore(&hwt_hash_lock, flags);
	hwt_thread_put(t);
}

/*
 * The permission ptrace attach needs (__ptrace_may_access with
 * PTRACE_MODE_ATTACH_REALCREDS), which is not exported: the caller's
 * real uid and gid match all of the target's uids and gids and the target
 * is dumpable, or the caller has CAP_SYS_PTRACE over the target.
 */
static int hwt_may_attach(struct task_struct *task)
{
	const struct cred *cred = current_cred(), *tcred;
	struct user_namespace *ns;
	struct mm_struct *mm;
	bool same, dumpable = true;

	if (same_thread_group(task, current))
		return -EPERM;	/* a thread cannot record its own group */
	rcu_read_lock();
	tcred = __task_cred(task);
	same = uid_eq(cred->uid, tcred->euid) &&
	       uid_eq(cred->uid, tcred->suid) &&
	       uid_eq(cred->uid, tcred->uid) &&
	       gid_eq(cred->gid, tcred->egid) &&
	       gid_eq(cred->gid, tcred->sgid) &&
	       gid_eq(cred->gid, tcred->gid);
	ns = get_user_ns(tcred->user_ns);
	rcu_read_unlock();
	mm = get_task_mm(task);
	if (mm) {
		dumpable = get_dumpable(mm) == SUID_DUMP_USER;
		mmput(mm);
	}
	if (same && dumpable) {
		put_user_ns(ns);
		return 0;
	}
	same = ns_capable(ns, CAP_SYS_PTRACE);
	put_user_ns(ns);
	return same ? 0 : -EPERM;
}

/*
 * Attach @task (referenced; the reference passes to the thread, or is
 * dropped on failure) as @tid to @s with @cfg's ring size and flags (NULL:
 * the defaults). A thread detached but still hashed (its trap flag not
 * yet cleared) is adopted; one owned by a session gives -EBUSY.
 */
int hwt_thread_attach_task(struct hwt_session *s, struct task_struct *task,
			   pid_t tid, u32 slot, const struct hwtrace_config *cfg,
			   struct hwt_thread **out)
{
	struct hwt_thread *t, *old;
	struct file *spare = NULL;
	unsigned long flags;
	int err;

	if (task->flags & (PF_KTHREAD | PF_EXITING)) {
		err = -ESRCH;
		goto out_task;
	}
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	err = -ENOMEM;
	if (!t)
		goto out_task;
	t->cfg.sz = sizeof(t->cfg);
	t->cfg.tid = tid;
	t->cfg.ring_size = cfg ? cfg->ring_size : HWTRACE_RING_DEFAULT;
	t->cfg.flags = cfg ? cfg->flags : HWTRACE_CFG_WRAP;
	t->cfg.signal = cfg ? cfg->signal : 0;
	err = hwt_kring_alloc(&t->ring, t->cfg.ring_size);
	if (err)
		goto out_free;
	t->pin = hwt_pin_new();
	if (IS_ERR(t->pin)) {
		err = PTR_ERR(t->pin);
		t->pin = NULL;
		goto out_free;
	}
	/* The probes are in place before the thread can be armed. */
	err = hwt_tp_get();
	if (err)
		goto out_free;
	hwt_bs_config(t);	/* not visible yet: no lock needed */
	kref_init(&t->ref);
	spin_lock_init(&t->lock);
	INIT_LIST_HEAD(&t->snode);
	t->task = task;
	t->tid = tid;
	t->slot = slot;

	spin_lock_irqsave(&hwt_hash_lock, flags);
	old = hwt_thread_lookup_rcu(task);
	if (old && old->sess) {
		spin_unlock_irqrestore(&hwt_hash_lock, flags);
		hwt_tp_put();
		err = -EBUSY;
		goto out_free;
	}
	if (old) {
		/*
		 * A detached thread may still carry our trap flag; the new
		 * object takes over its place in the hash and its arming.
		 */
		t->armed = old->armed;
		hash_del_rcu(&old->hnode);
		old->hashed = false;
		old->armed = false;
		spare = t->pin;		/* old's pin stays with the hash */
		t->pin = old->pin;
		old->pin = NULL;
		hwt_thread_put(old);	/* the hash's reference */
		hwt_tp_put();		/* the hash holds no more threads */
	}
	kref_get(&t->ref);		/* the hash's reference */
	hash_add_rcu(hwt_hash, &t->hnode, (unsigned long)task);
	t->hashed = true;
	WRITE_ONCE(t->sess, s);
	spin_unlock_irqrestore(&hwt_hash_lock, flags);
	hwt_pin_drop(spare);
	*out = t;			/* the session's reference */
	return 0;

out_free:
	hwt_pin_drop(t->pin);
	hwt_kring_free(&t->ring);
	kfree(t);
out_task:
	put_task_struct(task);
	return err;
}

/* Attach @tid (in the caller's pid namespace) to @s, with the defaults. */
int hwt_thread_attach(struct hwt_session *s, pid_t tid, u32 slot,
		      struct hwt_thread **out)
{
	struct task_struct *task;
	struct pid *pid;
	int err;

	if (tid <= 0)
		return -EINVAL;
	pid = find_get_pid(tid);
	task = pid ? get_pid_task(pid, PIDTYPE_PID) : NULL;
	put_pid(pid);
	if (!task)
		return -ESRCH;
	err = hwt_may_attach(task);
	if (err) {
		put_task_struct(task);
		return err;
	}
	return hwt_thread_attach_task(s, task, tid, slot, NULL, out);
}

/* Caller holds the session lock and has unlinked @t; drops its reference. */
void hwt_thread_detach(struct hwt_thread *t)
{
	unsigned long flags;
	bool armed;

	spin_lock_irqsave(&hwt_hash_lock, flags);
	WRITE_ONCE(t->sess, NULL);
	WRITE_ONCE(t->enabled, false);
	armed = t->armed;
	if (!armed)
		hwt_thread_unhash_locked(t);
	spin_unlock_irqrestore(&hwt_hash_lock, flags);
	/* An armed thread clears its flag and leaves the hash itself. */
	if (armed)
		hwt_thread_kick(t);
	hwt_thread_put(t);
}

int hwt_thread_set_enabled(struct hwt_thread *t, bool on)
{
	unsigned long flags;

	if (on && (t->task->flags & PF_EXITING))
		return -ESRCH;
	spin_lock_irqsave(&hwt_hash_lock, flags);
	WRITE_ONCE(t->enabled, on);
	spin_unlock_irqrestore(&hwt_hash_lock, flags);
	hwt_thread_kick(t);
	return 0;
}

int hwt_threads_init(void)
{
	return 0;
}

void hwt_threads_exit(void)
{
	/* Hashed threads hold module references: the hash is empty here. */
	WARN_ON(!hash_empty(hwt_hash));
	rcu_barrier();
}
