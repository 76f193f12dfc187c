/* tracer.h - state shared by the files of the ptrace backend.
 *
 * launch.c   fork, exec and attach; cpu pinning
 * run.c      the single-step loop, signals, faults, finishing
 * threads.c  the table of traced threads and their rings
 * maps.c     /proc/PID/maps and the executable-module sideband
 * procfs.c   bounded reads of /proc files, signal dispositions
 * coredump.c ELF core of a faulted process
 * backend.c  the ops table tying these to collect.c
 */
#ifndef HWT_PTRACE_TRACER_H
#define HWT_PTRACE_TRACER_H

#if !defined(__x86_64__)
#error "the ptrace backend records x86-64 programs only"
#endif

#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../backend.h"
#include "ring.h"

enum pt_thread_state {
	PT_RUNNING,     /* resumed; its next stop has not been collected */
	PT_STOPPED,     /* in a ptrace-stop that we hold */
	PT_LISTENING,   /* in group-stop, released with PTRACE_LISTEN */
	PT_GONE,        /* exited and reaped */
};

struct pt_thread {
	pid_t tid;
	enum pt_thread_state state;
	/* A caught signal was injected: the next step stop is the first
	 * instruction of its handler, reached asynchronously. */
	bool handler_entry_next;
	bool exiting;           /* reported PTRACE_EVENT_EXIT */
	int pending_signal;     /* held back while stopped for a fault */
	struct hwt_ring ring;
};

struct pt_collector {
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
	struct pt_thread **threads;
	size_t nthreads, threads_alloc;
	int32_t *tid_index;         /* open-addressing tid -> threads[] for
				     * threads not PT_GONE; -1 is empty */
	struct pt_thread *last;     /* thread of the previous stop */

	struct pt_thread *fault_thread;
	siginfo_t fault_siginfo;

	/* Union of executable file mappings seen (sideband), at most
	 * HWT_BUNDLE_MAX_MODULES. */
	struct hwt_collect_module *modules;
	size_t nmodules, modules_alloc;

	/* Filled when recording ends (rings sealed). */
	struct hwt_collect_thread *out_threads;
};

static inline struct pt_collector *pt_of(struct hwt_collector *c)
{
	return (struct pt_collector *)c;
}

/* launch.c */
int hwt_pt_launch(const struct hwt_collect_opts *opts, char *const argv[],
		  struct hwt_collector **out, struct hwt_err *err);
void hwt_pt_unpin(struct pt_collector *c);

/* run.c */
int hwt_pt_run(struct hwt_collector *base, struct hwt_err *err);
int hwt_pt_finish(struct hwt_collector *base, struct hwt_err *err);
/* Kill whatever still runs and reap it; the state becomes ENDED. */
void hwt_pt_kill_and_reap(struct pt_collector *c);
int hwt_pt_read_pc(pid_t tid, uint64_t *pc);

/* threads.c */
int hwt_pt_threads_init(struct pt_collector *c, struct hwt_err *err);
struct pt_thread *hwt_pt_thread_find(struct pt_collector *c, pid_t tid);
/* A new thread, not started. Fails when the table is full of live
 * threads or memory ran out. */
int hwt_pt_thread_add(struct pt_collector *c, pid_t tid,
		      struct pt_thread **out, struct hwt_err *err);
void hwt_pt_thread_gone(struct pt_collector *c, struct pt_thread *t);
/* The process is gone: so is every thread. */
void hwt_pt_threads_all_gone(struct pt_collector *c);
/* Drop a thread and its history. */
void hwt_pt_thread_forget(struct pt_collector *c, struct pt_thread *t);
/* After exec by a non-leader thread: it takes over the leader's tid. */
void hwt_pt_thread_retid(struct pt_collector *c, struct pt_thread *t,
			 pid_t tid);
size_t hwt_pt_threads_live(const struct pt_collector *c);
/* Seal every ring and build out_threads. */
int hwt_pt_threads_seal(struct pt_collector *c, struct hwt_err *err);
size_t hwt_pt_threads_get(struct hwt_collector *base,
			  const struct hwt_collect_thread **threads);
void hwt_pt_threads_free(struct pt_collector *c);

/* maps.c */
struct hwt_map {
	uint64_t start, end, offset, inode;
	bool readable, writable, executable;
	const char *path;         /* NULL when anonymous; "[stack]" etc. */
};

struct hwt_maps {
	struct hwt_map *v;
	size_t n;
	char *text;               /* the file; paths point into it */
};

int hwt_maps_read(pid_t tid, struct hwt_maps *maps, struct hwt_err *err);
void hwt_maps_free(struct hwt_maps *maps);
/* Add the executable file mappings of tid's process to the module union.
 * Fails only for lack of memory; an unreadable maps file (the thread is
 * gone) changes nothing. */
int hwt_pt_modules_refresh(struct pt_collector *c, pid_t tid,
			   struct hwt_err *err);
size_t hwt_pt_modules_get(struct hwt_collector *base,
			  const struct hwt_collect_module **modules);
void hwt_pt_modules_free(struct pt_collector *c);

/* procfs.c */
/* Read a /proc file (their sizes are not known up front) refusing more
 * than max bytes; NUL-terminated. Caller frees *text. */
int hwt_proc_read(const char *path, size_t max, char **text, size_t *len,
		  struct hwt_err *err);

enum hwt_sig_action {
	HWT_SIG_CAUGHT,          /* a handler runs */
	HWT_SIG_IGNORED,         /* explicitly, or by default */
	HWT_SIG_STOPS,           /* default action stops the process */
	HWT_SIG_KILLS,           /* default action terminates (maybe core) */
};
/* What delivering sig to tid would do now. */
int hwt_proc_sig_action(pid_t tid, int sig, enum hwt_sig_action *action,
			struct hwt_err *err);

/* coredump.c */
int hwt_pt_write_core(struct hwt_collector *base, const char *path,
		      struct hwt_err *err);

#endif
