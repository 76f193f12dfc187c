// SPDX-License-Identifier: BSD-2-Clause
/* collect.c - the public collector API: backend registry, option checks,
 * call-order checks, dispatch to the chosen backend. */
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "backend_names.h"
#include "os/machine.h"
#include "os/proc.h"

/* In order of preference: without a name, the first available one that
 * does what the options ask records. Trace hardware first (no slowdown
 * to speak of: Intel PT, then BTS), then Valgrind's synthetic cpu (a
 * small factor over native, no privileges; the program sees Valgrind's
 * cpu, docs/valgrind.md), then software recording in the kernel
 * (hwtrace.ko, about a hundred times faster than ptrace stepping), then
 * the ptrace stepper, the exact reference that emulates nothing, which
 * works everywhere ptrace does and is the default for live control (the
 * module backend has it too, when named). perf-etm is last: its trace
 * cannot be written into a bundle yet (docs/backends.md). */
static const struct hwt_backend *const backends[] = {
	&hwt_backend_perf_pt,
	&hwt_backend_perf_bts,
	&hwt_backend_valgrind,
	&hwt_backend_module,
	&hwt_backend_ptrace,
	&hwt_backend_perf_etm,
};
#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

size_t hwt_collect_machine_notes(const char **notes, size_t max)
{
	return hwt_machine_notes(notes, max);
}

size_t hwt_collect_backends(const char *const **names)
{
	/* Filled from the table on every call: the same pointers each time,
	 * so one list of backends stays the only source of names. */
	static const char *backend_names[NBACKENDS];

	for (size_t i = 0; i < NBACKENDS; i++)
		backend_names[i] = backends[i]->name;
	*names = backend_names;
	return NBACKENDS;
}

static void list_names(char *out, size_t outsz)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < NBACKENDS && used < outsz; i++)
		used += (size_t)snprintf(out + used, outsz - used, "%s%s",
					 i ? ", " : "", backends[i]->name);
}

int hwt_collect_backend_available(const char *name, struct hwt_err *err)
{
	name = hwt_backend_canonical(name);
	for (size_t i = 0; name && i < NBACKENDS; i++)
		if (strcmp(name, backends[i]->name) == 0)
			return backends[i]->available(err);
	return hwt_err_set(err, EINVAL, "unknown trace backend \"%s\"",
			   name ? name : "(none)");
}

static int no_live(const struct hwt_backend *be, struct hwt_err *err)
{
	return hwt_err_set(err, EOPNOTSUPP,
			   "the %s backend cannot control a program stop by "
			   "stop; use the ptrace backend for live debugging",
			   be->name);
}

/* Options only some backends implement. */
static int check_backend_opts(const struct hwt_collect_opts *o,
			      const struct hwt_backend *be,
			      struct hwt_err *err)
{
	if (o->block_step && !(be->caps & HWT_COLLECT_CAP_BLOCK_STEP))
		return hwt_err_set(err, EINVAL,
				   "block-step is recorded by hwtrace.ko only, "
				   "not by the %s backend; choose the module "
				   "backend or record without block-step",
				   be->name);
	if (o->live_control && !(be->caps & HWT_COLLECT_CAP_LIVE))
		return no_live(be, err);
	if (o->follow_fork && !(be->caps & HWT_COLLECT_CAP_FOLLOW_FORK))
		return hwt_err_set(err, EINVAL, "the %s backend does not follow "
				   "forked children; the valgrind backend does",
				   be->name);
	if (o->follow_fork && o->live_control)
		return hwt_err_set(err, EINVAL, "forked children are followed "
				   "in recordings, not under live control");
	if (o->whole_bound && !(be->caps & HWT_COLLECT_CAP_WHOLE))
		return hwt_err_set(err, EINVAL, "the %s backend keeps a window "
				   "of the newest history, not the whole; the "
				   "valgrind backend keeps the whole",
				   be->name);
	if (o->whole_bound && o->live_control)
		return hwt_err_set(err, EINVAL, "the whole history is kept in "
				   "recordings, not under live control");
	if (o->defer_recording && !o->live_control)
		return hwt_err_set(err, EINVAL, "deferred recording needs live "
				   "control: a recording run records from "
				   "launch");
	return 0;
}

/* The ring size the caller left to the backend. */
static void set_buffer(struct hwt_collect_opts *o, const struct hwt_backend *be)
{
	if (o->buffer_size == 0)
		o->buffer_size = be->default_buffer ? be->default_buffer
						    : HWT_COLLECT_DEFAULT_BUFFER;
}

/* The backends an automatic pick tried and could not use, for a reason
 * worth telling (ENODEV, a device this machine lacks, is not). */
struct picked_over {
	char text[768];
	size_t len;
};

static void pass_over(struct picked_over *po, const struct hwt_backend *be,
		      const struct hwt_err *why)
{
	int n;

	if (why->code == ENODEV || po->len >= sizeof(po->text))
		return;
	n = snprintf(po->text + po->len, sizeof(po->text) - po->len,
		     "%sthe %s backend is not used: %s", po->len ? "; " : "",
		     be->name, why->msg);
	if (n > 0)
		po->len += (size_t)n;
}

const char *hwt_collect_passed_over(const struct hwt_collector *c)
{
	return c->passed_over[0] ? c->passed_over : NULL;
}

static int pick_backend(const struct hwt_collect_opts *o,
			const struct hwt_backend **out,
			struct picked_over *po, struct hwt_err *err)
{
	const char *name = hwt_backend_canonical(o->backend);
	char names[256];
	bool tried = false;
	int rc;

	if (name) {
		for (size_t i = 0; i < NBACKENDS; i++) {
			if (strcmp(name, backends[i]->name) != 0)
				continue;
			rc = backends[i]->available(err);
			if (rc < 0)
				return hwt_err_prefix(err, "backend %s: ", name);
			if ((rc = check_backend_opts(o, backends[i], err)) < 0)
				return rc;
			*out = backends[i];
			return 0;
		}
		list_names(names, sizeof(names));
		return hwt_err_set(err, EINVAL,
				   "unknown trace backend \"%s\"; available "
				   "backends: %s", o->backend, names);
	}
	for (size_t i = 0; i < NBACKENDS; i++) {
		struct hwt_err why = { 0 };

		if (check_backend_opts(o, backends[i], &why) < 0)
			continue;
		/* Live control defaults to exact breakpoints and watches
		 * that modify no code (docs/backends.md). */
		if (o->live_control && !o->block_step &&
		    !(backends[i]->caps & HWT_COLLECT_CAP_EXACT_WATCH))
			continue;
		tried = true;
		rc = backends[i]->available(err);
		if (rc == 0) {
			*out = backends[i];
			return 0;
		}
		pass_over(po, backends[i], err);
	}
	if (!tried) {
		char want[96] = "";

		if (o->live_control)
			strcat(want, "live control");
		if (o->block_step)
			strcat(strcat(want, want[0] ? ", " : ""), "block-step");
		if (o->follow_fork)
			strcat(strcat(want, want[0] ? ", " : ""),
			       "forks followed");
		if (o->whole_bound)
			strcat(strcat(want, want[0] ? ", " : ""),
			       "the whole history");
		return hwt_err_set(err, EINVAL, "no trace backend offers all "
				   "that was asked: %s", want);
	}
	/* err holds why the last backend that would do cannot work. */
	return hwt_err_prefix(err, "no trace backend works here: ");
}

/* Complete the caller's options: fields beyond its opts->sz keep their
 * defaults, so older callers keep working when the struct grows. */
static int normalize_opts(const struct hwt_collect_opts *in,
			  struct hwt_collect_opts *out, struct hwt_err *err)
{
	int rc = hwt_opts_copy(out, sizeof(*out), in, in ? in->sz : 0,
			       offsetof(struct hwt_collect_opts, backend),
			       "hwt_collect_opts", err);

	if (rc)
		return rc;
	/* 0 stays: the backend picked gives the default (set_buffer). */
	if (out->buffer_size && (out->buffer_size < HWT_COLLECT_MIN_BUFFER ||
				 out->buffer_size > HWT_COLLECT_MAX_BUFFER))
		return hwt_err_set(err, EINVAL,
				   "per-thread buffer of %llu bytes is outside "
				   "[%u, %llu]; pick a size in that range",
				   (unsigned long long)out->buffer_size,
				   HWT_COLLECT_MIN_BUFFER,
				   (unsigned long long)HWT_COLLECT_MAX_BUFFER);
	if ((unsigned)out->pin > HWT_PIN_NONE)
		return hwt_err_set(err, EINVAL, "pin %d is none of "
				   "HWT_PIN_HERE, HWT_PIN_CPU, HWT_PIN_NONE",
				   (int)out->pin);
	return 0;
}

int hwt_collect_launch(const struct hwt_collect_opts *opts,
		       char *const argv[], struct hwt_collector **out,
		       struct hwt_err *err)
{
	struct hwt_collect_opts full;
	const struct hwt_backend *be;
	struct picked_over po = { .len = 0 };
	int rc;

	*out = NULL;
	if (!argv || !argv[0] || !argv[0][0])
		return hwt_err_set(err, EINVAL, "no program to run was given");
	if ((rc = normalize_opts(opts, &full, err)) < 0)
		return rc;
	if ((rc = pick_backend(&full, &be, &po, err)) < 0)
		return rc;
	set_buffer(&full, be);
	/* The others record from launch anyway. */
	if (!(be->caps & HWT_COLLECT_CAP_DEFER))
		full.defer_recording = false;
	rc = be->launch(&full, argv, out, err);
	if (rc < 0)
		return rc;
	(*out)->backend = be;
	(*out)->state = HWT_COLLECTOR_LAUNCHED;
	snprintf((*out)->passed_over, sizeof((*out)->passed_over), "%s",
		 po.text);
	return 0;
}

pid_t hwt_collect_pid(const struct hwt_collector *c)
{
	return c->pid;
}

const char *hwt_collect_backend_name(const struct hwt_collector *c)
{
	return c->backend->name;
}

const char *hwt_collect_warning(const struct hwt_collector *c)
{
	return c->warning[0] ? c->warning : NULL;
}

unsigned hwt_collect_backend_caps(const struct hwt_collector *c)
{
	return c->backend->caps;
}

/* ptrace only answers the thread that attached. */
static int check_tracer(const struct hwt_collector *c, const char *what,
			struct hwt_err *err)
{
	if (gettid() != c->tracer_tid)
		return hwt_err_set(err, EPERM,
				   "%s called from thread %d, but the program "
				   "was launched from thread %d; make every "
				   "call from the launching thread", what,
				   (int)gettid(), (int)c->tracer_tid);
	return 0;
}

int hwt_collect_run(struct hwt_collector *c, struct hwt_collect_end *end,
		    struct hwt_err *err)
{
	int rc;

	if (c->live)
		return hwt_err_set(err, EBUSY,
				   "the program is under live control "
				   "(hwt_collect_resume); run it to its end "
				   "with resume actions instead");
	if (c->state != HWT_COLLECTOR_LAUNCHED)
		return hwt_err_set(err, EBUSY,
				   "the program was already run to its end; "
				   "hwt_collect_run records once per launch");
	if ((rc = check_tracer(c, "hwt_collect_run", err)) < 0)
		return rc;
	rc = c->backend->run(c, err);
	if (rc == 0 && end)
		*end = c->end;
	return rc;
}

int hwt_collect_write_core(struct hwt_collector *c, const char *path,
			   struct hwt_err *err)
{
	int rc;

	if (c->state != HWT_COLLECTOR_FAULTED && !c->end.exit_core)
		return hwt_err_set(err, EINVAL,
				   "a core can only be written while the "
				   "program is stopped on a fatal signal "
				   "(after hwt_collect_run ended with a fault), "
				   "or when the backend kept one at its exit");
	if ((rc = check_tracer(c, "hwt_collect_write_core", err)) < 0)
		return rc;
	return c->backend->write_core(c, path, err);
}

int hwt_collect_finish(struct hwt_collector *c, struct hwt_collect_end *end,
		       struct hwt_err *err)
{
	int rc;

	if (c->state != HWT_COLLECTOR_FAULTED)
		return hwt_err_set(err, EINVAL,
				   "hwt_collect_finish only applies after "
				   "hwt_collect_run ended with a fault");
	if ((rc = check_tracer(c, "hwt_collect_finish", err)) < 0)
		return rc;
	rc = c->backend->finish(c, err);
	if (rc == 0 && end)
		*end = c->end;
	return rc;
}

size_t hwt_collect_threads(struct hwt_collector *c,
			   const struct hwt_collect_thread **threads)
{
	*threads = NULL;
	/* A stopped, launched or attached program: a snapshot where live
	 * control can give one (the history so far). */
	if (c->state == HWT_COLLECTOR_LAUNCHED &&
	    !(c->backend->caps & HWT_COLLECT_CAP_LIVE))
		return 0;
	return c->backend->threads(c, threads);
}

size_t hwt_collect_modules(struct hwt_collector *c,
			   const struct hwt_collect_module **modules)
{
	return c->backend->modules(c, modules);
}

/* ---- live control ---------------------------------------------------- */

int hwt_collect_attach(const struct hwt_collect_opts *opts, pid_t pid,
		       struct hwt_collector **out, struct hwt_err *err)
{
	struct hwt_collect_opts full;
	const struct hwt_backend *be;
	struct picked_over po = { .len = 0 };
	int rc;

	*out = NULL;
	if (pid <= 0)
		return hwt_err_set(err, EINVAL, "%d is not a process id",
				   (int)pid);
	if (pid == getpid())
		return hwt_err_set(err, EINVAL,
				   "cannot attach to this process itself");
	if ((rc = normalize_opts(opts, &full, err)) < 0)
		return rc;
	full.live_control = true;
	/* Recorded from the attach on: no backend defers an attach. */
	full.defer_recording = false;
	if ((rc = pick_backend(&full, &be, &po, err)) < 0)
		return rc;
	if (!(be->caps & HWT_COLLECT_CAP_ATTACH))
		return hwt_err_set(err, EOPNOTSUPP, "the %s backend cannot "
				   "attach to a running process%s%s; use the "
				   "ptrace backend", be->name,
				   be->no_attach ? ": " : "",
				   be->no_attach ? be->no_attach : "");
	set_buffer(&full, be);
	rc = be->attach(&full, pid, out, err);
	if (rc < 0)
		return rc;
	(*out)->backend = be;
	(*out)->state = HWT_COLLECTOR_LAUNCHED;
	(*out)->live = true;
	snprintf((*out)->passed_over, sizeof((*out)->passed_over), "%s",
		 po.text);
	return 0;
}

/* The program ready for live control: the backend's start, on first use. */
static int live_ready(struct hwt_collector *c, struct hwt_err *err)
{
	return c->backend->live_start ? c->backend->live_start(c, err) : 0;
}

/* The process is alive and stopped by us, and the caller may drive it. */
static int check_live(struct hwt_collector *c, const char *what,
		      struct hwt_err *err)
{
	if (!(c->backend->caps & HWT_COLLECT_CAP_LIVE))
		return no_live(c->backend, err);
	if (c->state == HWT_COLLECTOR_ENDED)
		return hwt_err_set(err, ESRCH,
				   "%s: the program has ended (or was "
				   "detached); only hwt_collect_threads, "
				   "hwt_collect_modules and close remain", what);
	if (c->state == HWT_COLLECTOR_FAULTED || (!c->live &&
	    c->state != HWT_COLLECTOR_LAUNCHED))
		return hwt_err_set(err, EBUSY,
				   "%s: the program is being recorded by "
				   "hwt_collect_run; live control needs a "
				   "fresh launch or attach", what);
	return check_tracer(c, what, err);
}

static int check_action(const struct hwt_resume_action *a, size_t i,
			struct hwt_err *err)
{
	if (a->kind != HWT_RESUME_STOP && a->kind != HWT_RESUME_STEP &&
	    a->kind != HWT_RESUME_CONT)
		return hwt_err_set(err, EINVAL,
				   "resume action %zu has kind %d; use "
				   "HWT_RESUME_STOP, STEP or CONT", i,
				   (int)a->kind);
	if (a->signal < 0 || a->signal >= NSIG)
		return hwt_err_set(err, EINVAL,
				   "resume action %zu passes signal %d, which "
				   "is not a signal number", i, a->signal);
	if (a->signal && a->kind == HWT_RESUME_STOP)
		return hwt_err_set(err, EINVAL,
				   "resume action %zu passes signal %d to a "
				   "thread that stays stopped; step or "
				   "continue it to deliver the signal", i,
				   a->signal);
	if (a->tid < 0)
		return hwt_err_set(err, EINVAL,
				   "resume action %zu names thread %d", i,
				   (int)a->tid);
	return 0;
}

static int check_watch(const struct hwt_watch *w, size_t i,
		       struct hwt_err *err)
{
	if (w->kind != HWT_WATCH_WRITE && w->kind != HWT_WATCH_READ &&
	    w->kind != HWT_WATCH_ACCESS)
		return hwt_err_set(err, EINVAL,
				   "watchpoint %zu has kind %d; use "
				   "HWT_WATCH_WRITE, READ or ACCESS", i,
				   (int)w->kind);
	if ((w->len != 1 && w->len != 2 && w->len != 4 && w->len != 8) ||
	    w->addr % w->len)
		return hwt_err_set(err, EINVAL,
				   "watchpoint %zu covers %u bytes at 0x%llx; "
				   "watch 1, 2, 4 or 8 bytes aligned to their "
				   "size (split larger ranges)", i, w->len,
				   (unsigned long long)w->addr);
	return 0;
}

/* Complete the caller's resume options (fields beyond its sz keep their
 * defaults) and check every value. */
static int normalize_resume(const struct hwt_resume_opts *in, unsigned caps,
			    struct hwt_resume_opts *out, struct hwt_err *err)
{
	int rc;

	if (!in)
		return hwt_err_set(err, EINVAL,
				   "hwt_collect_resume needs options naming "
				   "what each thread does");
	rc = hwt_opts_copy(out, sizeof(*out), in, in->sz,
			   offsetof(struct hwt_resume_opts, breakpoints),
			   "hwt_resume_opts", err);
	if (rc)
		return rc;
	if (out->interrupt_fd == 0)
		out->interrupt_fd = -1;
	if (out->nactions > HWT_RESUME_MAX_ACTIONS ||
	    (out->nactions && !out->actions))
		return hwt_err_set(err, EINVAL,
				   "%zu resume actions; give at most %u, one "
				   "per thread plus a default", out->nactions,
				   HWT_RESUME_MAX_ACTIONS);
	if (out->nbreakpoints > HWT_RESUME_MAX_BREAKPOINTS ||
	    (out->nbreakpoints && !out->breakpoints))
		return hwt_err_set(err, EINVAL,
				   "%zu breakpoints; at most %u are supported",
				   out->nbreakpoints,
				   HWT_RESUME_MAX_BREAKPOINTS);
	if (out->nwatches && !(caps & HWT_COLLECT_CAP_WATCH))
		return hwt_err_set(err, EOPNOTSUPP, "this recording "
				   "backend has no watchpoints under live control");
	if (out->nwatches > HWT_RESUME_MAX_WATCHES ||
	    (out->nwatches && !out->watches))
		return hwt_err_set(err, EINVAL,
				   "%zu watchpoints; at most %u are supported",
				   out->nwatches, HWT_RESUME_MAX_WATCHES);
	for (size_t i = 0; i < out->nactions; i++) {
		if ((rc = check_action(&out->actions[i], i, err)) < 0)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (out->actions[j].tid == out->actions[i].tid)
				return hwt_err_set(err, EINVAL,
						   "resume actions %zu and %zu "
						   "both name thread %d", j, i,
						   (int)out->actions[i].tid);
	}
	for (size_t i = 0; i < out->nwatches; i++)
		if ((rc = check_watch(&out->watches[i], i, err)) < 0)
			return rc;
	if (out->interrupt_fd < -1)
		return hwt_err_set(err, EBADF,
				   "interrupt_fd %d is not a descriptor (use "
				   "-1 for none)", out->interrupt_fd);
	return 0;
}

int hwt_collect_resume(struct hwt_collector *c,
		       const struct hwt_resume_opts *opts,
		       struct hwt_collect_event *event, struct hwt_err *err)
{
	struct hwt_resume_opts full;
	int rc;

	memset(event, 0, sizeof(*event));
	if ((rc = check_live(c, "hwt_collect_resume", err)) < 0)
		return rc;
	if ((rc = normalize_resume(opts, c->backend->caps, &full, err)) < 0)
		return rc;
	c->live = true;
	if ((rc = live_ready(c, err)) < 0)
		return rc;
	rc = c->backend->resume(c, &full, event, err);
	if (rc == 0 && (event->kind == HWT_EVENT_EXITED ||
			event->kind == HWT_EVENT_KILLED))
		c->state = HWT_COLLECTOR_ENDED;
	return rc;
}

int hwt_collect_regs_at(struct hwt_collector *c, pid_t tid, uint64_t insn,
			int nt_type, void *buf, size_t len,
			struct hwt_err *err)
{
	size_t need = nt_type == NT_PRSTATUS ? sizeof(struct user_regs_struct) :
		      nt_type == NT_PRFPREG ? sizeof(struct user_fpregs_struct) :
		      0;

	if (!need)
		return hwt_err_set(err, EINVAL, "register set %d is not kept "
				   "of the past (NT_PRSTATUS, NT_PRFPREG are)",
				   nt_type);
	if (!c->backend->regs_at)
		return hwt_err_set(err, EOPNOTSUPP, "the %s backend keeps no "
				   "registers of the past", c->backend->name);
	if (len != need)
		return hwt_err_set(err, EINVAL, "%zu bytes for register set "
				   "%d; it takes %zu", len, nt_type, need);
	return c->backend->regs_at(c, tid, insn, nt_type, buf, err);
}

int hwt_collect_mem_at(struct hwt_collector *c, pid_t tid, uint64_t insn,
		       uint64_t addr, void *buf, size_t len,
		       struct hwt_err *err)
{
	if (!c->backend->mem_at)
		return hwt_err_set(err, EOPNOTSUPP, "the %s backend keeps no "
				   "memory of the past", c->backend->name);
	if (len > HWT_COLLECT_MAX_MEM_XFER)
		len = HWT_COLLECT_MAX_MEM_XFER;
	if (gettid() != c->tracer_tid)
		return hwt_err_set(err, EPERM, "memory of the past is read "
				   "from the thread that traces");
	return c->backend->mem_at(c, tid, insn, addr, buf, len, err);
}

int hwt_collect_index_at_step(struct hwt_collector *c, pid_t tid,
			      uint64_t step, uint64_t *index,
			      struct hwt_err *err)
{
	if (!c->backend->index_at_step)
		return hwt_err_set(err, EOPNOTSUPP, "the %s backend keeps no "
				   "order of steps", c->backend->name);
	return c->backend->index_at_step(c, tid, step, index, err);
}

int hwt_collect_find_write(struct hwt_collector *c,
			   const struct hwt_write_query *q,
			   struct hwt_write_found *out, struct hwt_err *err)
{
	if (!c->backend->find_write)
		return hwt_err_set(err, EOPNOTSUPP, "the %s backend keeps no "
				   "memory of the past", c->backend->name);
	if (gettid() != c->tracer_tid)
		return hwt_err_set(err, EPERM, "memory of the past is read "
				   "from the thread that traces");
	return c->backend->find_write(c, q, out, err);
}

int hwt_collect_record_start(struct hwt_collector *c, struct hwt_err *err)
{
	int rc;

	if (hwt_collect_recording(c))
		return 0;
	if ((rc = check_live(c, "hwt_collect_record_start", err)) < 0)
		return rc;
	c->live = true;
	if ((rc = live_ready(c, err)) < 0)
		return rc;
	return c->backend->record_start(c, err);
}

bool hwt_collect_recording(const struct hwt_collector *c)
{
	return !c->backend->recording || c->backend->recording(c);
}

bool hwt_collect_keeps_past(const struct hwt_collector *c)
{
	return c->backend->keeps_past ? c->backend->keeps_past(c)
				      : c->backend->regs_at != NULL;
}

int hwt_collect_auxv(struct hwt_collector *c, uint8_t **out, size_t *len,
		     struct hwt_err *err)
{
	char path[64], *text;
	int rc;

	*out = NULL;
	*len = 0;
	if (c->backend->auxv)
		return c->backend->auxv(c, out, len, err);
	if (c->state == HWT_COLLECTOR_ENDED)
		return hwt_err_set(err, ESRCH, "hwt_collect_auxv: the program "
				   "has ended");
	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)c->pid);
	if ((rc = hwt_proc_read(path, HWT_COLLECT_MAX_AUXV, &text, len,
				err)) < 0)
		return rc;
	*out = (uint8_t *)text;
	return 0;
}

size_t hwt_collect_live_tids(struct hwt_collector *c, pid_t *tids, size_t cap)
{
	if (!c->backend->live_tids || c->state == HWT_COLLECTOR_ENDED)
		return 0;
	return c->backend->live_tids(c, tids, cap);
}

int hwt_collect_regset(struct hwt_collector *c, pid_t tid, int nt_type,
		       void *buf, size_t *len, bool write,
		       struct hwt_err *err)
{
	int rc;

	if ((rc = check_live(c, "hwt_collect_regset", err)) < 0)
		return rc;
	if (!buf || !len || *len == 0 || *len > HWT_COLLECT_MAX_REGSET)
		return hwt_err_set(err, EINVAL,
				   "register buffer of %zu bytes; give 1 to "
				   "%u bytes", len ? *len : 0,
				   HWT_COLLECT_MAX_REGSET);
	if ((rc = live_ready(c, err)) < 0)
		return rc;
	return c->backend->regset(c, tid, nt_type, buf, len, write, err);
}

/* The stopped program's memory, for every backend alike: breakpoint
 * bytes are out of the code whenever it is stopped, so this shows the
 * program's own bytes. */
static ssize_t mem_xfer(struct hwt_collector *c, uint64_t addr, void *buf,
			size_t len, bool write)
{
	int rc;

	if (!(c->backend->caps & HWT_COLLECT_CAP_LIVE))
		return -EOPNOTSUPP;
	if (c->state == HWT_COLLECTOR_ENDED)
		return -ESRCH;
	if (gettid() != c->tracer_tid)
		return -EPERM;
	if ((rc = live_ready(c, NULL)) < 0)
		return rc;
	if (len > HWT_COLLECT_MAX_MEM_XFER)
		len = HWT_COLLECT_MAX_MEM_XFER;
	if (write && c->backend->memory_written)
		c->backend->memory_written(c, addr, len);
	return hwt_proc_mem_xfer(c->pid, addr, buf, len, write);
}

ssize_t hwt_collect_mem_read(struct hwt_collector *c, uint64_t addr,
			     void *buf, size_t len)
{
	return mem_xfer(c, addr, buf, len, false);
}

ssize_t hwt_collect_mem_write(struct hwt_collector *c, uint64_t addr,
			      const void *buf, size_t len)
{
	return mem_xfer(c, addr, (void *)buf, len, true);
}

int hwt_collect_detach(struct hwt_collector *c, struct hwt_err *err)
{
	int rc;

	if (!c->backend->detach)
		return no_live(c->backend, err);
	if (c->state == HWT_COLLECTOR_ENDED)
		return hwt_err_set(err, ESRCH,
				   "hwt_collect_detach: the program has "
				   "already ended or been detached");
	if ((rc = check_tracer(c, "hwt_collect_detach", err)) < 0 ||
	    (rc = live_ready(c, err)) < 0)
		return rc;
	return c->backend->detach(c, err);
}

void hwt_collect_close(struct hwt_collector *c)
{
	if (c)
		c->backend->close(c);
}
