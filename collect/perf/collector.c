// SPDX-License-Identifier: BSD-2-Clause
/* collector.c - what the perf backends share: a recorder over the
 * seized-program layer (collect/seize/seize.h) with one trace event per thread.
 *
 * perf refuses to map the buffer of an inherited per-thread event (all
 * children would write into one buffer), so every thread gets an event of
 * its own with its own AUX area: the program's first thread before its
 * execve (the event turns on at the exec), each thread it creates at its
 * clone stop, before it runs. Each ring is drained while its thread runs
 * (its wakeups are polled between ptrace stops), for the last time at the
 * thread's exit stop (its event is then closed) or when the program ends
 * or is held at a fault. Mappings come from every event's MMAP2 sideband:
 * a thread's mmap is reported on its own event, and a library dlclose'd
 * before the end is still among them. A fatal signal stops the program
 * with every thread held, for a core and finish, as in the module
 * backend. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "seize/seize.h"
#include "perf.h"
#include "array.h"

struct perf_thread {
	pid_t tid;
	struct hwt_perf_event ev;     /* closed once the thread is done */
	struct hwt_perf_buf trace;
	bool done;                    /* drained for the last time */
};

struct perf_collector {
	struct hwt_collector base;
	const struct hwt_perf_kind *kind;
	/* Options for the events of threads created later: pt_filters
	 * points into filters, a copy the collector owns. */
	struct hwt_collect_opts opts;
	struct hwt_collect_ip_filter *filters;
	struct hwt_perf_attr attr;
	uint64_t aux_size;            /* 0: sideband only */
	struct hwt_seize seize;
	struct perf_thread *threads;  /* threads[i] is polled as pfds[i] */
	struct pollfd *pfds;
	size_t nthreads, alloc;
	struct hwt_perf_stats stats;
	struct hwt_modset mods;
	struct hwt_collect_thread *out;
	size_t nout;
};

static struct perf_collector *perf_of(struct hwt_collector *c)
{
	return (struct perf_collector *)c;
}

int hwt_perf_available(const struct hwt_perf_kind *k, struct hwt_err *err)
{
	struct hwt_pmu pmu;

	return hwt_pmu_open(NULL, k->pmu, k->what, &pmu, err);
}

static struct perf_thread *find_thread(struct perf_collector *c, pid_t tid,
				       size_t *index)
{
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i].tid == tid && !c->threads[i].done) {
			*index = i;
			return &c->threads[i];
		}
	return NULL;
}

static int on_mmap(void *arg, const struct hwt_perf_mmap *m,
		   struct hwt_err *err)
{
	struct perf_collector *c = arg;

	return hwt_modset_add(&c->mods, m->path, m->addr, m->pgoff, err);
}

/* Read what the kernel has written so far into a thread's ring. */
static int drain(struct perf_collector *c, struct perf_thread *t,
		 struct hwt_err *err)
{
	int rc = hwt_perf_ring_records(&t->ev.ring, &c->stats, on_mmap, c,
				       err);

	if (rc < 0 || !c->aux_size || c->opts.perf_snapshot)
		return rc;
	return hwt_perf_aux_drain(&t->ev.ring, &t->trace, err);
}

/* The thread will record no more: the last read of its ring. */
static int drain_last(struct perf_collector *c, struct perf_thread *t,
		      struct hwt_err *err)
{
	int rc = drain(c, t, err);

	if (rc == 0 && c->aux_size && c->opts.perf_snapshot)
		rc = hwt_perf_aux_snapshot(&t->ev.ring, &t->trace, err);
	t->done = true;
	return rc;
}

/* seize attach: open, set up and map the thread's event. */
static int perf_attach(void *ctx, pid_t tid, bool first, struct hwt_err *err)
{
	struct perf_collector *c = ctx;
	const struct hwt_perf_kind *k = c->kind;
	struct perf_thread *t;
	int rc;

	if (c->nthreads == HWT_BUNDLE_MAX_THREADS)
		return 0;   /* a bundle holds no more: later ones run free */
	/* threads[i] is polled through pfds[i]: one capacity for both */
	{
		size_t pcap = c->alloc;

		if (HWT_ARRAY_RESERVE(c->pfds, pcap, c->nthreads + 1, 8) ||
		    HWT_ARRAY_RESERVE(c->threads, c->alloc, pcap, 8))
			return hwt_err_set(err, ENOMEM, "out of memory");
	}
	t = &c->threads[c->nthreads];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->trace.max = c->opts.buffer_size;
	t->trace.granule = k->granule;
	if ((rc = hwt_perf_event_open(&c->attr, tid, first, k->what, &t->ev,
				      err)) < 0 ||
	    (k->setup && (rc = k->setup(&t->ev, &c->opts, err)) < 0) ||
	    (rc = hwt_perf_event_map(&t->ev, c->aux_size,
				     c->opts.perf_snapshot, err)) < 0) {
		hwt_perf_event_close(&t->ev);
		return rc;
	}
	c->pfds[c->nthreads] = (struct pollfd){ .fd = t->ev.fd,
						.events = POLLIN };
	c->nthreads++;
	return 0;
}

/* seize exiting: the thread runs no more user code; its ring is complete
 * and its event (and locked AUX memory) can go. */
static int perf_exiting(void *ctx, pid_t tid, struct hwt_err *err)
{
	struct perf_collector *c = ctx;
	size_t i;
	struct perf_thread *t = find_thread(c, tid, &i);
	int rc;

	if (!t)
		return 0;   /* untraced: past the thread limit */
	rc = drain_last(c, t, err);
	hwt_perf_event_close(&t->ev);
	c->pfds[i].fd = -1;
	return rc;
}

static size_t perf_pollfds(void *ctx, struct pollfd **fds)
{
	struct perf_collector *c = ctx;

	*fds = c->pfds;
	return c->nthreads;
}

static int perf_readable(void *ctx, struct hwt_err *err)
{
	struct perf_collector *c = ctx;
	int rc;

	for (size_t i = 0; i < c->nthreads; i++) {
		short ev = c->pfds[i].fd >= 0 ? c->pfds[i].revents : 0;

		if (ev & POLLIN && (rc = drain(c, &c->threads[i], err)) < 0)
			return rc;
		/* The event's task is gone: it will say nothing more. */
		if (ev & (POLLHUP | POLLERR))
			c->pfds[i].fd = -1;
	}
	return 0;
}

static const struct hwt_seize_ops perf_ops = {
	.attach = perf_attach,
	.exiting = perf_exiting,
	.pollfds = perf_pollfds,
	.readable = perf_readable,
};

void hwt_perf_close(struct hwt_collector *base)
{
	struct perf_collector *c = perf_of(base);

	hwt_seize_close(&c->seize);
	for (size_t i = 0; i < c->nthreads; i++) {
		hwt_perf_event_close(&c->threads[i].ev);
		hwt_perf_buf_free(&c->threads[i].trace);
	}
	free(c->threads);
	free(c->pfds);
	free(c->out);
	for (size_t i = 0; i < c->opts.pt_nfilters; i++)
		free((char *)c->filters[i].file);
	free(c->filters);
	hwt_modset_free(&c->mods);
	free(c);
}

/* Keep the address filters for the events of threads created later. */
static int copy_filters(struct perf_collector *c,
			const struct hwt_collect_opts *opts,
			struct hwt_err *err)
{
	size_t n = opts->pt_filters ? opts->pt_nfilters : 0;

	c->opts.pt_filters = NULL;
	c->opts.pt_nfilters = 0;
	if (n == 0)
		return 0;
	if (!(c->filters = calloc(n, sizeof(*c->filters))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++, c->opts.pt_nfilters++) {
		c->filters[i] = opts->pt_filters[i];
		if (opts->pt_filters[i].file &&
		    !(c->filters[i].file = strdup(opts->pt_filters[i].file)))
			return hwt_err_set(err, ENOMEM, "out of memory");
	}
	c->opts.pt_filters = c->filters;
	return 0;
}

int hwt_perf_launch(const struct hwt_perf_kind *k,
		    const struct hwt_collect_opts *opts, char *const argv[],
		    struct hwt_collector **out, struct hwt_err *err)
{
	struct perf_collector *c;
	struct hwt_pmu pmu;
	int rc;

	if (!(c = calloc(1, sizeof(*c))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	c->base.backend = k->backend;
	c->base.tracer_tid = gettid();
	c->kind = k;
	c->opts = *opts;
	hwt_seize_init(&c->seize, &perf_ops, c, argv[0]);
	if ((rc = copy_filters(c, opts, err)) < 0 ||
	    (rc = hwt_pmu_open(NULL, k->pmu, k->what, &pmu, err)) < 0 ||
	    (rc = k->configure(&pmu, opts, &c->attr, err)) < 0)
		goto fail;
	c->attr.type = pmu.type;
	c->aux_size = k->sideband_only ? 0 :
		hwt_perf_aux_size_for(opts->buffer_size);
	if (opts->live_control && opts->perf_snapshot) {
		rc = hwt_err_set(err, EINVAL, "a flight recorder (perf "
				 "snapshot mode) has no history to show "
				 "between stops; drop it for live control");
		goto fail;
	}
	/* Live: the first thread's event is turned on at its exec. */
	if ((rc = hwt_seize_start(&c->seize, argv, opts->live_control,
				  &c->base.pid, err)) < 0)
		goto fail;
	*out = &c->base;
	return 0;
fail:
	hwt_perf_close(&c->base);
	return rc;
}

/* Describe every thread's trace: read so far (a live program stopped), or
 * for the last time (last: the program is gone, held or let go). */
static int collect_out(struct perf_collector *c, bool last,
		       struct hwt_err *err)
{
	int rc;

	free(c->out);
	c->nout = 0;
	if (!(c->out = calloc(c->nthreads ? c->nthreads : 1,
			      sizeof(*c->out))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < c->nthreads; i++) {
		struct perf_thread *t = &c->threads[i];

		if (!t->done && (rc = last ? drain_last(c, t, err)
					   : drain(c, t, err)) < 0)
			return rc;
		c->out[i] = (struct hwt_collect_thread){
			.tid = t->tid,
			.format = c->kind->format,
			.trace = t->trace.data,
			.trace_size = t->trace.len,
			.lost_bytes = t->trace.dropped,
			.exited = hwt_seize_exited(&c->seize, t->tid),
		};
	}
	c->nout = c->nthreads;
	return 0;
}

int hwt_perf_run(struct hwt_collector *base, struct hwt_err *err)
{
	struct perf_collector *c = perf_of(base);
	int rc = hwt_seize_run(&c->seize, err);

	if (c->seize.reaped || c->seize.faulted) {
		c->base.end = c->seize.end;
		c->base.state = c->seize.faulted ? HWT_COLLECTOR_FAULTED :
			HWT_COLLECTOR_ENDED;
	}
	if (rc < 0)
		return rc;
	return collect_out(c, true, err);
}

int hwt_perf_write_core(struct hwt_collector *base, const char *path,
			struct hwt_err *err)
{
	return hwt_seize_write_core(&perf_of(base)->seize, path, err);
}

int hwt_perf_finish(struct hwt_collector *base, struct hwt_err *err)
{
	struct perf_collector *c = perf_of(base);
	int rc = hwt_seize_finish(&c->seize, err);

	c->base.state = HWT_COLLECTOR_ENDED;
	if (c->seize.reaped)
		c->base.end = c->seize.end;
	for (size_t i = 0; i < c->nout; i++)
		c->out[i].exited = true;
	return rc;
}

size_t hwt_perf_threads(struct hwt_collector *base,
			const struct hwt_collect_thread **threads)
{
	struct perf_collector *c = perf_of(base);
	struct hwt_err why = { 0 };

	/* Live and stopped: the trace read so far (a stopped thread is
	 * switched out, so the hardware has flushed its trace to AUX). */
	if (c->seize.live && base->state != HWT_COLLECTOR_ENDED &&
	    collect_out(c, false, &why) < 0)
		c->nout = 0;
	*threads = c->out;
	return c->nout;
}

size_t hwt_perf_modules(struct hwt_collector *base,
			const struct hwt_collect_module **modules)
{
	struct perf_collector *c = perf_of(base);

	*modules = c->mods.v;
	return c->mods.n;
}

/* ---- live control (collect/seize/live.c) ------------------------------ */

/* Launched without live_control: still held before its execve. */
int hwt_perf_live_start(struct hwt_collector *base, struct hwt_err *err)
{
	return hwt_seize_live_start(&perf_of(base)->seize, err);
}

int hwt_perf_resume(struct hwt_collector *base,
		    const struct hwt_resume_opts *opts,
		    struct hwt_collect_event *event, struct hwt_err *err)
{
	struct perf_collector *c = perf_of(base);
	int rc = hwt_seize_resume(&c->seize, opts, event, err);

	if (rc < 0 || !hwt_seize_event_ends(event))
		return rc;
	c->base.state = HWT_COLLECTOR_ENDED;
	c->base.end = c->seize.end;
	return collect_out(c, true, err);
}

size_t hwt_perf_live_tids(struct hwt_collector *base, pid_t *tids,
			  size_t cap)
{
	return hwt_seize_live_tids(&perf_of(base)->seize, tids, cap);
}

int hwt_perf_regset(struct hwt_collector *base, pid_t tid, int nt_type,
		    void *buf, size_t *len, bool write, struct hwt_err *err)
{
	return hwt_seize_regset(&perf_of(base)->seize, tid, nt_type, buf, len,
				write, err);
}

/* The trace so far is read for the last time and every event closed
 * before the threads go on untraced. */
int hwt_perf_detach(struct hwt_collector *base, struct hwt_err *err)
{
	struct perf_collector *c = perf_of(base);
	int rc;

	c->base.state = HWT_COLLECTOR_ENDED;
	rc = collect_out(c, true, err);
	for (size_t i = 0; i < c->nthreads; i++) {
		hwt_perf_event_close(&c->threads[i].ev);
		c->pfds[i].fd = -1;
	}
	if (rc == 0)
		return hwt_seize_detach(&c->seize, err);
	hwt_seize_detach(&c->seize, NULL);
	return rc;
}
