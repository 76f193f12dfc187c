// SPDX-License-Identifier: GPL-2.0-only
/*
 * hwt_follow.c - follow-fork (HWTRACE_CFG_FOLLOW): a child of a recording
 * thread joins the parent's session and records from its first user
 * instruction.
 *
 * The fork tracepoint runs in the parent, atomically, before the child
 * has run: too early to allocate a ring. It queues a task_work on the
 * child instead, which runs in the child on its way to user mode (after
 * the fork's syscall-exit work, before its first instruction), where it
 * can sleep: it attaches the child to the session and enables it; the
 * enable's own task_work (hwt_thread.c) then arms the child and records
 * its first instruction, in the same return to user mode.
 *
 * The pending work holds a reference to the session's file: the session
 * (which the file's release frees) and the module (the file holds a
 * module reference) stay until the work has run and returned. Its fput()
 * at the end only queues the release behind the work (hwt_pin.c), so the
 * module's last reference, if this was it, goes after the work's last
 * instruction. A session whose file is being released follows no child.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/task_work.h>
#include "hwt.h"

struct hwt_follow {
	struct callback_head work;
	struct hwt_session *sess;	/* kept by ->file */
	struct file *file;		/* the session's, referenced */
	struct hwtrace_config cfg;	/* the parent's, at fork time */
};

/* task_work in the child (current), or run while it exits before. */
static void hwt_follow_run(struct callback_head *cb)
{
	struct hwt_follow *f = container_of(cb, struct hwt_follow, work);
	struct hwt_session *s = f->sess;
	struct file *file = f->file;
	struct hwt_thread *t;

	if (!(current->flags & PF_EXITING)) {
		mutex_lock(&s->lock);
		if (!hwt_session_adopt(s, current, &f->cfg, &t))
			hwt_thread_set_enabled(t, true);
		mutex_unlock(&s->lock);
	}
	kfree(f);
	fput(file);	/* released after we return: see above */
}

/*
 * sched_process_fork for a hashed @parent (current): queue the adoption
 * of @child when the parent records with HWTRACE_CFG_FOLLOW. Atomic
 * context. Out of memory, the child simply runs untraced.
 */
void hwt_follow_fork(struct hwt_thread *parent, struct task_struct *child)
{
	struct hwt_session *s = NULL;
	struct hwt_follow *f;
	unsigned long flags;

	/* io_uring workers and kernel threads run no user code of theirs. */
	if (child->flags & (PF_KTHREAD | PF_IO_WORKER))
		return;
	if (!(READ_ONCE(parent->cfg.flags) & HWTRACE_CFG_FOLLOW))
		return;
	f = kzalloc(sizeof(*f), GFP_ATOMIC);
	if (!f)
		return;
	spin_lock_irqsave(&parent->lock, flags);
	f->cfg = parent->cfg;
	spin_unlock_irqrestore(&parent->lock, flags);
	/*
	 * Under the hash lock the session cannot finish detaching parent,
	 * so it is not freed yet; its file, freed after an RCU grace period
	 * (the tracepoint runs in one), is referenced unless its release
	 * has begun.
	 */
	spin_lock_irqsave(&hwt_hash_lock, flags);
	if (parent->enabled && parent->sess &&
	    (f->cfg.flags & HWTRACE_CFG_FOLLOW) &&
	    get_file_rcu(parent->sess->file))
		s = parent->sess;
	spin_unlock_irqrestore(&hwt_hash_lock, flags);
	if (!s)
		goto out_free;
	f->sess = s;
	f->file = s->file;
	init_task_work(&f->work, hwt_follow_run);
	if (!task_work_add(child, &f->work, TWA_RESUME))
		return;
	fput(f->file);
out_free:
	kfree(f);
}
