/* SPDX-License-Identifier: BSD-2-Clause */
/* server.h - hwt-server's internal interfaces, one section per file. */
#ifndef HWT_SERVER_H
#define HWT_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hwt-common.h"
#include "hwt-replay.h"
#include "rsp.h"

struct hwt_past;
struct hwt_mem_thread;

/* ---- target_core.c: the core's threads, registers and memory -------- */

#define CORE_GREGS_SIZE 216u     /* struct user_regs_struct */
#define CORE_FXSAVE_SIZE 512u    /* struct user_fpregs_struct (FXSAVE) */
#define CORE_MAX_AUXV (64u << 10)

struct core_thread {
	int64_t tid;
	uint8_t gregs[CORE_GREGS_SIZE];
	bool have_fp;
	uint8_t fxsave[CORE_FXSAVE_SIZE];
};

struct hwt_core {
	struct core_thread *threads;  /* faulting thread first, as written */
	size_t nthreads;
	uint8_t *auxv;
	size_t auxv_len;
	int signo;                    /* Linux signal that dumped, 0: none */
	uint8_t siginfo[128];         /* NT_SIGINFO: the kernel's siginfo_t */
	bool have_siginfo;
	struct hwt_image *mem;        /* the core's PT_LOAD segments */
};

int core_open(const char *path, struct hwt_core **out, struct hwt_err *err);
void core_free(struct hwt_core *core);
uint64_t core_thread_pc(const struct core_thread *t);

/* ---- tdesc.c: x86-64 GNU/Linux target description ------------------- */

#define TDESC_NREGS 60            /* without AVX */
#define TDESC_YMM0H_REGNUM 60     /* with AVX: ymm0h-ymm15h follow */
#define TDESC_AVX_NREGS 76
#define TDESC_PC_REGNUM 16
#define TDESC_MAX_REG_SIZE 16

extern const char tdesc_amd64_linux_xml[];
extern const char tdesc_amd64_avx_linux_xml[];
/* XSAVE (NT_X86_XSTATE) bytes holding ymm0h-ymm15h: XCR0 must enable AVX
 * (false otherwise, or when len is short). */
bool tdesc_xstate_has_avx(const uint8_t *xs, size_t len);
/* ymm(i)h from an XSAVE area, zeros when its state is the initial one. */
void tdesc_ymmh_value(const uint8_t *xs, int i, uint8_t *out);
/* Store ymm(i)h into an XSAVE area, marking the AVX state as in use. */
void tdesc_ymmh_store(uint8_t *xs, int i, const uint8_t *val);
/* Size of register regno in bytes, 0 if there is no such register. */
size_t tdesc_reg_size(int regno);
/* Value of regno from a core thread's register notes, in GDB's layout
 * (little-endian); returns false when the core did not record it. */
bool tdesc_reg_value(const struct core_thread *t, int regno, uint8_t *out);
/* Store a value in GDB's layout into the register notes; false for a
 * register they cannot hold (no FP state, tag word, x87 pointers). */
bool tdesc_reg_store(struct core_thread *t, int regno, const uint8_t *val);

/* ---- the session state every file shares ------------------------------ */

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

/* ---- target.c: what every handler asks of the target ------------------- */

/* The thread's history up to where it stands now (live: rebuilt after
 * every resume); NULL with err set when the thread has no trace. */
struct hwt_history *srv_history(struct server *s, struct srv_thread *t,
				struct hwt_err *err);
/* A debugger asked for history (record btrace, thread trace start):
 * the process is recorded from here on if it was not already. */
int srv_record_start(struct server *s, struct hwt_err *err);
/* Whether thread t sits inside its history (not at the crash), and the
 * pc there. */
bool srv_replaying(struct server *s, size_t t, uint64_t *pc);
/* Whether any thread stands inside its recorded past (reverse.c). */
bool srv_in_past(struct server *s);
/* Memory as it is at the session's point in time: today's, or in the
 * past what is known of that moment. Returns the bytes read from addr
 * on (0: none). */
size_t srv_read_memory(struct server *s, uint64_t addr, void *buf,
		       size_t len);
/* Forget what a resume changes: histories, cursors, served traces,
 * cached registers. */
void srv_invalidate(struct server *s);

/* ---- libs.c: the shared-library list GDB loads symbols from ------------ */

struct srv_module {
	const char *system_path;          /* where the process has it */
	const char *file;                 /* a readable copy, or NULL: the
					   * system path */
	uint64_t load_address;            /* its first PT_LOAD page */
};

/* Build s->libs_xml and s->exec_path; the executable is the module
 * holding at_phdr (AT_PHDR), else the first. */
int libs_build(struct server *s, const struct srv_module *mods, size_t n,
	       uint64_t at_phdr, struct hwt_err *err);
/* AT_PHDR from an auxiliary vector, 0 if absent. */
uint64_t libs_at_phdr(const uint8_t *auxv, size_t len);

/* ---- server.c: reply helpers for every handler ------------------------- */

/* Strict hex number up to the terminator end; rest (if not NULL) points
 * after it. */
bool srv_parse_hex(const char *s, char end, uint64_t *v, const char **rest);
/* A thread id as the remote protocol writes it: "pPID.TID" once the
 * multiprocess extension is on, else "TID" (hex). */
const char *srv_tid_str(const struct server *s, int64_t tid, char *buf,
			size_t cap);
/* A thread id read: *tid is the thread, -1 for all, 0 for any; false
 * when malformed or naming another process. */
bool srv_parse_tid(const struct server *s, const char *id, int64_t *tid);
/* Thread index for a thread id ("-1" all, "0" any: the stop thread). */
bool srv_thread_by_id(struct server *s, const char *id, size_t *idx);

/* Parse the "OFF,LEN" (hex) of a qXfer read; false if malformed. */
bool srv_parse_offlen(const char *s, uint64_t *off, uint64_t *len);
/* Reply to a qXfer read with the slice [off, off+len) of doc: 'm' when
 * more follows, 'l' at the end. */
int srv_xfer_reply(struct server *s, const void *doc, size_t doclen,
		   uint64_t off, uint64_t len);

/* ---- vcont.c, breakpoints.c, writes.c: packet families ----------------- */

/* Each returns false if pkt is not theirs; otherwise the reply was sent
 * (or *rc holds a send error). */
bool vcont_handle(struct server *s, const char *pkt, int *rc);
bool breakpoints_handle(struct server *s, const char *pkt, int *rc);
/* Whether the breakpoint at pc was inserted as a hardware one (Z1). */
bool breakpoints_hw_at(const struct server *s, uint64_t pc);
/* G, P, M and X (len: X's payload carries NUL bytes). */
bool writes_handle(struct server *s, const char *pkt, size_t len, int *rc);

/* ---- save.c: qHwtSave -------------------------------------------------- */

struct hwt_collector;
struct hwt_collect_thread;

bool save_handle(struct server *s, const char *pkt, int *rc);
/* monitor.c: qRcmd, gdbserver's monitor commands. */
bool monitor_handle(struct server *s, const char *pkt, int *rc);
/* A bundle of a live collector's threads (a snapshot) and modules. */
int save_collected(struct hwt_collector *c,
		   const struct hwt_collect_thread *threads, size_t nthreads,
		   const char *dir, struct hwt_err *err);

/* ---- target_live.c: a running process under the collector --------------- */

struct live_opts {
	const char *backend;              /* NULL: the collector's choice */
	bool record;                      /* from launch, not when asked */
	uint64_t values;                  /* valgrind: data_bytes */
	char *const *argv;                /* launch this, or */
	int attach_pid;                   /* attach to this (argv NULL) */
};

int live_open(struct server *s, const struct live_opts *o,
	      struct hwt_err *err);

/* ---- btrace.c: GDB's branch-trace packets ----------------------------- */

/* Handle Qbtrace:*, Qbtrace-conf:*, qXfer:btrace:read and
 * qXfer:btrace-conf:read for the general thread. Returns false if pkt is
 * none of those; otherwise the reply was sent (or *rc holds a send
 * error). */
bool btrace_handle(struct server *s, const char *pkt, int *rc);

/* ---- nonstop.c: GDB's non-stop mode ---------------------------------------- */

/* QNonStop, and in non-stop mode vStopped and '?'; false if pkt is none
 * of those (vCont goes to nonstop_vcont through vcont.c). */
bool nonstop_handle(struct server *s, const char *pkt, int *rc);
int nonstop_vcont(struct server *s, const struct srv_action *a, size_t n);
/* Whether GDB has threads running. */
bool nonstop_running(const struct server *s);
/* Resume the running threads until an event (its stop is queued or sent)
 * or a packet arrives (*packet set: serve it, then call again). */
int nonstop_run(struct server *s, bool *packet);
/* Leave non-stop mode and free its state (a session ended). */
void nonstop_reset(struct server *s);

/* ---- hostio.c: vFile (read-only host I/O) --------------------------------- */

/* Handle vFile:*; false if pkt is not one. */
bool hostio_handle(struct server *s, const char *pkt, int *rc);
/* Close what GDB left open (its session ended). */
void hostio_close_all(struct server *s);

/* ---- core_past.c: the bundle's data history, post-mortem ---------------- */

/* Read the bundle's data history, if it has one, into s->past. */
int core_past_open(struct server *s, struct hwt_err *err);
void core_past_close(struct server *s);
/* The target_ops past_reg, past_mem and past_write of a bundle. */
bool core_past_reg(struct server *s, size_t ti, uint64_t pc, int regno,
		   uint8_t *out);
size_t core_past_mem(struct server *s, size_t ti, uint64_t addr, void *buf,
		     size_t len);
bool core_past_place(struct server *s, size_t ti, uint64_t step,
		     uint64_t *pos);
bool core_past_write(struct server *s, size_t ti, uint64_t pos,
		     uint64_t from_step, uint64_t until, enum hwt_dir dir,
		     uint64_t addr, uint64_t len, size_t *wti, uint64_t *wpos,
		     uint64_t *step);

/* ---- reverse.c: moving through the history ----------------------------- */

/* Resume thread t: backward or forward, one instruction (step) or to the
 * next breakpoint (continue). Writes the stop reply into reply; returns
 * enum hwt_move or a negative errno. */
int reverse_resume(struct server *s, size_t t, enum hwt_dir dir, bool step,
		   char *reply, size_t cap);
/* The stop reply for thread t where it is now. */
void reverse_stop_reply(struct server *s, size_t t, const char *extra,
			char *reply, size_t cap);

/* ---- listen.c: the one-client socket ----------------------------------- */

struct listener {
	int fd;
	bool is_unix;
	char *unix_path;                  /* removed at close */
	char desc[160];                   /* "127.0.0.1:1234", "unix:/p" */
	bool remote;                      /* bound to a non-loopback address */
};

/* spec: HOST:PORT, [V6]:PORT or unix:PATH. Non-loopback addresses fail
 * with -EPERM unless allow_remote. */
int listener_open(struct listener *l, const char *spec, bool allow_remote,
		  struct hwt_err *err);
void listener_close(struct listener *l);
/* Wait for the first client. */
int listener_accept(struct listener *l, struct hwt_err *err);
/* Refuse a client that connects while one is being served: tell it why
 * in a protocol error reply and close it. Returns true if one was. */
bool listener_refuse_pending(struct listener *l);

/* ---- target_core.c: opening; server.c: serving and closing ------------ */

/* Open the bundle and its core (core_path overrides the bundle's). A
 * problem that only makes some code unreadable lands in s->warning. */
int server_open(struct server *s, const char *bundle_dir,
		const char *core_path, struct hwt_err *err);
void server_close(struct server *s);
/* Serve one GDB connection until it detaches or disconnects. A client
 * that goes away without D, k or monitor exit leaves s->hung_up set;
 * unless keep, the program is then killed (or let go, if attached), as
 * nothing may stay stopped for a debugger that is gone. */
int server_run(struct server *s, struct listener *l, int client_fd,
	       bool keep, struct hwt_err *err);

/* ---- lldb_proto.c, lldb_trace.c: the packets only LLDB sends ---------- */

struct lldb_trace;
/* Handle qHostInfo, qProcessInfo and the jLLDBTrace* packets. Returns
 * false if pkt is none of those; otherwise the reply was sent (or *rc
 * holds a send error). */
bool lldb_proto_handle(struct server *s, const char *pkt, int *rc);
/* The jLLDBTrace* half of lldb_proto_handle. */
bool lldb_trace_handle(struct server *s, const char *pkt, int *rc);
void lldb_trace_free(struct lldb_trace *lt);

#endif
