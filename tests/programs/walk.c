/* walk.c - values of every kind changing line by line: a local, globals
 * (an int, a double, a string), heap bytes, bytes libc copies, bytes the
 * kernel writes (read from a pipe) and a signal handler's store. Walked
 * forward and then backward, a debugger must show the same values at
 * each line. Given an argument it crashes after the last line, for the same
 * walk through a recording. LINE_ markers name the lines tests stop at. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int g_count;
double g_ratio;
char g_text[32];
static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
	got = sig;
	g_count += 100;
}

/* A store through NULL when asked for (a recording then ends in a core). */
__attribute__((noinline)) static int crash_if(int argc, int v)
{
	if (argc > 1)
		*(volatile int *)0 = v;
	return v;
}

int main(int argc, char **argv)
{
	int local = 5;
	char *heap = malloc(32);
	int fds[2];

	(void)argv;
	signal(SIGUSR1, on_usr1);          /* LINE_FIRST */
	memset(heap, 'a', 31);
	heap[31] = 0;
	local += 10;
	g_count = 1;
	strcpy(g_text, "hello");
	g_ratio = local / 4.0;
	if (pipe(fds) != 0)
		return 1;
	if (write(fds[1], "pipe-bytes", 10) != 10)
		return 1;
	if (read(fds[0], heap, 10) != 10)
		return 1;
	memcpy(g_text + 5, heap, 10);
	raise(SIGUSR1);
	g_count += 2;
	local *= 3;
	return crash_if(argc, (g_count + local) & 0x7f);   /* LINE_LAST */
}
// SPDX-License-Identifier: BSD-2-Clause
