// SPDX-License-Identifier: BSD-2-Clause
/* aranges.c - compile units' address ranges read from .debug_aranges.
 *
 * Finding the compile unit of an address needs every unit's ranges.
 * Asking libdw for them reads each unit's first DIE: libc has 4126 units,
 * and reading them was a fifth of printing a bundle's newest calls. The
 * compiler lists the same ranges in .debug_aranges, a few kilobytes read
 * in a pass. Nothing in it is believed without the unit it names: a set
 * must name the header of a unit of .debug_info, and units that no set
 * names (a compiler that writes none for them) are read the slow way by
 * the caller. A malformed section is not used at all.
 */
#include <string.h>

#include "replay-int.h"
#include "array.h"

/* DWARF 5, 6.1.2: the version of an address range table, whatever the
 * version of the units it describes. */
#define ARANGES_VERSION 2

/* The section's bytes: libdw decompressed it in place when it opened the
 * file's DWARF, as it does every debug section; NULL if it could not. */
static Elf_Data *section_data(Elf *elf, const char *want)
{
	Elf_Scn *scn = hwt_elf_section(elf, want);
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || (sh.sh_flags & SHF_COMPRESSED))
		return NULL;
	return elf_getdata(scn, NULL);
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* One set at p (avail bytes): its ranges appended; its length, or 0 when
 * it is malformed. */
static size_t read_set(const uint8_t *p, size_t avail, struct hwt_cu **v,
		       size_t *n, size_t *cap)
{
	size_t len_size = 4, at, end;
	uint64_t len = avail >= 4 ? get_le(p, 4) : 0;
	uint64_t unit;
	unsigned addr_size;

	if (len == 0xffffffffu) {
		len_size = 12;
		len = avail >= 12 ? get_le(p + 4, 8) : 0;
	}
	if (len < 4 || len > avail - len_size)
		return 0;
	end = len_size + (size_t)len;
	at = len_size;
	if (get_le(p + at, 2) != ARANGES_VERSION)
		return 0;
	at += 2;
	if (end - at < (len_size == 4 ? 4u : 8u) + 2)
		return 0;
	unit = get_le(p + at, len_size == 4 ? 4 : 8);
	at += len_size == 4 ? 4 : 8;
	addr_size = p[at];
	if ((addr_size != 4 && addr_size != 8) || p[at + 1] != 0)
		return 0;
	at += 2;
	/* An empty range first says the set names the unit, ranges or
	 * not (half of libc's units have no code). */
	if (HWT_ARRAY_RESERVE(*v, *cap, *n + 1, 256))
		return 0;
	(*v)[(*n)++] = (struct hwt_cu){ .off = unit };
	/* Tuples begin at a multiple of twice the address size. */
	at = (at + 2 * addr_size - 1) / (2 * addr_size) * (2 * addr_size);
	for (; at + 2 * addr_size <= end; at += 2 * addr_size) {
		uint64_t lo = get_le(p + at, addr_size);
		uint64_t size = get_le(p + at + addr_size, addr_size);

		if (!lo && !size)
			return end;
		if (!size || lo + size < lo)
			continue;
		if (HWT_ARRAY_RESERVE(*v, *cap, *n + 1, 256))
			return 0;
		(*v)[(*n)++] = (struct hwt_cu){ .lo = lo, .hi = lo + size,
						.off = unit };
	}
	return 0;
}

bool hwt_aranges_read(Elf *elf, struct hwt_cu **v, size_t *n, size_t *cap)
{
	Elf_Data *d = section_data(elf, ".debug_aranges");
	size_t first = *n, off = 0;

	if (!d || !d->d_buf || !d->d_size)
		return false;
	while (off < d->d_size) {
		size_t used = read_set((const uint8_t *)d->d_buf + off,
				       d->d_size - off, v, n, cap);

		if (!used) {
			*n = first;
			return false;
		}
		off += used;
	}
	return true;
}
