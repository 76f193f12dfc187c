/* SPDX-License-Identifier: BSD-2-Clause */
/* past_sample.h - a small data history (common/hwt-past.h) with what
 * the ptrace recorder keeps: two threads taking turns, registers over
 * blocks enough for two groups of a file, stores of both threads, a range made unknown and a
 * horizon; for the unit test and as the fuzz target's seed.
 *
 * Thread 100 stores at 0x1000 with its steps 0..9 (its instructions
 * 0..9), thread 200 at 0x1004 with its steps 10..19 (its instructions
 * 0..9); step s stores byte s, 0xee being there before the first; step
 * 20 (thread 200's instruction 10, where it ends) makes 0x2000..0x2fff
 * unknown before it. Memory where it ends (sample_now): 9 at 0x1000, 19
 * at 0x1004, every other byte at a is (a & 0xff) ^ 0x5a. Thread 100's
 * registers go on past its stores, over HWT_PAST_GROUP_BLOCKS + 1
 * blocks (two groups of a file), its x87/SSE state
 * with them (xmm0's first word the instruction's index); thread 200 has
 * no x87/SSE log. */
#ifndef HWT_PAST_SAMPLE_H
#define HWT_PAST_SAMPLE_H

#include <string.h>

#include "hwt-past.h"

/* Thread 100's: HWT_PAST_GROUP_BLOCKS + 1 blocks, the newest not full. */
#define SAMPLE_REGS ((HWT_PAST_GROUP_BLOCKS + 1) * HWT_REGLOG_BLOCK - 200)
/* An instruction of thread 100's second group. */
#define SAMPLE_LATE (SAMPLE_REGS - 100)

static inline uint8_t sample_byte_now(uint64_t a)
{
	return a == 0x1000 ? 9 : a == 0x1004 ? 19 : (uint8_t)((a & 0xff) ^ 0x5a);
}

static inline size_t sample_now(void *ctx, uint64_t addr, void *buf,
				size_t len)
{
	(void)ctx;
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = sample_byte_now(addr + i);
	return len;
}

struct past_sample {
	struct hwt_past p;
	struct hwt_past_thread t[2];
	struct hwt_mem_run runs100[1], runs200[1];
	struct hwt_mem_entry e[21];
	uint8_t bytes[20];
};

/* The history as views (nothing to free but the register logs). */
static inline void past_sample_build(struct past_sample *s)
{
	struct user_regs_struct r;
	struct user_fpregs_struct fp;

	memset(s, 0, sizeof(*s));
	s->runs100[0] = (struct hwt_mem_run){ .index = 0, .seq = 0 };
	s->runs200[0] = (struct hwt_mem_run){ .index = 0, .seq = 10 };
	s->t[0] = (struct hwt_past_thread){ .tid = 100,
					    .end_index = SAMPLE_REGS - 1,
					    .runs = s->runs100, .nruns = 1,
					    .last_seq = 9 };
	s->t[1] = (struct hwt_past_thread){ .tid = 200, .end_index = 10,
					    .runs = s->runs200, .nruns = 1,
					    .last_seq = 20 };
	hwt_reglog_init(&s->t[0].regs, HWT_REGLOG_GPR_WORDS, 1u << 30);
	hwt_reglog_init(&s->t[1].regs, HWT_REGLOG_GPR_WORDS, 1u << 30);
	hwt_reglog_init(&s->t[0].fpregs, HWT_REGLOG_FP_WORDS, 1u << 30);
	memset(&r, 0, sizeof(r));
	memset(&fp, 0, sizeof(fp));
	fp.mxcsr = 0x1f80;
	for (uint64_t i = 0; i < SAMPLE_REGS; i++) {
		r.rip = 0x400000 + 4 * i;
		r.rsp = 0x7fff0000 - 8 * (i % 7);
		r.rax = i * i;
		hwt_reglog_append(&s->t[0].regs, i, &r);
		fp.xmm_space[0] = (uint32_t)(i / 3);
		hwt_reglog_append(&s->t[0].fpregs, i, &fp);
	}
	r.rip = 0x500000;
	hwt_reglog_append(&s->t[1].regs, 0, &r);
	for (uint64_t k = 0; k < 20; k++) {
		uint64_t a = k < 10 ? 0x1000 : 0x1004;

		/* The value before step k: what the thread's step before
		 * stored, or 0xee. */
		s->bytes[k] = k % 10 ? (uint8_t)(k - 1) : 0xee;
		s->e[k] = (struct hwt_mem_entry){
			.seq = k, .addr = a, .len = 1, .off = k,
			.tid = k < 10 ? 100 : 200,
		};
	}
	s->e[20] = (struct hwt_mem_entry){ .seq = 20, .addr = 0x2000,
					   .len = 0x1000,
					   .off = HWT_MEM_UNKNOWN, .tid = 0 };
	s->p = (struct hwt_past){ .threads = s->t, .nthreads = 2, .e = s->e,
				  .n = 21, .bytes = s->bytes, .nbytes = 20,
				  .horizon = 0 };
}

static inline void past_sample_free(struct past_sample *s)
{
	hwt_reglog_free(&s->t[0].regs);
	hwt_reglog_free(&s->t[1].regs);
	hwt_reglog_free(&s->t[0].fpregs);
}

/* Whether every part of a data history read from a file reads: each
 * group of each register log, the stores and their old bytes. */
static inline bool past_read_whole(struct hwt_past *p)
{
	struct hwt_err err = { 0 };
	uint64_t words[HWT_REGLOG_MAX_WORDS];

	if (hwt_past_memory(p, &err) < 0)
		return false;
	for (size_t i = 0; i < p->nthreads; i++) {
		const struct hwt_past_thread *t = &p->threads[i];

		for (int fp = 0; fp < 2; fp++) {
			const struct hwt_reglog *l = fp ? &t->fpregs : &t->regs;

			for (uint64_t k = 0; k < l->n; k += HWT_REGLOG_BLOCK)
				if (hwt_past_regs(p, t, fp, l->first + k,
						  words) != 0)
					return false;
		}
	}
	return true;
}

#endif
