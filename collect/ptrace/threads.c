// SPDX-License-Identifier: BSD-2-Clause
/* threads.c - the table of traced threads: lookup by tid on every stop,
 * a ring per thread, and the per-thread traces handed out at the end. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tracer.h"
#include "array.h"

/* Power of two, at least twice the thread limit, so probes stay short. */
#define TID_INDEX_SIZE 8192u
_Static_assert(TID_INDEX_SIZE >= 2 * HWT_BUNDLE_MAX_THREADS,
	       "tid index must stay at most half full");

static size_t tid_slot(pid_t tid)
{
	return ((uint32_t)tid * 2654435761u) & (TID_INDEX_SIZE - 1);
}

static void index_insert(struct step_collector *c, size_t pos)
{
	size_t s = tid_slot(c->threads[pos]->tid);

	while (c->tid_index[s] >= 0)
		s = (s + 1) & (TID_INDEX_SIZE - 1);
	c->tid_index[s] = (int32_t)pos;
}

/* Threads come and go rarely compared with steps, so removal simply
 * rebuilds the index from the live threads. */
static void index_rebuild(struct step_collector *c)
{
	for (size_t s = 0; s < TID_INDEX_SIZE; s++)
		c->tid_index[s] = -1;
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i]->state != PT_GONE)
			index_insert(c, i);
}

int hwt_step_threads_init(struct step_collector *c, struct hwt_err *err)
{
	c->tid_index = malloc(TID_INDEX_SIZE * sizeof(*c->tid_index));
	if (!c->tid_index)
		return hwt_err_set(err, ENOMEM, "out of memory for thread table");
	index_rebuild(c);
	hwt_step_check_init(c);
	return 0;
}

struct step_thread *hwt_step_thread_find(struct step_collector *c, pid_t tid)
{
	size_t s;

	if (c->last && c->last->tid == tid && c->last->state != PT_GONE)
		return c->last;
	for (s = tid_slot(tid); c->tid_index[s] >= 0;
	     s = (s + 1) & (TID_INDEX_SIZE - 1)) {
		struct step_thread *t = c->threads[c->tid_index[s]];

		if (t->tid == tid)
			return c->last = t;
	}
	return NULL;
}

static void remove_at(struct step_collector *c, size_t i)
{
	struct step_thread *t = c->threads[i];

	if (c->last == t)
		c->last = NULL;
	hwt_sw_ring_free(&t->ring);
	hwt_reglog_free(&t->reglog);
	hwt_reglog_free(&t->fplog);
	free(t);
	memmove(&c->threads[i], &c->threads[i + 1],
		(c->nthreads - i - 1) * sizeof(*c->threads));
	c->nthreads--;
	index_rebuild(c);
}

/* Forget the oldest exited thread to make room for a new one. */
static bool evict_oldest_gone(struct step_collector *c)
{
	for (size_t i = 0; i < c->nthreads; i++) {
		if (c->threads[i]->state != PT_GONE)
			continue;
		remove_at(c, i);
		return true;
	}
	return false;
}

int hwt_step_thread_add(struct step_collector *c, pid_t tid,
		      struct step_thread **out, struct hwt_err *err)
{
	struct step_thread *t;
	int rc;

	if (c->nthreads == HWT_BUNDLE_MAX_THREADS && !evict_oldest_gone(c))
		return hwt_err_set(err, EMFILE,
				   "the program has more than %u live threads, "
				   "the most one recording can hold",
				   HWT_BUNDLE_MAX_THREADS);
	if (HWT_ARRAY_RESERVE(c->threads, c->threads_alloc, c->nthreads + 1,
			      16))
		goto nomem;
	t = calloc(1, sizeof(*t));
	if (!t)
		goto nomem;
	rc = hwt_sw_ring_init(&t->ring, c->buffer_size, c->chunk_payload, err);
	if (rc < 0) {
		free(t);
		return rc;
	}
	t->tid = tid;
	t->state = PT_RUNNING;
	t->log_regs = c->log_regs;
	hwt_reglog_init(&t->reglog, HWT_REGLOG_GPR_WORDS, 4 * c->buffer_size);
	hwt_reglog_init(&t->fplog, HWT_REGLOG_FP_WORDS, 4 * c->buffer_size);
	if (c->log_regs) {
		t->memlog = &c->memlog;
		if (!c->memlog.cap)
			c->memlog.cap = 4 * c->buffer_size;
	}
	/* Live control: a thread born during a resume gets the action for
	 * threads no action names. */
	if (c->live)
		hwt_live_born(&c->rules, &t->lt, &t->announce);
	c->threads[c->nthreads] = t;
	index_insert(c, c->nthreads);
	c->nthreads++;
	*out = c->last = t;
	return 0;
nomem:
	return hwt_err_set(err, ENOMEM, "out of memory recording thread %d",
			   (int)tid);
}

void hwt_step_thread_gone(struct step_collector *c, struct step_thread *t)
{
	if (t->state == PT_GONE)
		return;
	t->state = PT_GONE;
	hwt_step_memlog_thread_died(t->memlog, t->tid);
	index_rebuild(c);
}

void hwt_step_threads_all_gone(struct step_collector *c)
{
	for (size_t i = 0; i < c->nthreads; i++)
		c->threads[i]->state = PT_GONE;
	index_rebuild(c);
}

void hwt_step_thread_forget(struct step_collector *c, struct step_thread *t)
{
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i] == t) {
			remove_at(c, i);
			return;
		}
}

void hwt_step_thread_retid(struct step_collector *c, struct step_thread *t,
			 pid_t tid)
{
	t->tid = tid;
	index_rebuild(c);
}

size_t hwt_step_threads_live(const struct step_collector *c)
{
	size_t n = 0;

	for (size_t i = 0; i < c->nthreads; i++)
		n += c->threads[i]->state != PT_GONE;
	return n;
}

/* Lay out every ring (sealing it for good, or as a snapshot) and size
 * the list handed out. */
static int lay_out_all(struct step_collector *c, bool seal, struct hwt_err *err)
{
	int rc;

	for (size_t i = 0; i < c->nthreads; i++) {
		struct hwt_sw_ring *r = &c->threads[i]->ring;

		rc = seal ? hwt_sw_ring_seal(r, err) : hwt_sw_ring_snapshot(r, err);
		if (rc < 0)
			return hwt_err_prefix(err, "thread %d: ",
					      (int)c->threads[i]->tid);
	}
	free(c->out_threads);
	c->out_threads = calloc(c->nthreads ? c->nthreads : 1,
				sizeof(*c->out_threads));
	if (!c->out_threads)
		return hwt_err_set(err, ENOMEM,
				   "out of memory listing %zu threads",
				   c->nthreads);
	return 0;
}

int hwt_step_threads_seal(struct step_collector *c, struct hwt_err *err)
{
	return lay_out_all(c, true, err);
}

int hwt_step_threads_snapshot(struct step_collector *c, struct hwt_err *err)
{
	return lay_out_all(c, false, err);
}

size_t hwt_step_threads_get(struct hwt_collector *base,
			  const struct hwt_collect_thread **threads)
{
	struct step_collector *c = step_of(base);

	*threads = NULL;
	/* Stopped and alive (launched, attached, between resumes): a fresh
	 * layout of the history up to the current stops. */
	if (base->state == HWT_COLLECTOR_LAUNCHED &&
	    hwt_step_threads_snapshot(c, NULL) < 0)
		return 0;
	if (!c->out_threads)
		return 0;   /* recording failed before the rings were sealed */
	/* Exit states change after the rings are sealed (finish), so the
	 * list is refreshed on every call. */
	for (size_t i = 0; i < c->nthreads; i++) {
		const struct step_thread *t = c->threads[i];
		struct hwt_collect_thread *o = &c->out_threads[i];

		o->tid = t->tid;
		o->trace = t->ring.sealed;
		o->trace_size = t->ring.sealed_size;
		o->lost_bytes = t->ring.lost_bytes;
		o->lost_insns = t->ring.lost_insns;
		o->insn_total = t->ring.insn_total;
		o->step_repairs = t->step_repairs;
		o->step_gaps = t->step_gaps;
		o->exited = t->state == PT_GONE || t->exiting;
	}
	*threads = c->out_threads;
	return c->nthreads;
}

void hwt_step_threads_free(struct step_collector *c)
{
	for (size_t i = 0; i < c->nthreads; i++) {
		hwt_sw_ring_free(&c->threads[i]->ring);
		hwt_reglog_free(&c->threads[i]->reglog);
		hwt_reglog_free(&c->threads[i]->fplog);
		free(c->threads[i]->runs);
		free(c->threads[i]);
	}
	free(c->threads);
	free(c->tid_index);
	free(c->out_threads);
	hwt_step_memlog_free(&c->memlog);
	c->threads = NULL;
	c->tid_index = NULL;
	c->out_threads = NULL;
	c->nthreads = c->threads_alloc = 0;
	c->last = NULL;
}
