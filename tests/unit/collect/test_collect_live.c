// SPDX-License-Identifier: BSD-2-Clause
/* test_collect_live.c - live control of the ptrace collector, on the real
 * test programs (build/programs) and two tiny static subjects compiled
 * here: breakpoints, steps, history snapshots against a run to the end,
 * write watchpoints, signals, threads, interrupt_fd, attach and detach,
 * registers and memory. Address space randomisation is turned off so two
 * runs of a program execute the same addresses. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/timerfd.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "collect_util.h"
#include "hwt-collect.h"

static char progdir[PATH_MAX - 64];

/* ---- helpers --------------------------------------------------------- */

/* The history of thread tid now (snapshot). */
static struct history history_of(struct hwt_collector *c, pid_t tid)
{
	const struct hwt_collect_thread *t;
	size_t n = hwt_collect_threads(c, &t);
	struct history none = {0};

	for (size_t i = 0; i < n; i++)
		if (t[i].tid == tid)
			return history_decode(&t[i]);
	return none;
}

/* A symbol's value in an ELF file, through nm; 0 when not found. */
static uint64_t symbol(const char *path, const char *name)
{
	char cmd[PATH_MAX + 32], line[512], type, sym[256];
	unsigned long long v, found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -a '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%llx %c %255s", &v, &type, sym) == 3 &&
		    !strcmp(sym, name))
			found = v;
	pclose(p);
	return found;
}

static uint64_t module_base(struct hwt_collector *c, const char *suffix)
{
	const struct hwt_collect_module *m;
	size_t n = hwt_collect_modules(c, &m), sl = strlen(suffix);

	for (size_t i = 0; i < n; i++) {
		size_t pl = strlen(m[i].path);

		if (pl >= sl && !strcmp(m[i].path + pl - sl, suffix))
			return m[i].load_address;
	}
	return 0;
}

static int resume1(struct hwt_collector *c, enum hwt_resume_kind kind,
		   int sig, const uint64_t *bps, size_t nbps,
		   struct hwt_collect_event *ev, struct hwt_err *err)
{
	struct hwt_resume_action a = { .tid = 0, .kind = kind, .signal = sig };
	struct hwt_resume_opts o = {
		.sz = sizeof(o), .actions = &a, .nactions = 1,
		.breakpoints = bps, .nbreakpoints = nbps, .interrupt_fd = -1,
	};

	return hwt_collect_resume(c, &o, ev, err);
}

static struct hwt_collector *launch(const char *prog, struct hwt_err *err)
{
	char path[PATH_MAX + 16];
	char *argv[] = { path, NULL };
	struct hwt_collector *c = NULL;

	snprintf(path, sizeof(path), "%s/%s", progdir, prog);
	if (hwt_collect_launch(NULL, argv, &c, err) < 0)
		return NULL;
	return c;
}

/* Whole run of a program to its end: the reference history. */
static struct history reference(const char *prog)
{
	struct hwt_collect_end end;
	const struct hwt_collect_thread *t;
	struct hwt_err err = {0};
	struct hwt_collector *c = launch(prog, &err);
	struct history h = {0};

	if (c && hwt_collect_run(c, &end, &err) == 0 &&
	    hwt_collect_threads(c, &t) >= 1)
		h = history_decode(&t[0]);
	hwt_collect_close(c);
	return h;
}

/* ---- breakpoints, steps, snapshots ----------------------------------- */

static void test_breakpoints_and_steps(void)
{
	char path[PATH_MAX + 16];
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct history ref = reference("loops"), h = {0};
	struct hwt_collector *c;
	uint64_t main_pc, loop_pc = 0;
	size_t at, expect = 0, hits = 0, steps_ok = 0, stuck = 0;
	bool prefix;
	int rc;

	snprintf(path, sizeof(path), "%s/loops", progdir);
	main_pc = symbol(path, "main");
	c = launch("loops", &err);
	CHECK("live: launch loops", c && main_pc && ref.n > 1000,
	      "%s (main 0x%llx, reference %zu insns)", err.msg,
	      (unsigned long long)main_pc, ref.n);
	if (!c || !main_pc || ref.n <= 1000)
		goto out;
	h = history_of(c, hwt_collect_pid(c));
	CHECK("live: right after launch the snapshot is the entry point",
	      h.ok && h.n == 1 && h.pc[0] == ref.pc[0], "%zu insns", h.n);
	history_free(&h);

	rc = resume1(c, HWT_RESUME_STOP, 0, NULL, 0, &ev, &err);
	CHECK("live: resume with nothing to move is refused",
	      rc == -EINVAL && strstr(err.msg, "stopped"), "rc %d: %s", rc,
	      err.msg);

	rc = resume1(c, HWT_RESUME_CONT, 0, &main_pc, 1, &ev, &err);
	CHECK("live: continue stops at the breakpoint on main",
	      rc == 0 && ev.kind == HWT_EVENT_BREAKPOINT &&
	      ev.tid == hwt_collect_pid(c) && ev.pc == main_pc,
	      "rc %d kind %d pc 0x%llx: %s", rc, ev.kind,
	      (unsigned long long)ev.pc, err.msg);
	rc = hwt_collect_run(c, NULL, &err);
	CHECK("live: run after resume is refused", rc == -EBUSY,
	      "rc %d: %s", rc, err.msg);

	h = history_of(c, hwt_collect_pid(c));
	prefix = h.ok && h.n > 1 && h.n <= ref.n &&
		 !memcmp(h.pc, ref.pc, h.n * sizeof(*h.pc));
	CHECK("live: snapshot ends at main and is a prefix of a whole run",
	      prefix && h.pc[h.n - 1] == main_pc,
	      "%zu insns (reference %zu), last 0x%llx", h.n, ref.n,
	      h.n ? (unsigned long long)h.pc[h.n - 1] : 0ull);
	at = h.n;
	history_free(&h);

	for (int i = 0; i < 5; i++) {
		rc = resume1(c, HWT_RESUME_STEP, 0, &main_pc, 1, &ev, &err);
		h = history_of(c, hwt_collect_pid(c));
		if (rc == 0 && ev.kind == HWT_EVENT_STEPPED && h.n == at + 1 &&
		    h.pc[h.n - 1] == ev.pc && ev.pc == ref.pc[at])
			steps_ok++;
		at = h.n;
		history_free(&h);
	}
	CHECK("live: each step executes one instruction, as in a whole run",
	      steps_ok == 5, "%zu of 5 steps right: %s", steps_ok, err.msg);

	/* A loop address executed several times more from here on. */
	for (size_t i = at; i < ref.n && !loop_pc; i++) {
		size_t n = 0;

		if (ref.pc[i] < main_pc || ref.pc[i] > main_pc + 0x200)
			continue;
		for (size_t j = at; j < ref.n; j++)
			n += ref.pc[j] == ref.pc[i];
		if (n >= 5 && n <= 100) {
			loop_pc = ref.pc[i];
			expect = n;
		}
	}
	do {
		rc = resume1(c, HWT_RESUME_CONT, 0, &loop_pc, 1, &ev, &err);
		if (rc == 0 && ev.kind == HWT_EVENT_BREAKPOINT) {
			hits += ev.pc == loop_pc;
			/* Resuming from a breakpoint executes it first: each
			 * hit is a full iteration later. */
			h = history_of(c, hwt_collect_pid(c));
			stuck += h.n == at;
			at = h.n;
			history_free(&h);
		}
	} while (rc == 0 && ev.kind == HWT_EVENT_BREAKPOINT && hits < 1000);
	CHECK("live: a breakpoint in a loop is hit once per iteration",
	      loop_pc && hits == expect && !stuck,
	      "0x%llx hit %zu times, expected %zu (%zu immediate re-stops)",
	      (unsigned long long)loop_pc, hits, expect, stuck);
	CHECK("live: the program then exits normally",
	      rc == 0 && ev.kind == HWT_EVENT_EXITED && ev.status == 0,
	      "rc %d kind %d status %d: %s", rc, ev.kind, ev.status, err.msg);
	h = history_of(c, hwt_collect_pid(c));
	CHECK("live: the whole live history equals a run to the end",
	      h.ok && h.n == ref.n &&
	      !memcmp(h.pc, ref.pc, h.n * sizeof(*h.pc)),
	      "%zu insns, reference %zu", h.n, ref.n);
	history_free(&h);
	rc = resume1(c, HWT_RESUME_CONT, 0, NULL, 0, &ev, &err);
	CHECK("live: resume after the end is refused", rc == -ESRCH,
	      "rc %d: %s", rc, err.msg);
out:
	hwt_collect_close(c);
	history_free(&ref);
}

/* ---- watchpoints, registers, memory ---------------------------------- */

static void test_watch_regs_memory(void)
{
	char path[PATH_MAX + 16];
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct hwt_collector *c = launch("loops", &err);
	struct user_regs_struct regs, saved;
	struct history h = {0};
	uint64_t main_pc, grid, after_first = 0;
	uint8_t code[16], again[16], nop = 0x90;
	struct hwt_watch w;
	struct hwt_resume_action a = { .kind = HWT_RESUME_CONT };
	struct hwt_resume_opts o = { .sz = sizeof(o), .actions = &a,
				     .nactions = 1, .watches = &w,
				     .nwatches = 1, .interrupt_fd = -1 };
	size_t len;
	uint32_t value = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/loops", progdir);
	main_pc = symbol(path, "main");
	grid = symbol(path, "grid");
	if (!c || !main_pc || !grid) {
		CHECK("live: launch loops for watches", 0, "%s", err.msg);
		hwt_collect_close(c);
		return;
	}
	rc = resume1(c, HWT_RESUME_CONT, 0, &main_pc, 1, &ev, &err);

	{
		struct hwt_watch five[5];

		for (int i = 0; i < 5; i++)
			five[i] = (struct hwt_watch){ .addr = grid + 8 * i,
						      .len = 8,
						      .kind = HWT_WATCH_ACCESS };
		o.watches = five;
		o.nwatches = 5;
		rc = hwt_collect_resume(c, &o, &ev, &err);
		CHECK("live: a fifth access watchpoint is refused with a reason",
		      rc == -ENOSPC && strstr(err.msg, "debug registers"),
		      "rc %d: %s", rc, err.msg);
		o.watches = &w;
		o.nwatches = 1;
	}

	/* Memory: code bytes read, written (to read-only text) and back. */
	rc = (int)hwt_collect_mem_read(c, main_pc, code, sizeof(code));
	CHECK("live: code bytes read", rc == (int)sizeof(code), "rc %d", rc);
	rc = (int)hwt_collect_mem_write(c, main_pc + 8, &nop, 1);
	hwt_collect_mem_read(c, main_pc, again, sizeof(again));
	CHECK("live: code bytes written to read-only text",
	      rc == 1 && again[8] == 0x90 && !memcmp(again, code, 8),
	      "rc %d byte 0x%02x", rc, again[8]);
	hwt_collect_mem_write(c, main_pc + 8, &code[8], 1);
	hwt_collect_mem_read(c, main_pc, again, sizeof(again));
	CHECK("live: code bytes restored", !memcmp(again, code, sizeof(code)),
	      "differs");
	rc = (int)hwt_collect_mem_read(c, 8, again, 8);
	CHECK("live: an unmapped address reads nothing", rc <= 0, "rc %d", rc);

	/* Registers: at main, keep them; step twice; put them back (the pc
	 * returns to main, the stack is as it was); step again. */
	len = sizeof(saved);
	rc = hwt_collect_regset(c, hwt_collect_pid(c), NT_PRSTATUS, &saved,
				&len, false, &err);
	CHECK("live: NT_PRSTATUS read", rc == 0 && len == sizeof(saved) &&
	      saved.rip == main_pc, "rc %d len %zu rip 0x%llx: %s", rc, len,
	      (unsigned long long)saved.rip, err.msg);
	rc = resume1(c, HWT_RESUME_STEP, 0, NULL, 0, &ev, &err);
	after_first = ev.pc;
	resume1(c, HWT_RESUME_STEP, 0, NULL, 0, &ev, &err);
	regs = saved;
	len = sizeof(regs);
	rc = hwt_collect_regset(c, hwt_collect_pid(c), NT_PRSTATUS, &regs,
				&len, true, &err);
	h = history_of(c, hwt_collect_pid(c));
	CHECK("live: a written pc ends the history as an async transfer",
	      rc == 0 && h.n && h.pc[h.n - 1] == main_pc && h.async[h.n - 1],
	      "rc %d last 0x%llx: %s", rc,
	      h.n ? (unsigned long long)h.pc[h.n - 1] : 0ull, err.msg);
	history_free(&h);
	rc = resume1(c, HWT_RESUME_STEP, 0, NULL, 0, &ev, &err);
	h = history_of(c, hwt_collect_pid(c));
	CHECK("live: the step after it runs from the new pc",
	      rc == 0 && ev.pc == after_first && h.n &&
	      h.pc[h.n - 1] == after_first && h.pc[h.n - 2] == main_pc,
	      "pc 0x%llx, expected 0x%llx", (unsigned long long)ev.pc,
	      (unsigned long long)after_first);
	history_free(&h);
	len = 8;
	rc = hwt_collect_regset(c, hwt_collect_pid(c), 12345, &regs, &len,
				false, &err);
	CHECK("live: an unknown register set is refused", rc == -EINVAL,
	      "rc %d", rc);

	/* Write watch: grid[0][0] becomes 1 in the first loop. */
	w = (struct hwt_watch){ .addr = grid, .len = 4,
				.kind = HWT_WATCH_WRITE };
	rc = hwt_collect_resume(c, &o, &ev, &err);
	hwt_collect_mem_read(c, grid, &value, sizeof(value));
	h = history_of(c, hwt_collect_pid(c));
	CHECK("live: write watchpoint reports after the writing instruction",
	      rc == 0 && ev.kind == HWT_EVENT_WATCHPOINT &&
	      ev.data_addr == grid && value == 1 && h.n > 2 &&
	      h.pc[h.n - 1] == ev.pc && h.pc[h.n - 2] >= main_pc &&
	      h.pc[h.n - 2] < main_pc + 0x200,
	      "rc %d kind %d addr 0x%llx value %u: %s", rc, ev.kind,
	      (unsigned long long)ev.data_addr, value, err.msg);
	history_free(&h);

	/* Read watch in a debug register: the second loop reads grid[0][0]
	 * (the first one only writes the other cells). */
	w.kind = HWT_WATCH_READ;
	rc = hwt_collect_resume(c, &o, &ev, &err);
	h = history_of(c, hwt_collect_pid(c));
	CHECK("live: read watchpoint reports after the reading instruction",
	      rc == 0 && ev.kind == HWT_EVENT_WATCHPOINT &&
	      ev.watch_kind == HWT_WATCH_READ && ev.data_addr == grid &&
	      h.n > 2 && h.pc[h.n - 1] == ev.pc && h.pc[h.n - 2] >= main_pc &&
	      h.pc[h.n - 2] < main_pc + 0x200,
	      "rc %d kind %d watch %d addr 0x%llx: %s", rc, ev.kind,
	      ev.watch_kind, (unsigned long long)ev.data_addr, err.msg);
	history_free(&h);
	o.nwatches = 0;
	rc = hwt_collect_resume(c, &o, &ev, &err);
	CHECK("live: without watches the program runs to its end",
	      rc == 0 && ev.kind == HWT_EVENT_EXITED, "rc %d kind %d: %s", rc,
	      ev.kind, err.msg);
	hwt_collect_close(c);
}

/* ---- signals ----------------------------------------------------------- */

static void test_signals(void)
{
	char path[PATH_MAX + 16];
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct hwt_collector *c = launch("signal", &err);
	struct history h = {0};
	uint64_t handler, base;
	int rc;

	snprintf(path, sizeof(path), "%s/signal", progdir);
	handler = symbol(path, "on_usr1");
	if (!c || !handler) {
		CHECK("live: launch signal", 0, "%s", err.msg);
		hwt_collect_close(c);
		return;
	}
	rc = resume1(c, HWT_RESUME_CONT, 0, NULL, 0, &ev, &err);
	CHECK("live: a raised signal is reported before delivery",
	      rc == 0 && ev.kind == HWT_EVENT_SIGNAL && ev.signal == SIGUSR1,
	      "rc %d kind %d sig %d: %s", rc, ev.kind, ev.signal, err.msg);
	base = module_base(c, "/signal");
	rc = resume1(c, HWT_RESUME_STEP, SIGUSR1, NULL, 0, &ev, &err);
	h = history_of(c, hwt_collect_pid(c));
	CHECK("live: stepping with the signal lands on the handler",
	      rc == 0 && ev.kind == HWT_EVENT_STEPPED &&
	      ev.pc == base + handler && h.n && h.pc[h.n - 1] == ev.pc &&
	      h.async[h.n - 1],
	      "rc %d kind %d pc 0x%llx, handler 0x%llx: %s", rc, ev.kind,
	      (unsigned long long)ev.pc, (unsigned long long)(base + handler),
	      err.msg);
	history_free(&h);
	rc = resume1(c, HWT_RESUME_CONT, 0, NULL, 0, &ev, &err);
	CHECK("live: the program then exits normally",
	      rc == 0 && ev.kind == HWT_EVENT_EXITED && ev.status == 0,
	      "rc %d kind %d: %s", rc, ev.kind, err.msg);
	hwt_collect_close(c);

	/* The same signal not passed on never reaches the handler. */
	c = launch("signal", &err);
	rc = c ? resume1(c, HWT_RESUME_CONT, 0, NULL, 0, &ev, &err) : -1;
	if (rc == 0 && ev.kind == HWT_EVENT_SIGNAL) {
		uint64_t bp = module_base(c, "/signal") + handler;

		rc = resume1(c, HWT_RESUME_CONT, 0, &bp, 1, &ev, &err);
	}
	CHECK("live: a signal not passed on is not delivered",
	      rc == 0 && ev.kind == HWT_EVENT_EXITED, "rc %d kind %d: %s", rc,
	      ev.kind, err.msg);
	hwt_collect_close(c);
}

/* ---- threads ------------------------------------------------------------ */

static void test_threads(void)
{
	char path[PATH_MAX + 16];
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct hwt_collector *c = launch("threads4", &err);
	const struct hwt_collect_thread *t;
	uint64_t collatz, bp;
	size_t exits = 0, n, workers_ok = 0, bad_tid = 0, hits, bad_hit = 0;
	pid_t tids[16];
	bool bp_ok = false;
	int rc;

	snprintf(path, sizeof(path), "%s/threads4", progdir);
	collatz = symbol(path, "collatz_steps");
	if (!c || !collatz) {
		CHECK("live: launch threads4", 0, "%s", err.msg);
		hwt_collect_close(c);
		return;
	}
	/* Run to main first: the module base is known from then on. */
	bp = symbol(path, "main");
	rc = resume1(c, HWT_RESUME_STEP, 0, NULL, 0, &ev, &err);
	bp += module_base(c, "/threads4");
	rc = resume1(c, HWT_RESUME_CONT, 0, &bp, 1, &ev, &err);
	bp = module_base(c, "/threads4") + collatz;
	rc = resume1(c, HWT_RESUME_CONT, 0, &bp, 1, &ev, &err);
	if (rc == 0 && ev.kind == HWT_EVENT_BREAKPOINT) {
		struct history h = history_of(c, ev.tid);

		bp_ok = ev.tid != hwt_collect_pid(c) && h.n &&
			h.pc[h.n - 1] == bp &&
			hwt_collect_live_tids(c, tids, 16) >= 2;
		history_free(&h);
	}
	CHECK("live: a worker thread stops at a breakpoint, history ends "
	      "there", bp_ok, "rc %d kind %d tid %d: %s", rc, ev.kind,
	      (int)ev.tid, err.msg);
	/* Workers call collatz_steps 3, 4, 5 and 6 times: every hit is
	 * reported, also those of threads stopped while another one's event
	 * was being reported. */
	hits = bp_ok;
	do {
		rc = resume1(c, HWT_RESUME_CONT, 0, &bp, 1, &ev, &err);
		if (rc == 0 && ev.kind == HWT_EVENT_THREAD_EXITED) {
			exits++;
			bad_tid += ev.tid == hwt_collect_pid(c);
		}
		if (rc == 0 && ev.kind == HWT_EVENT_BREAKPOINT) {
			struct history h = history_of(c, ev.tid);

			hits++;
			bad_hit += !h.n || h.pc[h.n - 1] != bp || ev.pc != bp;
			history_free(&h);
		}
	} while (rc == 0 && ev.kind != HWT_EVENT_EXITED &&
		 ev.kind != HWT_EVENT_KILLED && exits < 100 && hits < 100);
	CHECK("live: every breakpoint hit of every thread is reported once",
	      hits == 18 && !bad_hit, "%zu hits (expected 18), %zu not at "
	      "the breakpoint", hits, bad_hit);
	CHECK("live: four THREAD_EXITED events, then the process exits",
	      rc == 0 && exits == 4 && !bad_tid &&
	      ev.kind == HWT_EVENT_EXITED && ev.status == 0,
	      "rc %d, %zu thread exits, last kind %d: %s", rc, exits, ev.kind,
	      err.msg);
	n = hwt_collect_threads(c, &t);
	for (size_t i = 1; i < n; i++) {
		struct history h = history_decode(&t[i]);
		bool ran = false;

		for (size_t j = 0; j < h.n && !ran; j++)
			ran = h.pc[j] == bp;
		workers_ok += h.ok && ran && t[i].exited;
		history_free(&h);
	}
	CHECK("live: every worker's history is kept and ran collatz_steps",
	      n == 5 && workers_ok == 4, "%zu threads, %zu workers ok", n,
	      workers_ok);
	hwt_collect_close(c);
}

/* Run threads4 from main to its end, continuing all threads; count the
 * THREAD_CREATED events and those that came as the new thread stood at
 * its first instruction (its history that one pc, the event's). With
 * sz of a caller older than report_thread_created the flag is ignored. */
static void run_births(size_t sz, size_t *created, size_t *at_birth,
		       size_t *exits, struct hwt_collect_event *ev,
		       int *rc, struct hwt_err *err)
{
	char path[PATH_MAX + 16];
	struct hwt_collector *c = launch("threads4", err);
	struct hwt_resume_action a = { .tid = 0, .kind = HWT_RESUME_CONT };
	struct hwt_resume_opts o = {
		.sz = sz, .actions = &a, .nactions = 1, .interrupt_fd = -1,
		.report_thread_created = true,
	};
	uint64_t bp;
	pid_t tids[16];

	*created = *at_birth = *exits = 0;
	*rc = -1;
	snprintf(path, sizeof(path), "%s/threads4", progdir);
	bp = symbol(path, "main");
	if (!c || !bp) {
		hwt_collect_close(c);
		return;
	}
	*rc = resume1(c, HWT_RESUME_STEP, 0, NULL, 0, ev, err);
	bp += module_base(c, "/threads4");
	*rc = resume1(c, HWT_RESUME_CONT, 0, &bp, 1, ev, err);
	do {
		*rc = hwt_collect_resume(c, &o, ev, err);
		if (*rc == 0 && ev->kind == HWT_EVENT_THREAD_CREATED) {
			struct history h = history_of(c, ev->tid);
			size_t n = hwt_collect_live_tids(c, tids, 16);
			bool listed = false;

			for (size_t i = 0; i < n && i < 16; i++)
				listed |= tids[i] == ev->tid;
			(*created)++;
			*at_birth += listed && ev->tid != hwt_collect_pid(c) &&
				     h.n == 1 && ev->pc && h.pc[0] == ev->pc;
			history_free(&h);
		}
		*exits += *rc == 0 && ev->kind == HWT_EVENT_THREAD_EXITED;
	} while (*rc == 0 && ev->kind != HWT_EVENT_EXITED &&
		 ev->kind != HWT_EVENT_KILLED && *created + *exits < 100);
	hwt_collect_close(c);
}

static void test_thread_created(void)
{
	struct hwt_collect_event ev = {0};
	struct hwt_err err = {0};
	size_t created, at_birth, exits;
	int rc;

	run_births(sizeof(struct hwt_resume_opts), &created, &at_birth,
		   &exits, &ev, &rc, &err);
	CHECK("live: report_thread_created gives one THREAD_CREATED per "
	      "worker, stopped at its first instruction",
	      rc == 0 && created == 4 && at_birth == 4 && exits == 4 &&
	      ev.kind == HWT_EVENT_EXITED,
	      "rc %d: %zu created (%zu at birth), %zu exits, last kind %d: %s",
	      rc, created, at_birth, exits, ev.kind, err.msg);
	run_births(offsetof(struct hwt_resume_opts, report_thread_created),
		   &created, &at_birth, &exits, &ev, &rc, &err);
	CHECK("live: a caller whose sz ends before report_thread_created "
	      "gets no THREAD_CREATED",
	      rc == 0 && created == 0 && exits == 4 &&
	      ev.kind == HWT_EVENT_EXITED,
	      "rc %d: %zu created, %zu exits, last kind %d: %s", rc, created,
	      exits, ev.kind, err.msg);
}

/* ---- compiled subjects: a sleeper and a spinner ----------------------- */

static const char subject_src[] =
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"#include <time.h>\n"
	"int main(int argc, char **argv) {\n"
	"  if (argc > 1 && !strcmp(argv[1], \"sleep\")) {\n"
	"    struct timespec ts = { 30, 0 }; nanosleep(&ts, 0); return 1; }\n"
	"  volatile unsigned long n = 0;\n"
	"  for (unsigned long i = 0; i < 300000000ul; i++) n += i;\n"
	"  return 7; }\n";

static char subject[512];

static int wake_fd = -1;

static void *write_later(void *arg)
{
	struct timespec ts = { 0, 200 * 1000 * 1000 };

	(void)arg;
	nanosleep(&ts, NULL);
	if (write(wake_fd, "x", 1) != 1)
		wake_fd = -1;
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_interrupt(void)
{
	char *argv[] = { subject, "sleep", NULL };
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct hwt_collector *c = NULL;
	struct hwt_resume_action a = { .kind = HWT_RESUME_CONT };
	struct hwt_resume_opts o = { .sz = sizeof(o), .actions = &a,
				     .nactions = 1 };
	struct history h = {0};
	pthread_t writer;
	int fds[2], rc;
	uint8_t insn[2] = {0};
	uint64_t main_pc;
	double t0, t1;

	if (pipe(fds) < 0 || hwt_collect_launch(NULL, argv, &c, &err) < 0) {
		CHECK("live: launch the sleeper", 0, "%s", err.msg);
		return;
	}
	/* From main the program reaches nanosleep in a few instructions. */
	main_pc = symbol(subject, "main");
	rc = resume1(c, HWT_RESUME_CONT, 0, &main_pc, 1, &ev, &err);
	CHECK("live: the sleeper reaches main", rc == 0 && main_pc &&
	      ev.kind == HWT_EVENT_BREAKPOINT, "rc %d kind %d: %s", rc,
	      ev.kind, err.msg);
	wake_fd = fds[1];
	o.interrupt_fd = fds[0];
	t0 = now();
	pthread_create(&writer, NULL, write_later, NULL);
	rc = hwt_collect_resume(c, &o, &ev, &err);
	t1 = now();
	pthread_join(writer, NULL);
	h = history_of(c, hwt_collect_pid(c));
	if (h.n)
		hwt_collect_mem_read(c, h.pc[h.n - 1], insn, 2);
	CHECK("live: interrupt_fd stops a program blocked in nanosleep",
	      rc == 0 && ev.kind == HWT_EVENT_INTERRUPTED &&
	      ev.tid == hwt_collect_pid(c) && t1 - t0 < 10,
	      "rc %d kind %d after %.2f s: %s", rc, ev.kind, t1 - t0, err.msg);
	CHECK("live: its history ends at the syscall instruction",
	      insn[0] == 0x0f && insn[1] == 0x05, "bytes %02x %02x", insn[0],
	      insn[1]);
	history_free(&h);
	printf("INFO interrupt: resume returned after %.3f s\n", t1 - t0);
	hwt_collect_close(c);
	close(fds[0]);
	close(fds[1]);
}

static void test_attach_detach(void)
{
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct hwt_collector *c = NULL;
	struct history h = {0};
	pid_t child, live[4];
	int rc, status = 0, steps = 0;
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	rc = hwt_collect_attach(NULL, 999999999, &c, &err);
	CHECK("live: attaching to a missing process is a clean error",
	      rc < 0 && !c && strstr(err.msg, "cannot attach"), "rc %d: %s",
	      rc, err.msg);

	/* A process traced already (by a first collector) cannot be
	 * attached: EPERM, with what to check. */
	{
		char *sleeper[] = { subject, "sleep", NULL };
		struct hwt_collector *first = NULL;

		rc = hwt_collect_launch(NULL, sleeper, &first, &err);
		if (rc == 0)
			rc = hwt_collect_attach(NULL, hwt_collect_pid(first),
						&c, &err);
		CHECK("live: attaching to a traced process is refused with "
		      "what to do", rc == -EPERM && !c &&
		      strstr(err.msg, "cannot attach") &&
		      strstr(err.msg, "ptrace_scope"), "rc %d: %s", rc,
		      err.msg);
		hwt_collect_close(first);
	}
	child = fork();
	if (child == 0) {
		execl(subject, subject, (char *)NULL);
		_exit(127);
	}
	nanosleep(&ts, NULL);
	rc = hwt_collect_attach(NULL, child, &c, &err);
	CHECK("live: attach to a running child",
	      rc == 0 && hwt_collect_pid(c) == child &&
	      hwt_collect_live_tids(c, live, 4) == 1 && live[0] == child,
	      "rc %d: %s", rc, err.msg);
	if (rc < 0) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
		return;
	}
	for (int i = 0; i < 10; i++)
		steps += resume1(c, HWT_RESUME_STEP, 0, NULL, 0, &ev, &err) == 0 &&
			 ev.kind == HWT_EVENT_STEPPED;
	h = history_of(c, child);
	CHECK("live: attached steps are recorded", steps == 10 && h.n == 11,
	      "%d steps, %zu insns: %s", steps, h.n, err.msg);
	history_free(&h);
	rc = hwt_collect_detach(c, &err);
	CHECK("live: detach", rc == 0, "rc %d: %s", rc, err.msg);
	hwt_collect_close(c);
	rc = (int)waitpid(child, &status, 0);
	CHECK("live: the detached program runs on and exits normally",
	      rc == child && WIFEXITED(status) && WEXITSTATUS(status) == 7,
	      "rc %d status 0x%x", rc, status);
}

/* ---- deferred recording ----------------------------------------------- */

static struct hwt_collector *launch_deferred(const char *prog,
					     struct hwt_err *err)
{
	char path[PATH_MAX + 16];
	char *argv[] = { path, NULL };
	struct hwt_collector *c = NULL;
	HWT_OPTS(hwt_collect_opts, o, .backend = "ptrace", .live_control = true,
		 .defer_recording = true);

	snprintf(path, sizeof(path), "%s/%s", progdir, prog);
	if (hwt_collect_launch(&o, argv, &c, err) < 0)
		return NULL;
	return c;
}

/* Untraced to main (an int3 the program's memory never shows), recorded
 * from there: the history is a whole run's from main's first execution
 * on. Five write watches (more than the debug registers hold) make it
 * record from that resume on. */
static void test_deferred(void)
{
	char path[PATH_MAX + 16], *argv[] = { path, NULL };
	struct history ref = reference("loops"), h = {0};
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct hwt_collector *c;
	const struct hwt_collect_thread *t;
	struct hwt_watch five[5];
	struct hwt_resume_action a = { .kind = HWT_RESUME_CONT };
	struct hwt_resume_opts o = { .sz = sizeof(o), .actions = &a,
				     .nactions = 1, .watches = five,
				     .nwatches = 5, .interrupt_fd = -1 };
	HWT_OPTS(hwt_collect_opts, bad, .backend = "ptrace",
		 .defer_recording = true);
	uint64_t main_pc, grid;
	uint8_t byte = 0;
	size_t k = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/loops", progdir);
	rc = hwt_collect_launch(&bad, argv, &c, &err);
	CHECK("deferred: refused without live control", rc == -EINVAL &&
	      strstr(err.msg, "live control"), "rc %d: %s", rc, err.msg);
	main_pc = symbol(path, "main");
	grid = symbol(path, "grid");
	c = launch_deferred("loops", &err);
	CHECK("deferred: launch loops", c && main_pc && grid && ref.n > 1000,
	      "%s", err.msg);
	if (!c || !main_pc || !grid || ref.n <= 1000)
		goto out;
	CHECK("deferred: nothing recorded at launch",
	      !hwt_collect_recording(c) && hwt_collect_threads(c, &t) == 0 &&
	      hwt_collect_live_tids(c, NULL, 0) == 1, "recording %d",
	      hwt_collect_recording(c));
	rc = resume1(c, HWT_RESUME_CONT, 0, &main_pc, 1, &ev, &err);
	CHECK("deferred: continue stops at the breakpoint on main",
	      rc == 0 && ev.kind == HWT_EVENT_BREAKPOINT && ev.pc == main_pc,
	      "rc %d kind %d pc 0x%llx: %s", rc, ev.kind,
	      (unsigned long long)ev.pc, err.msg);
	hwt_collect_mem_read(c, main_pc, &byte, 1);
	CHECK("deferred: the breakpoint's int3 is out of the code at the stop",
	      byte != 0xcc, "byte 0x%02x", byte);
	CHECK("deferred: still nothing recorded", !hwt_collect_recording(c) &&
	      hwt_collect_threads(c, &t) == 0, "threads listed");
	CHECK("deferred: the modules mapped by main are listed (libc's too)",
	      module_base(c, "libc.so.6") != 0, "no libc.so.6 among %zu",
	      hwt_collect_modules(c, &(const struct hwt_collect_module *){0}));
	rc = hwt_collect_record_start(c, &err);
	h = history_of(c, hwt_collect_pid(c));
	CHECK("deferred: record_start begins the history where the thread "
	      "stands", rc == 0 && hwt_collect_recording(c) && h.ok &&
	      h.n == 1 && h.pc[0] == main_pc, "rc %d, %zu insns: %s", rc, h.n,
	      err.msg);
	history_free(&h);
	rc = hwt_collect_record_start(c, &err);
	CHECK("deferred: record_start again changes nothing", rc == 0, "%s",
	      err.msg);
	hwt_collect_close(c);

	/* Five write watches, untraced: the stepper takes over. */
	c = launch_deferred("loops", &err);
	rc = c ? resume1(c, HWT_RESUME_CONT, 0, &main_pc, 1, &ev, &err) : -1;
	for (int i = 0; i < 5; i++)
		five[i] = (struct hwt_watch){ .addr = grid + 4 * (i + 1),
					      .len = 4,
					      .kind = HWT_WATCH_WRITE };
	if (rc == 0)
		rc = hwt_collect_resume(c, &o, &ev, &err);
	CHECK("deferred: five write watches record from then on and stop at "
	      "a write", rc == 0 && c && hwt_collect_recording(c) &&
	      ev.kind == HWT_EVENT_WATCHPOINT, "rc %d kind %d: %s", rc,
	      ev.kind, err.msg);
	o.nwatches = 0;
	if (rc == 0)
		rc = hwt_collect_resume(c, &o, &ev, &err);
	h = c ? history_of(c, hwt_collect_pid(c)) : h;
	while (k < ref.n && ref.pc[k] != main_pc)
		k++;
	CHECK("deferred: the history from main to the exit is a whole run's",
	      rc == 0 && ev.kind == HWT_EVENT_EXITED && h.ok && h.n > 1 &&
	      h.pc[0] == main_pc && k + h.n == ref.n &&
	      !memcmp(h.pc, ref.pc + k, h.n * sizeof(*h.pc)),
	      "rc %d kind %d, %zu insns from main, reference %zu: %s", rc,
	      ev.kind, h.n, ref.n - k, err.msg);
	history_free(&h);
out:
	hwt_collect_close(c);
	history_free(&ref);
}

/* ---- registers of the past -------------------------------------------- */

/* 2100 single steps from main, crossing two of the log's blocks: the
 * registers kept for each instruction are those read live at its stop;
 * a register written at a stop replaces the current entry. */
static void test_past_registers(void)
{
	enum { STEPS = 2100 };
	static struct user_regs_struct live[STEPS + 1];
	static struct user_fpregs_struct live_fp[STEPS + 1];
	struct user_fpregs_struct fp;
	char path[PATH_MAX + 16];
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct hwt_collector *c = NULL;
	struct user_regs_struct r;
	const struct hwt_collect_thread *t;
	uint64_t main_pc, base = 0;
	size_t len, same = 0, same_fp = 0;
	pid_t tid = 0;
	int rc = -1, i;

	snprintf(path, sizeof(path), "%s/loops", progdir);
	main_pc = symbol(path, "main");
	{
		char *argv[] = { path, NULL };
		HWT_OPTS(hwt_collect_opts, o, .backend = "ptrace",
			 .live_control = true);

		if (main_pc && hwt_collect_launch(&o, argv, &c, &err) == 0)
			rc = resume1(c, HWT_RESUME_CONT, 0, &main_pc, 1, &ev,
				     &err);
	}
	CHECK("past registers: stop at main", rc == 0 &&
	      ev.kind == HWT_EVENT_BREAKPOINT, "rc %d: %s", rc, err.msg);
	if (rc)
		goto out;
	tid = hwt_collect_pid(c);
	base = hwt_collect_threads(c, &t) ? t[0].insn_total - 1 : 0;
	for (i = 0; i <= STEPS && rc == 0; i++) {
		len = sizeof(live[i]);
		rc = hwt_collect_regset(c, tid, NT_PRSTATUS, &live[i], &len,
					false, &err);
		len = sizeof(live_fp[i]);
		if (rc == 0)
			rc = hwt_collect_regset(c, tid, NT_PRFPREG, &live_fp[i],
						&len, false, &err);
		if (rc == 0 && i < STEPS)
			rc = resume1(c, HWT_RESUME_STEP, 0, NULL, 0, &ev, &err);
	}
	for (i = 0; rc == 0 && i <= STEPS; i++) {
		same += hwt_collect_regs_at(c, tid, base + (uint64_t)i,
					    NT_PRSTATUS, &r, sizeof(r),
					    &err) == 0 &&
			!memcmp(&r, &live[i], sizeof(r));
		same_fp += hwt_collect_regs_at(c, tid, base + (uint64_t)i,
					       NT_PRFPREG, &fp, sizeof(fp),
					       &err) == 0 &&
			!memcmp(&fp, &live_fp[i], sizeof(fp));
	}
	CHECK("past registers: each instruction's are those read at its stop",
	      rc == 0 && same == STEPS + 1, "%zu of %d the same (rc %d: %s)",
	      same, STEPS + 1, rc, err.msg);
	CHECK("past registers: and its x87/SSE state", rc == 0 &&
	      same_fp == STEPS + 1, "%zu of %d the same (rc %d: %s)", same_fp,
	      STEPS + 1, rc, err.msg);
	CHECK("past registers: a set not kept is refused",
	      hwt_collect_regs_at(c, tid, base, NT_X86_XSTATE, &fp, sizeof(fp),
				  NULL) == -EINVAL, "accepted");
	rc = hwt_collect_regs_at(c, tid, base + STEPS + 1, NT_PRSTATUS, &r,
				 sizeof(r), &err);
	CHECK("past registers: none for an instruction not executed yet",
	      rc == -ENOENT, "rc %d", rc);
	r = live[STEPS];
	r.rax ^= 0x5a5a;
	len = sizeof(r);
	rc = hwt_collect_regset(c, tid, NT_PRSTATUS, &r, &len, true, &err);
	if (rc == 0)
		rc = hwt_collect_regs_at(c, tid, base + STEPS, NT_PRSTATUS, &r,
					 sizeof(r), &err);
	CHECK("past registers: a register written at the stop is the "
	      "instruction's", rc == 0 && r.rax == (live[STEPS].rax ^ 0x5a5a),
	      "rc %d rax 0x%llx: %s", rc, (unsigned long long)r.rax, err.msg);
out:
	hwt_collect_close(c);
}

/* stop_before_exit: the process stops as its exit_group starts, with
 * registers and memory there; the next resume lets it end, and closing
 * a collector held there kills it without hanging. */
static void test_stop_before_exit(void)
{
	struct hwt_collect_event ev = {0};
	struct hwt_err err = {0};
	struct hwt_collector *c = NULL;
	struct hwt_resume_action a = { .kind = HWT_RESUME_CONT };
	struct hwt_resume_opts o = { .sz = sizeof(o), .actions = &a,
				     .nactions = 1, .interrupt_fd = -1,
				     .stop_before_exit = true };
	struct user_regs_struct r;
	size_t len = sizeof(r);
	uint8_t byte;
	int rc = -1;

	for (int round = 0; round < 2; round++) {
		c = launch("loops", &err);
		rc = c ? hwt_collect_resume(c, &o, &ev, &err) : -1;
		if (round == 1)
			break;      /* closed while held at the exit */
		CHECK("exit stop: the process stops as it starts to exit",
		      rc == 0 && ev.kind == HWT_EVENT_EXITING &&
		      ev.tid == hwt_collect_pid(c), "rc %d kind %d: %s", rc,
		      ev.kind, err.msg);
		rc = hwt_collect_regset(c, ev.tid, NT_PRSTATUS, &r, &len, false,
					&err);
		CHECK("exit stop: registers and memory are still there",
		      rc == 0 && r.orig_rax == 231 /* exit_group */ &&
		      hwt_collect_mem_read(c, r.rip - 2, &byte, 1) == 1 &&
		      byte == 0x0f, "rc %d orig_rax %lld: %s", rc,
		      (long long)r.orig_rax, err.msg);
		rc = hwt_collect_resume(c, &o, &ev, &err);
		CHECK("exit stop: the next resume lets it end",
		      rc == 0 && ev.kind == HWT_EVENT_EXITED, "rc %d kind %d: %s",
		      rc, ev.kind, err.msg);
		hwt_collect_close(c);
	}
	CHECK("exit stop: closing while held there ends the process",
	      rc == 0 && ev.kind == HWT_EVENT_EXITING, "rc %d kind %d", rc,
	      ev.kind);
	hwt_collect_close(c);
}

/* Two threads released by a barrier hit one breakpoint together: the
 * one not reported first keeps its event queued and an interrupt stop
 * owed. The stepper takes both over when recording starts, and the
 * program runs on through its next barriers to its end (a timer ends a
 * resume that hangs: two minutes, far beyond the few seconds the run
 * takes on a loaded machine, so that only a hang trips it). */
static const char barrier_src[] =
	"#include <pthread.h>\n"
	"static pthread_barrier_t b;\n"
	"__attribute__((noinline)) void hit(void) { __asm__ volatile(\"\"); }\n"
	"static void *run(void *a) {\n"
	"  for (int i = 0; i < 20; i++) { pthread_barrier_wait(&b); hit(); }\n"
	"  return a; }\n"
	"int main(void) { pthread_t t; pthread_barrier_init(&b, 0, 2);\n"
	"  pthread_create(&t, 0, run, 0); run(0); pthread_join(t, 0);\n"
	"  return 0; }\n";

static void test_deferred_threads(void)
{
	char prog[512], *argv[] = { prog, NULL };
	struct hwt_collect_event ev = {0};
	struct hwt_err err = {0};
	struct hwt_collector *c = NULL;
	struct itimerspec hang = { .it_value = { 120, 0 } };
	int timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	struct hwt_resume_action a = { .kind = HWT_RESUME_CONT };
	struct hwt_resume_opts o = { .sz = sizeof(o), .actions = &a,
				     .nactions = 1, .interrupt_fd = timer };
	HWT_OPTS(hwt_collect_opts, opts, .backend = "ptrace",
		 .live_control = true, .defer_recording = true);
	uint64_t bp = 0;
	int rc = -1;

	if (!subject_build(barrier_src, "barrier", "-pthread", prog,
			   sizeof(prog))) {
		printf("SKIP deferred threads: no C compiler with static "
		       "libc to build the subject\n");
		return;
	}
	bp = symbol(prog, "hit");
	if (bp && timer >= 0 && hwt_collect_launch(&opts, argv, &c, &err) == 0)
		rc = resume1(c, HWT_RESUME_CONT, 0, &bp, 1, &ev, &err);
	CHECK("deferred threads: a thread stops at the breakpoint untraced",
	      rc == 0 && ev.kind == HWT_EVENT_BREAKPOINT && ev.pc == bp,
	      "rc %d kind %d: %s", rc, ev.kind, err.msg);
	if (rc == 0)
		rc = hwt_collect_record_start(c, &err);
	if (timer >= 0)
		timerfd_settime(timer, 0, &hang, NULL);
	while (rc == 0 && ev.kind != HWT_EVENT_EXITED &&
	       ev.kind != HWT_EVENT_KILLED && ev.kind != HWT_EVENT_INTERRUPTED)
		rc = hwt_collect_resume(c, &o, &ev, &err);
	CHECK("deferred threads: recorded from there, both threads run on to "
	      "the end", rc == 0 && ev.kind == HWT_EVENT_EXITED &&
	      ev.status == 0, "rc %d kind %d status %d: %s", rc, ev.kind,
	      ev.status, err.msg);
	hwt_collect_close(c);
	if (timer >= 0)
		close(timer);
	subject_remove(prog);
}

/* Two threads released together into a breakpoint, round after round,
 * the breakpoint moving between two functions. When one thread's stop
 * ends a resume, the other may have executed the int3 already, its trap
 * still pending behind the interrupt that stops it; that trap must be
 * taken as the breakpoint it is, there and then. Collected a resume
 * later, it would come one past a breakpoint no longer set: a SIGTRAP
 * of the program's own, or (recording) a thread run on from there. The
 * two functions are apart, so that one past the one is not the other,
 * and the program counts their calls. */
static const char alternate_src[] =
	"#include <pthread.h>\n"
	"static pthread_barrier_t b;\n"
	"static int n1, n2;\n"
	"__attribute__((noinline)) void one(void)\n"
	"{ __atomic_fetch_add(&n1, 1, __ATOMIC_RELAXED); }\n"
	"__attribute__((noinline)) void two(void)\n"
	"{ __atomic_fetch_add(&n2, 1, __ATOMIC_RELAXED); }\n"
	"static void *run(void *a) {\n"
	"  for (int i = 0; i < 20; i++) {\n"
	"    pthread_barrier_wait(&b); one(); pthread_barrier_wait(&b); two();\n"
	"  }\n"
	"  return a; }\n"
	"int main(void) { pthread_t t; pthread_barrier_init(&b, 0, 2);\n"
	"  pthread_create(&t, 0, run, 0); run(0); pthread_join(t, 0);\n"
	"  return n1 == 40 && n2 == 40 ? 0 : 3; }\n";

static void test_racing_breakpoint_traps(void)
{
	char prog[512], *argv[] = { prog, NULL };
	struct hwt_collect_event ev = {0};
	struct hwt_err err = {0};
	struct hwt_collector *c = NULL;
	struct itimerspec hang = { .it_value = { 120, 0 } };
	int timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	struct hwt_resume_action a = { .kind = HWT_RESUME_CONT };
	uint64_t bps[2] = {0}, bp = 0;
	struct hwt_resume_opts o = { .sz = sizeof(o), .actions = &a,
				     .nactions = 1, .breakpoints = &bp,
				     .nbreakpoints = 1, .interrupt_fd = timer };
	HWT_OPTS(hwt_collect_opts, opts, .backend = "ptrace",
		 .live_control = true, .defer_recording = true);
	unsigned stops = 0, wrong = 0;
	uint64_t wrong_pc = 0;
	int rc = -1, wrong_kind = -1;

	if (!subject_build(alternate_src, "alternate", "-pthread", prog,
			   sizeof(prog))) {
		printf("SKIP racing breakpoint traps: no C compiler with "
		       "static libc to build the subject\n");
		return;
	}
	bps[0] = symbol(prog, "one");
	bps[1] = symbol(prog, "two");
	if (timer >= 0)
		timerfd_settime(timer, 0, &hang, NULL);
	if (bps[0] && bps[1] && timer >= 0 &&
	    hwt_collect_launch(&opts, argv, &c, &err) == 0)
		rc = 0;
	while (rc == 0 && ev.kind != HWT_EVENT_EXITED &&
	       ev.kind != HWT_EVENT_KILLED) {
		bp = bps[stops % 2];
		rc = hwt_collect_resume(c, &o, &ev, &err);
		if (rc == 0 && ev.kind == HWT_EVENT_BREAKPOINT && ev.pc == bp) {
			stops++;
		} else if (rc == 0 && ev.kind != HWT_EVENT_EXITED &&
			   ev.kind != HWT_EVENT_THREAD_EXITED && !wrong++) {
			wrong_kind = (int)ev.kind;
			wrong_pc = ev.pc;
		}
		if (ev.kind == HWT_EVENT_INTERRUPTED)
			break;
	}
	CHECK("racing breakpoint traps: every stop is at the breakpoint of "
	      "its resume, 40 of them, and the program ends normally",
	      rc == 0 && wrong == 0 && stops == 40 &&
	      ev.kind == HWT_EVENT_EXITED && ev.status == 0,
	      "rc %d, %u stops, %u others (the first kind %d at %#llx), "
	      "last kind %d status %d: %s", rc, stops, wrong, wrong_kind,
	      (unsigned long long)wrong_pc, ev.kind, ev.status, err.msg);
	hwt_collect_close(c);
	if (timer >= 0)
		close(timer);
	subject_remove(prog);
}

int main(int argc, char **argv)
{
	char exe[PATH_MAX];

	(void)argc;
	(void)argv;
	if (!check_programs_dir(progdir, sizeof(progdir)))
		return 2;
	if (personality(ADDR_NO_RANDOMIZE) < 0) {
		printf("SKIP collect live: cannot turn off address "
		       "randomisation: %s\n", strerror(errno));
		return 0;
	}
	snprintf(exe, sizeof(exe), "%s/loops", progdir);
	if (access(exe, X_OK) == 0) {
		RUN(test_breakpoints_and_steps);
		RUN(test_watch_regs_memory);
		RUN(test_signals);
		RUN(test_threads);
		RUN(test_thread_created);
		RUN(test_deferred);
		RUN(test_past_registers);
		RUN(test_stop_before_exit);
	} else {
		printf("SKIP collect live programs: %s is not built (make "
		       "programs)\n", exe);
	}
	if (subject_build(subject_src, "subject", "", subject,
			  sizeof(subject))) {
		RUN(test_interrupt);
		RUN(test_attach_detach);
		RUN(test_deferred_threads);
		RUN(test_racing_breakpoint_traps);
		subject_remove(subject);
	} else {
		printf("SKIP collect live subjects: no C compiler with static "
		       "libc to build them\n");
	}
	return check_exit();
}
