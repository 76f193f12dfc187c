// SPDX-License-Identifier: BSD-2-Clause
/* bench_past.c - questions to a bundle's data history (data.past, its
 * values of the past) at random points of it.
 *
 * Reports: how many instructions the values reach back over and how many
 * stores they keep; the time of reading 8 bytes at a stored address
 * before a random instruction of the thread with the most values (the
 * median and the slowest of READS questions); the time of the registers
 * there; and the time of a backward search for a write to bytes no store
 * touched from the thread's newest instruction, which crosses the whole
 * history (what a reverse watch that finds nothing costs). Memory where
 * the history ends (the core) is not read: each answer walks the same
 * history with or without it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/user.h>
#include <time.h>

#include "hwt-past.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t nothing_now(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx, (void)addr, (void)buf, (void)len;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A number in [0, n) from a fixed sequence: runs compare. */
static uint64_t next_random(uint64_t *state, uint64_t n)
{
	*state = *state * 6364136223846793005ull + 1442695040888963407ull;
	return n ? (*state >> 11) % n : 0;
}

int main(int argc, char **argv)
{
	struct hwt_err err = { 0 };
	struct hwt_mem_thread *views;
	struct hwt_mem_history h;
	const struct hwt_past_thread *t = NULL;
	struct hwt_past *p;
	struct user_regs_struct r;
	struct hwt_write_found w;
	uint64_t state = 1, nowhere = 0;
	size_t reads = argc > 2 ? strtoul(argv[2], NULL, 0) : 200;
	double *ms, t0, regs_ms, find_ms;
	char path[4096];
	uint8_t buf[8];
	int found;

	if (argc < 2 || argc > 3 || !reads) {
		fprintf(stderr, "usage: bench_past BUNDLE [READS]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/data.past", argv[1]);
	t0 = now();
	if (hwt_past_read(path, &p, &err)) {
		fprintf(stderr, "bench_past: %s\n", err.msg);
		return 1;
	}
	printf("past: data.past read in %.3f s\n", now() - t0);
	for (size_t i = 0; i < p->nthreads; i++)
		if (!t || p->threads[i].regs.n > t->regs.n)
			t = &p->threads[i];
	views = calloc(p->nthreads, sizeof(*views));
	ms = calloc(reads, sizeof(*ms));
	if (!t || !t->regs.n || !p->n || !views || !ms) {
		fprintf(stderr, "bench_past: no values to ask\n");
		return 1;
	}
	t0 = now();
	if (hwt_past_memory(p, &err)) {
		fprintf(stderr, "bench_past: %s\n", err.msg);
		return 1;
	}
	printf("past: stores read and indexed by address in %.3f s\n",
	       now() - t0);
	hwt_past_mem_view(p, views, nothing_now, NULL, &h);
	/* Above the highest stored byte: nothing wrote there. */
	for (size_t i = 0; i < p->n; i++)
		if (p->e[i].addr + p->e[i].len > nowhere)
			nowhere = p->e[i].addr + p->e[i].len;
	for (size_t i = 0; i < reads; i++) {
		uint64_t index = t->regs.first + next_random(&state, t->regs.n);
		const struct hwt_mem_entry *e = &p->e[next_random(&state, p->n)];

		t0 = now();
		hwt_mem_history_at(&h, t->tid, index, e->addr, buf, sizeof(buf));
		ms[i] = (now() - t0) * 1e3;
	}
	qsort(ms, reads, sizeof(*ms), cmp_double);
	t0 = now();
	for (size_t i = 0; i < reads; i++)
		hwt_past_regs(p, t, false, t->regs.first +
			      next_random(&state, t->regs.n), &r);
	regs_ms = (now() - t0) * 1e3 / (double)reads;
	t0 = now();
	found = hwt_mem_history_find_write(&h, &(struct hwt_write_query){
		.tid = t->tid, .from = t->end_index, .dir = -1,
		.until = HWT_MEM_NO_BOUND, .addr = nowhere, .len = 8,
		.from_step = HWT_MEM_NO_BOUND }, &w);
	find_ms = (now() - t0) * 1e3;
	printf("past: thread %d: values over %" PRIu64 " instructions, "
	       "%zu stores of all threads\n", t->tid, t->regs.n, p->n);
	printf("past: memory at a random point: median %.3f ms, slowest "
	       "%.3f ms of %zu (goal <= 10 ms)\n", ms[reads / 2],
	       ms[reads - 1], reads);
	printf("past: registers at a random point: %.3f ms\n", regs_ms);
	printf("past: who wrote bytes no store touched, across the whole "
	       "history: %.3f ms (%s; goal <= 1 s)\n", find_ms,
	       found == 0 ? "none, as it should" : "found?");
	free(ms);
	free(views);
	hwt_past_free(p);
	return found == 0 ? 0 : 1;
}
