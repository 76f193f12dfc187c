/* SPDX-License-Identifier: BSD-2-Clause */
/* hwt-common.h - the data model every hwtrace layer shares.
 *
 * Errors, the software trace record format ("hwt-sw") and the on-disk trace
 * bundle. Library functions return 0 (or a count) on success and a negative
 * errno on failure; when given a struct hwt_err they also fill in a message
 * saying what failed and what to do. Nothing here prints or exits.
 */
#ifndef HWT_COMMON_H
#define HWT_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the shared libraries export: the functions of the public headers,
 * each marked so. They are built with -fvisibility=hidden, and their
 * version scripts (libhwt-*.map) give each function its version. */
#ifndef HWT_API
#define HWT_API __attribute__((visibility("default")))
#endif

/* ---- errors ------------------------------------------------------------ */

struct hwt_err {
	int code;            /* positive errno value, 0 when no error */
	char msg[512];
};

/* Record an error; returns -code so callers can `return hwt_err_set(...)`.
 * err may be NULL. */
HWT_API int hwt_err_set(struct hwt_err *err, int code, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));
/* Prepend context ("reading bundle x: ") to an existing message; returns
 * -err->code (-EIO when err is NULL: a failure passed on stays one). */
HWT_API int hwt_err_prefix(struct hwt_err *err, const char *fmt, ...)
		__attribute__((format(printf, 2, 3)));
HWT_API void hwt_err_clear(struct hwt_err *err);

/* ---- option structs -----------------------------------------------------
 *
 * Option structs that may grow start with `size_t sz`, the size the
 * caller was built with, and a zeroed struct means the defaults
 * everywhere. HWT_OPTS declares one that way:
 *
 *     HWT_OPTS(hwt_collect_opts, opts, .backend = "ptrace");
 */
#define HWT_OPTS(TYPE, NAME, ...)                                         \
	struct TYPE NAME = { .sz = sizeof(struct TYPE), __VA_ARGS__ }

/* Copy the caller's options in (in_sz = its sz) into out (out_sz bytes,
 * zeroed first, its sz set): fields the caller did not know keep their
 * defaults. Refused (-EINVAL naming `type`): a sz below min_sz (the
 * struct's first version) and, from a caller built against a newer
 * struct, trailing bytes that are not all zero, since what they ask for
 * cannot be done here. */
HWT_API int hwt_opts_copy(void *out, size_t out_sz, const void *in, size_t in_sz,
			  size_t min_sz, const char *type, struct hwt_err *err);

/* Little-endian integers of the on-disk formats. */
static inline void hwt_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void hwt_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t hwt_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		(uint32_t)p[3] << 24;
}

static inline uint64_t hwt_get_le64(const uint8_t *p)
{
	return hwt_get_le32(p) | (uint64_t)hwt_get_le32(p + 4) << 32;
}

/* Unsigned LEB128, the numbers of the valgrind tool's stream and of runs
 * chunks: v at out (room for 10 bytes); its length. */
static inline size_t hwt_put_uleb128(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	do {
		out[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		out[n++] |= v ? 0x80 : 0;
	} while (v);
	return n;
}

/* The number at *p into *v, *p past it: 1; 0 when end comes first, -1
 * when it does not fit 64 bits (*p unmoved then). */
static inline int hwt_get_uleb128(const uint8_t **p, const uint8_t *end,
				  uint64_t *v)
{
	const uint8_t *q = *p;
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		if (q == end)
			return 0;
		b = *q++;
		/* The tenth byte may hold only the top bit of 64. */
		if (shift == 63 && b > 1)
			return -1;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*p = q;
			*v = x;
			return 1;
		}
	}
	return -1;
}

/* ---- software trace format (hwt-sw) -------------------------------------
 *
 * A per-thread trace file is a sequence of chunks. Each chunk is decodable
 * on its own: it starts at an absolute address, so a reader can decode the
 * newest chunk without touching older ones, and the recorder can drop the
 * oldest chunk when its ring is full. See docs/swtrace.md.
 *
 * Chunk header (little-endian, HWT_SW_CHUNK_HDR_SIZE bytes):
 *   0  magic "HWTC"
 *   4  u32 payload_size   bytes of records after the header
 *   8  u64 first_pc       address of the chunk's first instruction
 *  16  u64 first_seq      instructions recorded on this thread before it
 *  24  u64 last_pc        address of the chunk's last instruction (check)
 *  32  u32 insn_count     instructions in the chunk (first_pc included)
 *  36  u32 flags          HWT_SW_CHUNK_*; 0 for a plain chunk
 *
 * Records in the payload; each adds one instruction unless noted:
 *   0x01..0x0f            next instruction at pc + value
 *   0x11..0x18 d[n]       n = tag - 0x10 bytes of little-endian signed
 *                         delta: next instruction at pc + delta
 *   0x20                  prefix (adds nothing): the following transfer
 *                         was asynchronous (signal delivery)
 * Any other tag byte is corruption.
 *
 * A chunk flagged HWT_SW_CHUNK_BRANCHES (block-step recording) uses the
 * same records, but a record may be the target of a taken branch with the
 * straight-line instructions since the previous record left out, so only
 * a reader that expands it with the program image may decode it; every
 * instruction a record adds then stands for one or more. insn_count and
 * last_pc count and end the records as written (first_pc + one per
 * record). hwt_sw_chunk_hdr_unpack refuses such chunks, so a reader that
 * does not expand cannot take one for a plain chunk. first_pc of a branch
 * chunk is a record too: when the chunk continues the previous branch
 * chunk (first_seq follows on, no HWT_SW_CHUNK_ASYNC) it is reached from
 * that chunk's last_pc the same way.
 */

#define HWT_SW_CHUNK_MAGIC "HWTC"
#define HWT_SW_CHUNK_HDR_SIZE 40u
#define HWT_SW_TAG_STEP_MAX 0x0f
#define HWT_SW_TAG_JUMP_BASE 0x10
#define HWT_SW_TAG_ASYNC 0x20
#define HWT_SW_MAX_RECORD 9u        /* largest single record in bytes */
#define HWT_SW_MAX_CHUNK_PAYLOAD (1u << 20)
#define HWT_SW_CHUNK_BRANCHES 0x1u  /* records are branch targets or steps */
/* With HWT_SW_CHUNK_BRANCHES only: first_pc was reached by entering a
 * signal handler. Without it a branch chunk that continues the previous
 * one (first_seq follows on) continues its straight-line code too. */
#define HWT_SW_CHUNK_ASYNC 0x2u
/* Superblock runs, the valgrind recorder's (docs/swtrace.md, "Runs
 * chunks"): a TABLE chunk's payload describes translations, a RUNS
 * chunk's payload is runs of them. PREV (RUNS only): first_pc is the
 * instruction run before the chunk's first, not its first. */
#define HWT_SW_CHUNK_TABLE 0x4u
#define HWT_SW_CHUNK_RUNS 0x8u
#define HWT_SW_CHUNK_PREV 0x10u
/* The restart points of the RUNS chunk after it, as its recorder found
 * them (payload: HWT_SW_CUT_BYTES each), so a packer need not walk it. */
#define HWT_SW_CHUNK_CUTS 0x20u
#define HWT_SW_CUT_BYTES 16u
/* Every flag of the chunks that carry runs. */
#define HWT_SW_CHUNK_RUNS_FLAGS (HWT_SW_CHUNK_TABLE | HWT_SW_CHUNK_RUNS | \
				 HWT_SW_CHUNK_PREV | HWT_SW_CHUNK_CUTS)

struct hwt_sw_chunk_hdr {
	uint32_t payload_size;
	uint64_t first_pc;
	uint64_t first_seq;
	uint64_t last_pc;
	uint32_t insn_count;
	uint32_t flags;
};

HWT_API void hwt_sw_chunk_hdr_pack(const struct hwt_sw_chunk_hdr *hdr,
				   uint8_t out[HWT_SW_CHUNK_HDR_SIZE]);
/* Validates magic and bounds; -EBADMSG with a message on failure, also
 * for any flag (a plain chunk's flags are 0). */
HWT_API int hwt_sw_chunk_hdr_unpack(const uint8_t *in, size_t avail,
				    struct hwt_sw_chunk_hdr *hdr, struct hwt_err *err);
/* The same, accepting the HWT_SW_CHUNK_* flags in known: for readers
 * that handle those chunks (the replay engine expands branch chunks). */
HWT_API int hwt_sw_chunk_hdr_unpack_flags(const uint8_t *in, size_t avail,
					  uint32_t known,
					  struct hwt_sw_chunk_hdr *hdr,
					  struct hwt_err *err);

/* The checks of hwt_sw_chunk_hdr_unpack_flags on a header's fields. */
HWT_API int hwt_sw_chunk_hdr_check(const struct hwt_sw_chunk_hdr *hdr, uint32_t known,
				   struct hwt_err *err);

/* Encode the transfer from pc to next (async: signal delivery) into out,
 * which must hold HWT_SW_MAX_RECORD + 1 bytes. Returns bytes written. */
HWT_API size_t hwt_sw_encode_step(uint64_t pc, uint64_t next, bool async,
				  uint8_t *out);

/* Incremental payload decoder. */
struct hwt_sw_reader {
	const uint8_t *p, *end;
	uint64_t pc;        /* address of the current instruction */
};

enum hwt_sw_step {
	HWT_SW_END = 0,     /* payload exhausted */
	HWT_SW_NEXT = 1,    /* pc advanced to the next instruction */
};

HWT_API void hwt_sw_reader_init(struct hwt_sw_reader *r, const uint8_t *payload,
				size_t size, uint64_t first_pc);
/* Advance to the next instruction. Sets *async when the transfer was a
 * signal delivery. Returns HWT_SW_NEXT, HWT_SW_END, or -EBADMSG (err says
 * at which payload offset) on a bad tag or a truncated record. */
HWT_API int hwt_sw_reader_next(struct hwt_sw_reader *r, bool *async,
			       struct hwt_err *err);

/* ---- runs chunks (sw_runs.c) ---------------------------------------------
 *
 * The valgrind recorder keeps a thread's newest superblock runs as its
 * tool wrote them, a few bytes a run, and stores them so: expanding them
 * into step records is left to whoever reads that part of the history.
 * A TABLE chunk (insn_count 0, first_pc and last_pc 0) holds
 * translations, each as unsigned LEB128 numbers: its id, its instruction
 * count N, its first instruction's address, the N - 1 zigzag deltas of
 * each next instruction's address from the one before, its count of side
 * exits E, for each exit the instructions run when it is taken shifted
 * left by one, plus one where the exit is the count check of a
 * rep-prefixed instruction, its flags (HWT_SW_TR_*), the zigzag delta of
 * its entry (the address it runs for) from its first instruction and,
 * for an implied one, each exit's target as a zigzag delta from its
 * entry. Consecutive TABLE chunks make one table, used by the RUNS
 * chunks after them until a TABLE chunk follows a RUNS chunk.
 *
 * A RUNS chunk's payload is items, each an unsigned LEB128 number V:
 *   V & 3 == 0  translation V >> 2 runs: to its end unless an item says
 *               otherwise or, implied, the next run's entry is the target
 *               of one of its side exits
 *   V & 3 == 1  the run left by side exit V >> 2 (its count of side
 *               exits: at its end)
 *   V & 3 == 2  a mark of kind V >> 2: 1, the next instruction enters a
 *               signal handler; 2 and a number N, the run executed its
 *               first N instructions only (a fault)
 * Its header counts its instructions and names its last; with
 * HWT_SW_CHUNK_PREV, first_pc is the instruction run before its first.
 * A CUTS chunk (insn_count 0) before it may say where a walk over its
 * items can begin: per point, little-endian, u32 the item's byte
 * offset, u32 the chunk's instructions before it, u64 the instruction
 * run before it.
 * Layout and an example: docs/swtrace.md.
 */
#define HWT_SW_TR_MAX_INSNS 4096u
#define HWT_SW_TR_MAX_EXITS 4096u
#define HWT_SW_TR_IMPLIED 1u
#define HWT_SW_TR_FINAL 2u
/* In exit_after: the exit is a rep instruction's count check. */
#define HWT_SW_TR_REP_CHECK 0x80000000u
#define HWT_SW_RUNS_EXEC 0u
#define HWT_SW_RUNS_EXIT 1u
#define HWT_SW_RUNS_MARK 2u
#define HWT_SW_RUNS_ASYNC 1u
#define HWT_SW_RUNS_TRUNC 2u

struct hwt_sw_tr {
	uint32_t ninsns, nexits, flags;
	uint32_t id;             /* its number in a table read back */
	uint64_t entry;
	uint64_t *pc;            /* each instruction's address */
	uint32_t *exit_after;    /* instructions run when exit k is taken */
	uint64_t *target;        /* implied with exits: exit k's target */
};

/* Translations by id (NULL where a table has none, or has not read it
 * yet), in blocks of memory the table owns. */
struct hwt_sw_table {
	struct hwt_sw_tr **v;
	size_t n, count;
	size_t bytes;            /* memory held */
	void *blocks;
	/* Tables read in part: their chunks' payloads, and by id 1 + the
	 * offset of its translation there (0: none). */
	uint8_t *src;
	size_t src_n, src_cap;
	uint32_t *src_at;
};

/* Add a TABLE chunk's translations; -EBADMSG saying what is wrong (what
 * was added before it stays). */
HWT_API int hwt_sw_table_add(struct hwt_sw_table *t, const uint8_t *pay, size_t n,
			     struct hwt_err *err);
/* The same, reading each translation only when it is first asked for
 * (hwt_sw_table_get): a newest view names a few hundred of a compiler's
 * tens of thousands. Ids, counts and flags are checked now, the rest of
 * a translation when it is read. A table is read one way only. */
HWT_API int hwt_sw_table_add_lazy(struct hwt_sw_table *t, const uint8_t *pay,
				  size_t n, struct hwt_err *err);
/* Before the first hwt_sw_table_add_lazy: room for bytes of payload in
 * all and the translations they can hold, taken at once (a compiler's
 * table is megabytes: grown chunk by chunk it is copied each time into
 * fresh pages). 0 or -ENOMEM. */
HWT_API int hwt_sw_table_reserve(struct hwt_sw_table *t, size_t bytes,
				 struct hwt_err *err);
/* Translation id: 0, -ENOENT when t has none, -EBADMSG saying how its
 * bytes are damaged, -ENOMEM. */
HWT_API int hwt_sw_table_get(struct hwt_sw_table *t, uint64_t id,
			     const struct hwt_sw_tr **out, struct hwt_err *err);
HWT_API void hwt_sw_table_free(struct hwt_sw_table *t);
/* Bytes hwt_sw_tr_encode writes for a translation at most. */
HWT_API size_t hwt_sw_tr_encoded_max(const struct hwt_sw_tr *tr);
/* tr as translation id of a TABLE chunk's payload; bytes written. */
HWT_API size_t hwt_sw_tr_encode(uint64_t id, const struct hwt_sw_tr *tr, uint8_t *out);

/* The instructions a run of tr executed leaving by exit k (its count of
 * side exits: at its end), the instruction before it last_pc if known.
 * A rep-prefixed string instruction runs one iteration per copy of it in
 * a superblock, each copy first checking its count (HWT_SW_TR_REP_CHECK):
 * taken right after the same instruction ran, that copy executed
 * nothing, as a cpu does not execute a check that finds the count
 * exhausted. */
HWT_API uint32_t hwt_sw_tr_exit_count(const struct hwt_sw_tr *tr, uint32_t k,
				      bool last_known, uint64_t last_pc);
/* The exit an implied run of tr left by, going on at pc: the side exit
 * whose target pc is, else its end (its count of side exits). */
HWT_API uint32_t hwt_sw_tr_exit_to(const struct hwt_sw_tr *tr, uint64_t pc);

/* A walk over a RUNS chunk's items, a run at a time. */
struct hwt_sw_runs {
	struct hwt_sw_table *tab;   /* read in part: reads what runs name */
	const uint8_t *items, *p, *end;
	const struct hwt_sw_tr *run; /* begun, not yet given */
	uint32_t n;              /* its instructions as known so far */
	bool open;               /* implied: the next run says where it left */
	bool async;              /* the next instruction enters a handler */
	bool async_after;        /* ... once the run begun is given */
	/* The last instruction given: last_tr's instruction last_n - 1
	 * (looked up only when asked: a run's addresses are far in
	 * memory), else last_pc, or none. */
	bool last_known;
	const struct hwt_sw_tr *last_tr;
	uint32_t last_n;
	uint64_t last_pc;
};

/* The last instruction w gave (or began with); false: none. */
HWT_API bool hwt_sw_runs_last(const struct hwt_sw_runs *w, uint64_t *pc);

/* Walk items[from, size), the instruction before last_pc if last_known. */
HWT_API void hwt_sw_runs_init(struct hwt_sw_runs *w, struct hwt_sw_table *tab,
			      const uint8_t *items, size_t size, size_t from,
			      bool last_known, uint64_t last_pc);
/* The next run: 1 with its translation, the instructions it executed
 * (its first *n) and whether the move into its first one was a signal
 * handler's entry (with *n 0 that stays for the next); 0 at the end;
 * -EBADMSG on an item that is malformed or names what the table lacks
 * or holds damaged; -ENOMEM reading a translation. */
HWT_API int hwt_sw_runs_next(struct hwt_sw_runs *w, const struct hwt_sw_tr **tr,
			     uint32_t *n, bool *async, struct hwt_err *err);
/* w stands between runs with nothing pending, before a run's item: a
 * walk begun here (hwt_sw_runs_init with w's last instruction) gives
 * the same runs. */
HWT_API bool hwt_sw_runs_at_cut(const struct hwt_sw_runs *w);
/* Every instruction of the runs from w on, to fn (its pc, and whether
 * the move into it entered a signal handler), until max were given or
 * the items end (*given says how many); fn's nonzero return stops it and
 * is returned. */
typedef int (*hwt_sw_insn_fn)(void *ctx, uint64_t pc, bool async);
HWT_API int hwt_sw_runs_each(struct hwt_sw_runs *w, uint64_t max, hwt_sw_insn_fn fn,
			     void *ctx, uint64_t *given, struct hwt_err *err);

/* A trace whose TABLE and RUNS chunks are expanded into plain chunks
 * (*out malloc'd), every other chunk copied; -EBADMSG on a damaged one. */
HWT_API int hwt_sw_runs_flatten(const uint8_t *trace, size_t n, uint8_t **out,
				size_t *out_n, struct hwt_err *err);

/* ---- hwt-sw trace index (sw_index.c) -------------------------------------
 *
 * In a bundle a compressed hwt-sw trace is zstd frames of whole chunks
 * (up to HWT_SW_INDEX_FRAME_MAX bytes decoded), each with its content
 * checksum, and an index file says where every frame is, which chunks it
 * holds, what their headers say and where their records may be restarted
 * every HWT_SW_INDEX_STRIDE instructions. A reader numbers the whole
 * history from the index alone and decompresses only the frames it is
 * asked about. The index is checked against the trace file's frames
 * (offsets, decoded sizes, checksums) before it is used: a stale or
 * damaged one is refused, never trusted. Layout: docs/swtrace.md.
 */
#define HWT_SW_INDEX_MAGIC "HWTI"
#define HWT_SW_INDEX_VERSION 2u
#define HWT_SW_INDEX_STRIDE 4096u
#define HWT_SW_INDEX_FRAME_MAX (4u << 20)

/* Where a chunk's records may be restarted: the record at rec_off
 * (rec_len bytes) leads to the instruction at pc, the chunk's insns'th
 * (from 0). In a RUNS chunk: its runs from item byte rec_off (rec_len
 * 0) are its instructions from the insns'th on, the one before at pc
 * (prev_known) or none. */
struct hwt_sw_index_cut {
	uint32_t rec_off;
	uint8_t rec_len;
	bool async;
	bool prev_known;
	uint32_t insns;
	uint64_t pc;
};

struct hwt_sw_index_frame {
	uint64_t file_off;       /* in the trace file */
	uint32_t file_len;
	uint32_t checksum;       /* the frame's content checksum */
	uint64_t decoded_off;    /* in the decoded trace */
	uint32_t decoded_len;
	size_t first_chunk, nchunks;
};

struct hwt_sw_index_chunk {
	struct hwt_sw_chunk_hdr hdr;
	uint64_t decoded_off;    /* its header in the decoded trace */
	size_t frame;
	size_t first_cut, ncuts; /* in cuts[]: (insn_count - 1) / stride */
};

struct hwt_sw_index {
	uint64_t decoded_size;
	struct hwt_sw_index_frame *frames;
	size_t nframes;
	struct hwt_sw_index_chunk *chunks;
	size_t nchunks;
	struct hwt_sw_index_cut *cuts;
	size_t ncuts;
};

/* Compress an hwt-sw trace for a bundle (*zst malloc'd). A trace that is
 * a sequence of plain chunks whose records agree with their headers is
 * framed by chunks and gets an index (*idx malloc'd); anything else
 * (branch chunks, damage) is one frame and *idx is NULL: readers scan it. */
HWT_API int hwt_sw_trace_pack(const uint8_t *trace, size_t n, uint8_t **zst,
			      size_t *zst_n, uint8_t **idx, size_t *idx_n,
			      struct hwt_err *err);

/* The same built up chunk by chunk (sw_pack.c), for traces too long to
 * hold in memory: frames go to write() as they fill, at consecutive
 * offsets from 0, and the oldest may be forgotten to bound what is kept. */
typedef int (*hwt_sw_pack_write_fn)(void *ctx, const uint8_t *frame,
				    size_t n, struct hwt_err *err);
struct hwt_sw_packer;
HWT_API int hwt_sw_packer_new(hwt_sw_pack_write_fn write, void *ctx,
			      struct hwt_sw_packer **out, struct hwt_err *err);
/* A compressor and its output buffer (megabytes) that packers used from
 * one thread take turns with: a recording of many threads needs one,
 * not one a thread. */
struct hwt_sw_pack_work;
HWT_API int hwt_sw_pack_work_new(struct hwt_sw_pack_work **out, struct hwt_err *err);
HWT_API void hwt_sw_pack_work_free(struct hwt_sw_pack_work *w);
/* p compresses with w from now on; w outlives p. */
HWT_API void hwt_sw_packer_share(struct hwt_sw_packer *p, struct hwt_sw_pack_work *w);
/* Keep one restart point in every of the RUNS chunks added from now on
 * (1, the default: all): the index lives in memory until it is written,
 * and older history needs fewer (a segment of 64 K instructions decodes
 * in about a millisecond). */
HWT_API void hwt_sw_packer_thin(struct hwt_sw_packer *p, unsigned every);
/* Add the chunk at c (header and payload, n bytes); -EBADMSG when it is
 * not a plain chunk whose records agree with its header (nothing added). */
HWT_API int hwt_sw_packer_add(struct hwt_sw_packer *p, const uint8_t *c, size_t n,
			      struct hwt_err *err);
/* Write the frame being filled. */
HWT_API int hwt_sw_packer_flush(struct hwt_sw_packer *p, struct hwt_err *err);
/* Write the frame being filled (err NULL: drop it), then give back the
 * memory only adding needs (megabytes: frame buffers, the compressor,
 * the translations read): a packer that will get nothing for a while,
 * or nothing more, keeps only its index. A RUNS chunk added after it
 * needs its TABLE chunk again. */
HWT_API int hwt_sw_packer_rest(struct hwt_sw_packer *p, struct hwt_err *err);
/* Forget the oldest written frames until those kept take at most
 * max_bytes of the output (0: everything, the frame being filled too),
 * and the frames after them that go on with runs whose table they held;
 * adds what they held to *lost_insns and *lost_bytes (decoded). */
HWT_API void hwt_sw_packer_forget(struct hwt_sw_packer *p, uint64_t max_bytes,
				  uint64_t *lost_insns, uint64_t *lost_bytes);
/* Output offsets of the oldest kept frame and of the end of the last;
 * decoded bytes and instructions of the kept frames. */
HWT_API uint64_t hwt_sw_packer_kept_from(const struct hwt_sw_packer *p);
HWT_API uint64_t hwt_sw_packer_end(const struct hwt_sw_packer *p);
HWT_API uint64_t hwt_sw_packer_decoded(const struct hwt_sw_packer *p);
HWT_API uint64_t hwt_sw_packer_insns(const struct hwt_sw_packer *p);
/* The index of the kept frames, after a flush, for a trace file that
 * holds the output from hwt_sw_packer_kept_from on (*idx malloc'd). */
HWT_API int hwt_sw_packer_index(struct hwt_sw_packer *p, uint8_t **idx,
				size_t *idx_n, struct hwt_err *err);
HWT_API void hwt_sw_packer_free(struct hwt_sw_packer *p);

/* Parse the index idx and check it against the compressed trace zst and
 * the decoded size trace.json gives; -EINVAL saying what disagrees. */
HWT_API int hwt_sw_index_parse(const uint8_t *idx, size_t idx_n, const uint8_t *zst,
			       size_t zst_n, uint64_t decoded_size,
			       struct hwt_sw_index **out, struct hwt_err *err);
HWT_API void hwt_sw_index_free(struct hwt_sw_index *ix);
/* Decompress frame i of zst into buf (its decoded_len bytes) and check
 * the headers of its chunks against the index; -EIO naming the frame
 * when it is damaged or they differ. */
HWT_API int hwt_sw_index_frame_read(const struct hwt_sw_index *ix, const uint8_t *zst,
				    size_t i, uint8_t *buf, struct hwt_err *err);

/* ---- bundle -------------------------------------------------------------
 *
 * A directory with trace.json, per-thread raw trace files, module copies
 * and an optional core; the shape of LLDB's intel-pt bundle. See
 * docs/bundle.md. All paths in the model are as written in trace.json
 * (relative to the bundle directory) unless named *_path.
 */

#define HWT_BUNDLE_TYPE_SW "hwtrace-sw"
#define HWT_BUNDLE_TYPE_BTS "hwtrace-bts"  /* Intel BTS records, docs/bts.md */
#define HWT_BUNDLE_VERSION 1
#define HWT_BUNDLE_MAX_JSON (16u << 20)
#define HWT_BUNDLE_MAX_THREADS 4096u
#define HWT_BUNDLE_MAX_MODULES 4096u     /* per process */
#define HWT_BUNDLE_MAX_PROCESSES 4096u
/* Where recorders put the data history in a bundle they write. */
#define HWT_BUNDLE_DATA_HISTORY "data.past"

struct hwt_cpu_info {
	char vendor[16];    /* "GenuineIntel", "AuthenticAMD", ... */
	int family, model, stepping;
};

/* How a thread's trace file holds its trace (trace_zstd.c). */
enum hwt_trace_encoding {
	HWT_TRACE_RAW = 0,       /* as the recorder made it */
	HWT_TRACE_ZSTD,          /* zstd frames of it ("traceEncoding") */
};

/* Bound on a compressed trace's decoded size (traceDecodedSize): the
 * reader allocates it. */
#define HWT_BUNDLE_MAX_DECODED (16ull << 30)

struct hwt_bundle_thread {
	int64_t tid;
	char *trace_file;        /* relative path of the trace */
	uint64_t trace_size;     /* bytes; must equal the file's size */
	enum hwt_trace_encoding encoding;
	uint64_t decoded_size;   /* ZSTD: bytes of the trace decoded */
	/* ZSTD hwt-sw: its index (sw_index.c), or NULL: readers scan it */
	char *index_file;
	uint64_t index_size;
	uint64_t lost_bytes;     /* dropped from the ring when it wrapped */
	uint64_t lost_insns;
	uint64_t insn_total;     /* instructions recorded, lost ones included */
	/* Steps whose trap the machine lost (hwt-sw from ptrace): repaired
	 * from the code, or left as gaps. */
	uint64_t step_repairs, step_gaps;
	size_t process;          /* index in processes[]: 0, the program */
};

struct hwt_bundle_module {
	char *system_path;       /* where the file was on the traced system */
	char *file;              /* copy inside the bundle, or NULL */
	uint64_t load_address;   /* address of the file's first PT_LOAD page */
	char *uuid;              /* GNU build-id in hex, or NULL */
	size_t process;          /* index in processes[]: whose mapping */
};

/* A process of the recording: processes[0] is the program (b->pid, the
 * one with the core), the others children it forked that were followed.
 * Each decodes with its own modules (docs/bundle.md). A process that
 * exec'd is there once per program it ran, exec counting the execs
 * before it (0: the one it started with); processes[0] is the program's
 * last. */
struct hwt_bundle_process {
	int64_t pid;
	uint32_t exec;
};

/* Execs a process may be seen to make: more are refused. */
#define HWT_BUNDLE_MAX_EXECS 4096

enum hwt_stop_reason {
	HWT_STOP_NONE = 0,       /* still running when saved */
	HWT_STOP_EXITED,         /* exit status in stop_status */
	HWT_STOP_SIGNALED,       /* killed by stop_signal */
	HWT_STOP_FAULT,          /* fatal stop_signal at stop_pc in stop_tid */
};

/* ---- CoreSight snapshot model (common/snapshot.c) ----------------------
 * An OpenCSD snapshot directory (snapshot.ini, device and trace ini files,
 * trace buffers, memory dumps) reads as a bundle of type "coresight". The
 * trace unit registers are kept raw: the decoder (replay/decode_etm.c)
 * builds OpenCSD's configuration from them, so common/ needs no OpenCSD.
 * See docs/coresight.md. */

#define HWT_BUNDLE_TYPE_CORESIGHT "coresight"

struct hwt_bundle;
#define HWT_SNAPSHOT_MAX_INI (1u << 20)    /* bytes per ini file */
#define HWT_SNAPSHOT_MAX_LINE 1024u        /* characters per ini line */
#define HWT_SNAPSHOT_MAX_SECTIONS 1024u    /* per ini file */
#define HWT_SNAPSHOT_MAX_DEVICES 256u
#define HWT_SNAPSHOT_MAX_REGIONS 1024u

/* Instruction sets; what an address decodes as. DEFAULT: the image's own
 * (x86-64 for ELF modules, the region's for raw memory). */
enum hwt_isa {
	HWT_ISA_DEFAULT = 0,
	HWT_ISA_X86_64,
	HWT_ISA_A64,         /* AArch64 */
	HWT_ISA_A32,         /* AArch32 ARM */
	HWT_ISA_T32,         /* AArch32 Thumb */
	HWT_ISA_X86_32,      /* x86 in 32-bit mode (Intel PT's MODE.EXEC) */
};

enum hwt_cs_protocol {
	HWT_CS_UNKNOWN = 0,
	HWT_CS_ETMV3,
	HWT_CS_PTM,          /* PTM / PFT */
	HWT_CS_ETMV4,
	HWT_CS_ETE,
	HWT_CS_STM,          /* software messages: no instruction trace */
	HWT_CS_ITM,          /* software messages: no instruction trace */
};

enum hwt_cs_arch { HWT_CS_ARCH_V7 = 7, HWT_CS_ARCH_V8 = 8, HWT_CS_ARCH_AA64 = 64 };

/* Trace unit registers the decoders need, by architectural name. */
enum hwt_cs_reg {
	HWT_CS_TRCIDR0, HWT_CS_TRCIDR1, HWT_CS_TRCIDR2, HWT_CS_TRCIDR8,
	HWT_CS_TRCIDR9, HWT_CS_TRCIDR10, HWT_CS_TRCIDR11, HWT_CS_TRCIDR12,
	HWT_CS_TRCIDR13, HWT_CS_TRCCONFIGR, HWT_CS_TRCTRACEIDR,
	HWT_CS_TRCDEVARCH, HWT_CS_ETMCR, HWT_CS_ETMIDR, HWT_CS_ETMCCER,
	HWT_CS_ETMTRACEIDR, HWT_CS_NREGS
};

struct hwt_bundle_cs_source {
	char *name;              /* device name, e.g. "ETM_0" */
	char *core;              /* core type it traces ("Cortex-A53"), or NULL */
	enum hwt_cs_protocol protocol;
	enum hwt_cs_arch arch;   /* of the traced core */
	char profile;            /* 'A', 'R' or 'M' */
	uint8_t trace_id;
	bool formatted;          /* buffer holds CoreSight frames (several
				  * IDs); else raw data of this source */
	uint32_t regs[HWT_CS_NREGS];
	char *skipped;           /* why it is not decoded (a protocol with no
				  * instruction trace, or one hwtrace does
				  * not decode); NULL: it is a thread */
};

struct hwt_bundle_region {
	char *file;              /* relative to the snapshot directory */
	uint64_t offset, size;   /* the bytes of file that are mapped */
	uint64_t address;
	enum hwt_isa isa;        /* how the core reads it: A64 or A32 */
	bool missing;            /* file absent: the address range reads as
				  * unmapped, as in OpenCSD's own tools */
};

/* Read an OpenCSD snapshot directory into a "coresight" bundle. Every
 * malformed line is an error naming the file and line. */
HWT_API int hwt_snapshot_read(const char *dir, struct hwt_bundle **out,
			      struct hwt_err *err);
/* Whether dir is a snapshot directory (holds snapshot.ini). */
HWT_API bool hwt_snapshot_is(const char *dir);
/* How a thread is shown: CoreSight "0x10" (its trace ID), else the tid in
 * decimal, followed by " (before exec N)" when its history ran a program
 * its process replaced by its Nth exec; cut to fit size. Returns buf. */
HWT_API const char *hwt_bundle_thread_name(const struct hwt_bundle *b, size_t i,
					   char *buf, size_t size);
/* How many processes b holds (at least 1), and the pid of process p. */
HWT_API size_t hwt_bundle_nprocesses(const struct hwt_bundle *b);
HWT_API int64_t hwt_bundle_process_pid(const struct hwt_bundle *b, size_t p);
/* Whether thread t's history ends at the fault that stopped the
 * recording: the faulting tid's, in the program's last program. */
HWT_API bool hwt_bundle_thread_faulted(const struct hwt_bundle *b, size_t t);
/* The exec of process p's program after which it ran no more, or 0 when
 * p is the last program of its pid. */
HWT_API uint32_t hwt_bundle_process_replaced_by(const struct hwt_bundle *b, size_t p);

/* ---- Intel PT bundles (LLDB's intel-pt schema) ------------------------
 * LLDB writes no version, no sizes (the file size is taken), and paths may
 * be absolute or relative to the bundle directory. See docs/intel-pt.md. */

#define HWT_BUNDLE_TYPE_PT "intel-pt"
#define HWT_BUNDLE_MAX_CPUS 4096u

struct hwt_bundle_pt_cpu {
	int64_t id;
	char *trace_file;        /* raw Intel PT of this cpu */
	char *switch_file;       /* perf context-switch records */
	uint64_t trace_size;
};

/* perf's time_zero conversion of TSC values to nanoseconds. */
struct hwt_tsc_conv {
	uint32_t time_mult;
	uint16_t time_shift;
	uint64_t time_zero;
};

struct hwt_bundle {
	char *dir;               /* directory the bundle was read from */
	char *type;              /* HWT_BUNDLE_TYPE_* */
	struct hwt_cpu_info cpu;
	int64_t pid;             /* the program's: processes[0].pid */
	char *triple;
	/* Threads and modules of every process, each naming its process.
	 * NULL processes: one, the program, holding them all. */
	struct hwt_bundle_process *processes;
	size_t nprocesses;
	struct hwt_bundle_thread *threads;
	size_t nthreads;
	struct hwt_bundle_module *modules;
	size_t nmodules;
	char *core;              /* relative path of the core, or NULL */
	/* Registers and memory of the past (hwt-past.h), or NULL: the data
	 * history file's relative path. */
	char *data_history;
	enum hwt_stop_reason stop_reason;
	int stop_status, stop_signal;
	int64_t stop_tid;
	uint64_t stop_pc;
	/* Why the recording is incomplete although it was written (the
	 * recorder stopped before the program ended, a bound was reached),
	 * or NULL: trace.json's stop.note. */
	char *stop_note;
	/* ---- CoreSight snapshots (common/snapshot.c); empty otherwise ----
	 * threads[i] is the trace source sources[i] (tid = its trace ID);
	 * the sources past nthreads are skipped, each with its reason (STM
	 * and ITM carry no instruction trace; other device types are not
	 * decoded). Memory dumps are raw bytes at an address. */
	struct hwt_bundle_cs_source *sources;
	size_t nsources;
	struct hwt_bundle_region *regions;
	size_t nregions;
	/* ---- Intel PT (LLDB's intel-pt schema, docs/intel-pt.md); empty
	 * otherwise. Per-thread bundles name a trace in each thread; per-cpu
	 * bundles have pt_cpus instead and threads without trace_file. */
	struct hwt_bundle_pt_cpu *pt_cpus;
	size_t npt_cpus;
	bool has_tsc_conv;       /* tscPerfZeroConversion given */
	struct hwt_tsc_conv tsc_conv;
	char *kernel_file;       /* "kernel".file, or NULL */
	uint64_t kernel_load_address;
};

/* Read and validate dir/trace.json (or a trace.json path): every required
 * field present with the right type, every named file present with the
 * size trace.json gives. */
HWT_API int hwt_bundle_read(const char *path, struct hwt_bundle **out,
			    struct hwt_err *err);
HWT_API void hwt_bundle_free(struct hwt_bundle *b);
/* The trace.json key naming a thread's trace file in a bundle of this
 * type ("swTrace", "btsTrace", "iptTrace"); NULL for an unknown type. */
HWT_API const char *hwt_bundle_trace_key(const char *type);
/* Absolute or dir-relative path of a bundle member; caller frees. */
HWT_API char *hwt_bundle_path(const struct hwt_bundle *b, const char *rel);
/* Read a whole bundle member with a size bound. Caller frees *data. */
HWT_API int hwt_bundle_load_file(const struct hwt_bundle *b, const char *rel,
				 uint64_t expect_size, uint8_t **data, size_t *size,
				 struct hwt_err *err);
/* A thread's trace, decoded if its file is compressed. Caller frees. */
HWT_API int hwt_bundle_load_trace(const struct hwt_bundle *b,
				  const struct hwt_bundle_thread *t, uint8_t **data,
				  size_t *size, struct hwt_err *err);
/* trace_zstd.c: a compressed trace (zstd frames, hwt_sw_trace_pack)
 * back into memory (*out malloc'd); the decoded size must be exactly
 * decoded_size. */
HWT_API int hwt_trace_decompress(const uint8_t *in, size_t n, uint64_t decoded_size,
				 uint8_t **out, struct hwt_err *err);
/* Small files kept beside traces (their indexes): one zstd frame with its
 * content checksum (*out malloc'd), and back, refused (-EINVAL, saying
 * why) unless in is exactly such a frame decoding to at most max bytes. */
HWT_API int hwt_zstd_pack(const void *in, size_t n, uint8_t **out, size_t *out_n,
			  struct hwt_err *err);
HWT_API int hwt_zstd_unpack(const uint8_t *in, size_t n, uint64_t max, uint8_t **out,
			    size_t *out_n, struct hwt_err *err);

/* Writing: the caller fills a struct hwt_bundle (dir unused) and places the
 * files in the staging directory it got from hwt_bundle_stage_begin; commit
 * writes trace.json and renames the staging directory to final_dir.
 * type HWT_BUNDLE_TYPE_PT writes LLDB's intel-pt schema (threads' trace_file
 * as iptTrace, no version, sizes or stop: docs/lldb.md); with pt_cpus a
 * per-cpu one (cpus[], tscPerfZeroConversion when has_tsc_conv, threads
 * without trace_file). */
HWT_API int hwt_bundle_stage_begin(const char *final_dir, char **staging_dir,
				   struct hwt_err *err);
HWT_API int hwt_bundle_stage_commit(const char *staging_dir, const char *final_dir,
				    const struct hwt_bundle *b, struct hwt_err *err);
HWT_API void hwt_bundle_stage_abort(const char *staging_dir);
/* Copy a file into the staging directory at rel (directories created). */
HWT_API int hwt_bundle_stage_copy(const char *staging_dir, const char *rel,
				  const char *src, struct hwt_err *err);
HWT_API int hwt_bundle_stage_write(const char *staging_dir, const char *rel,
				   const void *data, size_t size, struct hwt_err *err);

/* ---- ELF build ids (util.c) ------------------------------------------- */

/* GNU build-id of an ELF file as lowercase hex into out (>= 41 bytes);
 * -ENOENT if it has none. */
HWT_API int hwt_elf_build_id(const char *path, char *out, size_t outsz,
			     struct hwt_err *err);

/* ---- copying a bundle (bundle_copy.c) --------------------------------
 * Write bundle b (as read) to out_dir, which must not exist, through the
 * writer above: traces, module copies and the core are copied in, so the
 * result stands alone. CoreSight snapshots and per-cpu Intel PT traces are
 * refused (-ENOTSUP): the writer has no form for them. */
HWT_API int hwt_bundle_copy(const struct hwt_bundle *b, const char *out_dir,
			    struct hwt_err *err);

#ifdef __cplusplus
}
#endif
#endif
