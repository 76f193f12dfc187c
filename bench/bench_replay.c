// SPDX-License-Identifier: BSD-2-Clause
/* bench_replay.c - replay speed and memory on a recorded bundle.
 *
 * Reports: time to open the history and show its newest 100 instructions
 * (lazy path), instructions reconstructed per second over the whole
 * history, bytes of memory the history holds per instruction, and a
 * reverse-continue over the whole history to a breakpoint it never
 * reaches against that walk (the continue scans a run at a time). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hwt-replay.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const struct hwt_err *err)
{
	fprintf(stderr, "bench_replay: %s\n", err->msg);
	return 1;
}

int main(int argc, char **argv)
{
	struct hwt_bundle *b;
	struct hwt_image *img;
	struct hwt_history *h;
	struct hwt_err err = { 0 };
	struct hwt_item it;
	struct hwt_cursor *c;
	uint64_t count, insns = 0, sum = 0, nowhere = 0x10;
	double t0, t_last, t_all, t_cont;
	size_t mem_lazy, mem_full;

	if (argc != 2) {
		fprintf(stderr, "usage: bench_replay BUNDLE\n");
		return 2;
	}
	if (hwt_bundle_read(argv[1], &b, &err) || hwt_image_new(&img, &err) ||
	    hwt_image_add_bundle(img, b, &err))
		return fail(&err);

	t0 = now();
	if (hwt_history_open(b, 0, img, &h, &err))
		return fail(&err);
	count = hwt_history_count(h);
	for (uint64_t i = count > 100 ? count - 99 : 1; i <= count; i++)
		if (hwt_history_get(h, i, &it, &err))
			return fail(&err);
	t_last = now() - t0;
	mem_lazy = hwt_history_memory(h);

	t0 = now();
	for (uint64_t i = 1; i <= count; i++) {
		if (hwt_history_get(h, i, &it, &err))
			return fail(&err);
		if (it.kind == HWT_ITEM_INSN) {
			insns++;
			sum += it.addr;
		}
	}
	t_all = now() - t0;
	mem_full = hwt_history_memory(h);

	if (hwt_cursor_new(h, img, &c, &err) ||
	    hwt_cursor_goto(c, count, &err) < 0)
		return fail(&err);
	t0 = now();
	if (hwt_cursor_continue(c, HWT_BACKWARD, &nowhere, 1, &err) < 0)
		return fail(&err);
	t_cont = now() - t0;
	hwt_cursor_free(c);

	printf("history: %" PRIu64 " items, %" PRIu64 " instructions "
	       "(checksum %" PRIx64 ")\n", count, insns, sum);
	printf("newest 100 after open: %.3f ms, history holds %zu bytes\n",
	       t_last * 1e3, mem_lazy);
	printf("full walk: %.2f s, %.2f M instructions/s\n", t_all,
	       (double)insns / t_all / 1e6);
	printf("memory: %zu bytes = %.3f bytes/instruction (goal <= 2)\n",
	       mem_full, (double)mem_full / (double)insns);
	printf("lazy speedup (full walk / newest 100): %.0fx\n", t_all / t_last);
	printf("reverse-continue over it all, a breakpoint never reached: "
	       "%.2f s, %.2f M instructions/s, %.1fx the full walk's speed\n",
	       t_cont, (double)insns / t_cont / 1e6, t_all / t_cont);
	hwt_history_free(h);
	hwt_image_free(img);
	hwt_bundle_free(b);
	return (double)mem_full / (double)insns <= 2.0 ? 0 : 3;
}
