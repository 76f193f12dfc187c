/* switch.c - a dense switch that gcc compiles to a jump table (built with
 * -O2; `jmp *%rax` through .rodata offsets).  The Makefile's `verify`
 * target checks the indirect jump is present. */
#include <stdio.h>

__attribute__((noinline)) int classify(int v, int w)
{
	switch (v) {
	case 0: return w + 17;
	case 1: return w * 3 + 1;
	case 2: return w - 40;
	case 3: return w << 4;
	case 4: return w ^ 0x55;
	case 5: return (w >> 1) + 9;
	case 6: return w * w;
	case 7: return w | 0x100;
	case 8: return 5 - w;
	case 9: return w & 0x3c;
	case 10: return w * 7 - 2;
	case 11: return ~w;
	default: return -1;
	}
}

int main(int argc, char **argv)
{
	int total = 0;
	(void)argv;

	for (int i = 0; i < 14; i++)
		total += classify((i * 5 + argc) % 13, i + argc);
	printf("switch: total=%d\n", total);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
