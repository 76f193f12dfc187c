/* SPDX-License-Identifier: BSD-2-Clause */
/* hwt-collect.h - collect branch traces from running programs.
 *
 * One API over recording backends registered by name. A collector runs a
 * program traced from exec (every thread, threads created later included)
 * until it exits or stops on a fatal signal, then hands out each thread's
 * trace in the hwt-sw format (see hwt-common.h), the executable mappings
 * seen (sideband), and how the process ended. Nothing here prints or exits.
 */
#ifndef HWT_COLLECT_H
#define HWT_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hwt-common.h"
#include "hwt-past.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HWT_COLLECT_DEFAULT_BUFFER (4u << 20)
#define HWT_COLLECT_MIN_BUFFER (64u << 10)
#define HWT_COLLECT_MAX_BUFFER (1ull << 34)
/* The valgrind backend's values of the past (data_bytes): the tools'
 * default and bounds. */
#define HWT_COLLECT_VALUES_DEFAULT (64ull << 20)
#define HWT_COLLECT_VALUES_MIN (1ull << 20)
#define HWT_COLLECT_VALUES_MAX (16ull << 30)

/* Where the stepper runs itself and the program: single-stepping is
 * about three times faster with both on one cpu. */
enum hwt_collect_pin {
	HWT_PIN_HERE = 0,         /* the cpu the caller runs on at launch */
	HWT_PIN_CPU,              /* cpu */
	HWT_PIN_NONE,             /* wherever the scheduler puts them */
};

/* Options; may grow. Declare with HWT_OPTS(hwt_collect_opts, o, ...):
 * a zeroed struct is the defaults. */
struct hwt_collect_opts {
	size_t sz;
	/* "ptrace", "module", "perf-pt" (or "pt"), ...; NULL picks the
	 * first available in docs/backends.md's order of preference that
	 * does what the other options ask (live_control, block_step). */
	const char *backend;
	uint64_t buffer_size;     /* per-thread ring bytes; 0 = default */
	enum hwt_collect_pin pin;
	unsigned cpu;             /* with HWT_PIN_CPU */
	/* ---- perf backends (docs/backends.md); others ignore these ---- */
	/* Let the hardware overwrite its AUX area (a flight recorder of
	 * buffer_size bytes, nothing read while the program runs) instead of
	 * draining it into the per-thread buffer as it fills. */
	bool perf_snapshot;
	/* perf-pt: trace only these address ranges (at most the PMU's
	 * caps/num_address_ranges); NULL/0: everything. */
	const struct hwt_collect_ip_filter *pt_filters;
	size_t pt_nfilters;
	bool pt_tsc;              /* TSC packets (timestamps) */
	bool pt_mtc;              /* MTC packets (needs caps/mtc) */
	bool pt_cyc;              /* CYC packets (needs caps/psb_cyc) */
	/* Bytes of trace between PSB packets, a power of two from 2K that
	 * caps/psb_periods allows; 0: the PMU's default. */
	uint32_t pt_psb_bytes;
	/* Module backend only (refused by every other backend): ask
	 * hwtrace.ko for block-step (DEBUGCTL.BTF), one record per taken
	 * branch instead of one per instruction where the hardware honours
	 * it. Chunks recorded so are flagged HWT_SW_CHUNK_BRANCHES and
	 * expanded with the program image when replayed; instruction counts
	 * count their records. See docs/backends.md. */
	bool block_step;
	/* The program will be driven stop by stop with hwt_collect_resume
	 * (a debugger server): the default backend is then one that can,
	 * and a named one that cannot is refused at launch instead of at
	 * the first resume. hwt_collect_attach implies it. */
	bool live_control;
	/* Record the children the program forks too, each thread of theirs
	 * as a thread of the recording (HWT_COLLECT_CAP_FOLLOW_FORK; the
	 * default backend is then one that can). */
	bool follow_fork;
	/* With live_control: run the program untraced, at the speed it has
	 * under gdbserver, until hwt_collect_record_start (a debugger
	 * asking for its history). Backends without
	 * HWT_COLLECT_CAP_DEFER record from launch and ignore it. */
	bool defer_recording;
	/* Keep the whole history, not a window of it: what the window
	 * drops is compressed to disk, at most whole_bound bytes per
	 * thread, the newest kept past it (HWT_COLLECT_CAP_WHOLE; 0: the
	 * window alone). */
	uint64_t whole_bound;
	/* valgrind: keep the values of the past, what the newest writes
	 * overwrote, in data_bytes of memory, so that the bundle's data
	 * history (hwt-past.h), and under live control hwt_collect_regs_at
	 * and friends, show registers and memory as they were before any
	 * instruction it reaches back to. 0: none (HWT_COLLECT_VALUES_DEFAULT
	 * is the tools' default). Other backends ignore it (ptrace always
	 * keeps them). */
	uint64_t data_bytes;
};

/* An Intel PT address filter: size bytes from start, start being an
 * offset in the object file when file is set (its load address is found
 * by the kernel), else a kernel address. */
struct hwt_collect_ip_filter {
	uint64_t start, size;
	const char *file;
};

struct hwt_collector;

/* How a thread's trace bytes are encoded. The software backends
 * (ptrace, module) deliver hwt-sw chunks; perf-pt raw Intel PT, perf-bts
 * 24-byte BTS records, perf-etm CoreSight formatted frames. */
enum hwt_collect_format {
	HWT_COLLECT_FMT_SW = 0,
	HWT_COLLECT_FMT_PT,
	HWT_COLLECT_FMT_BTS,
	HWT_COLLECT_FMT_ETM,
};

/* One thread's trace, oldest chunk first. */
struct hwt_collect_thread {
	pid_t tid;
	pid_t pid;                /* a followed child's pid; 0: the program */
	/* The execs its process had made when this history began: a thread
	 * that exec's goes on as a new history of the new program. */
	uint32_t exec;
	enum hwt_collect_format format;
	const uint8_t *trace;     /* in that format */
	size_t trace_size;
	uint64_t lost_bytes;      /* dropped by ring wrap */
	uint64_t lost_insns;
	uint64_t insn_total;      /* recorded, lost ones included */
	/* Single steps whose trap the machine lost: repaired from the
	 * code, or left as gaps (ptrace backend). */
	uint64_t step_repairs, step_gaps;
	bool exited;
	/* --whole: the older history is on disk here (collect/spill.h) and
	 * trace holds the newest; the bundle joins them. NULL otherwise. */
	struct hwt_sw_spill *spill;
};

/* An executable file mapping seen while the program ran. */
struct hwt_collect_module {
	const char *path;
	uint64_t load_address;    /* start of the mapping of file offset 0 */
	const char *build_id;     /* hex, or NULL */
	/* The recorder's own code that the program runs (Valgrind's signal
	 * return trampoline): needed to decode the history, but no module
	 * of the program's, so not in a debugger's library list. */
	bool recorder;
	pid_t pid;                /* a followed child's pid; 0: the program */
	uint32_t exec;            /* mapped by the program of that exec */
};

struct hwt_collect_end {
	enum hwt_stop_reason reason; /* EXITED, SIGNALED or FAULT */
	int status;               /* exit status when EXITED */
	int signal;               /* SIGNALED / FAULT */
	pid_t tid;                /* FAULT: the faulting thread */
	uint64_t pc;              /* FAULT: the faulting instruction */
	/* EXITED: the backend kept the program's state as it began to
	 * exit; hwt_collect_write_core writes it (the valgrind backend). */
	bool exit_core;
};

/* What this machine's debug facilities fail to do, found by trying each
 * once on a child (debug registers that never fire; single steps that
 * stop late after an instruction the hypervisor emulates), each with how
 * the collectors work around it. Up to max sentences (static strings)
 * into notes; their number. Costs a few milliseconds the first time. */
HWT_API size_t hwt_collect_machine_notes(const char **notes, size_t max);

/* Names of registered backends, for --help and errors. */
HWT_API size_t hwt_collect_backends(const char *const **names);
/* 0 when backend name (or its short alias) can record on this machine;
 * else a negative errno, with err saying what is missing. */
HWT_API int hwt_collect_backend_available(const char *name, struct hwt_err *err);

/* Start argv[0] (searched in PATH) stopped at its first instruction.
 * opts may be NULL for the defaults. ptrace answers only the thread that
 * attached, so run, write_core and finish must be called from the thread
 * that called launch (they fail with -EPERM otherwise), and close should
 * be. That thread's waits use waitpid(-1, __WALL | __WNOTHREAD): it must
 * not wait for children of its own while a collector runs. The program
 * is killed when that thread ends, however it ends (SIGKILL included):
 * no program outlives its recorder. */
HWT_API int hwt_collect_launch(const struct hwt_collect_opts *opts,
			       char *const argv[], struct hwt_collector **out,
			       struct hwt_err *err);
HWT_API pid_t hwt_collect_pid(const struct hwt_collector *c);
/* The name of the backend recording (the default's choice included). */
HWT_API const char *hwt_collect_backend_name(const struct hwt_collector *c);
/* Why backends the automatic choice (no opts.backend) tried before the
 * one recording could not be used, where that is something to fix (a
 * Valgrind tool not built, a program not installed; not a device this
 * machine lacks, ENODEV): "the NAME backend is not used: WHY", several
 * joined by "; ". NULL when none. Valid until close. */
HWT_API const char *hwt_collect_passed_over(const struct hwt_collector *c);

/* What a backend can do besides recording a program it launched. */
enum hwt_collect_cap {
	/* stop by stop under hwt_collect_resume (a debugger server) */
	HWT_COLLECT_CAP_LIVE = 1u << 0,
	/* hwt_collect_attach to a running process */
	HWT_COLLECT_CAP_ATTACH = 1u << 1,
	/* block_step: one record per taken branch */
	HWT_COLLECT_CAP_BLOCK_STEP = 1u << 2,
	/* breakpoints and watches exact and without modifying code (a
	 * watch fires on a changed value only, a breakpoint is checked at
	 * every instruction), the default for live control */
	HWT_COLLECT_CAP_EXACT_WATCH = 1u << 3,
	/* a core file at a fatal signal (hwt_collect_write_core) */
	HWT_COLLECT_CAP_CORE = 1u << 4,
	/* its trace can be written into a bundle that replay reads */
	HWT_COLLECT_CAP_BUNDLE = 1u << 5,
	/* watchpoints under live control (hwt_resume_opts.watches) */
	HWT_COLLECT_CAP_WATCH = 1u << 6,
	/* follow_fork: forked children recorded too */
	HWT_COLLECT_CAP_FOLLOW_FORK = 1u << 7,
	/* defer_recording: untraced until hwt_collect_record_start */
	HWT_COLLECT_CAP_DEFER = 1u << 8,
	/* Keeps the whole history on disk (opts.whole_bound). */
	HWT_COLLECT_CAP_WHOLE = 1u << 9,
};
/* HWT_COLLECT_CAP_* of the backend recording. */
HWT_API unsigned hwt_collect_backend_caps(const struct hwt_collector *c);
/* Why a recording that succeeded is incomplete (the recorder stopped
 * before the program ended, a bound was reached), or NULL. Valid until
 * close. */
HWT_API const char *hwt_collect_warning(const struct hwt_collector *c);

/* Record until the process exits or stops on a fatal signal (a signal
 * whose action is to terminate and that the program does not catch).
 * A fatal stop leaves the process stopped at the faulting instruction so a
 * core can be written; hwt_collect_finish then lets the signal kill it. */
HWT_API int hwt_collect_run(struct hwt_collector *c, struct hwt_collect_end *end,
			    struct hwt_err *err);

/* Write an ELF core of the stopped process (only after a FAULT end). */
HWT_API int hwt_collect_write_core(struct hwt_collector *c, const char *path,
				   struct hwt_err *err);

/* After a FAULT end: deliver the signal and reap; *end becomes SIGNALED. */
HWT_API int hwt_collect_finish(struct hwt_collector *c, struct hwt_collect_end *end,
			       struct hwt_err *err);

/* Every thread's trace, the first one the program's initial thread. After
 * hwt_collect_run: the whole recording, valid until close. Under live
 * control (backends that have it): a snapshot of the history so far,
 * valid until the next resume or the next call of this function, which
 * replaces it; empty on other backends until run returned. Past
 * HWT_BUNDLE_MAX_THREADS threads in a program's life the oldest exited
 * ones are dropped. When a thread other than the leader calls execve it
 * takes over the leader's tid, and the old leader's history is dropped. */
HWT_API size_t hwt_collect_threads(struct hwt_collector *c,
				   const struct hwt_collect_thread **threads);
/* Every executable file mapping seen since launch (dlclose'd and
 * pre-exec ones included), one per path and load address, at most
 * HWT_BUNDLE_MAX_MODULES. Valid until the next run call or close. */
HWT_API size_t hwt_collect_modules(struct hwt_collector *c,
				   const struct hwt_collect_module **modules);
HWT_API struct hwt_cpu_info hwt_collect_cpu_info(void);

/* ---- Live control, for debugger servers ---------------------------------
 *
 * A collector from hwt_collect_launch (stopped at the program's first
 * instruction) or hwt_collect_attach can be driven stop by stop instead of
 * by hwt_collect_run: the debugger resumes it with hwt_collect_resume,
 * which records while the threads run and returns at the next event with
 * every thread stopped (all-stop). Between resumes, registers and memory
 * of any stopped thread can be read and written, and hwt_collect_threads /
 * hwt_collect_modules return a snapshot of the recording so far, each
 * thread's history ending at the instruction it is stopped at (not yet
 * executed); with such backends this holds right after launch or attach
 * too (a history of one instruction). The snapshot is valid until the
 * next resume, threads call or close. Mixing hwt_collect_run and
 * hwt_collect_resume on one collector is refused. Same calling-thread
 * rule as for run. Threads created during a resume run on when the
 * default action (tid 0) is CONT, else they stay stopped.
 *
 * Events of several threads are never lost: the first one found ends the
 * resume, the others stay queued on their threads and a later resume
 * whose actions let such a thread go returns its event at once (a queued
 * BREAKPOINT is dropped when its address is no longer a breakpoint, a
 * queued STEPPED when the thread is not stepped again: its instruction
 * is in the history either way). Signals and thread exits are always
 * reported, and so are thread births when asked for (a queued one is
 * returned even if the thread stays stopped). A thread stopped while blocked in a system call has the
 * syscall instruction as the last entry of its history: the call is
 * restarted when the thread goes on. */

#define HWT_RESUME_MAX_ACTIONS 4097u      /* one per thread + default */
#define HWT_RESUME_MAX_BREAKPOINTS 4096u
#define HWT_RESUME_MAX_WATCHES 64u
#define HWT_COLLECT_MAX_AUXV (64u << 10)
#define HWT_COLLECT_MAX_REGSET (64u << 10)  /* bytes per regset call */
#define HWT_COLLECT_MAX_MEM_XFER (1u << 20) /* bytes per memory call */

/* Attach to every thread of a running process (ptrace attach rules) and
 * record from now on; the process is left stopped. Unlike a launched
 * program, it is not killed if the tracer itself dies. The ptrace backend
 * only (the default); others refuse with -EOPNOTSUPP. */
HWT_API int hwt_collect_attach(const struct hwt_collect_opts *opts, pid_t pid,
			       struct hwt_collector **out, struct hwt_err *err);

enum hwt_resume_kind {
	HWT_RESUME_STOP = 0,      /* stay stopped */
	HWT_RESUME_STEP,          /* execute one instruction, then stop */
	HWT_RESUME_CONT,          /* run until an event */
};

struct hwt_resume_action {
	pid_t tid;                /* 0: every thread no other action names */
	enum hwt_resume_kind kind;
	int signal;               /* delivered on resume; 0: none (with
				   * tid 0: to every thread it covers) */
};

enum hwt_watch_kind { HWT_WATCH_WRITE = 2, HWT_WATCH_READ = 3,
		      HWT_WATCH_ACCESS = 4 };   /* GDB's Z2, Z3, Z4 */

struct hwt_watch {
	uint64_t addr;
	uint32_t len;             /* 1, 2, 4 or 8, aligned */
	enum hwt_watch_kind kind;
};

/* Options; may grow. Declare with HWT_OPTS(hwt_resume_opts, o, ...). */
struct hwt_resume_opts {
	size_t sz;
	const struct hwt_resume_action *actions;
	size_t nactions;
	/* Stop any thread about to execute an instruction at one of these
	 * addresses (before it executes it). A thread resumed from such an
	 * address executes it first. ptrace: checked at every step, no code
	 * is modified. module, perf-*: an int3 byte is written while the
	 * threads run and taken out at every stop (memory reads and writes
	 * between resumes see the program's own code); the history still
	 * ends at the breakpoint address. A child forked meanwhile inherits
	 * the bytes (docs/backends.md). */
	const uint64_t *breakpoints;
	size_t nbreakpoints;
	const struct hwt_watch *watches;
	size_t nwatches;
	/* Watches are reported after the accessing instruction, like GDB.
	 * ptrace: checked after every instruction of every thread; WRITE
	 * compares the watched bytes (exact, any number of watches). READ
	 * and ACCESS use the x86 debug registers: at most 4, accesses by
	 * system calls unseen, and READ reports only accesses that left the
	 * value unchanged; -EOPNOTSUPP where debug registers cannot be set.
	 * module, perf-*: every kind uses the debug registers (at most 4 in
	 * all, -ENOSPC beyond), and WRITE reports every write, one that
	 * stores the same value too. */
	/* When this fd becomes readable the process is stopped with
	 * HWT_EVENT_INTERRUPTED (GDB's ^C), also while every thread is
	 * blocked in a system call (which is then restarted); 0 or -1:
	 * none (standard input is never the interrupt). Nothing is read:
	 * drain it before the next resume. */
	int interrupt_fd;
	/* Report a thread born during a resume as HWT_EVENT_THREAD_CREATED
	 * at its first instruction (GDB's QThreadEvents); false: it only
	 * shows up in hwt_collect_live_tids. */
	bool report_thread_created;
	/* Stop the process as it starts to end (exit_group, or the last
	 * thread's exit) with HWT_EVENT_EXITING, memory and registers still
	 * there, so a debugger can look back over the whole history first;
	 * the next resume lets it end. ptrace only; others ignore it. */
	bool stop_before_exit;
};

enum hwt_event_kind {
	HWT_EVENT_STEPPED,         /* a STEP action completed */
	HWT_EVENT_BREAKPOINT,      /* pc is at one of the breakpoints */
	HWT_EVENT_WATCHPOINT,      /* data_addr was written/read */
	HWT_EVENT_SIGNAL,          /* signal arrived, not yet delivered: pass
				   * it in the next resume's action or drop
				   * it */
	HWT_EVENT_INTERRUPTED,     /* interrupt_fd became readable */
	HWT_EVENT_THREAD_EXITED,   /* tid exited (status); others remain */
	HWT_EVENT_THREAD_CREATED,  /* tid was born (report_thread_created):
				   * stopped before its first instruction,
				   * pc */
	HWT_EVENT_EXITED,          /* process exited with status */
	HWT_EVENT_KILLED,          /* process killed by signal */
	HWT_EVENT_EXITING,         /* stop_before_exit: tid's exit system
				   * call ends the process; it stands after
				   * the syscall instruction */
};

struct hwt_collect_event {
	enum hwt_event_kind kind;
	pid_t tid;                /* thread the event is about */
	int signal;               /* SIGNAL, KILLED */
	int status;               /* EXITED, THREAD_EXITED */
	uint64_t pc;              /* where tid stopped (0 when it is gone) */
	uint64_t data_addr;       /* WATCHPOINT */
	enum hwt_watch_kind watch_kind; /* WATCHPOINT: which watch */
};

HWT_API int hwt_collect_resume(struct hwt_collector *c,
			       const struct hwt_resume_opts *opts,
			       struct hwt_collect_event *event, struct hwt_err *err);

/* A register set of thread tid before it executed instruction insn of
 * its history (0-based, the numbering of hwt_collect_thread.insn_total),
 * as a debugger moving back through the history needs it: nt_type
 * NT_PRSTATUS (struct user_regs_struct) or NT_PRFPREG (the x87/SSE state,
 * FXSAVE), len its size. The ptrace backend keeps both for about the last
 * quarter-million instructions of each thread. -ENOENT when not kept,
 * -EOPNOTSUPP on backends that keep none, -EINVAL for another set. */
HWT_API int hwt_collect_regs_at(struct hwt_collector *c, pid_t tid, uint64_t insn,
				int nt_type, void *buf, size_t len,
				struct hwt_err *err);
/* Memory as it was before thread tid executed instruction insn (the
 * numbering of hwt_collect_regs_at): the ptrace backend under live
 * control keeps the old bytes of every store and of what known system
 * calls write. Returns how many bytes from addr are known there (0:
 * none: never today's bytes shown as the past's), or a negative errno:
 * -EOPNOTSUPP on backends that keep none. */
HWT_API int hwt_collect_mem_at(struct hwt_collector *c, pid_t tid, uint64_t insn,
			       uint64_t addr, void *buf, size_t len,
			       struct hwt_err *err);
/* Who wrote the range q watches in a motion of thread q->tid (hwt-past.h:
 * instruction indexes in hwt_collect_regs_at's numbering): the nearest
 * recorded instruction, of any thread, that changed those bytes, up to
 * where the motion stopped anyway (q->until). 1 when found (*out), 0
 * when none can be told (the log's start, the bound, or bytes that
 * cannot be known come first), or a negative errno (-EOPNOTSUPP: the
 * backend keeps no memory). */
HWT_API int hwt_collect_find_write(struct hwt_collector *c,
				   const struct hwt_write_query *q,
				   struct hwt_write_found *out, struct hwt_err *err);

/* Thread tid's instruction index (hwt_collect_regs_at's numbering) at the
 * moment before step, a store's place in the order of all threads' steps
 * (hwt_write_found.step): its first instruction taken at or after it, or
 * one past its newest. 0, or a negative errno (-EOPNOTSUPP: the backend
 * keeps no such order; -ENOENT: no such thread). */
HWT_API int hwt_collect_index_at_step(struct hwt_collector *c, pid_t tid,
				      uint64_t step, uint64_t *index,
				      struct hwt_err *err);

/* Start recording a program launched with defer_recording, from where
 * each thread stands now (between resumes; new threads from their first
 * instruction): 0, also when it records already. */
HWT_API int hwt_collect_record_start(struct hwt_collector *c, struct hwt_err *err);
/* Whether the program is being recorded (false only while deferred). */
HWT_API bool hwt_collect_recording(const struct hwt_collector *c);
/* Whether registers and memory of the past are kept under live control
 * (hwt_collect_regs_at, _mem_at, _find_write answer). */
HWT_API bool hwt_collect_keeps_past(const struct hwt_collector *c);

/* The program's auxiliary vector (type, value pairs up to AT_NULL) into
 * *out (the caller frees it): the one its backend made (Valgrind's
 * synthetic cpu gives the program its own), else /proc/PID/auxv. */
HWT_API int hwt_collect_auxv(struct hwt_collector *c, uint8_t **out, size_t *len,
			     struct hwt_err *err);

/* Threads alive now, as tids; returns how many (may exceed cap). */
HWT_API size_t hwt_collect_live_tids(struct hwt_collector *c, pid_t *tids,
				     size_t cap);

/* Read (write=false) or write a register set of a stopped thread, as
 * PTRACE_GETREGSET/SETREGSET: NT_PRSTATUS (struct user_regs_struct),
 * NT_PRFPREG (FXSAVE), NT_X86_XSTATE. *len is the buffer size in and the
 * bytes transferred out. */
HWT_API int hwt_collect_regset(struct hwt_collector *c, pid_t tid, int nt_type,
			       void *buf, size_t *len, bool write,
			       struct hwt_err *err);

/* Memory of the stopped process; short counts at unmapped addresses.
 * Writes reach read-only (code) pages too, like a debugger's. Returns
 * the bytes transferred or a negative errno. */
HWT_API ssize_t hwt_collect_mem_read(struct hwt_collector *c, uint64_t addr,
				     void *buf, size_t len);
HWT_API ssize_t hwt_collect_mem_write(struct hwt_collector *c, uint64_t addr,
				      const void *buf, size_t len);

/* Let the process go on untraced (GDB's detach): debug registers set
 * for watches are cleared, signals held for its threads are delivered,
 * its cpu affinity is restored (module: its threads are detached from
 * hwtrace.ko; perf-*: their events closed; the history so far is kept). A launched program stays the caller's
 * child: reap it with waitpid on hwt_collect_pid. The collector is
 * then ended: threads and modules stay readable until close. */
HWT_API int hwt_collect_detach(struct hwt_collector *c, struct hwt_err *err);

/* Stage a recording into a bundle being written (hwt_bundle_stage_begin
 * gave staging): each thread's trace as threads/TID.SUFFIX, and with
 * copy_modules the module files under modules/ (one gone since it was
 * mapped keeps its path only). threads NULL: hwt_collect_threads(c).
 * Sets b's type (by trace format; ETM is refused for now), cpu, pid,
 * triple, threads and modules; the caller sets the stop and commits, then
 * frees with hwt_collect_stage_free. A caller that staged a core of where
 * the history ends sets b->core first: the registers and memory of the
 * past the backend keeps are then staged too (b->data_history), told
 * back from that core. */
HWT_API int hwt_collect_stage(const char *staging, struct hwt_collector *c,
			      const struct hwt_collect_thread *threads,
			      size_t nthreads, bool copy_modules,
			      struct hwt_bundle *b, struct hwt_err *err);
HWT_API void hwt_collect_stage_free(struct hwt_bundle *b);

/* Kills a still-running process and frees everything. */
HWT_API void hwt_collect_close(struct hwt_collector *c);

#ifdef __cplusplus
}
#endif
#endif
