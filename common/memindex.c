// SPDX-License-Identifier: BSD-2-Clause
/* memindex.c - a memory history's stores found by address.
 *
 * Memory before step s is the present's with the old bytes of every store
 * of step s and later put back, newest first: each byte is the oldest
 * such store's. Walking every newer store costs as many stores as the
 * history keeps after s (tens of millions over a long one). The index
 * lists, for every 8-byte granule and every set of its bytes a store
 * covered there, those stores in their order; a byte's answer is then the
 * oldest of the first stores at or after s of the lists that hold it, a
 * binary search in each (a granule has few such sets: a field's width).
 * Stores wider than a page (a system call's buffer, memory mapped or
 * dropped) are listed once, apart, and walked.
 *
 * Built once over a history's stores (a radix sort of (granule, store)
 * pairs); stores added later are not in it, and memhist.c walks them as
 * before.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "hwt-past.h"

#define GRANULE_SHIFT 3
#define WIDE (4096u)                 /* wider stores are listed apart */
#define NONE UINT32_MAX
/* A pair's sort key is its granule and the bytes there (granule << 8 |
 * bytes); granules from here on would not fit, and no program's address
 * lies there: such stores are listed with the wide ones. */
#define GRANULE_KEY_END (UINT64_C(1) << 56)
/* Bits a sorting pass takes: its counts and the places it writes to
 * stay in the cache. */
#define DIGIT_BITS 11
#define DIGITS (1u << DIGIT_BITS)

/* (granule << 8 | bytes there, store) pairs being sorted. */
struct pairs {
	uint64_t *key;
	uint32_t *val;
	size_t n;
};

struct hwt_mem_index {
	size_t n;                    /* stores e[0 .. n) are indexed */
	uint64_t *granule;           /* list i's granule and bytes there */
	uint8_t *mask;               /*   (ascending by both) */
	size_t nlists;
	size_t *start;               /* list i's stores: at[start[i] ..
				      * start[i + 1]) */
	uint32_t *at;                /* store numbers, ascending per granule */
	uint32_t *wide;              /* the wide stores, ascending */
	size_t nwide;
};

size_t hwt_mem_index_count(const struct hwt_mem_index *ix)
{
	return ix->n;
}

void hwt_mem_index_free(struct hwt_mem_index *ix)
{
	if (!ix)
		return;
	free(ix->granule);
	free(ix->mask);
	free(ix->start);
	free(ix->at);
	free(ix->wide);
	free(ix);
}

static uint64_t first_granule(const struct hwt_mem_entry *e)
{
	return e->addr >> GRANULE_SHIFT;
}

/* The entry's last byte, kept inside the address space. */
static uint64_t last_granule(const struct hwt_mem_entry *e)
{
	uint64_t end = e->addr + e->len - 1;

	return (end < e->addr ? UINT64_MAX : end) >> GRANULE_SHIFT;
}

static bool is_wide(const struct hwt_mem_entry *e)
{
	return e->len > WIDE || last_granule(e) >= GRANULE_KEY_END;
}

/* The bytes of store e (not wide) in granule g, one bit each. */
static uint8_t mask_in(const struct hwt_mem_entry *e, uint64_t g)
{
	uint64_t ga = g << GRANULE_SHIFT;
	unsigned lo = e->addr > ga ? (unsigned)(e->addr - ga) : 0;
	unsigned hi = g == last_granule(e) ?
		(unsigned)(e->addr + e->len - 1 - ga) : 7;

	return (uint8_t)((0xffu >> (7 - hi)) & (0xffu << lo));
}

/* Sort the pairs by key, keeping the order of stores: LSD radix, a pass
 * for each digit whose bits are not the same in every key (varying). */
static int sort_pairs(struct pairs *p, uint64_t varying)
{
	uint64_t *key = malloc((p->n ? p->n : 1) * sizeof(*key));
	uint32_t *val = malloc((p->n ? p->n : 1) * sizeof(*val));
	size_t *count = malloc(DIGITS * sizeof(*count));
	int rc = -ENOMEM;

	if (key && val && count) {
		hwt_advise_huge(key, p->n * sizeof(*key));
		hwt_advise_huge(val, p->n * sizeof(*val));
		for (unsigned shift = 0; shift < 64 && (varying >> shift);
		     shift += DIGIT_BITS) {
			uint64_t *kt;
			uint32_t *vt;
			size_t sum = 0;

			if (!((varying >> shift) & (DIGITS - 1)))
				continue;
			memset(count, 0, DIGITS * sizeof(*count));
			for (size_t i = 0; i < p->n; i++)
				count[(p->key[i] >> shift) & (DIGITS - 1)]++;
			for (size_t d = 0; d < DIGITS; d++) {
				size_t c = count[d];

				count[d] = sum;
				sum += c;
			}
			for (size_t i = 0; i < p->n; i++) {
				size_t to = count[(p->key[i] >> shift) &
						  (DIGITS - 1)]++;

				key[to] = p->key[i];
				val[to] = p->val[i];
			}
			kt = p->key;
			p->key = key;
			key = kt;
			vt = p->val;
			p->val = val;
			val = vt;
		}
		rc = 0;
	}
	free(key);
	free(val);
	free(count);
	return rc;
}

/* The pairs, sorted, as lists per granule and bytes. */
static int compact(struct hwt_mem_index *ix, struct pairs *p)
{
	size_t d = 0;

#define NEW_LIST(i) ((i) == 0 || p->key[i] != p->key[(i) - 1])
	for (size_t i = 0; i < p->n; i++)
		d += NEW_LIST(i);
	ix->granule = malloc((d ? d : 1) * sizeof(*ix->granule));
	ix->mask = malloc(d ? d : 1);
	ix->start = malloc((d + 1) * sizeof(*ix->start));
	if (!ix->granule || !ix->mask || !ix->start)
		return -ENOMEM;
	d = 0;
	for (size_t i = 0; i < p->n; i++) {
		if (NEW_LIST(i)) {
			ix->granule[d] = p->key[i] >> 8;
			ix->mask[d] = (uint8_t)p->key[i];
			ix->start[d++] = i;
		}
	}
#undef NEW_LIST
	ix->start[d] = p->n;
	ix->nlists = d;
	ix->at = p->val;
	p->val = NULL;
	return 0;
}

int hwt_mem_index_build(const struct hwt_mem_entry *e, size_t n,
			struct hwt_mem_index **out)
{
	struct hwt_mem_index *ix;
	struct pairs p = { 0 };
	size_t npairs = 0, w = 0;
	uint64_t varying = 0;
	int rc = -ENOMEM;

	if (n >= NONE)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		if (is_wide(&e[i]))
			w++;
		else
			npairs += last_granule(&e[i]) - first_granule(&e[i]) + 1;
	}
	ix = calloc(1, sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	ix->n = n;
	ix->nwide = w;
	p.key = malloc((npairs ? npairs : 1) * sizeof(*p.key));
	p.val = malloc((npairs ? npairs : 1) * sizeof(*p.val));
	ix->wide = malloc((w ? w : 1) * sizeof(*ix->wide));
	if (!p.key || !p.val || !ix->wide)
		goto out;
	hwt_advise_huge(p.key, npairs * sizeof(*p.key));
	hwt_advise_huge(p.val, npairs * sizeof(*p.val));
	w = 0;
	for (size_t i = 0; i < n; i++) {
		if (is_wide(&e[i])) {
			ix->wide[w++] = (uint32_t)i;
			continue;
		}
		for (uint64_t g = first_granule(&e[i]);
		     g <= last_granule(&e[i]); g++) {
			p.key[p.n] = g << 8 | mask_in(&e[i], g);
			p.val[p.n] = (uint32_t)i;
			varying |= p.key[p.n] ^ p.key[0];
			p.n++;
		}
	}
	if ((rc = sort_pairs(&p, varying)) == 0)
		rc = compact(ix, &p);
out:
	free(p.key);
	free(p.val);
	if (rc) {
		hwt_mem_index_free(ix);
		return rc;
	}
	*out = ix;
	return 0;
}

/* The first of list[0 .. n) not below first. */
static size_t lower_bound(const uint32_t *list, size_t n, uint32_t first)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (list[mid] < first)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first of granule g's lists (the next ones up to another granule
 * are its too), or nlists. */
static size_t first_list(const struct hwt_mem_index *ix, uint64_t g)
{
	size_t lo = 0, hi = ix->nlists;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->granule[mid] < g)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Give store k the bytes of [addr, addr+len) it covers where win[] has
 * none or a newer one; how many bytes had none before. */
static size_t claim(const struct hwt_mem_entry *e, uint32_t k, uint64_t addr,
		    size_t len, uint32_t *win)
{
	uint64_t lo = e[k].addr > addr ? e[k].addr : addr;
	uint64_t end = e[k].addr + e[k].len, hi = addr + len;
	size_t fresh = 0;

	if (end < e[k].addr)
		end = UINT64_MAX;
	if (end < hi)
		hi = end;
	for (uint64_t a = lo; a < hi; a++) {
		uint32_t *wa = &win[a - addr];

		fresh += *wa == NONE;
		if (*wa == NONE || *wa > k)
			*wa = k;
	}
	return fresh;
}

/* The oldest store from number first on that covers each byte of a piece
 * of at most 64 granules: win[i] (NONE: none indexed). */
static void winners(const struct hwt_mem_index *ix,
		    const struct hwt_mem_entry *e, uint32_t first,
		    uint64_t addr, size_t len, uint32_t *win)
{
	uint64_t g0 = addr >> GRANULE_SHIFT, g1 = (addr + len - 1) >>
						   GRANULE_SHIFT;
	size_t left = len, i;

	for (size_t k = 0; k < len; k++)
		win[k] = NONE;
	for (uint64_t g = g0; g <= g1; g++) {
		uint64_t ga = g << GRANULE_SHIFT;

		/* Each list's first store from first on covers all of the
		 * list's bytes: the oldest of them wins each byte. */
		for (size_t l = first_list(ix, g);
		     l < ix->nlists && ix->granule[l] == g; l++) {
			const uint32_t *list = ix->at + ix->start[l];
			size_t n = ix->start[l + 1] - ix->start[l];

			i = lower_bound(list, n, first);
			for (unsigned b = 0; i < n && b < 8; b++) {
				uint64_t a = ga + b;
				uint32_t *wa;

				if (!(ix->mask[l] & (1u << b)) || a < addr ||
				    a - addr >= len)
					continue;
				wa = &win[a - addr];
				if (*wa == NONE || *wa > list[i])
					*wa = list[i];
			}
		}
	}
	for (size_t k = 0; k < len; k++)
		left -= win[k] != NONE;
	/* A wide store older than a byte's winner wins it instead; past
	 * the newest winner none can. */
	for (i = lower_bound(ix->wide, ix->nwide, first); i < ix->nwide; i++) {
		uint32_t k = ix->wide[i], newest = 0;

		for (size_t b = 0; !left && b < len; b++)
			if (win[b] > newest)
				newest = win[b];
		if (!left && k > newest)
			break;
		left -= claim(e, k, addr, len, win);
	}
}

void hwt_mem_index_before(const struct hwt_mem_index *ix,
			  const struct hwt_mem_entry *e, const uint8_t *bytes,
			  uint32_t first, uint64_t addr, uint8_t *out,
			  bool *known, size_t len)
{
	uint32_t win[64u << GRANULE_SHIFT];

	while (len) {
		/* A piece ends at a granule's end: at most 64 granules. */
		uint64_t room = sizeof(win) / sizeof(win[0]) -
				(addr & ((1u << GRANULE_SHIFT) - 1));
		size_t piece = len < room ? len : (size_t)room;

		winners(ix, e, first, addr, piece, win);
		for (size_t k = 0; k < piece; k++) {
			const struct hwt_mem_entry *w;

			if (win[k] == NONE)
				continue;
			w = &e[win[k]];
			known[k] = w->off != HWT_MEM_UNKNOWN;
			if (known[k])
				out[k] = bytes[w->off + (addr + k - w->addr)];
		}
		addr += piece;
		out += piece;
		known += piece;
		len -= piece;
	}
}
