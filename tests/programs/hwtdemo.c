/* hwtdemo.c - libhwtdemo.so, our own shared library: used at link time by
 * pie_lib and at run time (dlopen/dlsym) by dlopen.  No libc calls, so
 * loading it needs only a handful of relocations. */
#include "hwtdemo.h"

__attribute__((noinline)) static int square(int v)
{
	return v * v;
}

int hwt_demo_sum(int n)
{
	int total = 0;
	for (int i = 1; i <= n; i++)
		total += square(i);
	return total;
}

int hwt_demo_apply(int (*fn)(int), int n)
{
	int total = 0;
	for (int i = 0; i < n; i++)
		total += fn(i);
	return total;
}
// SPDX-License-Identifier: BSD-2-Clause
