/* SPDX-License-Identifier: BSD-2-Clause */
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
#include <stdint.h>
#include <sys/types.h>

#include "os/childwake.h"
#include "os/debugreg.h"
#include "os/held.h"
#include "hwt-collect.h"
#include "live.h"

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
	/* ---- live control (live.c) ---- */
	bool sig_stop;            /* at a signal-delivery stop: a signal can
				   * be passed by resuming with it */
	bool interrupt_pending;   /* PTRACE_INTERRUPT sent, its stop unseen */
	bool born;                /* created live, first stop not seen */
	bool announce;            /* report its birth (THREAD_CREATED) */
	bool stepping;            /* PTRACE_SINGLESTEP given, trap owed */
	int forward_signal;       /* sent with tgkill, deliver when seen */
	unsigned dr_gen;          /* debug registers set as of this gen */
	/* Soft watches (break.c): resumed for one step of its own, and
	 * the read or access watch that step touches (index + 1; 0: none). */
	bool soft_step;
	unsigned soft_hit;
	/* A step over an instruction whose trap is lost here runs to an
	 * int3 at guard_bp (0: none), over the byte guard_orig (break.c). */
	uint64_t guard_bp;
	uint8_t guard_orig;
	struct hwt_live_thread lt;    /* the rules' part (collect/live.h) */
};

/* Code and data breakpoints of a live resume (break.c): int3 bytes
 * written into the code while threads run, removed at every stop; watches
 * in the x86 debug registers DR0-DR3 of every thread. */
struct hwt_seize_bp {
	uint64_t addr;
	uint8_t orig;             /* the byte the int3 replaced */
	bool inserted;
};

struct hwt_seize_breaks {
	struct hwt_seize_bp *bp;  /* sorted by address, no duplicates */
	size_t nbp;
	struct hwt_dr_watches dr;
	/* The debug registers do not fire here (os/machine.c): threads are
	 * stepped while watches exist and each step is checked. */
	bool soft;
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
	/* ---- live control (live.c) ---- */
	bool live;                /* started with hwt_seize_live_start */
	bool detached;            /* let go untraced: not ours to kill */
	/* the rules (collect/live.c) over this layer's mechanisms */
	struct hwt_live rules;
	struct hwt_seize_breaks brk;
	struct hwt_child_wake wake;   /* stops wake the polling waits */
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
/* The descriptors a wait may watch beside the program's stops, at most. */
#define HWT_SEIZE_POLL_MAX 17
/* Wait for the next stop, or for one of fds (at most HWT_SEIZE_POLL_MAX)
 * to become ready, or for a while. A stop is noticed at once (SIGCHLD,
 * os/childwake.h); without that wakeup, the wait polls with *idle_ms,
 * doubled from 1 to 16 ms while nothing happens. Returns the stopped tid
 * (*status set), or 0 with fds' revents set (*ready: how many are set),
 * or a negative errno. */
pid_t hwt_seize_wait_or_poll(struct hwt_seize *s, int *status,
			     struct pollfd *fds, size_t n, int *idle_ms,
			     int *ready, struct hwt_err *err);
/* The first *idle_ms for hwt_seize_wait_or_poll. */
#define HWT_SEIZE_IDLE_MS 1
/* Whether tid has exited (it, or the whole process, was reaped). */
bool hwt_seize_exited(const struct hwt_seize *s, pid_t tid);
/* ---- live control (live.c, break.c) -------------------------
 * The program driven stop by stop, all-stop, with the semantics of
 * hwt_collect_resume (hwt-collect.h). Threads run with PTRACE_CONT (or
 * PTRACE_SYSCALL when the recorder asks for syscall stops) and step with
 * PTRACE_SINGLESTEP; the recorder keeps recording throughout. */

/* Release the launched program and stop it at its first instruction:
 * the syscall-exit stop of its execve (the recorder has seen the entry
 * by then); nothing once it is. Every later call below needs this
 * first: it is the backends' live_start (backend.h). */
int hwt_seize_live_start(struct hwt_seize *s, struct hwt_err *err);
/* A backend's launch: hwt_seize_launch, then for live control
 * hwt_seize_live_start (else the program stays held before its execve
 * until run); *pid is then the program's. */
int hwt_seize_start(struct hwt_seize *s, char *const argv[], bool live,
		    pid_t *pid, struct hwt_err *err);
/* One resume; opts checked by collect.c. On EXITED or KILLED s->reaped
 * is set and s->end says how. s->reaped can be set a resume earlier: a
 * thread reaped in the same wait as the process's end is reported first,
 * EXITED or KILLED at the next resume. */
int hwt_seize_resume(struct hwt_seize *s, const struct hwt_resume_opts *opts,
		     struct hwt_collect_event *ev, struct hwt_err *err);
size_t hwt_seize_live_tids(struct hwt_seize *s, pid_t *tids, size_t cap);
int hwt_seize_regset(struct hwt_seize *s, pid_t tid, int nt_type, void *buf,
		     size_t *len, bool write, struct hwt_err *err);
/* Whether ev is the last of a live session (EXITED or KILLED). */
static inline bool hwt_seize_event_ends(const struct hwt_collect_event *ev)
{
	return ev->kind == HWT_EVENT_EXITED || ev->kind == HWT_EVENT_KILLED;
}
/* Clear debug registers, deliver held signals, let every thread go and
 * end tracing (PTRACE_DETACH). The recorder detaches its own state. */
int hwt_seize_detach(struct hwt_seize *s, struct hwt_err *err);

/* seize.c's event handling, shared with live.c. */
struct hwt_seize_thread *hwt_seize_find(struct hwt_seize *s, pid_t tid);
struct hwt_seize_thread *hwt_seize_add(struct hwt_seize *s, pid_t tid,
				       struct hwt_err *err);
/* PTRACE_SYSCALL when the recorder wants syscall stops, else CONT. */
int hwt_seize_resume_request(const struct hwt_seize *s);
/* A syscall stop: the recorder's maps_change where it asks for it. */
int hwt_seize_on_syscall(struct hwt_seize *s, pid_t tid, struct hwt_err *err);
/* An exec stop: a thread that took over the leader's tid is gone. */
void hwt_seize_on_exec(struct hwt_seize *s, pid_t tid);
/* A death; true when it was the leader's (s->end is set). */
bool hwt_seize_on_death(struct hwt_seize *s, pid_t tid, int status);

/* break.c */
int hwt_seize_breaks_set(struct hwt_seize *s,
			 const struct hwt_resume_opts *o, struct hwt_err *err);
bool hwt_seize_is_breakpoint(const struct hwt_seize *s, uint64_t pc);
/* Write the int3 bytes (skipping unmapped addresses). */
void hwt_seize_breaks_insert(struct hwt_seize *s);
/* Put the original bytes back (not after an exec replaced the image:
 * then only forget them). */
void hwt_seize_breaks_remove(struct hwt_seize *s, bool image_gone);
/* Program the debug registers of a stopped thread if they changed. */
int hwt_seize_dr_apply(struct hwt_seize *s, struct hwt_seize_thread *t,
		       struct hwt_err *err);
/* The watch a debug-register trap (or soft step) of t hit and that is
 * reportable, or NULL; clears DR6. */
const struct hwt_watch *hwt_seize_dr_hit(struct hwt_seize *s,
					 struct hwt_seize_thread *t);
/* t is about to single-step: when the instruction at its pc is one
 * whose trap this machine loses (os/machine.c), an int3 goes after it
 * and true says to continue t instead. */
bool hwt_seize_step_guard(struct hwt_seize *s, struct hwt_seize_thread *t);
enum hwt_guard_stop {
	HWT_GUARD_NONE,      /* no guard involved */
	HWT_GUARD_STEPPED,   /* t reached its guard: its step is done */
	HWT_GUARD_OTHERS,    /* t ran into another thread's guard */
};
/* Any other stop of t: its guard goes (only forgotten when an exec or
 * its death took the image). */
void hwt_seize_guard_drop(struct hwt_seize *s, struct hwt_seize_thread *t,
			  bool image_gone);
/* At a SIGTRAP stop of t (siginfo si): take t's guard out, and say
 * whether the trap was a guard's (the pc is then put back on it). */
enum hwt_guard_stop hwt_seize_guard_stop(struct hwt_seize *s,
					 struct hwt_seize_thread *t,
					 const siginfo_t *si);

/* With soft watches: t is about to be resumed; the request to use
 * (a single step, its accesses found now) in place of req. */
int hwt_seize_soft_arm(struct hwt_seize *s, struct hwt_seize_thread *t,
		       int req);
void hwt_seize_breaks_free(struct hwt_seize *s);

/* The next stop or death of a traced thread (waitpid with __WALL, FLAGS
 * added: WNOHANG returns 0 when there is none); EINTR is retried. The tid,
 * or a negative errno, said as "waiting for PROG<WHAT>: ...". */
pid_t hwt_seize_wait(struct hwt_seize *s, int *status, int flags,
		     const char *what, struct hwt_err *err);

/* Hand the stopped threads over to another tracer in this thread (the
 * ptrace backend starting to record): free this layer's state without a
 * ptrace call; the process stays traced as it is. */
void hwt_seize_forget(struct hwt_seize *s);

/* Kill a program still there, reap it and close the descriptors. */
void hwt_seize_close(struct hwt_seize *s);

#endif
