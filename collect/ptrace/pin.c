// SPDX-License-Identifier: BSD-2-Clause
/* pin.c - the tracer and its tracee on one cpu, and back. */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "tracer.h"

/* A ptrace stop costs three to four times more when tracer and tracee run
 * on different cpus (each stop is a cross-cpu wakeup, expensive in VMs),
 * so both go to one cpu. The tracee inherits the mask across fork. */
int hwt_step_pin(struct step_collector *c, const struct hwt_collect_opts *opts,
	       struct hwt_err *err)
{
	cpu_set_t one;
	int cpu = opts->pin == HWT_PIN_CPU ?
		(opts->cpu < CPU_SETSIZE ? (int)opts->cpu : CPU_SETSIZE) : -1;

	if (sched_getaffinity(0, sizeof(c->saved_affinity),
			      &c->saved_affinity) < 0)
		return hwt_err_set(err, errno, "cannot read cpu affinity: %s",
				   strerror(errno));
	if (cpu < 0)
		cpu = sched_getcpu();
	if (cpu < 0 || cpu >= CPU_SETSIZE ||
	    !CPU_ISSET(cpu, &c->saved_affinity))
		return hwt_err_set(err, EINVAL,
				   "cannot pin to cpu %u: this process may not "
				   "run there; pick another cpu or disable "
				   "pinning", opts->pin == HWT_PIN_CPU ?
				   opts->cpu : (unsigned)cpu);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0)
		return hwt_err_set(err, errno, "cannot pin to cpu %d: %s", cpu,
				   strerror(errno));
	c->pinned = true;
	return 0;
}

void hwt_step_unpin(struct step_collector *c)
{
	if (c->pinned)
		sched_setaffinity(0, sizeof(c->saved_affinity),
				  &c->saved_affinity);
	c->pinned = false;
}
