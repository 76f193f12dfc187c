// SPDX-License-Identifier: BSD-2-Clause
/* reglog.c - a thread's registers at every recorded instruction (its
 * general registers, its x87/SSE state: one log each), so that a
 * debugger moving back through the history sees them as they were there
 * (GDB needs the stack and frame pointers to tell frames apart when it
 * steps backward).
 *
 * The log is kept in blocks of HWT_REGLOG_BLOCK entries: a full register
 * set, then one delta per entry (a mask of the 8-byte words that changed,
 * one bit each, and those words): about 20 bytes an instruction for the
 * general registers, 8 for an x87/SSE state that did not change. Entry i
 * is the state before instruction first + i executes. Past its byte
 * bound the oldest blocks are dropped (to seven eighths of it); a
 * discontinuity (an entry that is
 * not the next one) starts the log again, so an entry is never
 * misplaced.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-past.h"

static size_t mask_bytes(const struct hwt_reglog *l)
{
	return (l->nwords + 7) / 8;
}

static size_t max_delta(const struct hwt_reglog *l)
{
	return mask_bytes(l) + 8 * l->nwords;
}

void hwt_reglog_init(struct hwt_reglog *l, unsigned nwords, size_t cap)
{
	memset(l, 0, sizeof(*l));
	l->nwords = nwords > HWT_REGLOG_MAX_WORDS ? HWT_REGLOG_MAX_WORDS :
		    nwords;
	l->cap = cap;
}

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

/* Past the bound, the oldest blocks go, down to seven eighths of it at
 * once (the open block stays): the table of blocks moves once for many
 * of them. Moved for each block, a log of a gigabyte (50,000 blocks)
 * moved 27 MB every 1024 instructions once full. */
static void keep_to_cap(struct hwt_reglog *l)
{
	size_t k = 0;

	if (l->bytes <= l->cap)
		return;
	while (k + 1 < l->nblocks && l->bytes > l->cap - l->cap / 8) {
		struct hwt_reglog_block *b = &l->blocks[k++];

		l->bytes -= sizeof(*b) + b->alloc;
		l->first += b->count;
		l->n -= b->count;
		free(b->data);
	}
	l->nblocks -= k;
	memmove(l->blocks, l->blocks + k, l->nblocks * sizeof(*l->blocks));
}

/* The words of to that differ from from, after their mask. */
static size_t encode(const struct hwt_reglog *l, const uint64_t *from,
		     const uint64_t *to, uint8_t *out)
{
	size_t mb = mask_bytes(l), len = mb;

	memset(out, 0, mb);
	for (size_t w = 0; w < l->nwords; w++) {
		if (from[w] == to[w])
			continue;
		out[w / 8] |= (uint8_t)(1u << (w % 8));
		memcpy(out + len, &to[w], 8);
		len += 8;
	}
	return len;
}

static size_t decode(const struct hwt_reglog *l, const uint8_t *in,
		     uint64_t *words)
{
	size_t len = mask_bytes(l);

	for (size_t w = 0; w < l->nwords; w++)
		if (in[w / 8] & (1u << (w % 8))) {
			memcpy(&words[w], in + len, 8);
			len += 8;
		}
	return len;
}

static uint64_t *last_of(struct hwt_reglog *l)
{
	return l->words[l->cur];
}

static uint64_t *prev_of(struct hwt_reglog *l)
{
	return l->words[l->cur ^ 1];
}

/* Room in b for the largest delta; false when memory ran out. */
static bool delta_room(struct hwt_reglog *l, struct hwt_reglog_block *b)
{
	if (b->len + max_delta(l) > b->alloc) {
		/* Room for a block of entries that change two words each
		 * (the pc and one more, the common case) at once. */
		size_t alloc = b->alloc ? 2 * b->alloc :
			       HWT_REGLOG_BLOCK * (mask_bytes(l) + 16);
		uint8_t *p = realloc(b->data, alloc);

		if (!p)
			return false;
		l->bytes += alloc - b->alloc;
		b->data = p;
		b->alloc = alloc;
	}
	return true;
}

/* Add the newest entry's delta from the one before to the open block. */
static bool put_delta(struct hwt_reglog *l, struct hwt_reglog_block *b)
{
	if (!delta_room(l, b))
		return false;
	l->last_off = b->len;
	b->len += encode(l, prev_of(l), last_of(l), b->data + b->len);
	return true;
}

/* The same when the newest entry repeats the one before. */
static bool put_empty(struct hwt_reglog *l, struct hwt_reglog_block *b)
{
	if (!delta_room(l, b))
		return false;
	l->last_off = b->len;
	memset(b->data + b->len, 0, mask_bytes(l));
	b->len += mask_bytes(l);
	return true;
}

void hwt_reglog_append(struct hwt_reglog *l, uint64_t index,
		       const void *regs)
{
	size_t size = 8 * (size_t)l->nwords;
	struct hwt_reglog_block *b;

	if (!l->nwords)
		return;
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
		*b = (struct hwt_reglog_block){ .count = 1 };
		memcpy(b->key, regs, size);
		l->bytes += sizeof(*b);
		l->last_off = SIZE_MAX;
	} else {
		b = &l->blocks[l->nblocks - 1];
		/* The newest becomes the one before by turning the two
		 * round; an entry that repeats it (an x87/SSE state most
		 * instructions leave alone) is not copied again. */
		if (memcmp(last_of(l), regs, size) != 0) {
			l->cur ^= 1;
			memcpy(last_of(l), regs, size);
			l->prev_same = false;
		} else if (!l->prev_same) {
			memcpy(prev_of(l), last_of(l), size);
			l->prev_same = true;
		}
		/* Nothing changed: an empty mask, no words to compare. */
		if (!(l->prev_same ? put_empty(l, b) : put_delta(l, b))) {
			drop_all(l);
			return;
		}
		b->count++;
		l->n++;
		keep_to_cap(l);
		return;
	}
	memcpy(last_of(l), regs, size);
	l->prev_same = false;
	l->n++;
	keep_to_cap(l);
}

void hwt_reglog_append_same(struct hwt_reglog *l, uint64_t index,
			    const void *regs)
{
	struct hwt_reglog_block *b;

	/* A new block takes a whole set; a log that starts again, too. */
	if (!l->nwords || !l->n || index != l->first + l->n ||
	    l->n % HWT_REGLOG_BLOCK == 0) {
		hwt_reglog_append(l, index, regs);
		return;
	}
	b = &l->blocks[l->nblocks - 1];
	if (!l->prev_same) {
		memcpy(prev_of(l), last_of(l), 8 * (size_t)l->nwords);
		l->prev_same = true;
	}
	if (!put_empty(l, b)) {
		drop_all(l);
		return;
	}
	b->count++;
	l->n++;
	keep_to_cap(l);
}

void hwt_reglog_replace_last(struct hwt_reglog *l, const void *regs)
{
	struct hwt_reglog_block *b;

	if (!l->n)
		return;
	b = &l->blocks[l->nblocks - 1];
	memcpy(last_of(l), regs, 8 * (size_t)l->nwords);
	l->prev_same = false;
	if (l->last_off == SIZE_MAX) {
		memcpy(b->key, regs, 8 * (size_t)l->nwords);
		return;
	}
	b->len = l->last_off;
	if (!put_delta(l, b))
		drop_all(l);
}

void hwt_reglog_release(struct hwt_reglog *l, size_t from, size_t to)
{
	for (size_t i = from; i < to && i < l->nblocks; i++) {
		struct hwt_reglog_block *b = &l->blocks[i];

		l->bytes -= b->alloc;
		free(b->data);
		b->data = NULL;
		b->len = b->alloc = 0;
		b->count = 0;
	}
}

int hwt_reglog_get(const struct hwt_reglog *l, uint64_t index, void *out)
{
	const struct hwt_reglog_block *b;
	uint64_t k, words[HWT_REGLOG_MAX_WORDS];
	size_t off = 0;

	if (index < l->first || index - l->first >= l->n)
		return -ENOENT;
	k = index - l->first;
	b = &l->blocks[k / HWT_REGLOG_BLOCK];
	/* A file's block not read (count 0), or read damaged. */
	if (k % HWT_REGLOG_BLOCK >= b->count)
		return -ENOENT;
	memcpy(words, b->key, sizeof(words));
	for (k %= HWT_REGLOG_BLOCK; k > 0; k--)
		off += decode(l, b->data + off, words);
	memcpy(out, words, 8 * (size_t)l->nwords);
	return 0;
}

/* The bits set in a mask of mb bytes (at most 8: 64 words). */
static size_t words_set(const uint8_t *mask, size_t mb)
{
	uint64_t x = 0;

	memcpy(&x, mask, mb);
	x -= (x >> 1) & 0x5555555555555555ull;
	x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
	return (size_t)((x * 0x0101010101010101ull) >> 56);
}

bool hwt_reglog_block_valid(const struct hwt_reglog *l,
			    const struct hwt_reglog_block *b)
{
	size_t off = 0, mb = mask_bytes(l);

	if (b->count == 0 || b->count > HWT_REGLOG_BLOCK)
		return false;
	for (uint32_t k = 1; k < b->count; k++) {
		size_t set = 0;

		if (b->len - off < mb)
			return false;
		/* Only the last mask byte has bits past the log's words. */
		if (l->nwords % 8 && b->data[off + mb - 1] >> (l->nwords % 8))
			return false;
		set = words_set(b->data + off, mb);
		off += mb;
		if (b->len - off < 8 * set)
			return false;
		off += 8 * set;
	}
	return off == b->len;
}
