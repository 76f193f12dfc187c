/* SPDX-License-Identifier: BSD-2-Clause */
/* which.h - a program found through PATH as execvp would: the launching
 * backends look for the program and its runner (valgrind) so. */
#ifndef HWT_WHICH_H
#define HWT_WHICH_H

#include <stdbool.h>
#include <stddef.h>

/* PROG (a path when it has a slash) into out, executable; false: none. */
bool hwt_which(const char *prog, char *out, size_t size);

#endif
