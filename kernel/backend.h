/* backend.h - what a recording backend provides to the collector API.
 *
 * collect.c owns the public functions: it checks the options and the call
 * order (run once, core and finish only after a fault) and dispatches
 * through a backend's ops table. A backend allocates its own state with a
 * struct hwt_collector as the first member and reports through it.
 */
#ifndef HWT_BACKEND_H
#define HWT_BACKEND_H

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
};

struct hwt_backend {
	const char *name;
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
};

extern const struct hwt_backend hwt_backend_ptrace;

#endif
