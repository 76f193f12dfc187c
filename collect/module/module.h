/* SPDX-License-Identifier: BSD-2-Clause */
/* module.h - state shared by the files of the module backend: the user
 * space side of hwtrace.ko (kernel/, UAPI in
 * kernel/uapi/hwtrace.h, docs/kernel-module.md).
 *
 * format.c   the module's ring blocks -> hwt-sw chunks
 * backend.c  the recorder over collect/seize/seize.c: /dev/hwtrace sessions,
 *            threads attached before they run, mappings, drain
 */
#ifndef HWT_MODULE_H
#define HWT_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "../../kernel/uapi/hwtrace.h"
#include "perf/perf.h"

/* One thread's trace, converted. */
struct hwt_mod_trace {
	struct hwt_perf_buf chunks;   /* hwt-sw chunks, oldest first */
	uint64_t insn_total;          /* from the first kept block's start */
	uint64_t lost_insns;          /* dropped blocks, gaps between them */
	uint64_t bad_blocks;          /* corrupt blocks skipped (lost) */
};

/* Convert len bytes of drained blocks (whole HWTRACE_BLOCK_SIZE blocks,
 * oldest first) into hwt-sw chunks appended to t->chunks. from_exec: the
 * thread was attached before its execve, so blocks before the first
 * HWTRACE_BLK_EXEC block are the launcher's and are dropped. A corrupt
 * block (bad magic, size, record, count or last pc; sequence going back)
 * is skipped and its instructions counted lost; the first such problem
 * is described in err while the call still returns 0. Fails only for
 * lack of memory. */
int hwt_mod_convert(const uint8_t *buf, size_t len, bool from_exec,
		    struct hwt_mod_trace *t, struct hwt_err *err);

#endif
