/* SPDX-License-Identifier: BSD-2-Clause */
/* etm_child.h - running the CoreSight decoder in a child process
 * (replay/etm_child.c). Internal to the replay library.
 *
 * OpenCSD 1.3.3 crashes on some damaged trace (docs/fuzzing.md), and a
 * crash in the library must not take down the process that opened the
 * history (hwtrace, hwt-server, a debugger that links the library). So
 * decode_etm.c runs OpenCSD in a forked child, which sends what it decodes
 * back over a pipe as fixed-size records, batched into large writes. The
 * parent checks every record (the child is as untrusted as the trace) and
 * turns them into blocks. When the child dies, the parent keeps what came
 * before and learns why, to end the history with a gap.
 */
#ifndef HWT_ETM_CHILD_H
#define HWT_ETM_CHILD_H

#include <stddef.h>
#include <stdint.h>

#include "hwt-replay.h"

/* What a record says. Only END means something to the plumbing; the
 * others are the decoder's, and its take function rejects what it does
 * not know. */
enum hwt_etm_rec_type {
	HWT_ETM_REC_END = 1,     /* the child finished: at = trace size */
	HWT_ETM_REC_FEED,        /* the child feeds the trace from at */
	HWT_ETM_REC_RANGE,       /* instruction range st..en, n, isa, sz */
	HWT_ETM_REC_EXCEPTION,
	HWT_ETM_REC_NO_SYNC,
	HWT_ETM_REC_TRACE_ON,    /* n: 1 after an overflow */
	HWT_ETM_REC_ADDR_NACC,   /* st: the address */
	HWT_ETM_REC_ADDR_UNKNOWN,
	HWT_ETM_REC_NOPATH,      /* st: the address */
	HWT_ETM_REC_GAVE_UP,     /* fatal decoder response at byte at */
	HWT_ETM_REC_CONFIG,      /* OpenCSD refused the configuration:
				  * n = its ocsd_err_t */
};

/* One record as it travels through the pipe, in the byte order of the
 * machine (parent and child are the same program). */
struct hwt_etm_rec {
	uint32_t type;           /* enum hwt_etm_rec_type */
	uint32_t isa;            /* RANGE: ocsd_isa */
	uint64_t at;             /* trace offset; at most the trace size */
	uint64_t st, en;         /* RANGE: addresses; others: see above */
	uint32_t n;              /* RANGE: instructions; others: above */
	uint32_t sz;             /* RANGE: bytes of the last instruction */
};

/* Bytes the child buffers before one write. */
#define HWT_ETM_BATCH 65536u

/* The child's side of the pipe. */
struct hwt_etm_out {
	int fd;
	size_t n;                /* bytes in buf not yet written */
	uint8_t buf[HWT_ETM_BATCH];
};

/* Queue one record; written when the batch is full, by hwt_etm_child_run
 * when the child's function returns, or by the child's crash handler. A
 * child whose parent has gone (write fails) ends itself. */
void hwt_etm_out_put(struct hwt_etm_out *o, const struct hwt_etm_rec *r);

/* The child's work: decode, sending records through o. Runs in the child
 * only, which ends with _exit when it returns (nonzero: exit status 1). */
typedef int (*hwt_etm_child_fn)(void *arg, struct hwt_etm_out *o);
/* The parent's handling of one record that passed the checks here (type
 * not END, at <= size). 0: go on; -EPROTO: the record is malformed (the
 * child is then treated as failed); other negative errno: stop and fail
 * with that error, which take has set in err. */
typedef int (*hwt_etm_take_fn)(void *ctx, const struct hwt_etm_rec *r,
			       struct hwt_err *err);

/* Run child(arg) in a forked child over a trace of size bytes and hand
 * each record it sends to take(ctx). Returns 0 with why[0] == '\0' when the
 * child finished (END record, exit status 0); 0 with why set to a message
 * for a gap when it did not (killed by a signal, a nonzero exit, a
 * malformed or missing record: "CoreSight decoder (OpenCSD) crashed with
 * SIGSEGV at trace offset N; history after that point is lost"); a
 * negative errno with err set when the child could not be started or take
 * failed. The child is always reaped, and killed first when the parent
 * stops reading before it ended. */
int hwt_etm_child_run(hwt_etm_child_fn child, void *arg, uint64_t size,
		      hwt_etm_take_fn take, void *ctx, char *why, size_t whylen,
		      struct hwt_err *err);

/* Test hook, for tests/unit/replay/test_etm_child.c only (not in the public
 * header, no environment variable): when nonzero, a child raises SIGSEGV
 * instead of queueing its record number hwt_etm_test_crash_at (counting
 * from 1), as OpenCSD does on damaged ETE trace. */
extern uint64_t hwt_etm_test_crash_at;

#endif
