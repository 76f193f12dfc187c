// SPDX-License-Identifier: BSD-2-Clause
/* lines.c - source file and line for an address, from DWARF via libdw.
 *
 * Per module, on first use: the compile units' address ranges (from
 * .debug_aranges where it names a unit, aranges.c). Per compile unit, on first use: its line
 * table reduced the way GDB reduces it, because stepping by line must stop
 * where GDB would: rows of the same line that differ only by discriminator
 * merge, several rows at one address keep the last (preferring a
 * statement), and line-0 rows mean "no line". Stripped modules get their
 * DWARF from /usr/lib/debug/.build-id when it is installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay-int.h"
#include "array.h"

Elf *hwt_module_debug_elf(struct hwt_module *m)
{
	char id[128], path[256];
	int fd;

	if (m->dbg_tried)
		return m->dbg_elf;
	m->dbg_tried = true;
	if (m->is_core || !hwt_elf_note_build_id(m->elf, id, sizeof(id)))
		return NULL;
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug",
		 id, id + 2);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	m->dbg_elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!m->dbg_elf || elf_kind(m->dbg_elf) != ELF_K_ELF) {
		if (m->dbg_elf)
			elf_end(m->dbg_elf);
		m->dbg_elf = NULL;
		close(fd);
		return NULL;
	}
	m->dbg_fd = fd;
	m->dbg_path = strdup(path);
	return m->dbg_elf;
}

static int cu_cmp(const void *a, const void *b)
{
	const struct hwt_cu *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cu_off_cmp(const void *a, const void *b)
{
	const struct hwt_cu *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* Unit cudie's ranges appended to m->cus (n used of cap); false when
 * memory ran out. */
static bool add_unit_ranges(struct hwt_module *m, Dwarf_Die *cudie,
			    size_t *n, size_t *cap)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(cudie, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		if (HWT_ARRAY_RESERVE(m->cus, *cap, *n + 1, 64))
			return false;
		m->cus[(*n)++] = (struct hwt_cu){
			.lo = lo, .hi = hi, .off = dwarf_dieoffset(cudie),
		};
	}
	return true;
}

/* Every unit's ranges: those .debug_aranges gives for the units it
 * names (aranges.c), each unit it does not name read whole; the count. */
static size_t units_with_aranges(struct hwt_module *m, Elf *elf,
				 size_t *cap)
{
	size_t n = 0, named, j = 0, hsize;
	Dwarf_Off off = 0, next;

	if (!hwt_aranges_read(elf, &m->cus, &n, cap))
		return SIZE_MAX;
	named = n;
	qsort(m->cus, named, sizeof(*m->cus), cu_off_cmp);
	while (dwarf_next_unit(m->dw, off, &next, &hsize, NULL, NULL, NULL,
			       NULL, NULL, NULL) == 0) {
		bool found = false;
		Dwarf_Die die;

		/* Sets naming no unit's header are dropped below. */
		for (; j < named && m->cus[j].off < off; j++)
			m->cus[j].lo = m->cus[j].hi = 0;
		for (; j < named && m->cus[j].off == off; j++) {
			m->cus[j].off = off + hsize;
			found = true;
		}
		if (!found && dwarf_offdie(m->dw, off + hsize, &die) &&
		    (dwarf_tag(&die) == DW_TAG_compile_unit ||
		     dwarf_tag(&die) == DW_TAG_skeleton_unit) &&
		    !add_unit_ranges(m, &die, &n, cap))
			break;
		off = next;
	}
	for (; j < named; j++)
		m->cus[j].lo = m->cus[j].hi = 0;
	return n;
}

static void load_cus(struct hwt_module *m)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	Elf *elf = m->elf;
	const char *src = m->path;
	char id[128];
	size_t n, cap = 0, kept = 0;
	uint8_t unit_type;
	Dwarf_Half version;

	m->dwarf_tried = true;
	if (m->is_core)
		return;
	if (!hwt_elf_section(elf, ".debug_info")) {
		elf = hwt_module_debug_elf(m);
		if (!elf || !(src = m->dbg_path))
			return;
	}
	/* Compressed DWARF is read from its decompressed copy. */
	if (hwt_elf_note_build_id(m->elf, id, sizeof(id)) &&
	    (m->flat_elf = hwt_debug_cache_open(src, elf, id, &m->flat_fd)))
		elf = m->flat_elf;
	m->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!m->dw)
		return;
	n = units_with_aranges(m, elf, &cap);
	if (n == SIZE_MAX) {
		n = 0;
		while (dwarf_get_units(m->dw, cu, &cu, &version, &unit_type,
				       &cudie, NULL) == 0 &&
		       ((unit_type != DW_UT_compile &&
			 unit_type != DW_UT_skeleton) ||
			add_unit_ranges(m, &cudie, &n, &cap)))
			;
	}
	for (size_t i = 0; i < n; i++)
		if (m->cus[i].lo < m->cus[i].hi)
			m->cus[kept++] = m->cus[i];
	if (kept)
		qsort(m->cus, kept, sizeof(*m->cus), cu_cmp);
	m->ncus = kept;
}

/* Reduce libdw's rows (sorted by address, end-of-sequence markers first
 * at equal addresses) to GDB's. */
static void load_rows(struct hwt_module *m, struct hwt_cu *cu)
{
	Dwarf_Die cudie;
	Dwarf_Lines *lines;
	size_t n, out = 0;
	const char *run_file = NULL;
	int run_line = -1;
	bool run_disc = false;
	struct hwt_row *rows;

	cu->rows_tried = true;
	if (!dwarf_offdie(m->dw, cu->off, &cudie) ||
	    dwarf_getsrclines(&cudie, &lines, &n) || n == 0)
		return;
	rows = malloc(n * sizeof(*rows));
	if (!rows)
		return;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr addr;
		int line;
		unsigned disc = 0;
		bool end = false, stmt = true;
		const char *file;
		struct hwt_row r;

		if (!l || dwarf_lineaddr(l, &addr) || dwarf_lineno(l, &line))
			continue;
		dwarf_lineendsequence(l, &end);
		dwarf_linebeginstatement(l, &stmt);
		dwarf_linediscriminator(l, &disc);
		file = dwarf_linesrc(l, NULL, NULL);
		r = (struct hwt_row){ addr, file, end || line < 0 ? 0 :
				      (uint32_t)line, stmt };
		/* GDB drops a repeated line once it has seen a discriminator
		 * on it: loop headers stay one stepping range. */
		if (line != run_line || file != run_file) {
			run_disc = disc != 0;
			run_line = line;
			run_file = file;
		} else {
			run_disc |= disc != 0;
		}
		if (end)
			run_line = -1;
		if (out && rows[out - 1].addr == addr && rows[out - 1].line) {
			if (r.is_stmt || !rows[out - 1].is_stmt || !r.line)
				rows[out - 1] = r;
			continue;
		}
		if (out && r.line && rows[out - 1].line == r.line &&
		    rows[out - 1].file == file && run_disc)
			continue;
		rows[out++] = r;
	}
	cu->rows = rows;
	cu->nrows = out;
}

/* An ELF read from its own file descriptor, closed. */
static void close_elf(Elf **elf, int *fd)
{
	if (*elf)
		elf_end(*elf);
	*elf = NULL;
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void hwt_module_lines_free(struct hwt_module *m)
{
	for (size_t i = 0; i < m->ncus; i++)
		free(m->cus[i].rows);
	free(m->cus);
	m->cus = NULL;
	m->ncus = 0;
	if (m->dw)
		dwarf_end(m->dw);
	m->dw = NULL;
	close_elf(&m->dbg_elf, &m->dbg_fd);
	free(m->dbg_path);
	m->dbg_path = NULL;
	close_elf(&m->flat_elf, &m->flat_fd);
}

static struct hwt_cu *find_cu(struct hwt_module *m, uint64_t a)
{
	size_t lo = 0, hi;

	if (!m->dwarf_tried)
		load_cus(m);
	hi = m->ncus;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->cus[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* CU ranges rarely overlap; look a few back in case they do. */
	for (size_t k = 0; k < 8 && lo > 0; k++, lo--) {
		if (a < m->cus[lo - 1].hi)
			return &m->cus[lo - 1];
	}
	return NULL;
}

int hwt_image_line(struct hwt_image *img, uint64_t addr, struct hwt_line *out)
{
	struct hwt_line_cache *lc = &img->lcache;
	struct hwt_module *m, *d;
	struct hwt_cu *cu;
	size_t lo = 0, hi;
	uint64_t a, end;

	if (lc->valid && addr >= lc->lo && addr < lc->hi) {
		*out = (struct hwt_line){ lc->lo, lc->hi, lc->file, lc->line,
					  lc->is_stmt };
		return 0;
	}
	m = hwt_image_module(img, addr);
	if (!m)
		return -ENOENT;
	a = addr - m->bias;
	/* Tables in link-time addresses: any copy's serve, at m's bias. */
	d = m->lines_from ? m->lines_from : m;
	cu = find_cu(d, a);
	if (!cu)
		return -ENOENT;
	if (!cu->rows_tried)
		load_rows(d, cu);
	hi = cu->nrows;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (cu->rows[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || !cu->rows[lo - 1].line)
		return -ENOENT;
	end = lo < cu->nrows ? cu->rows[lo].addr : cu->hi;
	*out = (struct hwt_line){
		.lo = cu->rows[lo - 1].addr + m->bias, .hi = end + m->bias,
		.file = cu->rows[lo - 1].file,
		.line = (int)cu->rows[lo - 1].line,
		.is_stmt = cu->rows[lo - 1].is_stmt,
	};
	*lc = (struct hwt_line_cache){ out->lo, out->hi, out->line, out->file,
				       out->is_stmt, true };
	return 0;
}
