/* SPDX-License-Identifier: BSD-2-Clause */
/* backend.h - what a recording backend provides to the collector API.
 *
 * collect.c owns the public functions: it checks the options and the call
 * order (run once, core and finish only after a fault) and dispatches
 * through a backend's ops table. A backend allocates its own state with a
 * struct hwt_collector as the first member and reports through it.
 */
#ifndef HWT_BACKEND_H
#define HWT_BACKEND_H

#include <sys/user.h>

#include "hwt-collect.h"

enum hwt_collector_state {
	HWT_COLLECTOR_LAUNCHED,   /* stopped at the first instruction */
	HWT_COLLECTOR_FAULTED,    /* stopped on a fatal signal */
	HWT_COLLECTOR_ENDED,      /* the process is gone */
};

struct hwt_backend;

struct hwt_collector {
	const struct hwt_backend *backend;
	pid_t pid;
	pid_t tracer_tid;         /* thread that launched: ptrace needs it */
	enum hwt_collector_state state;
	struct hwt_collect_end end;
	/* Driven by hwt_collect_resume (attach, or a first resume): run is
	 * refused and threads() returns snapshots. */
	bool live;
	/* hwt_collect_warning: set by the backend, "" when none. */
	char warning[512];
	/* hwt_collect_passed_over: set by the collector after launch, ""
	 * when none. */
	char passed_over[768];
};

struct hwt_backend {
	const char *name;
	unsigned caps;            /* HWT_COLLECT_CAP_*; the collector decides
				   * by these, never by name */
	/* Without HWT_COLLECT_CAP_ATTACH: why (NULL: it just cannot). */
	const char *no_attach;
	/* Per-thread ring bytes when the caller names none; 0 means
	 * HWT_COLLECT_DEFAULT_BUFFER. */
	uint64_t default_buffer;
	/* 0 when this machine can record with the backend, else a negative
	 * errno and err saying what is missing. */
	int (*available)(struct hwt_err *err);
	/* opts is complete: defaults applied, values checked. The backend
	 * fills in pid and tracer_tid (gettid() of the caller); collect.c
	 * sets backend and state on success. */
	int (*launch)(const struct hwt_collect_opts *opts, char *const argv[],
		      struct hwt_collector **out, struct hwt_err *err);
	/* Record until the end; fills c->end and sets c->state. Afterwards
	 * threads() describes the whole recording. */
	int (*run)(struct hwt_collector *c, struct hwt_err *err);
	int (*write_core)(struct hwt_collector *c, const char *path,
			  struct hwt_err *err);
	/* Let a fault's signal take effect; c->end becomes how it ended. */
	int (*finish)(struct hwt_collector *c, struct hwt_err *err);
	size_t (*threads)(struct hwt_collector *c,
			  const struct hwt_collect_thread **threads);
	size_t (*modules)(struct hwt_collector *c,
			  const struct hwt_collect_module **modules);
	void (*close)(struct hwt_collector *c);

	/* Live control (HWT_COLLECT_CAP_LIVE; attach with _ATTACH); NULL
	 * when the backend cannot. collect.c has checked the state (alive, stopped),
	 * the calling thread and the options. */
	/* Make a launched program ready for the live calls below, on the
	 * first one (the seize layer lets it run up to its exec first);
	 * NULL when launch leaves it ready. Memory is then read and
	 * written by collect.c through /proc/PID/mem. */
	int (*live_start)(struct hwt_collector *c, struct hwt_err *err);
	/* As launch, for a running process; the backend fills in pid and
	 * tracer_tid and leaves every thread stopped. */
	int (*attach)(const struct hwt_collect_opts *opts, pid_t pid,
		      struct hwt_collector **out, struct hwt_err *err);
	/* opts is complete (sz, interrupt_fd defaulted) and checked: kinds,
	 * signal numbers, watch sizes and counts. On an EXITED or KILLED
	 * event the backend sets c->state to ENDED and fills c->end. */
	int (*resume)(struct hwt_collector *c,
		      const struct hwt_resume_opts *opts,
		      struct hwt_collect_event *event, struct hwt_err *err);
	size_t (*live_tids)(struct hwt_collector *c, pid_t *tids, size_t cap);
	/* The auxiliary vector, where /proc/PID/auxv is not the program's;
	 * NULL: that file. */
	int (*auxv)(struct hwt_collector *c, uint8_t **out, size_t *len,
		    struct hwt_err *err);
	int (*regset)(struct hwt_collector *c, pid_t tid, int nt_type,
		      void *buf, size_t *len, bool write,
		      struct hwt_err *err);
	/* Register set nt_type (NT_PRSTATUS or NT_PRFPREG, checked) before
	 * recorded instruction insn of tid; NULL: not kept. */
	int (*regs_at)(struct hwt_collector *c, pid_t tid, uint64_t insn,
		       int nt_type, void *out, struct hwt_err *err);
	/* Memory before recorded instruction insn of tid (live control):
	 * the bytes from addr known there; NULL: not kept. */
	int (*mem_at)(struct hwt_collector *c, pid_t tid, uint64_t insn,
		      uint64_t addr, void *buf, size_t len,
		      struct hwt_err *err);
	/* The nearest recorded store in q's motion that changed bytes of
	 * its range (hwt_collect_find_write); 1 found, 0 none that can be
	 * told. */
	int (*find_write)(struct hwt_collector *c,
			  const struct hwt_write_query *q,
			  struct hwt_write_found *out, struct hwt_err *err);
	/* Thread tid's instruction index at the moment before step; NULL:
	 * no order of steps kept. */
	int (*index_at_step)(struct hwt_collector *c, pid_t tid,
			     uint64_t step, uint64_t *index,
			     struct hwt_err *err);
	/* Whether registers and memory of the past are kept under live
	 * control (regs_at and friends answer); NULL: whenever regs_at is
	 * there. */
	bool (*keeps_past)(const struct hwt_collector *c);
	/* Write the registers and memory of the past it keeps as a data
	 * history file at path (hwt-past.h): 1 written, 0 none kept; NULL:
	 * it keeps none. */
	int (*write_past)(struct hwt_collector *c, const char *path,
			  struct hwt_err *err);
	/* Someone other than the program is about to write len bytes at
	 * addr (a debugger): what the backend keeps of the past must say
	 * so. */
	void (*memory_written)(struct hwt_collector *c, uint64_t addr,
			       size_t len);
	/* HWT_COLLECT_CAP_DEFER: start recording a program launched with
	 * defer_recording (collect.c has checked the live state), and
	 * whether it records. */
	int (*record_start)(struct hwt_collector *c, struct hwt_err *err);
	bool (*recording)(const struct hwt_collector *c);
	/* Undo what tracing changed and let the process run untraced; the
	 * state becomes ENDED (threads() and modules() stay valid). */
	int (*detach)(struct hwt_collector *c, struct hwt_err *err);
};

extern const struct hwt_backend hwt_backend_ptrace;
extern const struct hwt_backend hwt_backend_perf_pt;
extern const struct hwt_backend hwt_backend_perf_bts;
extern const struct hwt_backend hwt_backend_perf_etm;
extern const struct hwt_backend hwt_backend_module;
extern const struct hwt_backend hwt_backend_valgrind;

#endif
