/* loops.c - nested loops over a small grid; prints a computed result.
 * Built twice: loops (-O1) and loops_O0 (-O0).  The work depends on argc so
 * the compiler cannot fold it away; run without arguments. */
#include <stdio.h>

#define N 6

static int grid[N][N];

int main(int argc, char **argv)
{
	long sum = 0;
	(void)argv;

	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++)
			grid[i][j] = i * j + ((i ^ j) & 3) + argc;

	for (int i = 0; i < N; i++) {
		for (int j = 0; j < N; j++) {
			if (grid[i][j] & 1)
				sum += grid[i][j];
			else
				sum -= j;
		}
	}
	printf("loops: sum=%ld\n", sum);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
