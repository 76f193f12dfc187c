// SPDX-License-Identifier: BSD-2-Clause
/* target_live.c - a running process under the collector (kernel/
 * hwt-collect.h, "Live control"): launched stopped at its first
 * instruction or attached, resumed all-stop, recorded while it runs.
 * After each stop the thread list, the modules (image and library list)
 * and every history are refreshed: each thread's history is the
 * collector's snapshot up to the instruction it is stopped at. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/user.h>
#include <unistd.h>

#include "hwt-collect.h"
#include "server.h"
#include "signals.h"

#define MAX_LIVE_THREADS 4096u

struct live {
	struct hwt_collector *c;
	pid_t pid;
	bool gone;                /* exited or killed: no more resumes */
	/* The last stop, for '?' (written in the thread-id form of the
	 * connection asking). */
	struct hwt_collect_event last_ev;
	size_t nmods;             /* modules the image was built from */
	/* The collector's snapshot of this stop, taken once: histories read
	 * its trace bytes, which a new snapshot would replace. */
	const struct hwt_collect_thread *snap;
	size_t nsnap;
};

/* ---- refreshing after a stop --------------------------------------------- */

/* Whether path is mapped in the process now (dlclose'd and pre-exec
 * modules stay in the collector's list for decoding old history, but GDB's
 * library list is of what is loaded). */
static bool mapped_now(pid_t pid, const char *path)
{
	char maps[64], line[4352];
	bool found = false;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *p = strchr(line, '/');
		size_t n = strlen(path);

		found = p && strncmp(p, path, n) == 0 &&
			(p[n] == '\n' || p[n] == '\0');
	}
	fclose(f);
	return found;
}

/* Image and library list from the collector's modules, when they changed. */
static int refresh_modules(struct server *s, struct hwt_err *err)
{
	struct live *l = s->live;
	const struct hwt_collect_module *m;
	size_t n = hwt_collect_modules(l->c, &m), nlib = 0;
	struct srv_module *libs;
	struct hwt_image *img;
	uint8_t *auxv = NULL;
	size_t auxv_len = 0;
	int rc;

	if (s->img && n == l->nmods)
		return 0;
	rc = hwt_image_new(&img, err);
	if (rc)
		return rc;
	libs = calloc(n + 1, sizeof(*libs));
	if (!libs) {
		hwt_image_free(img);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		struct hwt_err ignore = { 0 };

		/* A module that cannot be mapped ([vdso], a deleted file)
		 * only makes its code unreadable. */
		hwt_image_add_elf(img, m[i].path, m[i].load_address, &ignore);
		if (m[i].path[0] == '/' && !m[i].recorder &&
		    mapped_now(l->pid, m[i].path))
			libs[nlib++] = (struct srv_module){ m[i].path, NULL,
							   m[i].load_address };
	}
	if (hwt_collect_auxv(l->c, &auxv, &auxv_len, err) == 0)
		rc = libs_build(s, libs, nlib, libs_at_phdr(auxv, auxv_len), err);
	else
		rc = libs_build(s, libs, nlib, 0, err);
	free(auxv);
	free(libs);
	if (rc) {
		hwt_image_free(img);
		return rc;
	}
	/* Histories read the old image: srv_invalidate dropped them. */
	if (s->img)
		hwt_image_free(s->img);
	s->img = img;
	l->nmods = n;
	return 0;
}

/* The threads alive now, keeping each one's btrace state. A thread that
 * appeared while GDB was recording gets its whole life as trace once GDB
 * enables it (GDB learns of it only at a stop). */
static int refresh_threads(struct server *s, pid_t stop_tid,
			   struct hwt_err *err)
{
	static pid_t tids[MAX_LIVE_THREADS];
	size_t n = hwt_collect_live_tids(s->live->c, tids, MAX_LIVE_THREADS);
	struct srv_thread *v;
	bool recording = false;

	if (n > MAX_LIVE_THREADS)
		n = MAX_LIVE_THREADS;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t j = 0; j < s->nthreads; j++)
		recording |= s->threads[j].btrace_on;
	s->stop_thread = 0;
	for (size_t i = 0; i < n; i++) {
		struct srv_thread *t = &v[i];

		t->tid = tids[i];
		t->bundle_idx = -1;
		t->whole_life = recording;
		for (size_t j = 0; j < s->nthreads; j++) {
			const struct srv_thread *o = &s->threads[j];

			if (o->tid != t->tid)
				continue;
			t->btrace_on = o->btrace_on;
			t->btrace_pt = o->btrace_pt;
			t->btrace_start = o->btrace_start;
			t->whole_life = o->whole_life;
		}
		if (t->tid == stop_tid)
			s->stop_thread = i;
	}
	free(s->threads);
	s->threads = v;
	s->nthreads = n;
	/* GDB takes the stop reply's thread as current without an Hg. */
	s->gthread = s->cthread = s->stop_thread;
	return 0;
}

static int refresh(struct server *s, pid_t stop_tid, struct hwt_err *err)
{
	int rc;

	srv_invalidate(s);
	s->live->nsnap = hwt_collect_threads(s->live->c, &s->live->snap);
	rc = refresh_threads(s, stop_tid, err);
	return rc ? rc : refresh_modules(s, err);
}

/* ---- resuming ------------------------------------------------------------- */

static const char *watch_reason(const struct server *s, uint64_t addr)
{
	for (size_t i = 0; i < s->nwatches; i++)
		if (addr >= s->watches[i].addr &&
		    addr < s->watches[i].addr + s->watches[i].len)
			return s->watches[i].kind == HWT_WATCH_READ ? "rwatch" :
			       s->watches[i].kind == HWT_WATCH_ACCESS ? "awatch" :
								       "watch";
	return "watch";
}

static void stop_reply(struct server *s, const struct hwt_collect_event *ev,
		       char *reply, size_t cap)
{
	char tid[48], proc[48] = "";

	srv_tid_str(s, ev->tid, tid, sizeof(tid));
	/* With the multiprocess extension an exit names its process. */
	if (s->multiprocess)
		snprintf(proc, sizeof(proc), ";process:%llx",
			 (unsigned long long)s->pid);
	switch (ev->kind) {
	case HWT_EVENT_BREAKPOINT:
		snprintf(reply, cap, "T05thread:%s;%s:;", tid,
			 breakpoints_hw_at(s, ev->pc) ? "hwbreak" : "swbreak");
		break;
	case HWT_EVENT_WATCHPOINT:
		snprintf(reply, cap, "T05thread:%s;%s:%llx;", tid,
			 watch_reason(s, ev->data_addr),
			 (unsigned long long)ev->data_addr);
		break;
	case HWT_EVENT_SIGNAL:
		snprintf(reply, cap, "T%02xthread:%s;",
			 hwt_gdb_signal(ev->signal), tid);
		break;
	case HWT_EVENT_INTERRUPTED:
		snprintf(reply, cap, "T02thread:%s;", tid);
		break;
	case HWT_EVENT_EXITING:
		/* --record: stopped as the program starts to exit, its whole
		 * history still there (GDB's record full stops there too);
		 * the next resume lets it end. */
		snprintf(reply, cap, "T00thread:%s;", tid);
		break;
	case HWT_EVENT_EXITED:
		snprintf(reply, cap, "W%02x%s", ev->status & 0xff, proc);
		break;
	case HWT_EVENT_KILLED:
		snprintf(reply, cap, "X%02x%s", hwt_gdb_signal(ev->signal), proc);
		break;
	case HWT_EVENT_THREAD_CREATED:
		/* Asked for with QThreadEvents: the new thread stands at its
		 * first instruction until GDB resumes it. */
		snprintf(reply, cap, "T05create:;thread:%s;", tid);
		break;
	case HWT_EVENT_THREAD_EXITED:
		snprintf(reply, cap, "w%02x;%s", ev->status & 0xff, tid);
		break;
	default:
		snprintf(reply, cap, "T05thread:%s;", tid);
		break;
	}
}

/* Whether one of the actions still moves a live thread: one named, or
 * the default (tid 0) for a live thread no action names. With no live
 * thread left the process is ending: the next resume reports its end. */
static bool moves_left(struct live *l, const struct hwt_resume_action *ra,
		       size_t n)
{
	static pid_t tids[MAX_LIVE_THREADS];
	size_t nt = hwt_collect_live_tids(l->c, tids, MAX_LIVE_THREADS);

	if (nt == 0)
		return true;
	if (nt > MAX_LIVE_THREADS)
		nt = MAX_LIVE_THREADS;
	for (size_t t = 0; t < nt; t++) {
		const struct hwt_resume_action *a = NULL;

		for (size_t i = 0; i < n && !a; i++)
			if (ra[i].tid == tids[t])
				a = &ra[i];
		for (size_t i = 0; i < n && !a; i++)
			if (ra[i].tid == 0)
				a = &ra[i];
		if (a && a->kind != HWT_RESUME_STOP)
			return true;
	}
	return false;
}

static int live_resume(struct server *s, const struct srv_action *acts,
		       size_t nacts, char *reply, size_t cap)
{
	struct live *l = s->live;
	static struct hwt_resume_action ra[HWT_RESUME_MAX_ACTIONS];
	struct hwt_watch w[SRV_MAX_WATCHES];
	struct hwt_resume_opts o = { .sz = sizeof(o) };
	struct hwt_collect_event ev = { 0 };
	struct hwt_err err = { 0 };
	size_t n = 0;
	int rc;

	if (l->gone) {
		snprintf(reply, cap, "E.The process has ended.");
		return -ESRCH;
	}
	for (size_t i = 0; i < nacts && n < sizeof(ra) / sizeof(ra[0]); i++)
		ra[n++] = (struct hwt_resume_action){
			.tid = acts[i].tid > 0 ? (pid_t)acts[i].tid : 0,
			.kind = acts[i].kind == 's' ? HWT_RESUME_STEP :
				acts[i].kind == 't' ? HWT_RESUME_STOP
						    : HWT_RESUME_CONT,
			.signal = acts[i].signal,
		};
	if (s->nwatches && s->watch_past_only) {
		snprintf(reply, cap, "E.The %s recorder answers watchpoints "
			 "in the recorded past only: delete them to run on.",
			 hwt_collect_backend_name(l->c));
		return -EOPNOTSUPP;
	}
	for (size_t i = 0; i < s->nwatches; i++)
		w[i] = (struct hwt_watch){ s->watches[i].addr, s->watches[i].len,
					   (enum hwt_watch_kind)s->watches[i].kind };
	o.actions = ra;
	o.breakpoints = s->bps;
	o.nbreakpoints = s->nbps;
	o.watches = w;
	o.nwatches = s->nwatches;
	/* GDB's ^C arrives as a byte on the connection while we wait. */
	o.interrupt_fd = s->conn.fd;
	o.report_thread_created = s->thread_events;
	o.stop_before_exit = s->stop_before_exit;
	s->resume_nothing_left = false;
	for (;;) {
		size_t keep = 0;

		o.nactions = n;
		rc = hwt_collect_resume(l->c, &o, &ev, &err);
		if (rc) {
			snprintf(reply, cap, "E.%s", err.msg);
			return rc;
		}
		if (ev.kind != HWT_EVENT_THREAD_EXITED || s->thread_events)
			break;
		/* Without QThreadEvents GDB is not told of thread exits one
		 * by one: the others go on as they were asked to. */
		for (size_t i = 0; i < n; i++)
			if (ra[i].tid != ev.tid)
				ra[keep++] = ra[i];
		n = keep;
		if (n == 0)
			break;
		/* The threads asked to move have all exited (GDB named them
		 * one by one: non-stop, or scheduler-locking): nothing is
		 * resumed any more, which is GDB's N stop reply. */
		if (!moves_left(l, ra, n)) {
			s->resume_nothing_left = true;
			break;
		}
	}
	s->resume_tid = ev.tid;
	s->resume_interrupted = ev.kind == HWT_EVENT_INTERRUPTED;
	if (ev.kind == HWT_EVENT_EXITED || ev.kind == HWT_EVENT_KILLED) {
		srv_invalidate(s);
		l->nsnap = 0;
		l->gone = true;
		s->process_gone = true;
	} else if (refresh(s, ev.tid, &err)) {
		snprintf(reply, cap, "E.%s", err.msg);
		return -err.code;
	}
	stop_reply(s, &ev, reply, cap);
	if (s->resume_nothing_left)
		snprintf(reply, cap, "N");
	/* '?' asks why the process is stopped: not a gone thread's exit. */
	if (ev.kind == HWT_EVENT_THREAD_EXITED && s->nthreads)
		l->last_ev = (struct hwt_collect_event){
			.kind = HWT_EVENT_STEPPED,
			.tid = (pid_t)s->threads[s->stop_thread].tid };
	else
		l->last_ev = ev;
	return 0;
}

/* ---- registers and memory --------------------------------------------------- */

static int load_regs(struct server *s, struct srv_thread *t,
		     struct hwt_err *err)
{
	size_t len = CORE_GREGS_SIZE;
	int rc;

	if (t->regs_ok)
		return 0;
	rc = hwt_collect_regset(s->live->c, (pid_t)t->tid, NT_PRSTATUS,
				t->regs.gregs, &len, false, err);
	if (rc)
		return rc;
	if (len != CORE_GREGS_SIZE)
		return hwt_err_set(err, EIO, "thread %lld: %zu bytes of "
				   "general registers, expected %u",
				   (long long)t->tid, len, CORE_GREGS_SIZE);
	len = CORE_FXSAVE_SIZE;
	t->regs.have_fp = hwt_collect_regset(s->live->c, (pid_t)t->tid,
					     NT_PRFPREG, t->regs.fxsave, &len,
					     false, NULL) == 0 &&
			  len == CORE_FXSAVE_SIZE;
	t->regs.tid = t->tid;
	t->regs_ok = true;
	return 0;
}

/* The XSAVE area (NT_X86_XSTATE) of the thread whose xstate_ok is set:
 * the ymm upper halves. Kept for one thread at a time, read once per stop
 * (a g packet asks for 16 registers from it) and again after any write:
 * the kernel's copy is the truth. The area is at most a few kB (AMX
 * tiles make it 11 kB). */
static uint8_t xstate[16u << 10];
static size_t xstate_len;

static int load_xstate(struct server *s, struct srv_thread *t,
		       struct hwt_err *err)
{
	int rc;

	if (t->xstate_ok)
		return 0;
	for (size_t i = 0; i < s->nthreads; i++)
		s->threads[i].xstate_ok = false;
	xstate_len = sizeof(xstate);
	rc = hwt_collect_regset(s->live->c, (pid_t)t->tid, NT_X86_XSTATE,
				xstate, &xstate_len, false, err);
	if (rc)
		return rc;
	if (!tdesc_xstate_has_avx(xstate, xstate_len))
		return hwt_err_set(err, EIO, "thread %lld: its XSAVE area "
				   "(%zu bytes) has no AVX state",
				   (long long)t->tid, xstate_len);
	t->xstate_ok = true;
	return 0;
}

static bool live_reg_get(struct server *s, size_t ti, int regno, uint8_t *out)
{
	struct srv_thread *t = &s->threads[ti];

	if (s->live->gone)
		return false;
	if (regno >= TDESC_YMM0H_REGNUM) {
		if (!s->avx || load_xstate(s, t, NULL))
			return false;
		tdesc_ymmh_value(xstate, regno - TDESC_YMM0H_REGNUM, out);
		return true;
	}
	return load_regs(s, t, NULL) == 0 &&
	       tdesc_reg_value(&t->regs, regno, out);
}

static int live_reg_set(struct server *s, size_t ti, int regno,
			const uint8_t *val, struct hwt_err *err)
{
	struct srv_thread *t = &s->threads[ti];
	bool general = regno < 24 || (regno >= 57 && regno < TDESC_NREGS);
	size_t len = general ? CORE_GREGS_SIZE : CORE_FXSAVE_SIZE;
	int rc;

	if (regno >= TDESC_YMM0H_REGNUM) {
		if (!s->avx)
			return hwt_err_set(err, EINVAL, "register %d cannot be "
					   "written", regno);
		rc = load_xstate(s, t, err);
		if (rc)
			return rc;
		tdesc_ymmh_store(xstate, regno - TDESC_YMM0H_REGNUM, val);
		len = xstate_len;
		rc = hwt_collect_regset(s->live->c, (pid_t)t->tid,
					NT_X86_XSTATE, xstate, &len, true, err);
		/* The x87/SSE part came along: reread both next time. */
		t->regs_ok = t->xstate_ok = false;
		return rc;
	}
	rc = load_regs(s, t, err);
	if (rc)
		return rc;
	if (!tdesc_reg_store(&t->regs, regno, val))
		return hwt_err_set(err, EINVAL, "register %d cannot be written",
				   regno);
	rc = hwt_collect_regset(s->live->c, (pid_t)t->tid,
				general ? NT_PRSTATUS : NT_PRFPREG,
				general ? t->regs.gregs : t->regs.fxsave, &len,
				true, err);
	/* Reread next time: the kernel may adjust what it was given, and
	 * the XSAVE area holds the x87/SSE registers too. */
	t->regs_ok = t->xstate_ok = false;
	return rc;
}

static size_t live_mem_read(struct server *s, uint64_t addr, void *buf,
			    size_t len)
{
	ssize_t n;

	if (s->live->gone)
		return 0;
	n = hwt_collect_mem_read(s->live->c, addr, buf, len);
	return n > 0 ? (size_t)n : 0;
}

static long live_mem_write(struct server *s, uint64_t addr, const void *buf,
			   size_t len)
{
	if (s->live->gone)
		return -ESRCH;
	return (long)hwt_collect_mem_write(s->live->c, addr, buf, len);
}

/* ---- histories ---------------------------------------------------------------- */

static const struct hwt_collect_thread *snapshot_of(struct server *s,
						    const struct srv_thread *t)
{
	for (size_t i = 0; i < s->live->nsnap; i++)
		if (s->live->snap[i].tid == t->tid)
			return &s->live->snap[i];
	return NULL;
}

/* The collector's registers before the instruction at the replay
 * position. The history ends where the thread stands, item count being
 * the instruction it stopped at (the collector's insn_total - 1), so
 * positions count back from there. They are believed only when their pc
 * is the history's. */
static bool live_past_reg(struct server *s, size_t ti, uint64_t pc, int regno,
			  uint8_t *out)
{
	struct srv_thread *t = &s->threads[ti];
	const struct hwt_collect_thread *ct = snapshot_of(s, t);
	struct core_thread past = { .tid = t->tid };
	uint64_t rip, back, index;

	if (!ct || !t->cursor || !t->hist || s->live->gone || !ct->insn_total)
		return false;
	back = hwt_history_count(t->hist) - hwt_cursor_pos(t->cursor);
	if (back >= ct->insn_total)
		return false;
	index = ct->insn_total - 1 - back;
	if (hwt_collect_regs_at(s->live->c, (pid_t)t->tid, index, NT_PRSTATUS,
				past.gregs, sizeof(past.gregs), NULL) < 0)
		return false;
	past.have_fp = hwt_collect_regs_at(s->live->c, (pid_t)t->tid, index,
					   NT_PRFPREG, past.fxsave,
					   sizeof(past.fxsave), NULL) == 0;
	memcpy(&rip, past.gregs + offsetof(struct user_regs_struct, rip),
	       sizeof(rip));
	return rip == pc && tdesc_reg_value(&past, regno, out);
}

/* The collector's memory before the instruction at the replay position,
 * numbered as live_past_reg's. */
static size_t live_past_mem(struct server *s, size_t ti, uint64_t addr,
			    void *buf, size_t len)
{
	struct srv_thread *t = &s->threads[ti];
	const struct hwt_collect_thread *ct = snapshot_of(s, t);
	uint64_t back;
	int n;

	if (!ct || !t->cursor || !t->hist || s->live->gone || !ct->insn_total)
		return 0;
	back = hwt_history_count(t->hist) - hwt_cursor_pos(t->cursor);
	if (back >= ct->insn_total)
		return 0;
	n = hwt_collect_mem_at(s->live->c, (pid_t)t->tid,
			       ct->insn_total - 1 - back, addr, buf, len, NULL);
	return n > 0 ? (size_t)n : 0;
}

/* The collector's instruction index of position pos of thread t. */
static bool index_of_pos(struct server *s, struct srv_thread *t,
			 uint64_t pos, uint64_t *index)
{
	const struct hwt_collect_thread *ct = snapshot_of(s, t);
	uint64_t back;

	if (!ct || !t->hist || !ct->insn_total ||
	    pos > hwt_history_count(t->hist))
		return false;
	back = hwt_history_count(t->hist) - pos;
	if (back >= ct->insn_total)
		return false;
	*index = ct->insn_total - 1 - back;
	return true;
}

/* The position of the collector's instruction index of thread t, up to
 * where it stands now. */
static bool pos_of_index(struct server *s, struct srv_thread *t,
			 uint64_t index, uint64_t *pos)
{
	const struct hwt_collect_thread *ct = snapshot_of(s, t);
	struct hwt_history *h = srv_history(s, t, NULL);

	if (!ct || !h || !ct->insn_total || index > ct->insn_total - 1 ||
	    ct->insn_total - 1 - index >= hwt_history_count(h))
		return false;
	*pos = hwt_history_count(h) - (ct->insn_total - 1 - index);
	return true;
}

static bool live_past_write(struct server *s, size_t ti, uint64_t pos,
			    uint64_t from_step, uint64_t until,
			    enum hwt_dir dir, uint64_t addr, uint64_t len,
			    size_t *wti, uint64_t *wpos, uint64_t *step)
{
	struct srv_thread *t = &s->threads[ti];
	struct hwt_write_query q = {
		.tid = (int32_t)t->tid, .dir = dir == HWT_BACKWARD ? -1 : 1,
		.addr = addr, .len = len, .from_step = from_step,
	};
	struct hwt_write_found w;

	if (s->live->gone || !index_of_pos(s, t, pos, &q.from))
		return false;
	if (!index_of_pos(s, t, until, &q.until))
		q.until = HWT_MEM_NO_BOUND;
	if (hwt_collect_find_write(s->live->c, &q, &w, NULL) != 1)
		return false;
	*step = w.step;
	for (*wti = 0; *wti < s->nthreads &&
	     s->threads[*wti].tid != w.tid; (*wti)++)
		;
	/* Positions count back from the history's end as live_past_reg's;
	 * forward, the stop is after the store. */
	return *wti < s->nthreads &&
	       pos_of_index(s, &s->threads[*wti],
			    w.index + (dir == HWT_FORWARD ? 1 : 0), wpos);
}

static bool live_past_place(struct server *s, size_t ti, uint64_t step,
			    uint64_t *pos)
{
	struct srv_thread *t = &s->threads[ti];
	const struct hwt_collect_thread *ct = snapshot_of(s, t);
	uint64_t index;

	if (s->live->gone || !ct || !ct->insn_total ||
	    hwt_collect_index_at_step(s->live->c, (pid_t)t->tid, step, &index,
				      NULL) < 0)
		return false;
	/* Past its newest instruction: where it stands now. */
	return pos_of_index(s, t, index > ct->insn_total - 1 ?
			    ct->insn_total - 1 : index, pos);
}

/* Where a stopped thread stands; 0 when its registers cannot be read. */
static uint64_t live_thread_pc(struct server *s, struct srv_thread *t)
{
	uint8_t v[TDESC_MAX_REG_SIZE];
	uint64_t pc = 0;

	if (load_regs(s, t, NULL) == 0 &&
	    tdesc_reg_value(&t->regs, TDESC_PC_REGNUM, v))
		memcpy(&pc, v, sizeof(pc));
	return pc;
}

static struct hwt_history *live_history(struct server *s, struct srv_thread *t,
					struct hwt_err *err)
{
	const struct hwt_collect_thread *ct;
	struct hwt_cpu_info cpu;
	int rc;

	if (t->hist)
		return t->hist;
	if (!hwt_collect_recording(s->live->c)) {
		hwt_err_set(err, ENOENT, "the program is not being recorded: "
			    "record btrace (or thread trace start) records it "
			    "from here on, hwt-server --record from launch");
		return NULL;
	}
	ct = snapshot_of(s, t);
	if (!ct || ct->trace_size == 0) {
		hwt_err_set(err, ENOENT, "thread %lld has no recorded history yet",
			    (long long)t->tid);
		return NULL;
	}
	switch (ct->format) {
	case HWT_COLLECT_FMT_SW:
		rc = hwt_history_open_sw(ct->trace, ct->trace_size,
					 ct->lost_insns, s->img, &t->hist, err);
		break;
	case HWT_COLLECT_FMT_BTS:
		/* BTS records branches only: the instructions from the last
		 * branch's target to where the thread stands are its pc's. */
		rc = hwt_history_open_bts(ct->trace, ct->trace_size,
					  live_thread_pc(s, t), s->img,
					  &t->hist, err);
		break;
	case HWT_COLLECT_FMT_PT:
		/* The stop entered the kernel, which PT records as the end of
		 * user-space tracing: the stream reaches the current pc. The
		 * trace was made on this machine's cpu. */
		cpu = hwt_collect_cpu_info();
		rc = hwt_history_open_pt(ct->trace, ct->trace_size, &cpu,
					 s->img, &t->hist, err);
		break;
	default:
		rc = hwt_err_set(err, ENOTSUP, "thread %lld: this backend's "
				 "trace format cannot be served live yet",
				 (long long)t->tid);
		break;
	}
	return rc ? NULL : t->hist;
}

/* Everything read from the collector changes with the recording: the
 * snapshot, and with it the histories. */
static int live_record_start(struct server *s, struct hwt_err *err)
{
	struct live *l = s->live;
	int rc;

	if (hwt_collect_recording(l->c))
		return 0;
	if ((rc = hwt_collect_record_start(l->c, err)) < 0)
		return rc;
	srv_invalidate(s);
	l->nsnap = hwt_collect_threads(l->c, &l->snap);
	if (hwt_collect_warning(l->c))
		fprintf(stderr, "hwt-server: warning: %s\n",
			hwt_collect_warning(l->c));
	return refresh_modules(s, err);
}

static uint64_t live_insn_now(struct server *s, struct srv_thread *t)
{
	const struct hwt_collect_thread *ct = snapshot_of(s, t);

	return ct ? ct->insn_total : 0;
}

/* ---- the rest of the target ------------------------------------------------ */

static void live_stop_reply(struct server *s, char *reply, size_t cap)
{
	stop_reply(s, &s->live->last_ev, reply, cap);
}

static int live_auxv(struct server *s, uint8_t **out, size_t *len,
		     struct hwt_err *err)
{
	return hwt_collect_auxv(s->live->c, out, len, err);
}

/* The collector hands out no siginfo ($_siginfo stays unavailable). */
static const uint8_t *live_siginfo(struct server *s, size_t ti)
{
	(void)s;
	(void)ti;
	return NULL;
}

static int live_status(struct server *s, char *buf, size_t cap)
{
	const struct hwt_collect_thread *v = s->live->snap;
	size_t n = s->live->nsnap, len;

	len = (size_t)snprintf(buf, cap, "mode=live;format=hwt-sw;pid=%d;"
			       "stop=%s;threads=%zu", (int)s->live->pid,
			       s->live->gone ? "exited" : "running", n);
	for (size_t i = 0; i < n && len < cap; i++) {
		char one[160];
		int k = snprintf(one, sizeof(one), ";thread=%lld,%llu,%llu,%llu,%zu",
				 (long long)v[i].tid,
				 (unsigned long long)v[i].insn_total,
				 (unsigned long long)v[i].lost_insns,
				 (unsigned long long)v[i].lost_bytes,
				 v[i].trace_size);

		if (len + (size_t)k + 8 >= cap) {
			len += (size_t)snprintf(buf + len, cap - len, ";more=1");
			break;
		}
		memcpy(buf + len, one, (size_t)k + 1);
		len += (size_t)k;
	}
	return 0;
}

static int live_save(struct server *s, const char *dir, struct hwt_err *err)
{
	if (s->live->gone)
		return hwt_err_set(err, ESRCH, "the process has ended: its "
				   "trace went with it");
	if (!hwt_collect_recording(s->live->c))
		return hwt_err_set(err, ENOENT, "nothing is recorded yet: "
				   "record btrace records from here on, "
				   "hwt-server --record from launch");
	return save_collected(s->live->c, s->live->snap, s->live->nsnap, dir,
			      err);
}

static void live_end(struct server *s, enum srv_end how)
{
	struct live *l = s->live;
	struct hwt_err err = { 0 };

	if (!l->c || l->gone)
		return;
	if (how == SRV_END_DETACH || (how == SRV_END_HANGUP && s->attached)) {
		if (hwt_collect_detach(l->c, &err))
			fprintf(stderr, "hwt-server: detach: %s\n", err.msg);
	}
	/* Killing is what closing does to a process still held. */
	srv_invalidate(s);
	l->nsnap = 0;
	hwt_collect_close(l->c);
	l->c = NULL;
	l->gone = true;
	s->process_gone = true;
}

static void live_close(struct server *s)
{
	if (!s->live)
		return;
	if (s->live->c)
		hwt_collect_close(s->live->c);
	free(s->live);
	s->live = NULL;
}

const struct target_ops target_live_ops = {
	.mode = "live",
	.reg_get = live_reg_get,
	.past_reg = live_past_reg,
	.reg_set = live_reg_set,
	.mem_read = live_mem_read,
	.past_mem = live_past_mem,
	.past_write = live_past_write,
	.past_place = live_past_place,
	.mem_write = live_mem_write,
	.resume = live_resume,
	.stop_reply = live_stop_reply,
	.auxv = live_auxv,
	.siginfo = live_siginfo,
	.history = live_history,
	.insn_now = live_insn_now,
	.can_watch = true,
	.host_files = true,
	.non_stop = true,
	.record_start = live_record_start,
	.save = live_save,
	.status = live_status,
	.end = live_end,
	.close = live_close,
};

int live_open(struct server *s, const struct live_opts *lo,
	      struct hwt_err *err)
{
	/* Untraced, at gdbserver's speed, until a debugger asks for the
	 * history, unless --record asks for it from launch. */
	struct hwt_collect_opts co = { .sz = sizeof(co), .backend = lo->backend,
				       .live_control = true,
				       .defer_recording = !lo->record,
				       .data_bytes = lo->values };
	struct live *l = calloc(1, sizeof(*l));
	int rc;

	memset(s, 0, sizeof(*s));
	if (!l)
		return hwt_err_set(err, ENOMEM, "out of memory");
	s->ops = &target_live_ops;
	s->live = l;
	s->attached = !lo->argv;
	s->bts_size = s->pt_size = HWT_COLLECT_DEFAULT_BUFFER;
	/* An always-on recording keeps its history reachable at the end. */
	s->stop_before_exit = lo->record;
	rc = lo->argv ? hwt_collect_launch(&co, lo->argv, &l->c, err)
		      : hwt_collect_attach(&co, lo->attach_pid, &l->c, err);
	if (rc)
		return rc;
	l->pid = hwt_collect_pid(l->c);
	s->pid = l->pid;
	/* As hwtrace record says it. */
	if (hwt_collect_passed_over(l->c))
		fprintf(stderr, "hwt-server: note: %s; running with %s\n",
			hwt_collect_passed_over(l->c),
			hwt_collect_backend_name(l->c));
	s->watch_past_only = !(hwt_collect_backend_caps(l->c) &
			       HWT_COLLECT_CAP_WATCH) &&
			     hwt_collect_keeps_past(l->c);
	s->no_watch = !(hwt_collect_backend_caps(l->c) &
			HWT_COLLECT_CAP_WATCH) && !s->watch_past_only;
	rc = refresh(s, l->pid, err);
	if (rc)
		return rc;
	/* GDB gets the ymm registers when the process has AVX state. */
	if (s->nthreads)
		s->avx = load_xstate(s, &s->threads[0], NULL) == 0;
	/* Launched: stopped at its first instruction, as after exec's
	 * SIGTRAP; attached: stopped where it was. */
	l->last_ev = (struct hwt_collect_event){ .kind = HWT_EVENT_SIGNAL,
		.tid = l->pid, .signal = lo->argv ? SIGTRAP : SIGSTOP };
	return 0;
}
