/* manythreads.c - `manythreads WAVES ALIVE`: WAVES times, start ALIVE
 * threads that all wait at a barrier until the last has started, then
 * end; the main thread joins them before the next wave. WAVES * ALIVE
 * threads over the program's life, ALIVE of them alive at once. Exit
 * status 0 when every thread ran. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t all_started;
static volatile long ran;

static void *worker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&all_started);
	__atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
	return NULL;
}

int main(int argc, char **argv)
{
	long waves = argc > 1 ? atol(argv[1]) : 10;
	long alive = argc > 2 ? atol(argv[2]) : 1000;
	pthread_t *t = calloc((size_t)alive, sizeof(*t));
	pthread_attr_t attr;

	if (!t || waves < 1 || alive < 1)
		return 2;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (long w = 0; w < waves; w++) {
		pthread_barrier_init(&all_started, NULL, (unsigned)alive + 1);
		for (long i = 0; i < alive; i++)
			if (pthread_create(&t[i], &attr, worker, NULL))
				return 3;
		pthread_barrier_wait(&all_started);
		for (long i = 0; i < alive; i++)
			pthread_join(t[i], NULL);
		pthread_barrier_destroy(&all_started);
	}
	printf("%ld threads\n", ran);
	return ran == waves * alive ? 0 : 1;
}
// SPDX-License-Identifier: BSD-2-Clause
