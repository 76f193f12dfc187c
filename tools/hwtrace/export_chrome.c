// SPDX-License-Identifier: BSD-2-Clause
/* export_chrome.c - `hwtrace export --chrome`: the call history as Trace
 * Event JSON, which Perfetto's UI and chrome://tracing open.
 *
 * Every function activation (flame.h) is a complete event ("ph": "X")
 * on its thread's track, nested in time as the calls were; gaps and
 * signal deliveries are instant events ("ph": "i"); thread and process
 * names are metadata events. Time ("ts", "dur", in microseconds for the
 * viewers) is the trace's own where it has timestamps (Intel PT's TSC,
 * converted to nanoseconds with perf's conversion when the bundle has
 * it), else the instruction index: one instruction, one microsecond.
 * otherData.clock says which. The fault that ended a crashed process is
 * an instant event at the end of its thread; asynchronous transfers are
 * "signal" events in software recordings (only signal deliveries are
 * asynchronous there) and "async" ones in hardware traces (interrupts
 * and context switches are too). */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "flame.h"

/* Time base of one thread's events, and what its asynchronous
 * transfers are. */
struct clock {
	bool tsc;                 /* trace time, else instruction indices */
	/* With instruction indices: where the thread's history starts on
	 * its track (after the programs an exec replaced, which ran first
	 * on the same one). */
	uint64_t offset;
	const struct hwt_bundle *b;
	/* The software recorders flag only signal deliveries as async;
	 * hardware traces flag interrupts and context switches too. */
	bool async_is_signal;
};

/* perf's TSC to nanoseconds (perf_event_mmap_page's time_* fields). */
static uint64_t tsc_ns(const struct hwt_tsc_conv *c, uint64_t tsc)
{
	uint64_t quot = tsc >> c->time_shift;
	uint64_t rem = tsc & ((1ull << c->time_shift) - 1);

	return c->time_zero + quot * c->time_mult +
	       ((rem * c->time_mult) >> c->time_shift);
}

/* A point in the viewer's microseconds. */
static double at(const struct clock *k, uint64_t item, uint64_t time)
{
	if (!k->tsc)
		return (double)(item + k->offset);
	if (k->b->has_tsc_conv)
		return (double)tsc_ns(&k->b->tsc_conv, time) / 1000.0;
	return (double)time;
}

static const char *clock_name(const struct hwt_bundle *b, bool tsc)
{
	if (!tsc)
		return "instructions (1 instruction = 1 us)";
	return b->has_tsc_conv ? "trace time (TSC, converted to ns)"
			       : "trace time (TSC ticks as us)";
}

static int add(json_object *arr, json_object *ev)
{
	if (!ev || json_object_array_add(arr, ev)) {
		json_object_put(ev);
		return -ENOMEM;
	}
	return 0;
}

static json_object *base_event(const char *name, const char *ph, int64_t pid,
			       int64_t tid)
{
	json_object *ev = json_object_new_object();

	if (!ev)
		return NULL;
	json_object_object_add(ev, "name", json_object_new_string(name));
	json_object_object_add(ev, "ph", json_object_new_string(ph));
	json_object_object_add(ev, "pid", json_object_new_int64(pid));
	json_object_object_add(ev, "tid", json_object_new_int64(tid));
	return ev;
}

static int name_event(json_object *arr, const char *what, int64_t pid,
		      int64_t tid, const char *name)
{
	json_object *ev = base_event(what, "M", pid, tid), *args;

	if (!ev)
		return -ENOMEM;
	args = json_object_new_object();
	json_object_object_add(args, "name", json_object_new_string(name));
	json_object_object_add(ev, "args", args);
	return add(arr, ev);
}

static int frame_event(json_object *arr, const struct clock *k, int64_t pid,
		       int64_t tid, const struct flame_frame *fr)
{
	double t0 = at(k, fr->first, fr->t_first);
	double t1 = at(k, fr->last + 1, fr->t_last);
	json_object *ev = base_event(fr->function ? fr->function : "??", "X",
				     pid, tid), *args;
	char lines[48];

	if (!ev)
		return -ENOMEM;
	json_object_object_add(ev, "cat", json_object_new_string("function"));
	json_object_object_add(ev, "ts", json_object_new_double(t0));
	/* A trace time can repeat between instructions: never negative. */
	json_object_object_add(ev, "dur", json_object_new_double(t1 > t0 ? t1 - t0 : 0));
	args = json_object_new_object();
	if (fr->file)
		json_object_object_add(args, "file", json_object_new_string(fr->file));
	if (fr->line_min) {
		snprintf(lines, sizeof(lines), "%d-%d", fr->line_min, fr->line_max);
		json_object_object_add(args, "lines", json_object_new_string(lines));
	}
	json_object_object_add(args, "first_insn", json_object_new_int64((int64_t)fr->first));
	json_object_object_add(args, "last_insn", json_object_new_int64((int64_t)fr->last));
	json_object_object_add(args, "depth", json_object_new_int(fr->depth));
	json_object_object_add(ev, "args", args);
	return add(arr, ev);
}

static int mark_event(json_object *arr, const struct clock *k, int64_t pid,
		      int64_t tid, const struct flame_mark *m)
{
	const char *name = m->kind == FLAME_GAP ? "gap" : m->what ? "fault" :
			   k->async_is_signal ? "signal" : "async";
	json_object *ev = base_event(name, "i", pid, tid), *args;

	if (!ev)
		return -ENOMEM;
	json_object_object_add(ev, "cat", json_object_new_string(name));
	json_object_object_add(ev, "s", json_object_new_string("t"));
	json_object_object_add(ev, "ts", json_object_new_double(at(k, m->item, m->time)));
	args = json_object_new_object();
	json_object_object_add(args, "insn", json_object_new_int64((int64_t)m->item));
	if (m->what)
		json_object_object_add(args, "reason", json_object_new_string(m->what));
	else if (!strcmp(name, "async"))
		json_object_object_add(args, "what", json_object_new_string(
			"an asynchronous transfer: an interrupt, a context "
			"switch or a signal"));
	json_object_object_add(ev, "args", args);
	return add(arr, ev);
}

static int thread_events(const struct hwt_bundle *b, size_t t,
			 const struct flame *f, const struct clock *k,
			 json_object *arr)
{
	int64_t pid = hwt_bundle_process_pid(b, b->threads[t].process);
	int64_t tid = b->threads[t].tid;
	char name[64], label[96];
	int rc;

	hwt_bundle_thread_name(b, t, name, sizeof(name));
	snprintf(label, sizeof(label), "thread %s", name);
	/* A program an exec replaced shares its track with the last. */
	rc = hwt_bundle_process_replaced_by(b, b->threads[t].process) ? 0 :
		name_event(arr, "thread_name", pid, tid, label);
	for (size_t i = 0; !rc && i < f->nframes; i++)
		rc = frame_event(arr, k, pid, tid, &f->frames[i]);
	for (size_t i = 0; !rc && i < f->nmarks; i++)
		rc = mark_event(arr, k, pid, tid, &f->marks[i]);
	if (!rc && hwt_bundle_thread_faulted(b, t) && f->nframes) {
		const struct flame_frame *end = &f->frames[0];
		struct flame_mark fault = { .item = f->base + f->items,
					    .kind = FLAME_SIGNAL };

		for (size_t i = 0; i < f->nframes; i++)
			if (f->frames[i].last >= end->last)
				end = &f->frames[i];
		fault.time = end->t_last;
		fault.what = strsignal(b->stop_signal);
		rc = mark_event(arr, k, pid, tid, &fault);
	}
	return rc;
}

/* The items of the histories thread th->thread[t] had in the programs
 * its process ran before, as th shows them. */
static uint64_t earlier_programs(const struct hwt_bundle *b,
				 const struct flame_set *th, size_t t)
{
	const struct hwt_bundle_thread *me = &b->threads[th->thread[t]];
	uint64_t n = 0;

	for (size_t j = 0; j < th->n; j++) {
		const struct hwt_bundle_thread *o = &b->threads[th->thread[j]];

		if (b->processes && o->tid == me->tid &&
		    hwt_bundle_process_pid(b, o->process) ==
		    hwt_bundle_process_pid(b, me->process) &&
		    b->processes[o->process].exec <
		    b->processes[me->process].exec)
			n += hwt_history_count(th->h[j]);
	}
	return n;
}

int export_chrome(const struct hwt_bundle *b, const char *path,
		  const struct cli_window *win, const char *out,
		  struct hwt_err *err)
{
	json_object *root = json_object_new_object(), *arr = json_object_new_array();
	json_object *other = json_object_new_object();
	struct hwt_bundle_images *ims = NULL;
	struct flame_set th = { 0 };
	struct clock k = { .b = b, .async_is_signal =
			   !strcmp(b->type, HWT_BUNDLE_TYPE_SW) };
	bool framed = false;
	char pname[64];
	const char *doc;
	size_t len;
	int rc;

	if (!root || !arr || !other) {
		json_object_put(root);
		json_object_put(arr);
		json_object_put(other);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	json_object_object_add(root, "traceEvents", arr);
	json_object_object_add(root, "otherData", other);
	snprintf(pname, sizeof(pname), "process %" PRId64, b->pid);
	if ((rc = hwt_bundle_images_new(b, &ims, err)) ||
	    (rc = flame_set_build(b, ims, win, &th, err)))
		goto out;
	/* One clock for every track: trace time only if all that have
	 * activations have it. */
	k.tsc = true;
	for (size_t t = 0; t < th.n; t++) {
		framed |= th.f[t].nframes > 0;
		k.tsc &= th.f[t].timed || !th.f[t].nframes;
	}
	k.tsc &= framed;
	rc = name_event(arr, "process_name", b->pid, b->pid, pname);
	for (size_t p = 1; p < hwt_bundle_nprocesses(b) && !rc; p++) {
		int64_t pid = hwt_bundle_process_pid(b, p);

		if (pid == b->pid || hwt_bundle_process_replaced_by(b, p))
			continue;
		snprintf(pname, sizeof(pname), "process %" PRId64 " (forked)",
			 pid);
		rc = name_event(arr, "process_name", pid, pid, pname);
	}
	for (size_t t = 0; t < th.n && !rc; t++) {
		struct clock kt = k;

		kt.offset = k.tsc ? 0 : earlier_programs(b, &th, t);
		rc = thread_events(b, th.thread[t], &th.f[t], &kt, arr);
	}
	if (rc) {
		rc = hwt_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	json_object_object_add(other, "clock", json_object_new_string(
				       clock_name(b, k.tsc)));
	json_object_object_add(other, "source", json_object_new_string(path));
	json_object_object_add(other, "recorder", json_object_new_string(b->type));
	doc = json_object_to_json_string_length(root, JSON_C_TO_STRING_PLAIN, &len);
	rc = doc ? cli_write_file(out, doc, len, err)
		 : hwt_err_set(err, ENOMEM, "out of memory");
out:
	flame_set_free(&th);
	hwt_bundle_images_free(ims);
	json_object_put(root);
	return rc;
}
