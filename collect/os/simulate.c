// SPDX-License-Identifier: BSD-2-Clause
/* simulate.c - reading HWT_SIMULATE (simulate.h). */
#include <stdlib.h>
#include <string.h>

#include "simulate.h"

unsigned hwt_simulated(void)
{
	static unsigned flags = ~0u;
	const char *s;

	if (flags != ~0u)
		return flags;
	flags = 0;
	s = getenv("HWT_SIMULATE");
	if (!s)
		return flags;
	if (strstr(s, "lost-cpuid-trap"))
		flags |= HWT_SIM_LOST_CPUID_TRAP;
	if (strstr(s, "dead-dr"))
		flags |= HWT_SIM_DEAD_DR;
	if (strstr(s, "no-probe"))
		flags |= HWT_SIM_NO_PROBE;
	return flags;
}
