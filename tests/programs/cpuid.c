/* cpuid.c - cpuid followed by straight-line code, and cpuid followed by a
 * jump. Some hypervisors lose the single-step trap of cpuid (they emulate
 * it), so a stepper stops one instruction late: after the first nop, or at
 * the jump's target. The labels mark the instruction after each cpuid.
 * Then it writes and reads a global, for watchpoint tests. */
#include <stdio.h>

volatile int watched = 1;

__attribute__((noinline)) static unsigned leaf0(void)
{
	unsigned a = 0, b, c = 0, d;

	__asm__ volatile("cpuid\n"
			 ".globl after_cpuid\n"
			 "after_cpuid:\n"
			 "\tnop\n\tnop\n\tnop\n"
			 : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	return a;
}

__attribute__((noinline)) static unsigned leaf0_then_jump(void)
{
	unsigned a = 0, b, c = 0, d;

	__asm__ volatile("cpuid\n"
			 ".globl after_cpuid_jump\n"
			 "after_cpuid_jump:\n"
			 "\tjmp 1f\n\tnop\n1:\tnop\n"
			 : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	return a;
}

int main(void)
{
	unsigned first = leaf0(), second = leaf0_then_jump();
	int sum = 0;

	watched = 2;                    /* write */
	sum += watched;                 /* read */
	printf("%u %u %d\n", first, second, sum);
	return first == second ? 0 : 1;
}
// SPDX-License-Identifier: BSD-2-Clause
