// SPDX-License-Identifier: BSD-2-Clause
/* symbols.c - function names for addresses, from ELF symbol tables.
 *
 * Each module's sized STT_FUNC / STT_GNU_IFUNC symbols are loaded on first
 * use (.symtab, else from a separate debug file, else .dynsym) and sorted;
 * an address belongs to the nearest preceding symbol that contains it.
 * PLT stubs get GDB's names ("qsort@plt"): each .plt / .plt.sec / .plt.got
 * entry jumps through a GOT slot, and the dynamic relocation of that slot
 * names the function.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay-int.h"
#include "array.h"
#include "radix.h"

struct symvec {
	struct hwt_sym *v;
	size_t n, cap;
};

static int push(struct symvec *sv, struct hwt_sym s)
{
	if (HWT_ARRAY_RESERVE(sv->v, sv->cap, sv->n + 1, 256))
		return -ENOMEM;
	sv->v[sv->n++] = s;
	return 0;
}

static Elf_Scn *find_symtab(Elf *elf, GElf_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	}
	return NULL;
}

static int load_symtab(struct hwt_module *m, Elf *elf, Elf_Scn *scn,
		       const GElf_Shdr *sh, struct symvec *sv)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return 0;
	n = data->d_size / sh->sh_entsize;
	/* Room for them all at once: doubling would copy a large table
	 * (cc1's 29,000) several times, each copy into fresh pages. */
	if (HWT_ARRAY_RESERVE(sv->v, sv->cap, sv->n + n, 256))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Shdr secsh;
		Elf_Scn *sec;
		const char *name;
		uint64_t end;
		int type, bind, rank;

		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		bind = GELF_ST_BIND(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
		    sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		/* Of aliases at one address GDB shows the global name, and
		 * a sized symbol over an unsized one. */
		rank = bind == STB_GLOBAL ? 3 : bind == STB_WEAK ? 2 : 1;
		if (sym.st_size) {
			end = sym.st_value + sym.st_size;
			rank += 4;
		} else if ((sec = elf_getscn(elf, sym.st_shndx)) &&
			   gelf_getshdr(sec, &secsh) &&
			   sym.st_value >= secsh.sh_addr &&
			   sym.st_value < secsh.sh_addr + secsh.sh_size) {
			/* Hand-written code (_init, _start): up to the next
			 * symbol, within its section; cut in load_syms. */
			end = secsh.sh_addr + secsh.sh_size;
		} else {
			continue;
		}
		if (push(sv, (struct hwt_sym){
			     .start = sym.st_value + m->bias,
			     .end = end + m->bias,
			     .name = name, .rank = rank,
			     .sized = sym.st_size != 0 }))
			return -ENOMEM;
	}
	return 0;
}

struct reloc {
	uint64_t slot;           /* link-time address of the GOT slot */
	const char *name;
	char abs[40];            /* IRELATIVE: "*ABS*+0x..." as BFD names it */
};

static int reloc_cmp(const void *a, const void *b)
{
	const struct reloc *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* The relocation of a GOT slot that a PLT entry jumps through: JUMP_SLOT
 * and GLOB_DAT name a symbol, IRELATIVE an ifunc resolver's address. */
static bool reloc_name(Elf *elf, Elf_Data *symdata, const GElf_Shdr *symsh,
		       const GElf_Rela *r, struct reloc *out)
{
	unsigned type = (unsigned)GELF_R_TYPE(r->r_info);
	GElf_Sym sym;

	*out = (struct reloc){ .slot = r->r_offset };
	if (type == R_X86_64_IRELATIVE) {
		snprintf(out->abs, sizeof(out->abs), "*ABS*+0x%llx",
			 (unsigned long long)r->r_addend);
		return true;
	}
	if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
	    !GELF_R_SYM(r->r_info) ||
	    !gelf_getsym(symdata, (int)GELF_R_SYM(r->r_info), &sym))
		return false;
	out->name = elf_strptr(elf, symsh->sh_link, sym.st_name);
	return out->name && out->name[0];
}

static int load_relocs(Elf *elf, struct reloc **out, size_t *nout)
{
	struct reloc *v = NULL;
	size_t n = 0, cap = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data, *symdata;
		Elf_Scn *symscn;
		GElf_Shdr symsh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    !sh.sh_entsize)
			continue;
		symscn = elf_getscn(elf, sh.sh_link);
		if (!symscn || !gelf_getshdr(symscn, &symsh) ||
		    !(data = elf_getdata(scn, NULL)) ||
		    !(symdata = elf_getdata(symscn, NULL)))
			continue;
		for (size_t i = 0; i < data->d_size / sh.sh_entsize; i++) {
			GElf_Rela r;

			if (HWT_ARRAY_RESERVE(v, cap, n + 1, 64)) {
				free(v);
				return -ENOMEM;
			}
			if (gelf_getrela(data, (int)i, &r) &&
			    reloc_name(elf, symdata, &symsh, &r, &v[n]))
				n++;
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), reloc_cmp);
	*out = v;
	*nout = n;
	return 0;
}

static const char *reloc_find(const struct reloc *v, size_t n, uint64_t slot)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid].slot < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n || v[lo].slot != slot)
		return NULL;
	return v[lo].name ? v[lo].name : v[lo].abs;
}

/* The function a PLT entry of esz bytes at link-time address at jumps to
 * through its GOT slot (the first ff 25 disp32), or NULL. */
static const char *plt_target(const uint8_t *b, uint64_t esz, uint64_t at,
			      const struct reloc *rel, size_t nrel)
{
	for (uint64_t i = 0; i + 6 <= esz; i++) {
		int32_t disp;

		if (b[i] != 0xff || b[i + 1] != 0x25)
			continue;
		memcpy(&disp, b + i + 2, 4);
		return reloc_find(rel, nrel,
				  at + i + 6 + (uint64_t)(int64_t)disp);
	}
	return NULL;
}

/* A symbol for every PLT entry whose indirect jump (ff 25 disp32, maybe
 * behind endbr64 / bnd) goes through a relocated GOT slot, named for now
 * after the target; name_syms adds "@plt". Entries without one (PLT0,
 * the lazy-binding half of an IBT .plt) stay anonymous, as in GDB. */
static int load_plt(struct hwt_module *m, const struct reloc *rel,
		    size_t nrel, struct symvec *sv)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(m->elf, &shstrndx))
		return 0;
	while (nrel && (scn = elf_nextscn(m->elf, scn))) {
		const char *sname;
		uint64_t esz;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sname = elf_strptr(m->elf, shstrndx, sh.sh_name)) ||
		    (strcmp(sname, ".plt") && strcmp(sname, ".plt.sec") &&
		     strcmp(sname, ".plt.got")) ||
		    sh.sh_offset > m->map_size ||
		    sh.sh_size > m->map_size - sh.sh_offset)
			continue;
		esz = sh.sh_entsize >= 8 && sh.sh_entsize <= 32 ?
			sh.sh_entsize : 16;
		for (uint64_t e = 0; e + esz <= sh.sh_size; e += esz) {
			uint64_t at = sh.sh_addr + e;
			const char *name = plt_target(m->map + sh.sh_offset + e,
						      esz, at, rel, nrel);

			if (name && push(sv, (struct hwt_sym){
				     .start = at + m->bias,
				     .end = at + esz + m->bias, .name = name,
				     .rank = 4, .sized = true, .plt = true }))
				return -ENOMEM;
		}
	}
	return 0;
}

/* Names as GDB shows them: "name@plt" for PLT entries, and the default
 * version of a symbol ("name@@GLIBC_2.2.5") without its version. False
 * when out of memory. */
static bool name_syms(struct hwt_module *m, struct hwt_sym *v, size_t n)
{
	size_t bytes = 0;
	char *p;

	for (size_t i = 0; i < n; i++) {
		const char *at = strstr(v[i].name, "@@");
		size_t len = at ? (size_t)(at - v[i].name) : strlen(v[i].name);

		if (v[i].plt || at)
			bytes += len + sizeof("@plt");
	}
	if (!bytes)
		return true;
	if (!(m->names = p = malloc(bytes)))
		return false;
	for (size_t i = 0; i < n; i++) {
		const char *at = strstr(v[i].name, "@@");
		size_t len = at ? (size_t)(at - v[i].name) : strlen(v[i].name);

		if (!v[i].plt && !at)
			continue;
		memcpy(p, v[i].name, len);
		strcpy(p + len, v[i].plt ? "@plt" : "");
		v[i].name = p;
		p += len + sizeof("@plt");
	}
	return true;
}

/* v[0..n) by start, the best-ranked alias of each address first, then
 * one symbol per start address; their number, or 0 out of memory. */
static size_t sort_syms(struct hwt_sym *v, size_t n)
{
	struct hwt_radix_item *item = malloc(2 * n * sizeof(*item));
	size_t out = 0;

	if (!item)
		return 0;
	/* By rank (high first), then stably by start. */
	for (size_t i = 0; i < n; i++)
		item[i] = (struct hwt_radix_item){ .key = 7 - (unsigned)v[i].rank,
						   .index = i };
	hwt_radix_sort(item, item + n, n);
	for (size_t i = 0; i < n; i++)
		item[i].key = v[item[i].index].start;
	hwt_radix_sort(item, item + n, n);
	/* Into place a cycle at a time: no second table of fresh pages. */
	for (size_t i = 0; i < n; i++) {
		struct hwt_sym first = v[i];
		size_t j = i;

		while (item[j].index != i && item[j].index != j) {
			size_t from = item[j].index;

			v[j] = v[from];
			item[j].index = j;
			j = from;
		}
		if (item[j].index == i && j != i)
			v[j] = first;
		item[j].index = j;
	}
	for (size_t i = 0; i < n; i++) {
		if (!out || v[out - 1].start != v[i].start)
			v[out++] = v[i];
	}
	free(item);
	return out;
}

/* Out of memory on the way leaves the module with fewer names, or none;
 * symbolization then says less, which is not an error. */
static void load_syms(struct hwt_module *m)
{
	struct symvec sv = { 0 };
	struct reloc *rel = NULL;
	size_t nrel = 0, out = 0;
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf *dbg;

	m->syms_tried = true;
	if (m->is_core)
		return;
	/* Stripped files keep their full table in the debug file. */
	if ((scn = find_symtab(m->elf, SHT_SYMTAB, &sh)))
		load_symtab(m, m->elf, scn, &sh, &sv);
	else if ((dbg = hwt_module_debug_elf(m)) &&
		 (scn = find_symtab(dbg, SHT_SYMTAB, &sh)))
		load_symtab(m, dbg, scn, &sh, &sv);
	else if ((scn = find_symtab(m->elf, SHT_DYNSYM, &sh)))
		load_symtab(m, m->elf, scn, &sh, &sv);
	if (!load_relocs(m->elf, &rel, &nrel))
		load_plt(m, rel, nrel, &sv);
	out = sv.n ? sort_syms(sv.v, sv.n) : 0;
	for (size_t i = 0; i + 1 < out; i++) {
		if (!sv.v[i].sized && sv.v[i].end > sv.v[i + 1].start)
			sv.v[i].end = sv.v[i + 1].start;
	}
	/* Without the made-up names a PLT stub would pass for its target:
	 * keep no symbols rather than wrong ones. */
	if (!name_syms(m, sv.v, out))
		out = 0;
	free(rel);
	if (out && !(m->syms_maxend = malloc(out * sizeof(*m->syms_maxend))))
		out = 0;
	if (!out) {
		free(sv.v);
		return;
	}
	for (size_t i = 0; i < out; i++)
		m->syms_maxend[i] = i && m->syms_maxend[i - 1] > sv.v[i].end ?
			m->syms_maxend[i - 1] : sv.v[i].end;
	m->syms = sv.v;
	m->nsyms = out;
}

void hwt_module_syms_free(struct hwt_module *m)
{
	free(m->syms);
	free(m->syms_maxend);
	free(m->names);
	m->syms = NULL;
	m->syms_maxend = NULL;
	m->names = NULL;
	m->nsyms = 0;
}

static const struct hwt_sym *module_sym(struct hwt_module *m, uint64_t addr)
{
	size_t lo = 0, hi;

	if (m->syms_from)
		m = m->syms_from;
	if (!m->syms_tried)
		load_syms(m);
	hi = m->nsyms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (m->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo symbols start at or before addr; walk back while an earlier
	 * one can still reach addr (nested or overlapping symbols). */
	while (lo > 0 && m->syms_maxend[lo - 1] > addr) {
		lo--;
		if (m->syms[lo].end > addr)
			return &m->syms[lo];
	}
	return NULL;
}

int hwt_image_func(struct hwt_image *img, uint64_t addr, struct hwt_func *out)
{
	struct hwt_func_cache *fc = &img->fcache;
	const struct hwt_sym *s;
	struct hwt_module *m;

	if (fc->valid && addr >= fc->start && addr < fc->end) {
		*out = (struct hwt_func){ fc->start, fc->end, fc->name };
		return 0;
	}
	m = hwt_image_module(img, addr);
	s = m ? module_sym(m, addr) : NULL;
	if (!s)
		return -ENOENT;
	*fc = (struct hwt_func_cache){ s->start, s->end, s->name, true };
	*out = (struct hwt_func){ s->start, s->end, s->name };
	return 0;
}

int hwt_image_symbolize(struct hwt_image *img, uint64_t addr,
			struct hwt_symbol *out)
{
	struct hwt_sym_slot *slot;
	const struct hwt_span *span;
	struct hwt_func f;
	struct hwt_line l;

	if (!img->scache)
		img->scache = calloc(HWT_SCACHE_SIZE, sizeof(*img->scache));
	slot = img->scache ? &img->scache[(addr ^ (addr >> 10)) %
					  HWT_SCACHE_SIZE] : NULL;
	if (slot && slot->used && slot->addr == addr) {
		*out = slot->sym;
		return 0;
	}
	memset(out, 0, sizeof(*out));
	span = hwt_image_span(img, addr);
	if (!span)
		return -ENOENT;
	out->module = span->mod->path;
	if (!hwt_image_func(img, addr, &f)) {
		out->function = f.name;
		out->func_addr = f.start;
	}
	if (!hwt_image_line(img, addr, &l)) {
		out->file = l.file;
		out->line = l.line;
	}
	if (slot) {
		*slot = (struct hwt_sym_slot){ addr, true, *out };
		img->scache_filled = true;
	}
	return 0;
}

uint64_t hwt_image_lookup_function(struct hwt_image *img, const char *name)
{
	for (size_t i = 0; i < img->nmods; i++) {
		struct hwt_module *m = img->mods[i]->syms_from ?
			img->mods[i]->syms_from : img->mods[i];

		if (!m->syms_tried)
			load_syms(m);
		for (size_t j = 0; j < m->nsyms; j++) {
			if (!strcmp(m->syms[j].name, name))
				return m->syms[j].start;
		}
	}
	return 0;
}
