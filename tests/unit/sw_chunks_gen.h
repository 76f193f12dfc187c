/* SPDX-License-Identifier: BSD-2-Clause */
/* sw_chunks_gen.h - hwt-sw traces made up for tests: plain chunks of
 * mostly short steps, some jumps and signal entries, as a recorder writes
 * them, at addresses with no code (each instruction its own block). */
#ifndef HWT_TEST_SW_CHUNKS_GEN_H
#define HWT_TEST_SW_CHUNKS_GEN_H

#include <stdlib.h>
#include <string.h>

#include "hwt-common.h"

struct gen_trace {
	uint8_t *v;
	size_t n, cap;
	uint64_t seq;            /* instructions so far, lost ones included */
	uint64_t rng;            /* xorshift state; 0: a fixed seed */
};

static inline uint64_t gen_rand(struct gen_trace *t)
{
	if (!t->rng)
		t->rng = 0x9e3779b97f4a7c15ull;
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	return t->rng;
}

static inline void gen_put(struct gen_trace *t, const void *p, size_t n)
{
	if (t->n + n > t->cap) {
		t->cap = (t->n + n) * 2;
		t->v = realloc(t->v, t->cap);
	}
	memcpy(t->v + t->n, p, n);
	t->n += n;
}

/* A chunk of insns instructions after lost ones the ring dropped. */
static inline void gen_chunk(struct gen_trace *t, uint32_t insns,
			     uint64_t lost)
{
	uint8_t rec[HWT_SW_MAX_RECORD + 1], hdr[HWT_SW_CHUNK_HDR_SIZE] = { 0 };
	struct hwt_sw_chunk_hdr h = {
		.first_pc = 0x10000 + (gen_rand(t) & 0xfffff0),
		.first_seq = t->seq + lost, .insn_count = insns,
	};
	size_t at = t->n;
	uint64_t pc = h.first_pc;

	gen_put(t, hdr, sizeof(hdr));
	for (uint32_t i = 1; i < insns; i++) {
		uint64_t x = gen_rand(t), next;

		next = x % 8 ? pc + 1 + x % 15 : 0x10000 + (x >> 40);
		gen_put(t, rec, hwt_sw_encode_step(pc, next, x % 211 == 0,
						   rec));
		pc = next;
	}
	h.payload_size = (uint32_t)(t->n - at - sizeof(hdr));
	h.last_pc = pc;
	hwt_sw_chunk_hdr_pack(&h, t->v + at);
	t->seq = h.first_seq + insns;
}

#endif
