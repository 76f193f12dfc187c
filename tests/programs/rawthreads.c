/* rawthreads.c - `rawthreads WAVES ALIVE`: like manythreads, WAVES waves
 * of ALIVE threads alive at once, but each thread is a bare clone() of a
 * dozen instructions (wait for the wave's go, then exit), so that tens of
 * thousands of threads cost a step-by-step recorder little more than
 * their births and deaths. Exit status 0 when every thread ran. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define STACK 4096

static volatile int go;
static volatile long ran;

/* clone(2) with the thread's code inline: it counts itself, waits while
 * go is 0 (futex), then exits. The kernel clears *ctid and wakes it when
 * the thread is gone. */
static long spawn(void *stack_top, volatile int *ctid)
{
	register long r10 __asm__("r10") = (long)ctid;
	register long r8 __asm__("r8") = 0;
	long ret;

	__asm__ volatile(
		"syscall\n\t"
		"test %%rax, %%rax\n\t"
		"jnz 2f\n\t"
		"lock incq %[ran]\n"
		"1:\n\t"
		"mov %[go], %%edx\n\t"        /* futex(&go, WAIT, 0) */
		"test %%edx, %%edx\n\t"
		"jnz 3f\n\t"
		"lea %[go], %%rdi\n\t"
		"xor %%esi, %%esi\n\t"        /* FUTEX_WAIT */
		"xor %%r10d, %%r10d\n\t"
		"mov $202, %%eax\n\t"
		"syscall\n\t"
		"jmp 1b\n"
		"3:\n\t"
		"mov $60, %%eax\n\t"          /* exit(0): this thread only */
		"xor %%edi, %%edi\n\t"
		"syscall\n"
		"2:"
		: "=a"(ret), [ran] "+m"(ran)
		: "0"((long)SYS_clone),
		  "D"((long)(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
			     CLONE_THREAD | CLONE_SYSVSEM |
			     CLONE_CHILD_CLEARTID)),
		  "S"(stack_top), "d"(0L), "r"(r10), "r"(r8), [go] "m"(go)
		: "rcx", "r11", "memory");
	return ret;
}

int main(int argc, char **argv)
{
	long waves = argc > 1 ? atol(argv[1]) : 10;
	long alive = argc > 2 ? atol(argv[2]) : 1000;
	volatile int *tids;
	char *stacks;

	if (waves < 1 || alive < 1 || alive > 100000)
		return 2;
	tids = calloc((size_t)alive, sizeof(*tids));
	stacks = mmap(NULL, (size_t)alive * STACK, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!tids || stacks == MAP_FAILED)
		return 2;
	for (long w = 0; w < waves; w++) {
		go = 0;
		for (long i = 0; i < alive; i++) {
			tids[i] = 1;
			if (spawn(stacks + (i + 1) * STACK, &tids[i]) < 0)
				return 3;
		}
		go = 1;
		syscall(SYS_futex, &go, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
		/* Wait on the value seen: re-reading it for the call would
		 * wait on 0 if the thread exited in between, for ever. */
		for (long i = 0; i < alive; i++)
			for (int v; (v = tids[i]) != 0;)
				syscall(SYS_futex, &tids[i], FUTEX_WAIT, v,
					NULL, NULL, 0);
	}
	return ran == waves * alive ? 0 : 1;
}
// SPDX-License-Identifier: BSD-2-Clause
