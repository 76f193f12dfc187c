/* seize.h - a launched program followed with PTRACE_SEIZE while a
 * recorder records it.
 *
 * The backends that record without stepping (module: hwtrace.ko; perf:
 * trace hardware) need the same control around their recording: fork the
 * program held before execvp, follow it and every thread it creates
 * (exec, clone and exit stops, never single-steps), let the recorder
 * attach each new thread before its first instruction and look at a
 * thread's address space while it is exiting, decide from /proc
 * dispositions whether a signal is fatal, and on such a fault hold every
 * thread (PTRACE_INTERRUPT) so an ELF core can be written before finish
 * lets the signal take effect. This layer does that; what is recorded and
 * how is the recorder's, through struct hwt_seize_ops.
 *
 * Waits use waitpid(-1, __WALL | __WNOTHREAD): the thread that launched
 * must make every call and must not wait for children of its own.
 */
#ifndef HWT_SEIZE_H
#define HWT_SEIZE_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "held.h"
#include "hwt-collect.h"

/* What a recorder does at the program's events. ctx is the recorder's;
 * a negative return ends the run with that error (err filled in). */
struct hwt_seize_ops {
	/* Record thread tid from its first instruction. It has not run yet:
	 * first is the program's initial thread, still held before its
	 * execve; any other is a new thread stopped before it runs. */
	int (*attach)(void *ctx, pid_t tid, bool first, struct hwt_err *err);
	/* tid completed an execve (the new image is mapped); may be NULL. */
	int (*exec)(void *ctx, pid_t tid, struct hwt_err *err);
	/* tid is exiting: it runs no more user code and the address space
	 * is still there; may be NULL. */
	int (*exiting)(void *ctx, pid_t tid, struct hwt_err *err);
	/* Non-NULL asks for syscall stops (PTRACE_SYSCALL): called at the
	 * entry of a call that may unmap code (munmap, mremap, mmap with
	 * MAP_FIXED), before the mappings change. */
	int (*maps_change)(void *ctx, pid_t tid, struct hwt_err *err);
	/* Descriptors to watch while the program runs (e.g. perf wakeups),
	 * asked anew before each poll; the array stays the recorder's. NULL
	 * or none: ptrace stops are waited for without polling. */
	size_t (*pollfds)(void *ctx, struct pollfd **fds);
	/* Some of those descriptors have revents set; required with
	 * pollfds. */
	int (*readable)(void *ctx, struct hwt_err *err);
};

struct hwt_seize_thread {
	pid_t tid;
	bool attached;            /* the recorder was told (ops->attach) */
	bool gone;                /* reaped */
	bool stopped;             /* held in a ptrace-stop */
	int pending_signal;       /* to deliver when it is let go */
};

struct hwt_seize {
	const struct hwt_seize_ops *ops;
	void *ctx;
	const char *prog;
	struct hwt_held held;     /* the program, until it runs */
	pid_t pid;                /* -1 before launch */
	bool reaped;              /* the process is gone */
	bool faulted;             /* run ended held at a fatal signal */
	struct hwt_seize_thread *threads;   /* every thread seen */
	size_t nthreads, alloc;
	pid_t fault_tid;
	siginfo_t fault_siginfo;
	struct hwt_collect_end end;   /* valid once run returned 0 */
};

/* Before anything can fail: hwt_seize_close is then safe. */
void hwt_seize_init(struct hwt_seize *s, const struct hwt_seize_ops *ops,
		    void *ctx, const char *prog);
/* Fork argv[0] held, seize it and attach its first thread. */
int hwt_seize_launch(struct hwt_seize *s, char *const argv[],
		     struct hwt_err *err);
/* Release the program and follow it until it is gone (s->reaped) or
 * stopped on a fatal signal with every other thread held (s->faulted);
 * s->end says which. A failed execvp is an error naming the program. */
int hwt_seize_run(struct hwt_seize *s, struct hwt_err *err);
/* After a fault: an ELF core of the held process. */
int hwt_seize_write_core(struct hwt_seize *s, const char *path,
			 struct hwt_err *err);
/* After a fault: deliver the signal (and those held for other threads)
 * and reap; s->end becomes how the process ended. */
int hwt_seize_finish(struct hwt_seize *s, struct hwt_err *err);
/* Whether tid has exited (it, or the whole process, was reaped). */
bool hwt_seize_exited(const struct hwt_seize *s, pid_t tid);
/* Kill a program still there, reap it and close the descriptors. */
void hwt_seize_close(struct hwt_seize *s);

#endif
