/* SPDX-License-Identifier: BSD-2-Clause */
/* check.h - minimal test reporting shared by the unit tests.
 * Each CHECK group prints "PASS name" or "FAIL name: why"; main returns
 * check_exit() so a failure makes the binary exit non-zero.
 *
 * main runs its test functions through RUN(fn, args...), so that one can
 * be run alone: tests/run.py SUITE:TEST sets HWT_TEST to a shell pattern
 * and RUN calls only the functions whose name it matches. */
#ifndef HWT_CHECK_H
#define HWT_CHECK_H

#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_failures;
static int check_offered, check_ran;	/* RUN calls, and those that ran */
/* Put before every name: a suite that runs its tests twice, another
 * way the second time, names both. */
static const char *check_prefix = "";

#define CHECK(name, cond, ...)                                         \
	do {                                                           \
		if (cond) {                                            \
			printf("PASS %s%s\n", check_prefix, (name));   \
		} else {                                               \
			check_failures++;                              \
			printf("FAIL %s%s: ", check_prefix, (name));   \
			printf(__VA_ARGS__);                           \
			printf(" (%s:%d)\n", __FILE__, __LINE__);      \
		}                                                      \
		fflush(stdout);                                        \
	} while (0)

static inline bool check_selected(const char *name)
{
	const char *want = getenv("HWT_TEST");

	check_offered++;
	if (want && *want && fnmatch(want, name, 0))
		return false;
	check_ran++;
	return true;
}

#define RUN(fn, ...)                                                   \
	do {                                                           \
		if (check_selected(#fn))                               \
			fn(__VA_ARGS__);                               \
	} while (0)

static inline int check_exit(void)
{
	const char *want = getenv("HWT_TEST");

	/* A selection that picked nothing is a mistake, not a pass. */
	if (want && *want && !check_ran) {
		check_failures++;
		if (check_offered)
			printf("FAIL select: no test function matches '%s'\n",
			       want);
		else
			printf("FAIL select: this suite's checks run as one; "
			       "run it without :%s\n", want);
	}
	return check_failures ? 1 : 0;
}

/*
 * The build directory this binary belongs to: unit tests are built as
 * BUILD/tests/unit/<library>/test_x, so it is the part of the binary's
 * path before "/tests/unit/", whatever the library folder's depth.
 */
static inline bool check_build_dir(char *out, size_t size)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *cut;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	cut = strstr(exe, "/tests/unit/");
	if (!cut)
		return false;
	*cut = '\0';
	return (size_t)snprintf(out, size, "%s", exe) < size;
}

/* BUILD/programs: the traced test programs (tests/programs/). The
 * sanitizer build links it to the plain build's. */
static inline bool check_programs_dir(char *out, size_t size)
{
	char build[4096];

	return check_build_dir(build, sizeof(build)) &&
	       (size_t)snprintf(out, size, "%s/programs", build) < size;
}

/* The source tree: the build directory's parent. */
static inline bool check_repo_dir(char *out, size_t size)
{
	char build[4096], *slash;

	if (!check_build_dir(build, sizeof(build)) ||
	    !(slash = strrchr(build, '/')))
		return false;
	*slash = '\0';
	return (size_t)snprintf(out, size, "%s", build) < size;
}

#endif
