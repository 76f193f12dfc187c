/* pie_lib.c - a PIE executable calling into our own shared library
 * (libhwtdemo.so, found through RUNPATH $ORIGIN), which calls back into
 * the executable. */
#include <stdio.h>
#include "hwtdemo.h"

__attribute__((noinline)) static int triple(int v)
{
	return 3 * v + 1;
}

int main(int argc, char **argv)
{
	(void)argv;
	int s = hwt_demo_sum(4 + argc);
	int t = hwt_demo_apply(triple, 3 + argc);
	printf("pie_lib: sum=%d apply=%d\n", s, t);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
