// SPDX-License-Identifier: BSD-2-Clause
/* past_pack.c - the data history file's packed register blocks and
 * stores (past_pack.h), from and to the register log's blocks and the
 * memory history's entries.
 *
 * A packed block: its entry count, its first entry's words, then per
 * further entry the mask of the words that changed (a number) and those
 * words, the general registers' pc as the difference from the entry
 * before. A packed store: its step's difference from the store before,
 * its address's, its length with two flags (old bytes unknown, another
 * thread), that thread, and where its old bytes lie against where the
 * store before left off. Numbers are LEB128, differences zigzag'd, words
 * little-endian. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/user.h>

#include "past_pack.h"

/* The general registers' word that moves by little every entry. */
#define PC_WORD (offsetof(struct user_regs_struct, rip) / 8)

static unsigned pc_word(int which)
{
	return which == 0 ? (unsigned)PC_WORD : UINT32_MAX;
}

static size_t mask_bytes(const struct hwt_reglog *l)
{
	return (l->nwords + 7) / 8;
}

static uint64_t zigzag(uint64_t d)
{
	return d << 1 ^ (uint64_t)((int64_t)d >> 63);
}

static uint64_t unzigzag(uint64_t z)
{
	return z >> 1 ^ (uint64_t)-(int64_t)(z & 1);
}

static int put_num(struct hwt_bytes *out, uint64_t v)
{
	uint8_t b[10];

	return hwt_bytes_put(out, b, hwt_put_uleb128(b, v));
}

/* The most block b takes packed: its count, its key, per further entry
 * a mask and every word, the pc's difference two bytes over. */
static size_t packed_max(const struct hwt_reglog *l,
			 const struct hwt_reglog_block *b)
{
	return 10 + 8 * (size_t)l->nwords +
	       (size_t)(b->count ? b->count - 1 : 0) *
	       (10 + 2 + 8 * (size_t)l->nwords);
}

int hwt_past_pack_blocks(const struct hwt_reglog *l, int which, size_t from,
			 size_t to, struct hwt_bytes *out)
{
	size_t mb = mask_bytes(l);
	unsigned pcw = pc_word(which);

	for (size_t i = from; i < to; i++) {
		const struct hwt_reglog_block *b = &l->blocks[i];
		uint64_t cur[HWT_REGLOG_MAX_WORDS];
		const uint8_t *d = b->data;
		uint8_t *o;

		/* Room for the most, then written in place: a word at a
		 * time through hwt_bytes_put took longer than zstd. */
		if (hwt_bytes_put(out, NULL, packed_max(l, b)))
			return -ENOMEM;
		out->n -= packed_max(l, b);
		o = out->p + out->n;
		o += hwt_put_uleb128(o, b->count);
		for (size_t k = 0; k < l->nwords; k++, o += 8) {
			cur[k] = b->key[k];
			hwt_put_le64(o, cur[k]);
		}
		for (uint32_t e = 1; e < b->count; e++) {
			uint64_t mask = 0, m;

			memcpy(&mask, d, mb);
			d += mb;
			o += hwt_put_uleb128(o, mask);
			for (m = mask; m; m &= m - 1) {
				unsigned w = (unsigned)__builtin_ctzll(m);
				uint64_t v;

				memcpy(&v, d, 8);
				d += 8;
				if (w == pcw) {
					o += hwt_put_uleb128(o,
						zigzag(v - cur[w]));
				} else {
					hwt_put_le64(o, v);
					o += 8;
				}
				cur[w] = v;
			}
		}
		out->n = (size_t)(o - out->p);
	}
	return 0;
}

/* One block's entries after its key, unpacked onto out (the in-memory
 * form: mask bytes, then the words). */
static int unpack_deltas(const struct hwt_reglog *l, unsigned pcw,
			 uint64_t count, uint64_t *cur, const uint8_t **pp,
			 const uint8_t *end, struct hwt_bytes *out)
{
	size_t mb = mask_bytes(l);
	const uint8_t *p = *pp;

	for (uint64_t e = 1; e < count; e++) {
		uint64_t mask;
		uint8_t m[8];

		if (hwt_get_uleb128(&p, end, &mask) != 1 ||
		    (l->nwords < 64 && mask >> l->nwords))
			return -EBADMSG;
		hwt_put_le64(m, mask);
		if (hwt_bytes_put(out, m, mb))
			return -ENOMEM;
		for (unsigned w = 0; w < l->nwords; w++) {
			uint64_t v;

			if (!(mask >> w & 1))
				continue;
			if (w == pcw) {
				if (hwt_get_uleb128(&p, end, &v) != 1)
					return -EBADMSG;
				v = cur[w] + unzigzag(v);
			} else {
				if (end - p < 8)
					return -EBADMSG;
				v = hwt_get_le64(p);
				p += 8;
			}
			cur[w] = v;
			if (hwt_bytes_put(out, &v, 8))
				return -ENOMEM;
		}
	}
	*pp = p;
	return 0;
}

int hwt_past_unpack_blocks(struct hwt_reglog *l, int which, size_t from,
			   size_t to, const uint8_t *p, const uint8_t *end,
			   uint8_t **owned)
{
	struct hwt_bytes out = { 0 };
	uint64_t counts[HWT_PAST_GROUP_BLOCKS];
	uint64_t keys[HWT_PAST_GROUP_BLOCKS][HWT_REGLOG_MAX_WORDS];
	size_t starts[HWT_PAST_GROUP_BLOCKS + 1];
	int rc = 0;

	*owned = NULL;
	if (to < from || to - from > HWT_PAST_GROUP_BLOCKS || to > l->nblocks)
		return -EBADMSG;
	for (size_t i = from; rc == 0 && i < to; i++) {
		uint64_t want = i + 1 < l->nblocks ? HWT_REGLOG_BLOCK :
				l->n - (uint64_t)(l->nblocks - 1) *
				HWT_REGLOG_BLOCK;
		uint64_t *cur = keys[i - from];
		uint64_t *count = &counts[i - from];

		if (hwt_get_uleb128(&p, end, count) != 1 || *count != want ||
		    (uint64_t)(end - p) / 8 < l->nwords) {
			rc = -EBADMSG;
			break;
		}
		for (size_t k = 0; k < l->nwords; k++, p += 8)
			cur[k] = hwt_get_le64(p);
		starts[i - from] = out.n;
		{
			uint64_t words[HWT_REGLOG_MAX_WORDS];

			memcpy(words, cur, 8 * (size_t)l->nwords);
			rc = unpack_deltas(l, pc_word(which), *count, words,
					   &p, end, &out);
		}
	}
	starts[to - from] = out.n;
	if (rc == 0 && p != end)
		rc = -EBADMSG;
	for (size_t i = from; rc == 0 && i < to; i++) {
		struct hwt_reglog_block b = {
			.count = (uint32_t)counts[i - from],
			/* Blocks of one entry each have no deltas at all. */
			.data = out.p ? out.p + starts[i - from] : NULL,
			.len = starts[i - from + 1] - starts[i - from],
		};

		memcpy(b.key, keys[i - from], 8 * (size_t)l->nwords);
		b.alloc = b.len;
		if (!hwt_reglog_block_valid(l, &b))
			rc = -EBADMSG;
		else
			l->blocks[i] = b;
	}
	if (rc) {
		for (size_t i = from; i < to; i++)
			memset(&l->blocks[i], 0, sizeof(l->blocks[i]));
		hwt_bytes_free(&out);
		return rc;
	}
	*owned = out.p;
	return 0;
}

int hwt_past_pack_stores(const struct hwt_mem_entry *e, size_t n,
			 struct hwt_bytes *out)
{
	uint64_t seq = 0, addr = 0, next_off = 0;
	uint32_t tid = 0;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < n; i++) {
		bool unknown = e[i].off == HWT_MEM_UNKNOWN;
		bool other = (uint32_t)e[i].tid != tid;

		if (e[i].seq < seq || e[i].len > UINT64_MAX >> 2)
			return -EINVAL;
		rc = put_num(out, e[i].seq - seq);
		if (rc == 0)
			rc = put_num(out, zigzag(e[i].addr - addr));
		if (rc == 0)
			rc = put_num(out, e[i].len << 2 | (uint64_t)unknown << 1 |
					  other);
		if (rc == 0 && other)
			rc = put_num(out, (uint32_t)e[i].tid);
		if (rc == 0 && !unknown) {
			rc = put_num(out, zigzag(e[i].off - next_off));
			next_off = e[i].off + e[i].len;
		}
		seq = e[i].seq;
		addr = e[i].addr;
		tid = (uint32_t)e[i].tid;
	}
	return rc;
}

int hwt_past_unpack_stores(const uint8_t *p, const uint8_t *end,
			   struct hwt_mem_entry *e, size_t n, size_t nbytes,
			   const char **wrong, size_t *at)
{
	uint64_t seq = 0, addr = 0, tid = 0, next_off = 0;

	*wrong = NULL;
	for (size_t i = 0; i < n; i++) {
		uint64_t d_seq, d_addr, len, d_off = 0;
		bool unknown, other;

		*at = i;
		if (hwt_get_uleb128(&p, end, &d_seq) != 1 ||
		    hwt_get_uleb128(&p, end, &d_addr) != 1 ||
		    hwt_get_uleb128(&p, end, &len) != 1) {
			*wrong = "a store cut short";
			return -EBADMSG;
		}
		unknown = len >> 1 & 1;
		other = len & 1;
		len >>= 2;
		if ((other && hwt_get_uleb128(&p, end, &tid) != 1) ||
		    (!unknown && hwt_get_uleb128(&p, end, &d_off) != 1)) {
			*wrong = "a store cut short";
			return -EBADMSG;
		}
		e[i] = (struct hwt_mem_entry){
			.seq = seq + d_seq, .addr = addr + unzigzag(d_addr),
			.len = len, .tid = (int32_t)tid,
			.off = unknown ? HWT_MEM_UNKNOWN :
			       next_off + unzigzag(d_off),
		};
		if (tid > INT32_MAX)
			*wrong = "a store's thread out of range";
		else if (e[i].seq < seq)
			*wrong = "stores out of order";
		else if (e[i].len == 0 || e[i].addr + e[i].len < e[i].addr)
			*wrong = "a store of no bytes or past the address space";
		else if (!unknown &&
			 (e[i].len > HWT_PAST_MAX_STORE || e[i].off > nbytes ||
			  e[i].len > nbytes - e[i].off))
			*wrong = "a store's old bytes outside the file";
		if (*wrong)
			return -EBADMSG;
		seq = e[i].seq;
		addr = e[i].addr;
		if (!unknown)
			next_off = e[i].off + e[i].len;
	}
	*at = n;
	if (p != end) {
		*wrong = "bytes after the stores";
		return -EBADMSG;
	}
	return 0;
}
