// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_past.c - a bundle's data history file (common/past_file.c) and
 * what is asked of it (common/memhist.c, reglog.c).
 *
 * Input: a data history file. What opens is asked as
 * hwt-server asks it: the registers and memory before instructions of
 * every thread around its runs and its end, and who wrote bytes around
 * its stores, backward and forward (its register groups and stores read
 * as they are asked: a damaged one answers nothing); none of it may read
 * outside the file, and memory found through the stores' address index
 * must be what walking every store gives. What does not open is refused
 * with a message.
 * Seeds (HWT_FUZZ_SEEDS): the unit test's sample history as a file,
 * whole and cut.
 */
#include "fuzz-common.h"
#include "../past_sample.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (getenv("HWT_FUZZ_SEEDS")) {
		struct past_sample s;
		struct hwt_err err = { 0 };
		uint8_t *data = NULL;
		size_t n = 0;

		past_sample_build(&s);
		if (hwt_past_format(&s.p, &data, &n, &err)) {
			fprintf(stderr, "fuzz: %s\n", err.msg);
		} else {
			fuzz_write_seed(getenv("HWT_FUZZ_SEEDS"), "seed-sample",
					data, n, NULL, 0);
			fuzz_write_seed(getenv("HWT_FUZZ_SEEDS"),
					"seed-sample-cut", data, n / 2, NULL, 0);
		}
		free(data);
		past_sample_free(&s);
		exit(0);
	}
	return 0;
}

static void ask(struct hwt_past *p)
{
	struct hwt_mem_thread threads[HWT_PAST_MAX_THREADS];
	struct hwt_mem_history h;
	struct user_regs_struct r;
	struct user_fpregs_struct fp;
	uint8_t buf[80];
	struct hwt_write_found found;
	struct hwt_err err = { 0 };

	hwt_past_memory(p, &err);
	hwt_past_mem_view(p, threads, sample_now, NULL, &h);
	for (size_t i = 0; i < p->nthreads && i < 4; i++) {
		const struct hwt_past_thread *t = &p->threads[i];
		uint64_t at[6] = { 0, t->end_index, t->end_index + 1,
				   t->regs.first, t->regs.first + t->regs.n - 1,
				   t->nruns ? t->runs[t->nruns - 1].index : 7 };

		for (size_t k = 0; k < 6; k++) {
			hwt_past_regs(p, t, false, at[k], &r);
			hwt_past_regs(p, t, true, at[k], &fp);
			hwt_mem_history_at(&h, t->tid, at[k], 0x1000, buf,
					   sizeof(buf));
			for (size_t e = 0; e < h.n && e < 8; e++) {
				hwt_mem_history_at(&h, t->tid, at[k],
						   p->e[e].addr - 3, buf,
						   sizeof(buf));
				struct hwt_write_query q = {
					.tid = t->tid, .from = at[k],
					.dir = e % 2 ? 1 : -1,
					.until = e % 3 ? at[(k + 1) % 6] :
						 HWT_MEM_NO_BOUND,
					.addr = p->e[e].addr, .len = 8,
					.from_step = e % 4 ? HWT_MEM_NO_BOUND :
						     p->e[e].seq,
				};

				hwt_mem_history_find_write(&h, &q, &found);
			}
		}
	}
}

/* Memory found through the address index is what walking every store
 * gives, at the points ask() tries. */
static void agree(struct hwt_past *p)
{
	struct hwt_mem_thread threads[HWT_PAST_MAX_THREADS];
	struct hwt_mem_history fast, walk;
	uint8_t a[80], b[80];

	hwt_past_mem_view(p, threads, sample_now, NULL, &fast);
	if (!fast.index)
		return;
	walk = fast;
	walk.index = NULL;
	for (size_t i = 0; i < p->nthreads && i < 4; i++) {
		const struct hwt_past_thread *t = &p->threads[i];
		uint64_t at[4] = { 0, t->end_index, t->regs.first,
				   t->nruns ? t->runs[t->nruns - 1].index : 7 };

		for (size_t k = 0; k < 4; k++) {
			for (size_t e = 0; e < fast.n && e < 8; e++) {
				int na = hwt_mem_history_at(&walk, t->tid,
							    at[k],
							    p->e[e].addr - 3,
							    a, sizeof(a)),
				    nb = hwt_mem_history_at(&fast, t->tid,
							    at[k],
							    p->e[e].addr - 3,
							    b, sizeof(b));

				if (na != nb ||
				    (na > 0 && memcmp(a, b, (size_t)na)))
					abort();
			}
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_err err = { 0 };
	struct hwt_past *p = NULL;

	if (hwt_past_load(data, size, &p, &err) < 0) {
		if (!err.msg[0] || p)
			abort();
		return 0;
	}
	ask(p);
	agree(p);
	hwt_past_free(p);
	return 0;
}
