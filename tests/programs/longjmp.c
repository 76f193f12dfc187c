/* longjmp.c - setjmp in main, longjmp out of a call two levels down. */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
int depth_reached;

__attribute__((noinline)) void level2(int v)
{
	depth_reached = 2;
	if (v > 0)
		longjmp(env, v + 40);
	depth_reached = -1; /* not reached */
}

__attribute__((noinline)) void level1(int v)
{
	depth_reached = 1;
	level2(v);
	depth_reached = -2; /* not reached */
}

int main(int argc, char **argv)
{
	(void)argv;
	int r = setjmp(env);
	if (r == 0) {
		level1(argc + 1);
		printf("longjmp: no jump\n");
		return 1;
	}
	printf("longjmp: r=%d depth=%d\n", r, depth_reached);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
