/* qsort.c - libc qsort (called through the PLT) calling back into our
 * comparator from inside libc. */
#include <stdio.h>
#include <stdlib.h>

static int values[12] = { 42, 7, 19, 3, 88, 23, 5, 61, 14, 9, 70, 31 };

__attribute__((noinline)) int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int main(void)
{
	long weighted = 0;

	qsort(values, sizeof values / sizeof values[0], sizeof values[0], cmp_int);
	for (unsigned i = 0; i < sizeof values / sizeof values[0]; i++)
		weighted += (long)(i + 1) * values[i];
	printf("qsort: min=%d max=%d weighted=%ld\n", values[0], values[11], weighted);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
