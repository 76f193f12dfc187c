/* check.h - minimal test reporting shared by the unit tests.
 * Each CHECK group prints "PASS name" or "FAIL name: why"; main returns
 * check_exit() so a failure makes the binary exit non-zero. */
#ifndef HWT_CHECK_H
#define HWT_CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(name, cond, ...)                                         \
	do {                                                           \
		if (cond) {                                            \
			printf("PASS %s\n", (name));                   \
		} else {                                               \
			check_failures++;                              \
			printf("FAIL %s: ", (name));                   \
			printf(__VA_ARGS__);                           \
			printf(" (%s:%d)\n", __FILE__, __LINE__);      \
		}                                                      \
		fflush(stdout);                                        \
	} while (0)

static inline int check_exit(void)
{
	return check_failures ? 1 : 0;
}

#endif
