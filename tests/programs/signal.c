/* signal.c - a SIGUSR1 handler installed with sigaction and entered
 * synchronously through raise(); the handler does a little work. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t handled;
static volatile int work;

__attribute__((noinline)) int handler_work(int sig)
{
	int acc = 0;
	for (int i = 0; i < 5; i++)
		acc += sig * i;
	return acc;
}

static void on_usr1(int sig)
{
	work = handler_work(sig);
	handled = 1;
}

int main(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		return 2;
	raise(SIGUSR1);
	printf("signal: handled=%d work=%d\n", (int)handled, work);
	return 0;
}
// SPDX-License-Identifier: BSD-2-Clause
