/* faults.c - a loop that faults in a chosen iteration: `faults KIND AT`,
 * KIND one of load (walking a list into a bad pointer), store (through a
 * bad pointer of a table), div (by a zero of a table) and call (through a
 * bad function pointer), AT the iteration that faults (0 first, 7 last).
 * The sum of what the loop saw so far lives in a register when it faults:
 * a recorder's core must hold the cpu's registers at the faulting
 * instruction, its history must end there after exactly AT iterations. */
#include <stdlib.h>
#include <string.h>

#define N 8

struct node {
	long v;
	struct node *next;
};

static struct node nodes[N];
static long *slots[N];
static long cells[N];
static long divisors[N];
typedef long (*fn_t)(long);
static fn_t fns[N];

__attribute__((noinline)) static long twice(long x)
{
	return 2 * x;
}

__attribute__((noinline)) long walk_load(struct node *n)
{
	long s = 0;

	while (n) {
		s += n->v;
		n = n->next;
	}
	return s;
}

__attribute__((noinline)) long walk_store(long **p, long k)
{
	long s = 0;

	for (long i = 0; i < k; i++) {
		s += i;
		*p[i] = s;
	}
	return s;
}

__attribute__((noinline)) long walk_div(const long *d, long k)
{
	long s = 1000000;

	for (long i = 0; i < k; i++)
		s = s / d[i] + i;
	return s;
}

__attribute__((noinline)) long walk_call(fn_t *f, long k)
{
	long s = 1;

	for (long i = 0; i < k; i++)
		s += f[i](s + i);
	return s;
}

int main(int argc, char **argv)
{
	long at = argc > 2 ? atol(argv[2]) : 3;
	const char *kind = argc > 1 ? argv[1] : "load";

	if (at < 0 || at >= N)
		return 2;
	for (long i = 0; i < N; i++) {
		nodes[i].v = i + 1;
		nodes[i].next = i + 1 < N ? &nodes[i + 1] : NULL;
		slots[i] = &cells[i];
		divisors[i] = 1 + (i & 1);
		fns[i] = twice;
	}
	/* The bad one: a pointer into the first page, a zero, a bad call. */
	if (at == 0)
		nodes[0].v = 5;
	nodes[at ? at - 1 : 0].next = (struct node *)0x19;
	slots[at] = (long *)0x19;
	divisors[at] = 0;
	fns[at] = (fn_t)0x19;
	if (!strcmp(kind, "load"))
		return (int)walk_load(at ? nodes : (struct node *)0x19);
	if (!strcmp(kind, "store"))
		return (int)walk_store(slots, N);
	if (!strcmp(kind, "div"))
		return (int)walk_div(divisors, N);
	if (!strcmp(kind, "call"))
		return (int)walk_call(fns, N);
	return 2;
}
// SPDX-License-Identifier: BSD-2-Clause
