// SPDX-License-Identifier: BSD-2-Clause
/* progress.c - how far a long step is, on a terminal: a line on stderr
 * rewritten in place (at most ten times a second), only when stderr is a
 * terminal, erased when the work is done. Output that goes to files or
 * pipes never sees it. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_progress_begin(struct cli_progress *p, const char *what,
			uint64_t total, bool allowed)
{
	/* The first line shows at the first step past 4096 (or the first
	 * of a short count), then at most ten times a second. */
	*p = (struct cli_progress){ .what = what, .total = total,
				    .on = allowed && isatty(STDERR_FILENO) };
}

void cli_progress_step(struct cli_progress *p, uint64_t done)
{
	double t;

	/* Over many steps the clock is read every 4096 only. */
	if (!p->on || !done || (p->total > 4096 && (done & 4095)) ||
	    (t = now()) - p->last < 0.1)
		return;
	p->last = t;
	p->shown = true;
	if (p->total)
		fprintf(stderr, "\r%s: %3u%%", p->what,
			(unsigned)(done * 100 / p->total));
	else
		fprintf(stderr, "\r%s: %llu", p->what, (unsigned long long)done);
	fflush(stderr);
}

void cli_progress_show(struct cli_progress *p)
{
	if (!p->on)
		return;
	fprintf(stderr, "\r%s...", p->what);
	fflush(stderr);
	p->shown = true;
}

void cli_progress_end(struct cli_progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
	p->shown = false;
}

void cli_progress_report(void *ctx, uint64_t done, uint64_t total)
{
	struct cli_progress *p = ctx;

	p->total = total;
	cli_progress_step(p, done);
}
