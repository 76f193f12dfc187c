/* SPDX-License-Identifier: BSD-2-Clause */
/* tracer.h - state shared by the files of the ptrace backend.
 *
 * launch.c   fork, exec and attach
 * pin.c      tracer and tracees on one cpu
 * run.c      the single-step loop, signals, faults, finishing
 * regs.c     the pc of a stopped thread
 * live.c     stop-by-stop control: resume actions, events, all-stop
 * deferred.c untraced until the recording is asked for, then handed over
 * interrupt.c the helper thread that makes interrupt_fd stop the program
 * attach.c   attaching to a running process, detaching
 * debugreg.c read/access watchpoints: x86 debug registers, or decoding
 * stepcheck.c each step checked against its code; lost traps repaired
 * access.c   registers and memory of stopped threads
 * memlog.c   the old bytes of every store, under live control
 * memquery.c questions to them: memory then, who wrote a range
 * threads.c  the table of traced threads and their rings
 * maps.c     the executable-module sideband from /proc/PID/maps
 * core.c     write_core through the shared core writer (../proc.h)
 * backend.c  the ops table tying these to collect.c
 */
#ifndef HWT_PTRACE_TRACER_H
#define HWT_PTRACE_TRACER_H

#if !defined(__x86_64__)
#error "the ptrace backend records x86-64 programs only"
#endif

#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>

#include "backend.h"
#include "hwt-past.h"
#include "live.h"
#include "os/debugreg.h"
#include "os/modset.h"
#include "os/proc.h"
#include "os/x86mem.h"
#include "ring.h"

enum step_thread_state {
	PT_RUNNING,     /* resumed; its next stop has not been collected */
	PT_STOPPED,     /* in a ptrace-stop that we hold */
	PT_LISTENING,   /* in group-stop, released with PTRACE_LISTEN */
	PT_GONE,        /* exited and reaped */
};


/* stepcheck.c: how an instruction leaves, as far as a step can tell. */
enum step_flow {
	STEP_FLOW_STRAIGHT = 1,  /* to the next instruction */
	STEP_FLOW_REP,           /* to itself or the next (rep string) */
	STEP_FLOW_OTHER,         /* anywhere: branches, syscalls, traps */
};

struct step_code_entry {
	uint64_t pc;
	uint16_t mnemonic;       /* Zydis's */
	uint8_t len;             /* 0: an empty slot */
	uint8_t flow;            /* enum step_flow */
};

#define STEP_CODE_SLOTS 4096u
#define STEP_LOST_KINDS 8u
#define STEP_TMP_BPS 16u

/* An int3 written after an instruction whose trap is lost (stepcheck.c). */
struct step_tmp_bp {
	uint64_t addr;
	unsigned users;          /* threads stepping onto it */
	uint8_t orig;            /* the byte it replaced */
};

struct step_memlog {
	struct hwt_mem_entry *e;          /* by step */
	size_t n, alloc;
	uint8_t *bytes;
	size_t nbytes, bytes_alloc;
	uint64_t next_seq;                /* the next step's number */
	uint64_t horizon;                 /* nothing known before this step */
	size_t cap;                       /* bytes kept */
	uint64_t brk;                     /* the program break, once seen */
	struct { pid_t tid; uint64_t addr; } *clear;   /* tid words */
	size_t nclear, clear_alloc;
};

struct step_thread {
	pid_t tid;
	enum step_thread_state state;
	/* A caught signal was injected: the next step stop is the first
	 * instruction of its handler, reached asynchronously. */
	bool handler_entry_next;
	bool exiting;           /* reported PTRACE_EVENT_EXIT */
	int pending_signal;     /* held back while stopped for a fault */
	struct hwt_sw_ring ring;

	/* Live control (live.c): the rules' part, and the stepper's. */
	struct hwt_live_thread lt;
	bool interrupt_pending; /* PTRACE_INTERRUPT sent, its stop not seen */
	/* Stopped at a ptrace event (not a signal-delivery stop): a signal
	 * passed on resume cannot be injected and is sent instead. */
	bool event_stop;
	int forward_signal;     /* sent so: deliver it when it reports */
	unsigned dr_gen;        /* debug register setup it has */
	/* soft_watch: the step it was resumed for accesses c->dr.watch[
	 * soft_hit - 1] (0: none). */
	unsigned soft_hit;
	bool announce;          /* born during a resume that reports
				 * births: queue THREAD_CREATED at its
				 * first stop */
	/* Live control: registers logged with every recorded pc; now is
	 * this stop's when now_valid (read with the pc). */
	bool log_regs;
	struct hwt_reglog reglog;          /* common/reglog.c */
	struct hwt_reglog fplog;           /* x87/SSE state (FXSAVE) */
	struct user_regs_struct now;
	bool now_valid;
	/* Live control: memory of the past (memlog.c), the collector's. */
	struct step_memlog *memlog;
	struct hwt_mem_run *runs;
	size_t nruns, runs_alloc;
	uint64_t mem_seq;          /* step number of its newest entry */
	bool sc_pending;           /* stepped over a syscall: the result
				    * comes with its next step */
	uint64_t sc_nr, sc_seq, sc_args[6];
	uint64_t sc_clone_flags, sc_clone_ctid;
	/* stepcheck.c: the breakpoint it runs to (0: none); steps whose
	 * lost trap was repaired, or made a gap. */
	uint64_t tmp_bp;
	uint64_t step_repairs, step_gaps;
	bool frame_pending;        /* a signal frame was expected between */
	uint64_t frame_lo, frame_hi, frame_seq;
};

struct step_collector;
struct step_thread;
struct hwt_seize;

/* What the single-step loop (run.c) asks at its decision points while
 * live control drives it instead of a run to the end (live.c provides
 * them; the loop knows only this table). */
struct step_loop_hooks {
	/* t may go on, or has to stay stopped. */
	bool (*may_go)(struct step_collector *c, struct step_thread *t);
	/* t stepped to pc: a step_outcome. */
	int (*after_step)(struct step_collector *c, struct step_thread *t,
			  uint64_t pc);
	/* True when sig is live control's own wake-up, handled. */
	bool (*swallow)(struct step_collector *c, struct step_thread *t,
			int sig);
	/* sig is about to be delivered to t: a step_outcome. */
	int (*signal)(struct step_collector *c, struct step_thread *t,
		      int sig);
	int (*thread_died)(struct step_collector *c, struct step_thread *t,
			   int status);
	/* t's stop for a PTRACE_INTERRUPT it owed. */
	int (*interrupt_stop)(struct step_collector *c, struct step_thread *t);
	/* A new thread's first stop in a resume that reports births. */
	int (*born)(struct step_collector *c, struct step_thread *t);
	/* t is exiting (PTRACE_EVENT_EXIT) and its exit ends the process:
	 * a step_outcome. */
	int (*exiting)(struct step_collector *c, struct step_thread *t);
};

/* One resume's breakpoints and watches (live.c). */
struct step_live {
	const uint64_t *breakpoints;    /* sorted */
	size_t nbreakpoints;
	const struct hwt_watch *watches;
	uint64_t *watch_values;         /* last seen value of each watch */
	size_t nwatches;
	int memfd;                      /* /proc/PID/mem for the watches */
	bool stop_before_exit;
};

struct step_collector {
	struct hwt_collector base;
	uint64_t buffer_size;
	uint32_t chunk_payload;

	/* __WALL, plus __WNOTHREAD when called from the tracing thread: it
	 * keeps children of the caller's other threads out of our waits.
	 * Set on entry to each call that waits (gettid is a syscall). */
	int wait_flags;

	bool pinned;
	cpu_set_t saved_affinity;   /* the tracer's own, restored at close */

	/* Every thread seen, exited ones included, in order of appearance;
	 * at HWT_BUNDLE_MAX_THREADS the oldest exited one makes room. */
	struct step_thread **threads;
	size_t nthreads, threads_alloc;
	int32_t *tid_index;         /* open-addressing tid -> threads[] for
				     * threads not PT_GONE; -1 is empty */
	struct step_thread *last;     /* thread of the previous stop */

	struct step_thread *fault_thread;
	siginfo_t fault_siginfo;

	/* Union of executable file mappings seen (sideband). */
	struct hwt_modset mods;

	/* Filled when recording ends (rings sealed), or on each snapshot
	 * in live mode. */
	struct hwt_collect_thread *out_threads;

	/* Live control: the rules (collect/live.c) over this backend's
	 * mechanisms (hwt_step_live_ops); live is &resume while the loop
	 * serves them (a resume, or attach collecting its first stops),
	 * NULL during a run; ended once the process is gone. */
	struct hwt_live rules;
	struct step_live resume;
	struct step_live *live;
	const struct step_loop_hooks *hooks;   /* set with live */
	struct step_interrupt *interrupt;
	bool ended;
	/* interrupt.c: set by the helper thread when interrupt_fd became
	 * readable during a resume. */
	atomic_bool interrupt_fired;
	/* Read/access watches in debug registers (debugreg.c); soft: this
	 * machine's do not fire, so each step is decoded instead. */
	struct hwt_dr_watches dr;
	bool soft_watch;
	/* The tracees' cpu affinity before pinning, restored on detach. */
	bool tracee_pinned;
	cpu_set_t tracee_affinity;

	/* defer_recording (deferred.c): the program runs untraced under
	 * the seize layer until record_start; NULL once recorded. Pinning
	 * is asked for then. */
	struct hwt_seize *untraced;
	enum hwt_collect_pin pin;
	unsigned pin_cpu;
	/* Live control: each thread logs its registers (common/reglog.c) and
	 * the old bytes of its stores (memlog.c). */
	bool log_regs;
	struct step_memlog memlog;
	/* HWT_EVENT_EXITING was reported: the process ends at next resume. */
	bool exit_reported;
	/* stepcheck.c: decoded instructions; the kinds whose single-step
	 * trap this machine loses; breakpoints stepping over them. */
	struct step_code_entry code[STEP_CODE_SLOTS];
	uint16_t lost_kinds[STEP_LOST_KINDS];
	size_t nlost_kinds;
	struct step_tmp_bp tmp_bps[STEP_TMP_BPS];
	size_t ntmp_bps;
};

static inline struct step_collector *step_of(struct hwt_collector *c)
{
	return (struct step_collector *)c;
}

/* launch.c */
int hwt_step_launch(const struct hwt_collect_opts *opts, char *const argv[],
		  struct hwt_collector **out, struct hwt_err *err);

/* pin.c */
void hwt_step_unpin(struct step_collector *c);
/* Pin the tracer to the cpu opts asks for (HWT_PIN_HERE or _CPU), as
 * launch does; for attach, the tracees follow. */
int hwt_step_pin(struct step_collector *c, const struct hwt_collect_opts *opts,
	       struct hwt_err *err);

/* run.c */
/* Outcomes of handling one stop, and of the loop. */
enum step_outcome {
	PT_KEEP_GOING,
	PT_PROCESS_ENDED,
	PT_PROCESS_FAULTED,
	PT_LIVE_EVENT,        /* live: an event was queued on a thread */
	PT_ALL_STOPPED,       /* live, stopping: every thread is stopped */
};
/* Wait for stops and handle each until one ends the loop: returns a
 * step_outcome other than PT_KEEP_GOING, or a negative errno. */
int hwt_step_loop(struct step_collector *c, struct hwt_err *err);
void hwt_step_set_wait_flags(struct step_collector *c);
/* Let t go on with request and sig unless live control holds it. */
void hwt_step_go_on(struct step_collector *c, struct step_thread *t,
		  enum __ptrace_request request, int sig);
/* Record a stop at pc on t (first pc, or a step to it). */
void hwt_step_record_pc(struct step_thread *t, uint64_t pc);
/* The registers of t's newest recorded instruction, when t logs them:
 * call after the ring got it (ring start or step). */
void hwt_step_log_regs(struct step_thread *t);
/* The pc of a stopped thread, with its registers kept for the log when
 * it logs them. */
int hwt_step_read_stop(struct step_thread *t, uint64_t *pc);
int hwt_step_run(struct hwt_collector *base, struct hwt_err *err);
int hwt_step_finish(struct hwt_collector *base, struct hwt_err *err);
/* Kill whatever still runs and reap it; the state becomes ENDED. */
void hwt_step_kill_and_reap(struct step_collector *c);

/* regs.c */
int hwt_step_read_pc(pid_t tid, uint64_t *pc);

/* stepcheck.c */
void hwt_step_check_init(struct step_collector *c);
/* The mappings changed: decoded instructions may be stale. */
void hwt_step_code_forget(struct step_collector *c);
enum step_check {
	STEP_OK,     /* record pc as the next step (lost ones were added) */
	STEP_GAP,    /* pc begins a new piece of history after a gap */
};
/* Check t's step from its last recorded pc to pc, before recording it. */
enum step_check hwt_step_check(struct step_collector *c,
			       struct step_thread *t, uint64_t pc);
/* Single-step t (sig injected), or run it to a breakpoint after an
 * instruction whose trap is lost here. 0 or -errno. */
int hwt_step_single(struct step_collector *c, struct step_thread *t, int sig);
enum step_bp_stop {
	STEP_BP_NONE,         /* no breakpoint of ours was involved */
	STEP_BP_STEPPED,      /* t reached its own: a step to *pc */
	STEP_BP_NOTHING_RAN,  /* t ran into another's: step it again */
};
/* At a stop of t (trap: a SIGTRAP signal stop), with breakpoints out:
 * take t's out and tell whether the stop came from one. */
enum step_bp_stop hwt_step_tmp_bp_stop(struct step_collector *c,
				       struct step_thread *t, bool trap,
				       uint64_t *pc);
/* t's image is gone (exec, death): its breakpoint is forgotten. */
void hwt_step_tmp_bp_forget(struct step_collector *c, struct step_thread *t);

/* threads.c */
int hwt_step_threads_init(struct step_collector *c, struct hwt_err *err);
struct step_thread *hwt_step_thread_find(struct step_collector *c, pid_t tid);
/* A new thread, not started. Fails when the table is full of live
 * threads or memory ran out. */
int hwt_step_thread_add(struct step_collector *c, pid_t tid,
		      struct step_thread **out, struct hwt_err *err);
void hwt_step_thread_gone(struct step_collector *c, struct step_thread *t);
/* The process is gone: so is every thread. */
void hwt_step_threads_all_gone(struct step_collector *c);
/* Drop a thread and its history. */
void hwt_step_thread_forget(struct step_collector *c, struct step_thread *t);
/* After exec by a non-leader thread: it takes over the leader's tid. */
void hwt_step_thread_retid(struct step_collector *c, struct step_thread *t,
			 pid_t tid);
size_t hwt_step_threads_live(const struct step_collector *c);
/* Seal every ring and build out_threads. */
int hwt_step_threads_seal(struct step_collector *c, struct hwt_err *err);
/* Lay out every ring's history so far, leaving the rings appendable. */
int hwt_step_threads_snapshot(struct step_collector *c, struct hwt_err *err);
size_t hwt_step_threads_get(struct hwt_collector *base,
			  const struct hwt_collect_thread **threads);
void hwt_step_threads_free(struct step_collector *c);

/* maps.c */
/* Add the executable file mappings of tid's process to the module union.
 * Fails only for lack of memory; an unreadable maps file (the thread is
 * gone) changes nothing. */
int hwt_step_modules_refresh(struct step_collector *c, pid_t tid,
			   struct hwt_err *err);
size_t hwt_step_modules_get(struct hwt_collector *base,
			  const struct hwt_collect_module **modules);
void hwt_step_modules_free(struct step_collector *c);

/* live.c */
int hwt_step_resume(struct hwt_collector *base,
		  const struct hwt_resume_opts *opts,
		  struct hwt_collect_event *event, struct hwt_err *err);
size_t hwt_step_live_tids(struct hwt_collector *base, pid_t *tids, size_t cap);
/* The loop's questions while live control drives it (c->hooks). */
extern const struct step_loop_hooks hwt_step_live_hooks;
/* The stepper's mechanisms, for the rules in c->rules. */
extern const struct hwt_live_ops hwt_step_live_ops;
/* Set c->rules up for c, once its pid is known. */
void hwt_step_live_init(struct step_collector *c);

/* interrupt.c */
struct step_interrupt;
/* Watch fd (>= 0) from a helper thread while the program runs. */
int hwt_step_interrupt_start(struct step_collector *c, int fd,
			   struct step_interrupt **out, struct hwt_err *err);
void hwt_step_interrupt_stop(struct step_interrupt *in);

/* debugreg.c */
/* Lay the READ and ACCESS watches of w out in debug registers. */
int hwt_step_dr_configure(struct step_collector *c, const struct hwt_watch *w,
			size_t n, struct hwt_err *err);
/* Bring t's debug registers to the current setup. */
int hwt_step_dr_apply(struct step_collector *c, struct step_thread *t,
		    struct hwt_err *err);
/* Before t single-steps: with soft watches, find what its instruction
 * will access. */
void hwt_step_watch_arm(struct step_collector *c, struct step_thread *t);
/* After t's step: the read or access watch it hit, or NULL. */
const struct hwt_watch *hwt_step_watch_hit(struct step_collector *c,
					   struct step_thread *t,
					   hwt_dr_read_fn read, void *ctx);

/* deferred.c */
int hwt_step_launch_deferred(struct step_collector *c,
			     const struct hwt_collect_opts *opts,
			     char *const argv[], struct hwt_err *err);
int hwt_step_record_start(struct hwt_collector *base, struct hwt_err *err);
bool hwt_step_recording(const struct hwt_collector *base);
/* The collector's calls while c->untraced. */
int hwt_step_untraced_resume(struct step_collector *c,
			     const struct hwt_resume_opts *opts,
			     struct hwt_collect_event *event,
			     struct hwt_err *err);
int hwt_step_untraced_detach(struct step_collector *c, struct hwt_err *err);
/* Kill and reap a program still untraced; nothing otherwise. */
void hwt_step_untraced_close(struct step_collector *c);

/* access.c */
int hwt_step_regs_at(struct hwt_collector *base, pid_t tid, uint64_t insn,
		     int nt_type, void *out, struct hwt_err *err);

/* sysmem.c: what the system call at a syscall instruction with registers
 * regs writes into the caller's memory, at most max ranges (room for
 * HWT_SYS_STORES_MAX takes every call it knows of, a readv of up to
 * HWT_SYS_MAX_IOV buffers too); -1 when not known. */
#define HWT_SYS_MAX_IOV 16u
#define HWT_SYS_STORES_MAX (HWT_SYS_MAX_IOV + 8u)
int hwt_sys_stores(pid_t pid, const struct user_regs_struct *regs,
		   struct hwt_store *out, size_t max);
/* clone3's struct clone_args at at in process pid: flags, pidfd,
 * child_tid, parent_tid are its first four words; false if unreadable. */
bool hwt_sys_clone3_args(pid_t pid, uint64_t at, uint64_t w[4]);
/* Memory a finished call made, moved or dropped (mmap, mremap, munmap,
 * madvise, brk: *brk follows the break), unknown before it. */
int hwt_sys_after(uint64_t nr, const uint64_t args[6], uint64_t result,
		  uint64_t *brk, struct hwt_store *out, size_t max);

/* past.c: the registers and memory of the past into a data history
 * file; 1 written, 0 nothing kept. */
int hwt_step_write_past(struct hwt_collector *base, const char *path,
			struct hwt_err *err);

/* memlog.c */
/* Thread t stands before its instruction index with registers r. */
void hwt_step_memlog_step(struct step_thread *t, uint64_t index,
			  const struct user_regs_struct *r);
/* A caught signal is about to be delivered to t: its frame. */
void hwt_step_memlog_signal(struct step_thread *t);
/* Memory or registers changed by other means (a debugger): nothing
 * before now can be told. */
void hwt_step_memlog_forget(struct step_memlog *m);
void hwt_step_memlog_thread_died(struct step_memlog *m, pid_t tid);
void hwt_step_memory_written(struct hwt_collector *base, uint64_t addr,
			     size_t len);
/* A debugger changed t's registers where it stands. */
void hwt_step_memlog_regs_written(struct step_thread *t,
				  const struct user_regs_struct *r);
void hwt_step_memlog_free(struct step_memlog *m);

/* memquery.c */
/* Bytes from addr known before thread tid's instruction index: how many
 * (0: none), or a negative errno. */
int hwt_step_mem_at(struct hwt_collector *base, pid_t tid, uint64_t index,
		    uint64_t addr, void *buf, size_t len, struct hwt_err *err);
int hwt_step_find_write(struct hwt_collector *base,
			const struct hwt_write_query *q,
			struct hwt_write_found *out, struct hwt_err *err);
int hwt_step_index_at_step(struct hwt_collector *base, pid_t tid,
			   uint64_t step, uint64_t *index, struct hwt_err *err);

/* attach.c */
int hwt_step_attach(const struct hwt_collect_opts *opts, pid_t pid,
		  struct hwt_collector **out, struct hwt_err *err);
int hwt_step_detach(struct hwt_collector *base, struct hwt_err *err);

/* access.c */
int hwt_step_regset(struct hwt_collector *base, pid_t tid, int nt_type,
		  void *buf, size_t *len, bool write, struct hwt_err *err);

/* core.c */
int hwt_step_write_core(struct hwt_collector *base, const char *path,
		      struct hwt_err *err);

#endif
