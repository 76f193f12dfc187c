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
 * HWT_SIMULATE makes these faults happen on purpose, so the repairs are
 * tested on every machine: a comma-separated list of
 *   lost-cpuid-trap  a single step over cpuid stops one instruction late
 *   dead-dr          debug registers are accepted but never fire
 *   no-probe         the probes report a sound machine (the repairs of
 *                    faults nobody predicted are tested so)
 */
#ifndef HWT_MACHINE_H
#define HWT_MACHINE_H

#include <stdbool.h>
#include <sys/types.h>

#define HWT_SIM_LOST_CPUID_TRAP 1u
#define HWT_SIM_DEAD_DR         2u
#define HWT_SIM_NO_PROBE        4u

/* The faults HWT_SIMULATE asks for (read once). */
unsigned hwt_simulated(void);

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
