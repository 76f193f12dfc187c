// SPDX-License-Identifier: BSD-2-Clause
/*
 * Short sleeps between short stretches of code: the thread is switched
 * out and in again many times (block-step probing needs switch-ins).
 */
#include <time.h>

int main(void)
{
	struct timespec ts = { 0, 200000 };
	volatile unsigned long sum = 0;
	int i, j;

	for (i = 0; i < 40; i++) {
		for (j = 0; j < 10; j++)
			sum += (unsigned long)i * j;
		nanosleep(&ts, NULL);
	}
	return sum == 40ul * 39 / 2 * 45 ? 0 : 1;
}
