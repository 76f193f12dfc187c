/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A loop with a known instruction count and no libc: LOOP_N iterations of
 * two instructions, plus mov before and three instructions of exit after:
 * 2 * LOOP_N + 4 instructions from the entry point through the syscall.
 */
	.globl _start
	.text
_start:
	mov	$LOOP_N, %ecx
1:	dec	%ecx
	jnz	1b
	mov	$60, %eax
	xor	%edi, %edi
	syscall
