// SPDX-License-Identifier: BSD-2-Clause
/* test_vgdata.c - the Valgrind tool's data history into values of the
 * past (collect/valgrind/data.c), on files made here as the tool lays
 * them out (vgdata.h): registers and memory before each instruction of
 * two runs, a system call's registers, a fault (what the faulting
 * instruction did not write is not undone), a thread whose runs do not
 * end where its history does (no values rather than wrong ones), a ring
 * whose oldest part was overwritten, snapshots at a debugger's stops
 * (in the middle of a run, moved, a handler entered where it stood),
 * and damaged files refused with
 * where, every truncation of a good one refused or read within bounds. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/user.h>

#include "check.h"
#include "hwt-past.h"
#include "valgrind/data.h"
#include "valgrind/vgdata.h"
#include "../../vgdata_sample.h"

static uint64_t rax_at(const struct hwt_past *p, uint64_t index, int *rc,
		       uint64_t *rip)
{
	struct user_regs_struct r = { 0 };

	*rc = hwt_reglog_get(&p->threads[0].regs, index, &r);
	*rip = r.rip;
	return r.rax;
}

static void test_values(void)
{
	static struct file f;
	struct hwt_vg_data_thread t = { TID, PC1 };
	struct hwt_past p;
	struct hwt_err err = { 0 };
	uint64_t want[4] = { 1, 2, 7, 3 }, pcs[4] = { PC0, PC1, PC0, PC1 };
	bool regs_ok = true;
	int rc;

	two_runs(&f);
	rc = hwt_vg_data_build(f.out, f.nout, &t, 1, &p, &err);
	CHECK("a data history of two runs builds", rc == 0 && p.nthreads == 1,
	      "rc %d (%s), %zu threads", rc, err.msg, p.nthreads);
	if (rc || p.nthreads != 1)
		return;
	CHECK("its thread's history is its four instructions",
	      p.threads[0].end_index == 3 && p.threads[0].regs.first == 0 &&
	      p.threads[0].nruns == 1 && p.threads[0].last_seq == 3,
	      "end %" PRIu64 ", first %" PRIu64 ", %zu runs",
	      p.threads[0].end_index, p.threads[0].regs.first,
	      p.threads[0].nruns);
	for (uint64_t i = 0; i < 4; i++) {
		uint64_t rip, rax = rax_at(&p, i, &rc, &rip);

		if (rc || rax != want[i] || rip != pcs[i]) {
			regs_ok = false;
			printf("  | instruction %" PRIu64 ": rc %d, rip %#" PRIx64
			       ", rax %" PRIu64 "\n", i, rc, rip, rax);
		}
	}
	CHECK("RAX before each instruction: 1, then 2 written, 7 from the "
	      "system call, 3 written", regs_ok, "see above");
	CHECK("the stores' old bytes at their steps (1 and 3)",
	      p.n == 2 && p.e[0].seq == 1 && p.e[1].seq == 3 &&
	      p.e[0].addr == ADDR && p.e[0].len == 8 &&
	      p.bytes[p.e[0].off] == 0x11 && p.bytes[p.e[1].off] == 0x22 &&
	      p.e[0].tid == TID,
	      "%zu entries", p.n);
	hwt_vg_data_free(&p);
}

/* The history ends at PC1, where the thread faulted storing: its store
 * did not happen, and RAX written after its access was not written. */
static void test_fault(void)
{
	static struct file f;
	struct hwt_vg_data_thread t = { TID, PC1 };
	struct hwt_past p;
	struct hwt_err err = { 0 };
	uint64_t rip, rax;
	int rc;

	memset(&f, 0, sizeof(f));
	layout(&f, 0, true);
	thread_switch(&f, 0, TID);
	/* Stale slots: the fault came before they were written; the run
	 * stays open. */
	rword(&f, 0xdead);
	rword(&f, 0xbad);
	rword(&f, 0xbad);
	rword(&f, run_word(0, HWT_VGD_EXIT_OPEN));
	state(&f, HWT_VGD_EV_END, 5, PC1);
	thread_switch(&f, TID, 0);
	finish(&f);
	rc = hwt_vg_data_build(f.out, f.nout, &t, 1, &p, &err);
	if (rc || p.nthreads != 1) {
		CHECK("a faulting run builds", false, "rc %d (%s)", rc, err.msg);
		return;
	}
	rax = rax_at(&p, 1, &rc, &rip);
	CHECK("at the faulting instruction, the registers are the end's: "
	      "what it wrote after its only access was never written",
	      rc == 0 && rip == PC1 && rax == 5, "rc %d rip %#" PRIx64
	      " rax %" PRIu64, rc, rip, rax);
	CHECK("the faulting store is not undone", p.n == 0, "%zu entries",
	      p.n);
	hwt_vg_data_free(&p);
}

static void test_misaligned(void)
{
	static struct file f;
	struct hwt_vg_data_thread t = { TID, 0x9999 };
	struct hwt_past p;
	struct hwt_err err = { 0 };
	int rc;

	two_runs(&f);
	rc = hwt_vg_data_build(f.out, f.nout, &t, 1, &p, &err);
	CHECK("a thread whose runs do not end where its history does gets "
	      "no values, not misplaced ones", rc == 0 && p.nthreads == 0,
	      "rc %d (%s), %zu threads", rc, err.msg, p.nthreads);
	if (rc == 0)
		hwt_vg_data_free(&p);
}

static void test_overwritten(void)
{
	static struct file f;
	struct hwt_vg_data_thread t = { TID, PC1 };
	struct hwt_past p;
	struct hwt_err err = { 0 };
	int rc;

	/* The ring's first lap began with the first run: its first 16
	 * bytes are gone, the rest of its block a lap's remains. */
	two_runs(&f);
	memmove(f.out + 24 + f.nlay, f.out + 24 + f.nlay + 16 + 16,
		f.nring - 32);
	memcpy(f.out + 8 + 8, &(uint64_t){ f.nring - 32 }, 8);
	f.nout -= 32;
	rc = hwt_vg_data_build(f.out, f.nout, &t, 1, &p, &err);
	CHECK("where the oldest lap was overwritten, the history of values "
	      "begins after it", rc == 0 && p.nthreads == 1 &&
	      p.threads[0].regs.n == 2 && p.n == 1,
	      "rc %d (%s), %zu threads, %" PRIu64 " entries, %zu stores", rc,
	      err.msg, p.nthreads, p.nthreads ? p.threads[0].regs.n : 0, p.n);
	if (rc == 0)
		hwt_vg_data_free(&p);
}

/* Two runs with a register state between them, for cause, whose RBX
 * (5) is not the one the walk takes back from the end (never written
 * since: 0). */
static void with_rbx_before(struct file *f, unsigned cause)
{
	memset(f, 0, sizeof(*f));
	layout(f, 0, false);
	thread_switch(f, 0, TID);
	run(f, 0, 1, 0x11);
	state_of(f, HWT_VGD_EV_REGS, 2, PC1 + 4, cause, 5);
	run(f, 0, 7, 0x22);
	state(f, HWT_VGD_EV_END, 3, PC1 + 4);
	thread_switch(f, TID, 0);
	finish(f);
}

/* At a system call that is a write the tool missed: the whole history
 * of values is refused. */
static void test_disagreeing(void)
{
	static struct file f;
	struct hwt_vg_data_thread t = { TID, PC1 };
	struct hwt_past p;
	struct hwt_err err = { 0 };
	int rc;

	with_rbx_before(&f, HWT_VGD_CAUSE_SYSCALL);
	rc = hwt_vg_data_build(f.out, f.nout, &t, 1, &p, &err);
	CHECK("registers taken back to a system call that are not "
	      "Valgrind's there refuse the values, with where",
	      rc < 0 && strstr(err.msg, "differ from Valgrind's there at byte"),
	      "rc %d: %s", rc, err.msg);
	if (rc == 0)
		hwt_vg_data_free(&p);
	/* The same at a signal's delivery, which changes them. */
	with_rbx_before(&f, HWT_VGD_CAUSE_SIGNAL);
	rc = hwt_vg_data_build(f.out, f.nout, &t, 1, &p, &err);
	CHECK("a signal's delivery may change them", rc == 0 && p.nthreads == 1,
	      "rc %d: %s", rc, err.msg);
	if (rc == 0)
		hwt_vg_data_free(&p);
}

/* The registers the history of t holds, RAX and RIP, against want; the
 * stores it keeps. */
static void check_regs(const char *what, const struct file *f,
		       uint64_t last_pc, const uint64_t (*want)[2], size_t n,
		       size_t stores)
{
	struct hwt_vg_data_thread t = { TID, last_pc };
	struct hwt_past p;
	struct hwt_err err = { 0 };
	bool ok;
	int rc = hwt_vg_data_build(f->out, f->nout, &t, 1, &p, &err);

	ok = rc == 0 && p.nthreads == 1 && p.threads[0].end_index == n - 1 &&
	     p.n == stores;
	for (size_t i = 0; ok && i < n; i++) {
		uint64_t rip, rax = rax_at(&p, i, &rc, &rip);

		if (rc || rax != want[i][0] || rip != want[i][1]) {
			ok = false;
			printf("  | instruction %zu: rc %d, rip %#" PRIx64
			       ", rax %" PRIu64 "\n", i, rc, rip, rax);
		}
	}
	CHECK(what, ok, "rc %d (%s), %zu threads, end %" PRIu64 ", %zu stores",
	      rc, err.msg, p.nthreads, p.nthreads ? p.threads[0].end_index : 0,
	      rc == 0 ? p.n : 0);
	if (rc == 0)
		hwt_vg_data_free(&p);
}

/* Snapshots taken at a debugger's stop (vgdata.h): a thread stopped in
 * the middle of a run, before its first instruction, moved elsewhere by
 * the debugger, or entering a signal's handler where it was stopped. */
static void test_snapshot(void)
{
	static struct file f;
	static const uint64_t cut[][2] = { { 1, PC0 }, { 2, PC1 }, { 2, PC0 } };
	static const uint64_t whole[][2] = { { 1, PC0 }, { 2, PC1 } };
	static const uint64_t loop[][2] = {
		{ 1, PC0 }, { 2, PC1 }, { 2, PC0 }, { 3, PC1 },
	};
	static const uint64_t moved[][2] = {
		{ 1, PC0 }, { 2, PC1 }, { 2, PC1 + 4 }, { 5, PC0 }, { 6, PC1 },
	};
	static const uint64_t handler[][2] = {
		{ 1, PC0 }, { 2, PC1 }, { 2, PC1 + 4 }, { 2, PC0 }, { 3, PC1 },
	};

	/* Stopped at PC1 of the second run: its store's slots are stale. */
	memset(&f, 0, sizeof(f));
	layout(&f, 0, false);
	thread_switch(&f, 0, TID);
	run(&f, 0, 1, 0x11);
	rword(&f, 2);
	rword(&f, 0xbad);
	rword(&f, 0xbad);
	rword(&f, run_word(0, HWT_VGD_EXIT_OPEN));
	state(&f, HWT_VGD_EV_END, 9, PC1);
	thread_switch(&f, TID, 0);
	finish(&f);
	check_regs("stopped in the middle of a run, the history ends before "
		   "the instruction it stands at, the rest's slots unread", &f,
		   PC0, cut, 3, 1);
	/* Stopped at PC0 before the second run's first instruction. */
	memset(&f, 0, sizeof(f));
	layout(&f, 0, false);
	thread_switch(&f, 0, TID);
	run(&f, 0, 1, 0x11);
	rword(&f, 0xbad);
	rword(&f, 0xbad);
	rword(&f, 0xbad);
	rword(&f, run_word(0, HWT_VGD_EXIT_OPEN));
	state(&f, HWT_VGD_EV_END, 2, PC0);
	thread_switch(&f, TID, 0);
	finish(&f);
	check_regs("stopped before a run's first instruction, the run before "
		   "is the newest", &f, PC1, whole, 2, 1);
	/* The second run complete instead: a loop back to PC0. */
	memset(&f, 0, sizeof(f));
	layout(&f, 0, false);
	thread_switch(&f, 0, TID);
	run(&f, 0, 1, 0x11);
	run(&f, 0, 2, 0x22);
	state(&f, HWT_VGD_EV_END, 3, PC0);
	thread_switch(&f, TID, 0);
	finish(&f);
	check_regs("a run that went round to its first instruction is whole",
		   &f, PC1, loop, 4, 2);
	/* After the first run the debugger moves the thread from PC1 + 4
	 * to PC0 and writes RAX = 5; it runs again. */
	memset(&f, 0, sizeof(f));
	layout(&f, 0, false);
	thread_switch(&f, 0, TID);
	run(&f, 0, 1, 0x11);
	stop_at(&f, PC1 + 4);
	state_of(&f, HWT_VGD_EV_REGS, 2, PC1 + 4, HWT_VGD_CAUSE_JUMP, 0);
	run(&f, 0, 5, 0x22);
	state(&f, HWT_VGD_EV_END, 6, PC1 + 4);
	thread_switch(&f, TID, 0);
	finish(&f);
	check_regs("moved by the debugger, the instruction it stood at "
		   "counts as run, as in the stream, with the registers before "
		   "the move", &f, PC1, moved, 5, 2);
	/* Stopped at PC1 + 4, then a signal's handler (PC0) entered there. */
	memset(&f, 0, sizeof(f));
	layout(&f, 0, false);
	thread_switch(&f, 0, TID);
	run(&f, 0, 1, 0x11);
	stop_at(&f, PC1 + 4);
	state_of(&f, HWT_VGD_EV_REGS, 2, PC1 + 4, HWT_VGD_CAUSE_SIGNAL, 0);
	run(&f, 0, 2, 0x22);
	state(&f, HWT_VGD_EV_END, 3, PC1 + 4);
	thread_switch(&f, TID, 0);
	finish(&f);
	check_regs("a handler entered where a debugger stopped the thread: "
		   "that instruction counts as run", &f, PC1, handler, 5, 2);
}

static void refused(const char *what, const uint8_t *b, size_t n,
		    const char *want)
{
	struct hwt_vg_data_thread t = { TID, PC1 };
	struct hwt_past p;
	struct hwt_err err = { 0 };
	int rc = hwt_vg_data_build(b, n, &t, 1, &p, &err);

	CHECK(what, rc < 0 && strstr(err.msg, want), "rc %d: %s", rc,
	      err.msg);
	if (rc == 0)
		hwt_vg_data_free(&p);
}

static void test_damaged(void)
{
	static struct file f, g;
	uint64_t w;

	two_runs(&f);
	g = f;
	g.out[0] = 'X';
	refused("a file without the magic is refused", g.out, g.nout,
		"no magic");
	refused("a file shorter than its lengths is refused", f.out,
		f.nout - 8, "lengths the file does not hold");
	g = f;
	/* The first run names translation 5, never described. */
	w = run_word(5, 1);
	memcpy(g.out + 24 + g.nlay + 24 + 24, &w, 8);
	refused("a run of a translation never described is refused, with "
		"its byte", g.out, g.nout, "never described at byte");
	g = f;
	w = run_word(0, 7);
	memcpy(g.out + 24 + g.nlay + 24 + 24, &w, 8);
	refused("a run's exit its translation does not have is refused",
		g.out, g.nout, "does not have");
	g = f;
	g.out[24 + g.nlay - 1] = 40;       /* the block size */
	refused("a layout whose block size its slots do not add up to is "
		"refused", g.out, g.nout, "do not add up to");
	g = f;
	w = (uint64_t)8 << 8 | 9u << 4 | HWT_VGD_TAG_EVENT;
	memcpy(g.out + g.nout - 8, &w, 8);
	refused("an event of an unknown kind is refused", g.out, g.nout,
		"unknown kind");
}

/* Every truncation and every one-byte change of a good file is refused
 * or read, never read out of bounds (the sanitizer build checks), and
 * what is read never holds more than the file: at most its four
 * instructions and two stores. */
static void test_truncated(void)
{
	static struct file f;
	static uint8_t copy[sizeof(f.out)];
	struct hwt_vg_data_thread t = { TID, PC1 };
	unsigned built = 0, more = 0;

	two_runs(&f);
	for (size_t n = 0; n < f.nout; n++) {
		struct hwt_past p;
		struct hwt_err err = { 0 };
		uint64_t len[2] = { f.nlay, n > 24 + f.nlay ?
				    n - 24 - f.nlay : 0 };

		memcpy(copy, f.out, n);
		if (n >= 24)
			memcpy(copy + 8, len, 16);
		if (hwt_vg_data_build(copy, n, &t, 1, &p, &err) == 0) {
			built++;
			more += p.n > 2 || (p.nthreads &&
					    p.threads[0].regs.n > 4);
			hwt_vg_data_free(&p);
		}
	}
	for (size_t i = 0; i < f.nout; i++) {
		struct hwt_past p;
		struct hwt_err err = { 0 };

		memcpy(copy, f.out, f.nout);
		copy[i] ^= 0x5a;
		if (hwt_vg_data_build(copy, f.nout, &t, 1, &p, &err) == 0) {
			more += p.n > 2 || (p.nthreads &&
					    p.threads[0].regs.n > 4);
			hwt_vg_data_free(&p);
		}
	}
	CHECK("every truncation and changed byte of a file is refused or "
	      "read within it, never holding more than it", more == 0,
	      "%u of them hold more (%u truncations read)", more, built);
}

int main(void)
{
	RUN(test_values);
	RUN(test_fault);
	RUN(test_misaligned);
	RUN(test_overwritten);
	RUN(test_disagreeing);
	RUN(test_snapshot);
	RUN(test_damaged);
	RUN(test_truncated);
	return check_exit();
}
