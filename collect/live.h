/* SPDX-License-Identifier: BSD-2-Clause */
/* live.h - the rules of live control (hwt_collect_resume), once for
 * every backend.
 *
 * All-stop: a resume gives each thread an action; the threads to move
 * run until the first event, which is queued on its thread; every other
 * thread is then brought to a stop, events found meanwhile are queued on
 * their threads too, and the first one is reported. Queued events are
 * reported by later resumes before anything runs again, unless the
 * thread's new action makes them stale (hwt-collect.h). A thread born
 * during a resume gets the action "new threads" get; the process's end
 * is reported after the events of threads that died with it.
 *
 * A backend embeds struct hwt_live and, in each thread, struct
 * hwt_live_thread; it supplies the mechanisms (how threads run, step and
 * stop) in struct hwt_live_ops, and its loop reports what it sees with
 * hwt_live_queue and friends. The rules call the mechanisms, never the
 * other way round.
 */
#ifndef HWT_LIVE_H
#define HWT_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hwt-collect.h"

/* What the rules keep of each thread, inside the backend's thread. */
struct hwt_live_thread {
	enum hwt_resume_kind kind;   /* this resume's action */
	bool has_event;              /* event is queued, not reported */
	struct hwt_collect_event event;
};

/* The ops' verdicts beside 0 and negative errnos. */
#define HWT_LIVE_ENDED 1             /* the process is gone */

struct hwt_live_ops {
	/* The threads: how many, and the i-th one's live part, tid and
	 * whether it is gone (reaped). Threads may move between calls. */
	size_t (*nthreads)(void *ctx);
	struct hwt_live_thread *(*thread)(void *ctx, size_t i, pid_t *tid,
					  bool *gone);
	int (*read_pc)(void *ctx, pid_t tid, uint64_t *pc);
	/* Whether pc is one of this resume's breakpoints. */
	bool (*is_breakpoint)(void *ctx, uint64_t pc);
	/* Take this resume's breakpoints and watches (opts checked). */
	int (*prepare)(void *ctx, const struct hwt_resume_opts *o,
		       struct hwt_err *err);
	/* Start the threads whose action moves them (each thread's action
	 * is in its hwt_live_thread) and run until an event is queued or
	 * interrupt_fd became readable (then set interrupted): 0,
	 * HWT_LIVE_ENDED or -errno. */
	int (*run)(void *ctx, const struct hwt_resume_opts *o,
		   struct hwt_err *err);
	/* Bring every thread still running to a stop (the rules are
	 * stopping: no thread may go on but to report a stop it owes):
	 * 0, HWT_LIVE_ENDED or -errno. */
	int (*stop_all)(void *ctx, struct hwt_err *err);
	/* After each resume that got past prepare: give back what
	 * prepare and run took (breakpoint bytes, descriptors). */
	void (*release)(void *ctx, bool ended);
	/* The process is gone: how it ended. */
	bool (*ended)(void *ctx, struct hwt_collect_end *end);
};

struct hwt_live {
	const struct hwt_live_ops *ops;
	void *ctx;
	pid_t pid;                   /* the process */
	/* An event is queued: the other threads are being stopped. */
	bool stopping;
	pid_t first_tid;             /* whose event ends this resume; 0 */
	/* The backend saw interrupt_fd readable during this resume's run:
	 * INTERRUPTED is reported if no event came first. */
	bool interrupted;
	pid_t last_tid;              /* whose event was reported last */
	enum hwt_resume_kind new_kind; /* action of threads born now */
	bool report_created;         /* report_thread_created */
};

/* Queue an event on t (tid) unless it holds one already: the first one
 * wins, except that a thread's death replaces whatever it held and that
 * anything that happened replaces an INTERRUPTED (which only says the
 * program was stopped: a step completed as the interrupt came must not
 * be lost behind it, or the step would be taken again). The first queued
 * while not stopping ends the resume. */
void hwt_live_queue(struct hwt_live *l, struct hwt_live_thread *t, pid_t tid,
		    enum hwt_event_kind kind, int sig, uint64_t data_addr);
/* t died (wait status): THREAD_EXITED with its status or signal. */
void hwt_live_died(struct hwt_live *l, struct hwt_live_thread *t, pid_t tid,
		   int status);
/* A thread born now: its action, and whether its birth is reported. */
void hwt_live_born(const struct hwt_live *l, struct hwt_live_thread *t,
		   bool *announce);
/* The action o gives thread tid: its own, else the default (tid 0), else
 * NULL. */
const struct hwt_resume_action *hwt_live_action(const struct hwt_resume_opts *o,
						pid_t tid);
/* Whether the rules hold a stopped thread t where it is (an event is
 * queued on it or being collected, or its action is to stay). */
bool hwt_live_holds(const struct hwt_live *l, const struct hwt_live_thread *t);
/* Whether an event ends the resume now. */
static inline bool hwt_live_has_first(const struct hwt_live *l)
{
	return l->first_tid != 0;
}

/* One resume (hwt_collect_resume's semantics, opts checked by
 * collect.c): 0 with *ev set, or -errno. ev is EXITED or KILLED once the
 * process is gone. */
int hwt_live_resume(struct hwt_live *l, const struct hwt_resume_opts *o,
		    struct hwt_collect_event *ev, struct hwt_err *err);

#endif
