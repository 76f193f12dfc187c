/* SPDX-License-Identifier: BSD-2-Clause */
/* hwt-replay.h - turn recorded traces into instruction and call history.
 *
 * image    what code was at an address (ELF files at load addresses, cores)
 * insn     instruction length, class and text (x86: Zydis; Arm: Capstone)
 * history  instruction history of one thread, built lazily from the newest
 *          end; items are numbered 1..count, oldest first (GDB's numbering)
 * calls    function-call segments with nesting levels
 * cursor   a position in the history moved like reverse/forward execution
 *
 * Functions return 0 (or a count) on success and a negative errno on
 * failure, with a message in struct hwt_err when one is given.
 */
#ifndef HWT_REPLAY_H
#define HWT_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hwt-common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- image ------------------------------------------------------------- */

struct hwt_image;

HWT_API int hwt_image_new(struct hwt_image **out, struct hwt_err *err);
HWT_API void hwt_image_free(struct hwt_image *img);
/* Map an ELF executable or shared object whose first PT_LOAD page is at
 * load_address (non-PIE executables: their link address). */
HWT_API int hwt_image_add_elf(struct hwt_image *img, const char *path,
			      uint64_t load_address, struct hwt_err *err);
/* Map the PT_LOAD segments of an ELF core file. */
HWT_API int hwt_image_add_core(struct hwt_image *img, const char *path,
			       struct hwt_err *err);
/* Modules (bundle copy, else system path) and the core of a bundle: its
 * program's, process 0.
 * Fails if any file cannot be mapped, after mapping all the others: the
 * image stays usable, code in the missing files reads as unmapped. */
HWT_API int hwt_image_add_bundle(struct hwt_image *img, const struct hwt_bundle *b,
				 struct hwt_err *err);
/* The same for process p of b: its modules (the program's when it lists
 * none: a forked child that kept its parent's mappings); the core and
 * memory dumps only for the program. */
HWT_API int hwt_image_add_bundle_process(struct hwt_image *img,
					 const struct hwt_bundle *b, size_t p,
					 struct hwt_err *err);

/* The images of a bundle's processes, each made when a thread of its is
 * first asked about (bundle_images.c). */
struct hwt_bundle_images;

HWT_API int hwt_bundle_images_new(const struct hwt_bundle *b,
				  struct hwt_bundle_images **out, struct hwt_err *err);
/* The image thread t's history decodes with: its process's. An error as
 * hwt_image_add_bundle's (a file that could not be mapped) leaves *img
 * usable; only -ENOMEM leaves it NULL. */
HWT_API int hwt_bundle_images_thread(struct hwt_bundle_images *ims, size_t t,
				     struct hwt_image **img, struct hwt_err *err);
/* The program's image (process 0), as hwt_bundle_images_thread. */
HWT_API int hwt_bundle_images_program(struct hwt_bundle_images *ims,
				      struct hwt_image **img, struct hwt_err *err);
HWT_API void hwt_bundle_images_free(struct hwt_bundle_images *ims);
/* Map size bytes of a raw memory dump from file_offset at address; its
 * code decodes as isa unless a decoder says otherwise (CoreSight
 * snapshots: A64 or A32, Thumb per trace range). */
HWT_API int hwt_image_add_raw(struct hwt_image *img, const char *path,
			      uint64_t file_offset, uint64_t size, uint64_t address,
			      enum hwt_isa isa, struct hwt_err *err);
/* Copy up to len bytes at addr; returns the bytes available (0: unmapped).*/
HWT_API size_t hwt_image_read(struct hwt_image *img, uint64_t addr, void *buf,
			      size_t len);
/* The same from the read-only segments of module files alone (code,
 * constants, unwind tables): bytes that held the same value at every
 * point of the program's past, as GDB's btrace replay reads with
 * `replay-memory-access read-only`. Core memory, raw dumps and writable
 * segments stop the read. */
HWT_API size_t hwt_image_read_constant(struct hwt_image *img, uint64_t addr,
				       void *buf, size_t len);

/* ---- instructions ------------------------------------------------------ */

enum hwt_insn_class {
	HWT_INSN_OTHER = 0,
	HWT_INSN_CALL,
	HWT_INSN_RET,
	HWT_INSN_JUMP,       /* unconditional, direct or indirect */
	HWT_INSN_CJUMP,      /* conditional */
	HWT_INSN_SYSCALL,    /* syscall, sysenter, int */
};

struct hwt_insn {
	uint64_t addr;
	uint8_t len;
	enum hwt_insn_class cls;
	char text[96];       /* "mov    %rsp,%rbp" (AT&T, as GDB prints) */
};

HWT_API const char *hwt_insn_class_name(enum hwt_insn_class cls);
/* Decode the instruction at addr from the image; text only if want_text.
 * -ENOENT when no code is mapped there, -EILSEQ when it does not decode
 * (then the text, if wanted, is "undecodable:" and the bytes there). */
HWT_API int hwt_image_insn(struct hwt_image *img, uint64_t addr, bool want_text,
			   struct hwt_insn *out);
/* The same in a given instruction set (an item's isa). */
HWT_API int hwt_image_insn_isa(struct hwt_image *img, uint64_t addr, enum hwt_isa isa,
			       bool want_text, struct hwt_insn *out);

/* ---- symbols and lines ------------------------------------------------- */

struct hwt_symbol {
	const char *function;   /* NULL when unknown */
	uint64_t func_addr;
	const char *module;     /* path of the module holding addr, or NULL */
	const char *file;       /* source file from DWARF, or NULL */
	int line;               /* 0 when unknown */
};

/* Strings stay valid until the image is freed. Returns 0 even when only
 * part is known; -ENOENT if addr is in no module. */
HWT_API int hwt_image_symbolize(struct hwt_image *img, uint64_t addr,
				struct hwt_symbol *out);
/* Address of a function by name (first match over modules), 0 if none. */
HWT_API uint64_t hwt_image_lookup_function(struct hwt_image *img, const char *name);

/* ---- history ----------------------------------------------------------- */

enum hwt_item_kind { HWT_ITEM_INSN = 0, HWT_ITEM_GAP };

#define HWT_ITEM_ASYNC 0x1u  /* reached by an asynchronous transfer */
#define HWT_ITEM_BLOCK 0x2u  /* first instruction of a decoded block (a
			      * trace range: CoreSight INSTR_RANGE) */
#define HWT_ITEM_PTWRITE 0x4u  /* a PTWRITE; its payload in ptwrite */

struct hwt_item {
	uint64_t index;          /* 1-based, oldest first */
	enum hwt_item_kind kind;
	uint64_t addr;           /* HWT_ITEM_INSN */
	uint8_t len;             /* 0 when the code is not available */
	enum hwt_insn_class cls;
	uint32_t flags;
	const char *gap_reason;  /* HWT_ITEM_GAP; valid while history lives */
	enum hwt_isa isa;        /* HWT_ITEM_INSN: how addr decodes */
	uint64_t timestamp;      /* trace time (Intel PT: TSC); 0 = none */
	uint64_t ptwrite;        /* HWT_ITEM_PTWRITE */
};

struct hwt_history;

/* Open thread number thread_idx of a bundle (decoder chosen by its type).
 * Builds only the segment index (for hwt-sw: chunk headers and record
 * framing, so that a corrupt chunk's item count is known before anything
 * is decoded; chunks of block-step branch records are expanded with img
 * here, once); instructions are decoded on demand. */
HWT_API int hwt_history_open(const struct hwt_bundle *b, size_t thread_idx,
			     struct hwt_image *img, struct hwt_history **out,
			     struct hwt_err *err);
/* Same over an hwt-sw trace in memory (not copied; must outlive h). */
HWT_API int hwt_history_open_sw(const uint8_t *trace, size_t size,
				uint64_t lost_insns, struct hwt_image *img,
				struct hwt_history **out, struct hwt_err *err);
HWT_API void hwt_history_free(struct hwt_history *h);
HWT_API uint64_t hwt_history_count(struct hwt_history *h);
HWT_API int hwt_history_get(struct hwt_history *h, uint64_t index,
			    struct hwt_item *out, struct hwt_err *err);
/* A run of items as the decoder produced it: count sequential
 * instructions from begin to end (inclusive), or one gap item. */
struct hwt_run {
	uint64_t index;          /* its first item's (1-based) */
	uint64_t begin, end;
	uint64_t next;           /* fall-through of end; 0: no code there */
	uint32_t count;
	bool gap;
};
/* Call fn for every run of the history from the one holding item from
 * (1-based; 0 or 1: the first), oldest first, until it returns non-zero
 * (which is returned). That first run may start before from. An export
 * costs one decode per segment and one instruction lookup per run, where
 * hwt_history_get looks up every instruction; the segments before from's
 * are not decoded, so the newest items of a long history cost what they
 * alone cost. fn must not use h. */
HWT_API int hwt_history_runs(struct hwt_history *h, uint64_t from,
			     int (*fn)(void *arg, const struct hwt_run *r), void *arg,
			     struct hwt_err *err);
/* Why the bundle's index of the thread's trace was not used (missing
 * file, stale or damaged: the trace was then read whole), or NULL when
 * it was used or the trace has none. Valid while the history lives. */
HWT_API const char *hwt_history_index_note(const struct hwt_history *h);
/* Whether the segments came from the index kept beside the trace
 * (`hwtrace index`) instead of decoding the whole trace. */
HWT_API bool hwt_history_index_kept(const struct hwt_history *h);
/* Whether the history reads superblock runs kept as the valgrind
 * recorder's tool wrote them (docs/swtrace.md, "Runs chunks"),
 * expanding only the parts asked for. */
HWT_API bool hwt_history_runs_kept(const struct hwt_history *h);
/* The history's segment index as `hwtrace index` keeps it beside the
 * trace (hwt_history_index_path; *out malloc'd), CoreSight's with the
 * blocks it decoded; -ENOTSUP for traces indexed otherwise (hwt-sw at
 * recording) or whose index holds other decoded data (block-step
 * expansion). */
HWT_API int hwt_history_index_save(const struct hwt_history *h, uint8_t **out,
				   size_t *out_n, struct hwt_err *err);
/* Where thread's kept index goes, relative to the bundle: TRACE.hwtidx,
 * TRACE.ID.hwtidx for a CoreSight source (ID its trace ID in hex: one
 * buffer holds several sources). Caller frees; NULL: out of memory. */
HWT_API char *hwt_history_index_path(const struct hwt_bundle *b, size_t thread);
/* Bytes the history holds now (index, caches, retained trace). */
HWT_API size_t hwt_history_memory(const struct hwt_history *h);

/* ---- function calls ---------------------------------------------------- */

struct hwt_call_segment {
	uint64_t first, last;    /* item indices, inclusive */
	int level;               /* nesting; the smallest level is 0 */
	const char *function;    /* NULL when unknown */
	const char *file;        /* NULL when unknown */
	int line_min, line_max;  /* 0 when unknown */
	bool gap;                /* segment stands for a gap item */
};

struct hwt_calls;

/* Build segments for items first..last (0, 0 = the whole history). */
HWT_API int hwt_calls_build(struct hwt_history *h, struct hwt_image *img,
			    uint64_t first, uint64_t last, struct hwt_calls **out,
			    struct hwt_err *err);
HWT_API size_t hwt_calls_count(const struct hwt_calls *c);
HWT_API const struct hwt_call_segment *hwt_calls_get(const struct hwt_calls *c,
						     size_t i);
HWT_API void hwt_calls_free(struct hwt_calls *c);

/* ---- Intel BTS and Intel PT (decode_bts.c, pt_encode.c) ---------------
 * BTS: 24-byte branch records, docs/bts.md. PT: any x86-64 history written
 * as a real Intel PT stream, docs/bts.md ("Intel PT encoder"). */

/* A history over BTS records in memory (not copied; must outlive h).
 * end_pc, when not 0, is the thread's current pc: the newest block runs
 * from the last record's target to it. */
HWT_API int hwt_history_open_bts(const uint8_t *trace, size_t size, uint64_t end_pc,
				 struct hwt_image *img, struct hwt_history **out,
				 struct hwt_err *err);
/* A history over raw Intel PT in memory (not copied; must outlive h), as
 * one thread's perf AUX data; cpu (may be NULL) picks libipt's errata. */
HWT_API int hwt_history_open_pt(const uint8_t *trace, size_t size,
				const struct hwt_cpu_info *cpu, struct hwt_image *img,
				struct hwt_history **out, struct hwt_err *err);
/* Items first..last (0, 0: all) of any history as BTS records: a begin
 * record {0, first pc}, one record per transfer that is not a fall-through
 * and {last pc, 0} / {0, next pc} around gaps and at the end, so that
 * hwt_history_open_bts gives the same items back. Caller frees *out. */
HWT_API int hwt_history_to_bts(struct hwt_history *h, uint64_t first, uint64_t last,
			       uint8_t **out, size_t *size, struct hwt_err *err);

/* The cpu an encoded Intel PT stream should claim for a recording made
 * on cpu recorded (NULL: unknown): that one when it is an Intel cpu
 * libipt knows, else a Skylake server (family 6 model 0x55), because
 * GDB's and LLDB's decoders take only GenuineIntel cpus libipt can
 * name. Encoder and the stream's description must give the same. */
HWT_API struct hwt_cpu_info hwt_pt_stream_cpu(const struct hwt_cpu_info *recorded);

/* Options; may grow. Declare with HWT_OPTS(hwt_pt_encode_opts, o, ...);
 * NULL or a zeroed struct: the defaults. */
struct hwt_pt_encode_opts {
	size_t sz;
	struct hwt_cpu_info cpu;  /* the stream's cpu; vendor GenuineIntel
				   * (empty vendor: family 6 model 0x55) */
	size_t psb_period;        /* bytes between PSB+ (0: 4096) */
	uint64_t tsc;             /* not 0: the TSC every PSB+ carries, below
				   * 2^56 (a per-cpu trace's stretch of one
				   * thread, hwt_pt_switch_record) */
	/* Called every 65536 items and at the end with the items encoded
	 * and their count, for a caller that shows progress; NULL: none. */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
};

/* Items first..last (0, 0: all) of an x86-64 history as an Intel PT
 * stream that libipt, GDB and LLDB decode to the same instructions; the
 * last item is where the stream ends (FUP + TIP.PGD there), so it is the
 * decoder's stop pc rather than a decoded instruction. img is the image
 * the history decodes with. Caller frees *out. */
HWT_API int hwt_pt_encode(struct hwt_history *h, struct hwt_image *img,
			  uint64_t first, uint64_t last,
			  const struct hwt_pt_encode_opts *opts, uint8_t **out,
			  size_t *size, struct hwt_err *err);

/* ---- per-cpu Intel PT: perf's context-switch records (pt_switch.c) ---
 * A per-cpu trace (LLDB's cpus[]) keeps for each cpu the perf_event
 * PERF_RECORD_SWITCH_CPU_WIDE records of who ran there, read when a
 * thread's history is opened (docs/intel-pt.md). These write them. */

#define HWT_PT_SWITCH_RECORD_SIZE 32u

/* perf's clock (ns) at TSC tsc (perf_event_mmap_page's time_zero
 * formula, modulo 2^64). Reading converts back the way LLDB does, which
 * rounds down: a time comes back up to time_mult's rounding (a few
 * ticks) early. */
HWT_API uint64_t hwt_tsc_to_perf_ns(const struct hwt_tsc_conv *conv, uint64_t tsc);
/* One record as LLDB stores it (sample_id_all with PERF_SAMPLE_TID and
 * PERF_SAMPLE_TIME): thread pid/tid switched onto the cpu (switch_out
 * false) or off it at perf time ns, the idle task (0) on the other side. */
HWT_API void hwt_pt_switch_record(uint8_t out[HWT_PT_SWITCH_RECORD_SIZE],
				  bool switch_out, uint32_t pid, uint32_t tid,
				  uint64_t ns);

/* ---- cursor ------------------------------------------------------------ */

enum hwt_dir { HWT_BACKWARD = -1, HWT_FORWARD = 1 };

enum hwt_move {
	HWT_MOVED = 0,           /* stopped where the command asked */
	HWT_BOUNDARY = 1,        /* ran into the begin or end of history */
	HWT_HIT = 2,             /* continue: stopped at a breakpoint address */
};

struct hwt_cursor;

/* The position is always an instruction, never a gap item. A gap ends
 * step, next and finish at the first instruction beyond it, reported as
 * HWT_BOUNDARY (call depth and line are unknown across it); stepi and
 * continue pass over gaps. Starts at the newest instruction. */
HWT_API int hwt_cursor_new(struct hwt_history *h, struct hwt_image *img,
			   struct hwt_cursor **out, struct hwt_err *err);
HWT_API void hwt_cursor_free(struct hwt_cursor *c);
HWT_API uint64_t hwt_cursor_pos(const struct hwt_cursor *c);
/* -EINVAL for a gap item, -ERANGE outside the history. */
HWT_API int hwt_cursor_goto(struct hwt_cursor *c, uint64_t index,
			    struct hwt_err *err);
/* Each returns enum hwt_move or a negative errno. */
HWT_API int hwt_cursor_stepi(struct hwt_cursor *c, enum hwt_dir dir,
			     struct hwt_err *err);
/* By source line, into calls (step) or over them (next). */
HWT_API int hwt_cursor_step(struct hwt_cursor *c, enum hwt_dir dir,
			    struct hwt_err *err);
HWT_API int hwt_cursor_next(struct hwt_cursor *c, enum hwt_dir dir,
			    struct hwt_err *err);
/* Out of the current function: backward to its call instruction in the
 * caller, forward to the caller's instruction after the return. */
HWT_API int hwt_cursor_finish(struct hwt_cursor *c, enum hwt_dir dir,
			      struct hwt_err *err);
/* To the nearest instruction in dir at any of addrs (not counting the
 * current position). */
HWT_API int hwt_cursor_continue(struct hwt_cursor *c, enum hwt_dir dir,
				const uint64_t *addrs, size_t naddrs,
				struct hwt_err *err);
/* The same, going no further than item index bound (HWT_BOUNDARY
 * there): backward not before it, forward not past it. */
HWT_API int hwt_cursor_continue_within(struct hwt_cursor *c, enum hwt_dir dir,
				       const uint64_t *addrs, size_t naddrs,
				       uint64_t bound, struct hwt_err *err);

/* ---- text (format.c) ---------------------------------------------------
 * One history line as `hwtrace dump --insn` / `--calls` print it
 * (docs/cli.md), without the newline: tsv or the human form. tid is the
 * thread's name (hwt_bundle_thread_name); n the call line's 1-based number.
 * Returns the length, or -ENOSPC when buf is too small. */
HWT_API int hwt_format_item(struct hwt_image *img, const char *tid,
			    const struct hwt_item *it, bool tsv, char *buf,
			    size_t size);
HWT_API int hwt_format_call(const char *tid, size_t n,
			    const struct hwt_call_segment *s, bool tsv, char *buf,
			    size_t size);
/* What bundle b holds, as `hwtrace info` reports it (describe.c): format,
 * cpu, process, stop (with the fault's function and line from img), core,
 * each thread's history and lost instructions, CoreSight sources and
 * memory dumps, modules. Opens each thread's history to count it. Caller
 * frees *text. */
HWT_API int hwt_bundle_describe(const struct hwt_bundle *b,
				struct hwt_bundle_images *ims,
				char **text, struct hwt_err *err);

#ifdef __cplusplus
}
#endif
#endif
