// SPDX-License-Identifier: BSD-2-Clause
/* vexflags.c - RFLAGS' six arithmetic flags from Valgrind's amd64 flags
 * thunk (vexflags.h): each operation's flags as the Intel SDM defines
 * them, from the operands the thunk keeps.
 *
 * Additions and subtractions go through the carry (or borrow) out of
 * every bit at once, which is what the SDM's CF, AF and OF are: the
 * carry out of the top bit, the carry out of bit 3, and whether the
 * carries into and out of the top bit differ (the signed result does
 * not fit). Where the SDM leaves a flag undefined (AF after shifts and
 * multiplies, PF after ANDN and BLS*, SF ZF PF after MUL, OF after
 * shifts and rotates of more than one bit), the value is the one
 * Valgrind's cpu gives, since that is what the program saw.
 */
#include "valgrind/vexflags.h"

struct width {
	unsigned bits;
	uint64_t mask;            /* the operand's bits */
	uint64_t sign;            /* its top bit */
};

static struct width width_of(unsigned bits)
{
	struct width w = {
		.bits = bits,
		.mask = bits == 64 ? ~0ull : (1ull << bits) - 1,
		.sign = 1ull << (bits - 1),
	};

	return w;
}

/* PF looks at the result's low byte only, whatever the size: set when
 * it has an even number of bits set. */
static uint64_t parity_flag(uint64_t res)
{
	unsigned b = (unsigned)(res & 0xff);

	b ^= b >> 4;
	b ^= b >> 2;
	b ^= b >> 1;
	return b & 1 ? 0 : HWT_VEX_PF;
}

static uint64_t zero_sign_flags(uint64_t res, struct width w)
{
	return (res & w.mask ? 0 : HWT_VEX_ZF) |
	       (res & w.sign ? HWT_VEX_SF : 0);
}

/* ZF, SF and PF: what most operations say of their result. */
static uint64_t result_flags(uint64_t res, struct width w)
{
	return zero_sign_flags(res, w) | parity_flag(res);
}

/* CF, AF and OF from the carries (or borrows) out of each bit. */
static uint64_t carry_flags(uint64_t carries, struct width w)
{
	bool out = carries & w.sign, in = carries & (w.sign >> 1);

	return (out ? HWT_VEX_CF : 0) | (carries & 0x8 ? HWT_VEX_AF : 0) |
	       (out != in ? HWT_VEX_OF : 0);
}

/* The carry out of each bit of a + b + c: a bit carries when two of its
 * three inputs (a's, b's, the carry in) are set. Its sum bit is their
 * XOR, so where a's and b's differ the carry in is the sum bit's
 * inverse. Bits above an operand's size do not reach the bits below. */
static uint64_t add_carries(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t r = a + b + c;

	return (a & b) | ((a | b) & ~r);
}

/* The borrow out of each bit of a - b - c: as the carries of an
 * addition, with a's bits inverted (a bit borrows when b's bit and the
 * borrow in are more than a's). */
static uint64_t sub_borrows(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t r = a - b - c;

	return (~a & b) | ((~a | b) & r);
}

static uint64_t add_flags(uint64_t a, uint64_t b, uint64_t c, struct width w)
{
	return carry_flags(add_carries(a, b, c), w) |
	       result_flags(a + b + c, w);
}

static uint64_t sub_flags(uint64_t a, uint64_t b, uint64_t c, struct width w)
{
	return carry_flags(sub_borrows(a, b, c), w) |
	       result_flags(a - b - c, w);
}

/* The unsigned product of two 64-bit values, as two halves: four 32-bit
 * partial products, the middle ones' carries gathered separately. */
static void mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
	uint64_t al = a & 0xffffffff, ah = a >> 32;
	uint64_t bl = b & 0xffffffff, bh = b >> 32;
	uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
	uint64_t mid = (ll >> 32) + (lh & 0xffffffff) + (hl & 0xffffffff);

	*lo = a * b;
	*hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

/* MUL and IMUL set CF and OF when the product does not fit in the
 * operand size: the high half is not zero (unsigned), or not the sign
 * extension of the low half (signed). */
static uint64_t mul_flags(uint64_t a, uint64_t b, bool is_signed,
			  struct width w)
{
	uint64_t hi, lo;
	bool wide;

	a &= w.mask;
	b &= w.mask;
	if (w.bits == 64) {
		mul64(a, b, &hi, &lo);
	} else {
		uint64_t p = a * b;  /* two operands of 32 bits at most fit */

		lo = p & w.mask;
		hi = p >> w.bits;
	}
	if (is_signed) {
		/* A negative operand is itself minus 2^bits: its product's
		 * high half is less by the other operand. */
		if (a & w.sign)
			hi -= b;
		if (b & w.sign)
			hi -= a;
		hi &= w.mask;
		wide = hi != (lo & w.sign ? w.mask : 0);
	} else {
		wide = hi != 0;
	}
	/* SF, ZF and PF are undefined; Valgrind's cpu takes them from the
	 * low half. */
	return (wide ? HWT_VEX_CF | HWT_VEX_OF : 0) | result_flags(lo, w);
}

/* SHL, SHR and SAR: res the result, less the operand shifted one bit
 * less. CF is the last bit shifted out: less's top bit (left) or its
 * bottom bit (right). OF is defined for one-bit shifts only: whether the
 * shift changed the top bit (SHL: the result's top bit is not CF; SHR:
 * the operand's top bit was set; SAR: never); for those, res and less
 * are the result and the operand, so OF is whether their top bits
 * differ, and Valgrind's cpu says the same of longer shifts. AF is
 * undefined, clear on Valgrind's cpu. */
static uint64_t shift_flags(uint64_t res, uint64_t less, bool left,
			    struct width w)
{
	bool cf = left ? less & w.sign : less & 1;

	return (cf ? HWT_VEX_CF : 0) |
	       ((res ^ less) & w.sign ? HWT_VEX_OF : 0) | result_flags(res, w);
}

/* ROL and ROR set CF and OF only, and keep the other flags as they were.
 * CF is the bit rotated round last: the result's bottom bit (left) or
 * top bit (right). OF is defined for one-bit rotates: left, the result's
 * top bit XOR CF; right, the XOR of the result's two top bits. */
static uint64_t rotate_flags(uint64_t res, uint64_t old, bool left,
			     struct width w)
{
	bool top = res & w.sign, cf, of;

	if (left) {
		cf = res & 1;
		of = top != cf;
	} else {
		cf = top;
		of = top != (bool)(res & (w.sign >> 1));
	}
	return (old & HWT_VEX_FLAGS & ~(HWT_VEX_CF | HWT_VEX_OF)) |
	       (cf ? HWT_VEX_CF : 0) | (of ? HWT_VEX_OF : 0);
}

/* ADCX and ADOX: an unsigned add with carry through CF (ADCX) or OF
 * (ADOX) alone; every other flag stays as it was. */
static uint64_t adx_flags(uint64_t a, uint64_t b_xor_c, uint64_t old,
			  uint64_t flag, struct width w)
{
	uint64_t c = old & flag ? 1 : 0;
	bool out = add_carries(a, b_xor_c ^ c, c) & w.sign;

	return (old & HWT_VEX_FLAGS & ~flag) | (out ? flag : 0);
}

/* The flags of a kind that comes in four sizes (8 to 64 bits). */
static uint64_t four_size_flags(unsigned kind, uint64_t dep1, uint64_t dep2,
				uint64_t ndep, struct width w)
{
	uint64_t c;

	switch (kind) {
	case HWT_VEX_CC_ADD:
		return add_flags(dep1, dep2, 0, w);
	case HWT_VEX_CC_SUB:
		return sub_flags(dep1, dep2, 0, w);
	case HWT_VEX_CC_ADC:
		/* The thunk has the second operand XOR the carry in. */
		c = ndep & HWT_VEX_CF;
		return add_flags(dep1, dep2 ^ c, c, w);
	case HWT_VEX_CC_SBB:
		c = ndep & HWT_VEX_CF;
		return sub_flags(dep1, dep2 ^ c, c, w);
	case HWT_VEX_CC_LOGIC:
		/* AND, OR, XOR, TEST clear CF and OF; AF is undefined,
		 * clear on Valgrind's cpu. */
		return result_flags(dep1, w);
	case HWT_VEX_CC_INC:
		/* An ADD of 1 that keeps CF. */
		return (add_flags(dep1 - 1, 1, 0, w) & ~HWT_VEX_CF) |
		       (ndep & HWT_VEX_CF);
	case HWT_VEX_CC_DEC:
		return (sub_flags(dep1 + 1, 1, 0, w) & ~HWT_VEX_CF) |
		       (ndep & HWT_VEX_CF);
	case HWT_VEX_CC_SHL:
		return shift_flags(dep1, dep2, true, w);
	case HWT_VEX_CC_SHR:
		return shift_flags(dep1, dep2, false, w);
	case HWT_VEX_CC_ROL:
		return rotate_flags(dep1, ndep, true, w);
	case HWT_VEX_CC_ROR:
		return rotate_flags(dep1, ndep, false, w);
	case HWT_VEX_CC_UMUL:
		return mul_flags(dep1, dep2, false, w);
	default:
		return mul_flags(dep1, dep2, true, w);  /* SMUL */
	}
}

/* The flags of a kind that comes in two sizes (32 and 64 bits): BMI's
 * and ADX's. */
static uint64_t two_size_flags(unsigned kind, uint64_t dep1, uint64_t dep2,
			       uint64_t ndep, struct width w)
{
	switch (kind) {
	case HWT_VEX_CC_ANDN:
		/* CF and OF clear, AF and PF undefined: clear on Valgrind's
		 * cpu. */
		return zero_sign_flags(dep1, w);
	case HWT_VEX_CC_BLSI:
		/* CF: the source was not zero. */
		return zero_sign_flags(dep1, w) |
		       (dep2 & w.mask ? HWT_VEX_CF : 0);
	case HWT_VEX_CC_BLSMSK:
		/* ZF is cleared (the mask is never zero); CF: the source was
		 * zero. */
		return (zero_sign_flags(dep1, w) & HWT_VEX_SF) |
		       (dep2 & w.mask ? 0 : HWT_VEX_CF);
	case HWT_VEX_CC_BLSR:
		return zero_sign_flags(dep1, w) |
		       (dep2 & w.mask ? 0 : HWT_VEX_CF);
	case HWT_VEX_CC_ADCX:
		return adx_flags(dep1, dep2, ndep, HWT_VEX_CF, w);
	default:
		return adx_flags(dep1, dep2, ndep, HWT_VEX_OF, w);  /* ADOX */
	}
}

bool hwt_vex_flags(uint64_t op, uint64_t dep1, uint64_t dep2, uint64_t ndep,
		   uint64_t *rflags)
{
	unsigned i;

	if (op >= HWT_VEX_CC_NUMBER)
		return false;
	if (op == HWT_VEX_CC_COPY) {
		*rflags = dep1 & HWT_VEX_FLAGS;
		return true;
	}
	/* Kinds in four sizes, then kinds in two. */
	if (op < HWT_VEX_CC_ANDN) {
		i = (unsigned)op - HWT_VEX_CC_ADD;
		*rflags = four_size_flags(HWT_VEX_CC_ADD + i / 4 * 4, dep1, dep2,
					  ndep, width_of(8u << i % 4));
	} else {
		i = (unsigned)op - HWT_VEX_CC_ANDN;
		*rflags = two_size_flags(HWT_VEX_CC_ANDN + i / 2 * 2, dep1, dep2,
					 ndep, width_of(32u << i % 2));
	}
	return true;
}
