/* SPDX-License-Identifier: BSD-2-Clause */
/* backend_names.h - the short names the command line accepts for
 * backends (docs/backends.md). */
#ifndef HWT_BACKEND_NAMES_H
#define HWT_BACKEND_NAMES_H

/* The registered backend name that name stands for: "pt", "bts" and
 * "etm" stand for "perf-pt", "perf-bts" and "perf-etm"; any other name
 * (NULL included) is returned unchanged. */
const char *hwt_backend_canonical(const char *name);

#endif
