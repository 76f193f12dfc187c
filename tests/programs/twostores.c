/* twostores.c - two threads store to one variable, one after the other:
 * worker 1 stores 11 (then 12), worker 2 stores 21, each in its own
 * store_as(); both are still alive when main, given an argument, stores
 * through NULL. A reverse watch on `shared` must stop at the right
 * thread's store. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

int shared;
static pthread_barrier_t step, done;

__attribute__((noinline)) static void store_as(int id, int value)
{
	shared = value;
	(void)id;
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;

	pthread_barrier_wait(&step);           /* worker 1's turn */
	if (id == 1)
		store_as(id, 11);
	pthread_barrier_wait(&step);           /* worker 2's turn */
	if (id == 2)
		store_as(id, 21);
	pthread_barrier_wait(&step);           /* worker 1 again */
	if (id == 1)
		store_as(id, 12);
	pthread_barrier_wait(&step);
	pthread_barrier_wait(&done);           /* alive until main is done */
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t[2];

	(void)argv;
	pthread_barrier_init(&step, 0, 2);
	pthread_barrier_init(&done, 0, 3);
	pthread_create(&t[0], 0, worker, (void *)(intptr_t)1);
	pthread_create(&t[1], 0, worker, (void *)(intptr_t)2);
	/* The workers take their turns; main waits for nothing but the
	 * end of them, by polling, so that both stay alive below. It
	 * yields as it polls: under Valgrind, which runs one thread at a
	 * time, the workers then run at once. */
	while (__atomic_load_n(&shared, __ATOMIC_SEQ_CST) != 12)
		sched_yield();
	if (argc > 1)
		*(volatile int *)0 = shared;
	pthread_barrier_wait(&done);
	pthread_join(t[0], 0);
	pthread_join(t[1], 0);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
