// SPDX-License-Identifier: BSD-2-Clause
/* memquery.c - questions to the live memory history (memlog.c) under
 * live control: memory at a recorded instruction, who wrote a range, and
 * the instruction of a step; common/memhist.c answers them over a view of
 * every thread's log. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "tracer.h"

/* Today's memory of the stopped process, where the live history ends. */
static size_t read_now(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t got = process_vm_readv(*(pid_t *)ctx, &local, 1, &remote, 1,
				       0);

	return got > 0 ? (size_t)got : 0;
}

/* The live log as common/memhist.c asks it; threads has room for
 * c->nthreads. */
static void view_of(struct step_collector *c, struct hwt_mem_thread *threads,
		    struct hwt_mem_history *h)
{
	for (size_t i = 0; i < c->nthreads; i++) {
		const struct step_thread *t = c->threads[i];

		threads[i] = (struct hwt_mem_thread){
			.tid = t->tid, .runs = t->runs, .nruns = t->nruns,
			.last_seq = t->mem_seq,
		};
	}
	*h = (struct hwt_mem_history){
		.e = c->memlog.e, .n = c->memlog.n, .bytes = c->memlog.bytes,
		.horizon = c->memlog.horizon, .threads = threads,
		.nthreads = c->nthreads, .read_now = read_now,
		.ctx = &c->base.pid,
	};
}

/* The view the questions of thread tid go to (*threads: its threads,
 * freed by the caller), or an error when tid keeps no memory history. */
static int view_for(struct step_collector *c, pid_t tid,
		    struct hwt_mem_thread **threads, struct hwt_mem_history *h,
		    struct hwt_err *err)
{
	struct step_thread *t = hwt_step_thread_find(c, tid);

	if (!t || !t->memlog)
		return hwt_err_set(err, ENOENT, "thread %d has no memory "
				   "history", (int)tid);
	if (!(*threads = calloc(c->nthreads, sizeof(**threads))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	view_of(c, *threads, h);
	return 0;
}

int hwt_step_mem_at(struct hwt_collector *base, pid_t tid, uint64_t index,
		    uint64_t addr, void *buf, size_t len, struct hwt_err *err)
{
	struct hwt_mem_thread *threads;
	struct hwt_mem_history h;
	int rc = view_for(step_of(base), tid, &threads, &h, err);

	if (rc)
		return rc;
	rc = hwt_mem_history_at(&h, tid, index, addr, buf, len);
	free(threads);
	return rc < 0 ? hwt_err_set(err, -rc, "reading the memory history") : rc;
}

int hwt_step_find_write(struct hwt_collector *base,
			const struct hwt_write_query *q,
			struct hwt_write_found *out, struct hwt_err *err)
{
	struct hwt_mem_thread *threads;
	struct hwt_mem_history h;
	int rc = view_for(step_of(base), q->tid, &threads, &h, err);

	if (rc)
		return rc;
	if (!q->len || q->len > HWT_MEM_WATCH_MAX || q->addr + q->len < q->addr)
		rc = hwt_err_set(err, EINVAL, "a watched range of 1 to %u "
				 "bytes", HWT_MEM_WATCH_MAX);
	else if ((rc = hwt_mem_history_find_write(&h, q, out)) < 0)
		rc = hwt_err_set(err, -rc, "searching the memory history");
	free(threads);
	return rc;
}

int hwt_step_index_at_step(struct hwt_collector *base, pid_t tid,
			   uint64_t step, uint64_t *index, struct hwt_err *err)
{
	struct hwt_mem_thread *threads;
	struct hwt_mem_history h;
	int rc = view_for(step_of(base), tid, &threads, &h, err);
	bool ok;

	if (rc)
		return rc;
	ok = hwt_mem_history_index_at(&h, tid, step, index);
	free(threads);
	return ok ? 0 : hwt_err_set(err, ENOENT, "thread %d has no step in "
				    "the memory history", (int)tid);
}
