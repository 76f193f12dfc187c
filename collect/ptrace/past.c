// SPDX-License-Identifier: BSD-2-Clause
/* past.c - what the stepper kept of the past (each thread's registers
 * before every recorded instruction, the old bytes of every store) into a
 * bundle's data history file (and the x87/SSE state of every recorded
 * instruction), so that a recording opened after the
 * program ended shows the values of any kept moment, the core being
 * the memory where the history ends (common/past_file.c). */
#include <errno.h>
#include <stdlib.h>

#include "tracer.h"

int hwt_step_write_past(struct hwt_collector *base, const char *path,
			struct hwt_err *err)
{
	struct step_collector *c = step_of(base);
	struct hwt_past p = { 0 };
	int rc;

	if (!c->log_regs || !c->nthreads)
		return 0;
	if (!(p.threads = calloc(c->nthreads, sizeof(*p.threads))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < c->nthreads; i++) {
		const struct step_thread *t = c->threads[i];

		/* Views: nothing is copied or freed. */
		p.threads[p.nthreads++] = (struct hwt_past_thread){
			.tid = t->tid,
			.end_index = t->ring.insn_total ?
				t->ring.insn_total - 1 : 0,
			.regs = t->reglog, .fpregs = t->fplog,
			.runs = t->runs,
			.nruns = t->nruns, .last_seq = t->mem_seq,
		};
	}
	p.e = c->memlog.e;
	p.n = c->memlog.n;
	p.bytes = c->memlog.bytes;
	p.nbytes = c->memlog.nbytes;
	p.horizon = c->memlog.horizon;
	rc = hwt_past_write(path, &p, err);
	free(p.threads);
	return rc < 0 ? rc : 1;
}
