/* SPDX-License-Identifier: BSD-2-Clause */
/* modset.h - the executable file mappings a program had (a recording's
 * sideband): one entry per path and load address, with the file's
 * build-id, at most HWT_BUNDLE_MAX_MODULES. Every backend keeps one:
 * from /proc/PID/maps when it stops the program, from perf MMAP2
 * records when the kernel reports them. */
#ifndef HWT_MODSET_H
#define HWT_MODSET_H

#include <stdint.h>
#include <sys/types.h>

#include "hwt-collect.h"

struct hwt_modset {
	struct hwt_collect_module *v;
	size_t n, cap;
	/* The exec of the program mapping what is added now: the same file
	 * at the same address is another module after an exec. */
	uint32_t exec;
};

/* Add the file mapped at addr from file offset pgoff (an executable
 * mapping, as an MMAP2 record gives it); duplicates and what is not a
 * file ([vdso], anonymous code) are ignored. 0 or -ENOMEM. */
int hwt_modset_add(struct hwt_modset *s, const char *path, uint64_t addr,
		   uint64_t pgoff, struct hwt_err *err);
/* Every executable file mapping of /proc/PID/maps, each at the address
 * its file's offset 0 is mapped (the ELF image's first page, which is
 * what debuggers call the load address). A process already gone adds
 * nothing. */
int hwt_modset_add_maps(struct hwt_modset *s, pid_t pid, struct hwt_err *err);
void hwt_modset_free(struct hwt_modset *s);

#endif
