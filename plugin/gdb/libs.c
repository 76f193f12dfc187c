// SPDX-License-Identifier: BSD-2-Clause
/* libs.c - the library list GDB loads shared-library symbols from
 * (qXfer:libraries-svr4) and the executable's path (qXfer:exec-file), from
 * the modules a bundle recorded or the collector sees mapped now. */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"

struct elf_layout {
	uint64_t base;       /* first PT_LOAD page */
	uint64_t dynamic;    /* PT_DYNAMIC vaddr, 0 if none */
};

static bool elf_layout(const char *path, struct elf_layout *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ok = false;
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	memset(out, 0, sizeof(*out));
	out->base = UINT64_MAX;
	if (elf && gelf_getehdr(elf, &eh) && !elf_getphdrnum(elf, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph))
				continue;
			if (ph.p_type == PT_LOAD && ph.p_vaddr < out->base)
				out->base = ph.p_vaddr & ~(uint64_t)0xfff;
			else if (ph.p_type == PT_DYNAMIC)
				out->dynamic = ph.p_vaddr;
		}
		ok = out->base != UINT64_MAX;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ok;
}

uint64_t libs_at_phdr(const uint8_t *auxv, size_t len)
{
	uint64_t phdr = 0;

	for (size_t i = 0; i + 16 <= len; i += 16) {
		uint64_t type, val;

		memcpy(&type, auxv + i, 8);
		memcpy(&val, auxv + i + 8, 8);
		if (type == 3)          /* AT_PHDR */
			phdr = val;
	}
	return phdr;
}

/* The executable is the module holding the program headers the kernel
 * passed in AT_PHDR (a PT_INTERP would not tell: libc.so.6 has one too);
 * without one, the first module, which recorders list first. */
static size_t exec_module(const struct srv_module *mods, size_t n,
			  uint64_t phdr)
{
	uint64_t best = 0;
	size_t exe = 0;

	for (size_t i = 0; phdr && i < n; i++)
		if (mods[i].load_address <= phdr &&
		    mods[i].load_address >= best) {
			best = mods[i].load_address;
			exe = i;
		}
	return exe;
}

static bool grow(char **doc, size_t *cap, size_t need)
{
	char *p;

	if (need <= *cap)
		return true;
	p = realloc(*doc, 2 * need);
	if (!p)
		return false;
	*doc = p;
	*cap = 2 * need;
	return true;
}

/* GDB loads shared-library symbols from this list: l_addr is each
 * library's load bias (load address minus its first PT_LOAD page) and
 * l_ld its dynamic section, which GDB checks the bias against. The
 * executable is not listed (GDB has it), its path serves exec-file. */
int libs_build(struct server *s, const struct srv_module *mods, size_t n,
	       uint64_t at_phdr, struct hwt_err *err)
{
	size_t cap = 128, len = 0, exe = exec_module(mods, n, at_phdr);
	char *doc = malloc(cap);

	if (!doc)
		return hwt_err_set(err, ENOMEM, "out of memory");
	free(s->exec_path);
	s->exec_path = NULL;
	len = (size_t)snprintf(doc, cap, "<library-list-svr4 version=\"1.0\">");
	for (size_t i = 0; i < n; i++) {
		const struct srv_module *m = &mods[i];
		struct elf_layout lay;
		uint64_t bias;

		if (m->system_path[0] != '/' ||
		    !elf_layout(m->file ? m->file : m->system_path, &lay))
			continue;
		if (i == exe) {
			s->exec_path = strdup(m->system_path);
			continue;
		}
		bias = m->load_address - lay.base;
		if (!grow(&doc, &cap, len + strlen(m->system_path) * 6 + 128)) {
			free(doc);
			return hwt_err_set(err, ENOMEM, "out of memory");
		}
		len += (size_t)snprintf(doc + len, cap - len, "<library name=\"");
		/* Paths are XML-escaped: they come from the traced system. */
		for (const char *c = m->system_path; *c; c++) {
			const char *e = *c == '&' ? "&amp;" : *c == '<' ? "&lt;" :
					*c == '>' ? "&gt;" : *c == '"' ? "&quot;" : NULL;

			len += (size_t)(e ? snprintf(doc + len, cap - len, "%s", e)
					  : snprintf(doc + len, cap - len, "%c", *c));
		}
		len += (size_t)snprintf(doc + len, cap - len,
					"\" lm=\"0x%zx\" lmid=\"0x0\" l_addr=\"0x%llx\" "
					"l_ld=\"0x%llx\"/>", i + 1,
					(unsigned long long)bias,
					(unsigned long long)(lay.dynamic ?
							     bias + lay.dynamic : 0));
	}
	if (!grow(&doc, &cap, len + 32)) {
		free(doc);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	len += (size_t)snprintf(doc + len, cap - len, "</library-list-svr4>");
	free(s->libs_xml);
	s->libs_xml = doc;
	s->libs_len = len;
	return 0;
}
