/* cpuid_bare.c - no C library, so no cpuid before its own: the first
 * cpuid is followed by a jump, the second by straight-line code, then it
 * exits. Where a hypervisor loses cpuid's single-step trap, the stop after
 * the first lands past the jump, which no reading of the code can undo.
 * 13 instructions in all. */
__asm__(".globl _start\n"
	"_start:\n"
	"\txor %eax, %eax\n"
	"\txor %ecx, %ecx\n"
	"\tcpuid\n"
	".globl bare_after_jump\n"
	"bare_after_jump:\n"
	"\tjmp 1f\n"
	"\tnop\n"
	"1:\tnop\n"
	"\txor %eax, %eax\n"
	"\txor %ecx, %ecx\n"
	"\tcpuid\n"
	".globl bare_after_straight\n"
	"bare_after_straight:\n"
	"\tnop\n"
	"\tnop\n"
	"\tmov $60, %eax\n"       /* exit(0) */
	"\txor %edi, %edi\n"
	"\tsyscall\n");
// SPDX-License-Identifier: BSD-2-Clause
