/* values.c - a local and a global change three times, then (with an
 * argument) a fault: at a point of the past a debugger must show what the
 * history knows of them, never today's values as the past's. The marker
 * comments name the lines tests stop at. */
#include <stdio.h>

int g;

__attribute__((noinline)) int twice(int v)
{
	return v * 2;
}

int main(int argc, char **argv)
{
	volatile int x;

	(void)argv;
	x = 1;
	g = 10;
	x = 2;                          /* LINE_X2 */
	g = 20;
	x = twice(x) - 1;
	g = 30;
	printf("x=%d g=%d\n", x, g);    /* LINE_PRINT */
	if (argc > 1)
		*(volatile int *)0 = x;  /* LINE_FAULT */
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
