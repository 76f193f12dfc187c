/* threads4.c - four pthreads, each running a deterministic computation on
 * its own slot: no locks, no malloc, no stdio inside the threads (those
 * have nondeterministic contention paths).  The amount of work depends on
 * the slot index, so every thread's instruction sequence is different.
 * main joins and prints. */
#include <pthread.h>
#include <stdio.h>

struct slot {
	int index;
	unsigned long result;
};

static struct slot slots[4];

__attribute__((noinline)) unsigned long collatz_steps(unsigned long n)
{
	unsigned long steps = 0;
	while (n != 1) {
		n = (n & 1) ? 3 * n + 1 : n / 2;
		steps++;
	}
	return steps;
}

void *worker(void *arg)
{
	struct slot *s = arg;
	unsigned long acc = 0;

	for (unsigned long k = 0; k < 3 + (unsigned long)s->index; k++)
		acc += collatz_steps(7 + 4 * k + (unsigned long)s->index);
	s->result = acc;
	return NULL;
}

int main(void)
{
	pthread_t tid[4];

	for (int i = 0; i < 4; i++) {
		slots[i].index = i;
		if (pthread_create(&tid[i], NULL, worker, &slots[i]) != 0)
			return 2;
	}
	for (int i = 0; i < 4; i++)
		pthread_join(tid[i], NULL);
	printf("threads4: %lu %lu %lu %lu\n", slots[0].result, slots[1].result,
	       slots[2].result, slots[3].result);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
