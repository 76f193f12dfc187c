/* SPDX-License-Identifier: BSD-2-Clause */
/* tdesc.h - the x86-64 GNU/Linux target description GDB is given
 * (tdesc.c), and registers in its layout. */
#ifndef HWT_TDESC_H
#define HWT_TDESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct core_thread;

#define TDESC_NREGS 60            /* without AVX */
#define TDESC_YMM0H_REGNUM 60     /* with AVX: ymm0h-ymm15h follow */
#define TDESC_AVX_NREGS 76
#define TDESC_PC_REGNUM 16
#define TDESC_MAX_REG_SIZE 16

extern const char tdesc_amd64_linux_xml[];
extern const char tdesc_amd64_avx_linux_xml[];
/* XSAVE (NT_X86_XSTATE) bytes holding ymm0h-ymm15h: XCR0 must enable AVX
 * (false otherwise, or when len is short). */
bool tdesc_xstate_has_avx(const uint8_t *xs, size_t len);
/* ymm(i)h from an XSAVE area, zeros when its state is the initial one. */
void tdesc_ymmh_value(const uint8_t *xs, int i, uint8_t *out);
/* Store ymm(i)h into an XSAVE area, marking the AVX state as in use. */
void tdesc_ymmh_store(uint8_t *xs, int i, const uint8_t *val);
/* Size of register regno in bytes, 0 if there is no such register. */
size_t tdesc_reg_size(int regno);
/* Value of regno from a core thread's register notes, in GDB's layout
 * (little-endian); returns false when the core did not record it. */
bool tdesc_reg_value(const struct core_thread *t, int regno, uint8_t *out);
/* Store a value in GDB's layout into the register notes; false for a
 * register they cannot hold (no FP state, tag word, x87 pointers). */
bool tdesc_reg_store(struct core_thread *t, int regno, const uint8_t *val);

#endif
