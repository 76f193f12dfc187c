/* walk.c - values of every kind changing line by line: a local, globals
 * (an int, a double, a string), heap bytes, bytes libc copies, bytes the
 * kernel writes (read from a pipe) and a signal handler's store. Walked
 * forward and then backward, a debugger must show the same values at
 * each line. LINE_ markers name the lines tests stop at. */
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

int main(void)
{
	int local = 5;
	char *heap = malloc(32);
	int fds[2];

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
	return (g_count + local) & 0x7f;   /* LINE_LAST */
}
// SPDX-License-Identifier: BSD-2-Clause
