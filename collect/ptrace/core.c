// SPDX-License-Identifier: BSD-2-Clause
/* core.c - the ptrace backend's write_core: its held threads described
 * for the shared core writer (collect/os/coredump.c). */
#include <errno.h>
#include <stdlib.h>

#include "tracer.h"

int hwt_step_write_core(struct hwt_collector *base, const char *path,
		      struct hwt_err *err)
{
	struct step_collector *c = step_of(base);
	pid_t *tids = calloc(c->nthreads ? c->nthreads : 1, sizeof(*tids));
	struct hwt_core_desc d = {
		.pid = c->base.pid, .fault_tid = c->fault_thread->tid,
		.tids = tids, .siginfo = &c->fault_siginfo,
		.signal = c->base.end.signal,
	};
	int rc;

	if (!tids)
		return hwt_err_set(err, ENOMEM, "out of memory for a core");
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i]->state != PT_GONE)
			tids[d.ntids++] = c->threads[i]->tid;
	rc = hwt_core_write(&d, path, err);
	free(tids);
	return rc;
}
