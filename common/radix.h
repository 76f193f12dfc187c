/* SPDX-License-Identifier: BSD-2-Clause */
/* radix.h - a stable sort of (key, index) pairs by key. Internal to the
 * libraries (no public header includes it).
 *
 * Symbol tables and span maps sort tens of thousands of entries when a
 * bundle is opened; qsort's merge sort copies each element through an
 * indirect compare and a scratch buffer of fresh pages, and was a sixth
 * of the time to the first answer. Keys of one module differ only in
 * their low bits, so a few byte passes do it.
 */
#ifndef HWT_RADIX_H
#define HWT_RADIX_H

#include <stddef.h>
#include <stdint.h>

struct hwt_radix_item {
	uint64_t key;
	uint64_t index;           /* the caller's: which element this is */
};

/* Sort v[0..n) by key, equal keys in their order; tmp holds n items.
 * The sorted items end in v. */
void hwt_radix_sort(struct hwt_radix_item *v, struct hwt_radix_item *tmp,
		    size_t n);

#endif
