// SPDX-License-Identifier: BSD-2-Clause
/* pt_encode.c - write any x86-64 history as an Intel PT packet stream.
 *
 * The packets come from libipt's encoder; which packets is decided here
 * from each instruction's class and the address of the item after it, the
 * way the hardware would have traced the same flow (user space only):
 *
 *   start          PSB, [TSC,] PSBEND, MODE.EXEC 64-bit, TIP.PGE(first insn)
 *   cond. branch   one TNT bit: taken unless the next item falls through
 *   ret, indirect  TIP(next); returns are never compressed, so decoders
 *   jump or call   need no call stack to follow the stream
 *   direct jump    nothing: the decoder reads the target from the code
 *   or call
 *   syscall, int   TIP(next): a far transfer whose kernel part is not
 *                  traced. (A user-only hardware trace has TIP.PGD and
 *                  TIP.PGE there; decoders show that pair as tracing
 *                  being off, a gap the history does not have.)
 *   async (signal) FUP + TIP(handler)
 *   gap            FUP + TIP.PGD, then TIP.PGE at the next instruction
 *   every ~N bytes PSB, [TSC,] MODE.EXEC, FUP(next insn), PSBEND, so
 *                  decoders can start anywhere and skip to the end quickly
 *
 * With a TSC given (opts->tsc), every PSB+ carries it: per-cpu traces are
 * split into threads by the time of each PSB, and the whole stream is one
 * thread's stretch on a cpu at that time.
 *   end            FUP + TIP.PGD at the last item's address
 *
 * A FUP names the instruction the event happens before, so the one that
 * ran before it must be finished first: its outcome is encoded (a branch
 * the history left by an asynchronous transfer is encoded as not taken or
 * as going to the next instruction) and the FUP names where that leads.
 * Anything the flow cannot express otherwise - a direct branch not going
 * to its target, the same instruction again (a rep iteration under a
 * single-stepping recorder) - becomes such an asynchronous transfer too,
 * so the decoded instructions are the history's, one for one.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

#include "hwt-replay.h"
#include "replay-int.h"
#include "array.h"

#define PT_BUF 65536u
#define PT_TNT_MAX 47u           /* bits of a TNT-64 packet */
struct enc {
	struct pt_encoder *e;
	struct pt_config cfg;
	uint8_t buf[PT_BUF];
	uint8_t *out;            /* the whole stream so far */
	size_t n, cap;
	uint64_t tnt;            /* pending TNT bits, oldest highest */
	unsigned ntnt;
	size_t psb_period;
	uint64_t psb_at;         /* stream offset of the last PSB */
	uint64_t tsc;            /* in every PSB+; 0: none */
	struct hwt_image *img;
};

/* Move the encoder's buffer to out and rewind it. */
static int drain(struct enc *x)
{
	uint64_t off = 0;

	if (pt_enc_get_offset(x->e, &off) < 0)
		return -EIO;
	if (HWT_ARRAY_RESERVE(x->out, x->cap, x->n + off, 4 * PT_BUF))
		return -ENOMEM;
	memcpy(x->out + x->n, x->buf, off);
	x->n += off;
	return pt_enc_sync_set(x->e, 0) < 0 ? -EIO : 0;
}

static int put(struct enc *x, const struct pt_packet *p)
{
	uint64_t off = 0;
	int rc;

	/* The longest packet is 16 bytes (PSB). */
	if (pt_enc_get_offset(x->e, &off) < 0)
		return -EIO;
	if (off + 32 > PT_BUF && (rc = drain(x)))
		return rc;
	return pt_enc_next(x->e, p) < 0 ? -EIO : 0;
}

static int flush_tnt(struct enc *x)
{
	struct pt_packet p = { .type = x->ntnt > 6 ? ppt_tnt_64 : ppt_tnt_8 };

	if (!x->ntnt)
		return 0;
	p.payload.tnt.bit_size = (uint8_t)x->ntnt;
	p.payload.tnt.payload = x->tnt;
	x->tnt = 0;
	x->ntnt = 0;
	return put(x, &p);
}

static int tnt_bit(struct enc *x, bool taken)
{
	x->tnt = x->tnt << 1 | taken;
	return ++x->ntnt == PT_TNT_MAX ? flush_tnt(x) : 0;
}

/* A packet with an IP (TIP, TIP.PGE, TIP.PGD, FUP); ip_none: suppressed.
 * Pending TNT bits belong to earlier branches and go first. */
static int put_ip(struct enc *x, enum pt_packet_type type, uint64_t ip,
		  bool ip_none)
{
	struct pt_packet p = { .type = type };
	int rc = flush_tnt(x);

	if (rc)
		return rc;
	/* Canonical user addresses fit the 6-byte sign-extended form. */
	if (ip_none)
		p.payload.ip.ipc = pt_ipc_suppressed;
	else if (ip < (1ull << 47) || ip >= 0xffff800000000000ull)
		p.payload.ip.ipc = pt_ipc_sext_48;
	else
		p.payload.ip.ipc = pt_ipc_full;
	p.payload.ip.ip = ip;
	return put(x, &p);
}

static int put_mode_exec(struct enc *x)
{
	struct pt_packet p = { .type = ppt_mode };

	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	return put(x, &p);
}

/* Bytes of stream written so far. */
static uint64_t stream_offset(const struct enc *x)
{
	uint64_t off = 0;

	pt_enc_get_offset(x->e, &off);
	return x->n + off;
}

/* PSB+; with_ip: tracing is on and next is the next instruction. */
static int put_psb(struct enc *x, bool with_ip, uint64_t next)
{
	struct pt_packet psb = { .type = ppt_psb }, end = { .type = ppt_psbend };
	int rc = flush_tnt(x);

	x->psb_at = stream_offset(x);
	if (!rc)
		rc = put(x, &psb);
	if (!rc && x->tsc) {
		struct pt_packet tsc = { .type = ppt_tsc };

		tsc.payload.tsc.tsc = x->tsc;
		rc = put(x, &tsc);
	}
	if (!rc && with_ip)
		rc = put_mode_exec(x);
	if (!rc && with_ip)
		rc = put_ip(x, ppt_fup, next, false);
	return rc ? rc : put(x, &end);
}

static int enable(struct enc *x, uint64_t ip)
{
	int rc = put_mode_exec(x);

	return rc ? rc : put_ip(x, ppt_tip_pge, ip, false);
}

/* The target of the direct branch at addr, or 0 for an indirect one. */
static uint64_t direct_target(struct enc *x, uint64_t addr)
{
	struct hwt_insn_info in;

	return !hwt_image_insn_detail(x->img, addr, HWT_ISA_X86_64, &in) &&
		in.direct ? in.target : 0;
}

/* Encode how insn ends when it goes on to next in the normal way; false
 * when this class of instruction cannot get there so. */
static int natural(struct enc *x, const struct hwt_item *insn, uint64_t next,
		   bool *ok)
{
	uint64_t fall = insn->addr + insn->len, t;

	*ok = true;
	switch (insn->cls) {
	case HWT_INSN_CJUMP:
		t = direct_target(x, insn->addr);
		if (next == fall)
			return tnt_bit(x, false);
		if (next == t)
			return tnt_bit(x, true);
		break;
	case HWT_INSN_RET:
		return put_ip(x, ppt_tip, next, false);
	case HWT_INSN_CALL:
	case HWT_INSN_JUMP:
		t = direct_target(x, insn->addr);
		if (!t)
			return put_ip(x, ppt_tip, next, false);
		if (next == t)
			return 0;
		break;
	case HWT_INSN_SYSCALL:
		return put_ip(x, ppt_tip, next, false);
	default:
		if (next == fall)
			return 0;
		break;
	}
	*ok = false;
	return 0;
}

/* Finish insn as if it ran and was then interrupted; *after is where the
 * decoder's next instruction is. */
static int finish(struct enc *x, const struct hwt_item *insn, uint64_t *after)
{
	uint64_t fall = insn->addr + insn->len, t;

	*after = fall;
	switch (insn->cls) {
	case HWT_INSN_CJUMP:
		return tnt_bit(x, false);
	case HWT_INSN_RET:
	case HWT_INSN_SYSCALL:
		return put_ip(x, ppt_tip, fall, false);
	case HWT_INSN_CALL:
	case HWT_INSN_JUMP:
		t = direct_target(x, insn->addr);
		if (!t)
			return put_ip(x, ppt_tip, fall, false);
		*after = t;
		return 0;
	default:
		return 0;
	}
}

/* The transfer from insn (encoded as running) to the instruction next. */
static int transfer(struct enc *x, const struct hwt_item *insn,
		    const struct hwt_item *next)
{
	uint64_t after;
	bool ok = false;
	int rc;

	if (!(next->flags & HWT_ITEM_ASYNC)) {
		rc = natural(x, insn, next->addr, &ok);
		if (rc || ok)
			return rc;
	}
	rc = finish(x, insn, &after);
	if (!rc)
		rc = put_ip(x, ppt_fup, after, false);
	return rc ? rc : put_ip(x, ppt_tip, next->addr, false);
}

static int encode(struct enc *x, struct hwt_history *h, uint64_t first,
		  uint64_t last, const struct hwt_pt_encode_opts *o,
		  struct hwt_err *err)
{
	struct hwt_item prev = { 0 }, it;
	bool on = false, gap = false;
	uint64_t after;
	int rc;

	rc = put_psb(x, false, 0);
	for (uint64_t i = first; i <= last && !rc; i++) {
		if (o->progress && !((i - first) & 0xffff))
			o->progress(o->progress_ctx, i - first, last - first + 1);
		rc = hwt_history_get(h, i, &it, err);
		if (rc)
			return rc;
		if (it.kind == HWT_ITEM_GAP) {
			gap = true;
			continue;
		}
		if (it.isa != HWT_ISA_DEFAULT && it.isa != HWT_ISA_X86_64)
			return hwt_err_set(err, EINVAL, "item %llu is not x86-64 "
					   "code; Intel PT describes only x86 "
					   "histories", (unsigned long long)i);
		if (!on) {
			rc = enable(x, it.addr);
		} else if (gap || !prev.len) {
			/* Tracing stops after prev, as far as the code
			 * lets the decoder follow it. */
			rc = prev.len ? finish(x, &prev, &after) : 0;
			if (!rc)
				rc = put_ip(x, ppt_fup, prev.len ? after :
					    prev.addr, false);
			if (!rc)
				rc = put_ip(x, ppt_tip_pgd, 0, true);
			if (!rc)
				rc = enable(x, it.addr);
		} else {
			rc = transfer(x, &prev, &it);
		}
		if (!rc && stream_offset(x) - x->psb_at >= x->psb_period)
			rc = put_psb(x, true, it.addr);
		prev = it;
		on = true;
		gap = false;
	}
	if (!rc && on) {
		rc = put_ip(x, ppt_fup, prev.addr, false);
		if (!rc)
			rc = put_ip(x, ppt_tip_pgd, 0, true);
	}
	if (!rc)
		rc = drain(x);
	if (rc == -ENOMEM)
		return hwt_err_set(err, ENOMEM, "out of memory encoding Intel "
				   "PT");
	if (rc)
		return hwt_err_set(err, EIO, "libipt refused a packet while "
				   "encoding item %llu; this is a bug in "
				   "hwt_pt_encode", (unsigned long long)
				   (prev.index ? prev.index : first));
	return 0;
}

struct hwt_cpu_info hwt_pt_stream_cpu(const struct hwt_cpu_info *recorded)
{
	static const struct hwt_cpu_info skylake_sp = {
		.vendor = "GenuineIntel", .family = 6, .model = 0x55,
		.stepping = 4,
	};
	struct pt_cpu cpu = { .vendor = pcv_intel };
	struct pt_errata errata;

	if (!recorded || strcmp(recorded->vendor, "GenuineIntel") ||
	    recorded->family <= 0 || recorded->family >= 256 ||
	    recorded->model < 0 || recorded->model >= 256 ||
	    recorded->stepping < 0 || recorded->stepping >= 16)
		return skylake_sp;
	cpu.family = (uint16_t)recorded->family;
	cpu.model = (uint8_t)recorded->model;
	cpu.stepping = (uint8_t)recorded->stepping;
	/* GDB 13 refuses a stream whose cpu its libipt cannot name
	 * ("Failed to configure the Intel Processor Trace decoder"), and
	 * so does the encoder: newer cpus than libipt's list get the
	 * fallback. */
	if (pt_cpu_errata(&errata, &cpu) < 0)
		return skylake_sp;
	return *recorded;
}

int hwt_pt_encode(struct hwt_history *h, struct hwt_image *img,
		  uint64_t first, uint64_t last,
		  const struct hwt_pt_encode_opts *opts, uint8_t **out,
		  size_t *size, struct hwt_err *err)
{
	struct hwt_pt_encode_opts o;
	struct enc *x;
	int rc;

	if ((rc = hwt_history_check_range(h, &first, &last, err)) < 0)
		return rc;
	if ((rc = hwt_opts_copy(&o, sizeof(o), opts, opts ? opts->sz : 0,
				offsetof(struct hwt_pt_encode_opts, cpu),
				"hwt_pt_encode_opts", err)) < 0)
		return rc;
	if (o.cpu.vendor[0] && strcmp(o.cpu.vendor, "GenuineIntel"))
		return hwt_err_set(err, EINVAL, "an Intel PT stream needs an "
				   "Intel cpu; got vendor '%s' (give "
				   "GenuineIntel or leave it empty)",
				   o.cpu.vendor);
	/* A TSC packet holds the counter's low 7 bytes. */
	if (o.tsc >= 1ull << 56)
		return hwt_err_set(err, EINVAL, "TSC %llu does not fit the 56 "
				   "bits of an Intel PT TSC packet",
				   (unsigned long long)o.tsc);
	x = calloc(1, sizeof(*x));
	if (!x)
		return hwt_err_set(err, ENOMEM, "out of memory");
	x->img = img;
	x->psb_period = o.psb_period ? o.psb_period : 4096;
	x->tsc = o.tsc;
	x->cfg.size = sizeof(x->cfg);
	x->cfg.begin = x->buf;
	x->cfg.end = x->buf + sizeof(x->buf);
	x->cfg.cpu.vendor = pcv_intel;
	/* Without a cpu, one without encoder-relevant errata (Skylake-SP). */
	x->cfg.cpu.family = o.cpu.vendor[0] ? (uint16_t)o.cpu.family : 6;
	x->cfg.cpu.model = o.cpu.vendor[0] ? (uint8_t)o.cpu.model : 0x55;
	x->cfg.cpu.stepping = o.cpu.vendor[0] ? (uint8_t)o.cpu.stepping : 4;
	rc = pt_cpu_errata(&x->cfg.errata, &x->cfg.cpu) < 0 ? -EINVAL : 0;
	if (!rc && !(x->e = pt_alloc_encoder(&x->cfg)))
		rc = -ENOMEM;
	if (rc)
		rc = hwt_err_set(err, -rc, "cannot set up the Intel PT encoder "
				 "(out of memory, or libipt does not know cpu "
				 "family %d model %d)", x->cfg.cpu.family,
				 x->cfg.cpu.model);
	else
		rc = encode(x, h, first, last, &o, err);
	if (!rc && o.progress)
		o.progress(o.progress_ctx, last - first + 1, last - first + 1);
	if (!rc) {
		*out = x->out;
		*size = x->n;
		x->out = NULL;
	}
	pt_free_encoder(x->e);
	free(x->out);
	free(x);
	return rc;
}
