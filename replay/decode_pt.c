// SPDX-License-Identifier: BSD-2-Clause
/* decode_pt.c - Intel PT through libipt's instruction flow decoder.
 *
 * Segments are PSB-to-PSB ranges of the trace. Each segment is decoded on
 * its own, from a decoder that sees only its bytes: it synchronizes on the
 * segment's PSB and ends where the bytes end. When the packets are used
 * up the decoder can still follow direct control flow, past the point at
 * which the next PSB starts; the instructions from there on belong to the
 * next segment, so the decode stops at the next PSB's IP once the packets
 * are exhausted (as LLDB does). Indexing runs the same decode without
 * keeping anything but the count, so a segment's items are known before
 * anything is shown and a later decode reproduces them exactly.
 *
 * Why the instruction decoder and not the block decoder: memory comes
 * through a read callback into hwt_image (no libipt sections), which
 * leaves the block decoder no cache to exploit; measured on a synthetic
 * 18.8 M instruction trace, pt_blk_next ran at 23-24 M instructions/s,
 * pt_insn_next at 20-21 M/s. The instruction decoder gives each
 * instruction's size and mode, which the stop at the next PSB's IP, the
 * per-instruction timestamps and compatibility-mode code need; blocks are
 * built from its output here. docs/intel-pt.md has the details.
 *
 * Untrusted bytes: every libipt error becomes a gap item carrying libipt's
 * message and the trace offset, and the segment ends there; decoding goes
 * on at the next PSB, which starts the next segment.
 */
#include <errno.h>
#include <intel-pt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "replay-int.h"
#include "array.h"

/* struct hwt_segment.flags: the cpu identity (libipt picks errata by it)
 * and whether seg->pc holds the IP at which the next segment starts. */
#define PT_SEG_STEPPING(f) ((f) & 0xfu)
#define PT_SEG_MODEL(f) (((f) >> 4) & 0xffu)
#define PT_SEG_FAMILY(f) (((f) >> 12) & 0x1ffu)
/* Gap reasons the segment has, joined in seg->reason (see gap()). */
#define PT_SEG_NREASONS(f) (((f) >> 21) & 0x7fu)
#define PT_SEG_NREASONS_MAX 0x7fu
/* The index found that where tracing is first enabled in the segment is
 * where the previous segment's last instruction falls through to. */
#define PT_SEG_CONT 0x10000000u
#define PT_SEG_INTEL 0x20000000u
#define PT_SEG_NEXT_IP 0x80000000u

/* Instructions followed after the packets ran out: a real tail is the
 * straight code up to the next PSB's IP; beyond this it is a loop of
 * direct jumps that no packet will end. */
#define PT_TAIL_MAX 4096u
/* Separates a segment's gap reasons until the index splits them. */
#define PT_REASON_SEP '\x1e'
/* Items per segment: a bound against traces that never end a segment. */
#define PT_SEG_MAX_ITEMS (1u << 24)

struct pt_run {
	const uint8_t *trace;
	const struct hwt_segment *seg;
	struct hwt_image *img;
	/* Index: gap reasons collected, separated by PT_REASON_SEP. */
	char reasons[4096];
	size_t rlen;
	unsigned nreasons;
	/* Decode: the next of the index's reasons, and how many are left. */
	const char *reason;
	unsigned reasons_left;
	struct hwt_blocks *out;      /* NULL: count only */
	uint32_t nitems;
	bool have_blk;
	struct hwt_block blk;
	uint8_t last_len;            /* libipt's size of blk's last insn */
	uint64_t nomap;              /* last address the image lacked */
	/* Where the last instruction falls through to; before the first
	 * instruction of a segment, while indexing, the previous one's. */
	uint64_t next_ip;
	bool have_next;
	bool seen_insn;              /* the segment emitted an instruction */
	bool decided;                /* the first enable was judged */
	bool cont;                   /* index: result for PT_SEG_CONT */
	struct pt_insn_decoder *dec; /* while run_segment runs: for time */
};

/* Per-cpu traces: whether an item at time ts belongs to another thread
 * (or to none we can tell: no TSC yet). */
static bool outside(const struct pt_run *r, uint64_t ts)
{
	const struct hwt_segment *s = r->seg;

	return s->own.pt.tsc_end && (!ts || ts < s->own.pt.tsc_begin ||
				     ts > s->own.pt.tsc_end);
}

static int read_mem(uint8_t *buf, size_t size, const struct pt_asid *asid,
		    uint64_t ip, void *ctx)
{
	struct pt_run *r = ctx;
	size_t n = hwt_image_read(r->img, ip, buf, size);

	if (!n) {
		r->nomap = ip;
		return -pte_nomap;
	}
	return (int)n;
}

static int flush(struct pt_run *r)
{
	if (!r->have_blk)
		return 0;
	r->have_blk = false;
	return hwt_blocks_push(r->out, &r->blk) ? -ENOMEM : 0;
}

/* One instruction. Blocks must be walkable with the image's 64-bit
 * lengths (history.c), so only 64-bit code whose length the image agrees
 * on is merged; anything else is a block of its own, 32-bit code marked
 * so that the image disassembles it in 32-bit mode. */
static int emit(struct pt_run *r, const struct pt_insn *in, uint64_t ts,
		bool async)
{
	enum hwt_insn_class cls;
	uint8_t len;

	/* Another thread's: the next kept instruction does not follow
	 * this block. */
	if (outside(r, ts))
		return flush(r);
	r->nitems++;
	r->next_ip = in->ip + in->size;
	r->have_next = true;
	r->seen_insn = true;
	if (!r->out)
		return 0;
	if (r->have_blk && !async && in->mode == ptem_64bit &&
	    ts == r->blk.timestamp &&
	    !(r->blk.flags & HWT_BLOCK_PTWRITE) &&
	    in->ip == r->blk.end + r->last_len) {
		int rc = hwt_image_insn_info(r->img, r->blk.end, &len, &cls);

		if (rc == -ENOMEM)
			return rc;
		if (!rc && len == r->last_len) {
			r->blk.end = in->ip;
			r->blk.count++;
			r->last_len = in->size;
			return 0;
		}
	}
	if (flush(r))
		return -ENOMEM;
	r->blk = (struct hwt_block){
		.begin = in->ip, .end = in->ip, .count = 1,
		.flags = async ? HWT_BLOCK_ASYNC : 0, .timestamp = ts,
		.isa = in->mode == ptem_32bit ? HWT_ISA_X86_32 : HWT_ISA_DEFAULT,
	};
	r->last_len = in->size;
	r->have_blk = in->mode == ptem_64bit;
	/* Compatibility-mode code stands alone: its lengths differ. */
	if (!r->have_blk)
		return hwt_blocks_push(r->out, &r->blk) ? -ENOMEM : 0;
	return 0;
}

/* A gap item. The index formats each reason and keeps all of a
 * segment's in one string of the index, split into NUL-terminated pieces
 * (index_segment); decoding, which meets the same gaps in the same order,
 * hands out those pieces one after the other. */
static int gap(struct pt_run *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int gap(struct pt_run *r, const char *fmt, ...)
{
	static const char lost[] = "gap (its reason did not fit the index)";
	struct hwt_block b = { .count = 1, .flags = HWT_BLOCK_GAP };
	size_t room = sizeof(r->reasons) - r->rlen;
	uint64_t ts = 0;
	va_list ap;
	int n;

	if (r->seg->own.pt.tsc_end && r->dec &&
	    pt_insn_time(r->dec, &ts, NULL, NULL) < 0)
		ts = 0;
	if (outside(r, ts))
		return 0;
	r->nitems++;
	if (!r->out) {
		if (r->nreasons >= PT_SEG_NREASONS_MAX || room < 2)
			return 0;
		va_start(ap, fmt);
		n = vsnprintf(r->reasons + r->rlen, room - 1, fmt, ap);
		va_end(ap);
		if (n < 0)
			n = 0;
		r->rlen += (size_t)n < room - 1 ? (size_t)n : room - 2;
		r->reasons[r->rlen++] = PT_REASON_SEP;
		r->reasons[r->rlen] = '\0';
		r->nreasons++;
		return 0;
	}
	if (flush(r))
		return -ENOMEM;
	b.reason = lost;
	if (r->reasons_left) {
		b.reason = r->reason;
		r->reason += strlen(r->reason) + 1;
		r->reasons_left--;
	}
	return hwt_blocks_push(r->out, &b) ? -ENOMEM : 0;
}

static void pt_setup(struct pt_config *cfg, uint32_t flags)
{
	pt_config_init(cfg);
	if (flags & PT_SEG_INTEL) {
		cfg->cpu.vendor = pcv_intel;
		cfg->cpu.family = (uint16_t)PT_SEG_FAMILY(flags);
		cfg->cpu.model = (uint8_t)PT_SEG_MODEL(flags);
		cfg->cpu.stepping = (uint8_t)PT_SEG_STEPPING(flags);
		/* Unknown models get no errata workarounds, as in LLDB. */
		if (pt_cpu_errata(&cfg->errata, &cfg->cpu) < 0)
			memset(&cfg->errata, 0, sizeof(cfg->errata));
	}
}

/* Tracing enabled again at ev: a gap item unless the history goes on
 * where it was (nothing ran untraced). Before the segment's first
 * instruction the index decides (it knows the previous segment) and
 * leaves the answer in the flags. */
static int on_enabled(struct pt_run *r, const struct pt_event *ev)
{
	uint64_t ip = ev->variant.enabled.ip;
	bool cont;

	if (r->seen_insn) {
		cont = ev->variant.enabled.resumed || r->next_ip == ip;
	} else if (r->decided) {
		cont = ev->variant.enabled.resumed;
	} else if (r->out) {
		r->decided = true;
		cont = r->seg->flags & PT_SEG_CONT;
	} else {
		/* Nothing traced before: nothing to be discontinuous
		 * with. */
		r->decided = true;
		cont = !r->have_next || r->next_ip == ip;
		r->cont = cont;
	}
	if (!cont && r->have_next)
		return gap(r, "tracing was off from 0x%llx to 0x%llx",
			   (unsigned long long)r->next_ip,
			   (unsigned long long)ip);
	if (!cont)
		return gap(r, "tracing was off before 0x%llx",
			   (unsigned long long)ip);
	return 0;
}

/* An event libipt reports before the next instruction: 0 or what gap()
 * returns. *is_off: tracing is off (an enable then may be a gap);
 * *async: the next instruction is reached asynchronously. */
static int on_event(struct pt_run *r, const struct pt_event *ev,
		    bool *is_off, bool *async)
{
	uint64_t off = 0;

	switch (ev->type) {
	case ptev_enabled:
		if (!*is_off)
			return 0;
		*is_off = false;
		return on_enabled(r, ev);
	case ptev_disabled:
	case ptev_async_disabled:
		*is_off = true;
		return 0;
	case ptev_overflow:
		pt_insn_get_offset(r->dec, &off);
		if (ev->ip_suppressed)
			return gap(r, "trace overflow at offset %llu: the cpu "
				   "dropped trace data (its buffer was full)",
				   (unsigned long long)(r->seg->off + off));
		return gap(r, "trace overflow at offset %llu: the cpu dropped "
			   "trace data (its buffer was full); resumed at "
			   "0x%llx", (unsigned long long)(r->seg->off + off),
			   (unsigned long long)ev->variant.overflow.ip);
	case ptev_async_branch:
		*async = true;
		return 0;
	case ptev_ptwrite:
		/* Bound to the PTWRITE just decoded. */
		if (r->out && r->have_blk &&
		    (ev->ip_suppressed ||
		     ev->variant.ptwrite.ip == r->blk.end)) {
			r->blk.flags |= HWT_BLOCK_PTWRITE;
			r->blk.ptwrite = ev->variant.ptwrite.payload;
		}
		return 0;
	default:
		/* Mode changes show in each instruction's mode; timing,
		 * power and paging events change nothing in the
		 * instruction flow. */
		return 0;
	}
}

/* Decode one segment; r->nitems gets its item count. Returns 0 or
 * -ENOMEM: trace damage is a gap item, never an error. */
static int run_segment(struct pt_run *r)
{
	const struct hwt_segment *seg = r->seg;
	struct pt_insn_decoder *dec;
	struct pt_config cfg;
	uint64_t off = 0, ts = 0, tail = 0;
	bool eos = false, async = false, is_off;
	int status, rc = 0;

	pt_setup(&cfg, seg->flags);
	cfg.begin = (uint8_t *)r->trace + seg->off;
	cfg.end = cfg.begin + seg->len;
	dec = pt_insn_alloc_decoder(&cfg);
	if (!dec)
		return -ENOMEM;
	if (pt_image_set_callback(pt_insn_get_image(dec), read_mem, r) < 0) {
		pt_insn_free_decoder(dec);
		return -ENOMEM;
	}
	r->dec = dec;
	status = pt_insn_sync_forward(dec);
	/* Tracing off at the PSB (no IP in it): see the enabled event. */
	is_off = status >= 0 && (status & pts_ip_suppressed);
	while (status >= 0 && r->nitems < PT_SEG_MAX_ITEMS) {
		struct pt_insn in;

		while (status & pts_event_pending) {
			struct pt_event ev;

			status = pt_insn_event(dec, &ev, sizeof(ev));
			if (status < 0)
				break;
			if ((rc = on_event(r, &ev, &is_off, &async)))
				goto out;
		}
		if (status < 0)
			break;
		eos = status & pts_eos;
		memset(&in, 0, sizeof(in));
		status = pt_insn_next(dec, &in, sizeof(in));
		/* With an error, libipt still gives the instruction it could
		 * not proceed from when it has one (as ptxed shows it). */
		if (status < 0 && in.iclass == ptic_error)
			continue;
		if (eos) {
			/* Past the packets: the next segment starts at its
			 * PSB's IP. */
			if ((seg->flags & PT_SEG_NEXT_IP) && in.ip == seg->pc)
				break;
			if (++tail > PT_TAIL_MAX)
				break;
		}
		if (pt_insn_time(dec, &ts, NULL, NULL) < 0)
			ts = 0;
		rc = emit(r, &in, ts, async);
		async = false;
		if (rc)
			goto out;
	}
	if (status < 0 && status != -pte_eos) {
		pt_insn_get_offset(dec, &off);
		if (status == -pte_nomap)
			rc = gap(r, "no code at 0x%llx (not in any module of the "
				 "bundle; check the modules' loadAddress), "
				 "decoding stopped at trace offset %llu until "
				 "the next PSB", (unsigned long long)r->nomap,
				 (unsigned long long)(seg->off + off));
		else
			rc = gap(r, "trace decode error at offset %llu: %s; "
				 "decoding resumes at the next PSB",
				 (unsigned long long)(seg->off + off),
				 pt_errstr(pt_errcode(status)));
	} else if (r->nitems >= PT_SEG_MAX_ITEMS) {
		rc = gap(r, "segment at offset %llu holds more than %u items; "
			 "the rest up to the next PSB is skipped",
			 (unsigned long long)seg->off, PT_SEG_MAX_ITEMS);
	}
out:
	r->dec = NULL;
	pt_insn_free_decoder(dec);
	if (!rc && r->out)
		rc = flush(r);
	return rc;
}

/* Where each PSB is. */
static int find_psbs(const uint8_t *trace, size_t size, uint64_t **out,
		     size_t *n)
{
	struct pt_packet_decoder *pkt;
	struct pt_config cfg;
	uint64_t *v = NULL, off;
	size_t cap = 0;

	*n = 0;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)trace;
	cfg.end = (uint8_t *)trace + size;
	pkt = pt_pkt_alloc_decoder(&cfg);
	if (!pkt)
		return -ENOMEM;
	while (pt_pkt_sync_forward(pkt) >= 0 &&
	       pt_pkt_get_sync_offset(pkt, &off) >= 0) {
		if (*n && off <= v[*n - 1])
			break;
		if (HWT_ARRAY_RESERVE(v, cap, *n + 1, 64)) {
			free(v);
			pt_pkt_free_decoder(pkt);
			return -ENOMEM;
		}
		v[(*n)++] = off;
	}
	pt_pkt_free_decoder(pkt);
	*out = v;
	return 0;
}

static uint32_t cpu_flags(const struct hwt_cpu_info *cpu)
{
	if (!cpu || strcmp(cpu->vendor, "GenuineIntel") ||
	    cpu->family < 0 || cpu->family > 0x1ff || cpu->model < 0 ||
	    cpu->model > 0xff || cpu->stepping < 0 || cpu->stepping > 0xf)
		return 0;
	return PT_SEG_INTEL | (uint32_t)cpu->family << 12 |
		(uint32_t)cpu->model << 4 | (uint32_t)cpu->stepping;
}

/* What the index carries from segment to segment: where the last
 * instruction kept falls through to, and whether a per-cpu piece kept
 * anything. */
struct pt_cont {
	bool have_next, kept;
	uint64_t next_ip;
};

/* Count segment s's items by decoding it, and keep its gap reasons. */
static int index_segment(const uint8_t *trace, struct hwt_image *img,
			 struct hwt_segments *segs, struct hwt_segment *s,
			 struct pt_cont *c)
{
	struct pt_run *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	*r = (struct pt_run){ .trace = trace, .seg = s, .img = img,
			      .have_next = c->have_next,
			      .next_ip = c->next_ip };
	rc = run_segment(r);
	if (r->cont)
		s->flags |= PT_SEG_CONT;
	c->have_next = r->have_next;
	c->next_ip = r->next_ip;
	c->kept |= r->nitems > 0;
	if (!rc && r->nreasons) {
		char *str;

		r->reasons[r->rlen - 1] = '\0';
		s->reason = hwt_segments_reason(segs, "%s", r->reasons);
		if (!s->reason)
			rc = -ENOMEM;
		/* The index owns the string: split it in place. */
		for (str = (char *)s->reason; !rc && *str; str++)
			if (*str == PT_REASON_SEP)
				*str = '\0';
		s->flags |= (uint32_t)r->nreasons << 21;
	}
	s->nitems = r->nitems;
	free(r);
	if (!rc)
		rc = hwt_segments_push(segs, s);
	return rc;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* The IP (when *has_ip) and TSC (0: none) of the PSB+ at off. */
static uint64_t psb_info(struct pt_query_decoder *qry, uint64_t off,
			 uint64_t *ip, bool *has_ip)
{
	uint64_t tsc = 0;
	int st = pt_qry_sync_set(qry, ip, off);

	*has_ip = st >= 0 && !(st & pts_ip_suppressed);
	if (st < 0 || pt_qry_time(qry, &tsc, NULL, NULL) < 0)
		tsc = 0;
	return tsc;
}

/* Index the trace bytes [base, base + size) of trace; with a window
 * (tsc_end not 0), only what ran in it, skipping the PSB segments that
 * lie wholly outside it. */
static int index_range(const uint8_t *trace, uint64_t base, size_t size,
		       uint32_t flags, uint64_t tsc_begin, uint64_t tsc_end,
		       struct hwt_image *img, struct hwt_segments *segs,
		       struct pt_cont *c)
{
	const uint8_t *t = trace + base;
	struct pt_query_decoder *qry = NULL;
	uint64_t *psb = NULL, ip, tsc = 0, next_tsc;
	size_t npsb = 0;
	struct pt_config cfg;
	bool has_ip;
	int rc;

	/* No bytes, no items (libipt takes no empty buffer). */
	if (!size)
		return 0;
	rc = find_psbs(t, size, &psb, &npsb);
	if (!rc && npsb) {
		pt_setup(&cfg, flags);
		cfg.begin = (uint8_t *)t;
		cfg.end = (uint8_t *)t + size;
		qry = pt_qry_alloc_decoder(&cfg);
		if (!qry)
			rc = -ENOMEM;
		else
			tsc = psb_info(qry, psb[0], &ip, &has_ip);
	}
	/* Bytes before the first PSB cannot be decoded: nothing there says
	 * where execution was. Padding (zeros) is no loss. Per-cpu pieces
	 * leave it out: it is no one thread's. */
	if (!rc && !tsc_end && (npsb ? psb[0] : size) &&
	    !all_zero(t, npsb ? psb[0] : size)) {
		struct hwt_segment g = { .nitems = 1 };

		g.reason = hwt_segments_reason(segs, "%llu bytes of trace "
			"before %s cannot be decoded (no PSB to synchronize "
			"on)", (unsigned long long)(npsb ? psb[0] : size),
			npsb ? "the first PSB" : "the end: the trace has no PSB");
		rc = g.reason ? hwt_segments_push(segs, &g) : -ENOMEM;
	}
	for (size_t i = 0; !rc && i < npsb; i++) {
		struct hwt_segment s = {
			.off = base + psb[i],
			.len = (i + 1 < npsb ? psb[i + 1] : size) - psb[i],
			.flags = flags,
			.own.pt = { tsc_begin, tsc_end },
		};

		next_tsc = 0;
		if (i + 1 < npsb) {
			next_tsc = psb_info(qry, psb[i + 1], &ip, &has_ip);
			if (has_ip) {
				s.pc = ip;
				s.flags |= PT_SEG_NEXT_IP;
			}
		}
		/* A segment's times run from its PSB's TSC to the next
		 * one's: outside the window, it has nothing of the thread. */
		if (tsc_end && ((next_tsc && next_tsc < tsc_begin) ||
				tsc > tsc_end)) {
			tsc = next_tsc;
			continue;
		}
		tsc = next_tsc;
		rc = index_segment(trace, img, segs, &s, c);
	}
	pt_qry_free_decoder(qry);
	free(psb);
	return rc;
}

/* Per-cpu: the thread's pieces one after the other, as LLDB joins a
 * thread's executions. Where a context switch between two pieces is
 * known (a switch-out, then a switch-in), the thread simply went on; where
 * the records lack one of them (the trace began or ended, or a record is
 * missing), what the thread did between is unknown and a gap says so. */
static int index_pieces(const uint8_t *trace, size_t size, uint32_t flags,
			struct hwt_image *img, struct hwt_segments *segs)
{
	const struct hwt_pt_piece *prev = NULL;

	for (size_t i = 0; i < segs->in.npieces; i++) {
		const struct hwt_pt_piece *p = &segs->in.pieces[i];
		struct pt_cont c = { 0 };
		size_t at = segs->n;
		struct hwt_segment g = { .nitems = 1 };
		int rc;

		if (p->off > size || p->len > size - p->off)
			return -EINVAL;
		/* Ended before any TSC the trace can hold. */
		if (!p->tsc_end)
			continue;
		rc = index_range(trace, p->off, p->len, flags,
				 p->tsc_begin ? p->tsc_begin : 1,
				 p->tsc_end, img, segs, &c);
		if (rc)
			return rc;
		if (!c.kept)
			continue;
		if (prev && (!prev->end_known || !p->begin_known)) {
			g.reason = hwt_segments_reason(segs, "the thread's "
				"trace on cpu %lld up to tsc %llu and on cpu "
				"%lld from tsc %llu may not be contiguous: the "
				"context-switch records lack its switch-%s",
				(long long)prev->cpu,
				(unsigned long long)prev->tsc_end,
				(long long)p->cpu,
				(unsigned long long)p->tsc_begin,
				prev->end_known ? "in" : "out");
			if (!g.reason || hwt_segments_push(segs, &g))
				return -ENOMEM;
			/* Before the piece's segments. */
			memmove(&segs->v[at + 1], &segs->v[at],
				(segs->n - 1 - at) * sizeof(*segs->v));
			segs->v[at] = g;
		}
		prev = p;
	}
	return 0;
}

static int pt_index(const uint8_t *trace, size_t size, uint64_t lost_insns,
		    uint64_t end_pc, struct hwt_image *img,
		    struct hwt_segments *segs, struct hwt_err *err)
{
	uint32_t flags = cpu_flags(segs->in.cpu);
	struct pt_cont c = { 0 };
	int rc;

	if (segs->in.cpu && strcmp(segs->in.cpu->vendor, "GenuineIntel"))
		return hwt_err_set(err, ENOTSUP, "an Intel PT trace needs an "
				   "Intel cpu, but the bundle says the cpu is "
				   "'%s'; give cpuInfo.vendor GenuineIntel",
				   segs->in.cpu->vendor);
	if (segs->in.pieces)
		rc = index_pieces(trace, size, flags, img, segs);
	else
		rc = index_range(trace, 0, size, flags, 0, 0, img, segs, &c);
	if (rc == -EINVAL)
		return hwt_err_set(err, EINVAL, "a per-cpu piece lies outside "
				   "the %zu-byte trace", size);
	if (rc)
		return hwt_err_set(err, ENOMEM, "out of memory indexing a "
				   "%zu-byte Intel PT trace", size);
	return 0;
}

static int pt_decode(const uint8_t *trace, size_t size,
		     const struct hwt_segment *seg, struct hwt_image *img,
		     struct hwt_blocks *out, struct hwt_err *err)
{
	struct pt_run *r;
	int rc;

	if (seg->off > size || seg->len > size - seg->off)
		return hwt_err_set(err, EIO, "Intel PT segment at offset %llu "
				   "lies outside the %zu-byte trace",
				   (unsigned long long)seg->off, size);
	/* Bytes before the first PSB: a gap segment of no bytes. */
	if (!seg->len) {
		struct hwt_block b = { .count = 1, .flags = HWT_BLOCK_GAP,
				       .reason = seg->reason };

		return hwt_blocks_push(out, &b) ?
			hwt_err_set(err, ENOMEM, "out of memory") : 0;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return hwt_err_set(err, ENOMEM, "out of memory");
	*r = (struct pt_run){
		.trace = trace, .seg = seg, .img = img, .out = out,
		.reason = seg->reason,
		.reasons_left = seg->reason ? PT_SEG_NREASONS(seg->flags) : 0,
	};
	rc = run_segment(r);
	if (!rc && r->nitems != seg->nitems)
		rc = hwt_err_set(err, EIO, "Intel PT segment at offset %llu "
				 "decoded to %u items, %u when indexed; the "
				 "trace and the image must not change while "
				 "a history is open",
				 (unsigned long long)seg->off, r->nitems,
				 seg->nitems);
	else if (rc)
		rc = hwt_err_set(err, ENOMEM, "out of memory decoding the "
				 "Intel PT trace");
	free(r);
	return rc;
}

const struct hwt_decoder hwt_decoder_pt = {
	.format = HWT_BUNDLE_TYPE_PT,
	.index_image = pt_index,
	.decode = pt_decode,
};
