/* SPDX-License-Identifier: BSD-2-Clause */
/* decode.h - trace decoders behind one interface.
 *
 * A decoder splits a raw trace into segments that decode independently
 * (hwt-sw: pieces of self-contained chunks; Intel PT: PSB-to-PSB) and
 * turns one segment into blocks: runs of consecutive instructions, not one
 * record per instruction. Indexing is cheap and done when a history is
 * opened; decoding needs the image and is done only for the segments a
 * reader asks for.
 */
#ifndef HWT_DECODE_H
#define HWT_DECODE_H

#include "hwt-replay.h"

#define HWT_BLOCK_GAP 0x1u    /* stands for one gap item */
#define HWT_BLOCK_ASYNC 0x2u  /* first instruction reached asynchronously */
#define HWT_BLOCK_PTWRITE 0x4u  /* last instruction wrote block.ptwrite */

struct hwt_block {
	uint64_t begin;          /* address of the first instruction */
	uint64_t end;            /* address of the last one, inclusive */
	const char *reason;      /* gap blocks: why; owned by the index */
	uint32_t count;          /* instructions; 1 for a gap */
	uint32_t flags;          /* HWT_BLOCK_* */
	enum hwt_isa isa;        /* DEFAULT: the image's for the address */
	uint64_t timestamp;      /* of every instruction in it; 0: none */
	uint64_t ptwrite;        /* HWT_BLOCK_PTWRITE: the payload */
};

struct hwt_segment {
	uint64_t off, len;       /* the segment's bytes in the trace */
	uint64_t pc;             /* first instruction, when the format
				  * needs it to start decoding */
	uint64_t first;          /* item number of its first item; the
				  * history fills it in */
	uint32_t nitems;         /* items it decodes to, gaps included */
	uint32_t flags;          /* the decoder's own */
	const char *reason;      /* the decoder's own, owned by the index */
	union {                  /* the decoder's own, by format */
		/* Per-cpu Intel PT: only the items whose time (TSC) lies
		 * in [tsc_begin, tsc_end] are the thread's; tsc_end 0:
		 * every item. */
		struct { uint64_t tsc_begin, tsc_end; } pt;
		/* CoreSight, decoded while indexing: off and len count
		 * blocks from here. */
		const struct hwt_block *blocks;
		/* hwt-sw branch chunks expanded while indexing: the
		 * segment's len record bytes, read here instead of at off
		 * in the trace (HWT_SW_SEG_EXPANDED). */
		const uint8_t *bytes;
		/* hwt-sw runs read with the trace's index (HWT_SW_SEG_RUNS):
		 * the index's chunk where its table begins. */
		size_t table;
	} own;
};

/* Per-cpu Intel PT: one stretch during which the thread ran on a cpu,
 * from its context-switch records (replay/pt_switch.c). */
struct hwt_pt_piece {
	uint64_t off, len;       /* the cpu's trace in the history's bytes */
	uint64_t tsc_begin, tsc_end; /* inclusive; end UINT64_MAX: open */
	int64_t cpu;             /* cpus[].id, for messages */
	/* Whether a switch-in began it and a switch-out ended it; else
	 * the records ran out or lack one (LLDB's "hinted" executions). */
	bool begin_known, end_known;
	size_t cpu_index;        /* into the bundle's pt_cpus */
};

/* The pieces of thread tid in the per-cpu bundle b, in time order, and
 * the traces of the cpus they need, concatenated into *trace (caller
 * frees both). Malformed context-switch records are an error naming the
 * cpu, the file and the offset. */
int hwt_pt_thread_pieces(const struct hwt_bundle *b, int64_t tid,
			 uint8_t **trace, size_t *size,
			 struct hwt_pt_piece **pieces, size_t *npieces,
			 struct hwt_err *err);
/* Append the executions of tid in one cpu's context-switch records
 * (perf_event PERF_RECORD_SWITCH_CPU_WIDE with sample_id_all, TID and
 * TIME, as LLDB stores them) to the array *v (*nv pieces, room for *cap)
 * as pieces with cpu_index, times converted to TSC with conv; off and
 * len are left 0. */
int hwt_pt_switch_parse(const uint8_t *d, size_t n, int64_t tid,
			const struct hwt_tsc_conv *conv, size_t cpu_index,
			int64_t cpu, struct hwt_pt_piece **v, size_t *nv,
			size_t *cap, struct hwt_err *err);

struct hwt_blocks {
	struct hwt_block *v;
	size_t n, cap;
};

/* What a history is opened on, for the index: each decoder reads what
 * its format needs. */
struct hwt_index_in {
	/* The bundle's cpu for formats whose decoding depends on it
	 * (Intel PT errata); NULL when unknown. */
	const struct hwt_cpu_info *cpu;
	/* The bundle and thread being opened, for formats configured per
	 * source (CoreSight: trace unit registers); NULL for a trace in
	 * memory. */
	const struct hwt_bundle *bundle;
	size_t thread;
	/* Per-cpu Intel PT: the thread's pieces of the trace, in time
	 * order; NULL otherwise. The caller's, for indexing only. */
	const struct hwt_pt_piece *pieces;
	size_t npieces;
};

/* The segment index of one trace; owns the reason strings. */
struct hwt_segments {
	struct hwt_index_in in;  /* set before indexing */
	/* The decoder's own storage for the life of the index, which its
	 * segments point into (CoreSight: the blocks decoded while
	 * indexing; hwt-sw: branch chunks expanded into plain records).
	 * Set by its index; freed with the index by priv_free; priv_bytes
	 * counts in the history's memory. */
	void *priv;
	size_t priv_bytes;
	void (*priv_free)(void *priv);
	/* priv is a struct hwt_blocks (freed by hwt_blocks_priv_free) that
	 * the segments' own.blocks point into, off and len counting blocks:
	 * such an index can be kept (seg_store.c). */
	bool priv_blocks;
	struct hwt_segment *v;
	size_t n, cap;
	char **strs;
	size_t nstrs, strcap, str_bytes;
};

struct hwt_decoder {
	const char *format;      /* bundle type it reads */
	/* Build the index. Corrupt data becomes gap segments, not errors;
	 * errors are for running out of memory. */
	int (*index)(const uint8_t *trace, size_t size, uint64_t lost_insns,
		     struct hwt_segments *segs, struct hwt_err *err);
	/* Formats whose item counts depend on the code (BTS: the blocks
	 * between branch records are found by walking instruction lengths)
	 * set this instead of index: it also gets the image and the
	 * thread's current pc (0 when unknown), which ends the history. */
	int (*index_image)(const uint8_t *trace, size_t size,
			   uint64_t lost_insns, uint64_t end_pc,
			   struct hwt_image *img, struct hwt_segments *segs,
			   struct hwt_err *err);
	/* Append the blocks of seg to out; their counts must add up to
	 * seg->nitems. */
	int (*decode)(const uint8_t *trace, size_t size,
		      const struct hwt_segment *seg, struct hwt_image *img,
		      struct hwt_blocks *out, struct hwt_err *err);
};

extern const struct hwt_decoder hwt_decoder_sw;

/* Each translation's instruction lengths, read from the image once
 * (decode_runs.c): by translation, of the table numbered table. */
struct hwt_runs_lens {
	size_t table;
	uint32_t *at;            /* by translation number: 1 + where its
				  * lengths begin in lens, 0: not read */
	size_t nat;
	uint8_t *lens;
	size_t nlens, lens_cap;
};

void hwt_runs_lens_free(struct hwt_runs_lens *l);
size_t hwt_runs_lens_memory(const struct hwt_runs_lens *l);
/* The blocks of a HWT_SW_SEG_RUNS segment (its runs at base + seg->off,
 * in a frame of size bytes, its translations in tab, the table numbered
 * table), the same as decode_sw.c gives for the same instructions as
 * plain records. */
int hwt_runs_decode(struct hwt_runs_lens *lens, size_t table,
		    struct hwt_sw_table *tab, const uint8_t *base, size_t size,
		    const struct hwt_segment *seg, struct hwt_image *img,
		    struct hwt_blocks *out, struct hwt_err *err);

/* Which translations run an instruction at one of set's addresses
 * (sorted), by translation number of the table numbered table: 0 not
 * looked at yet. */
struct hwt_runs_marks {
	size_t table;
	const uint64_t *set;
	size_t nset;
	uint8_t *by_id;
	size_t nids;
};

void hwt_runs_marks_free(struct hwt_runs_marks *m);
/* Marks for another set (kept by the caller while they are used). */
void hwt_runs_marks_reset(struct hwt_runs_marks *m, const uint64_t *set,
			  size_t n);
/* The instruction of a HWT_SW_SEG_RUNS segment (as hwt_runs_decode
 * takes it) at one of m's addresses, among its instructions lo..hi
 * (from 0): the last of them (back) or the first; 1 with *off its place,
 * 0 when none is, or an error. A run whose translation has no
 * instruction at those addresses is passed over whole. */
int hwt_runs_find(struct hwt_runs_marks *m, size_t table,
		  struct hwt_sw_table *tab, const uint8_t *base, size_t size,
		  const struct hwt_segment *seg, uint32_t lo, uint32_t hi,
		  bool back, uint32_t *off, struct hwt_err *err);

/* hwt-sw segments: at most this many instructions, so a reader wanting
 * the newest few decodes a few thousand; HWT_SW_SEG_ASYNC: the segment's
 * first instruction was reached by entering a signal handler. */
#define HWT_SW_SEG_INSNS HWT_SW_INDEX_STRIDE
#define HWT_SW_SEG_ASYNC 0x1u
#define HWT_SW_SEG_EXPANDED 0x2u  /* records in .bytes (expand_sw.c) */
/* Runs of a RUNS chunk from off to its end, of which the segment is the
 * first nitems instructions; pc is the instruction before them (PREV)
 * or there is none. */
#define HWT_SW_SEG_RUNS 0x4u
#define HWT_SW_SEG_PREV 0x8u

/* The segments of a trace with an index (common/sw_index.c), exactly as
 * indexing the trace itself cuts them, without reading it: each chunk's
 * records are checked when it is decoded. Returns 0 or -ENOMEM. */
int hwt_sw_index_segments(const struct hwt_sw_index *ix, uint64_t lost_insns,
			  struct hwt_segments *segs, struct hwt_err *err);

/* replay/seg_store.c: the segments of a trace kept beside it
 * (TRACE.hwtidx) by `hwtrace index`, for formats whose indexing decodes
 * the whole trace. Save refuses (-ENOTSUP) an index that holds decoded
 * data (segs->priv); load fails (-EINVAL, saying why) on a file that is
 * not of this format and trace or does not parse, appending to segs. */
int hwt_segments_save(const struct hwt_segments *segs, const char *format,
		      const uint8_t *trace, size_t size, uint8_t **out,
		      size_t *out_n, struct hwt_err *err);
int hwt_segments_load(const uint8_t *in, size_t n, const char *format,
		      const uint8_t *trace, size_t size,
		      struct hwt_segments *segs, struct hwt_err *err);

/* replay/sw_chunks.c: a bundle thread's indexed hwt-sw trace, mapped,
 * its frames of chunks decompressed when asked for. Open fails (the message says
 * why) when the thread has no index or it does not match its trace. */
struct hwt_sw_chunks;
int hwt_sw_chunks_open(const struct hwt_bundle *b,
		       const struct hwt_bundle_thread *t,
		       struct hwt_sw_chunks **out, struct hwt_err *err);
const struct hwt_sw_index *hwt_sw_chunks_index(const struct hwt_sw_chunks *c);
/* The decoded frame holding seg (*base, *size) and seg with its offset
 * made relative to it (*local). */
int hwt_sw_chunks_get(struct hwt_sw_chunks *c, const struct hwt_segment *seg,
		      const uint8_t **base, size_t *size,
		      struct hwt_segment *local, struct hwt_err *err);
/* The translations of the table beginning at the index's chunk first,
 * kept from first use and each read when a run first names it. */
int hwt_sw_chunks_table(struct hwt_sw_chunks *c, size_t first,
			struct hwt_sw_table **out, struct hwt_err *err);
size_t hwt_sw_chunks_memory(const struct hwt_sw_chunks *c);
void hwt_sw_chunks_free(struct hwt_sw_chunks *c);

/* replay/expand_sw.c: hwt-sw chunks of branch records
 * (HWT_SW_CHUNK_BRANCHES) expanded with the image into plain records
 * while a history is opened. */
struct hwt_sw_expand;
int hwt_sw_expand_new(struct hwt_image *img, struct hwt_sw_expand **out);
void hwt_sw_expand_free(struct hwt_sw_expand *x);
/* Expand the first size bytes of records of the branch chunk h (whose
 * payload is at pay), number chunk in the trace, into segments of segs:
 * instruction segments reading from the expander's records (their
 * own.bytes is set by hwt_sw_expand_finish) and a gap for each record
 * that cannot be reached.
 * from: the previous branch chunk's last pc when h continues it (first_pc
 * is then reached from there), else NULL. Returns 0 or -ENOMEM. */
int hwt_sw_expand_chunk(struct hwt_sw_expand *x, const uint8_t *pay,
			size_t size, const struct hwt_sw_chunk_hdr *h,
			const uint64_t *from, unsigned chunk,
			struct hwt_segments *segs);
/* Hand the expanded records to segs (its priv) and point the expanded
 * segments into them, which no longer move. */
void hwt_sw_expand_finish(struct hwt_sw_expand *x, struct hwt_segments *segs);
extern const struct hwt_decoder hwt_decoder_pt;
extern const struct hwt_decoder hwt_decoder_bts;
extern const struct hwt_decoder hwt_decoder_etm;

/* The decoder for a bundle type, or NULL. */
const struct hwt_decoder *hwt_decoder_find(const char *format);
/* Comma-separated names of all decoders, for error messages. */
const char *hwt_decoder_names(void);
/* A history over a trace in memory (not copied) read by the decoder of
 * format, without a bundle: no cpu, no per-source configuration (the
 * fuzzers feed every decoder this way). */
int hwt_history_open_format(const char *format, const uint8_t *trace,
			    size_t size, struct hwt_image *img,
			    struct hwt_history **out, struct hwt_err *err);

int hwt_segments_push(struct hwt_segments *s, const struct hwt_segment *seg);
/* Keep a formatted reason string for the life of the index; NULL when
 * out of memory. */
const char *hwt_segments_reason(struct hwt_segments *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void hwt_segments_free(struct hwt_segments *s);

int hwt_blocks_push(struct hwt_blocks *b, const struct hwt_block *blk);
/* A gap block for a segment's reason (its last item). */
int hwt_blocks_push_gap(struct hwt_blocks *b, const char *reason);

/* The first of the sorted addresses set[0..n) at or above x (n: none). */
static inline size_t hwt_addrs_at_least(const uint64_t *set, size_t n,
					uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (set[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static inline bool hwt_addrs_hold(const uint64_t *set, size_t n, uint64_t x)
{
	size_t at = hwt_addrs_at_least(set, n, x);

	return at < n && set[at] == x;
}
/* A segment index's priv that is a malloc'd struct hwt_blocks. */
void hwt_blocks_priv_free(void *priv);

#endif
