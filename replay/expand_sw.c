// SPDX-License-Identifier: BSD-2-Clause
/* expand_sw.c - hwt-sw chunks of branch records expanded with the image.
 *
 * hwtrace.ko in block-step mode (DEBUGCTL.BTF) traps after taken branches
 * only, so its chunks (flag HWT_SW_CHUNK_BRANCHES) hold a record where a
 * taken branch landed, after every system call (its sys_exit record) and
 * at every signal handler entry; the straight-line instructions between
 * two records are left out. While a history is opened each such record is
 * reached from the previous one by walking the code:
 *
 *   - reaching the record's address ends the walk (a step, or a
 *     fall-through past branches not taken);
 *   - a direct unconditional jump or call is followed;
 *   - a conditional branch is taken iff its target is the record's
 *     address, else the walk goes straight on;
 *   - an indirect jump or call, a return and a system call land on the
 *     record (the module records after every system call, so one that
 *     does not return to the next instruction, rt_sigreturn, is a record
 *     too);
 *   - a record marked asynchronous (a signal handler entered) is taken
 *     as it is, and so is a record at the address of a rep-prefixed
 *     string instruction that it follows (one record per iteration);
 *     any other record at the current address is a loop back to it.
 *
 * A chunk's first_pc is a record too: when the chunk continues the
 * previous branch chunk (decode_sw.c decides), it is reached from that
 * chunk's last pc the same way.
 *
 * The walk is deterministic for a given record, so an address seen twice
 * means it never gets there (Brent's cycle check, constant memory); it
 * also stops at code the image does not have and after EXPAND_MAX_WALK
 * instructions. A record that cannot be reached becomes a gap item naming
 * both addresses and the history resumes at the record. Every instruction
 * walked counts against EXPAND_MAX_TOTAL for the whole trace, so garbage
 * records cost bounded time and memory; past it the rest of each branch
 * chunk is one gap.
 *
 * The result is plain hwt-sw records in the expander's buffer, handed to
 * the index as its private storage when indexing ends, cut into segments of
 * at most HWT_SW_SEG_INSNS instructions like plain chunks, so decoding
 * stays lazy and item numbers are fixed once the history is open.
 * Direct branch targets and rep string ops come from the image's
 * instruction cache (x86.c decodes them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "replay-int.h"
#include "array.h"

/* Instructions walked to reach one record: far more than straight-line
 * code runs, small enough that a bad record costs little. */
#define EXPAND_MAX_WALK (1u << 20)
/* Instructions walked for one trace, about 300 MB of expanded records. */
#define EXPAND_MAX_TOTAL (1ull << 28)
struct hwt_sw_expand {
	struct hwt_image *img;
	struct hwt_bytes *records; /* the expanded records, plain hwt-sw */
	uint64_t *path;          /* addresses of the walk in progress */
	size_t path_cap;
	uint64_t walked;         /* against EXPAND_MAX_TOTAL */
};

/* The segment being filled. */
struct out {
	struct hwt_segments *segs;
	struct hwt_bytes *records;
	size_t start;            /* its first record byte in records */
	uint64_t pc, last;       /* first and last instruction */
	uint32_t n;
	bool async, open;
};

int hwt_sw_expand_new(struct hwt_image *img, struct hwt_sw_expand **out)
{
	struct hwt_sw_expand *x = calloc(1, sizeof(*x));

	if (!x || !(x->records = calloc(1, sizeof(*x->records)))) {
		free(x);
		return -ENOMEM;
	}
	x->img = img;
	*out = x;
	return 0;
}

static void records_free(void *priv)
{
	if (priv)
		hwt_bytes_free(priv);
	free(priv);
}

void hwt_sw_expand_free(struct hwt_sw_expand *x)
{
	if (!x)
		return;
	records_free(x->records);
	free(x->path);
	free(x);
}

/* Whether addr holds a rep-prefixed string instruction, which traps
 * once per iteration: a record at its own address repeats it. Any other
 * record at the current address is a loop back to it, walked. */
static bool rep_string(struct hwt_sw_expand *x, uint64_t addr)
{
	struct hwt_insn_info in;

	return !hwt_image_insn_detail(x->img, addr, HWT_ISA_DEFAULT, &in) &&
		in.rep_string;
}

static int close_piece(struct out *o)
{
	struct hwt_segments *segs = o->segs;
	struct hwt_segment s = {
		.off = o->start, .len = o->records->n - o->start, .pc = o->pc,
		.nitems = o->n,
		.flags = HWT_SW_SEG_EXPANDED |
			(o->async ? HWT_SW_SEG_ASYNC : 0),
	};

	o->open = false;
	return hwt_segments_push(segs, &s);
}

/* Append the instruction at next, reached from the last one. */
static int emit(struct out *o, uint64_t next, bool async)
{
	struct hwt_bytes *rec = o->records;
	int rc;

	if (!o->open || o->n == HWT_SW_SEG_INSNS) {
		if (o->open && (rc = close_piece(o)))
			return rc;
		*o = (struct out){ .segs = o->segs, .records = rec,
				   .start = rec->n, .pc = next, .last = next,
				   .n = 1, .async = async, .open = true };
		return 0;
	}
	if (HWT_ARRAY_RESERVE(rec->p, rec->cap, rec->n + HWT_SW_MAX_RECORD + 1,
			      65536))
		return -ENOMEM;
	rec->n += hwt_sw_encode_step(o->last, next, async, rec->p + rec->n);
	o->last = next;
	o->n++;
	return 0;
}

static int gap(struct out *o, const char *reason)
{
	struct hwt_segment s = { .nitems = 1, .reason = reason };
	int rc;

	if (!reason)
		return -ENOMEM;
	if (o->open && (rc = close_piece(o)))
		return rc;
	return hwt_segments_push(o->segs, &s);
}

static int path_push(struct hwt_sw_expand *x, size_t n, uint64_t pc)
{
	if (HWT_ARRAY_RESERVE(x->path, x->path_cap, n + 1, 1024))
		return -ENOMEM;
	x->path[n] = pc;
	return 0;
}

/* Walk from cur to the record t. Returns the number of instructions in
 * x->path between them (t excluded), -ENOMEM, or -EDOM with why set. */
static int64_t walk(struct hwt_sw_expand *x, uint64_t cur, uint64_t t,
		    char *why, size_t whysz)
{
	uint64_t pc = cur, saved = cur;
	uint32_t power = 1, lam = 0;
	size_t n = 0;

	for (;;) {
		struct hwt_insn_info in;
		uint64_t next;
		int rc;

		if (n >= EXPAND_MAX_WALK) {
			snprintf(why, whysz, "not reached within %u "
				 "instructions", EXPAND_MAX_WALK);
			return -EDOM;
		}
		x->walked++;
		rc = hwt_image_insn_detail(x->img, pc, HWT_ISA_DEFAULT, &in);
		if (rc == -ENOMEM)
			return rc;
		if (rc) {
			snprintf(why, whysz, rc == -ENOENT ? "no code at "
				 "0x%llx" : "the bytes at 0x%llx do not "
				 "decode", (unsigned long long)pc);
			return -EDOM;
		}
		switch (in.cls) {
		case HWT_INSN_CJUMP:
			next = in.direct && in.target == t ? t : pc + in.len;
			break;
		case HWT_INSN_JUMP:
		case HWT_INSN_CALL:
			next = in.direct ? in.target : t;
			break;
		case HWT_INSN_RET:
		case HWT_INSN_SYSCALL:
			next = t;
			break;
		default:
			next = pc + in.len;
			break;
		}
		if (next == t)
			return (int64_t)n;
		if (path_push(x, n, next))
			return -ENOMEM;
		n++;
		pc = next;
		if (pc == saved) {
			snprintf(why, whysz, "the code from 0x%llx loops at "
				 "0x%llx", (unsigned long long)cur,
				 (unsigned long long)pc);
			return -EDOM;
		}
		if (++lam == power) {
			saved = pc;
			power *= 2;
			lam = 0;
		}
	}
}

/* Get from the instruction at cur (the last one emitted, or the
 * previous chunk's last) to the record t, number rec of chunk (0: its
 * first_pc), emitting what lies between and t. Returns 0, -ENOMEM, or -E2BIG when the trace's walking
 * budget is spent (nothing emitted). */
static int reach(struct hwt_sw_expand *x, struct out *o, uint64_t cur,
		 uint64_t t, bool async, size_t rec, unsigned chunk)
{
	char why[160];
	int64_t n;
	int rc = 0;

	if (async || (t == cur && rep_string(x, cur)))
		return emit(o, t, async);
	if (x->walked >= EXPAND_MAX_TOTAL)
		return -E2BIG;
	n = walk(x, cur, t, why, sizeof(why));
	if (n == -ENOMEM)
		return -ENOMEM;
	if (n < 0) {
		rc = gap(o, hwt_segments_reason(o->segs, "chunk %u, branch "
			"record %zu: 0x%llx cannot be reached from 0x%llx "
			"(%s); the history resumes at 0x%llx", chunk, rec,
			(unsigned long long)t, (unsigned long long)cur, why,
			(unsigned long long)t));
		return rc ? rc : emit(o, t, false);
	}
	for (int64_t i = 0; i < n && !rc; i++)
		rc = emit(o, x->path[i], false);
	return rc ? rc : emit(o, t, false);
}

int hwt_sw_expand_chunk(struct hwt_sw_expand *x, const uint8_t *pay,
			size_t size, const struct hwt_sw_chunk_hdr *h,
			const uint64_t *from, unsigned chunk,
			struct hwt_segments *segs)
{
	struct out o = { .segs = segs, .records = x->records };
	struct hwt_sw_reader r;
	size_t rec = 0;
	bool async = h->flags & HWT_SW_CHUNK_ASYNC;
	int rc;

	if (from)
		rc = reach(x, &o, *from, h->first_pc, async, 0, chunk);
	else
		rc = emit(&o, h->first_pc, async);
	hwt_sw_reader_init(&r, pay, size, h->first_pc);
	while (!rc && hwt_sw_reader_next(&r, &async, NULL) == HWT_SW_NEXT)
		rc = reach(x, &o, o.last, r.pc, async, ++rec, chunk);
	if (rc == -E2BIG)
		rc = gap(&o, hwt_segments_reason(segs, "chunk %u: branch "
			"records %zu and after (0x%llx on) not expanded: the "
			"limit of %llu instructions walked per trace is "
			"reached", chunk, rec, (unsigned long long)(rec ?
			r.pc : h->first_pc), EXPAND_MAX_TOTAL));
	if (!rc && o.open)
		rc = close_piece(&o);
	return rc;
}

void hwt_sw_expand_finish(struct hwt_sw_expand *x, struct hwt_segments *segs)
{
	/* Chunks of one instruction have no records and no buffer. */
	static const uint8_t none[1];
	const uint8_t *p = x->records->p;

	for (size_t i = 0; i < segs->n; i++)
		if (segs->v[i].flags & HWT_SW_SEG_EXPANDED)
			segs->v[i].own.bytes = p ? p + segs->v[i].off : none;
	segs->priv = x->records;
	segs->priv_bytes = x->records->cap;
	segs->priv_free = records_free;
	x->records = NULL;
}
