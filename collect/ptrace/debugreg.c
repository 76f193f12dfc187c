// SPDX-License-Identifier: BSD-2-Clause
/* debugreg.c - read and access watchpoints: in x86 debug registers, or
 * by decoding each step where those do not fire.
 *
 * Writes are watched in software, exactly (live.c compares the bytes
 * after every step); reads leave no trace in memory, so READ and ACCESS
 * watches go to DR0-DR3 of every thread, set with PTRACE_POKEUSER. The
 * hardware trap after the accessing instruction merges with the
 * single-step trap; DR6 tells them apart, read after each step only while
 * such watches exist. x86 watches reads only together with writes, so a
 * READ watch reports an access only when the watched bytes kept their
 * value.
 *
 * Some hypervisors accept the registers and never raise their traps
 * (os/machine.c probes it). There the stepper decodes the instruction
 * about to be stepped instead, computes the memory it reads and writes
 * (os/x86mem.c), and reports the watch after the step, as the hardware
 * would; a READ watch then reports reads only. Accesses by the kernel
 * (system calls) are not seen either way.
 */
#include <errno.h>
#include <string.h>

#include "os/debugreg.h"
#include "os/machine.h"
#include "tracer.h"

int hwt_step_dr_configure(struct step_collector *c, const struct hwt_watch *w,
			size_t n, struct hwt_err *err)
{
	struct hwt_watch watch[HWT_DR_SLOTS] = { 0 };
	size_t used = 0;

	for (size_t i = 0; i < n; i++) {
		if (w[i].kind == HWT_WATCH_WRITE)
			continue;
		if (used == HWT_DR_SLOTS)
			return hwt_err_set(err, ENOSPC,
					   "more than %u read or access "
					   "watchpoints; x86 has %u debug "
					   "registers (write watchpoints are "
					   "not limited)", HWT_DR_SLOTS,
					   HWT_DR_SLOTS);
		watch[used++] = w[i];
	}
	hwt_dr_watches_set(&c->dr, watch, used);
	c->soft_watch = used && !hwt_machine()->dr_fires;
	return 0;
}

int hwt_step_dr_apply(struct step_collector *c, struct step_thread *t,
		    struct hwt_err *err)
{
	int rc;

	if (c->soft_watch)
		return 0;
	rc = hwt_dr_watches_apply(&c->dr, t->tid, &t->dr_gen);
	if (rc < 0)
		return hwt_err_set(err, EOPNOTSUPP,
				   "cannot set debug registers of thread %d "
				   "(%s): read and access watchpoints are "
				   "unavailable here; use write watchpoints",
				   (int)t->tid, strerror(-rc));
	return 0;
}

static bool overlaps(const struct hwt_store *s, int n,
		     const struct hwt_watch *w)
{
	for (int i = 0; i < n; i++)
		if (s[i].addr < w->addr + w->len && w->addr < s[i].addr + s[i].len)
			return true;
	return false;
}

void hwt_step_watch_arm(struct step_collector *c, struct step_thread *t)
{
	struct user_regs_struct r;
	struct hwt_store loads[8], stores[8];
	uint8_t code[HWT_X86_CODE_MAX];
	size_t got;
	int nl, ns = 0;
	bool sc;

	t->soft_hit = 0;
	if (!c->soft_watch || ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return;
	if (!(got = hwt_x86_code_read(t->tid, r.rip, code)))
		return;
	nl = hwt_x86_loads(code, got, &r, loads, 8);
	if (nl < 0)
		nl = 0;
	for (size_t i = 0; i < c->dr.used; i++) {
		const struct hwt_watch *w = &c->dr.watch[i];

		if (w->kind == HWT_WATCH_ACCESS && !ns)
			ns = hwt_x86_stores(code, got, &r, stores, 8,
					    &sc);
		if (overlaps(loads, nl, w) ||
		    (w->kind == HWT_WATCH_ACCESS && overlaps(stores, ns, w))) {
			t->soft_hit = (unsigned)i + 1;
			return;
		}
	}
}

const struct hwt_watch *hwt_step_watch_hit(struct step_collector *c,
					   struct step_thread *t,
					   hwt_dr_read_fn read, void *ctx)
{
	unsigned hit = t->soft_hit;

	if (!c->soft_watch)
		return hwt_dr_watches_hit(&c->dr, t->tid, read, ctx);
	t->soft_hit = 0;
	return hit && hit <= c->dr.used ? &c->dr.watch[hit - 1] : NULL;
}
