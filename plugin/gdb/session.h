/* SPDX-License-Identifier: BSD-2-Clause */
/* session.h - what one hwt-server session holds, which every file of
 * it shares: the threads, breakpoints and watches, the connection, and the
 * target's operations (a crashed process or a live one). */
#ifndef HWT_SESSION_H
#define HWT_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "hwt-common.h"
#include "hwt-replay.h"
#include "rsp.h"
#include "tdesc.h"

struct hwt_past;
struct hwt_mem_thread;

#define SRV_MAX_BREAKPOINTS 4096u
#define SRV_MAX_WATCHES 4u               /* x86 debug registers */
#define SRV_SIGINFO_SIZE 128u            /* the kernel's siginfo_t */
/* A thread's whole recorded life goes to GDB (btrace.c) and to LLDB
 * (lldb_trace.c) up to this many newest instructions, as a hardware
 * buffer would hold: GDB's own btrace processing takes about a second
 * for this many, and grows with it. The server's own reverse execution
 * (reverse-* without `record`, `process continue --reverse`) covers the
 * whole history. */
#define SRV_WHOLE_LIFE_MAX_ITEMS (256u << 10)
/* The first item of a whole life of count items that goes out. */
static inline uint64_t srv_whole_life_first(uint64_t count)
{
	return count > SRV_WHOLE_LIFE_MAX_ITEMS ?
		count - SRV_WHOLE_LIFE_MAX_ITEMS + 1 : 1;
}

struct server;
struct srv_thread;

enum srv_end { SRV_END_DETACH, SRV_END_KILL, SRV_END_HANGUP };

/* One resume request for the target, from vCont/c/s/C/S: kind 'c' or 's',
 * tid -1 for every thread no other action names, signal a Linux signal
 * number to deliver (0: none). */
struct srv_action {
	int64_t tid;
	char kind;
	int signal;
};

/* What the session debugs: a crashed process (target_core.c) or a live one
 * (target_live.c). Handlers call these instead of asking which it is. */
struct target_ops {
	const char *mode;                 /* "post-mortem", "live" */
	/* Register regno of thread ti in GDB's layout; false: unavailable. */
	bool (*reg_get)(struct server *s, size_t ti, int regno, uint8_t *out);
	/* The same at thread ti's replay position, whose pc is pc; NULL or
	 * false: only the pc is known there. */
	bool (*past_reg)(struct server *s, size_t ti, uint64_t pc, int regno,
			 uint8_t *out);
	/* NULL when the target cannot be changed. */
	int (*reg_set)(struct server *s, size_t ti, int regno,
		       const uint8_t *val, struct hwt_err *err);
	size_t (*mem_read)(struct server *s, uint64_t addr, void *buf,
			   size_t len);
	/* Memory before thread ti's replay position: the bytes from addr
	 * the target's history knows there; NULL: it keeps none. */
	size_t (*past_mem)(struct server *s, size_t ti, uint64_t addr,
			   void *buf, size_t len);
	/* Who wrote [addr, addr+len) nearest to position pos of thread ti
	 * (or, from_step not HWT_MEM_NO_BOUND, to that moment: another
	 * thread's store found last) in dir, before the motion's stop at its
	 * position until (the
	 * history's order of all threads' steps decides which comes
	 * first): the writing thread, its position (the store's own
	 * backward, the one after it forward) and the store's place in
	 * that order (*step: nearer compares); NULL or false: none that
	 * the target's history can tell. */
	bool (*past_write)(struct server *s, size_t ti, uint64_t pos,
			   uint64_t from_step, uint64_t until, enum hwt_dir dir,
			   uint64_t addr, uint64_t len, size_t *wti,
			   uint64_t *wpos, uint64_t *step);
	/* Thread ti's position at the moment before step (past_write's
	 * order of all threads' steps), so that every thread stands at one
	 * moment of the one memory; NULL or false: not known. */
	bool (*past_place)(struct server *s, size_t ti, uint64_t step,
			   uint64_t *pos);
	/* NULL when the target cannot be changed; bytes written or -errno */
	long (*mem_write)(struct server *s, uint64_t addr, const void *buf,
			  size_t len);
	/* Run forward as the actions say until the next stop; writes the
	 * stop reply. */
	int (*resume)(struct server *s, const struct srv_action *acts,
		      size_t nacts, char *reply, size_t cap);
	/* The reply to '?': why the process is stopped now. */
	void (*stop_reply)(struct server *s, char *reply, size_t cap);
	/* The auxiliary vector (malloc'd) or -errno with err. */
	int (*auxv)(struct server *s, uint8_t **out, size_t *len,
		    struct hwt_err *err);
	/* siginfo_t of thread ti's last signal stop, or NULL. */
	const uint8_t *(*siginfo)(struct server *s, size_t ti);
	struct hwt_history *(*history)(struct server *s, struct srv_thread *t,
				       struct hwt_err *err);
	/* Instructions thread t has executed so far in its history's
	 * numbering (live: where `record btrace` starts it). */
	uint64_t (*insn_now)(struct server *s, struct srv_thread *t);
	bool can_watch;                   /* Z2-Z4 */
	bool watch_writes_only;           /* Z2 only (a recording's stores) */
	/* QNonStop:1: threads can run while others are stopped (live). */
	bool non_stop;
	/* vFile: GDB may read this machine's files (the process runs
	 * here: live, not a bundle's copies). */
	bool host_files;
	/* Start recording a program that runs untraced until a debugger
	 * asks for its history (live, without --record); NULL: recorded
	 * already. */
	int (*record_start)(struct server *s, struct hwt_err *err);
	/* qHwtSave: write the session's traces as a bundle at dir. */
	int (*save)(struct server *s, const char *dir, struct hwt_err *err);
	/* qHwtStatus's reply (docs/gdb-server.md). */
	int (*status)(struct server *s, char *buf, size_t cap);
	/* The session ends: D, k/vKill, or GDB went away (a launched
	 * process is killed then, an attached one let go). */
	void (*end)(struct server *s, enum srv_end how);
	/* Free the target's state at close. */
	void (*close)(struct server *s);
};

extern const struct target_ops target_core_ops;
extern const struct target_ops target_live_ops;

struct srv_thread {
	int64_t tid;
	const struct core_thread *core;   /* registers at the history's end */
	long bundle_idx;                  /* its trace in the bundle, or -1 */
	struct hwt_history *hist;         /* opened on first use */
	struct hwt_cursor *cursor;        /* created on first reverse move */
	bool btrace_on;                   /* as GDB sees it (Qbtrace) */
	bool btrace_pt;                   /* format GDB asked for: PT, else
					   * BTS (what it reopens with) */
	bool btrace_served;               /* GDB has the whole history */
	char *btrace_xml;                 /* cached qXfer:btrace document */
	bool btrace_xml_pt;               /* ... in PT format, else BTS */
	size_t btrace_len;
	bool btrace_reading_empty;        /* the read in progress is of the
					   * empty "nothing new" document */
	uint64_t btrace_start;            /* live: first item GDB's trace
					   * holds (1-based, absolute) */
	bool whole_life;                  /* live: appeared while recording:
					   * its trace starts at its birth */
	struct core_thread regs;          /* live: registers at this stop */
	bool regs_ok;
	bool xstate_ok;                   /* live: its XSAVE area is the one
					   * read last (target_live.c) */
};

/* Non-stop mode (nonstop.c): which threads GDB has resumed, and the
 * stops it has not drained yet with vStopped (the first was sent as a
 * notification). */
struct ns_thread {
	int64_t tid;
	bool running;
	char kind;                        /* 'c' or 's' */
	int signal;                       /* to deliver at the next resume */
};

struct nonstop {
	struct ns_thread *th;
	size_t n, cap;
	char **queue;
	size_t nq, qcap;
};

/* Files GDB may hold open through vFile:open at once. */
#define SRV_HOSTIO_FILES 16

struct server {
	struct hwt_bundle *bundle;
	struct hwt_core *core;
	/* The bundle's data history (core_past.c), or NULL: none. */
	struct hwt_past *past;
	struct hwt_mem_thread *past_threads;
	bool past_warned;                 /* its stores unreadable: said */
	/* A watch stop's moment in the order of all threads' steps, where
	 * the next motion starts (reverse.c); moment_known until then. */
	uint64_t moment;
	bool moment_known;
	struct hwt_image *img;            /* modules + core, for decoding */
	struct srv_thread *threads;
	size_t nthreads;
	size_t gthread, cthread;          /* Hg and Hc threads (indices) */
	size_t stop_thread;               /* thread of the last stop reply */
	uint64_t bps[SRV_MAX_BREAKPOINTS];
	bool bp_hw[SRV_MAX_BREAKPOINTS];  /* inserted as Z1: stops report
					   * hwbreak, not swbreak */
	size_t nbps;
	struct srv_watch { uint64_t addr; uint32_t len; int kind; }
		watches[SRV_MAX_WATCHES];
	size_t nwatches;
	const struct target_ops *ops;
	struct live *live;                /* target_live.c's state */
	struct lldb_trace *lldb;          /* lldb_trace.c's state */
	bool attached;                    /* qAttached: not started by us */
	bool no_watch;                    /* the recorder has no watches */
	/* Watches are answered from the values of the past alone (a live
	 * recorder that keeps them but cannot watch a running program):
	 * write ones, and only while replaying. */
	bool watch_past_only;
	bool exit_requested;              /* monitor exit: end after replying */
	bool hung_up;                     /* the last client just went away */
	/* GDB's multiprocess extension is on: thread ids are pPID.TID and
	 * exit replies name the process. GDB's record full needs it (its
	 * inferior is found by the ptid's pid). */
	bool multiprocess;
	int64_t pid;                      /* the process served */
	bool process_gone;                /* live: exited, killed or let go */
	bool debug;                       /* monitor set debug 1: log packets */
	uint64_t bts_size;                /* Qbtrace-conf:bts:size */
	uint64_t pt_size;                 /* Qbtrace-conf:pt:size */
	bool avx;                         /* live, XCR0 enables AVX: the
					   * description with ymm0h-15h */
	bool thread_events;               /* QThreadEvents:1: report thread
					   * creation and exit */
	char *exec_path;                  /* the executable's system path */
	char *libs_xml;                   /* qXfer:libraries-svr4 document */
	size_t libs_len;
	char warning[600];                /* non-fatal problem opening */
	struct rsp_conn conn;
	bool non_stop;                    /* QNonStop:1 */
	bool client_lldb;                 /* asked qHostInfo, as only LLDB does */
	bool stop_before_exit;            /* --record: stop as the process
					   * starts to exit */
	struct nonstop ns;
	/* Set by the target's resume: the event's thread, and whether the
	 * event was the connection becoming readable (a packet). */
	int64_t resume_tid;
	bool resume_interrupted;
	/* Every thread the resume moved has exited; the others stay. */
	bool resume_nothing_left;
	/* vFile descriptors by GDB's number, plus one (0: free). */
	int hostio_fd[SRV_HOSTIO_FILES];
};

/* Registers in the description GDB got. */
static inline int srv_nregs(const struct server *s)
{
	return s->avx ? TDESC_AVX_NREGS : TDESC_NREGS;
}

#endif
