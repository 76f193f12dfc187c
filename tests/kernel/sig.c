// SPDX-License-Identifier: BSD-2-Clause
/* Signal delivery and sigreturn in the middle of ordinary code. */
#include <signal.h>
#include <unistd.h>

static volatile int hits;

static void on_usr1(int sig)
{
	hits += sig;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	int i, sum = 0;

	sigaction(SIGUSR1, &sa, NULL);
	for (i = 0; i < 3; i++) {
		raise(SIGUSR1);
		sum += i * getpid() % 7;
	}
	return hits == 3 * SIGUSR1 && sum >= 0 ? 0 : 1;
}
