// SPDX-License-Identifier: BSD-2-Clause
/* attach.c - take over a running process, and let a process go.
 *
 * Attach seizes every thread listed in /proc/PID/task and interrupts it;
 * threads created meanwhile by a thread not yet seized appear only in a
 * later listing, so the listing is read again until a pass finds nothing
 * new (threads created by seized threads are attached by the kernel).
 * The interrupt stops are collected by the shared loop, as when a resume
 * stops the program, so signals arriving meanwhile are queued as events.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer.h"

/* Unlike a launched program, an attached one survives its tracer's death:
 * no PTRACE_O_EXITKILL. */
#define ATTACH_OPTIONS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | \
			PTRACE_O_TRACEEXIT)

/* Bounded: each pass that finds something new attaches at least one of
 * at most HWT_BUNDLE_MAX_THREADS threads. */
#define MAX_SCANS (HWT_BUNDLE_MAX_THREADS + 2)

static int seize_failed(pid_t pid, int e, struct hwt_err *err)
{
	if (e == EPERM)
		return hwt_err_set(err, EPERM,
				   "cannot attach to %d: %s; it must run as "
				   "your user and not be traced already, and "
				   "kernel.yama.ptrace_scope is %d (1 allows "
				   "only descendants: run as root, give "
				   "CAP_SYS_PTRACE, or set it to 0)", (int)pid,
				   strerror(e), hwt_proc_yama_scope());
	if (e == ESRCH)
		return hwt_err_set(err, ESRCH, "cannot attach to %d: no such "
				   "process", (int)pid);
	return hwt_err_set(err, e, "cannot attach to %d: %s", (int)pid,
			   strerror(e));
}

/* Seize and interrupt the threads not attached yet; *found counts them. */
static int scan_once(struct step_collector *c, size_t *found,
		     struct hwt_err *err)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int rc = 0;

	*found = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)c->base.pid);
	dir = opendir(path);
	if (!dir)
		return seize_failed(c->base.pid, errno == ENOENT ? ESRCH : errno,
				    err);
	while (rc == 0 && (d = readdir(dir))) {
		char *end;
		long tid = strtol(d->d_name, &end, 10);
		struct step_thread *t;

		if (*end || tid <= 0 || hwt_step_thread_find(c, (pid_t)tid))
			continue;
		if (ptrace(PTRACE_SEIZE, (pid_t)tid, 0, ATTACH_OPTIONS) < 0) {
			/* A thread that exited meanwhile is no loss. */
			if (errno != ESRCH || tid == c->base.pid)
				rc = seize_failed((pid_t)tid, errno, err);
			continue;
		}
		if ((rc = hwt_step_thread_add(c, (pid_t)tid, &t, err)) < 0) {
			ptrace(PTRACE_DETACH, (pid_t)tid, 0, 0);
			break;
		}
		if (c->tracee_pinned) {
			cpu_set_t one;   /* the tracer's, pinned */

			if (sched_getaffinity(0, sizeof(one), &one) == 0)
				sched_setaffinity((pid_t)tid, sizeof(one), &one);
		}
		if (ptrace(PTRACE_INTERRUPT, (pid_t)tid, 0, 0) == 0)
			t->interrupt_pending = true;
		(*found)++;
	}
	closedir(dir);
	return rc;
}

/* Let every thread go untraced; signals held for them are delivered. */
static void release_all(struct step_collector *c)
{
	for (size_t i = 0; i < c->nthreads; i++) {
		struct step_thread *t = c->threads[i];
		/* A signal reported but not passed on yet (live), or held
		 * while stopped on a fatal one (after a run). */
		int sig = t->lt.has_event && t->lt.event.kind == HWT_EVENT_SIGNAL
				  ? t->lt.event.signal : t->pending_signal;

		if (t->state == PT_GONE)
			continue;
		hwt_dr_watches_clear(t->tid, &t->dr_gen);
		if (c->tracee_pinned)
			sched_setaffinity(t->tid, sizeof(c->tracee_affinity),
					  &c->tracee_affinity);
		/* An event stop cannot inject it: send it, the untraced
		 * thread then takes it. */
		if (sig && t->event_stop) {
			syscall(SYS_tgkill, c->base.pid, t->tid, sig);
			sig = 0;
		}
		ptrace(PTRACE_DETACH, t->tid, 0, sig);
		t->lt.has_event = false;
	}
	c->base.state = HWT_COLLECTOR_ENDED;
}

int hwt_step_attach(const struct hwt_collect_opts *opts, pid_t pid,
		  struct hwt_collector **out, struct hwt_err *err)
{
	struct step_collector *c;
	size_t found = 1;
	int rc = 0;

	c = calloc(1, sizeof(*c));
	if (!c)
		return hwt_err_set(err, ENOMEM, "out of memory");
	c->base.backend = &hwt_backend_ptrace;
	c->base.tracer_tid = gettid();
	c->base.pid = pid;
	hwt_step_live_init(c);
	c->base.state = HWT_COLLECTOR_ENDED;   /* nothing attached yet */
	c->buffer_size = opts->buffer_size;
	c->chunk_payload = hwt_sw_ring_chunk_payload_for(opts->buffer_size);
	c->log_regs = true;
	if ((rc = hwt_step_threads_init(c, err)) < 0)
		goto fail;
	if (opts->pin != HWT_PIN_NONE) {
		if (sched_getaffinity(pid, sizeof(c->tracee_affinity),
				      &c->tracee_affinity) < 0) {
			rc = seize_failed(pid, errno, err);
			goto fail;
		}
		if ((rc = hwt_step_pin(c, opts, err)) < 0)
			goto fail;
		c->tracee_pinned = true;   /* each thread as it is seized */
	}
	for (int pass = 0; found && rc == 0; pass++) {
		if (pass == MAX_SCANS) {
			rc = hwt_err_set(err, EAGAIN,
					 "process %d keeps creating threads "
					 "faster than they can be attached; "
					 "try again", (int)pid);
			break;
		}
		rc = scan_once(c, &found, err);
	}
	c->base.state = HWT_COLLECTOR_LAUNCHED;   /* threads are ours now */
	if (rc < 0)
		goto fail;
	hwt_step_set_wait_flags(c);
	/* Collect every thread's first stop the way a resume stops all. */
	c->live = &c->resume;
	c->hooks = &hwt_step_live_hooks;
	c->rules.stopping = true;
	rc = hwt_step_loop(c, err);
	c->rules.stopping = false;
	c->hooks = NULL;
	c->live = NULL;
	if (rc == PT_PROCESS_ENDED) {
		rc = hwt_err_set(err, ESRCH, "process %d exited while being "
				 "attached", (int)pid);
		goto fail;
	}
	if (rc < 0 || (rc = hwt_step_modules_refresh(c, pid, err)) < 0)
		goto fail;
	*out = &c->base;
	return 0;
fail:
	if (c->base.state != HWT_COLLECTOR_ENDED)
		release_all(c);
	hwt_backend_ptrace.close(&c->base);
	return rc;
}

int hwt_step_detach(struct hwt_collector *base, struct hwt_err *err)
{
	struct step_collector *c = step_of(base);

	release_all(c);
	/* The history stays readable until close. */
	return hwt_step_threads_seal(c, err);
}
