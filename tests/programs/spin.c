/* spin.c - a long run, then a fault: `spin N` calls step() N times (about
 * 9 instructions a call), then stores through NULL in crash_here(). What
 * a flight recorder must keep is the end: the last calls and the fault. */
#include <stdlib.h>

volatile unsigned long acc;
int *volatile crash_target;

__attribute__((noinline)) void step(unsigned long i)
{
	acc += i ^ (acc >> 3);
}

__attribute__((noinline)) void crash_here(void)
{
	*crash_target = (int)acc;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;

	for (unsigned long i = 0; i < n; i++)
		step(i);
	crash_here();
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
