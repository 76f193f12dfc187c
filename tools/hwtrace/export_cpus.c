// SPDX-License-Identifier: BSD-2-Clause
/* export_cpus.c - `hwtrace export --lldb --per-cpu`: any x86-64 history
 * as a per-cpu LLDB intel-pt bundle, the shape LLDB's `trace save` writes
 * after per-cpu tracing: cpus[] with each cpu's Intel PT and its perf
 * context-switch records, and tscPerfZeroConversion to line the two up.
 * Readers of such bundles (stock LLDB, replay/pt_switch.c) can so be run
 * on any recording.
 *
 * A recording has no schedule, so a deterministic one is made up. Each
 * thread's history is cut into slices of about --slice items; the slices
 * run one at a time, in rounds of one slice per thread, and round r puts
 * thread t's slice on cpu (t + r) % --cpus, so that threads move between
 * cpus. The j-th slice run holds its cpu from TSC
 * EXPORT_TSC + j * SLICE_TSC (switch-in) for SLICE_TSC / 2 ticks
 * (switch-out). Its Intel PT is a stream of its own (hwt_pt_encode of the
 * slice's items up to the next slice's first one, the stop pc: FUP +
 * TIP.PGD there, where the thread leaves the cpu), every PSB+ of it with
 * TSC SLICE_LEAD ticks after the switch-in, so that the readers, which
 * take a PSB for a thread when its TSC lies between the switches, agree
 * whatever the conversion rounds. A cpu's buffer is its slices' streams
 * in time order. Perf times are those TSCs through a Skylake server's
 * conversion, whose timeZero is above 2^63 as on real machines.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hwt-replay.h"
#include "array.h"

/* A machine up for about 170 days at 2 GHz. */
#define EXPORT_TSC 29000000000000000ull
#define SLICE_TSC 1000000ull
#define SLICE_LEAD 1000ull

/* A Skylake server's perf_event_mmap_page (LLDB's multi-core test
 * bundle): 0.501 ns per tick. */
static const struct hwt_tsc_conv export_conv = {
	.time_mult = 1076264588, .time_shift = 31,
	.time_zero = 18433473881008870804ull,
};

struct cpu_out {
	struct hwt_bytes pt, sw;  /* the cpu's trace, its switch records */
};

struct thread_state {
	struct hwt_history *h;
	uint64_t n;              /* items in the history */
	uint64_t next;           /* first item of its next slice; > n: done */
};

/* Whether a slice may start at item i: an instruction after an
 * instruction, not reached by an asynchronous transfer. The streams
 * start and end at instructions, so a gap next to the cut would be lost,
 * and an asynchronous transfer into the first item would become the
 * stream's start. */
static bool cut_ok(struct hwt_history *h, uint64_t i)
{
	struct hwt_item before, at;

	return hwt_history_get(h, i - 1, &before, NULL) == 0 &&
		hwt_history_get(h, i, &at, NULL) == 0 &&
		before.kind != HWT_ITEM_GAP && at.kind != HWT_ITEM_GAP &&
		!(at.flags & HWT_ITEM_ASYNC);
}

/* The last item of the slice starting at first: the next slice's first
 * item, or the history's last. */
static uint64_t slice_end(const struct thread_state *ts, uint64_t first,
			  uint64_t slice)
{
	uint64_t end = first + slice;

	while (end < ts->n && !cut_ok(ts->h, end))
		end++;
	return end < ts->n ? end : ts->n;
}

/* Slice first..end of thread tid as run number j on cpu c. */
static int run_slice(struct cpu_out *c, const struct thread_state *ts,
		     struct hwt_image *img, const struct hwt_cpu_info *cpu,
		     uint64_t first, uint64_t end, uint64_t j, uint32_t pid,
		     uint32_t tid, struct hwt_err *err)
{
	uint64_t in = EXPORT_TSC + j * SLICE_TSC;
	HWT_OPTS(hwt_pt_encode_opts, opts, .cpu = *cpu,
		 .tsc = in + SLICE_LEAD);
	uint8_t rec[2][HWT_PT_SWITCH_RECORD_SIZE], *pt = NULL;
	size_t size = 0;
	int rc;

	hwt_pt_switch_record(rec[0], false, pid, tid,
			     hwt_tsc_to_perf_ns(&export_conv, in));
	hwt_pt_switch_record(rec[1], true, pid, tid,
			     hwt_tsc_to_perf_ns(&export_conv,
						in + SLICE_TSC / 2));
	if ((rc = hwt_pt_encode(ts->h, img, first, end, &opts, &pt, &size,
				err))) {
		hwt_err_prefix(err, "thread %" PRIu32 ", items %" PRIu64
			       " to %" PRIu64 ": ", tid, first, end);
		return rc;
	}
	rc = hwt_bytes_put(&c->pt, pt, size);
	if (!rc)
		rc = hwt_bytes_put(&c->sw, rec, sizeof(rec));
	free(pt);
	return rc ? hwt_err_set(err, ENOMEM, "out of memory") : 0;
}

/* Every thread's slices, round by round. */
static int schedule(const struct hwt_bundle *b, struct thread_state *st,
		    struct cpu_out *cpus, size_t ncpus, uint64_t slice,
		    struct hwt_image *img, const struct hwt_cpu_info *cpu,
		    struct hwt_err *err)
{
	uint64_t j = 0;
	int rc = 0;

	for (uint64_t r = 0; !rc; r++) {
		bool ran = false;

		for (size_t t = 0; !rc && t < b->nthreads; t++) {
			struct thread_state *ts = &st[t];
			uint64_t first = ts->next, end;

			if (first > ts->n)
				continue;
			end = slice_end(ts, first, slice);
			rc = run_slice(&cpus[(t + r) % ncpus], ts, img, cpu,
				       first, end, j++, (uint32_t)b->pid,
				       (uint32_t)b->threads[t].tid, err);
			ts->next = end < ts->n ? end : ts->n + 1;
			ran = true;
		}
		if (!ran)
			break;
	}
	if (!rc && !j)
		rc = hwt_err_set(err, EINVAL, "no thread has a history to "
				 "export: a per-cpu bundle needs at least one "
				 "instruction");
	return rc;
}

/* Each cpu that ran something as cpus[] of o, its files in staging. */
static int write_cpus(struct cpu_out *cpus, size_t ncpus, const char *staging,
		      struct hwt_bundle *o, struct hwt_err *err)
{
	int rc = 0;

	o->pt_cpus = calloc(ncpus, sizeof(*o->pt_cpus));
	if (!o->pt_cpus)
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t c = 0; !rc && c < ncpus; c++) {
		struct hwt_bundle_pt_cpu *pc = &o->pt_cpus[o->npt_cpus];

		if (!cpus[c].sw.n)
			continue;
		o->npt_cpus++;
		pc->id = (int64_t)c;
		pc->trace_size = cpus[c].pt.n;
		/* The names LLDB's `trace save` gives them. */
		if (asprintf(&pc->trace_file, "cpus/%zu.intelpt_trace", c) < 0)
			pc->trace_file = NULL;
		if (asprintf(&pc->switch_file, "cpus/%zu.perf_context_switch_"
			     "trace", c) < 0)
			pc->switch_file = NULL;
		if (!pc->trace_file || !pc->switch_file)
			return hwt_err_set(err, ENOMEM, "out of memory");
		rc = hwt_bundle_stage_write(staging, pc->trace_file, cpus[c].pt.p,
					    cpus[c].pt.n, err);
		if (!rc)
			rc = hwt_bundle_stage_write(staging, pc->switch_file,
						    cpus[c].sw.p, cpus[c].sw.n,
						    err);
	}
	return rc;
}

int export_per_cpu(const struct hwt_bundle *b, struct hwt_image *img,
		   const struct hwt_cpu_info *cpu, size_t ncpus,
		   uint64_t slice, const char *staging, struct hwt_bundle *o,
		   struct hwt_err *err)
{
	struct thread_state *st = calloc(b->nthreads, sizeof(*st));
	struct cpu_out *cpus = calloc(ncpus, sizeof(*cpus));
	int rc = 0;

	if (!st || !cpus)
		rc = hwt_err_set(err, ENOMEM, "out of memory");
	/* perf's records hold 32-bit ids. */
	if (!rc && (b->pid < 0 || b->pid > UINT32_MAX))
		rc = hwt_err_set(err, EINVAL, "pid %" PRId64 " does not fit "
				 "a perf context-switch record", b->pid);
	for (size_t t = 0; !rc && t < b->nthreads; t++, o->nthreads++) {
		o->threads[t].tid = b->threads[t].tid;
		if (b->threads[t].tid > UINT32_MAX)
			rc = hwt_err_set(err, EINVAL, "tid %" PRId64 " does "
					 "not fit a perf context-switch "
					 "record", b->threads[t].tid);
		else if ((rc = hwt_history_open(b, t, img, &st[t].h, err)))
			hwt_err_prefix(err, "thread %" PRId64 ": ",
				       b->threads[t].tid);
		else
			st[t].n = hwt_history_count(st[t].h);
		st[t].next = 1;
	}
	if (!rc)
		rc = schedule(b, st, cpus, ncpus, slice, img, cpu, err);
	if (!rc)
		rc = write_cpus(cpus, ncpus, staging, o, err);
	if (!rc) {
		o->has_tsc_conv = true;
		o->tsc_conv = export_conv;
	}
	for (size_t t = 0; st && t < b->nthreads; t++)
		hwt_history_free(st[t].h);
	for (size_t c = 0; cpus && c < ncpus; c++) {
		hwt_bytes_free(&cpus[c].pt);
		hwt_bytes_free(&cpus[c].sw);
	}
	free(st);
	free(cpus);
	return rc;
}
