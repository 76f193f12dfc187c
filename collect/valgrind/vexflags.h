/* SPDX-License-Identifier: BSD-2-Clause */
/* vexflags.h - the arithmetic flags of a past instruction run on
 * Valgrind's amd64 cpu, from the lazy flags thunk it keeps in place of
 * RFLAGS (VexGuestAMD64State's guest_CC_OP, guest_CC_DEP1,
 * guest_CC_DEP2 and guest_CC_NDEP).
 *
 * Valgrind does not compute the flags an instruction sets: it writes
 * down the operation and its operands and computes the flags only when
 * something reads them. The recorder logs those four words, so showing
 * the flags of any past instruction means doing that computation here.
 * Valgrind's own (libvex, GPL) cannot be linked into this library; this
 * is written from the instructions' definitions in the Intel SDM, with
 * the thunk's layout as Valgrind 3.19 writes it. Where the SDM leaves a
 * flag undefined, the value is the one Valgrind's cpu gave the program,
 * since that is what the program could have seen.
 */
#ifndef HWT_VG_VEXFLAGS_H
#define HWT_VG_VEXFLAGS_H

#include <stdbool.h>
#include <stdint.h>

/* The six flags, at their RFLAGS bits. */
#define HWT_VEX_CF (1ull << 0)
#define HWT_VEX_PF (1ull << 2)
#define HWT_VEX_AF (1ull << 4)
#define HWT_VEX_ZF (1ull << 6)
#define HWT_VEX_SF (1ull << 7)
#define HWT_VEX_OF (1ull << 11)
#define HWT_VEX_FLAGS (HWT_VEX_CF | HWT_VEX_PF | HWT_VEX_AF | HWT_VEX_ZF | \
		       HWT_VEX_SF | HWT_VEX_OF)

/*
 * guest_CC_OP's values, Valgrind 3.19's AMD64G_CC_OP_* (VEX/priv/
 * guest_amd64_defs.h). The first thirteen kinds come in four sizes, the
 * kind's value plus 0, 1, 2, 3 for 8, 16, 32, 64 bits (ADD + 2 is a
 * 32-bit add); the rest in two, plus 0 for 32 and 1 for 64 bits.
 *
 * What the other three words hold, by kind:
 *   COPY        DEP1 the flags themselves
 *   ADD SUB     DEP1, DEP2 the two operands
 *   ADC SBB     DEP1 the first operand, DEP2 the second XOR the carry
 *               taken in, NDEP that carry (bit 0)
 *   LOGIC ANDN  DEP1 the result
 *   INC DEC     DEP1 the result, NDEP the carry before (bit 0), which
 *               they leave as it was
 *   SHL SHR     DEP1 the result, DEP2 the operand shifted one bit less
 *               (SAR is SHR, its DEP1 and DEP2 shifted arithmetically)
 *   ROL ROR     DEP1 the result, NDEP the flags before
 *   UMUL SMUL   DEP1, DEP2 the two operands
 *   BLSI BLSMSK BLSR  DEP1 the result, DEP2 the source
 *   ADCX ADOX   DEP1 the first operand, DEP2 the second XOR the carry
 *               taken in (CF for ADCX, OF for ADOX), NDEP the flags
 *               before
 * Operands of fewer than 64 bits are in the low bits; the bits above are
 * not looked at.
 */
enum hwt_vex_cc_op {
	HWT_VEX_CC_COPY = 0,
	HWT_VEX_CC_ADD = 1,
	HWT_VEX_CC_SUB = 5,
	HWT_VEX_CC_ADC = 9,
	HWT_VEX_CC_SBB = 13,
	HWT_VEX_CC_LOGIC = 17,
	HWT_VEX_CC_INC = 21,
	HWT_VEX_CC_DEC = 25,
	HWT_VEX_CC_SHL = 29,
	HWT_VEX_CC_SHR = 33,
	HWT_VEX_CC_ROL = 37,
	HWT_VEX_CC_ROR = 41,
	HWT_VEX_CC_UMUL = 45,
	HWT_VEX_CC_SMUL = 49,
	HWT_VEX_CC_ANDN = 53,
	HWT_VEX_CC_BLSI = 55,
	HWT_VEX_CC_BLSMSK = 57,
	HWT_VEX_CC_BLSR = 59,
	HWT_VEX_CC_ADCX = 61,
	HWT_VEX_CC_ADOX = 63,
	HWT_VEX_CC_NUMBER = 65,   /* the first value that is none of them */
};

/* The arithmetic flags (CF PF AF ZF SF OF) the thunk stands for; false
 * when op is not one this knows (the caller then says the flags are
 * unknown). */
bool hwt_vex_flags(uint64_t op, uint64_t dep1, uint64_t dep2, uint64_t ndep,
		   uint64_t *rflags);

#endif
