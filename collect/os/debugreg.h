/* SPDX-License-Identifier: BSD-2-Clause */
/* debugreg.h - watches in the x86 debug registers of traced, stopped
 * threads, as both the ptrace stepper (ptrace/debugreg.c) and the seize
 * layer (seize/break.c) set them.
 *
 * A process has one setup, struct hwt_dr_watches; its generation counts
 * setups and each thread is brought to the latest lazily (it may be
 * running, or born later), remembering the generation it has. */
#ifndef HWT_DEBUGREG_H
#define HWT_DEBUGREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hwt-collect.h"

#define HWT_DR_SLOTS 4u

struct hwt_dr_watches {
	struct hwt_watch watch[HWT_DR_SLOTS];
	uint64_t value[HWT_DR_SLOTS];   /* READ: the bytes at the last look */
	uint64_t addr[HWT_DR_SLOTS];
	unsigned long dr7;
	unsigned gen;                   /* bumped when addr or dr7 change */
	size_t used;
};

/* Load DR0-DR3 with addr and DR7 with dr7 (0: every slot off). DR7 is
 * cleared first, so no slot is ever live with a stale address. 0, or a
 * negative errno from PTRACE_POKEUSER (-ESRCH: the thread is gone). */
int hwt_dr_load(pid_t tid, const uint64_t addr[HWT_DR_SLOTS],
		unsigned long dr7);

/* Put w[0..n) (n <= HWT_DR_SLOTS) in the slots: a WRITE watch traps on
 * writes, READ and ACCESS on any access (x86 has no read-only watch).
 * The values are the caller's to read. */
void hwt_dr_watches_set(struct hwt_dr_watches *d, const struct hwt_watch *w,
			size_t n);

/* Bring thread TID from setup *thread_gen to d's. 0 (also when the thread
 * is gone: its death is reported) or a negative errno. */
int hwt_dr_watches_apply(const struct hwt_dr_watches *d, pid_t tid,
			 unsigned *thread_gen);

/* Reads the bytes a watch covers, as they are now; false when it cannot. */
typedef bool (*hwt_dr_read_fn)(void *ctx, const struct hwt_watch *w,
			       uint64_t *value);

/* The watch TID's last stop reports, or NULL: of the slots DR6 says
 * trapped (DR6 is then cleared), the first whose watch is not READ or
 * whose bytes kept their value, since x86 watches reads only together
 * with writes. READ watches' bytes are read with READ and remembered. */
const struct hwt_watch *hwt_dr_watches_hit(struct hwt_dr_watches *d,
					   pid_t tid, hwt_dr_read_fn read,
					   void *ctx);

/* Every slot of TID off, if it has a setup; *thread_gen becomes 0. */
void hwt_dr_watches_clear(pid_t tid, unsigned *thread_gen);

#endif
