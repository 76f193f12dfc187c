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
#include <stddef.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "os/debugreg.h"
#include "tracer.h"

#define DR_OFFSET(i) offsetof(struct user, u_debugreg[i])

static unsigned long len_bits(uint32_t len)
{
	switch (len) {
	case 1: return 0;
	case 2: return 1;
	case 8: return 2;
	default: return 3;   /* 4 */
	}
}

int hwt_step_dr_configure(struct step_collector *c, const struct hwt_watch *w,
			size_t n, struct hwt_err *err)
{
	uint64_t addr[HWT_STEP_DR_SLOTS] = {0};
	struct hwt_watch watch[HWT_STEP_DR_SLOTS];
	unsigned long dr7 = 0;
	size_t used = 0;

	for (size_t i = 0; i < n; i++) {
		if (w[i].kind == HWT_WATCH_WRITE)
			continue;
		if (used == HWT_STEP_DR_SLOTS)
			return hwt_err_set(err, ENOSPC,
					   "more than %u read or access "
					   "watchpoints; x86 has %u debug "
					   "registers (write watchpoints are "
					   "not limited)", HWT_STEP_DR_SLOTS,
					   HWT_STEP_DR_SLOTS);
		addr[used] = w[i].addr;
		watch[used] = w[i];
		/* Enable locally, break on read or write (11), length. */
		dr7 |= 1ul << (2 * used);
		dr7 |= (3ul | len_bits(w[i].len) << 2) << (16 + 4 * used);
		used++;
	}
	if (dr7 != c->dr7 || memcmp(addr, c->dr_addr, sizeof(addr))) {
		memcpy(c->dr_addr, addr, sizeof(addr));
		c->dr7 = dr7;
		c->dr_gen++;
	}
	memcpy(c->dr_watch, watch, used * sizeof(*watch));
	c->dr_used = used;
	return 0;
}

int hwt_step_dr_apply(struct step_collector *c, struct step_thread *t,
		    struct hwt_err *err)
{
	int rc;

	if (t->dr_gen == c->dr_gen)
		return 0;
	rc = hwt_dr_load(t->tid, c->dr_addr, c->dr7);
	if (rc == -ESRCH)
		return 0;   /* the thread died: its death is reported */
	if (rc < 0)
		return hwt_err_set(err, EOPNOTSUPP,
				   "cannot set debug registers of thread %d "
				   "(%s): read and access watchpoints are "
				   "unavailable here; use write watchpoints",
				   (int)t->tid, strerror(-rc));
	t->dr_gen = c->dr_gen;
	t->dr_set = c->dr7 != 0;
	return 0;
}

int hwt_step_dr_hit(struct step_collector *c, struct step_thread *t)
{
	long dr6;

	errno = 0;
	dr6 = ptrace(PTRACE_PEEKUSER, t->tid, DR_OFFSET(6), 0);
	if (errno || !(dr6 & ((1l << c->dr_used) - 1)))
		return -1;
	ptrace(PTRACE_POKEUSER, t->tid, DR_OFFSET(6), 0);
	for (size_t i = 0; i < c->dr_used; i++)
		if (dr6 & (1l << i))
			return (int)i;
	return -1;
}

void hwt_step_dr_clear(struct step_thread *t)
{
	if (t->dr_set)
		ptrace(PTRACE_POKEUSER, t->tid, DR_OFFSET(7), 0);
	t->dr_set = false;
}
