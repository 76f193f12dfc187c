/* fnptr.c - calls through a table of function pointers (indirect calls).
 * The table has external linkage and is writable so the compiler cannot
 * turn the indirect calls into direct ones. */
#include <stdio.h>

__attribute__((noinline)) int op_add(int a, int b) { return a + b; }
__attribute__((noinline)) int op_sub(int a, int b) { return a - b; }
__attribute__((noinline)) int op_mul(int a, int b) { return a * b; }
__attribute__((noinline)) int op_xor(int a, int b) { return a ^ b; }

int (*op_table[4])(int, int) = { op_add, op_sub, op_mul, op_xor };

int main(int argc, char **argv)
{
	int acc = argc;
	(void)argv;

	for (int i = 0; i < 12; i++)
		acc = op_table[(i * 3 + acc) & 3](acc, i + 1) & 0xffff;
	printf("fnptr: acc=%d\n", acc);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
