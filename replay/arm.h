/* SPDX-License-Identifier: BSD-2-Clause */
/* arm.h - Arm instructions (A64, A32, T32) through Capstone: length,
 * class and text. Internal to libhwt-replay.
 *
 * Capstone stays for Arm because Zydis decodes only x86; CoreSight
 * traces (ETM, PTM, ETE) walk Arm code.
 */
#ifndef HWT_ARM_H
#define HWT_ARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <capstone/capstone.h>

#include "hwt-replay.h"

/* One Capstone handle per Arm instruction set, opened on first use. */
struct hwt_arm {
	csh cs[3];
	cs_insn *insn[3];
	bool open[3];
};

struct hwt_arm_insn {
	uint8_t len;
	enum hwt_insn_class cls;
};

/* Decode the instruction at the start of code[0..n) in isa (HWT_ISA_A64,
 * HWT_ISA_A32 or HWT_ISA_T32). Instructions Capstone 4 does not know
 * (some newer Advanced SIMD, v8.x and v9 ones) take their architectural
 * length and class OTHER, since the trace decoder did walk them. 0,
 * -EILSEQ when the bytes are too few, -ENOMEM, -EINVAL for another isa. */
int hwt_arm_decode(struct hwt_arm *a, enum hwt_isa isa, const uint8_t *code,
		   size_t n, uint64_t addr, struct hwt_arm_insn *out);
/* Its text as GDB prints it (".inst 0x..." for the unknown ones). */
int hwt_arm_text(struct hwt_arm *a, enum hwt_isa isa, const uint8_t *code,
		 size_t n, uint64_t addr, char *text, size_t size);
void hwt_arm_fini(struct hwt_arm *a);

#endif
