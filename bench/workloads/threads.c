// SPDX-License-Identifier: BSD-2-Clause
/* threads.c - threads of arithmetic, `threads N [T]`: T threads (default
 * 4, at most 256) each run N iterations (about 10 instructions each),
 * then the program exits. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static unsigned long n;

static void *work(void *arg)
{
	volatile unsigned long acc = (unsigned long)(uintptr_t)arg;

	for (unsigned long i = 0; i < n; i++)
		acc = acc * 31 + (i ^ (acc >> 7));
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[256];
	unsigned long nt = argc > 2 ? strtoul(argv[2], NULL, 10) : 4;

	n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	if (nt < 1 || nt > 256)
		return 2;
	for (unsigned long i = 0; i < nt; i++)
		pthread_create(&t[i], NULL, work, (void *)(uintptr_t)(i + 1));
	for (unsigned long i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	return 0;
}
