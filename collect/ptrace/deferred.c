// SPDX-License-Identifier: BSD-2-Clause
/* deferred.c - a launched program run untraced until its recording is
 * asked for (hwt_collect_opts.defer_recording).
 *
 * Single-stepping costs tens of microseconds per instruction, so a
 * debugger that has not asked for any history (no `record btrace`, no
 * `thread trace start`) should not pay for it: until then the program
 * runs under the seize layer (collect/seize), with PTRACE_CONT, int3
 * breakpoints that are out of the code whenever it is stopped, and
 * watches in the debug registers, as under gdbserver. Nothing is
 * recorded by that layer (its recorder hooks do nothing).
 *
 * hwt_step_record_start hands the stopped threads over to the stepper,
 * in the same tracing thread, with no ptrace call in between: each
 * thread's history starts at the instruction it stands at, its queued
 * event and owed interrupt stop carry over, and a thread whose first stop
 * has not been seen starts its history there, as threads born under the
 * stepper do. The debug registers the seize layer set are cleared (the
 * stepper sets its own at the next resume), and pinning, which only
 * speeds up stepping, begins here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seize/seize.h"
#include "tracer.h"

/* Nothing to record while untraced. */
static int untraced_attach(void *ctx, pid_t tid, bool first,
			   struct hwt_err *err)
{
	(void)ctx;
	(void)tid;
	(void)first;
	(void)err;
	return 0;
}

static const struct hwt_seize_ops untraced_ops = {
	.attach = untraced_attach,
};

int hwt_step_launch_deferred(struct step_collector *c,
			     const struct hwt_collect_opts *opts,
			     char *const argv[], struct hwt_err *err)
{
	struct hwt_seize *s = calloc(1, sizeof(*s));

	if (!s)
		return hwt_err_set(err, ENOMEM, "out of memory");
	hwt_seize_init(s, &untraced_ops, c, argv[0]);
	c->untraced = s;
	c->pin = opts->pin;
	c->pin_cpu = opts->cpu;
	/* Stopped at the first instruction of the new image. */
	return hwt_seize_start(s, argv, true, &c->base.pid, err);
}

bool hwt_step_recording(const struct hwt_collector *base)
{
	return !((const struct step_collector *)base)->untraced;
}

/* Pin the tracer and every thread of the program to one cpu, as attach
 * does; the tracees get their own mask back on detach. */
static int pin_now(struct step_collector *c, struct hwt_err *err)
{
	HWT_OPTS(hwt_collect_opts, o, .pin = c->pin, .cpu = c->pin_cpu);
	cpu_set_t one;
	int rc;

	if (c->pin == HWT_PIN_NONE)
		return 0;
	if (sched_getaffinity(c->base.pid, sizeof(c->tracee_affinity),
			      &c->tracee_affinity) < 0)
		return hwt_err_set(err, errno, "reading the cpu affinity of "
				   "%d: %s", (int)c->base.pid, strerror(errno));
	if ((rc = hwt_step_pin(c, &o, err)) < 0 ||
	    sched_getaffinity(0, sizeof(one), &one) < 0)
		return rc < 0 ? rc : hwt_err_set(err, errno, "cpu affinity: %s",
						 strerror(errno));
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i]->state != PT_GONE)
			sched_setaffinity(c->threads[i]->tid, sizeof(one), &one);
	c->tracee_pinned = true;
	return 0;
}

/* A seize-layer step guard as one of the stepper's breakpoints after a
 * lost-trap instruction (stepcheck.c); false when there is no room. */
static bool adopt_guard(struct step_collector *c, uint64_t addr, uint8_t orig)
{
	for (size_t i = 0; i < c->ntmp_bps; i++)
		if (c->tmp_bps[i].addr == addr) {
			c->tmp_bps[i].users++;
			return true;
		}
	if (c->ntmp_bps == STEP_TMP_BPS)
		return false;
	c->tmp_bps[c->ntmp_bps++] = (struct step_tmp_bp){
		.addr = addr, .users = 1, .orig = orig };
	return true;
}

/* One seize-layer thread as a stepper's thread. */
static int adopt(struct step_collector *c, struct hwt_seize_thread *st,
		 struct hwt_err *err)
{
	struct step_thread *t;
	uint64_t pc;
	int rc;

	if ((rc = hwt_step_thread_add(c, st->tid, &t, err)) < 0)
		return rc;
	t->lt = st->lt;
	t->interrupt_pending = st->interrupt_pending;
	t->forward_signal = st->forward_signal;
	t->pending_signal = st->pending_signal;
	t->announce = st->announce;
	hwt_dr_watches_clear(st->tid, &st->dr_gen);
	/* A step running to its guard (a lost trap, seize/break.c) goes on
	 * as the stepper's own such step. */
	if (st->guard_bp && adopt_guard(c, st->guard_bp, st->guard_orig))
		t->tmp_bp = st->guard_bp;
	else
		hwt_seize_guard_drop(c->untraced, st, false);
	st->guard_bp = 0;
	if (st->born || !st->stopped)
		return 0;   /* PT_RUNNING: its next stop starts the history */
	t->state = PT_STOPPED;
	t->event_stop = !st->sig_stop;
	if ((rc = hwt_step_read_pc(st->tid, &pc)) < 0)
		return hwt_err_set(err, -rc, "reading the pc of thread %d: %s",
				   (int)st->tid, strerror(-rc));
	hwt_sw_ring_start(&t->ring, pc);
	hwt_step_log_regs(t);
	return 0;
}

int hwt_step_record_start(struct hwt_collector *base, struct hwt_err *err)
{
	struct step_collector *c = step_of(base);
	struct hwt_seize *s = c->untraced;
	int rc = 0;

	if (!s)
		return 0;
	c->log_regs = true;
	for (size_t i = 0; i < s->nthreads && rc == 0; i++)
		if (!s->threads[i].gone && s->threads[i].attached)
			rc = adopt(c, &s->threads[i], err);
	if (rc == 0)
		rc = hwt_step_modules_refresh(c, c->base.pid, err);
	if (rc < 0) {
		/* Still the seize layer's: drop what was adopted. */
		while (c->nthreads)
			hwt_step_thread_forget(c, c->threads[c->nthreads - 1]);
		return rc;
	}
	c->rules.last_tid = s->rules.last_tid;
	c->rules.new_kind = s->rules.new_kind;
	c->rules.report_created = s->rules.report_created;
	hwt_seize_forget(s);
	free(s);
	c->untraced = NULL;
	/* Pinning only speeds stepping up: a failure loses nothing. */
	if (pin_now(c, err) < 0)
		snprintf(c->base.warning, sizeof(c->base.warning),
			 "not pinned to one cpu: %.400s", err->msg);
	return 0;
}

/* ---- the collector's calls while untraced ------------------------------ */

/* Watches the stepper needs debug registers for. */
static size_t dr_watches(const struct hwt_resume_opts *o)
{
	size_t n = 0;

	for (size_t i = 0; i < o->nwatches; i++)
		n += o->watches[i].kind != HWT_WATCH_WRITE;
	return n;
}

int hwt_step_untraced_resume(struct step_collector *c,
			     const struct hwt_resume_opts *opts,
			     struct hwt_collect_event *event,
			     struct hwt_err *err)
{
	int rc = hwt_seize_resume(c->untraced, opts, event, err);

	/* More watches than debug registers: the stepper compares any
	 * number of write watches at every step, so record from here on
	 * when the read and access ones fit. */
	if (rc == -ENOSPC && dr_watches(opts) <= HWT_DR_SLOTS) {
		if ((rc = hwt_step_record_start(&c->base, err)) < 0)
			return rc;
		return hwt_step_resume(&c->base, opts, event, err);
	}
	if (rc == 0 && hwt_seize_event_ends(event)) {
		c->base.end = c->untraced->end;
		c->base.state = HWT_COLLECTOR_ENDED;
	}
	return rc;
}

int hwt_step_untraced_detach(struct step_collector *c, struct hwt_err *err)
{
	int rc = hwt_seize_detach(c->untraced, err);

	c->base.state = HWT_COLLECTOR_ENDED;
	return rc;
}

void hwt_step_untraced_close(struct step_collector *c)
{
	if (!c->untraced)
		return;
	hwt_seize_close(c->untraced);
	free(c->untraced);
	c->untraced = NULL;
	c->base.state = HWT_COLLECTOR_ENDED;   /* killed and reaped */
}
