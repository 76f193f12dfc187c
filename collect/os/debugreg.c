// SPDX-License-Identifier: BSD-2-Clause
/* debugreg.c - watches in a traced thread's debug registers (debugreg.h). */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "debugreg.h"
#include "simulate.h"

#define DR_OFFSET(i) offsetof(struct user, u_debugreg[i])

int hwt_dr_load(pid_t tid, const uint64_t addr[HWT_DR_SLOTS],
		unsigned long dr7)
{
	if (ptrace(PTRACE_POKEUSER, tid, DR_OFFSET(7), 0) < 0)
		return -errno;
	for (unsigned i = 0; i < HWT_DR_SLOTS && dr7; i++)
		if (ptrace(PTRACE_POKEUSER, tid, DR_OFFSET(i),
			   (void *)(uintptr_t)addr[i]) < 0)
			return -errno;
	/* Simulated dead registers: accepted, never enabled. */
	if (hwt_simulated() & HWT_SIM_DEAD_DR)
		return 0;
	if (dr7 && ptrace(PTRACE_POKEUSER, tid, DR_OFFSET(7),
			  (void *)dr7) < 0)
		return -errno;
	return 0;
}

/* DR7's length field: 1, 2, 8 or 4 bytes. */
static unsigned long len_bits(uint32_t len)
{
	switch (len) {
	case 1: return 0;
	case 2: return 1;
	case 8: return 2;
	default: return 3;   /* 4 */
	}
}

void hwt_dr_watches_set(struct hwt_dr_watches *d, const struct hwt_watch *w,
			size_t n)
{
	uint64_t addr[HWT_DR_SLOTS] = { 0 };
	unsigned long dr7 = 0;

	for (size_t i = 0; i < n && i < HWT_DR_SLOTS; i++) {
		/* 01: break on writes; 11: on reads or writes. */
		unsigned long rw = w[i].kind == HWT_WATCH_WRITE ? 1ul : 3ul;

		addr[i] = w[i].addr;
		d->watch[i] = w[i];
		/* Enable locally; break on rw, length. */
		dr7 |= 1ul << (2 * i);
		dr7 |= (rw | len_bits(w[i].len) << 2) << (16 + 4 * i);
	}
	if (dr7 != d->dr7 || memcmp(addr, d->addr, sizeof(addr))) {
		memcpy(d->addr, addr, sizeof(addr));
		d->dr7 = dr7;
		d->gen++;
	}
	d->used = n < HWT_DR_SLOTS ? n : HWT_DR_SLOTS;
}

int hwt_dr_watches_apply(const struct hwt_dr_watches *d, pid_t tid,
			 unsigned *thread_gen)
{
	int rc;

	if (*thread_gen == d->gen)
		return 0;
	rc = hwt_dr_load(tid, d->addr, d->dr7);
	if (rc == -ESRCH)
		return 0;
	if (rc == 0)
		*thread_gen = d->gen;
	return rc;
}

const struct hwt_watch *hwt_dr_watches_hit(struct hwt_dr_watches *d,
					   pid_t tid, hwt_dr_read_fn read,
					   void *ctx)
{
	long dr6;

	if (!d->used)
		return NULL;
	errno = 0;
	dr6 = ptrace(PTRACE_PEEKUSER, tid, DR_OFFSET(6), 0);
	if (errno || !(dr6 & ((1l << d->used) - 1)))
		return NULL;
	ptrace(PTRACE_POKEUSER, tid, DR_OFFSET(6), 0);
	for (size_t i = 0; i < d->used; i++) {
		uint64_t now;
		bool same;

		if (!(dr6 & (1l << i)))
			continue;
		if (d->watch[i].kind != HWT_WATCH_READ)
			return &d->watch[i];
		if (!read(ctx, &d->watch[i], &now))
			continue;
		same = now == d->value[i];
		d->value[i] = now;
		if (same)
			return &d->watch[i];
	}
	return NULL;
}

void hwt_dr_watches_clear(pid_t tid, unsigned *thread_gen)
{
	/* A setup may enable slots; generation 0 is "never set". */
	if (*thread_gen)
		ptrace(PTRACE_POKEUSER, tid, DR_OFFSET(7), 0);
	*thread_gen = 0;
}
