/* crash.c - SIGSEGV two calls deep: main -> a -> b -> write through NULL.
 * crash_target has external linkage and is writable, so the compiler must
 * emit the store instead of a trap. */
int *crash_target;
int progress;

__attribute__((noinline)) void b(int v)
{
	progress = 2;
	*crash_target = v;
	progress = 3;
}

__attribute__((noinline)) void a(int v)
{
	progress = 1;
	b(v * 2);
	progress = 4;
}

int main(int argc, char **argv)
{
	(void)argv;
	a(argc + 20);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
