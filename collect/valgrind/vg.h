/* SPDX-License-Identifier: BSD-2-Clause */
/* vg.h - the valgrind backend's state, shared by its recording
 * (backend.c) and its live control (live.c). */
#ifndef HWT_VG_H
#define HWT_VG_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "hwt-past.h"
#include "live.h"
#include "os/held.h"
#include "stream.h"
#include "vgdb.h"

/* A thread as Valgrind's gdbserver and the tool see it at a stop. */
struct vg_thread {
	pid_t tid;
	struct hwt_live_thread lt;
	uint64_t pc, fs_base, gs_base;
	bool gone;
};

/* A forked child followed (children.c): its stream FILE.PID. */
struct vg_child {
	pid_t pid;
	int fd;
	struct hwt_vg_reader rd;
	bool failed;              /* its stream is damaged: read no more */
	char why[300];
	uint64_t ended_at;        /* its stream ended, as the end_clock-th;
				   * 0: still read */
};

struct vg_collector {
	struct hwt_collector base;
	struct hwt_held held;
	char *dir;                /* private: stream, log, vgdb's FIFOs */
	char *stream_path, *log_path;
	char *data_path;          /* the tool's data history, or NULL */
	char *prog;
	char *tool_path;          /* the tool's file (rd.tool_path) */
	char *private_tool;       /* live: the copy Valgrind runs, removed
				   * once it runs */
	int stream_fd;
	uint8_t *piece;           /* READ_PIECE bytes: what drain reads into */
	uint64_t *used;           /* share_window: each ring's bytes */
	/* All rings' bytes: past twice the window, shared anew at once. */
	struct hwt_sw_ring_budget budget;
	size_t used_alloc;
	bool reaped;
	struct hwt_vg_reader rd;
	/* --whole: the compressor of every thread's spill, children's too */
	struct hwt_sw_pack_work *pack_work;
	struct hwt_collect_thread *threads;
	size_t nthreads;
	char *core_path;          /* Valgrind's core of a fatal signal */
	bool follow_fork;
	struct vg_child *children;
	size_t nchildren, children_cap;
	/* With children: every process's modules (vg_children_finish). */
	struct hwt_collect_module *modules;
	size_t nmodules;
	uint64_t end_clock;       /* children's streams ended so far */
	struct vg_child **by_end; /* share_window: ended ones, newest */
	size_t by_end_alloc;      /* first */

	/* Live control (live.c): launched under Valgrind's gdbserver,
	 * driven through vgdb once the first live call comes. */
	bool live_launch;
	bool link_up;
	bool detached;            /* runs on without us: never killed */
	struct vg_link link;
	struct hwt_live rules;
	struct vg_thread *vt;
	size_t nvt, vt_cap;
	uint64_t *bps;            /* this resume's breakpoints, sorted */
	size_t nbps;
	uint64_t *inserted;       /* breakpoints Valgrind holds */
	size_t ninserted, inserted_cap;
	bool ended;               /* the process is gone (c->base.end) */
	pid_t event_tid;          /* the thread whose stop this is */
	bool mid;                 /* it stopped inside a superblock */
	/* The values of the past at this stop (live_past.c), built when
	 * first asked for (built: tried, live_past NULL if none). */
	struct hwt_past *live_past;
	bool live_past_built;
};

static inline struct vg_collector *vg_of(struct hwt_collector *base)
{
	return (struct vg_collector *)base;
}

/* The most the reader takes of the stream at once. */
#define VG_READ_PIECE (1u << 20)
/* Threads alive at once: Valgrind's default, 500, is below what servers
 * run; each slot costs Valgrind about 7 KB up front, so not the bundle's
 * 4096 either. */
#define VG_MAX_THREADS_N 2048
#define VG_MAX_THREADS ((unsigned)VG_MAX_THREADS_N)

/* feed.c: feed rd what fd holds now; got: any. */
int vg_feed_fd(struct vg_collector *c, int fd, struct hwt_vg_reader *rd,
	       bool *got, struct hwt_err *err);
/* feed.c: whether dir's file system gives back punched blocks. */
bool vg_can_free_read_part(const char *dir);

/* session.c: feed what the tool wrote since the last look; got: any. */
int vg_drain(struct vg_collector *c, bool *got, struct hwt_err *err);
/* session.c: the rings' budget is spent: share the window anew (c). */
void vg_share_now(void *ctx);

/* children.c: new children's streams found, and read. */
int vg_children_find(struct vg_collector *c, struct hwt_err *err);
int vg_children_drain(struct vg_collector *c, bool *got, struct hwt_err *err);
/* children.c: the program ended: read the children's streams to their
 * end and list every process's modules; a damaged one is a warning. */
int vg_children_finish(struct vg_collector *c, struct hwt_err *err);
void vg_children_free(struct vg_collector *c);
/* session.c: c->threads from the reader's rings (sealed or snapshots). */
int vg_collect_threads(struct vg_collector *c, struct hwt_err *err);
/* session.c: the process was reaped with status: read the rest of the
 * stream, set how it ended, lay the histories out for threads(). */
int vg_wind_up(struct vg_collector *c, int status, struct hwt_err *err);

/* past.c: the backend's write_past: the tool's data history into a
 * bundle's (1), none kept (0), or a negative errno. */
int vg_write_past(struct hwt_collector *base, const char *path,
		  struct hwt_err *err);

/* live_past.c: the backend's regs_at, mem_at, find_write,
 * index_at_step and memory_written under live control; what a stop
 * built is dropped when the program moves (drop) or the debugger is
 * about to write registers (registers_written; jump: its pc too, which
 * takes the thread out of the superblock it stands in). */
int vg_regs_at(struct hwt_collector *base, pid_t tid, uint64_t insn,
	       int nt_type, void *out, struct hwt_err *err);
int vg_mem_at(struct hwt_collector *base, pid_t tid, uint64_t insn,
	      uint64_t addr, void *buf, size_t len, struct hwt_err *err);
int vg_find_write(struct hwt_collector *base, const struct hwt_write_query *q,
		  struct hwt_write_found *out, struct hwt_err *err);
int vg_index_at_step(struct hwt_collector *base, pid_t tid, uint64_t step,
		     uint64_t *index, struct hwt_err *err);
void vg_memory_written(struct hwt_collector *base, uint64_t addr, size_t len);
bool vg_keeps_past(const struct hwt_collector *base);
int vg_registers_written(struct vg_collector *c, pid_t tid, bool jump,
			 struct hwt_err *err);
void vg_live_past_drop(struct vg_collector *c);

/* live.c: connect to the launched program's gdbserver; it stays stopped
 * at its first instruction. */
int vg_live_start(struct vg_collector *c, struct hwt_err *err);
/* live.c: the backend ops of live control. */
int vg_resume(struct hwt_collector *base, const struct hwt_resume_opts *o,
	      struct hwt_collect_event *ev, struct hwt_err *err);
size_t vg_live_tids(struct hwt_collector *base, pid_t *tids, size_t cap);
int vg_regset(struct hwt_collector *base, pid_t tid, int nt_type, void *buf,
	      size_t *len, bool write, struct hwt_err *err);
int vg_detach(struct hwt_collector *base, struct hwt_err *err);
/* live.c: what live control holds, for close. */
void vg_live_free(struct vg_collector *c);

#endif
