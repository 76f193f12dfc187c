// SPDX-License-Identifier: BSD-2-Clause
/* reglog.c - each thread's general registers at every recorded
 * instruction, so that a debugger moving back through the history sees
 * the stack pointer, frame pointer and the rest as they were there
 * (GDB needs them to tell frames apart when it steps backward).
 *
 * The log is kept in blocks of HWT_REGLOG_BLOCK entries: a full
 * user_regs_struct, then one delta per entry (a mask of the 8-byte words
 * that changed, and those words), about 20 bytes an instruction. Entry i
 * is the state before instruction first + i executes. Past its byte
 * bound the oldest blocks are dropped; a discontinuity (an entry that is
 * not the next one) starts the log again, so an entry is never
 * misplaced.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-past.h"

#define REGLOG_MAX_DELTA (4 + 8 * HWT_REGLOG_WORDS)

static void drop_all(struct hwt_reglog *l)
{
	for (size_t i = 0; i < l->nblocks; i++)
		free(l->blocks[i].data);
	l->nblocks = 0;
	l->n = 0;
	l->bytes = 0;
}

void hwt_reglog_free(struct hwt_reglog *l)
{
	drop_all(l);
	free(l->blocks);
	l->blocks = NULL;
	l->alloc = 0;
}

static void drop_oldest(struct hwt_reglog *l)
{
	struct hwt_reglog_block *b = &l->blocks[0];

	l->bytes -= sizeof(*b) + b->alloc;
	l->first += b->count;
	l->n -= b->count;
	free(b->data);
	memmove(l->blocks, l->blocks + 1, --l->nblocks * sizeof(*b));
}

/* The words of to that differ from from, after their mask. */
static size_t encode(const struct user_regs_struct *from,
		     const struct user_regs_struct *to, uint8_t *out)
{
	const uint64_t *a = (const uint64_t *)from, *b = (const uint64_t *)to;
	uint32_t mask = 0;
	size_t len = 4;

	for (size_t w = 0; w < HWT_REGLOG_WORDS; w++) {
		if (a[w] == b[w])
			continue;
		mask |= 1u << w;
		memcpy(out + len, &b[w], 8);
		len += 8;
	}
	memcpy(out, &mask, 4);
	return len;
}

static size_t decode(const uint8_t *in, struct user_regs_struct *regs)
{
	uint64_t *r = (uint64_t *)regs;
	uint32_t mask;
	size_t len = 4;

	memcpy(&mask, in, 4);
	for (size_t w = 0; w < HWT_REGLOG_WORDS; w++)
		if (mask & (1u << w)) {
			memcpy(&r[w], in + len, 8);
			len += 8;
		}
	return len;
}

/* Add the last entry's delta from l->prev to the open block. */
static bool put_delta(struct hwt_reglog *l, struct hwt_reglog_block *b)
{
	if (b->len + REGLOG_MAX_DELTA > b->alloc) {
		size_t alloc = b->alloc ? 2 * b->alloc : 4096;
		uint8_t *p = realloc(b->data, alloc);

		if (!p)
			return false;
		l->bytes += alloc - b->alloc;
		b->data = p;
		b->alloc = alloc;
	}
	l->last_off = b->len;
	b->len += encode(&l->prev, &l->last, b->data + b->len);
	return true;
}

void hwt_reglog_append(struct hwt_reglog *l, uint64_t index,
			    const struct user_regs_struct *regs)
{
	struct hwt_reglog_block *b;

	if (l->n && index != l->first + l->n)
		drop_all(l);
	if (!l->n)
		l->first = index;
	if (l->n % HWT_REGLOG_BLOCK == 0) {
		if (l->nblocks == l->alloc) {
			size_t alloc = l->alloc ? 2 * l->alloc : 16;
			struct hwt_reglog_block *v = realloc(l->blocks,
							 alloc * sizeof(*v));

			if (!v) {
				drop_all(l);
				return;
			}
			l->blocks = v;
			l->alloc = alloc;
		}
		b = &l->blocks[l->nblocks++];
		*b = (struct hwt_reglog_block){ .key = *regs, .count = 1 };
		l->bytes += sizeof(*b);
		l->last_off = SIZE_MAX;
	} else {
		b = &l->blocks[l->nblocks - 1];
		l->prev = l->last;
		l->last = *regs;
		if (!put_delta(l, b)) {
			drop_all(l);
			return;
		}
		b->count++;
	}
	l->last = *regs;
	l->n++;
	while (l->bytes > l->cap && l->nblocks > 1)
		drop_oldest(l);
}

void hwt_reglog_replace_last(struct hwt_reglog *l,
				  const struct user_regs_struct *regs)
{
	struct hwt_reglog_block *b;

	if (!l->n)
		return;
	b = &l->blocks[l->nblocks - 1];
	l->last = *regs;
	if (l->last_off == SIZE_MAX) {
		b->key = *regs;
		return;
	}
	b->len = l->last_off;
	if (!put_delta(l, b))
		drop_all(l);
}

int hwt_reglog_get(const struct hwt_reglog *l, uint64_t index,
			struct user_regs_struct *out)
{
	const struct hwt_reglog_block *b;
	uint64_t k;
	size_t off = 0;

	if (index < l->first || index - l->first >= l->n)
		return -ENOENT;
	k = index - l->first;
	b = &l->blocks[k / HWT_REGLOG_BLOCK];
	*out = b->key;
	for (k %= HWT_REGLOG_BLOCK; k > 0; k--)
		off += decode(b->data + off, out);
	return 0;
}

bool hwt_reglog_block_valid(const struct hwt_reglog_block *b)
{
	size_t off = 0;

	if (b->count == 0 || b->count > HWT_REGLOG_BLOCK)
		return false;
	for (uint32_t k = 1; k < b->count; k++) {
		uint32_t mask;

		if (b->len - off < 4)
			return false;
		memcpy(&mask, b->data + off, 4);
		if (mask >> HWT_REGLOG_WORDS)
			return false;
		off += 4;
		if (b->len - off < 8u * (size_t)__builtin_popcount(mask))
			return false;
		off += 8u * (size_t)__builtin_popcount(mask);
	}
	return off == b->len;
}
