// SPDX-License-Identifier: BSD-2-Clause
/* pt_switch.c - which stretches of per-cpu Intel PT belong to a thread.
 *
 * LLDB's per-cpu bundles keep, for every cpu, its PT buffer and the
 * perf_event context-switch records of that cpu (PERF_RECORD_SWITCH_CPU_WIDE
 * with sample_id_all, PERF_SAMPLE_TID and PERF_SAMPLE_TIME). A thread ran
 * on a cpu from a switch-in record naming it to the next switch-out
 * record; those perf times (ns) become TSC with tscPerfZeroConversion,
 * the clock of the PT's TSC packets, and the decoder keeps only the
 * instructions of that cpu's trace whose TSC lies in the stretch. As in
 * LLDB, a cpu's first record being a switch-out means the thread ran
 * since the trace began, and a switch-in without its switch-out means it
 * ran until the trace ended. The records are untrusted: sizes and times
 * are checked and every violation is an error naming the offset.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "decode.h"
#include "replay-int.h"
#include "util.h"

/* include/uapi/linux/perf_event.h */
#define PERF_RECORD_SWITCH_CPU_WIDE 15u
#define PERF_RECORD_MISC_SWITCH_OUT 0x2000u
#define PERF_HEADER_SIZE 8u
/* header, next_prev_pid/tid, then sample_id: pid, tid, time */
#define SWITCH_RECORD_SIZE HWT_PT_SWITCH_RECORD_SIZE
/* A bound on context-switch files: 1 GiB of records. */
#define SWITCH_MAX_BYTES (1ull << 30)

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* perf's time_zero conversion run backwards (LLDB's ToTSC). The
 * arithmetic is modulo 2^64, as perf's: time_zero is the perf clock's
 * value at TSC 0, which lies before the perf clock's own zero on real
 * machines, so it is usually "negative" (above 2^63 as written). A time
 * that comes out before TSC 0 (more than 2^63 ns, 292 years, would be
 * needed to mean anything else) is before any TSC the trace can hold. */
static uint64_t to_tsc(const struct hwt_tsc_conv *c, uint64_t ns)
{
	uint64_t t = ns - c->time_zero, quot, rem;

	if ((int64_t)t <= 0 || !c->time_mult || c->time_shift > 63)
		return 0;
	quot = t / c->time_mult;
	rem = t % c->time_mult;
	if (c->time_shift && quot > UINT64_MAX >> c->time_shift)
		return UINT64_MAX;
	/* rem < time_mult < 2^32, so rem << shift overflows only for
	 * shifts past 31, which perf never uses; saturate rather than wrap. */
	if (c->time_shift >= 32)
		return UINT64_MAX;
	return (quot << c->time_shift) + (rem << c->time_shift) / c->time_mult;
}

uint64_t hwt_tsc_to_perf_ns(const struct hwt_tsc_conv *c, uint64_t tsc)
{
	uint64_t quot, rem;

	if (c->time_shift > 63)
		return c->time_zero;
	quot = tsc >> c->time_shift;
	rem = tsc & ((1ull << c->time_shift) - 1);
	return c->time_zero + quot * c->time_mult +
		((rem * c->time_mult) >> c->time_shift);
}

void hwt_pt_switch_record(uint8_t out[HWT_PT_SWITCH_RECORD_SIZE],
			  bool switch_out, uint32_t pid, uint32_t tid,
			  uint64_t ns)
{
	const uint32_t type = PERF_RECORD_SWITCH_CPU_WIDE;
	const uint16_t misc = switch_out ? PERF_RECORD_MISC_SWITCH_OUT : 0;
	const uint16_t size = SWITCH_RECORD_SIZE;

	/* next_prev_pid and next_prev_tid (bytes 8-15): the idle task. */
	memset(out, 0, SWITCH_RECORD_SIZE);
	memcpy(out, &type, 4);
	memcpy(out + 4, &misc, 2);
	memcpy(out + 6, &size, 2);
	memcpy(out + 16, &pid, 4);
	memcpy(out + 20, &tid, 4);
	memcpy(out + 24, &ns, 8);
}

static int add_piece(struct hwt_pt_piece **v, size_t *nv, size_t *cap,
		     const struct hwt_pt_piece *p)
{
	if (HWT_ARRAY_RESERVE(*v, *cap, *nv + 1, 4))
		return -ENOMEM;
	(*v)[(*nv)++] = *p;
	return 0;
}

int hwt_pt_switch_parse(const uint8_t *d, size_t n, int64_t tid,
			const struct hwt_tsc_conv *conv, size_t cpu_index,
			int64_t cpu, struct hwt_pt_piece **v, size_t *nv,
			size_t *cap, struct hwt_err *err)
{
	struct hwt_pt_piece p = { .cpu = cpu, .cpu_index = cpu_index };
	uint64_t last_ns = 0, start = 0;
	int64_t cur = -1;            /* thread switched in, -1: none */
	bool seen = false;
	size_t off = 0;

	while (off < n) {
		uint32_t type, pid_tid;
		uint16_t misc, size;
		uint64_t ns, tsc;

		if (n - off < PERF_HEADER_SIZE)
			return hwt_err_set(err, EBADMSG, "context-switch record "
					   "at offset %zu is truncated: %zu "
					   "bytes left, its header needs %u",
					   off, n - off, PERF_HEADER_SIZE);
		type = rd32(d + off);
		memcpy(&misc, d + off + 4, sizeof(misc));
		memcpy(&size, d + off + 6, sizeof(size));
		if (size < PERF_HEADER_SIZE || size > n - off)
			return hwt_err_set(err, EBADMSG, "context-switch record "
					   "at offset %zu has size %u: it must "
					   "be at least %u and fit the %zu "
					   "bytes left", off, size,
					   PERF_HEADER_SIZE, n - off);
		if (type != PERF_RECORD_SWITCH_CPU_WIDE) {
			/* Other records (LOST, ...) say nothing of who ran. */
			off += size;
			continue;
		}
		if (size < SWITCH_RECORD_SIZE)
			return hwt_err_set(err, EBADMSG, "context-switch record "
					   "at offset %zu has size %u, less than "
					   "the %u of a switch with tid and time "
					   "(record with PERF_SAMPLE_TID, "
					   "PERF_SAMPLE_TIME and sample_id_all)",
					   off, size, SWITCH_RECORD_SIZE);
		pid_tid = rd32(d + off + 20);
		ns = rd64(d + off + 24);
		if (seen && ns < last_ns)
			return hwt_err_set(err, EBADMSG, "context-switch record "
					   "at offset %zu goes back in time "
					   "(%llu ns after %llu ns)", off,
					   (unsigned long long)ns,
					   (unsigned long long)last_ns);
		tsc = to_tsc(conv, ns);
		if (misc & PERF_RECORD_MISC_SWITCH_OUT) {
			/* The first record a switch-out: it ran from the
			 * start of the trace. */
			if (!seen)
				cur = pid_tid, start = 0;
			/* An out for another thread than the one switched in
			 * still ends what ran: the cpu changed hands. */
			if (cur == tid) {
				p.tsc_begin = start;
				p.tsc_end = tsc;
				p.begin_known = seen;
				p.end_known = pid_tid == tid;
				if (add_piece(v, nv, cap, &p))
					return hwt_err_set(err, ENOMEM,
							   "out of memory");
			}
			cur = -1;
		} else {
			/* A missing switch-out: the next switch-in ends it. */
			if (cur == tid) {
				p.tsc_begin = start;
				p.tsc_end = tsc;
				p.begin_known = true;
				p.end_known = false;
				if (add_piece(v, nv, cap, &p))
					return hwt_err_set(err, ENOMEM,
							   "out of memory");
			}
			cur = pid_tid;
			start = tsc;
		}
		seen = true;
		last_ns = ns;
		off += size;
	}
	if (cur >= 0 && cur == tid) {
		p.tsc_begin = start;
		p.tsc_end = UINT64_MAX;
		p.begin_known = true;
		p.end_known = false;
		if (add_piece(v, nv, cap, &p))
			return hwt_err_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct hwt_pt_piece *x = a, *y = b;

	if (x->tsc_begin != y->tsc_begin)
		return x->tsc_begin < y->tsc_begin ? -1 : 1;
	return x->cpu_index < y->cpu_index ? -1 : x->cpu_index > y->cpu_index;
}

int hwt_pt_thread_pieces(const struct hwt_bundle *b, int64_t tid,
			 uint8_t **trace, size_t *size,
			 struct hwt_pt_piece **pieces, size_t *npieces,
			 struct hwt_err *err)
{
	struct hwt_pt_piece *v = NULL;
	uint8_t *all = NULL;
	size_t nv = 0, vcap = 0, total = 0;
	int rc = 0;

	if (!b->has_tsc_conv)
		return hwt_err_set(err, EINVAL, "per-cpu traces need "
				   "tscPerfZeroConversion to match context "
				   "switches with the trace");
	for (size_t c = 0; !rc && c < b->npt_cpus; c++) {
		const struct hwt_bundle_pt_cpu *cpu = &b->pt_cpus[c];
		size_t before = nv, n, tn;
		uint8_t *d, *t, *p;

		char *path = hwt_bundle_path(b, cpu->switch_file);

		rc = path ? hwt_read_file(path, SWITCH_MAX_BYTES, &d, &n, err) :
			hwt_err_set(err, ENOMEM, "out of memory");
		free(path);
		if (!rc) {
			rc = hwt_pt_switch_parse(d, n, tid, &b->tsc_conv, c,
						 cpu->id, &v, &nv, &vcap, err);
			free(d);
		}
		if (rc) {
			rc = hwt_err_prefix(err, "cpus[%zu].contextSwitchTrace "
					    "'%s': ", c, cpu->switch_file);
			break;
		}
		if (nv == before)
			continue;
		/* The thread ran here: its trace joins the others. */
		rc = hwt_bundle_load_file(b, cpu->trace_file, cpu->trace_size,
					  &t, &tn, err);
		if (rc) {
			rc = hwt_err_prefix(err, "cpus[%zu].iptTrace: ", c);
			break;
		}
		p = tn ? realloc(all, total + tn) : all;
		if (tn && !p) {
			free(t);
			rc = hwt_err_set(err, ENOMEM, "out of memory");
			break;
		}
		all = p;
		if (tn)
			memcpy(all + total, t, tn);
		free(t);
		for (size_t i = before; i < nv; i++) {
			v[i].off = total;
			v[i].len = tn;
		}
		total += tn;
	}
	if (rc) {
		free(v);
		free(all);
		return rc;
	}
	if (nv)
		qsort(v, nv, sizeof(*v), by_time);
	*trace = all;
	*size = total;
	*pieces = v;
	*npieces = nv;
	return 0;
}
