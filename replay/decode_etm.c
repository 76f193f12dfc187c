// SPDX-License-Identifier: BSD-2-Clause
/* decode_etm.c - Arm CoreSight instruction trace (ETMv3, PTM/PFT, ETMv4,
 * ETE) through OpenCSD's C API.
 *
 * How many instructions a trace range holds depends on the code (OpenCSD
 * walks the program image from waypoint to waypoint), so items cannot be
 * counted from the trace bytes alone. Snapshot traces are small (kilobytes
 * to a few megabytes), so indexing decodes the thread's source once, with
 * the image, and keeps the resulting blocks; segments are runs of those
 * blocks, and decoding a segment copies them out. docs/coresight.md says
 * why this beats cutting the trace at A-SYNC points.
 *
 * OpenCSD runs in a child process (etm_child.c): it crashes on some
 * damaged trace, and that must cost the history its tail, not the caller
 * its life. The child sends each element it cares about as a record; this
 * file's parent side checks the records and makes the blocks, so the
 * mapping below and every check of OpenCSD's output happen in the caller.
 *
 * One thread is one trace source (trace ID). A formatted buffer holds
 * frames of several IDs: the decode tree gets only this source's decoder,
 * and OpenCSD's deformatter drops the other IDs' bytes.
 *
 * Element mapping:
 *   INSTR_RANGE               one block, in the range's instruction set;
 *                             end = address of its last instruction
 *   EXCEPTION                 the next block is reached asynchronously
 *                             (like signal delivery)
 *   NO_SYNC, TRACE_ON, ADDR_NACC, ADDR_UNKNOWN, I_RANGE_NOPATH, decoder
 *                             errors: one gap item per run of them (the
 *                             start-of-trace NO_SYNC / TRACE_ON are not
 *                             gaps: nothing is missing before the start)
 *   EXCEPTION_RET             nothing: the range before ends with the
 *                             return instruction, whose class says so
 *   everything else           ignored (timestamps, contexts, events)
 *   the child's death         a last gap item saying so (etm_child.h)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <opencsd/c_api/opencsd_c_api.h>

#include "decode.h"
#include "etm_child.h"
#include "replay-int.h"

/* Items per segment; blocks are never split. */
#define CS_SEG_ITEMS 4096u
/* Bytes handed to OpenCSD per call: a bound on one call's work. */
#define CS_FEED 4096u
/* Decoding at open keeps every block (one byte of ETMv4 atoms can make
 * several ranges): bound the trace so the index stays bounded too. */
#define CS_MAX_TRACE (64u << 20)

/* Parent side: the blocks being built from the child's records. */
struct cs_ctx {
	const struct hwt_bundle_cs_source *src;
	struct hwt_segments *segs;
	struct hwt_blocks *out;
	bool started;            /* a range or gap has been produced */
	bool async;              /* an exception precedes the next range */
	bool nomem;
	/* the run of gap elements not yet turned into a gap item */
	unsigned gap_n;
	char gap_first[128];
};

/* Child side: what the decode needs, all inherited through fork. */
struct cs_job {
	const struct hwt_bundle_cs_source *src;
	const uint8_t *trace;
	size_t size;
	struct hwt_image *img;
	struct hwt_etm_out *out;
};

static enum hwt_isa isa_of(uint32_t isa)
{
	switch (isa) {
	case ocsd_isa_aarch64:
		return HWT_ISA_A64;
	case ocsd_isa_thumb2:
		return HWT_ISA_T32;
	case ocsd_isa_arm:
		return HWT_ISA_A32;
	default:
		return HWT_ISA_DEFAULT;
	}
}

static void gap_note(struct cs_ctx *c, const char *fmt, unsigned long long v)
{
	if (c->gap_n++ == 0)
		snprintf(c->gap_first, sizeof(c->gap_first), fmt, v);
}

static void gap_push(struct cs_ctx *c, const char *reason)
{
	struct hwt_block blk = { .count = 1, .flags = HWT_BLOCK_GAP,
				 .reason = reason };

	if (!blk.reason || hwt_blocks_push(c->out, &blk))
		c->nomem = true;
	c->started = true;
}

static void gap_flush(struct cs_ctx *c)
{
	if (!c->gap_n)
		return;
	gap_push(c, c->gap_n == 1 ?
		 hwt_segments_reason(c->segs, "%s", c->gap_first) :
		 hwt_segments_reason(c->segs, "%s, and %u more trace "
				     "discontinuities", c->gap_first,
				     c->gap_n - 1));
	c->gap_n = 0;
}

static void add_range(struct cs_ctx *c, const struct hwt_etm_rec *r)
{
	struct hwt_block blk;
	uint64_t last = r->en - r->sz;

	/* A range OpenCSD could not have produced from real code is
	 * corrupt trace, not instructions. */
	if (!r->n || r->en <= r->st || last < r->st ||
	    r->n > r->en - r->st) {
		gap_note(c, "inconsistent instruction range at 0x%llx",
			 (unsigned long long)r->st);
		return;
	}
	gap_flush(c);
	blk = (struct hwt_block){
		.begin = r->st, .end = last, .count = r->n,
		.flags = c->async ? HWT_BLOCK_ASYNC : 0, .isa = isa_of(r->isa),
	};
	c->async = false;
	c->started = true;
	if (hwt_blocks_push(c->out, &blk))
		c->nomem = true;
}

static const char *protocol_name(enum hwt_cs_protocol p)
{
	switch (p) {
	case HWT_CS_ETMV3: return "ETMv3";
	case HWT_CS_PTM: return "PTM";
	case HWT_CS_ETMV4: return "ETMv4";
	case HWT_CS_ETE: return "ETE";
	case HWT_CS_STM: return "STM";
	case HWT_CS_ITM: return "ITM";
	default: return "unknown";
	}
}

/* One record from the child. Anything OpenCSD cannot have sent is
 * -EPROTO, which ends the history there with a gap. */
static int on_rec(void *ctx, const struct hwt_etm_rec *r, struct hwt_err *err)
{
	struct cs_ctx *c = ctx;
	char msg[128];

	switch (r->type) {
	case HWT_ETM_REC_FEED:
		break;
	case HWT_ETM_REC_RANGE:
		if (r->isa > ocsd_isa_unknown)
			return -EPROTO;
		add_range(c, r);
		break;
	case HWT_ETM_REC_NO_SYNC:
		if (c->started)
			gap_note(c, "trace lost synchronisation at byte %llu",
				 (unsigned long long)r->at);
		break;
	case HWT_ETM_REC_TRACE_ON:
		if (r->n > 1)
			return -EPROTO;
		if (c->started)
			gap_note(c, r->n ?
				 "trace overflow: instructions lost before "
				 "byte %llu" :
				 "trace was off (filtered or halted) before "
				 "byte %llu", (unsigned long long)r->at);
		break;
	case HWT_ETM_REC_ADDR_NACC:
		gap_note(c, "no code at 0x%llx in the snapshot's memory",
			 (unsigned long long)r->st);
		break;
	case HWT_ETM_REC_ADDR_UNKNOWN:
		gap_note(c, "address unknown at byte %llu",
			 (unsigned long long)r->at);
		break;
	case HWT_ETM_REC_NOPATH:
		gap_note(c, "instructions from 0x%llx with no known path",
			 (unsigned long long)r->st);
		break;
	case HWT_ETM_REC_EXCEPTION:
		c->async = true;
		break;
	case HWT_ETM_REC_GAVE_UP:
		gap_note(c, "corrupt trace: the decoder gave up at byte %llu",
			 (unsigned long long)r->at);
		break;
	case HWT_ETM_REC_CONFIG:
		if (r->n == OCSD_OK || r->n >= OCSD_ERR_LAST)
			return -EPROTO;
		ocsd_err_str((ocsd_err_t)r->n, msg, sizeof(msg));
		return hwt_err_set(err, EINVAL, "%s: OpenCSD refuses the %s "
				   "configuration of trace ID 0x%x: %s",
				   c->src->name,
				   protocol_name(c->src->protocol),
				   c->src->trace_id, msg);
	default:
		return -EPROTO;
	}
	if (c->nomem)
		return hwt_err_set(err, ENOMEM, "out of memory decoding trace "
				   "ID 0x%x", c->src->trace_id);
	return 0;
}

static void put(struct cs_job *j, uint32_t type, uint64_t at, uint64_t st,
		uint32_t n)
{
	struct hwt_etm_rec r = { .type = type, .at = at, .st = st, .n = n };

	hwt_etm_out_put(j->out, &r);
}

/* Child side: OpenCSD's elements, as records. */
static ocsd_datapath_resp_t on_elem(const void *ctx, ocsd_trc_index_t at,
				    uint8_t id, const ocsd_generic_trace_elem *e)
{
	struct cs_job *j = (struct cs_job *)ctx;
	struct hwt_etm_rec r;

	switch (e->elem_type) {
	case OCSD_GEN_TRC_ELEM_INSTR_RANGE:
		r = (struct hwt_etm_rec){
			.type = HWT_ETM_REC_RANGE, .isa = e->isa, .at = at,
			.st = e->st_addr, .en = e->en_addr,
			.n = e->num_instr_range, .sz = e->last_instr_sz,
		};
		hwt_etm_out_put(j->out, &r);
		break;
	case OCSD_GEN_TRC_ELEM_NO_SYNC:
		put(j, HWT_ETM_REC_NO_SYNC, at, 0, 0);
		break;
	case OCSD_GEN_TRC_ELEM_TRACE_ON:
		put(j, HWT_ETM_REC_TRACE_ON, at, 0,
		    e->trace_on_reason == TRACE_ON_OVERFLOW);
		break;
	case OCSD_GEN_TRC_ELEM_ADDR_NACC:
		put(j, HWT_ETM_REC_ADDR_NACC, at, e->st_addr, 0);
		break;
	case OCSD_GEN_TRC_ELEM_ADDR_UNKNOWN:
		put(j, HWT_ETM_REC_ADDR_UNKNOWN, at, 0, 0);
		break;
	case OCSD_GEN_TRC_ELEM_I_RANGE_NOPATH:
		put(j, HWT_ETM_REC_NOPATH, at, e->st_addr, 0);
		break;
	case OCSD_GEN_TRC_ELEM_EXCEPTION:
		put(j, HWT_ETM_REC_EXCEPTION, at, 0, 0);
		break;
	default:
		break;
	}
	return OCSD_RESP_CONT;
}

static uint32_t mem_read(const void *ctx, const ocsd_vaddr_t addr,
			 const ocsd_mem_space_acc_t space, const uint32_t n,
			 uint8_t *buf)
{
	return (uint32_t)hwt_image_read((struct hwt_image *)ctx, addr, buf, n);
}

static ocsd_arch_version_t arch_ver(const struct hwt_bundle_cs_source *s)
{
	return s->arch == HWT_CS_ARCH_AA64 ? ARCH_AA64 :
		s->arch == HWT_CS_ARCH_V8 ? ARCH_V8 : ARCH_V7;
}

static ocsd_core_profile_t profile(const struct hwt_bundle_cs_source *s)
{
	return s->profile == 'M' ? profile_CortexM :
		s->profile == 'R' ? profile_CortexR : profile_CortexA;
}

/* The OpenCSD decoder for a source, configured from its registers. */
static ocsd_err_t add_decoder(dcd_tree_handle_t t,
			      const struct hwt_bundle_cs_source *s)
{
	const uint32_t *r = s->regs;
	unsigned char id;

	switch (s->protocol) {
	case HWT_CS_ETMV4: {
		ocsd_etmv4_cfg c = {
			.reg_idr0 = r[HWT_CS_TRCIDR0], .reg_idr1 = r[HWT_CS_TRCIDR1],
			.reg_idr2 = r[HWT_CS_TRCIDR2], .reg_idr8 = r[HWT_CS_TRCIDR8],
			.reg_idr9 = r[HWT_CS_TRCIDR9], .reg_idr10 = r[HWT_CS_TRCIDR10],
			.reg_idr11 = r[HWT_CS_TRCIDR11],
			.reg_idr12 = r[HWT_CS_TRCIDR12],
			.reg_idr13 = r[HWT_CS_TRCIDR13],
			.reg_configr = r[HWT_CS_TRCCONFIGR],
			.reg_traceidr = s->trace_id,
			.arch_ver = arch_ver(s), .core_prof = profile(s),
		};
		return ocsd_dt_create_decoder(t, OCSD_BUILTIN_DCD_ETMV4I,
					      OCSD_CREATE_FLG_FULL_DECODER, &c, &id);
	}
	case HWT_CS_ETE: {
		ocsd_ete_cfg c = {
			.reg_idr0 = r[HWT_CS_TRCIDR0], .reg_idr1 = r[HWT_CS_TRCIDR1],
			.reg_idr2 = r[HWT_CS_TRCIDR2], .reg_idr8 = r[HWT_CS_TRCIDR8],
			.reg_devarch = r[HWT_CS_TRCDEVARCH],
			.reg_configr = r[HWT_CS_TRCCONFIGR],
			.reg_traceidr = s->trace_id,
			.arch_ver = arch_ver(s), .core_prof = profile(s),
		};
		return ocsd_dt_create_decoder(t, OCSD_BUILTIN_DCD_ETE,
					      OCSD_CREATE_FLG_FULL_DECODER, &c, &id);
	}
	case HWT_CS_ETMV3: {
		ocsd_etmv3_cfg c = {
			.reg_idr = r[HWT_CS_ETMIDR], .reg_ctrl = r[HWT_CS_ETMCR],
			.reg_ccer = r[HWT_CS_ETMCCER], .reg_trc_id = s->trace_id,
			.arch_ver = arch_ver(s), .core_prof = profile(s),
		};
		return ocsd_dt_create_decoder(t, OCSD_BUILTIN_DCD_ETMV3,
					      OCSD_CREATE_FLG_FULL_DECODER, &c, &id);
	}
	case HWT_CS_PTM: {
		ocsd_ptm_cfg c = {
			.reg_idr = r[HWT_CS_ETMIDR], .reg_ctrl = r[HWT_CS_ETMCR],
			.reg_ccer = r[HWT_CS_ETMCCER], .reg_trc_id = s->trace_id,
			.arch_ver = arch_ver(s), .core_prof = profile(s),
		};
		return ocsd_dt_create_decoder(t, OCSD_BUILTIN_DCD_PTM,
					      OCSD_CREATE_FLG_FULL_DECODER, &c, &id);
	}
	default:
		return OCSD_ERR_NOT_INIT;
	}
}

/* Child side: feed the whole buffer. A fatal decoder response (corrupt
 * trace) becomes a gap; the decoder is reset and fed on from the next
 * byte, where it looks for the next synchronisation packet. */
static void feed(dcd_tree_handle_t t, struct cs_job *j)
{
	size_t pos = 0;

	while (pos < j->size) {
		uint32_t n = 0, want = j->size - pos < CS_FEED ?
			(uint32_t)(j->size - pos) : CS_FEED;
		ocsd_datapath_resp_t r;

		/* Where the decoder is, should it crash in this call. */
		put(j, HWT_ETM_REC_FEED, pos, 0, 0);
		r = ocsd_dt_process_data(t, OCSD_OP_DATA, pos, want,
					 j->trace + pos, &n);
		if (n > want)
			n = want;
		if (OCSD_DATA_RESP_IS_FATAL(r)) {
			put(j, HWT_ETM_REC_GAVE_UP, pos + n, 0, 0);
			pos += n + 1;
			ocsd_dt_process_data(t, OCSD_OP_RESET, 0, 0, NULL, NULL);
			continue;
		}
		/* Our element callback never asks to wait, so every
		 * response is CONT: n bytes were consumed. */
		pos += n ? n : want;
	}
	ocsd_dt_process_data(t, OCSD_OP_EOT, 0, 0, NULL, NULL);
}

/* The child's whole work. The decode tree is never destroyed: the child
 * ends right after, and tearing it down is OpenCSD code that could crash
 * too (it also leaks its element callback object, which no one frees). */
static int cs_child(void *arg, struct hwt_etm_out *out)
{
	struct cs_job *j = arg;
	const struct hwt_bundle_cs_source *src = j->src;
	dcd_tree_handle_t t;
	ocsd_err_t oe;

	j->out = out;
	t = ocsd_create_dcd_tree(src->formatted ? OCSD_TRC_SRC_FRAME_FORMATTED :
				 OCSD_TRC_SRC_SINGLE,
				 src->formatted ? OCSD_DFRMTR_FRAME_MEM_ALIGN : 0);
	if (t == C_API_INVALID_TREE_HANDLE)
		return -ENOMEM;
	oe = add_decoder(t, src);
	if (oe == OCSD_OK)
		oe = ocsd_dt_set_gen_elem_outfn(t, on_elem, j);
	if (oe == OCSD_OK)
		oe = ocsd_dt_add_callback_mem_acc(t, 0, UINT64_MAX,
						  OCSD_MEM_SPACE_ANY, mem_read,
						  j->img);
	if (oe != OCSD_OK)
		put(j, HWT_ETM_REC_CONFIG, 0, 0, (uint32_t)oe);
	else
		feed(t, j);
	return 0;
}

static int cs_index(const uint8_t *trace, size_t size, uint64_t lost_insns,
		    uint64_t end_pc, struct hwt_image *img,
		    struct hwt_segments *segs, struct hwt_err *err)
{
	const struct hwt_bundle *b = segs->in.bundle;
	size_t thread = segs->in.thread;
	struct hwt_blocks *decoded;
	struct cs_ctx c = { .segs = segs };
	struct cs_job j = { .trace = trace, .size = size, .img = img };
	char why[256];
	int rc;

	if (!b || thread >= b->nthreads || thread >= b->nsources)
		return hwt_err_set(err, EINVAL, "a CoreSight trace needs its "
				   "snapshot's source configuration; open it "
				   "with hwt_history_open");
	/* Decoded while indexing: the segments point into these blocks. */
	if (!(decoded = calloc(1, sizeof(*decoded))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	segs->priv = c.out = decoded;
	segs->priv_free = hwt_blocks_priv_free;
	segs->priv_blocks = true;
	c.src = j.src = &b->sources[thread];
	if (size > CS_MAX_TRACE)
		return hwt_err_set(err, EFBIG, "%s: the %zu-byte trace buffer "
				   "is larger than the %u MiB this decoder "
				   "indexes at open; cut the snapshot's buffer",
				   c.src->name, size, CS_MAX_TRACE >> 20);
	rc = hwt_etm_child_run(cs_child, &j, size, on_rec, &c, why,
			       sizeof(why), err);
	if (rc)
		return rc;
	/* Gaps at the end of the trace still stand for lost history, and so
	 * does the rest of a trace the decoder died on. */
	gap_flush(&c);
	if (why[0])
		gap_push(&c, hwt_segments_reason(segs, "%s", why));
	if (c.nomem)
		return hwt_err_set(err, ENOMEM, "out of memory decoding trace "
				   "ID 0x%x", c.src->trace_id);
	segs->priv_bytes = decoded->cap * sizeof(*decoded->v);
	/* Cut the blocks into segments of about CS_SEG_ITEMS items. */
	for (size_t i = 0; i < decoded->n;) {
		struct hwt_segment s = { .off = i, .own.blocks = decoded->v };
		uint64_t n = 0;

		while (i < decoded->n &&
		       (n == 0 || n + decoded->v[i].count <= CS_SEG_ITEMS) &&
		       n + decoded->v[i].count <= UINT32_MAX)
			n += decoded->v[i++].count;
		s.len = i - s.off;
		s.nitems = (uint32_t)n;
		if (hwt_segments_push(segs, &s))
			return hwt_err_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

static int cs_decode(const uint8_t *trace, size_t size,
		     const struct hwt_segment *seg, struct hwt_image *img,
		     struct hwt_blocks *out, struct hwt_err *err)
{
	for (uint64_t i = 0; i < seg->len; i++)
		if (hwt_blocks_push(out, &seg->own.blocks[seg->off + i]))
			return hwt_err_set(err, ENOMEM, "out of memory");
	return 0;
}

const struct hwt_decoder hwt_decoder_etm = {
	.format = HWT_BUNDLE_TYPE_CORESIGHT,
	.index_image = cs_index,
	.decode = cs_decode,
};
