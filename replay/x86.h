/* SPDX-License-Identifier: BSD-2-Clause */
/* x86.h - x86 instructions through Zydis: length, class, direct branch
 * target and GDB-style AT&T text, from bytes alone.
 *
 * Zydis knows the whole current ISA (AVX-512, AMX, CET, APX-era
 * prefixes), which glibc runs on today's CPUs; every x86 decode in
 * replay goes through here. Internal to libhwt-replay.
 */
#ifndef HWT_X86_H
#define HWT_X86_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <Zydis/Zydis.h>

#include "hwt-replay.h"

struct hwt_x86 {
	ZydisDecoder dec64, dec32;
	ZydisFormatter fmt;
};

struct hwt_x86_insn {
	uint64_t target;         /* direct branch: where it goes; else 0 */
	uint8_t len;
	enum hwt_insn_class cls;
	bool direct;             /* a branch with its target in the bytes */
	bool rep_string;         /* rep-prefixed string op: traps per iteration */
};

/* Set up decoders for both modes and the formatter. 0, or -EINVAL if
 * the Zydis library refuses its own configuration. */
int hwt_x86_init(struct hwt_x86 *x);
/* Decode the instruction at the start of code[0..n) at addr, in 32-bit
 * mode if mode32. 0, or -EILSEQ when the bytes are not an instruction
 * (or end before it does). */
int hwt_x86_decode(const struct hwt_x86 *x, bool mode32, const uint8_t *code,
		   size_t n, uint64_t addr, struct hwt_x86_insn *out);
/* The instruction's text as GDB and objdump print it ("mov    %rsp,%rbp");
 * 0 or -EILSEQ as above. */
int hwt_x86_text(const struct hwt_x86 *x, bool mode32, const uint8_t *code,
		 size_t n, uint64_t addr, char *text, size_t size);

#endif
