/*
 * Two threads recorded at once: prints "TID1 TID2 ADDR" (ADDR: the loop
 * instruction each thread executes LOOP1 or LOOP2 times), then each thread
 * waits for one byte on stdin, runs its loop and exits.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOOP1 3000
#define LOOP2 5000

void spin(unsigned n);
extern char spin_dec[];
__asm__(".text\n.globl spin\nspin:\n\tmov %edi, %ecx\n"
	".globl spin_dec\nspin_dec:\n\tdec %ecx\n\tjnz spin_dec\n\tret\n");

static pid_t tids[2];
static pthread_barrier_t ready;

static void *worker(void *arg)
{
	unsigned long i = (unsigned long)arg;
	char c;

	tids[i] = syscall(SYS_gettid);
	pthread_barrier_wait(&ready);
	if (read(0, &c, 1) != 1)
		return NULL;
	spin(i ? LOOP2 : LOOP1);
	return NULL;
}

int main(void)
{
	pthread_t th[2];
	unsigned long i;

	pthread_barrier_init(&ready, NULL, 3);
	for (i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)i))
			return 1;
	pthread_barrier_wait(&ready);
	printf("%d %d %p\n", tids[0], tids[1], (void *)spin_dec);
	fflush(stdout);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return 0;
}
