// SPDX-License-Identifier: GPL-2.0-only
/*
 * hwt_dev.c - /dev/hwtrace: module init, the misc device, ioctl argument
 * copying and validation, and mmap of a thread's ring.
 *
 * Every argument is copied in with copy_from_user into a kernel struct of
 * the size the command encodes, its sz field, flags and reserved fields
 * are checked before use, and results are copied out; no user pointer is
 * dereferenced directly. The session mutex is never held while copying
 * to user space (mmap takes mmap_lock before the session lock).
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include "hwt.h"

#define HWT_SLOT_SHIFT	26	/* log2(HWTRACE_RING_MAX): mmap offset per slot */

static_assert(HWTRACE_RING_MAX == 1u << HWT_SLOT_SHIFT);

static int hwt_open(struct inode *inode, struct file *file)
{
	struct hwt_session *s = hwt_session_new(file);

	if (!s)
		return -ENOMEM;
	file->private_data = s;
	return 0;
}

static int hwt_release(struct inode *inode, struct file *file)
{
	hwt_session_release(file->private_data);
	return 0;
}

/* The thread @tid of @s with a reference, or an ERR_PTR. */
static struct hwt_thread *hwt_get_thread(struct hwt_session *s, u32 tid)
{
	struct hwt_thread *t;

	mutex_lock(&s->lock);
	t = hwt_session_find(s, tid);
	if (t)
		kref_get(&t->ref);
	mutex_unlock(&s->lock);
	return t ? t : ERR_PTR(-ESRCH);
}

static int hwt_check_config(const struct hwtrace_config *c)
{
	u32 mode = c->flags & (HWTRACE_CFG_WRAP | HWTRACE_CFG_SIGNAL);

	if (c->flags & ~HWTRACE_CFG_FLAGS || c->reserved)
		return -EINVAL;
	if (mode != HWTRACE_CFG_WRAP && mode != HWTRACE_CFG_SIGNAL)
		return -EINVAL;
	if (c->ring_size && (c->ring_size < HWTRACE_RING_MIN ||
			     c->ring_size > HWTRACE_RING_MAX ||
			     c->ring_size % HWTRACE_BLOCK_SIZE))
		return -EINVAL;
	if (mode == HWTRACE_CFG_SIGNAL) {
		if (!valid_signal(c->signal) || !c->signal ||
		    c->signal == SIGKILL || c->signal == SIGSTOP)
			return -EINVAL;
	} else if (c->signal) {
		return -EINVAL;
	}
	return 0;
}

static int hwt_config(struct hwt_session *s, struct hwtrace_config *c)
{
	struct hwt_kring fresh = {}, old;
	struct hwt_thread *t;
	unsigned long flags;
	int err = hwt_check_config(c);

	if (err)
		return err;
	mutex_lock(&s->lock);
	t = hwt_session_find(s, c->tid);
	err = -ESRCH;
	if (!t)
		goto out;
	err = -EBUSY;
	if (READ_ONCE(t->enabled))
		goto out;
	if (c->ring_size && c->ring_size != t->ring.size) {
		err = hwt_kring_alloc(&fresh, c->ring_size);
		if (err)
			goto out;
	}
	spin_lock_irqsave(&t->lock, flags);
	if (fresh.base) {
		old = t->ring;
		t->ring = fresh;
		fresh = old;
	}
	t->cfg.ring_size = t->ring.size;
	t->cfg.flags = c->flags;
	t->cfg.signal = c->signal;
	hwt_bs_config(t);
	spin_unlock_irqrestore(&t->lock, flags);
	hwt_kring_free(&fresh);
	err = 0;
out:
	mutex_unlock(&s->lock);
	return err;
}

static void hwt_fill_status(struct hwt_thread *t, struct hwtrace_status *st)
{
	struct task_struct *task = t->task;
	unsigned long flags;

	st->state = 0;
	if (READ_ONCE(t->enabled))
		st->state |= HWTRACE_ST_ENABLED;
	if (task->exit_state || (task->flags & PF_EXITING))
		st->state |= HWTRACE_ST_EXITED;
	spin_lock_irqsave(&t->lock, flags);
	st->config = t->cfg;
	if (t->ring.full)
		st->state |= HWTRACE_ST_FULL;
	if (t->ring.wrapped)
		st->state |= HWTRACE_ST_WRAPPED;
	st->state |= hwt_bs_state(t);
	st->insns = t->ring.insns;
	st->lost = t->ring.lost;
	st->head = t->ring.head;
	st->tail = t->ring.tail;
	spin_unlock_irqrestore(&t->lock, flags);
	st->blocks = st->head - st->tail;
	st->bytes = st->blocks * HWTRACE_BLOCK_SIZE;
}

static int hwt_drain(struct hwt_thread *t, struct hwtrace_drain *d)
{
	void __user *ubuf = u64_to_user_ptr(d->buf);
	unsigned long flags;
	u64 seq, off = 0;
	bool got;
	void *bounce;
	int err = 0;

	if (d->flags & ~HWTRACE_DRAIN_PEEK || d->buf_size < HWTRACE_BLOCK_SIZE)
		return -EINVAL;
	bounce = kmalloc(HWTRACE_BLOCK_SIZE, GFP_KERNEL);
	if (!bounce)
		return -ENOMEM;
	d->bytes = 0;
	d->blocks = 0;
	d->more = 0;
	spin_lock_irqsave(&t->lock, flags);
	seq = t->ring.tail;
	spin_unlock_irqrestore(&t->lock, flags);
	for (;;) {
		spin_lock_irqsave(&t->lock, flags);
		if (seq < t->ring.tail)		/* overwritten meanwhile */
			seq = t->ring.tail;
		if (off + HWTRACE_BLOCK_SIZE > d->buf_size) {
			d->more = seq < t->ring.head;
			spin_unlock_irqrestore(&t->lock, flags);
			break;
		}
		got = hwt_kring_copy_block(&t->ring, seq, bounce);
		if (got && !(d->flags & HWTRACE_DRAIN_PEEK)) {
			t->ring.tail = seq + 1;
			t->ring.full = false;
			t->ring.signalled = false;
		}
		spin_unlock_irqrestore(&t->lock, flags);
		if (!got)
			break;
		if (copy_to_user(ubuf + off, bounce, HWTRACE_BLOCK_SIZE)) {
			err = -EFAULT;
			break;
		}
		off += HWTRACE_BLOCK_SIZE;
		d->bytes = off;
		d->blocks++;
		seq++;
	}
	kfree(bounce);
	return err;
}

static int hwt_clear(struct hwt_thread *t)
{
	unsigned long flags;

	spin_lock_irqsave(&t->lock, flags);
	hwt_kring_reset(&t->ring);
	spin_unlock_irqrestore(&t->lock, flags);
	return 0;
}

/* HWTRACE_IOC_THREADS: the tids are gathered under the lock, copied after. */
static int hwt_threads(struct hwt_session *s, struct hwtrace_threads *th)
{
	u32 n, *tids;
	int err = 0;

	if (th->reserved)
		return -EINVAL;
	for (;;) {
		mutex_lock(&s->lock);
		n = min(th->count, s->nthreads);
		mutex_unlock(&s->lock);
		tids = kvcalloc(max(n, 1u), sizeof(*tids), GFP_KERNEL);
		if (!tids)
			return -ENOMEM;
		mutex_lock(&s->lock);
		/* Followed children may have joined meanwhile: retry. */
		if (n == min(th->count, s->nthreads))
			break;
		mutex_unlock(&s->lock);
		kvfree(tids);
	}
	hwt_session_tids(s, tids, n, &th->total);
	mutex_unlock(&s->lock);
	if (n && copy_to_user(u64_to_user_ptr(th->tids), tids,
			      n * sizeof(*tids)))
		err = -EFAULT;
	kvfree(tids);
	return err;
}

static long hwt_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct hwt_session *s = file->private_data;
	void __user *uarg = (void __user *)arg;
	union {
		struct hwtrace_attach a;
		struct hwtrace_config c;
		struct hwtrace_status st;
		struct hwtrace_get g;
		struct hwtrace_drain d;
		struct hwtrace_threads th;
	} u;
	struct hwt_thread *t;
	size_t size = _IOC_SIZE(cmd);
	long err;

	if (_IOC_TYPE(cmd) != HWTRACE_IOC_MAGIC || size > sizeof(u))
		return -ENOTTY;
	switch (cmd) {
	case HWTRACE_IOC_ATTACH: case HWTRACE_IOC_CONFIG:
	case HWTRACE_IOC_ENABLE: case HWTRACE_IOC_DISABLE:
	case HWTRACE_IOC_STATUS: case HWTRACE_IOC_SIZE:
	case HWTRACE_IOC_GET: case HWTRACE_IOC_DRAIN:
	case HWTRACE_IOC_CLEAR: case HWTRACE_IOC_DETACH:
	case HWTRACE_IOC_THREADS:
		break;
	default:
		return -ENOTTY;
	}
	if (copy_from_user(&u, uarg, size))
		return -EFAULT;
	/* Every argument struct starts with sz (then tid, but THREADS). */
	if (u.a.sz != size)
		return -EINVAL;

	switch (cmd) {
	case HWTRACE_IOC_ATTACH:
		mutex_lock(&s->lock);
		err = hwt_session_attach(s, u.a.tid);
		mutex_unlock(&s->lock);
		return err;
	case HWTRACE_IOC_DETACH:
		mutex_lock(&s->lock);
		err = hwt_session_detach(s, u.a.tid);
		mutex_unlock(&s->lock);
		return err;
	case HWTRACE_IOC_CONFIG:
		return hwt_config(s, &u.c);
	case HWTRACE_IOC_THREADS:
		err = hwt_threads(s, &u.th);
		if (!err && copy_to_user(uarg, &u.th, size))
			err = -EFAULT;
		return err;
	}

	t = hwt_get_thread(s, u.a.tid);
	if (IS_ERR(t))
		return PTR_ERR(t);
	err = 0;
	switch (cmd) {
	case HWTRACE_IOC_ENABLE:
		err = hwt_thread_set_enabled(t, true);
		break;
	case HWTRACE_IOC_DISABLE:
		err = hwt_thread_set_enabled(t, false);
		break;
	case HWTRACE_IOC_CLEAR:
		err = hwt_clear(t);
		break;
	case HWTRACE_IOC_STATUS:
	case HWTRACE_IOC_SIZE:
		if (u.st.reserved) {
			err = -EINVAL;
			break;
		}
		hwt_fill_status(t, &u.st);
		if (copy_to_user(uarg, &u.st, size))
			err = -EFAULT;
		break;
	case HWTRACE_IOC_GET:
		u.g.offset = (u64)t->slot << HWT_SLOT_SHIFT;
		u.g.size = READ_ONCE(t->ring.size);
		if (copy_to_user(uarg, &u.g, size))
			err = -EFAULT;
		break;
	case HWTRACE_IOC_DRAIN:
		err = hwt_drain(t, &u.d);
		if (err != -EFAULT && copy_to_user(uarg, &u.d, size))
			err = -EFAULT;
		break;
	}
	hwt_thread_put(t);
	return err;
}

static int hwt_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct hwt_session *s = file->private_data;
	unsigned long len = vma->vm_end - vma->vm_start;
	unsigned long pgoff = vma->vm_pgoff;
	struct hwt_thread *t;
	unsigned long flags;
	int err = -EINVAL;

	if (vma->vm_flags & VM_WRITE || !(vma->vm_flags & VM_SHARED))
		return -EACCES;
	if (pgoff & ((1ul << (HWT_SLOT_SHIFT - PAGE_SHIFT)) - 1))
		return -EINVAL;
	mutex_lock(&s->lock);
	t = hwt_session_find_slot(s, pgoff >> (HWT_SLOT_SHIFT - PAGE_SHIFT));
	if (t) {
		/* CONFIG swaps rings under the session lock we hold. */
		spin_lock_irqsave(&t->lock, flags);
		err = len <= t->ring.size ? 0 : -EINVAL;
		spin_unlock_irqrestore(&t->lock, flags);
		if (!err) {
			vma->vm_flags &= ~VM_MAYWRITE;
			vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
			vma->vm_pgoff = 0;
			err = remap_vmalloc_range(vma, t->ring.base, 0);
		}
	}
	mutex_unlock(&s->lock);
	return err;
}

static const struct file_operations hwt_fops = {
	.owner = THIS_MODULE,
	.open = hwt_open,
	.release = hwt_release,
	.unlocked_ioctl = hwt_ioctl,
	.mmap = hwt_mmap,
	.llseek = noop_llseek,
};

static struct miscdevice hwt_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "hwtrace",
	.fops = &hwt_fops,
	.mode = 0666,
};

static int __init hwt_init(void)
{
	int err;

	err = hwt_threads_init();
	if (err)
		return err;
	err = hwt_recorder_init();
	if (err)
		return err;
	/* The tracepoint probes follow when the first thread is attached. */
	err = misc_register(&hwt_misc);
	if (err)
		goto out_rec;
	return 0;

out_rec:
	hwt_recorder_exit();
	return err;
}

static void __exit hwt_exit(void)
{
	misc_deregister(&hwt_misc);
	hwt_tp_exit();
	hwt_recorder_exit();
	hwt_threads_exit();
}

module_init(hwt_init);
module_exit(hwt_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("hwtrace: per-thread software instruction recorder");
