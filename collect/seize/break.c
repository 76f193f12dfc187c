// SPDX-License-Identifier: BSD-2-Clause
/* break.c - breakpoints and watchpoints of a seized program under
 * live control (seize.h).
 *
 * The program is not stepped, so a breakpoint must stop it by itself: an
 * int3 byte written over the instruction's first byte while the threads
 * run, and the original byte put back at every stop, so memory reads and
 * writes between resumes see and change the program's own code. A thread
 * resumed from a breakpoint address is stepped over it first, with the
 * byte out (live.c).
 *
 * Watches use the x86 debug registers DR0-DR3 of every thread (at most
 * four in all): WRITE breaks on writes (R/W 01), READ and ACCESS on reads
 * or writes (11, x86 cannot watch reads alone), so a READ watch reports
 * an access only when the watched bytes kept their value. Unlike the
 * ptrace backend's exact compare, a WRITE watch reports every write, one
 * that stores the same value included; accesses by system calls are not
 * seen either way.
 *
 * Where the debug registers do not fire (os/machine.c's probe), watches
 * are soft: while any is set, threads are single-stepped instead of
 * continued; before each step the instruction is decoded for the memory
 * it reads and writes (os/x86mem.c), and after it a WRITE watch reports
 * when the bytes changed, READ and ACCESS when the instruction touched
 * them. Slow, but where they stop is where the hardware would.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include <sys/uio.h>

#include "array.h"
#include "os/debugreg.h"
#include "os/machine.h"
#include "os/x86mem.h"
#include "seize.h"

#define INT3 0xcc

static int cmp_bp(const void *a, const void *b)
{
	return hwt_cmp_u64(&((const struct hwt_seize_bp *)a)->addr,
			   &((const struct hwt_seize_bp *)b)->addr);
}

static int mem_open(const struct hwt_seize *s, bool write)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)s->pid);
	return open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
}

static bool read_value(const struct hwt_seize *s, const struct hwt_watch *w,
		       uint64_t *v)
{
	int fd = mem_open(s, false);
	bool ok;

	*v = 0;
	if (fd < 0)
		return false;
	ok = pread(fd, v, w->len, (off_t)w->addr) == (ssize_t)w->len;
	close(fd);
	return ok;
}

static int set_watches(struct hwt_seize *s, const struct hwt_resume_opts *o,
		       struct hwt_err *err)
{
	struct hwt_dr_watches *d = &s->brk.dr;

	if (o->nwatches > HWT_DR_SLOTS)
		return hwt_err_set(err, ENOSPC, "%zu watchpoints; this backend "
				   "watches with the %u x86 debug registers "
				   "(the ptrace backend has any number of "
				   "write watchpoints)", o->nwatches,
				   HWT_DR_SLOTS);
	for (size_t i = 0; i < o->nwatches; i++)
		if (!read_value(s, &o->watches[i], &d->value[i]))
			return hwt_err_set(err, EFAULT, "cannot watch 0x%llx: "
					   "the address is not mapped",
					   (unsigned long long)o->watches[i].addr);
	hwt_dr_watches_set(d, o->watches, o->nwatches);
	s->brk.soft = o->nwatches && !hwt_machine()->dr_fires;
	return 0;
}

int hwt_seize_breaks_set(struct hwt_seize *s,
			 const struct hwt_resume_opts *o, struct hwt_err *err)
{
	struct hwt_seize_breaks *b = &s->brk;
	size_t n = 0;

	free(b->bp);
	b->bp = NULL;
	b->nbp = 0;
	if (o->nbreakpoints) {
		b->bp = calloc(o->nbreakpoints, sizeof(*b->bp));
		if (!b->bp)
			return hwt_err_set(err, ENOMEM, "out of memory for "
					   "breakpoints");
		for (size_t i = 0; i < o->nbreakpoints; i++)
			b->bp[i].addr = o->breakpoints[i];
		qsort(b->bp, o->nbreakpoints, sizeof(*b->bp), cmp_bp);
		for (size_t i = 0; i < o->nbreakpoints; i++)
			if (!n || b->bp[n - 1].addr != b->bp[i].addr)
				b->bp[n++] = b->bp[i];
		b->nbp = n;
	}
	return set_watches(s, o, err);
}

bool hwt_seize_is_breakpoint(const struct hwt_seize *s, uint64_t pc)
{
	struct hwt_seize_bp key = { .addr = pc };

	return s->brk.nbp &&
	       bsearch(&key, s->brk.bp, s->brk.nbp, sizeof(key), cmp_bp);
}

/* One byte into the program's memory; fails (short) only where the page
 * is unmapped, which leaves nothing there to insert or restore. */
static ssize_t poke(int fd, uint64_t addr, uint8_t b)
{
	return pwrite(fd, &b, 1, (off_t)addr);
}

void hwt_seize_breaks_insert(struct hwt_seize *s)
{
	int fd;

	if (!s->brk.nbp || (fd = mem_open(s, true)) < 0)
		return;
	for (size_t i = 0; i < s->brk.nbp; i++) {
		struct hwt_seize_bp *bp = &s->brk.bp[i];

		/* Unmapped now: no thread can get there before a stop. */
		if (bp->inserted ||
		    pread(fd, &bp->orig, 1, (off_t)bp->addr) != 1 ||
		    poke(fd, bp->addr, INT3) != 1)
			continue;
		bp->inserted = true;
	}
	close(fd);
}

void hwt_seize_breaks_remove(struct hwt_seize *s, bool image_gone)
{
	int fd = image_gone ? -1 : mem_open(s, true);

	for (size_t i = 0; i < s->brk.nbp; i++) {
		struct hwt_seize_bp *bp = &s->brk.bp[i];

		if (bp->inserted && fd >= 0)
			poke(fd, bp->addr, bp->orig);
		bp->inserted = false;
	}
	if (fd >= 0)
		close(fd);
}

int hwt_seize_dr_apply(struct hwt_seize *s, struct hwt_seize_thread *t,
		       struct hwt_err *err)
{
	int rc;

	if (s->brk.soft)
		return 0;
	rc = hwt_dr_watches_apply(&s->brk.dr, t->tid, &t->dr_gen);

	if (rc < 0)
		return hwt_err_set(err, EOPNOTSUPP, "cannot set debug "
				   "registers of thread %d (%s): watchpoints "
				   "are unavailable here", (int)t->tid,
				   strerror(-rc));
	return 0;
}

static bool read_dr_watch(void *ctx, const struct hwt_watch *w, uint64_t *v)
{
	return read_value(ctx, w, v);
}

static bool read_now(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(tid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static bool overlaps(const struct hwt_store *r, int n,
		     const struct hwt_watch *w)
{
	for (int i = 0; i < n; i++)
		if (r[i].addr < w->addr + w->len && w->addr < r[i].addr + r[i].len)
			return true;
	return false;
}

int hwt_seize_soft_arm(struct hwt_seize *s, struct hwt_seize_thread *t,
		       int req)
{
	const struct hwt_dr_watches *d = &s->brk.dr;
	struct hwt_store loads[8], stores[8];
	struct user_regs_struct r;
	uint8_t code[HWT_X86_CODE_MAX];
	size_t n;
	int nl = 0, ns = 0;
	bool sc;

	t->soft_hit = 0;
	t->soft_step = s->brk.soft;
	if (!s->brk.soft)
		return req;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return PTRACE_SINGLESTEP;
	if (!(n = hwt_x86_code_read(t->tid, r.rip, code)))
		return PTRACE_SINGLESTEP;
	nl = hwt_x86_loads(code, n, &r, loads, 8);
	ns = hwt_x86_stores(code, n, &r, stores, 8, &sc);
	for (size_t i = 0; i < d->used; i++) {
		const struct hwt_watch *w = &d->watch[i];

		if ((w->kind != HWT_WATCH_WRITE && overlaps(loads, nl, w)) ||
		    (w->kind != HWT_WATCH_READ && overlaps(stores, ns, w))) {
			t->soft_hit = (unsigned)i + 1;
			break;
		}
	}
	return PTRACE_SINGLESTEP;
}

/* After a soft step: what the step accessed, else a WRITE watch whose
 * bytes changed otherwise (a system call). */
static const struct hwt_watch *soft_hit(struct hwt_seize *s,
					struct hwt_seize_thread *t)
{
	struct hwt_dr_watches *d = &s->brk.dr;
	unsigned hit = t->soft_hit;

	t->soft_hit = 0;
	if (hit && hit <= d->used) {
		const struct hwt_watch *w = &d->watch[hit - 1];

		if (w->kind == HWT_WATCH_WRITE)
			read_now(t->tid, w->addr, &d->value[hit - 1], w->len);
		return w;
	}
	for (size_t i = 0; i < d->used; i++) {
		uint64_t v = 0;

		if (d->watch[i].kind != HWT_WATCH_WRITE ||
		    !read_now(t->tid, d->watch[i].addr, &v, d->watch[i].len) ||
		    v == d->value[i])
			continue;
		d->value[i] = v;
		return &d->watch[i];
	}
	return NULL;
}

bool hwt_seize_step_guard(struct hwt_seize *s, struct hwt_seize_thread *t)
{
	uint8_t code[2], int3 = INT3;
	uint64_t pc;
	long v;
	int fd;

	hwt_seize_guard_drop(s, t, false);
	if (!hwt_machine()->cpuid_trap_lost)
		return false;
	errno = 0;
	v = ptrace(PTRACE_PEEKUSER, t->tid,
		   offsetof(struct user_regs_struct, rip), 0);
	if (errno)
		return false;
	pc = (uint64_t)v;
	/* cpuid, the instruction the probe finds losing its trap. */
	if (!read_now(t->tid, pc, code, 2) || code[0] != 0x0f ||
	    code[1] != 0xa2)
		return false;
	/* Another thread's guard there already: shared, its byte kept. */
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].guard_bp == pc + 2) {
			t->guard_orig = s->threads[i].guard_orig;
			t->guard_bp = pc + 2;
			return true;
		}
	if ((fd = mem_open(s, true)) < 0)
		return false;
	if (pread(fd, &t->guard_orig, 1, (off_t)(pc + 2)) != 1 ||
	    poke(fd, pc + 2, int3) != 1) {
		close(fd);
		return false;
	}
	close(fd);
	t->guard_bp = pc + 2;
	return true;
}

/* The byte goes back once no other thread's guard is there. */
static void guard_remove(struct hwt_seize *s, struct hwt_seize_thread *t)
{
	uint64_t at = t->guard_bp;
	int fd;

	t->guard_bp = 0;
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].guard_bp == at)
			return;
	if ((fd = mem_open(s, true)) >= 0) {
		poke(fd, at, t->guard_orig);
		close(fd);
	}
}

void hwt_seize_guard_drop(struct hwt_seize *s, struct hwt_seize_thread *t,
			  bool image_gone)
{
	if (!t->guard_bp)
		return;
	if (image_gone)
		t->guard_bp = 0;
	else
		guard_remove(s, t);
}

enum hwt_guard_stop hwt_seize_guard_stop(struct hwt_seize *s,
					 struct hwt_seize_thread *t,
					 const siginfo_t *si)
{
	struct user_regs_struct r;
	uint64_t own = t->guard_bp, at;
	bool any = own != 0;

	for (size_t i = 0; i < s->nthreads; i++)
		any |= s->threads[i].guard_bp != 0;
	if (!any)
		return HWT_GUARD_NONE;
	if (own)
		guard_remove(s, t);
	if (si->si_code != SI_KERNEL ||
	    ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return HWT_GUARD_NONE;
	at = r.rip - 1;
	if (own && at == own) {
		/* The int3 ran: back onto its address, the step done. */
		r.rip = at;
		ptrace(PTRACE_SETREGS, t->tid, 0, &r);
		return HWT_GUARD_STEPPED;
	}
	for (size_t i = 0; i < s->nthreads; i++)
		if (&s->threads[i] != t && s->threads[i].guard_bp == at) {
			r.rip = at;
			ptrace(PTRACE_SETREGS, t->tid, 0, &r);
			return HWT_GUARD_OTHERS;
		}
	return HWT_GUARD_NONE;
}

const struct hwt_watch *hwt_seize_dr_hit(struct hwt_seize *s,
					 struct hwt_seize_thread *t)
{
	if (s->brk.soft)
		return soft_hit(s, t);
	return hwt_dr_watches_hit(&s->brk.dr, t->tid, read_dr_watch, s);
}

void hwt_seize_breaks_free(struct hwt_seize *s)
{
	free(s->brk.bp);
	s->brk.bp = NULL;
	s->brk.nbp = 0;
}
