/* debugreg.h - the x86 debug registers of a traced, stopped thread, as
 * both the ptrace stepper (ptrace/debugreg.c) and the seize layer
 * (break.c) set them for watches. */
#ifndef HWT_DEBUGREG_H
#define HWT_DEBUGREG_H

#include <stdint.h>
#include <sys/types.h>

#define HWT_DR_SLOTS 4u

/* Load DR0-DR3 with addr and DR7 with dr7 (0: every slot off). DR7 is
 * cleared first, so no slot is ever live with a stale address. 0, or a
 * negative errno from PTRACE_POKEUSER (-ESRCH: the thread is gone). */
int hwt_dr_load(pid_t tid, const uint64_t addr[HWT_DR_SLOTS],
		unsigned long dr7);

#endif
