// SPDX-License-Identifier: BSD-2-Clause
/* elf_sections.c - a named section of an ELF file, and its GNU build-id
 * note: what the line tables (lines.c), the address ranges (aranges.c)
 * and the debug-file cache (debug_cache.c) read first. */
#include <elf.h>
#include <gelf.h>
#include <string.h>

#include "replay-int.h"

Elf_Scn *hwt_elf_section(Elf *elf, const char *want)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, want))
			return scn;
	}
	return NULL;
}

bool hwt_elf_note_build_id(Elf *elf, char *out, size_t size)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			const uint8_t *id = (const uint8_t *)d->d_buf + doff;

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((const char *)d->d_buf + noff, "GNU", 4) ||
			    nh.n_descsz < 2 || 2 * nh.n_descsz >= size)
				continue;
			for (size_t i = 0; i < nh.n_descsz; i++)
				snprintf(out + 2 * i, 3, "%02x", id[i]);
			return true;
		}
	}
	return false;
}
