/* debugreg.c - read and access watchpoints in x86 debug registers.
 *
 * Writes are watched in software, exactly (live.c compares the bytes
 * after every step); reads leave no trace in memory, so READ and ACCESS
 * watches go to DR0-DR3 of every thread, set with PTRACE_POKEUSER. The
 * hardware trap after the accessing instruction merges with the
 * single-step trap; DR6 tells them apart, read after each step only while
 * such watches exist. x86 watches reads only together with writes, so a
 * READ watch reports an access only when the watched bytes kept their
 * value. Accesses by the kernel (system calls) are not seen.
 */
#include <errno.h>
#include <string.h>

#include "os/debugreg.h"
#include "tracer.h"

int hwt_step_dr_configure(struct step_collector *c, const struct hwt_watch *w,
			size_t n, struct hwt_err *err)
{
	struct hwt_watch watch[HWT_DR_SLOTS];
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
	return 0;
}

int hwt_step_dr_apply(struct step_collector *c, struct step_thread *t,
		    struct hwt_err *err)
{
	int rc = hwt_dr_watches_apply(&c->dr, t->tid, &t->dr_gen);

	if (rc < 0)
		return hwt_err_set(err, EOPNOTSUPP,
				   "cannot set debug registers of thread %d "
				   "(%s): read and access watchpoints are "
				   "unavailable here; use write watchpoints",
				   (int)t->tid, strerror(-rc));
	return 0;
}
