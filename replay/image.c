// SPDX-License-Identifier: BSD-2-Clause
/* image.c - the traced process's address space: which file bytes were at
 * which address.
 *
 * Modules (ELF executables and shared objects) and core files are mmapped
 * whole, never copied; their PT_LOAD segments become spans. The decoders
 * look up code for every block, so lookups go through a sorted, disjoint
 * span array with a last-hit shortcut. Overlaps are resolved once, when
 * the array is rebuilt: file-backed modules win over core memory (a core
 * may hold stale or partial copies of text), later additions win over
 * earlier ones, and core memory fills whatever no module covers (the vdso,
 * JIT code). Raw memory dumps (CoreSight snapshots) are mapped like core
 * memory, with the instruction set their code is in.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replay-int.h"
#include "array.h"

enum { PRIO_CORE = 1, PRIO_FILE = 2 };

int hwt_image_new(struct hwt_image **out, struct hwt_err *err)
{
	struct hwt_image *img;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return hwt_err_set(err, ENOSYS, "libelf is too old for this "
				   "program (elf_version failed)");
	img = calloc(1, sizeof(*img));
	if (!img)
		return hwt_err_set(err, ENOMEM, "out of memory for the image");
	if (hwt_x86_init(&img->x86)) {
		free(img);
		return hwt_err_set(err, EINVAL, "the Zydis library refuses its "
				   "x86 decoder settings; is libzydis4 "
				   "installed as built?");
	}
	*out = img;
	return 0;
}

static void module_free(struct hwt_module *m)
{
	if (m->refs > 1) {
		m->refs--;
		return;
	}
	hwt_module_syms_free(m);
	hwt_module_lines_free(m);
	if (m->elf)
		elf_end(m->elf);
	if (m->map)
		munmap(m->map, m->map_size);
	free(m->soname);
	free(m->path);
	free(m);
}

void hwt_image_free(struct hwt_image *img)
{
	if (!img)
		return;
	for (size_t i = 0; i < img->nmods; i++)
		module_free(img->mods[i]);
	free(img->mods);
	free(img->raw);
	free(img->map);
	free(img->interp);
	hwt_insn_fini(img);
	free(img->scache);
	free(img);
}

/* Map path and open it as ELF. The mapping is private and writable only
 * because libelf may want to write into the image it is given; nothing is
 * ever written, so no page is copied. */
static int module_open(const char *path, struct hwt_module **out,
		       struct hwt_err *err)
{
	struct hwt_module *m;
	struct stat st;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hwt_err_set(err, errno, "cannot open %s: %s", path,
				   strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return hwt_err_set(err, EINVAL, "%s is not a regular, "
				   "non-empty file", path);
	}
	m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path))) {
		free(m);
		close(fd);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	m->dbg_fd = m->flat_fd = -1;
	m->refs = 1;
	m->map_size = (size_t)st.st_size;
	m->map = mmap(NULL, m->map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		      fd, 0);
	close(fd);
	if (m->map == MAP_FAILED) {
		m->map = NULL;
		rc = hwt_err_set(err, errno, "cannot map %s: %s", path,
				 strerror(errno));
		module_free(m);
		return rc;
	}
	m->elf = elf_memory((char *)m->map, m->map_size);
	if (!m->elf || elf_kind(m->elf) != ELF_K_ELF ||
	    gelf_getclass(m->elf) != ELFCLASS64) {
		rc = hwt_err_set(err, EINVAL, "%s is not a 64-bit ELF file%s%s",
				 path, m->elf ? "" : ": ",
				 m->elf ? "" : elf_errmsg(-1));
		module_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

/* m reads o's tables when o is a copy of its file: lines at any
 * address, symbols at its own. */
static void share_tables(struct hwt_module *m, struct hwt_module *o)
{
	if (o->is_core || o->map_size != m->map_size || strcmp(o->path, m->path))
		return;
	if (!m->lines_from)
		m->lines_from = o->lines_from ? o->lines_from : o;
	if (!m->syms_from && o->bias == m->bias)
		m->syms_from = o->syms_from ? o->syms_from : o;
}

static int add_module(struct hwt_image *img, struct hwt_module *m,
		      struct hwt_err *err)
{
	struct hwt_module **mods;

	mods = realloc(img->mods, (img->nmods + 1) * sizeof(*mods));
	if (!mods)
		return hwt_err_set(err, ENOMEM, "out of memory");
	img->mods = mods;
	for (const struct hwt_image *in = img; in && !m->is_core; in = in->kin)
		for (size_t i = 0; i < in->nmods; i++)
			share_tables(m, in->mods[i]);
	img->mods[img->nmods++] = m;
	return 0;
}

static int add_raw(struct hwt_image *img, uint64_t start, uint64_t size,
		   const uint8_t *data, struct hwt_module *m, int prio,
		   bool constant, struct hwt_err *err)
{
	if (size == 0)
		return 0;
	if (start + size < start)
		return hwt_err_set(err, EINVAL, "%s: segment at 0x%llx wraps "
				   "around the address space", m->path,
				   (unsigned long long)start);
	if (HWT_ARRAY_RESERVE(img->raw, img->rawcap, img->nraw + 1, 64))
		return hwt_err_set(err, ENOMEM, "out of memory");
	img->raw[img->nraw++] = (struct hwt_span){
		.start = start, .end = start + size, .data = data, .mod = m,
		.prio = prio, .seq = img->seq++, .constant = constant,
	};
	img->dirty = true;
	return 0;
}

/* Check a program header's file range against the mapped file. Cores are
 * often cut short (RLIMIT_CORE, full disks); there the readable part is
 * kept. A module must be whole. */
static int phdr_bytes(struct hwt_module *m, const GElf_Phdr *ph,
		      uint64_t *filesz, struct hwt_err *err)
{
	*filesz = ph->p_filesz;
	if (ph->p_offset > m->map_size ||
	    ph->p_filesz > m->map_size - ph->p_offset) {
		if (!m->is_core)
			return hwt_err_set(err, EINVAL, "%s is truncated: a "
					   "PT_LOAD segment ends past the end "
					   "of the file; copy the file again",
					   m->path);
		*filesz = ph->p_offset > m->map_size ?
			0 : m->map_size - ph->p_offset;
	}
	return 0;
}

/* DT_SONAME of m into m->soname, and the PT_INTERP of the program into
 * img->interp: together they tell which module is the dynamic linker. */
static void note_linker(struct hwt_image *img, struct hwt_module *m,
			size_t nph)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	for (size_t i = 0; i < nph && !img->interp; i++) {
		GElf_Phdr ph;
		const char *s;

		if (!gelf_getphdr(m->elf, (int)i, &ph) || ph.p_type != PT_INTERP ||
		    ph.p_offset > m->map_size || ph.p_filesz == 0 ||
		    ph.p_filesz > m->map_size - ph.p_offset)
			continue;
		s = (const char *)m->map + ph.p_offset;
		if (memchr(s, '\0', ph.p_filesz))
			img->interp = strdup(s);
	}
	while ((scn = elf_nextscn(m->elf, scn))) {
		Elf_Data *d;
		GElf_Dyn dyn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < d->d_size / sh.sh_entsize; i++) {
			const char *s;

			if (gelf_getdyn(d, (int)i, &dyn) &&
			    dyn.d_tag == DT_SONAME &&
			    (s = elf_strptr(m->elf, sh.sh_link, dyn.d_un.d_val))) {
				m->soname = strdup(s);
				return;
			}
		}
	}
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

bool hwt_image_in_linker(struct hwt_image *img, uint64_t addr)
{
	struct hwt_module *m = hwt_image_module(img, addr);

	return m && img->interp &&
		!strcmp(base_name(m->soname ? m->soname : m->path),
			base_name(img->interp));
}

/* Map the file bytes of every PT_LOAD segment at vaddr + bias: .bss and
 * the like have no content the decoder could use. */
static int map_load_segments(struct hwt_image *img, struct hwt_module *m,
			     size_t nph, uint64_t bias, int prio,
			     struct hwt_err *err)
{
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		uint64_t filesz;
		int rc;

		if (!gelf_getphdr(m->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		rc = phdr_bytes(m, &ph, &filesz, err);
		if (!rc)
			rc = add_raw(img, ph.p_vaddr + bias, filesz,
				     m->map + ph.p_offset, m, prio,
				     prio == PRIO_FILE && !(ph.p_flags & PF_W),
				     err);
		if (rc)
			return rc;
	}
	return 0;
}

/* A kin image's module of path added at load_address, or NULL. */
static struct hwt_module *kin_module(const struct hwt_image *img,
				     const char *path, uint64_t load_address)
{
	for (const struct hwt_image *in = img->kin; in; in = in->kin)
		for (size_t i = 0; i < in->nmods; i++) {
			struct hwt_module *m = in->mods[i];

			if (!m->is_core && m->load_address == load_address &&
			    !strcmp(m->path, path))
				return m;
		}
	return NULL;
}

/* Another process's module, the same file at the same address, shared
 * as it is: its mapping, symbols and line tables. */
static int add_shared(struct hwt_image *img, struct hwt_module *m,
		      struct hwt_err *err)
{
	struct hwt_module **mods;
	size_t nph;
	int rc;

	if (elf_getphdrnum(m->elf, &nph))
		return hwt_err_set(err, EINVAL, "%s: unreadable ELF header: "
				   "%s", m->path, elf_errmsg(-1));
	mods = realloc(img->mods, (img->nmods + 1) * sizeof(*mods));
	if (!mods)
		return hwt_err_set(err, ENOMEM, "out of memory");
	img->mods = mods;
	img->mods[img->nmods++] = m;
	m->refs++;
	note_linker(img, m, nph);
	rc = map_load_segments(img, m, nph, m->bias, PRIO_FILE, err);
	return rc;
}

int hwt_image_add_elf(struct hwt_image *img, const char *path,
		      uint64_t load_address, struct hwt_err *err)
{
	struct hwt_module *m = kin_module(img, path, load_address);
	GElf_Ehdr eh;
	size_t nph;
	uint64_t base = UINT64_MAX;
	int rc;

	if (m)
		return add_shared(img, m, err);
	rc = module_open(path, &m, err);
	if (rc)
		return rc;
	rc = -EINVAL;
	if (!gelf_getehdr(m->elf, &eh) || elf_getphdrnum(m->elf, &nph)) {
		hwt_err_set(err, EINVAL, "%s: unreadable ELF header: %s",
			    path, elf_errmsg(-1));
		goto fail;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		hwt_err_set(err, EINVAL, "%s is neither an executable nor a "
			    "shared object (ELF type %u); give a core with "
			    "hwt_image_add_core", path, eh.e_type);
		goto fail;
	}
	if (eh.e_machine != EM_X86_64) {
		rc = -ENOTSUP;
		hwt_err_set(err, ENOTSUP, "%s is for ELF machine %u; only "
			    "x86-64 code can be decoded", path, eh.e_machine);
		goto fail;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(m->elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_vaddr < base)
			base = ph.p_vaddr;
	}
	if (base == UINT64_MAX) {
		hwt_err_set(err, EINVAL, "%s has no PT_LOAD segment", path);
		goto fail;
	}
	base &= ~(uint64_t)(HWT_PAGE_SIZE - 1);
	m->bias = load_address - base;
	m->load_address = load_address;
	note_linker(img, m, nph);
	rc = add_module(img, m, err);
	if (rc)
		goto fail;
	/* On failure the module stays, with the spans added. */
	return map_load_segments(img, m, nph, m->bias, PRIO_FILE, err);
fail:
	module_free(m);
	return rc;
}

int hwt_image_add_core(struct hwt_image *img, const char *path,
		       struct hwt_err *err)
{
	struct hwt_module *m;
	GElf_Ehdr eh;
	size_t nph;
	int rc;

	rc = module_open(path, &m, err);
	if (rc)
		return rc;
	m->is_core = true;
	if (!gelf_getehdr(m->elf, &eh) || elf_getphdrnum(m->elf, &nph) ||
	    eh.e_type != ET_CORE) {
		rc = hwt_err_set(err, EINVAL, "%s is not an ELF core file",
				 path);
		module_free(m);
		return rc;
	}
	rc = add_module(img, m, err);
	if (rc) {
		module_free(m);
		return rc;
	}
	return map_load_segments(img, m, nph, 0, PRIO_CORE, err);
}

int hwt_image_add_raw(struct hwt_image *img, const char *path,
		      uint64_t file_offset, uint64_t size, uint64_t address,
		      enum hwt_isa isa, struct hwt_err *err)
{
	struct hwt_module *m;
	struct stat st;
	int fd, rc;

	if (isa < HWT_ISA_DEFAULT || isa > HWT_ISA_X86_32)
		return hwt_err_set(err, EINVAL, "%s: unknown instruction set %d",
				   path, (int)isa);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hwt_err_set(err, errno, "cannot open %s: %s", path,
				   strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    file_offset > (uint64_t)st.st_size ||
	    size > (uint64_t)st.st_size - file_offset) {
		close(fd);
		return hwt_err_set(err, EINVAL, "%s: %llu bytes at offset %llu "
				   "are not all in the file", path,
				   (unsigned long long)size,
				   (unsigned long long)file_offset);
	}
	if (size == 0) {
		close(fd);
		return 0;
	}
	/* A dump is memory without a file format: no symbols, no lines,
	 * which is what marking it as core memory means here. */
	m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path))) {
		free(m);
		close(fd);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	m->dbg_fd = m->flat_fd = -1;
	m->is_core = true;
	m->map_size = (size_t)st.st_size;
	m->map = mmap(NULL, m->map_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m->map == MAP_FAILED) {
		m->map = NULL;
		rc = hwt_err_set(err, errno, "cannot map %s: %s", path,
				 strerror(errno));
		module_free(m);
		return rc;
	}
	rc = add_module(img, m, err);
	if (rc) {
		module_free(m);
		return rc;
	}
	rc = add_raw(img, address, size, m->map + file_offset, m, PRIO_CORE,
		     false, err);
	if (!rc)
		img->raw[img->nraw - 1].isa = isa;
	return rc;
}

/* Whether process p lists modules of its own. */
static bool has_modules(const struct hwt_bundle *b, size_t p)
{
	for (size_t i = 0; i < b->nmodules; i++)
		if (b->modules[i].process == p)
			return true;
	return false;
}

int hwt_image_add_bundle(struct hwt_image *img, const struct hwt_bundle *b,
			 struct hwt_err *err)
{
	return hwt_image_add_bundle_process(img, b, 0, err);
}

int hwt_image_add_bundle_process(struct hwt_image *img,
				 const struct hwt_bundle *b, size_t p,
				 struct hwt_err *err)
{
	struct hwt_err first = { 0 };
	size_t failed = 0, tried = 0;
	/* A child that lists none kept its parent's mappings. */
	size_t from = has_modules(b, p) ? p : 0;

	for (size_t i = 0; i < b->nmodules; i++) {
		const struct hwt_bundle_module *m = &b->modules[i];
		struct hwt_err e = { 0 };
		char *path;
		int rc;

		if (m->process != from)
			continue;
		/* "[vdso]" and the like name no file; the core has them. */
		if (!m->file && (!m->system_path || m->system_path[0] == '['))
			continue;
		tried++;
		path = m->file ? hwt_bundle_path(b, m->file) :
			strdup(m->system_path);
		rc = path ? hwt_image_add_elf(img, path, m->load_address, &e) :
			hwt_err_set(&e, ENOMEM, "out of memory");
		free(path);
		if (rc && failed++ == 0)
			first = e;
	}
	/* The core and the memory dumps are the program's memory. */
	if (p != 0)
		goto out;
	if (b->core) {
		char *path = hwt_bundle_path(b, b->core);
		struct hwt_err e = { 0 };
		int rc;

		tried++;
		rc = path ? hwt_image_add_core(img, path, &e) :
			hwt_err_set(&e, ENOMEM, "out of memory");
		free(path);
		if (rc && failed++ == 0)
			first = e;
	}
	/* CoreSight snapshot memory dumps; an absent file reads as
	 * unmapped, as in OpenCSD's own tools. */
	for (size_t i = 0; i < b->nregions; i++) {
		const struct hwt_bundle_region *r = &b->regions[i];
		char *path;
		struct hwt_err e = { 0 };
		int rc;

		if (r->missing)
			continue;
		tried++;
		path = hwt_bundle_path(b, r->file);
		rc = path ? hwt_image_add_raw(img, path, r->offset, r->size,
					      r->address, r->isa, &e) :
			hwt_err_set(&e, ENOMEM, "out of memory");
		free(path);
		if (rc && failed++ == 0)
			first = e;
	}
out:
	/* Every module that could be mapped stays mapped: history of the
	 * others is still worth showing, so the caller may go on. */
	if (failed)
		return hwt_err_set(err, first.code, "%zu of %zu bundle files "
				   "could not be mapped (code there shows as "
				   "unknown); first: %s", failed, tried,
				   first.msg);
	return 0;
}
