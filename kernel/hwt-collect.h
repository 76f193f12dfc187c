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

#ifdef __cplusplus
extern "C" {
#endif

#define HWT_COLLECT_DEFAULT_BUFFER (4u << 20)
#define HWT_COLLECT_MIN_BUFFER (64u << 10)
#define HWT_COLLECT_MAX_BUFFER (1ull << 34)

/* Options; may grow. Set sz = sizeof(struct hwt_collect_opts). */
struct hwt_collect_opts {
	size_t sz;
	const char *backend;      /* "ptrace"; NULL picks the best available */
	uint64_t buffer_size;     /* per-thread ring bytes; 0 = default */
	int cpu;                  /* cpu to pin tracer and tracee to; -1 = the
				   * cpu the tracer runs on now */
	bool no_pin;              /* do not pin at all */
};

struct hwt_collector;

/* One thread's trace, oldest chunk first. */
struct hwt_collect_thread {
	pid_t tid;
	const uint8_t *trace;     /* hwt-sw chunks */
	size_t trace_size;
	uint64_t lost_bytes;      /* dropped by ring wrap */
	uint64_t lost_insns;
	uint64_t insn_total;      /* recorded, lost ones included */
	bool exited;
};

/* An executable file mapping seen while the program ran. */
struct hwt_collect_module {
	const char *path;
	uint64_t load_address;    /* start of the mapping of file offset 0 */
	const char *build_id;     /* hex, or NULL */
};

struct hwt_collect_end {
	enum hwt_stop_reason reason; /* EXITED, SIGNALED or FAULT */
	int status;               /* exit status when EXITED */
	int signal;               /* SIGNALED / FAULT */
	pid_t tid;                /* FAULT: the faulting thread */
	uint64_t pc;              /* FAULT: the faulting instruction */
};

/* Names of registered backends, for --help and errors. */
size_t hwt_collect_backends(const char *const **names);

/* Start argv[0] (searched in PATH) stopped at its first instruction.
 * opts may be NULL for the defaults. ptrace answers only the thread that
 * attached, so run, write_core and finish must be called from the thread
 * that called launch (they fail with -EPERM otherwise), and close should
 * be. That thread's waits use waitpid(-1, __WALL | __WNOTHREAD): it must
 * not wait for children of its own while a collector runs. */
int hwt_collect_launch(const struct hwt_collect_opts *opts,
		       char *const argv[], struct hwt_collector **out,
		       struct hwt_err *err);
pid_t hwt_collect_pid(const struct hwt_collector *c);

/* Record until the process exits or stops on a fatal signal (a signal
 * whose action is to terminate and that the program does not catch).
 * A fatal stop leaves the process stopped at the faulting instruction so a
 * core can be written; hwt_collect_finish then lets the signal kill it. */
int hwt_collect_run(struct hwt_collector *c, struct hwt_collect_end *end,
		    struct hwt_err *err);

/* Write an ELF core of the stopped process (only after a FAULT end). */
int hwt_collect_write_core(struct hwt_collector *c, const char *path,
			   struct hwt_err *err);

/* After a FAULT end: deliver the signal and reap; *end becomes SIGNALED. */
int hwt_collect_finish(struct hwt_collector *c, struct hwt_collect_end *end,
		       struct hwt_err *err);

/* Every thread's trace, the first one the program's initial thread; empty
 * until hwt_collect_run returned, valid until close. Past
 * HWT_BUNDLE_MAX_THREADS threads in a program's life the oldest exited
 * ones are dropped. When a thread other than the leader calls execve it
 * takes over the leader's tid, and the old leader's history is dropped. */
size_t hwt_collect_threads(struct hwt_collector *c,
			   const struct hwt_collect_thread **threads);
/* Every executable file mapping seen since launch (dlclose'd and
 * pre-exec ones included), one per path and load address, at most
 * HWT_BUNDLE_MAX_MODULES. Valid until the next run call or close. */
size_t hwt_collect_modules(struct hwt_collector *c,
			   const struct hwt_collect_module **modules);
struct hwt_cpu_info hwt_collect_cpu_info(void);

/* Kills a still-running process and frees everything. */
void hwt_collect_close(struct hwt_collector *c);

#ifdef __cplusplus
}
#endif
#endif
