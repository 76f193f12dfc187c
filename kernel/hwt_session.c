// SPDX-License-Identifier: GPL-2.0-only
/*
 * hwt_session.c - a session (one per open file, like a FreeBSD hwt
 * context): the threads it attached, each with a slot number that names
 * its ring for mmap. Closing the file detaches every thread.
 */
#include <linux/pid_namespace.h>
#include <linux/slab.h>
#include "hwt.h"

/* Slots are bounded so that slot * HWTRACE_RING_MAX fits a file offset. */
#define HWT_MAX_SLOTS	(1u << 20)

struct hwt_session *hwt_session_new(struct file *file)
{
	struct hwt_session *s = kzalloc(sizeof(*s), GFP_KERNEL);

	if (!s)
		return NULL;
	s->file = file;
	mutex_init(&s->lock);
	INIT_LIST_HEAD(&s->threads);
	s->pid_ns = get_pid_ns(task_active_pid_ns(current));
	return s;
}

/* Caller holds s->lock. */
struct hwt_thread *hwt_session_find(struct hwt_session *s, pid_t tid)
{
	struct hwt_thread *t;

	lockdep_assert_held(&s->lock);
	list_for_each_entry(t, &s->threads, snode)
		if (t->tid == tid)
			return t;
	return NULL;
}

/* Caller holds s->lock. */
struct hwt_thread *hwt_session_find_slot(struct hwt_session *s, u32 slot)
{
	struct hwt_thread *t;

	lockdep_assert_held(&s->lock);
	list_for_each_entry(t, &s->threads, snode)
		if (t->slot == slot)
			return t;
	return NULL;
}

/* Caller holds s->lock. */
int hwt_session_attach(struct hwt_session *s, pid_t tid)
{
	struct hwt_thread *t;
	int err;

	lockdep_assert_held(&s->lock);
	if (hwt_session_find(s, tid))
		return -EBUSY;
	if (s->next_slot >= HWT_MAX_SLOTS)
		return -ENOSPC;
	err = hwt_thread_attach(s, tid, s->next_slot, &t);
	if (err)
		return err;
	s->next_slot++;
	s->nthreads++;
	list_add_tail(&t->snode, &s->threads);
	return 0;
}

/*
 * Caller holds s->lock. Attach @task, a followed child (current), with
 * @cfg; the tid is the child's in the opener's pid namespace.
 */
int hwt_session_adopt(struct hwt_session *s, struct task_struct *task,
		      const struct hwtrace_config *cfg,
		      struct hwt_thread **out)
{
	pid_t tid = task_pid_nr_ns(task, s->pid_ns);
	struct hwt_thread *t;
	int err;

	lockdep_assert_held(&s->lock);
	if (tid <= 0)
		return -ESRCH;
	if (hwt_session_find(s, tid))
		return -EBUSY;
	if (s->next_slot >= HWT_MAX_SLOTS)
		return -ENOSPC;
	get_task_struct(task);
	err = hwt_thread_attach_task(s, task, tid, s->next_slot, cfg, &t);
	if (err)
		return err;
	s->next_slot++;
	s->nthreads++;
	list_add_tail(&t->snode, &s->threads);
	*out = t;
	return 0;
}

/* Caller holds s->lock. The first @count tids into @tids; all counted. */
void hwt_session_tids(struct hwt_session *s, u32 *tids, u32 count,
		      u32 *total)
{
	struct hwt_thread *t;
	u32 n = 0;

	lockdep_assert_held(&s->lock);
	list_for_each_entry(t, &s->threads, snode) {
		if (n < count)
			tids[n] = t->tid;
		n++;
	}
	*total = n;
}

/* Caller holds s->lock. */
int hwt_session_detach(struct hwt_session *s, pid_t tid)
{
	struct hwt_thread *t = hwt_session_find(s, tid);

	lockdep_assert_held(&s->lock);
	if (!t)
		return -ESRCH;
	list_del(&t->snode);
	s->nthreads--;
	hwt_thread_detach(t);
	return 0;
}

void hwt_session_release(struct hwt_session *s)
{
	struct hwt_thread *t, *n;

	/* No child waits to be followed: each would hold the file. */
	mutex_lock(&s->lock);
	list_for_each_entry_safe(t, n, &s->threads, snode) {
		list_del(&t->snode);
		hwt_thread_detach(t);
	}
	s->nthreads = 0;
	mutex_unlock(&s->lock);
	put_pid_ns(s->pid_ns);
	kfree(s);
}
