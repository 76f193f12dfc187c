/* SPDX-License-Identifier: BSD-2-Clause */
/* data.h - the hwtrace Valgrind tool's data history file (vgdata.h)
 * turned into a bundle's data history (common/hwt-past.h): each
 * thread's registers before every instruction of the newest part of its
 * history, and the old bytes of every store there.
 *
 * The file is untrusted: every count and offset is checked, and a file
 * that does not agree with itself or with the recorded history is
 * refused whole, with what is wrong and where, never half believed.
 */
#ifndef HWT_VG_DATA_H
#define HWT_VG_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hwt-common.h"
#include "hwt-past.h"

/* A thread of the recorded history: its last recorded instruction,
 * which the newest of its runs in the file must end with. */
struct hwt_vg_data_thread {
	pid_t tid;
	uint64_t last_pc;
};

/* Build p from the file's bytes: 0, or a negative errno with err set.
 * p's arrays are the caller's to free with hwt_vg_data_free. */
int hwt_vg_data_build(const uint8_t *file, size_t len,
		      const struct hwt_vg_data_thread *threads, size_t n,
		      struct hwt_past *p, struct hwt_err *err);
/* The same, p's register logs handed to out (hwt_past_writer_flush) a
 * group at a time as they grow: finish out with p. */
int hwt_vg_data_build_to(const uint8_t *file, size_t len,
			 const struct hwt_vg_data_thread *threads, size_t n,
			 struct hwt_past *p, struct hwt_past_writer *out,
			 struct hwt_err *err);
void hwt_vg_data_free(struct hwt_past *p);

#endif
