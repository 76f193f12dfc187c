/* SPDX-License-Identifier: BSD-2-Clause */
/* replay-int.h - what the replay/ files share and callers never see.
 *
 * The image is split over image.c (the files and memory it holds, which
 * wins where they overlap), image_spans.c (its address space looked up),
 * insn.c (instructions:
 * x86.c with Zydis, arm.c with Capstone),
 * symbols.c (ELF and PLT symbols) and lines.c (DWARF line tables); they
 * share struct hwt_image. History, calls and cursor use the fast lookups
 * declared here instead of the string-building public ones.
 */
#ifndef HWT_REPLAY_INT_H
#define HWT_REPLAY_INT_H

#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "arm.h"
#include "hwt-replay.h"
#include "x86.h"

/* x86-64 pages; load addresses are page-aligned mapping starts. */
#define HWT_PAGE_SIZE 4096u
/* Longest x86 instruction. */
#define HWT_MAX_INSN 15u

struct hwt_sym {
	uint64_t start, end;     /* run-time addresses, end exclusive */
	const char *name;
	int rank;                /* which of several aliases wins */
	bool sized;              /* false: end is a guess */
	bool plt;                /* a PLT entry, named after its target */
};

/* One line-table row as GDB sees it: [lo, hi) belongs to line. */
struct hwt_row {
	uint64_t addr;           /* link-time address */
	const char *file;
	uint32_t line;           /* 0: end of a sequence, no line */
	bool is_stmt;
};

struct hwt_cu {
	uint64_t lo, hi;         /* link-time range covered by the CU */
	Dwarf_Off off;           /* DIE offset of the CU */
	struct hwt_row *rows;    /* NULL until first needed */
	size_t nrows;
	bool rows_tried;
};

/* elf_sections.c: the section named want that has bytes in the file, or
 * NULL. */
Elf_Scn *hwt_elf_section(Elf *elf, const char *want);
/* aranges.c: the ranges .debug_aranges gives, appended to *v (n used of
 * cap) with .off the header offset of the unit each names, and for each
 * set an empty range (lo = hi = 0) naming its unit; false, *n as it was,
 * when the section is absent or malformed. */
bool hwt_aranges_read(Elf *elf, struct hwt_cu **v, size_t *n, size_t *cap);

struct hwt_module {
	char *path;
	/* Images holding it: another process's image of the same recording
	 * with the file at the same address uses it as it is (bundle_
	 * images.c). */
	unsigned refs;
	uint64_t load_address;   /* as added (hwt_image_add_elf) */
	uint8_t *map;            /* whole file, mmapped private */
	size_t map_size;
	Elf *elf;
	uint64_t bias;           /* run-time minus link-time address */
	bool is_core;
	char *soname;            /* DT_SONAME, or NULL */
	/* symbols.c, loaded on first use */
	bool syms_tried;
	struct hwt_sym *syms;
	size_t nsyms;
	uint64_t *syms_maxend;   /* max end over syms[0..i], for nesting */
	char *names;             /* storage for names made up or shortened */
	/* lines.c, loaded on first use; the debug file may be separate */
	bool dwarf_tried, dbg_tried;
	Dwarf *dw;
	int dbg_fd;
	Elf *dbg_elf;
	char *dbg_path;
	/* The DWARF file's decompressed copy (debug_cache.c), or NULL. */
	int flat_fd;
	Elf *flat_elf;
	struct hwt_cu *cus;      /* sorted by lo */
	size_t ncus;
	/* An earlier module of the same file (mapped again: another
	 * process's copy, a dlopen) whose line tables this one reads at its
	 * own bias: a libc's DWARF is decompressed once. NULL: its own. */
	struct hwt_module *lines_from;
	/* The same at the same address, whose symbol table (in run-time
	 * addresses) this one reads: a cc1 in each of a make's processes
	 * is loaded and sorted once. NULL: its own. */
	struct hwt_module *syms_from;
};

/* elf_sections.c: hex GNU build-id of elf into out; false when it has
 * none. */
bool hwt_elf_note_build_id(Elf *elf, char *out, size_t size);

/* debug_cache.c: elf (the file at path, build-id id) when its .debug_*
 * sections are compressed, as a decompressed copy kept in the cache
 * directory and made now if need be (*fd its file, to close after
 * elf_end); NULL: read elf as it is. */
Elf *hwt_debug_cache_open(const char *path, Elf *elf, const char *id,
			  int *fd);

/* A piece of the address space backed by file bytes. */
struct hwt_span {
	uint64_t start, end;
	const uint8_t *data;
	struct hwt_module *mod;
	int prio;                /* file-backed modules beat core memory */
	unsigned seq;            /* later additions beat earlier ones */
	enum hwt_isa isa;        /* what its code is when nobody says */
	bool constant;           /* a read-only segment of a module's file:
				  * the same at every point of the past */
};

/* What the bytes at an address say, beyond struct hwt_insn. */
struct hwt_insn_info {
	uint64_t target;         /* x86 direct branch: where it goes */
	uint8_t len;
	uint8_t cls;             /* enum hwt_insn_class */
	bool direct;             /* target is known from the bytes */
	bool rep_string;         /* x86 rep string op: traps per iteration */
};

struct hwt_insn_slot {
	uint64_t addr;
	struct hwt_insn_info info;
	int8_t rc;               /* 0, -ENOENT or -EILSEQ */
	uint8_t isa;             /* the same bytes differ in A32 and T32 */
	bool used;
};

#define HWT_ICACHE_SIZE (1u << 16)     /* 2 MiB: one huge page */
#define HWT_SCACHE_SIZE 1024u

struct hwt_sym_slot {
	uint64_t addr;
	bool used;
	struct hwt_symbol sym;
};

struct hwt_image {
	struct hwt_module **mods;
	size_t nmods;
	/* Another process's image of the same recording (bundle_images.c),
	 * whose modules, and its kin's, this one's share tables with; NULL:
	 * none. It outlives this one. */
	struct hwt_image *kin;
	char *interp;            /* PT_INTERP of a module: the dynamic linker */
	struct hwt_span *raw;    /* everything added, in order */
	size_t nraw, rawcap;
	unsigned seq;
	struct hwt_span *map;    /* disjoint, sorted; rebuilt when dirty */
	size_t nmap;
	bool dirty;
	size_t last;             /* index of the last map hit */
	/* insn.c: the decoders and the per-address cache */
	struct hwt_x86 x86;
	struct hwt_arm arm;
	struct hwt_insn_slot *icache;
	bool icache_filled, scache_filled; /* a slot was set since cleared */
	/* symbols.c / lines.c: the last answers, reused while addr is
	 * inside their range, and a small cache for hwt_image_symbolize */
	struct hwt_func_cache {
		uint64_t start, end;
		const char *name;
		bool valid;
	} fcache;
	struct hwt_line_cache {
		uint64_t lo, hi;
		int line;
		const char *file;
		bool is_stmt, valid;
	} lcache;
	struct hwt_sym_slot *scache;
};

/* ---- image_spans.c ---- */
/* The span holding addr, or NULL. */
const struct hwt_span *hwt_image_span(struct hwt_image *img, uint64_t addr);
/* The module whose file-backed segments hold addr, or NULL. */
struct hwt_module *hwt_image_module(struct hwt_image *img, uint64_t addr);

/* ---- image.c ---- */
/* Whether addr is in the dynamic linker (named by a module's PT_INTERP),
 * whose lazy-binding code stepping goes through, as GDB does. */
bool hwt_image_in_linker(struct hwt_image *img, uint64_t addr);

/* ---- insn.c ---- */
/* Length and class of the instruction at addr, cached. 0, -ENOENT (no
 * code there) or -EILSEQ (bytes do not decode). */
int hwt_image_insn_info(struct hwt_image *img, uint64_t addr, uint8_t *len,
			enum hwt_insn_class *cls);
/* The same in a given instruction set (HWT_ISA_DEFAULT: the span's). */
int hwt_image_insn_info_isa(struct hwt_image *img, uint64_t addr,
			    enum hwt_isa isa, uint8_t *len,
			    enum hwt_insn_class *cls);
/* Everything the cache knows of the instruction at addr: also the
 * direct target of an x86 branch and whether it is a rep string op. */
int hwt_image_insn_detail(struct hwt_image *img, uint64_t addr,
			  enum hwt_isa isa, struct hwt_insn_info *out);
void hwt_insn_fini(struct hwt_image *img);

/* ---- symbols.c ---- */
struct hwt_func {
	uint64_t start, end;     /* run-time range, end exclusive */
	const char *name;
};
/* The function holding addr; -ENOENT if none is known. */
int hwt_image_func(struct hwt_image *img, uint64_t addr, struct hwt_func *out);
void hwt_module_syms_free(struct hwt_module *m);

/* ---- lines.c ---- */
/* The separate debug file of m (found by build-id), or NULL. */
Elf *hwt_module_debug_elf(struct hwt_module *m);
struct hwt_line {
	uint64_t lo, hi;         /* run-time range of the row, hi exclusive */
	const char *file;
	int line;
	bool is_stmt;
};
/* The line-table row holding addr; -ENOENT without line information. */
int hwt_image_line(struct hwt_image *img, uint64_t addr, struct hwt_line *out);
/* File names of rows: the same pointer within a compile unit, equal
 * strings across units. */
static inline bool hwt_same_file(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}
void hwt_module_lines_free(struct hwt_module *m);

/* ---- history.c ---- */
/* An instruction of a decoded block, at the block's begin + off. */
struct hwt_block_insn {
	uint32_t off;
	uint8_t len, cls;        /* len 0: no code there (a block's last) */
};
/* Items of a history as their blocks hold them: for scans that look at
 * every instruction (the call history) without hwt_history_get's
 * lookups per item. */
struct hwt_block_view {
	uint64_t index;          /* item of insns[0], 1-based */
	uint32_t count;          /* items from it within the range asked */
	bool gap;                /* one gap item, gap_reason; no insns */
	bool async;              /* insns[0] was reached asynchronously */
	const char *gap_reason;
	enum hwt_isa isa;
	uint64_t begin;          /* the block's first address */
	const struct hwt_block_insn *insns;
};
/* Call fn for each block of items first..last, oldest first, cut to the
 * range, until it returns non-zero (returned). A view is valid during
 * its call only; fn must not use h. */
int hwt_history_blocks(struct hwt_history *h, uint64_t first, uint64_t last,
		       int (*fn)(void *arg, const struct hwt_block_view *v),
		       void *arg, struct hwt_err *err);
/* Check the item range [*first, *last] of an export (the whole history
 * when both are 0, which is filled in); -ERANGE naming the valid range. */
int hwt_history_check_range(struct hwt_history *h, uint64_t *first,
			    uint64_t *last, struct hwt_err *err);
/* The instruction nearest a continue's start among items lo..hi (the
 * last of them when back, else the first) whose address is one of set
 * (sorted, n of them; kept until the call returns): 1 with *at its item,
 * 0 when none is, or an error. Runs of translations without such an
 * address are passed over whole, decoded segments a block at a time. */
int hwt_history_find_pc(struct hwt_history *h, uint64_t lo, uint64_t hi,
			bool back, const uint64_t *set, size_t n,
			uint64_t *at, struct hwt_err *err);
/* Decode calls made so far; tests use it to prove decoding is lazy. */
uint64_t hwt_history_decodes(const struct hwt_history *h);

#endif
