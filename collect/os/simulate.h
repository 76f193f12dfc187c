/* SPDX-License-Identifier: BSD-2-Clause */
/* simulate.h - the machine faults HWT_SIMULATE makes happen on purpose,
 * so that the repairs of machine.h's probes are tested on every machine:
 * a comma-separated list of
 *   lost-cpuid-trap  a single step over cpuid stops one instruction late
 *   dead-dr          debug registers are accepted but never fire
 *   no-probe         the probes report a sound machine (the repairs of
 *                    faults nobody predicted are tested so)
 */
#ifndef HWT_SIMULATE_H
#define HWT_SIMULATE_H

#define HWT_SIM_LOST_CPUID_TRAP 1u
#define HWT_SIM_DEAD_DR         2u
#define HWT_SIM_NO_PROBE        4u

/* The faults HWT_SIMULATE asks for (read once). */
unsigned hwt_simulated(void);

#endif
