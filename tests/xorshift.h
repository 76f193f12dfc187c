/* SPDX-License-Identifier: BSD-2-Clause */
/* xorshift.h - the tests' pseudo-random numbers: the same sequence from
 * a fixed seed on every run, so a failure repeats. */
#ifndef HWT_TESTS_XORSHIFT_H
#define HWT_TESTS_XORSHIFT_H

#include <stdint.h>

/* xorshift64: the next number from *state (never 0 from a non-zero
 * seed). */
static inline uint64_t xorshift64(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
