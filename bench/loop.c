// SPDX-License-Identifier: BSD-2-Clause
/* loop.c - the benchmarks' traced subject: a call-heavy integer loop whose
 * length is set by argv[1], so the recorder and GDB run the same code. */
#include <stdio.h>
#include <stdlib.h>

static unsigned mix(unsigned x, unsigned i)
{
	return (x ^ i) * 2654435761u + (i & 7);
}

__attribute__((noinline)) unsigned work(unsigned n)
{
	unsigned x = 1;

	for (unsigned i = 0; i < n; i++)
		x = (i % 3) ? mix(x, i) : x + i;
	return x;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 1000;

	unsigned x = work(n);

	printf("%u\n", x);
#ifdef LOOP_CRASH
	/* bench/gdb_server.sh serves the history post-mortem, which needs
	 * the core a fault makes. */
	*(volatile unsigned *)0 = x;
#endif
	return 0;
}
