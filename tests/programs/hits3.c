/* hits3.c - a function called exactly three times before a fault, for
 * reverse-continue tests: going back from the crash with a breakpoint on
 * tick() must stop at the third call, then the second, then the first,
 * then at the start of the history. Each call passes a different value so
 * the hits can be told apart. -O0 keeps every call. */
#include <stdio.h>

static volatile int sink;

static void __attribute__((noinline)) tick(int n)
{
	sink += n;
}

int main(void)
{
	volatile int *null = NULL;

	tick(1);
	tick(2);
	tick(3);
	printf("ticked %d\n", sink);
	return *null;
}
// SPDX-License-Identifier: BSD-2-Clause
