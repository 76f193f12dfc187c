/* SPDX-License-Identifier: BSD-2-Clause */
/* past_pack.h - the packed forms a data history file keeps its register
 * blocks and stores in (docs/bundle.md, "The data history"), to and from
 * the forms the register log and the memory history hold in memory.
 *
 * What the recorders keep repeats itself in ways zstd alone does not
 * see: a register delta's mask is mostly one or two bits, the pc moves
 * by a few bytes, a store's step, address and old bytes' place follow
 * from the store before. Packed so, pyjson's data history takes 0.8
 * bytes an instruction instead of 2.1. Internal to libhwt-common. */
#ifndef HWT_PAST_PACK_H
#define HWT_PAST_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "array.h"
#include "hwt-past.h"

/* The most a packed store takes: five numbers of ten bytes. */
#define HWT_PAST_PACKED_STORE_MAX 50u

/* Blocks [from, to) of l, packed, appended to out; which: 0 the general
 * registers (the pc goes as its difference from the entry before), 1 the
 * x87/SSE state. 0 or -ENOMEM. */
int hwt_past_pack_blocks(const struct hwt_reglog *l, int which, size_t from,
			 size_t to, struct hwt_bytes *out);

/* Packed blocks at [p, end) (untrusted) into blocks [from, to) of l,
 * each holding want entries but the log's newest: their deltas go to
 * *owned (malloc'd, the blocks point into it). 0, -EBADMSG when the bytes
 * are not exactly such blocks (nothing set then), or -ENOMEM. */
int hwt_past_unpack_blocks(struct hwt_reglog *l, int which, size_t from,
			   size_t to, const uint8_t *p, const uint8_t *end,
			   uint8_t **owned);

/* The n stores at e, packed, appended to out: 0, -ENOMEM, or -EINVAL
 * when they are not in the order of their steps. */
int hwt_past_pack_stores(const struct hwt_mem_entry *e, size_t n,
			 struct hwt_bytes *out);

/* Packed stores at [p, end) (untrusted) into the n entries at e, their
 * old bytes among nbytes: 0, or -EBADMSG with *wrong saying what and *at
 * which store. */
int hwt_past_unpack_stores(const uint8_t *p, const uint8_t *end,
			   struct hwt_mem_entry *e, size_t n, size_t nbytes,
			   const char **wrong, size_t *at);

#endif
