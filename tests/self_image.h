/* SPDX-License-Identifier: BSD-2-Clause */
/* self_image.h - where a test program's own code is loaded.
 *
 * Unit tests and fuzz targets decode traces that walk their own
 * instructions, so they add /proc/self/exe to an image at its load
 * address and pick addresses inside its executable segment. */
#ifndef HWT_TESTS_SELF_IMAGE_H
#define HWT_TESTS_SELF_IMAGE_H

#include <elf.h>
#include <link.h>
#include <stdint.h>

#include "hwt-replay.h"
#include "xorshift.h"

struct self_image {
	uint64_t load;            /* where file offset 0 is mapped */
	uint64_t text_lo, text_hi; /* the first executable segment */
};

static inline int self_image_phdr_cb(struct dl_phdr_info *info, size_t size,
				     void *data)
{
	struct self_image *si = data;
	uint64_t lo = UINT64_MAX;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (ph->p_vaddr < lo)
			lo = ph->p_vaddr;
		if ((ph->p_flags & PF_X) && !si->text_lo) {
			si->text_lo = info->dlpi_addr + ph->p_vaddr;
			si->text_hi = si->text_lo + ph->p_filesz;
		}
	}
	si->load = info->dlpi_addr + (lo & ~(uint64_t)4095);
	return 1;                 /* the first object is the program */
}

static inline struct self_image self_image_find(void)
{
	struct self_image si = { 0 };

	dl_iterate_phdr(self_image_phdr_cb, &si);
	return si;
}

/* About one in three instruction starts of the executable segment, found
 * by a linear sweep (bytes that do not decode are skipped), at most cap;
 * returns how many. */
static inline size_t self_image_insn_sample(struct hwt_image *img,
					    const struct self_image *si,
					    uint64_t *rng, uint64_t *out,
					    size_t cap)
{
	uint64_t a = si->text_lo;
	struct hwt_insn in;
	size_t n = 0;

	while (a < si->text_hi && n < cap) {
		if (hwt_image_insn(img, a, false, &in) || !in.len) {
			a++;
			continue;
		}
		if (xorshift64(rng) % 3 == 0)
			out[n++] = a;
		a += in.len;
	}
	return n;
}

#endif
