/* overwrite.c - a stray strcpy overwrites a pointer that was set a
 * thousand calls earlier: the question reverse debugging is for, "who
 * wrote this?", answered by a watchpoint and reverse-continue. Given an
 * argument it then crashes on that pointer, for the same question asked
 * of a recording post-mortem. The marker names the line tests stop at. */
#include <stdio.h>
#include <string.h>

struct entry {
	char name[8];
	const char *label;
};

struct entry table[4];
static const char *labels[4] = { "zero", "one", "two", "three" };

__attribute__((noinline)) void fill(int i)
{
	table[i].label = labels[i];
}

__attribute__((noinline)) void overflow(const char *s)
{
	strcpy(table[1].name, s);       /* runs on into table[2] */
}

int main(int argc, char **argv)
{
	(void)argv;
	for (int i = 0; i < 4; i++)
		fill(i);
	for (int k = 0; k < 1000; k++)
		fill(k & 3);
	overflow("abcdefghijklmnopqrstuvwxyz012345");
	for (int k = 0; k < 1000; k++)
		fill(3);
	printf("%.4s\n", table[0].label);   /* LINE_PRINT */
	if (argc > 1)
		puts(table[2].label);       /* "yz012345": not an address */
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
