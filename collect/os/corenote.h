/* SPDX-License-Identifier: BSD-2-Clause */
/* corenote.h - adding a note to an ELF core another program wrote. */
#ifndef HWT_CORENOTE_H
#define HWT_CORENOTE_H

#include <stddef.h>
#include <stdint.h>

#include "hwt-common.h"

/* Append a note NAME/TYPE with DESC to the 64-bit little-endian ELF core
 * at path: the note goes in a new PT_NOTE segment at the file's end, and
 * the program header table, one entry longer, after it (the old table
 * stays, unused). Debuggers read every PT_NOTE. 0, or a negative errno
 * with err saying what (not a core, a table too large, an I/O error); on
 * error the file may have grown but its header is unchanged. */
int hwt_core_append_note(const char *path, const char *name, uint32_t type,
			 const void *desc, size_t descsz, struct hwt_err *err);

#endif
