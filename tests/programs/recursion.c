/* recursion.c - small recursive fib and ackermann. */
#include <stdio.h>

__attribute__((noinline)) int fib(int n)
{
	if (n < 2)
		return n;
	return fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) int ackermann(int m, int n)
{
	if (m == 0)
		return n + 1;
	if (n == 0)
		return ackermann(m - 1, 1);
	return ackermann(m - 1, ackermann(m, n - 1));
}

int main(int argc, char **argv)
{
	(void)argv;
	int f = fib(7 + argc);          /* fib(8) = 21: 67 calls */
	int a = ackermann(1 + argc, 2); /* A(2,2) = 7: 27 calls */
	printf("recursion: fib=%d ack=%d\n", f, a);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
