/* SPDX-License-Identifier: BSD-2-Clause */
/* machine.h - what this machine's debug facilities really do.
 *
 * Some hypervisors accept writes to the debug registers and never raise
 * their traps, and some lose the single-step trap of an instruction they
 * emulate (cpuid): the thread then stops one instruction later. Both
 * happen in user mode, silently, to GDB as much as to us. The probes here
 * try each facility once on a throw-away child and say what works, so
 * the recorders can repair or work around what does not (run.c,
 * stepcheck.c, debugreg.c) and say so.
 *
 * HWT_SIMULATE makes these faults happen on purpose (simulate.h).
 */
#ifndef HWT_MACHINE_H
#define HWT_MACHINE_H

#include <stdbool.h>
#include <sys/types.h>

#include "simulate.h"

struct hwt_machine {
	bool dr_fires;              /* write and read watches trap */
	bool cpuid_trap_lost;       /* single steps over cpuid stop late */
	char dr_reason[200];        /* why !dr_fires, for logs and lists */
};

/* The probes' findings, made on first use (a few milliseconds: two
 * children). Never NULL; where a probe cannot run at all (no ptrace), the
 * machine is taken as sound, since nothing could be traced anyway. */
const struct hwt_machine *hwt_machine(void);

/* The findings as sentences for logs and `hwtrace backends` (static
 * strings, up to max); their number. */
size_t hwt_machine_notes(const char **notes, size_t max);

/* PTRACE_SINGLESTEP, with sig injected; through here so that the
 * simulated lost trap applies to every stepper. 0 or -errno. */
int hwt_os_singlestep(pid_t tid, int sig);

#endif
