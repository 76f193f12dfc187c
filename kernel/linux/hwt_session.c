// SPDX-License-Identifier: GPL-2.0
/*
 * hwt_session.c - a session (one per open file, like a FreeBSD hwt
 * context): the threads it attached, each with a slot number that names
 * its ring for mmap. Closing the file detaches every thread.
 */
#include <linux/slab.h>
#include "hwt.h"

/* Slots are bounded so that slot * HWTRACE_RING_MAX fits a file offset. */
#define HWT_MAX_SLOTS	(1u << 20)

struct hwt_session *hwt_session_new(void)
{
	struct hwt_session *s = kzalloc(sizeof(*s), GFP_KERNEL);

	if (!s)
		return NULL;
	mutex_init(&s->lock);
	INIT_LIST_HEAD(&s->threads);
	return s;
}

/* Caller holds s->lock. */
struct hwt_thread *hwt_session_find(struct hwt_session *s, pid_t tid)
{
	struct hwt_thread *t;

	list_for_each_entry(t, &s->threads, snode)
		if (t->tid == tid)
			return t;
	return NULL;
}

/* Caller holds s->lock. */
struct hwt_thread *hwt_session_find_slot(struct hwt_session *s, u32 slot)
{
	struct hwt_thread *t;

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

	if (hwt_session_find(s, tid))
		return -EBUSY;
	if (s->next_slot >= HWT_MAX_SLOTS)
		return -ENOSPC;
	err = hwt_thread_attach(s, tid, s->next_slot, &t);
	if (err)
		return err;
	s->next_slot++;
	list_add_tail(&t->snode, &s->threads);
	return 0;
}

/* Caller holds s->lock. */
int hwt_session_detach(struct hwt_session *s, pid_t tid)
{
	struct hwt_thread *t = hwt_session_find(s, tid);

	if (!t)
		return -ESRCH;
	list_del(&t->snode);
	hwt_thread_detach(t);
	return 0;
}

void hwt_session_release(struct hwt_session *s)
{
	struct hwt_thread *t, *n;

	mutex_lock(&s->lock);
	list_for_each_entry_safe(t, n, &s->threads, snode) {
		list_del(&t->snode);
		hwt_thread_detach(t);
	}
	mutex_unlock(&s->lock);
	kfree(s);
}
