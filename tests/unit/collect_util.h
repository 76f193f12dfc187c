/* SPDX-License-Identifier: BSD-2-Clause */
/* collect_util.h - what the collector tests share: decoding a thread's
 * hwt-sw chunks back to instruction addresses, and compiling a small C
 * program to record (the test programs in build/programs are dynamic;
 * these subjects are static, so their startup is short and the same on
 * every run). */
#ifndef HWT_TESTS_COLLECT_UTIL_H
#define HWT_TESTS_COLLECT_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hwt-collect.h"
#include "hwt-common.h"

struct history {
	uint64_t *pc;
	bool *async;              /* reached by entering a signal handler */
	size_t n, asyncs;
	bool ok;
	char why[600];            /* when !ok */
};

static inline void history_free(struct history *h)
{
	free(h->pc);
	free(h->async);
}

/* Decode a thread's chunks back to its instruction addresses. */
static inline struct history history_decode(const struct hwt_collect_thread *t)
{
	struct history h = { .ok = true };
	struct hwt_err err = {0};
	size_t off = 0, cap = 4096;

	h.pc = malloc(cap * sizeof(*h.pc));
	h.async = malloc(cap * sizeof(*h.async));
	while (off < t->trace_size && h.ok) {
		struct hwt_sw_chunk_hdr hdr;
		struct hwt_sw_reader r;
		bool async = false;
		int rc;

		if (hwt_sw_chunk_hdr_unpack(t->trace + off, t->trace_size - off,
					    &hdr, &err) < 0) {
			snprintf(h.why, sizeof(h.why), "%s", err.msg);
			h.ok = false;
			break;
		}
		hwt_sw_reader_init(&r, t->trace + off + HWT_SW_CHUNK_HDR_SIZE,
				   hdr.payload_size, hdr.first_pc);
		do {
			if (h.n == cap) {
				cap *= 2;
				h.pc = realloc(h.pc, cap * sizeof(*h.pc));
				h.async = realloc(h.async,
						  cap * sizeof(*h.async));
			}
			h.pc[h.n] = r.pc;
			h.async[h.n] = async;
			h.asyncs += async;
			h.n++;
			rc = hwt_sw_reader_next(&r, &async, &err);
		} while (rc == HWT_SW_NEXT);
		if (rc < 0) {
			snprintf(h.why, sizeof(h.why), "%s", err.msg);
			h.ok = false;
		}
		off += HWT_SW_CHUNK_HDR_SIZE + hdr.payload_size;
	}
	return h;
}

/* Compile src (C text) with cc -static and cflags into a new temporary
 * directory; path receives the program's path. False when the machine
 * cannot build it (no static libc). */
static inline bool subject_build(const char *src, const char *name,
				 const char *cflags, char *path,
				 size_t path_size)
{
	char dir[] = "/tmp/hwt-test-subject-XXXXXX", cmd[2048], cpath[512];
	FILE *f;

	if (!mkdtemp(dir))
		return false;
	snprintf(cpath, sizeof(cpath), "%s/%s.c", dir, name);
	snprintf(path, path_size, "%s/%s", dir, name);
	f = fopen(cpath, "w");
	if (!f)
		return false;
	fputs(src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -static -O1 %s -o %s %s "
		 ">/dev/null 2>&1", cflags, path, cpath);
	return system(cmd) == 0;
}

/* Remove what subject_build made. */
static inline void subject_remove(const char *path)
{
	char buf[600];
	char *slash;

	unlink(path);
	snprintf(buf, sizeof(buf), "%s.c", path);
	unlink(buf);
	snprintf(buf, sizeof(buf), "%s", path);
	slash = strrchr(buf, '/');
	if (slash) {
		*slash = '\0';
		rmdir(buf);
	}
}

#endif
