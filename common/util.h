/* SPDX-License-Identifier: BSD-2-Clause */
/* util.h - bounded file reading, number parsing and temporary
 * directories, as hwtrace's libraries and programs use them (util.c).
 * Internal: no public header includes it, and the shared libraries do
 * not export it. */
#ifndef HWT_UTIL_H
#define HWT_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "hwt-common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Map a whole regular file read-only; its size must be expect (a bundle
 * member trace.json sizes). An empty file maps to NULL. Undo with
 * hwt_unmap_file. */
int hwt_map_file(const char *path, uint64_t expect, uint8_t **map,
		 size_t *size, struct hwt_err *err);
void hwt_unmap_file(uint8_t *map, size_t size);
/* Read a whole file refusing more than max bytes. */
int hwt_read_file(const char *path, size_t max, uint8_t **data, size_t *size,
		  struct hwt_err *err);
/* Parse "123", "0x1f", "4M", "64K" (sizes) into *v; -EINVAL on junk. */
int hwt_parse_size(const char *s, uint64_t *v);
int hwt_parse_u64(const char *s, uint64_t *v);
/* The value of a hex digit, -1 for any other character. */
int hwt_hex_digit(int c);
/* Remove dir and everything under it, symlinks not followed. */
void hwt_remove_tree(const char *dir);
/* Temporary directories are named PREFIX<pid>-XXXXXX (mkdtemp's), pid
 * the creator's, so that one left by a process killed before it could
 * remove it is known: remove those in dir whose creator is gone (a pid
 * still in use, whoever has it now, is left alone). Their number. */
size_t hwt_remove_stale(const char *dir, const char *prefix);
/* "DIR/PREFIX<pid>-XXXXXX" for mkdtemp, malloc'd; NULL without memory. */
char *hwt_temp_template(const char *dir, const char *prefix);

#ifdef __cplusplus
}
#endif

#endif
