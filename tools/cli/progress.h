/* SPDX-License-Identifier: BSD-2-Clause */
/* progress.h - how far a long step is, as a line on stderr rewritten in
 * place, only when stderr is a terminal (progress.c). hwtrace's commands
 * and hwt-server link it (libhwt-cli). */
#ifndef HWT_PROGRESS_H
#define HWT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct cli_progress {
	const char *what;
	uint64_t total;              /* 0: unknown, a count is shown */
	bool on, shown;
	double last;
};

/* Start showing what, out of total, when allowed and stderr is a
 * terminal. */
void cli_progress_begin(struct cli_progress *p, const char *what,
			uint64_t total, bool allowed);
void cli_progress_step(struct cli_progress *p, uint64_t done);
/* The line with no count, for a step that reports none. */
void cli_progress_show(struct cli_progress *p);
/* Erase the line. */
void cli_progress_end(struct cli_progress *p);
/* hwt_pt_encode_opts.progress for a struct cli_progress as its ctx. */
void cli_progress_report(void *ctx, uint64_t done, uint64_t total);

#endif
