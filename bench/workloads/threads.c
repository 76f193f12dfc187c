/* threads.c - four threads of arithmetic, `threads N`: each runs N
 * iterations (about 10 instructions each), then the program exits. */
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
	pthread_t t[4];

	n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, work, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}
