// SPDX-License-Identifier: BSD-2-Clause
/*
 * Two threads recorded at once: prints "TID1 TID2 ADDR" (ADDR: the loop
 * instruction each thread executes LOOP1 or LOOP2 times), then each thread
 * waits for one byte on stdin, runs its loop and exits.
 *
 * Every thread executes the same instructions however the threads are
 * scheduled, so two recordings of it compare address for address
 * (hwt-collect-guest): threads are made with a raw clone (no barrier or
 * join whose path depends on who arrives first), use only system calls
 * that each take one instruction however long they block, and the main
 * thread waits for each to be gone with a single FUTEX_WAIT on its
 * cleared tid (it returns at once when the thread is already gone).
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>

#define LOOP1 3000
#define LOOP2 5000
#define STACK 16384

void spin(unsigned n);
extern char spin_dec[];
__asm__(".text\n.globl spin\nspin:\n\tmov %edi, %ecx\n"
	".globl spin_dec\nspin_dec:\n\tdec %ecx\n\tjnz spin_dec\n\tret\n");

/* clone_run(flags, stack_top, tid, fn, arg): a thread on stack_top runs
 * fn(arg) and exits; the kernel stores its tid in *tid and clears it (and
 * wakes a futex waiter) when it is gone. Returns the tid, or -errno. No
 * libc in the new thread: it has no thread pointer of its own. */
long clone_run(unsigned long flags, void *stack, int *tid,
	       void (*fn)(unsigned long), unsigned long arg);
__asm__(".text\n.globl clone_run\nclone_run:\n"
	"\tmov %rcx, %r9\n"          /* fn: kept by the syscall */
	"\tmov %rdx, %r10\n"         /* child_tid */
	"\tmov $56, %eax\n"           /* SYS_clone */
	"\tsyscall\n"
	"\ttest %rax, %rax\n"
	"\tjnz 1f\n"
	"\tmov %r8, %rdi\n"
	"\tcall *%r9\n"
	"\tmov $60, %eax\n"          /* SYS_exit: this thread only */
	"\txor %edi, %edi\n"
	"\tsyscall\n"
	"1:\tret\n");

static long sys4(long n, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile("syscall" : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

static int live[2];
static unsigned char stacks[2][STACK] __attribute__((aligned(16)));

static void worker(unsigned long i)
{
	char c;

	if (sys4(SYS_read, 0, (long)&c, 1, 0) == 1)
		spin(i ? LOOP2 : LOOP1);
}

int main(void)
{
	const unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES |
		CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
		CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	long tids[2];
	int i;

	for (i = 0; i < 2; i++) {
		/* The parent tid pointer is the same word: it holds the tid
		 * before either thread runs. */
		tids[i] = clone_run(flags, stacks[i] + STACK, &live[i], worker,
				    (unsigned long)i);
		if (tids[i] < 0)
			return 1;
	}
	printf("%ld %ld %p\n", tids[0], tids[1], (void *)spin_dec);
	fflush(stdout);
	for (i = 0; i < 2; i++)
		sys4(SYS_futex, (long)&live[i], FUTEX_WAIT, tids[i], 0);
	return 0;
}
