// SPDX-License-Identifier: BSD-2-Clause
/* test_radix.c - the radix sort orders by key and keeps equal keys in
 * their order, whichever bytes of the keys differ. */
#include <stdlib.h>

#include "radix.h"
#include "check.h"
#include "xorshift.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* Sorted by key, and equal keys by index: the input's indices rise. */
static bool sorted_stably(const struct hwt_radix_item *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		if (v[i - 1].key > v[i].key ||
		    (v[i - 1].key == v[i].key && v[i - 1].index > v[i].index))
			return false;
	}
	return true;
}

/* n keys of mask's bits (plus base), each index once. */
static bool sort_checked(size_t n, uint64_t base, uint64_t mask)
{
	struct hwt_radix_item *v = malloc((2 * n + 1) * sizeof(*v));
	uint64_t sum_in = 0, sum_out = 0;
	bool ok;

	if (!v)
		return false;
	for (size_t i = 0; i < n; i++) {
		v[i] = (struct hwt_radix_item){
			.key = base + (xorshift64(&rng) & mask), .index = i };
		sum_in += v[i].key * 31 + v[i].index;
	}
	hwt_radix_sort(v, v + n, n);
	for (size_t i = 0; i < n; i++)
		sum_out += v[i].key * 31 + v[i].index;
	ok = sorted_stably(v, n) && sum_in == sum_out;
	free(v);
	return ok;
}

static void test_orders(void)
{
	CHECK("radix: nothing to sort", sort_checked(0, 0, 0), "unsorted");
	CHECK("radix: one item", sort_checked(1, 5, 0xff), "unsorted");
	CHECK("radix: all keys equal keep their order",
	      sort_checked(1000, 0x7f0000001000ull, 0), "unsorted");
	CHECK("radix: few distinct keys keep their order",
	      sort_checked(5000, 0x400000, 0x7), "unsorted");
	CHECK("radix: addresses of a module (low bytes differ)",
	      sort_checked(30000, 0x7f3a12000000ull, 0xffffff), "unsorted");
	CHECK("radix: whole 64-bit keys", sort_checked(20000, 0, ~0ull),
	      "unsorted");
	CHECK("radix: only a high byte differs",
	      sort_checked(3000, 0x1234, 0xff00000000000000ull), "unsorted");
}

int main(void)
{
	RUN(test_orders);
	return check_exit();
}
