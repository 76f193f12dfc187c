/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hwt.h - internal interfaces between the files of hwtrace.ko.
 *
 * Locking (docs/kernel-module.md, "Locking"):
 *  - hwt_hash_lock (spinlock, irqsave) protects the global thread hash
 *    and, for every thread, changes of ->sess, ->enabled, ->armed,
 *    ->hashed. Readers of the hash in trap and tracepoint context use
 *    RCU; the per-instruction path reads those fields with READ_ONCE.
 *    No signal is sent while it is held (siglock nests outside it in
 *    the signal_deliver tracepoint).
 *  - hwt_thread.lock (spinlock, irqsave) protects the ring, the ring
 *    configuration and the counters; the recorder takes it in the debug
 *    exception with interrupts off. Never held while copying to user.
 *    Order: hwt_hash_lock before hwt_thread.lock.
 *  - hwt_session.lock (mutex) protects a session's thread list and slot
 *    numbers; held across ioctls, taken before hwt_hash_lock.
 *  - hwt_tp_mutex (hwt_tp.c) serialises registering and unregistering
 *    the tracepoint probes; taken inside the session mutex, it takes
 *    none of the others.
 * Lifetime: struct hwt_thread is refcounted (kref): one reference for
 * session membership, one while hashed, one per queued task_work; it is
 * freed after an RCU grace period. It holds a task_struct reference.
 * Every hashed thread holds a module reference (a pin, hwt_pin.c), so
 * the module cannot be unloaded while a thread may still carry a trap
 * flag it set, and keeps the tracepoint probes registered (hwt_tp.c).
 */
#ifndef HWT_H
#define HWT_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/task_work.h>
#include "uapi/hwtrace.h"

/* Ring (hwt_kring.c): fixed-size blocks in a vmalloc_user area. */
struct hwt_kring {
	void *base;
	u32 size;		/* bytes, multiple of HWTRACE_BLOCK_SIZE */
	u32 nblocks;
	u64 head;		/* next block sequence number to open */
	u64 tail;		/* oldest block held */
	bool open;		/* block head - 1 is being written */
	bool full;		/* signal mode: no room, instructions are lost */
	bool signalled;		/* signal mode: the full signal was sent */
	bool wrapped;		/* wrap mode: blocks were dropped */
	bool branch;		/* new blocks get HWTRACE_BLK_BRANCH */
	u64 branch_seq;		/* first block so marked */
	u64 insns;		/* instructions seen since attach/clear */
	u64 lost;		/* of those, the ones not kept */
};

/* Flags for hwt_kring_add(). */
#define HWT_ADD_ASYNC	0x1	/* the transfer to this pc was asynchronous */
#define HWT_ADD_EXEC	0x2	/* this pc is a new program's entry point */
#define HWT_ADD_SCHED	0x4	/* the thread was scheduled since the last add */
#define HWT_ADD_TRAP	0x8	/* recorded by a debug trap (block-step probe) */

/* Result of hwt_kring_add(): whether the full signal must be sent now. */
#define HWT_ADD_SIGNAL	1

int hwt_kring_alloc(struct hwt_kring *r, u32 size);
void hwt_kring_free(struct hwt_kring *r);
void hwt_kring_reset(struct hwt_kring *r);
int hwt_kring_add(struct hwt_kring *r, u64 pc, unsigned int flags, bool wrap,
		 u64 ts, u32 cpu);
void hwt_kring_close(struct hwt_kring *r);
bool hwt_kring_copy_block(struct hwt_kring *r, u64 seq, void *dst);
void hwt_kring_branch(struct hwt_kring *r, bool on);
void hwt_kring_unmark_branch(struct hwt_kring *r);

/* Thread (hwt_thread.c). */
struct hwt_session;

struct hwt_thread {
	struct kref ref;
	struct hlist_node hnode;	/* in the global hash while ->hashed */
	struct list_head snode;		/* in ->sess->threads */
	struct rcu_head rcu;
	struct callback_head work;	/* hwt_thread_sync, see ->work_queued */
	unsigned long work_queued;	/* bit 0: ->work is queued */
	struct task_struct *task;	/* referenced */
	struct file *pin;		/* module pin while hashed */
	pid_t tid;
	u32 slot;			/* mmap slot within the session */

	/* Under hwt_hash_lock. */
	struct hwt_session *sess;	/* owner, NULL once detached */
	bool enabled;			/* recording wanted */
	bool armed;			/* TF set by us in the thread's regs */
	bool hashed;
	bool exec_pending;		/* exec seen, entry not yet recorded;
					 * set by the thread with WRITE_ONCE */
	bool signal_pending;		/* handler entered, not yet recorded;
					 * set by the thread with WRITE_ONCE */

	/* Under ->lock. */
	spinlock_t lock;
	struct hwt_kring ring;
	struct hwtrace_config cfg;
	unsigned long last_switches;	/* nvcsw + nivcsw at the last record */
	u32 last_cpu;
	u64 last_pc;			/* the last recorded address */
	u8 bs_mode;			/* HWT_BS_* */
	u8 bs_probes;			/* probe traps seen */
	u8 bs_seq;			/* ... at the next address (steps) */
	unsigned long bs_switches;	/* nvcsw + nivcsw when TIF_BLOCKSTEP
					 * was last set */
};

/* Block-step (hwt_blockstep.c); t->lock held. */
#define HWT_BS_OFF	0	/* not requested */
#define HWT_BS_PROBING	1
#define HWT_BS_BLOCK	2	/* BTF honoured */
#define HWT_BS_FALLBACK	3	/* BTF not honoured: single-step */

void hwt_bs_config(struct hwt_thread *t);
void hwt_bs_arm(struct hwt_thread *t);
void hwt_bs_trap(struct hwt_thread *t, u64 pc);
u32 hwt_bs_state(const struct hwt_thread *t);

extern spinlock_t hwt_hash_lock;

struct hwt_thread *hwt_thread_lookup_rcu(struct task_struct *task);
int hwt_thread_attach(struct hwt_session *s, pid_t tid, u32 slot,
		      struct hwt_thread **out);
int hwt_thread_attach_task(struct hwt_session *s, struct task_struct *task,
			   pid_t tid, u32 slot, const struct hwtrace_config *cfg,
			   struct hwt_thread **out);
void hwt_thread_detach(struct hwt_thread *t);
int hwt_thread_set_enabled(struct hwt_thread *t, bool on);
void hwt_thread_put(struct hwt_thread *t);
void hwt_thread_kick(struct hwt_thread *t);
void hwt_thread_unhash_locked(struct hwt_thread *t);
int hwt_threads_init(void);
void hwt_threads_exit(void);

/* Recorder (hwt_recorder.c): runs in the traced thread's own context. */
int hwt_recorder_init(void);
void hwt_recorder_exit(void);

/* Arming and recording (hwt_arm.c), in the traced thread's context. */
int hwt_record(struct hwt_thread *t, u64 pc, unsigned int flags);
bool hwt_arm_current(struct hwt_thread *t);

/* A tracepoint probe: the tracepoint's name and the function. */
struct hwt_probe {
	const char *name;
	void *fn;
};

/* Null-terminated, registered in order by hwt_tp.c. */
extern const struct hwt_probe hwt_recorder_probes[];

/* Exec sideband (hwt_exec.c). */
extern const struct hwt_probe hwt_exec_probes[];

/*
 * Tracepoints (hwt_tp.c): by name; the probes are registered while a
 * thread is hashed. hwt_tp_get() may sleep; hwt_tp_put(), any context.
 */
int hwt_tp_get(void);
void hwt_tp_put(void);
void hwt_tp_exit(void);

/*
 * Module pins (hwt_pin.c): module references that the kernel drops after
 * the module's last instruction. hwt_pin_new() may sleep.
 */
struct file *hwt_pin_new(void);
void hwt_pin_drop(struct file *pin);

/*
 * Session (hwt_session.c): one per open file, freed when the file is
 * released. A child waiting to be followed (hwt_follow.c) holds a
 * reference to the file, and so keeps the session.
 */
struct hwt_session {
	struct mutex lock;
	struct list_head threads;
	u32 next_slot;
	u32 nthreads;
	struct file *file;		/* not referenced: it owns us */
	struct pid_namespace *pid_ns;	/* of the opener: tids are in it */
};

struct hwt_session *hwt_session_new(struct file *file);
void hwt_session_release(struct hwt_session *s);
int hwt_session_adopt(struct hwt_session *s, struct task_struct *task,
		      const struct hwtrace_config *cfg,
		      struct hwt_thread **out);
void hwt_session_tids(struct hwt_session *s, u32 *tids, u32 count,
		      u32 *total);

/* Follow-fork (hwt_follow.c): attach a recorded thread's new child. */
void hwt_follow_fork(struct hwt_thread *parent, struct task_struct *child);
struct hwt_thread *hwt_session_find(struct hwt_session *s, pid_t tid);
struct hwt_thread *hwt_session_find_slot(struct hwt_session *s, u32 slot);
int hwt_session_attach(struct hwt_session *s, pid_t tid);
int hwt_session_detach(struct hwt_session *s, pid_t tid);

#endif /* HWT_H */
