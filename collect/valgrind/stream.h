/* SPDX-License-Identifier: BSD-2-Clause */
/* stream.h - turning the hwtrace Valgrind tool's stream (vgstream.h) into
 * per-thread hwt-sw rings and a module set.
 *
 * The stream is untrusted: every number is bounded and checked, and a bad
 * item stops reading with an error naming its offset while everything
 * before it is kept. Bytes can be fed in pieces of any size.
 */
#ifndef HWT_VG_STREAM_H
#define HWT_VG_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "array.h"
#include "hwt-common.h"
#include "os/modset.h"
#include "ring.h"
#include "valgrind/runlog.h"
#include "valgrind/vgstream.h"

/* Limits: what the tool can write, with room to spare. */
#define HWT_VG_MAX_SB_INSNS 4096u   /* VEX translates at most a few hundred */
#define HWT_VG_MAX_SB_EXITS 4096u
#define HWT_VG_MAX_PATH 4096u
#define HWT_VG_MAX_ITEM (64u + 10u * 2u * HWT_VG_MAX_SB_INSNS + \
			 10u * 2u * HWT_VG_MAX_SB_EXITS)

struct hwt_vg_sb;

/* What a logged run needs of its translation, packed so the reader's
 * hot loop stays in cache: its entry, instruction and exit counts, flags
 * (HWT_VG_SB_*), and where its exits' instruction counts and targets
 * start in the reader's exits and targets. */
struct hwt_vg_sb_hot {
	uint16_t ninsns, nexits;
	uint32_t first_exit;
	/* The translation run after it last time and the exit that led
	 * there (its instructions run), judged from the exits' targets
	 * (implied exits): a loop asks the same again and again. */
	uint32_t next_id;
	uint16_t next_n;
	uint8_t flags;
};

struct hwt_vg_thread {
	pid_t tid;
	uint32_t exec;            /* its process's execs when it began */
	struct hwt_sw_ring ring;
	bool exited;
	bool async_next;          /* its next instruction enters a handler */
	struct hwt_vg_sb *run;        /* the superblock run last, not yet */
	uint32_t run_insns;       /* written: its first run_insns ran, */
	uint32_t run_done;        /* of which run_done are written */
	/* The run is of an implied superblock (HWT_VG_SB_IMPLIED) and
	 * where it left is not known yet: where the thread goes next will
	 * say (run_insns is its whole count meanwhile). */
	bool run_open;
	uint64_t last_pc;         /* last instruction written (or, in */
	bool last_known;          /* a log, run); false: none yet */
	/* last_pc is where the thread stood at a stop, not yet run; the
	 * last instruction that ran before it then (ran_known: one did). */
	bool ahead;
	bool ran_known;
	uint64_t ran_pc;
	/* The reader's defer: runs kept as read, expanded at the end. */
	struct hwt_vg_runlog log;
	struct hwt_vg_log_chunk *log_cur;   /* its open chunk */
	/* A signal's handler entry is logged and no run has executed an
	 * instruction since: no restart point until one has. */
	bool log_async;
	bool log_in_run;          /* running translation log_run, its */
	uint32_t log_run;         /* run_insns so far */
	/* The last instruction run, while logging: translation last_run's
	 * instruction last_n - 1 (last_lazy), else last_pc. */
	bool last_lazy;
	uint32_t last_run, last_n;
	bool expanding;           /* its log is being written to the ring */
	/* Its log kept as it is when the stream ended (keep.h): TABLE and
	 * RUNS chunks to follow the ring's chunks. */
	struct hwt_bytes kept;
	uint64_t kept_weight;     /* what kept weighs in the window */
	uint64_t gap_insns, gap_bytes;      /* dropped before the next */
};

struct hwt_vg_reader {
	uint64_t ring_capacity;   /* bytes per thread (--size) */
	/* Keep each thread's runs as the tool wrote them (runlog.h), in
	 * ring_capacity as it counts them, and write them to the rings
	 * only when the translations they name go, or keep them as they
	 * are when the stream ends (keep.h): a flight recorder then
	 * expands only what a reader of its window asks for. With a spill
	 * (whole_dir) what the window drops goes there as runs too. Not
	 * under live control (hwt_vg_reader_stop_at), which wants every
	 * instruction as it comes. Set before the first feed. */
	bool defer;
	/* --whole: each thread's spill file goes in this directory, at most
	 * whole_bound bytes (collect/spill.h); NULL: the window alone. */
	const char *whole_dir;
	uint64_t whole_bound;
	/* The compressor every spill of the recording takes turns with. */
	struct hwt_sw_pack_work *pack_work;
	/* The window all threads share (the collector's), or NULL. */
	struct hwt_sw_ring_budget *budget;
	/* The tool's file, whose code runs as the program's (the signal
	 * return trampoline): its module is flagged recorder. NULL: none. */
	const char *tool_path;
	/* Another name of the same file, for decoding: tool_path may be
	 * gone by then. NULL: tool_path. */
	const char *tool_alias;
	/* A forked child's stream (FORK record) shares its parent's first
	 * translations: the reader of process pid's stream, or NULL while
	 * there is none yet. NULL: forks are not followed. */
	struct hwt_vg_reader *(*parent_of)(void *ctx, pid_t pid);
	void *parent_ctx;
	bool waiting_parent;      /* FORK read before the parent's stream */
	/* Translations by number, each allocated on its own: a thread's
	 * run points at one while the table grows. */
	struct hwt_vg_sb **sbs;
	size_t nsbs, sbs_cap;
	struct hwt_vg_sb_hot *hot;  /* by number too, hot_cap of them */
	size_t hot_cap;
	uint32_t *exits;          /* each translation's exit_after, */
	size_t nexits, exits_cap; /* one after the other */
	uint64_t *targets;        /* and its exits' targets (implied: */
	size_t targets_cap;       /* else 0) beside them */
	struct hwt_vg_thread *threads;
	size_t nthreads, threads_cap;
	/* Exited threads forgotten to make room (evict_oldest_exited). */
	uint64_t evicted;
	struct hwt_vg_thread *cur;
	struct hwt_modset modules;

	uint8_t *pending;         /* an item cut at the end of a feed */
	size_t npending, pending_cap;
	uint64_t offset;          /* stream bytes consumed */
	bool magic_seen;
	bool ended;               /* END read: the tool finished */
	/* FORKS read (forks) and the children whose FORK has taken their
	 * share (forks_taken): the translations are dropped once the
	 * stream has ended and every child has taken its share. */
	uint64_t forks, forks_taken;
	bool full;                /* the tool's byte bound was reached */
	uint64_t bound;
	bool exit_seen;
	int exit_status;
	pid_t last_at_tid;        /* the last AT record: a fault's thread */
	uint64_t last_at_pc;
	uint64_t insns;           /* instructions written to the rings */
	uint64_t auxv[2 * HWT_VG_MAX_AUXV]; /* type, value pairs, no AT_NULL */
	size_t nauxv;
};

/* What a thread's window holds, in ring bytes (a log's as it will
 * expand, runlog.h), and its share of the window: its ring's capacity
 * and its log's. */
uint64_t hwt_vg_thread_window_used(const struct hwt_vg_thread *t);
void hwt_vg_thread_set_window(struct hwt_vg_thread *t, uint64_t capacity);
/* Thread t's stream has ended: drop the oldest of what it holds, its
 * ring's chunks first, then its kept log's, then the ring's last ones,
 * until excess of its window weight is gone or nothing is left; counted
 * lost. The weight dropped. Under --whole (a spill) nothing is. */
uint64_t hwt_vg_thread_evict(struct hwt_vg_thread *t, uint64_t excess);
/* --whole: thread t's stream has ended; its ring's chunks, then its kept
 * log, go to its spill now rather than wait in memory for the end of the
 * recording (a make's hundreds of compilers). Nothing without a spill,
 * or when memory to lay the ring out ran short (then at the end). */
void hwt_vg_thread_spill_ended(struct hwt_vg_thread *t);

/* ring_capacity: bytes of hwt-sw kept per thread. */
int hwt_vg_reader_init(struct hwt_vg_reader *r, uint64_t ring_capacity,
		       struct hwt_err *err);
/* Read the next len bytes of the stream. After an error nothing more is
 * read; what was read before stays. */
int hwt_vg_reader_feed(struct hwt_vg_reader *r, const uint8_t *data,
		       size_t len, struct hwt_err *err);
/* Under live control, the program stopped with thread tid at pc, its
 * next instruction, and the stream was read up to the stop. mid: the
 * thread stopped inside the superblock it was running (a breakpoint, a
 * step or a fault), which goes on when it resumes. The thread's history
 * gets what it ran so far and pc as its last instruction, like a
 * stepped thread's; nothing is written twice when it goes on. */
/* At such a stop a debugger moved thread tid to pc: as the ptrace
 * recorder has it, the instruction it stood at counts as run, followed
 * by an asynchronous transfer to pc, its new last instruction. */
void hwt_vg_reader_moved(struct hwt_vg_reader *r, pid_t tid, uint64_t pc);
int hwt_vg_reader_stop_at(struct hwt_vg_reader *r, pid_t tid, uint64_t pc,
			  bool mid, struct hwt_err *err);
/* The stream is over: write every thread's last superblock and seal the
 * rings, each followed by what its thread's log kept (defer). An item cut short is an error (the tool died while writing);
 * the rings are sealed all the same. */
int hwt_vg_reader_finish(struct hwt_vg_reader *r, struct hwt_err *err);
/* The last instruction thread t ran; false: none, or (last_pc) the
 * thread stands at a stop, where ran_pc still tells. */
bool hwt_vg_reader_last_pc(const struct hwt_vg_reader *r,
			   const struct hwt_vg_thread *t, uint64_t *pc);
bool hwt_vg_reader_ran_pc(const struct hwt_vg_reader *r,
			  const struct hwt_vg_thread *t, uint64_t *pc);
void hwt_vg_reader_free(struct hwt_vg_reader *r);

#endif
