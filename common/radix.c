/* SPDX-License-Identifier: BSD-2-Clause */
/* radix.c - least-significant-byte-first radix sort, skipping the bytes
 * in which no two keys differ. */
#include "radix.h"

#include <string.h>

void hwt_radix_sort(struct hwt_radix_item *v, struct hwt_radix_item *tmp,
		    size_t n)
{
	uint64_t differ = 0;
	struct hwt_radix_item *from = v, *to = tmp, *swap;

	for (size_t i = 1; i < n; i++)
		differ |= v[i].key ^ v[0].key;
	for (unsigned shift = 0; shift < 64 && (differ >> shift); shift += 8) {
		size_t count[257] = { 0 };

		if (!((differ >> shift) & 0xff))
			continue;
		for (size_t i = 0; i < n; i++)
			count[((from[i].key >> shift) & 0xff) + 1]++;
		for (int b = 0; b < 256; b++)
			count[b + 1] += count[b];
		for (size_t i = 0; i < n; i++)
			to[count[(from[i].key >> shift) & 0xff]++] = from[i];
		swap = from;
		from = to;
		to = swap;
	}
	if (from != v)
		memcpy(v, from, n * sizeof(*v));
}
