// SPDX-License-Identifier: BSD-2-Clause
/* tdesc.c - the target description GDB's amd64 GNU/Linux support expects:
 * features i386.core, i386.sse, i386.linux (orig_rax) and i386.segments
 * (fs_base, gs_base), registers numbered as GDB's own amd64-linux
 * description numbers them (rax..gs 0-23, st0-7 24-31, x87 control 32-39,
 * xmm0-15 40-55, mxcsr 56, orig_rax 57, fs_base 58, gs_base 59), and the
 * mapping of a Linux core's register notes onto those numbers. With AVX
 * (a live process whose XCR0 enables it) the feature i386.avx follows,
 * ymm0h-ymm15h 60-75 (the upper halves of ymm0-15), as gdbserver's
 * amd64-avx-linux description has them. */
#include <stdint.h>
#include <string.h>

#include "server.h"

#define EFLAGS_FIELDS \
	"<field name=\"CF\" start=\"0\" end=\"0\"/>" \
	"<field name=\"\" start=\"1\" end=\"1\"/>" \
	"<field name=\"PF\" start=\"2\" end=\"2\"/>" \
	"<field name=\"AF\" start=\"4\" end=\"4\"/>" \
	"<field name=\"ZF\" start=\"6\" end=\"6\"/>" \
	"<field name=\"SF\" start=\"7\" end=\"7\"/>" \
	"<field name=\"TF\" start=\"8\" end=\"8\"/>" \
	"<field name=\"IF\" start=\"9\" end=\"9\"/>" \
	"<field name=\"DF\" start=\"10\" end=\"10\"/>" \
	"<field name=\"OF\" start=\"11\" end=\"11\"/>" \
	"<field name=\"NT\" start=\"14\" end=\"14\"/>" \
	"<field name=\"RF\" start=\"16\" end=\"16\"/>" \
	"<field name=\"VM\" start=\"17\" end=\"17\"/>" \
	"<field name=\"AC\" start=\"18\" end=\"18\"/>" \
	"<field name=\"VIF\" start=\"19\" end=\"19\"/>" \
	"<field name=\"VIP\" start=\"20\" end=\"20\"/>" \
	"<field name=\"ID\" start=\"21\" end=\"21\"/>"

#define R64(n, t) "<reg name=\"" n "\" bitsize=\"64\" type=\"" t "\"/>"
#define R32(n) "<reg name=\"" n "\" bitsize=\"32\" type=\"int32\"/>"
#define ST(n) "<reg name=\"st" n "\" bitsize=\"80\" type=\"i387_ext\"/>"
#define FPC(n) "<reg name=\"" n "\" bitsize=\"32\" type=\"int\" group=\"float\"/>"
#define XMM(n) "<reg name=\"xmm" n "\" bitsize=\"128\" type=\"vec128\"/>"

#define YMMH(n) "<reg name=\"ymm" n "h\" bitsize=\"128\" type=\"uint128\"/>"

#define TDESC_FEATURES \
	"<?xml version=\"1.0\"?>" \
	"<!DOCTYPE target SYSTEM \"gdb-target.dtd\">" \
	"<target version=\"1.0\">" \
	"<architecture>i386:x86-64</architecture>" \
	"<osabi>GNU/Linux</osabi>" \
	"<feature name=\"org.gnu.gdb.i386.core\">" \
	"<flags id=\"i386_eflags\" size=\"4\">" EFLAGS_FIELDS "</flags>" \
	R64("rax", "int64") R64("rbx", "int64") R64("rcx", "int64") \
	R64("rdx", "int64") R64("rsi", "int64") R64("rdi", "int64") \
	R64("rbp", "data_ptr") R64("rsp", "data_ptr") \
	R64("r8", "int64") R64("r9", "int64") R64("r10", "int64") \
	R64("r11", "int64") R64("r12", "int64") R64("r13", "int64") \
	R64("r14", "int64") R64("r15", "int64") \
	R64("rip", "code_ptr") \
	"<reg name=\"eflags\" bitsize=\"32\" type=\"i386_eflags\"/>" \
	R32("cs") R32("ss") R32("ds") R32("es") R32("fs") R32("gs") \
	ST("0") ST("1") ST("2") ST("3") ST("4") ST("5") ST("6") ST("7") \
	FPC("fctrl") FPC("fstat") FPC("ftag") FPC("fiseg") FPC("fioff") \
	FPC("foseg") FPC("fooff") FPC("fop") \
	"</feature>" \
	"<feature name=\"org.gnu.gdb.i386.sse\">" \
	"<vector id=\"v4f\" type=\"ieee_single\" count=\"4\"/>" \
	"<vector id=\"v2d\" type=\"ieee_double\" count=\"2\"/>" \
	"<vector id=\"v16i8\" type=\"int8\" count=\"16\"/>" \
	"<vector id=\"v8i16\" type=\"int16\" count=\"8\"/>" \
	"<vector id=\"v4i32\" type=\"int32\" count=\"4\"/>" \
	"<vector id=\"v2i64\" type=\"int64\" count=\"2\"/>" \
	"<union id=\"vec128\">" \
	"<field name=\"v4_float\" type=\"v4f\"/>" \
	"<field name=\"v2_double\" type=\"v2d\"/>" \
	"<field name=\"v16_int8\" type=\"v16i8\"/>" \
	"<field name=\"v8_int16\" type=\"v8i16\"/>" \
	"<field name=\"v4_int32\" type=\"v4i32\"/>" \
	"<field name=\"v2_int64\" type=\"v2i64\"/>" \
	"<field name=\"uint128\" type=\"uint128\"/>" \
	"</union>" \
	"<flags id=\"i386_mxcsr\" size=\"4\">" \
	"<field name=\"IE\" start=\"0\" end=\"0\"/>" \
	"<field name=\"DE\" start=\"1\" end=\"1\"/>" \
	"<field name=\"ZE\" start=\"2\" end=\"2\"/>" \
	"<field name=\"OE\" start=\"3\" end=\"3\"/>" \
	"<field name=\"UE\" start=\"4\" end=\"4\"/>" \
	"<field name=\"PE\" start=\"5\" end=\"5\"/>" \
	"<field name=\"DAZ\" start=\"6\" end=\"6\"/>" \
	"<field name=\"IM\" start=\"7\" end=\"7\"/>" \
	"<field name=\"DM\" start=\"8\" end=\"8\"/>" \
	"<field name=\"ZM\" start=\"9\" end=\"9\"/>" \
	"<field name=\"OM\" start=\"10\" end=\"10\"/>" \
	"<field name=\"UM\" start=\"11\" end=\"11\"/>" \
	"<field name=\"PM\" start=\"12\" end=\"12\"/>" \
	"<field name=\"FZ\" start=\"15\" end=\"15\"/>" \
	"</flags>" \
	XMM("0") XMM("1") XMM("2") XMM("3") XMM("4") XMM("5") XMM("6") \
	XMM("7") XMM("8") XMM("9") XMM("10") XMM("11") XMM("12") XMM("13") \
	XMM("14") XMM("15") \
	"<reg name=\"mxcsr\" bitsize=\"32\" type=\"i386_mxcsr\" group=\"vector\"/>" \
	"</feature>" \
	"<feature name=\"org.gnu.gdb.i386.linux\">" \
	"<reg name=\"orig_rax\" bitsize=\"64\" type=\"int\" group=\"system\"/>" \
	"</feature>" \
	"<feature name=\"org.gnu.gdb.i386.segments\">" \
	R64("fs_base", "int") R64("gs_base", "int") \
	"</feature>"

const char tdesc_amd64_linux_xml[] = TDESC_FEATURES "</target>";

const char tdesc_amd64_avx_linux_xml[] =
	TDESC_FEATURES
	"<feature name=\"org.gnu.gdb.i386.avx\">"
	YMMH("0") YMMH("1") YMMH("2") YMMH("3") YMMH("4") YMMH("5")
	YMMH("6") YMMH("7") YMMH("8") YMMH("9") YMMH("10") YMMH("11")
	YMMH("12") YMMH("13") YMMH("14") YMMH("15")
	"</feature>"
	"</target>";

/* Word index in struct user_regs_struct of GDB registers 0-23, then
 * orig_rax, fs_base, gs_base (57-59). */
static const unsigned char greg_word[24] = {
	10, 5, 11, 12, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, /* rax..r15 */
	16, 18, 17, 20, 23, 24, 25, 26,   /* rip eflags cs ss ds es fs gs */
};

size_t tdesc_reg_size(int regno)
{
	if (regno < 0 || regno >= TDESC_AVX_NREGS)
		return 0;
	if (regno >= TDESC_YMM0H_REGNUM)
		return 16;
	if (regno < 17)
		return 8;
	if (regno < 24)
		return 4;
	if (regno < 32)
		return 10;
	if (regno < 40)
		return 4;
	if (regno < 56)
		return 16;
	if (regno == 56)
		return 4;
	return 8;
}

static uint32_t le16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

/* The x87 tag of one register's 80-bit value: 0 valid, 1 zero, 2 special
 * (the full tag word's encoding; FXSAVE keeps only empty/non-empty). */
static unsigned x87_tag(const uint8_t *raw)
{
	unsigned exponent = (raw[9] & 0x7fu) << 8 | raw[8];
	bool integer = raw[7] & 0x80;
	bool fraction_zero = !(raw[7] & 0x7f) && !raw[6] && !raw[5] &&
			     !raw[4] && !raw[3] && !raw[2] && !raw[1] && !raw[0];

	if (exponent == 0x7fff)
		return 2;
	if (exponent == 0)
		return fraction_zero && !integer ? 1 : 2;
	return integer ? 0 : 2;
}

/* FXSAVE's abridged tag byte expanded to the full tag word, as GDB's
 * i387_supply_fxsave does. */
static uint32_t full_tag(const uint8_t *fx)
{
	unsigned top = (le16(fx + 2) >> 11) & 7;
	uint32_t tag = 0;

	for (unsigned phys = 0; phys < 8; phys++) {
		unsigned t = 3;

		if (fx[4] & (1u << phys))
			t = x87_tag(fx + 32 + 16 * ((phys + 8 - top) % 8));
		tag |= t << (2 * phys);
	}
	return tag;
}

bool tdesc_reg_value(const struct core_thread *t, int regno, uint8_t *out)
{
	const uint8_t *fx = t->fxsave;
	uint32_t v32;

	memset(out, 0, TDESC_MAX_REG_SIZE);
	if (regno < 0 || regno >= TDESC_NREGS)
		return false;
	if (regno < 24) {
		memcpy(out, t->gregs + 8 * greg_word[regno], tdesc_reg_size(regno));
		return true;
	}
	if (regno >= 57) {
		static const unsigned char word[3] = { 15, 21, 22 };

		memcpy(out, t->gregs + 8 * word[regno - 57], 8);
		return true;
	}
	if (!t->have_fp)
		return false;
	if (regno < 32) {
		memcpy(out, fx + 32 + 16 * (regno - 24), 10);
		return true;
	}
	if (regno >= 40 && regno < 56) {
		memcpy(out, fx + 160 + 16 * (regno - 40), 16);
		return true;
	}
	switch (regno) {
	case 32: v32 = le16(fx); break;                 /* fctrl (fcw) */
	case 33: v32 = le16(fx + 2); break;             /* fstat (fsw) */
	case 34: v32 = full_tag(fx); break;             /* ftag */
	case 35: v32 = le16(fx + 12); break;            /* fiseg */
	case 36: memcpy(&v32, fx + 8, 4); break;        /* fioff */
	case 37: v32 = le16(fx + 20); break;            /* foseg */
	case 38: memcpy(&v32, fx + 16, 4); break;       /* fooff */
	case 39: v32 = le16(fx + 6) & 0x7ff; break;     /* fop */
	default: memcpy(&v32, fx + 24, 4); break;       /* 56: mxcsr */
	}
	memcpy(out, &v32, 4);
	return true;
}

bool tdesc_reg_store(struct core_thread *t, int regno, const uint8_t *val)
{
	uint8_t *fx = t->fxsave;

	if (regno < 0 || regno >= TDESC_NREGS)
		return false;
	if (regno < 24) {
		size_t size = tdesc_reg_size(regno);
		uint8_t *w = t->gregs + 8 * greg_word[regno];

		/* 32-bit GDB registers (eflags, segments) fill a 64-bit
		 * word: its upper half is zero. */
		memset(w, 0, 8);
		memcpy(w, val, size);
		return true;
	}
	if (regno >= 57) {
		static const unsigned char word[3] = { 15, 21, 22 };

		memcpy(t->gregs + 8 * word[regno - 57], val, 8);
		return true;
	}
	if (!t->have_fp)
		return false;
	if (regno < 32) {
		memcpy(fx + 32 + 16 * (regno - 24), val, 10);
		return true;
	}
	if (regno >= 40 && regno < 56) {
		memcpy(fx + 160 + 16 * (regno - 40), val, 16);
		return true;
	}
	switch (regno) {
	case 32: memcpy(fx, val, 2); return true;        /* fctrl */
	case 33: memcpy(fx + 2, val, 2); return true;    /* fstat */
	case 56: memcpy(fx + 24, val, 4); return true;   /* mxcsr */
	default:
		/* The full tag word and the x87 pointers have no exact
		 * FXSAVE counterpart to write back. */
		return false;
	}
}

/* The XSAVE standard format as Linux hands it out: XCR0 in the software
 * bytes of the legacy area, XSTATE_BV in the header, the upper halves of
 * the ymm registers (component 2) at a fixed offset. */
#define XSAVE_XCR0 464u
#define XSAVE_XSTATE_BV 512u
#define XSAVE_YMMH 576u
#define XFEATURE_SSE_AVX 6u     /* bits 1 (SSE) and 2 (AVX) */

static uint64_t le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

bool tdesc_xstate_has_avx(const uint8_t *xs, size_t len)
{
	return len >= XSAVE_YMMH + 16 * 16 &&
	       (le64(xs + XSAVE_XCR0) & XFEATURE_SSE_AVX) == XFEATURE_SSE_AVX;
}

void tdesc_ymmh_value(const uint8_t *xs, int i, uint8_t *out)
{
	if (le64(xs + XSAVE_XSTATE_BV) & 4u)
		memcpy(out, xs + XSAVE_YMMH + 16 * i, 16);
	else
		memset(out, 0, 16);
}

void tdesc_ymmh_store(uint8_t *xs, int i, const uint8_t *val)
{
	uint64_t bv = le64(xs + XSAVE_XSTATE_BV);

	/* In the initial state the other upper halves read as zero: make
	 * them so before the state counts as in use. */
	if (!(bv & 4u))
		memset(xs + XSAVE_YMMH, 0, 16 * 16);
	bv |= 4u;
	memcpy(xs + XSAVE_XSTATE_BV, &bv, sizeof(bv));
	memcpy(xs + XSAVE_YMMH + 16 * i, val, 16);
}
