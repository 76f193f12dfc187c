/* SPDX-License-Identifier: GPL-2.0-only WITH Linux-syscall-note */
/*
 * hwtrace.h - user-space interface of the hwtrace kernel module.
 *
 * The module records, per thread, the address of every user-space
 * instruction the thread executes (software single-step through the
 * debug exception), into a ring of fixed-size blocks that user space
 * drains with HWTRACE_IOC_DRAIN or maps read-only with mmap().
 * docs/kernel-module.md describes the control flow, the block and record
 * formats and the locking.
 *
 * Control is per file: every open() of /dev/hwtrace is a session; a
 * session attaches threads (by tid) and owns them until it detaches them
 * or is closed. A thread belongs to at most one session at a time.
 *
 * Every ioctl argument struct starts with a size field `sz` the caller
 * sets to sizeof(struct); the module refuses a size it does not know
 * (-EINVAL) and refuses any flag or reserved field it does not know.
 * Integers are native-endian (the module is x86-64 only).
 */
#ifndef _UAPI_LINUX_HWTRACE_H
#define _UAPI_LINUX_HWTRACE_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define HWTRACE_DEVICE		"/dev/hwtrace"
#define HWTRACE_ABI_VERSION	1

/* Ring geometry. The ring is a whole number of blocks. */
#define HWTRACE_BLOCK_SIZE	4096u		/* bytes per block, header included */
#define HWTRACE_RING_MIN	(2u * HWTRACE_BLOCK_SIZE)
#define HWTRACE_RING_MAX	(64u << 20)	/* 64 MiB per thread */
#define HWTRACE_RING_DEFAULT	(1u << 20)

/*
 * struct hwtrace_attach - HWTRACE_IOC_ATTACH, HWTRACE_IOC_DETACH and the
 * other per-thread commands that take only a thread id (ENABLE, DISABLE,
 * CLEAR).
 * @tid: the thread (a tid in the caller's pid namespace).
 *
 * ATTACH needs the rights ptrace attach needs: the caller's real, effective
 * and saved uid and gid all equal the target's (and the target is
 * dumpable), or the caller has CAP_SYS_PTRACE in the target's user
 * namespace. Otherwise -EPERM. A thread already owned by a session gives
 * -EBUSY; an unknown tid gives -ESRCH. A new attachment is configured with
 * the defaults (HWTRACE_RING_DEFAULT, wrap) and is disabled.
 */
struct hwtrace_attach {
	__u32 sz;
	__u32 tid;
};

/* struct hwtrace_config flags */
#define HWTRACE_CFG_WRAP	0x1u	/* full ring: drop the oldest block */
#define HWTRACE_CFG_SIGNAL	0x2u	/* full ring: keep the data, send @signal */
#define HWTRACE_CFG_SCHED_TS	0x4u	/* record a timestamp record when the
					 * thread was scheduled since its last
					 * instruction */
#define HWTRACE_CFG_FOLLOW	0x8u	/* fork/clone children of the thread
					 * join the session, recorded from
					 * their first instruction */
#define HWTRACE_CFG_BLOCKSTEP	0x10u	/* ask for block-step (DEBUGCTL.BTF),
					 * falling back to single-step where
					 * the hardware does not honour it */
#define HWTRACE_CFG_FLAGS	0x1fu	/* all known flags */

/*
 * struct hwtrace_config - HWTRACE_IOC_CONFIG: configure an attached thread.
 * @sz: sizeof(struct hwtrace_config).
 * @tid: the thread.
 * @ring_size: ring bytes, a multiple of HWTRACE_BLOCK_SIZE within
 *	[HWTRACE_RING_MIN, HWTRACE_RING_MAX]; 0 keeps the current size.
 * @flags: exactly one of HWTRACE_CFG_WRAP and HWTRACE_CFG_SIGNAL, plus
 *	optionally HWTRACE_CFG_SCHED_TS, HWTRACE_CFG_FOLLOW and
 *	HWTRACE_CFG_BLOCKSTEP.
 * @signal: with HWTRACE_CFG_SIGNAL the signal (1..64, not SIGKILL or
 *	SIGSTOP) sent to the thread once when the ring fills; instructions
 *	executed while the ring is full are counted in @lost of the status
 *	and recording resumes when DRAIN or CLEAR frees space. 0 otherwise.
 * @reserved: 0.
 *
 * Changing the ring size discards the recorded data. -EBUSY while enabled.
 *
 * HWTRACE_CFG_FOLLOW: a child the thread creates with fork, vfork or clone
 * (a new process or a new thread) while the thread is recording is
 * attached to the same session, with the thread's configuration (this flag
 * included, so grandchildren follow too), enabled, and records from its
 * first user instruction (the one after the system call). No permission
 * check: the child has the credentials of a thread the session may
 * record. The child's tid (in the pid namespace of the process that
 * opened the session) is listed by HWTRACE_IOC_THREADS; a child whose tid
 * is not visible there, or for which memory runs out, is not followed and
 * runs untraced. Without the flag children always run untraced.
 *
 * HWTRACE_CFG_BLOCKSTEP: the module sets TIF_BLOCKSTEP on the thread, so
 * that the kernel's context switch programs DEBUGCTL.BTF for it (the
 * module never writes the MSR), and probes whether the hardware honours
 * it: a trap taken while BTF was programmed (the thread was switched in
 * since TIF_BLOCKSTEP was set) at the address right after the previous
 * one (1..15 bytes on) is a single-step, which BTF would have suppressed.
 * Two such traps: the thread falls back to single-step for good
 * (HWTRACE_ST_BS_FALLBACK) and its blocks are exact. Sixteen probe traps
 * without: the hardware honours BTF (HWTRACE_ST_BS_BLOCK). While probing
 * (HWTRACE_ST_BS_PROBING) and after a BTF verdict, blocks are marked
 * HWTRACE_BLK_BRANCH; on fallback the marks are removed from the blocks
 * the ring still holds (blocks drained while probing keep theirs).
 * Reconfiguring restarts the probe.
 */
struct hwtrace_config {
	__u32 sz;
	__u32 tid;
	__u32 ring_size;
	__u32 flags;
	__u32 signal;
	__u32 reserved;
};

/* struct hwtrace_status state bits */
#define HWTRACE_ST_ENABLED	0x1u	/* recording */
#define HWTRACE_ST_EXITED	0x2u	/* the thread has exited; data is kept */
#define HWTRACE_ST_FULL		0x4u	/* signal mode: the ring is full */
#define HWTRACE_ST_WRAPPED	0x8u	/* wrap mode: blocks were dropped */
/* With HWTRACE_CFG_BLOCKSTEP exactly one of these three: */
#define HWTRACE_ST_BS_PROBING	0x10u	/* not known yet whether BTF works */
#define HWTRACE_ST_BS_BLOCK	0x20u	/* BTF honoured: branch blocks */
#define HWTRACE_ST_BS_FALLBACK	0x40u	/* BTF not honoured: single-step */

/*
 * struct hwtrace_status - HWTRACE_IOC_STATUS (and HWTRACE_IOC_SIZE, which
 * fills the same struct; SIZE exists for symmetry with PTRACE_BTS_SIZE).
 * @sz, @tid: in.
 * @state: HWTRACE_ST_* bits.
 * @config: the current configuration (@config.sz and @config.tid set).
 * @insns: instructions executed while recording since attach (or the
 *	last CLEAR), kept or lost.
 * @lost: of those, the ones not kept (blocks dropped in wrap mode,
 *	instructions executed while the ring was full in signal mode).
 * @blocks: complete or open blocks held in the ring now.
 * @bytes: bytes (headers included) a DRAIN of everything would return.
 * @head, @tail: block sequence numbers: the ring holds blocks
 *	[@tail, @head); block n sits at ring offset
 *	(n % (ring_size / HWTRACE_BLOCK_SIZE)) * HWTRACE_BLOCK_SIZE.
 */
struct hwtrace_status {
	__u32 sz;
	__u32 tid;
	__u32 state;
	__u32 reserved;
	struct hwtrace_config config;
	__u64 insns;
	__u64 lost;
	__u64 blocks;
	__u64 bytes;
	__u64 head;
	__u64 tail;
};

/*
 * struct hwtrace_get - HWTRACE_IOC_GET: where to mmap a thread's ring.
 * @sz, @tid: in.
 * @offset: out: the offset argument for mmap(2) on the session's fd.
 * @size: out: the ring size to map (PROT_READ, MAP_SHARED only).
 *
 * The mapping shows the blocks as the recorder writes them; read it when
 * the thread is stopped, or use DRAIN, which copies consistently. The
 * mapping stays valid (with the last data) after DETACH.
 */
struct hwtrace_get {
	__u32 sz;
	__u32 tid;
	__u64 offset;
	__u64 size;
};

/* struct hwtrace_drain flags */
#define HWTRACE_DRAIN_PEEK	0x1u	/* copy but do not consume */

/*
 * struct hwtrace_drain - HWTRACE_IOC_DRAIN: copy blocks out, oldest first.
 * @sz, @tid: in.
 * @buf: in: user buffer address.
 * @buf_size: in: its size; at least HWTRACE_BLOCK_SIZE.
 * @flags: in: HWTRACE_DRAIN_*.
 * @bytes: out: bytes copied, a multiple of HWTRACE_BLOCK_SIZE; each block
 *	is copied whole (header and unused tail).
 * @blocks: out: blocks copied.
 * @more: out: 1 when blocks remain (call again).
 *
 * The open block (the one being written) is copied too and closed, so the
 * next instruction starts a new block; draining a running thread is
 * consistent (each block is copied under the thread's lock).
 */
struct hwtrace_drain {
	__u32 sz;
	__u32 tid;
	__u64 buf;
	__u64 buf_size;
	__u32 flags;
	__u32 more;
	__u64 bytes;
	__u64 blocks;
};

/*
 * struct hwtrace_threads - HWTRACE_IOC_THREADS: the session's threads
 * (attached ones and followed children, detached ones not), in attach
 * order.
 * @sz: sizeof(struct hwtrace_threads).
 * @count: in: capacity of @tids in entries (may be 0).
 * @tids: in: user address of a __u32 array of @count entries.
 * @total: out: threads in the session; min(@count, @total) are stored.
 * @reserved: 0.
 */
struct hwtrace_threads {
	__u32 sz;
	__u32 count;
	__u64 tids;
	__u32 total;
	__u32 reserved;
};

#define HWTRACE_IOC_MAGIC	0xB7
#define HWTRACE_IOC_ATTACH	_IOW(HWTRACE_IOC_MAGIC, 1, struct hwtrace_attach)
#define HWTRACE_IOC_CONFIG	_IOW(HWTRACE_IOC_MAGIC, 2, struct hwtrace_config)
#define HWTRACE_IOC_ENABLE	_IOW(HWTRACE_IOC_MAGIC, 3, struct hwtrace_attach)
#define HWTRACE_IOC_DISABLE	_IOW(HWTRACE_IOC_MAGIC, 4, struct hwtrace_attach)
#define HWTRACE_IOC_STATUS	_IOWR(HWTRACE_IOC_MAGIC, 5, struct hwtrace_status)
#define HWTRACE_IOC_SIZE	_IOWR(HWTRACE_IOC_MAGIC, 6, struct hwtrace_status)
#define HWTRACE_IOC_GET		_IOWR(HWTRACE_IOC_MAGIC, 7, struct hwtrace_get)
#define HWTRACE_IOC_DRAIN	_IOWR(HWTRACE_IOC_MAGIC, 8, struct hwtrace_drain)
#define HWTRACE_IOC_CLEAR	_IOW(HWTRACE_IOC_MAGIC, 9, struct hwtrace_attach)
#define HWTRACE_IOC_DETACH	_IOW(HWTRACE_IOC_MAGIC, 10, struct hwtrace_attach)
#define HWTRACE_IOC_THREADS	_IOWR(HWTRACE_IOC_MAGIC, 11, struct hwtrace_threads)

/*
 * Block format. Every block starts with this header and decodes on its
 * own: @first_pc is absolute, the records that follow add one instruction
 * each relative to the previous one.
 * @magic: HWTRACE_BLOCK_MAGIC.
 * @used: record bytes after the header.
 * @seq: the block's sequence number.
 * @first_insn: instructions recorded on the thread before this block
 *	(lost ones included): a jump between consecutive blocks is a gap.
 * @first_pc: address of the block's first instruction.
 * @last_pc: address of the block's last instruction (a check).
 * @insn_count: instructions in the block, @first_pc included.
 * @flags: HWTRACE_BLK_*.
 */
#define HWTRACE_BLOCK_MAGIC	0x42545748u	/* "HWTB" little-endian */
#define HWTRACE_BLK_EXEC	0x1u	/* @first_pc is a new program's entry (exec) */
#define HWTRACE_BLK_ASYNC	0x2u	/* @first_pc was reached asynchronously
					 * (a signal handler was entered) */
#define HWTRACE_BLK_BRANCH	0x4u	/* block-step: a record may be the
					 * target of a taken branch with the
					 * instructions since the previous
					 * record left out (see
					 * HWTRACE_CFG_BLOCKSTEP); expanding
					 * them needs the program image */

struct hwtrace_block {
	__u32 magic;
	__u32 used;
	__u64 seq;
	__u64 first_insn;
	__u64 first_pc;
	__u64 last_pc;
	__u32 insn_count;
	__u32 flags;
};

/*
 * Records (the bytes after the header). The instruction records and the
 * async prefix are those of the hwt-sw format (docs/swtrace.md):
 *   0x01..0x0f         next instruction at pc + value
 *   0x11..0x18 d...    n = tag - 0x10 bytes of little-endian two's
 *                      complement delta follow; next instruction at pc + delta
 *   0x20               prefix: the following transfer was asynchronous
 *                      (a signal handler was entered)
 * and the module adds one:
 *   0x40 t[8] c[4]     adds nothing: the thread was scheduled since the
 *                      previous record; t = CLOCK_MONOTONIC ns, c = cpu
 *                      (only with HWTRACE_CFG_SCHED_TS)
 */
#define HWTRACE_REC_ASYNC	0x20
#define HWTRACE_REC_SCHED	0x40
#define HWTRACE_REC_SCHED_SIZE	13

#endif /* _UAPI_LINUX_HWTRACE_H */
