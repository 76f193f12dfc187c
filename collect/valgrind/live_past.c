// SPDX-License-Identifier: BSD-2-Clause
/* live_past.c - the values of the past under live control (hwt-server):
 * registers and memory before any instruction of the newest part of a
 * stopped thread's history, and who wrote what a watch covers.
 *
 * The tool keeps the data history in its ring while the program runs
 * (vgdata.h). Only when a debugger asks about the past at a stop is the
 * ring written out as things stand (monitor command hwt.data, which
 * leaves the ring as it is) and turned into a data history (data.c);
 * the result serves every question until the program moves again or the
 * debugger writes to it. What a debugger is about to overwrite goes to
 * the ring first (hwt.regs, hwt.write), so that the past before it shows
 * what the program held, not what the debugger put there.
 *
 * Numbering: the collector counts a stopped thread's instructions up to
 * the one it stands at (not yet run, the last of its history); the data
 * history's newest instruction is the last one that ran. Indices are
 * matched from there back.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os/proc.h"
#include "valgrind/data.h"
#include "vg.h"
#include "util.h"

/* The largest data file read: the tool's ring (hwtrace record --values
 * bounds it) and its layouts. */
#define DATA_FILE_MAX ((size_t)1 << 36)

bool vg_keeps_past(const struct hwt_collector *base)
{
	return ((const struct vg_collector *)base)->data_path != NULL;
}

void vg_live_past_drop(struct vg_collector *c)
{
	if (c->live_past) {
		hwt_vg_data_free(c->live_past);
		free(c->live_past);
	}
	c->live_past = NULL;
	c->live_past_built = false;
}

/* Build the data history of this stop, once. NULL: none (not kept, or
 * the file does not agree with the history: err says why). */
static const struct hwt_past *build(struct vg_collector *c,
				    struct hwt_err *err)
{
	struct hwt_vg_data_thread *t = NULL;
	struct hwt_past *p = NULL;
	uint8_t *file = NULL;
	size_t len = 0, n = 0;
	int rc;

	if (c->live_past_built)
		return c->live_past;
	c->live_past_built = true;
	if (!c->data_path || !c->link_up || c->ended) {
		hwt_err_set(err, ENOENT, "no values of the past are kept");
		return NULL;
	}
	remove(c->data_path);
	if ((rc = vg_link_monitor(&c->link, "hwt.data", err)) < 0 ||
	    (rc = hwt_read_file(c->data_path, DATA_FILE_MAX, &file, &len,
				err)) < 0)
		return NULL;
	t = calloc(c->rd.nthreads ? c->rd.nthreads : 1, sizeof(*t));
	p = calloc(1, sizeof(*p));
	if (!t || !p) {
		hwt_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < c->rd.nthreads; i++) {
		t[n].tid = c->rd.threads[i].tid;
		if (hwt_vg_reader_ran_pc(&c->rd, &c->rd.threads[i],
					 &t[n].last_pc))
			n++;
	}
	if (hwt_vg_data_build(file, len, t, n, p, err) == 0) {
		struct hwt_err ignored = { 0 };

		/* Without its index it still answers, walking every store
		 * (a recorder's history: nothing to read). */
		hwt_past_memory(p, &ignored);
		c->live_past = p;
		p = NULL;
	}
out:
	free(p);
	free(t);
	free(file);
	remove(c->data_path);
	return c->live_past;
}

/* Thread tid's collector index of the last instruction that ran. */
static bool ran_index(const struct vg_collector *c, pid_t tid, uint64_t *out)
{
	for (size_t i = 0; i < c->rd.nthreads; i++) {
		const struct hwt_vg_thread *t = &c->rd.threads[i];
		uint64_t total = t->ring.insn_total;

		if (t->tid != tid)
			continue;
		if (total < (t->ahead ? 2u : 1u))
			return false;
		*out = total - (t->ahead ? 2u : 1u);
		return true;
	}
	return false;
}

/* Collector index -> the data history's (one past its newest: the
 * instruction the thread stands at). */
static bool to_data(const struct vg_collector *c, const struct hwt_past *p,
		    pid_t tid, uint64_t index, uint64_t *out)
{
	const struct hwt_past_thread *pt = hwt_past_thread_of(p, tid);
	uint64_t ran;

	if (!pt || !ran_index(c, tid, &ran) || index > ran + 1 ||
	    (index <= ran && ran - index > pt->end_index))
		return false;
	*out = index > ran ? pt->end_index + 1 : pt->end_index - (ran - index);
	return true;
}

static bool to_collector(const struct vg_collector *c,
			 const struct hwt_past *p, pid_t tid, uint64_t index,
			 uint64_t *out)
{
	const struct hwt_past_thread *pt = hwt_past_thread_of(p, tid);
	uint64_t ran;

	if (!pt || !ran_index(c, tid, &ran) || index > pt->end_index + 1 ||
	    (index <= pt->end_index && pt->end_index - index > ran))
		return false;
	*out = index > pt->end_index ? ran + 1 : ran - (pt->end_index - index);
	return true;
}

int vg_regs_at(struct hwt_collector *base, pid_t tid, uint64_t insn,
	       int nt_type, void *out, struct hwt_err *err)
{
	struct vg_collector *c = vg_of(base);
	struct hwt_err local = { 0 };
	const struct hwt_past *p = build(c, err ? err : &local);
	const struct hwt_past_thread *pt;
	uint64_t index;

	if (!p)
		return -ENOENT;
	if (!to_data(c, p, tid, insn, &index) ||
	    !(pt = hwt_past_thread_of(p, tid)) ||
	    hwt_reglog_get(nt_type == NT_PRSTATUS ? &pt->regs : &pt->fpregs,
			   index, out) < 0)
		return hwt_err_set(err, ENOENT, "no registers kept for "
				   "instruction %llu of thread %d",
				   (unsigned long long)insn, (int)tid);
	return 0;
}

/* The program's memory now, where the data history ends. */
static size_t read_now(void *ctx, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = hwt_proc_mem_xfer(*(pid_t *)ctx, addr, buf, len, false);

	return n > 0 ? (size_t)n : 0;
}

/* The memory view of the stop's data history (*scratch to free), or
 * NULL with *rc: -ENOMEM, else -ENOENT (none kept or none believed). */
static const struct hwt_past *view(struct vg_collector *c,
				   struct hwt_mem_history *h,
				   struct hwt_mem_thread **scratch, int *rc)
{
	struct hwt_err local = { 0 };
	const struct hwt_past *p = build(c, &local);

	*scratch = NULL;
	*rc = local.code == ENOMEM ? -ENOMEM : -ENOENT;
	if (!p)
		return NULL;
	if (!(*scratch = calloc(p->nthreads ? p->nthreads : 1,
				sizeof(**scratch)))) {
		*rc = -ENOMEM;
		return NULL;
	}
	hwt_past_mem_view(p, *scratch, read_now, &c->base.pid, h);
	return p;
}

int vg_mem_at(struct hwt_collector *base, pid_t tid, uint64_t insn,
	      uint64_t addr, void *buf, size_t len, struct hwt_err *err)
{
	struct vg_collector *c = vg_of(base);
	struct hwt_mem_thread *scratch;
	struct hwt_mem_history h;
	uint64_t index;
	int rc;
	const struct hwt_past *p = view(c, &h, &scratch, &rc);

	if (!p)
		return hwt_err_set(err, -rc, "no memory of the past kept");
	if (!to_data(c, p, tid, insn, &index)) {
		free(scratch);
		return hwt_err_set(err, ENOENT, "thread %d has no memory "
				   "history at instruction %llu", (int)tid,
				   (unsigned long long)insn);
	}
	rc = hwt_mem_history_at(&h, tid, index, addr, buf, len);
	free(scratch);
	return rc < 0 ? hwt_err_set(err, -rc, "reading the memory history")
		      : rc;
}

/* The step after the newest of every thread. */
static uint64_t now_step(const struct hwt_past *p)
{
	uint64_t now = 0;

	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].last_seq + 1 > now)
			now = p->threads[i].last_seq + 1;
	return now;
}

int vg_find_write(struct hwt_collector *base, const struct hwt_write_query *q,
		  struct hwt_write_found *out, struct hwt_err *err)
{
	struct vg_collector *c = vg_of(base);
	struct hwt_mem_thread *scratch;
	struct hwt_mem_history h;
	struct hwt_write_query dq = *q;
	int rc;
	const struct hwt_past *p = view(c, &h, &scratch, &rc);

	/* None kept: no write can be told. */
	if (!p)
		return rc == -ENOMEM ? hwt_err_set(err, ENOMEM, "out of "
						   "memory") : 0;
	if (!q->len || q->len > HWT_MEM_WATCH_MAX || q->addr + q->len < q->addr)
		rc = hwt_err_set(err, EINVAL, "a watched range of 1 to %u "
				 "bytes", HWT_MEM_WATCH_MAX);
	else if (!to_data(c, p, q->tid, q->from, &dq.from))
		rc = 0;      /* before the values begin: none can be told */
	else {
		/* From where the thread stands, which the data history
		 * does not hold: every thread is stopped, so that is after
		 * the newest step of all. */
		if (dq.from_step == HWT_MEM_NO_BOUND &&
		    dq.from > hwt_past_thread_of(p, q->tid)->end_index)
			dq.from_step = now_step(p);
		if (q->until != HWT_MEM_NO_BOUND &&
		    !to_data(c, p, q->tid, q->until, &dq.until))
			dq.until = HWT_MEM_NO_BOUND;
		rc = hwt_mem_history_find_write(&h, &dq, out);
		if (rc == 1 && !to_collector(c, p, out->tid, out->index,
					     &out->index))
			rc = 0;
	}
	free(scratch);
	return rc;
}

int vg_index_at_step(struct hwt_collector *base, pid_t tid, uint64_t step,
		     uint64_t *index, struct hwt_err *err)
{
	struct vg_collector *c = vg_of(base);
	struct hwt_mem_thread *scratch;
	struct hwt_mem_history h;
	uint64_t di;
	bool ok;
	int rc;
	const struct hwt_past *p = view(c, &h, &scratch, &rc);

	if (!p)
		return hwt_err_set(err, -rc, "no order of steps kept");
	ok = hwt_mem_history_index_at(&h, tid, step, &di) &&
	     to_collector(c, p, tid, di, index);
	free(scratch);
	return ok ? 0 : hwt_err_set(err, ENOENT, "thread %d has no step in "
				    "its memory history at %llu", (int)tid,
				    (unsigned long long)step);
}

void vg_memory_written(struct hwt_collector *base, uint64_t addr, size_t len)
{
	struct vg_collector *c = vg_of(base);
	char cmd[64];

	if (!c->data_path || !c->link_up || c->ended || !len)
		return;
	snprintf(cmd, sizeof(cmd), "hwt.write %llx %zx",
		 (unsigned long long)addr, len);
	/* Should the tool not hear it, the past is at worst the bytes the
	 * debugger wrote: nothing else to do about it here. */
	vg_link_monitor(&c->link, cmd, &(struct hwt_err){ 0 });
	vg_live_past_drop(c);
}

int vg_registers_written(struct vg_collector *c, pid_t tid, bool jump,
			 struct hwt_err *err)
{
	char cmd[48];
	int rc;

	if (!c->data_path)
		return 0;
	snprintf(cmd, sizeof(cmd), "hwt.regs %x%s", (unsigned)tid,
		 jump ? " jump" : "");
	rc = vg_link_monitor(&c->link, cmd, err);
	vg_live_past_drop(c);
	return rc < 0 ? rc : 0;
}
