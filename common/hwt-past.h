/* SPDX-License-Identifier: BSD-2-Clause */
/* hwt-past.h - values of the past: what a recorder that sees data keeps
 * besides where the program went, so that a debugger moving back through
 * the history is shown the registers and memory of that moment.
 *
 *   reglog.c     each thread's registers (general, x87/SSE) before every
 *                recorded instruction
 *   memhist.c    memory as it was: the old bytes of every store, asked
 *                against the memory where the history ends
 *   memindex.c   those stores found by address
 *   past_file.c  both, as a bundle's data history file (docs/bundle.md)
 *
 * Nothing here prints or exits; what cannot be known is said to be
 * unknown, never guessed.
 */
#ifndef HWT_PAST_H
#define HWT_PAST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "hwt-common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- registers (reglog.c) ------------------------------------------------ */

/* A log of a register set of N 8-byte words: a key state every
 * HWT_REGLOG_BLOCK entries, then per entry a mask of the words that
 * changed (one bit each, (N + 7) / 8 bytes) and those words. */
#define HWT_REGLOG_BLOCK 1024u
#define HWT_REGLOG_MAX_WORDS 64u
/* The general registers (NT_PRSTATUS) and the x87/SSE state (FXSAVE,
 * NT_PRFPREG). */
#define HWT_REGLOG_GPR_WORDS (sizeof(struct user_regs_struct) / 8)
#define HWT_REGLOG_FP_WORDS (sizeof(struct user_fpregs_struct) / 8)

struct hwt_reglog_block {
	uint64_t key[HWT_REGLOG_MAX_WORDS];
	uint8_t *data;             /* deltas of entries 1 .. count - 1 */
	size_t len, alloc;
	uint32_t count;
};

struct hwt_reglog {
	unsigned nwords;           /* words of an entry; 0: not kept */
	uint64_t first;            /* instruction index of the oldest entry */
	uint64_t n;                /* entries from first on */
	struct hwt_reglog_block *blocks;
	size_t nblocks, alloc;
	size_t bytes, cap;         /* kept, and the bound */
	/* The newest entry (words[cur]) and the one before it, whose delta
	 * a replaced newest entry is encoded from again. */
	uint64_t words[2][HWT_REGLOG_MAX_WORDS];
	unsigned cur;
	size_t last_off;           /* the newest entry's delta; SIZE_MAX: a key */
	bool prev_same;            /* the one before holds the same words */
};

/* An empty log of nwords-word entries kept to about cap bytes. */
HWT_API void hwt_reglog_init(struct hwt_reglog *l, unsigned nwords, size_t cap);
/* The registers (nwords words) before instruction index (the next after
 * the newest, or the log starts again there). Past cap the oldest blocks
 * are dropped, down to seven eighths of it; out of memory, the log is
 * emptied (never misplaced). */
HWT_API void hwt_reglog_append(struct hwt_reglog *l, uint64_t index,
			       const void *regs);
/* The same, regs known by the caller to be the newest entry's words
 * (nothing written since): not compared with them. */
HWT_API void hwt_reglog_append_same(struct hwt_reglog *l, uint64_t index,
				    const void *regs);
/* The newest entry's registers were changed (a debugger's write). */
HWT_API void hwt_reglog_replace_last(struct hwt_reglog *l, const void *regs);
/* Blocks [from, to) are written elsewhere (hwt_past_writer_flush): their
 * deltas are freed and they answer nothing more. */
HWT_API void hwt_reglog_release(struct hwt_reglog *l, size_t from, size_t to);
/* The registers before instruction index into out (nwords words): 0, or
 * -ENOENT when not kept. */
HWT_API int hwt_reglog_get(const struct hwt_reglog *l, uint64_t index, void *out);
HWT_API void hwt_reglog_free(struct hwt_reglog *l);
/* Whether a block's deltas decode to exactly count - 1 entries of l's
 * words within its len (a log read from a file is checked so before it
 * is asked). */
HWT_API bool hwt_reglog_block_valid(const struct hwt_reglog *l,
				    const struct hwt_reglog_block *b);

/* ---- memory (memhist.c) -------------------------------------------------- */

/* Steps are numbered across threads in the order they were taken. An
 * entry keeps the old bytes at [addr, addr+len) before step seq (at off
 * in the history's bytes), or, with off HWT_MEM_UNKNOWN, says those
 * bytes cannot be known before that step. */
#define HWT_MEM_UNKNOWN UINT64_MAX

struct hwt_mem_entry {
	uint64_t seq;
	uint64_t addr, len;
	uint64_t off;
	int32_t tid;               /* whose step (0: the kernel's) */
};

/* A thread's instruction index where it was stepped after another
 * thread, and that step's number: its later instructions follow on. */
struct hwt_mem_run {
	uint64_t index, seq;
};

struct hwt_mem_thread {
	int32_t tid;
	const struct hwt_mem_run *runs;
	size_t nruns;
	uint64_t last_seq;         /* its newest step */
};

/* The stores of a history found by address (memindex.c), so that memory
 * at a point far back is not found by walking every store after it. */
struct hwt_mem_index;

/* An index of stores e[0 .. n) (sorted by seq): 0, -ENOMEM, or -E2BIG
 * past 2^32 - 1 stores (they are then walked). */
HWT_API int hwt_mem_index_build(const struct hwt_mem_entry *e, size_t n,
				struct hwt_mem_index **out);
HWT_API void hwt_mem_index_free(struct hwt_mem_index *ix);
/* How many stores it holds (e[0 .. that)). */
HWT_API size_t hwt_mem_index_count(const struct hwt_mem_index *ix);
/* Each byte of [addr, addr+len) (no wrap) that a store numbered first or
 * later covers: out and known from the oldest such store (its old byte,
 * or unknown); other bytes are left as they are. */
HWT_API void hwt_mem_index_before(const struct hwt_mem_index *ix,
				  const struct hwt_mem_entry *e, const uint8_t *bytes,
				  uint32_t first, uint64_t addr, uint8_t *out,
				  bool *known, size_t len);

struct hwt_mem_history {
	const struct hwt_mem_entry *e;   /* sorted by seq */
	size_t n;
	/* NULL, or an index of e[0 .. its count) (later stores are
	 * walked). */
	const struct hwt_mem_index *index;
	/* The index is being built (hwt_past_memory_begin): a question
	 * that would walk the stores for memory at a point says -EAGAIN
	 * instead, to be asked again with it. */
	bool index_pending;
	const uint8_t *bytes;
	uint64_t horizon;                /* nothing known before this step */
	const struct hwt_mem_thread *threads;
	size_t nthreads;
	/* Memory where the history ends (the stopped process, the core):
	 * bytes read from addr, short or 0 where there are none. */
	size_t (*read_now)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
};

/* Bytes from addr known before thread tid's instruction index: how many
 * (0: none), or -ENOENT (no such thread) / -ENOMEM. */
HWT_API int hwt_mem_history_at(const struct hwt_mem_history *h, int32_t tid,
			       uint64_t index, uint64_t addr, void *buf, size_t len);
/* Who wrote what a watch covers, in a motion of one thread. */
#define HWT_MEM_NO_BOUND UINT64_MAX
#define HWT_MEM_WATCH_MAX 64u

struct hwt_write_query {
	int32_t tid;               /* the thread that moves */
	uint64_t from;             /* its instruction index it moves from */
	int dir;                   /* < 0 backward, > 0 forward */
	/* Its instruction index where the motion stopped anyway (a
	 * breakpoint, the history's end): stores past it, in the order
	 * steps were taken by all threads, are not reached. Backward, the
	 * store at until itself is; forward, it is not (not executed).
	 * HWT_MEM_NO_BOUND: none. */
	uint64_t until;
	uint64_t addr, len;        /* the watched range: 1 to 64 bytes */
	/* Where in the order of steps the motion starts, when it is not
	 * from's: a moment another thread's store was found at (backward:
	 * that step, not searched again; forward: the step after it).
	 * HWT_MEM_NO_BOUND: from's. */
	uint64_t from_step;
};

struct hwt_write_found {
	int32_t tid;               /* the storing thread */
	uint64_t index;            /* its instruction index */
	uint64_t step;             /* the store's place in the order of all
				    * threads' steps (nearer: compare) */
};

/* Thread tid's instruction index at the moment before step (in the order
 * of all threads' steps; a step before the horizon is taken as the
 * horizon): its first instruction taken at or after it; one past its
 * newest when it took none since. false: no such thread. */
HWT_API bool hwt_mem_history_index_at(const struct hwt_mem_history *h, int32_t tid,
				      uint64_t step, uint64_t *index);

/* The nearest kept store, of any thread, that changed bytes of q's range,
 * going backward from before q->tid's instruction q->from, or forward
 * from it on, up to q->until. 1 with the store in *out, 0 when none can
 * be told (the history's start or end, the bound, or bytes that cannot be
 * known come first), or a negative errno (-EAGAIN: whether a store
 * changed its bytes needs the index h->index_pending says is coming). */
HWT_API int hwt_mem_history_find_write(const struct hwt_mem_history *h,
				       const struct hwt_write_query *q,
				       struct hwt_write_found *out);

/* A kept store that changed bytes of a watched range: the storing
 * instruction (its thread and instruction index, its step) and the
 * range's bytes before and after it (known[i]: byte i of both). */
struct hwt_mem_write {
	int32_t tid;
	uint64_t index, seq;
	uint8_t before[HWT_MEM_WATCH_MAX], after[HWT_MEM_WATCH_MAX];
	bool known[HWT_MEM_WATCH_MAX];
};

/* Every kept store that changed bytes of [addr, addr+len) (1 to 64
 * bytes), newest first, to each(ctx, w) until it returns false. Stops at
 * bytes that cannot be known before some step (*cut then true: earlier
 * writes cannot be told) or at the history's start. Returns how many
 * were given, or a negative errno. */
HWT_API int hwt_mem_history_writes(const struct hwt_mem_history *h, uint64_t addr,
				   uint64_t len,
				   bool (*each)(void *ctx, const struct hwt_mem_write *w),
				   void *ctx, bool *cut);

/* ---- the data history file (past_file.c) --------------------------------- */

/* A file's register log is read a group of HWT_PAST_GROUP_BLOCKS blocks
 * at a time, when an entry in it is first asked for. */
#define HWT_PAST_GROUP_BLOCKS 32u

struct hwt_past_group {
	uint64_t off, csize;       /* its frame in the file */
	uint8_t *raw;              /* read: what the blocks point into */
	int state;                 /* 0 not read, 1 read, < 0 damaged */
};

struct hwt_past_thread {
	int32_t tid;
	uint64_t end_index;        /* its newest recorded instruction */
	struct hwt_reglog regs;    /* general registers */
	struct hwt_reglog fpregs;  /* x87/SSE (FXSAVE); nwords 0: none */
	struct hwt_mem_run *runs;
	size_t nruns;
	uint64_t last_seq;
	/* Read from a file: each log's groups (regs, fpregs); a block not
	 * read yet has count 0. A recorder's logs have none. */
	struct hwt_past_group *groups[2];
	size_t ngroups[2];
};

struct hwt_frame_ref {
	uint64_t off, csize;
};

struct hwt_past {
	struct hwt_past_thread *threads;
	size_t nthreads;
	/* The stores and their old bytes. Read from a file, n and nbytes
	 * are known at once, e and bytes once hwt_past_memory read them. */
	struct hwt_mem_entry *e;
	size_t n;
	uint8_t *bytes;
	size_t nbytes;
	uint64_t horizon;
	struct hwt_mem_index *index;   /* hwt_past_memory's, or NULL */
	/* The index being built beside the caller (hwt_past_memory_begin),
	 * or NULL. */
	struct hwt_past_index_job *index_job;
	/* Read from a file: its bytes (mapped, or a copy), its stores' and
	 * old bytes' frames, and whether they are read (1), not yet (0), or
	 * could not be (a negative errno: memory is then unknown). */
	const uint8_t *file;
	size_t file_len;
	bool mapped;
	struct hwt_frame_ref stores, old_bytes;
	int memory;
};

/* Format 3: register blocks and stores packed (docs/bundle.md); format
 * 2's files are refused by name. */
#define HWT_PAST_MAGIC "HWTPAST3"
#define HWT_PAST_MAGIC_OLD "HWTPAST2"
/* Bounds of what a file may hold, checked before anything is allocated. */
#define HWT_PAST_MAX_THREADS 4096u
#define HWT_PAST_MAX_STORE (16u << 20)

/* The file is a table of contents and independently compressed frames
 * (docs/bundle.md): opening it reads the table only; a thread's
 * registers are read a group at a time, the stores when memory is first
 * asked. Write p (views into a recorder's logs) to path, or into *data
 * (malloc'd); 0 or a negative errno. */
HWT_API int hwt_past_write(const char *path, const struct hwt_past *p,
			   struct hwt_err *err);
HWT_API int hwt_past_format(const struct hwt_past *p, uint8_t **data, size_t *len,
			    struct hwt_err *err);
/* The same a piece at a time, for a recorder that hands its register
 * logs over as they grow (so that they are never all in memory): open
 * the file; flush thread ti (p->threads[ti] as finish will be given it)
 * writes its logs' full groups not written yet and releases their
 * blocks (hwt_reglog_release; its logs must not drop blocks, cap
 * SIZE_MAX); finish writes the rest of p and closes the file, abort
 * removes it. Errors: negative errnos (finish and open set err). */
struct hwt_past_writer;

HWT_API int hwt_past_writer_open(const char *path, struct hwt_past_writer **out,
				 struct hwt_err *err);
HWT_API int hwt_past_writer_flush(struct hwt_past_writer *w, size_t ti,
				  struct hwt_past_thread *t);
HWT_API int hwt_past_writer_finish(struct hwt_past_writer *w, const struct hwt_past *p,
				   struct hwt_err *err);
HWT_API void hwt_past_writer_abort(struct hwt_past_writer *w);
/* Open a data history file: one whose table is damaged, cut short or
 * inconsistent is refused with what is wrong and where, never half
 * believed. hwt_past_load does the same with a copy of the file's bytes. */
HWT_API int hwt_past_read(const char *path, struct hwt_past **out,
			  struct hwt_err *err);
HWT_API int hwt_past_load(const uint8_t *file, size_t n, struct hwt_past **out,
			  struct hwt_err *err);
HWT_API void hwt_past_free(struct hwt_past *p);
/* Thread t's (of p) registers (fp: its x87/SSE state) before instruction
 * index into out: 0, -ENOENT when not kept, -EBADMSG when the group
 * holding them is damaged (they are then unavailable, never guessed), or
 * -ENOMEM. */
HWT_API int hwt_past_regs(struct hwt_past *p, const struct hwt_past_thread *t,
			  bool fp, uint64_t index, void *out);
/* Read p's stores and old bytes (once) and index them by address: 0, or
 * a negative errno with err saying why; p's memory of the past is then
 * unknown (served as unavailable), never the present's. */
HWT_API int hwt_past_memory(struct hwt_past *p, struct hwt_err *err);
/* The same, the index built by a thread of its own meanwhile: the
 * stores can be walked at once (hwt_mem_history_find_write asks for the
 * index only to tell whether a store it meets changed its bytes), and
 * hwt_past_mem_view says the index is pending until hwt_past_index_wait.
 * Without a thread it is built before this returns. p's stores must not
 * change until then. */
HWT_API int hwt_past_memory_begin(struct hwt_past *p, struct hwt_err *err);
/* Wait for the index hwt_past_memory_begin is building (if it is). */
HWT_API void hwt_past_index_wait(struct hwt_past *p);
/* The memory view of p, with read_now for where it ends; threads is
 * scratch of p->nthreads entries the view points into. Before
 * hwt_past_memory read a file's stores, the view knows no memory of the
 * past. */
HWT_API void hwt_past_mem_view(const struct hwt_past *p, struct hwt_mem_thread *threads,
			       size_t (*read_now)(void *, uint64_t, void *, size_t),
			       void *ctx, struct hwt_mem_history *out);
HWT_API const struct hwt_past_thread *hwt_past_thread_of(const struct hwt_past *p,
							 int32_t tid);

#ifdef __cplusplus
}
#endif
#endif
