// SPDX-License-Identifier: BSD-2-Clause
/* arm.c - Arm decoding with Capstone (see arm.h).
 *
 * Capstone is loaded when Arm code is first decoded, not linked: its
 * 77,000 relocations cost every program that links it 7 ms and 375 page
 * faults at start (hwtrace, hwt-server, the LLDB plugin), and only
 * CoreSight traces need it. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "arm.h"

#define STR_(x) #x
#define STR(x) STR_(x)
/* The library the header is of: its soname carries its API version. */
#define CAPSTONE_SONAME "libcapstone.so." STR(CS_API_MAJOR)

/* Capstone's entry points, each typed as the header declares it. */
static struct {
	__typeof__(cs_open) *open;
	__typeof__(cs_option) *option;
	__typeof__(cs_malloc) *malloc;
	__typeof__(cs_disasm_iter) *disasm_iter;
	__typeof__(cs_free) *free;
	__typeof__(cs_close) *close;
	bool ok;
} cs;
static pthread_once_t cs_once = PTHREAD_ONCE_INIT;

static void load_capstone(void)
{
	/* Kept loaded for the life of the process: handles outlive any
	 * one image. */
	void *h = dlopen(CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
	cs.open = (__typeof__(cs.open))dlsym(h, "cs_open");
	cs.option = (__typeof__(cs.option))dlsym(h, "cs_option");
	cs.malloc = (__typeof__(cs.malloc))dlsym(h, "cs_malloc");
	cs.disasm_iter = (__typeof__(cs.disasm_iter))dlsym(h, "cs_disasm_iter");
	cs.free = (__typeof__(cs.free))dlsym(h, "cs_free");
	cs.close = (__typeof__(cs.close))dlsym(h, "cs_close");
	cs.ok = cs.open && cs.option && cs.malloc && cs.disasm_iter &&
		cs.free && cs.close;
}

/* Slot of isa in struct hwt_arm, or -1 for a non-Arm isa. */
static int slot(enum hwt_isa isa)
{
	return isa == HWT_ISA_A64 ? 0 : isa == HWT_ISA_A32 ? 1 :
		isa == HWT_ISA_T32 ? 2 : -1;
}

static cs_insn *open_isa(struct hwt_arm *a, int s)
{
	static const struct { cs_arch arch; int mode; } modes[] = {
		{ CS_ARCH_ARM64, CS_MODE_ARM },
		{ CS_ARCH_ARM, CS_MODE_ARM },
		{ CS_ARCH_ARM, CS_MODE_THUMB },
	};

	if (!a->open[s]) {
		pthread_once(&cs_once, load_capstone);
		if (!cs.ok || cs.open(modes[s].arch, (cs_mode)modes[s].mode,
				      &a->cs[s]) != CS_ERR_OK)
			return NULL;
		/* the classification reads operands and condition codes */
		if (cs.option(a->cs[s], CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK ||
		    !(a->insn[s] = cs.malloc(a->cs[s]))) {
			cs.close(&a->cs[s]);
			return NULL;
		}
		a->open[s] = true;
	}
	return a->insn[s];
}

void hwt_arm_fini(struct hwt_arm *a)
{
	for (int s = 0; s < 3; s++)
		if (a->open[s]) {
			cs.free(a->insn[s], 1);
			cs.close(&a->cs[s]);
			a->open[s] = false;
		}
}

/* AArch64: Capstone 4 puts no call/return groups on A64 branches. */
static enum hwt_insn_class classify_a64(const cs_insn *in)
{
	switch (in->id) {
	case ARM64_INS_BL:
	case ARM64_INS_BLR:
		return HWT_INSN_CALL;
	case ARM64_INS_RET:
	case ARM64_INS_ERET:
		return HWT_INSN_RET;
	case ARM64_INS_BR:
		return HWT_INSN_JUMP;
	case ARM64_INS_B:
		return in->detail->arm64.cc == ARM64_CC_INVALID ||
			in->detail->arm64.cc == ARM64_CC_AL ?
			HWT_INSN_JUMP : HWT_INSN_CJUMP;
	case ARM64_INS_CBZ:
	case ARM64_INS_CBNZ:
	case ARM64_INS_TBZ:
	case ARM64_INS_TBNZ:
		return HWT_INSN_CJUMP;
	case ARM64_INS_SVC:
	case ARM64_INS_HVC:
	case ARM64_INS_SMC:
		return HWT_INSN_SYSCALL;
	default:
		return HWT_INSN_OTHER;
	}
}

/* AArch32 (ARM and Thumb): any write to pc is a branch; which kind
 * follows the usual idioms (bx lr, pop {..pc}, ldr pc, [sp], ...). */
static enum hwt_insn_class classify_a32(const cs_insn *in)
{
	const cs_arm *a = &in->detail->arm;
	bool cond = a->cc != ARM_CC_AL && a->cc != ARM_CC_INVALID;
	bool writes_pc = false, lr = false, sp_base = false;
	enum hwt_insn_class cls = HWT_INSN_OTHER;

	for (int i = 0; i < a->op_count; i++) {
		const cs_arm_op *op = &a->operands[i];

		if (op->type == ARM_OP_REG && op->reg == ARM_REG_PC)
			writes_pc = true;
		if (op->type == ARM_OP_REG && op->reg == ARM_REG_LR)
			lr = true;
		if (op->type == ARM_OP_MEM && op->mem.base == ARM_REG_SP)
			sp_base = true;
	}
	switch (in->id) {
	case ARM_INS_BL:
	case ARM_INS_BLX:
		return HWT_INSN_CALL;
	case ARM_INS_BX:
		cls = lr ? HWT_INSN_RET : HWT_INSN_JUMP;
		break;
	case ARM_INS_B:
		cls = HWT_INSN_JUMP;
		break;
	case ARM_INS_CBZ:
	case ARM_INS_CBNZ:
		return HWT_INSN_CJUMP;
	case ARM_INS_TBB:
	case ARM_INS_TBH:
		cls = HWT_INSN_JUMP;
		break;
	case ARM_INS_SVC:
	case ARM_INS_SMC:
	case ARM_INS_HVC:
		return HWT_INSN_SYSCALL;
	case ARM_INS_ERET:
	case ARM_INS_RFEIA:
	case ARM_INS_RFEIB:
	case ARM_INS_RFEDA:
	case ARM_INS_RFEDB:
		return HWT_INSN_RET;
	case ARM_INS_POP:
		cls = writes_pc ? HWT_INSN_RET : HWT_INSN_OTHER;
		break;
	case ARM_INS_LDM:
	case ARM_INS_LDMIB:
	case ARM_INS_LDMDA:
	case ARM_INS_LDMDB:
		/* ldm sp!, {..pc}: the first operand is the base register */
		cls = !writes_pc ? HWT_INSN_OTHER :
			a->op_count && a->operands[0].type == ARM_OP_REG &&
			a->operands[0].reg == ARM_REG_SP ? HWT_INSN_RET :
			HWT_INSN_JUMP;
		break;
	case ARM_INS_LDR:
		cls = !(a->op_count && a->operands[0].type == ARM_OP_REG &&
			a->operands[0].reg == ARM_REG_PC) ? HWT_INSN_OTHER :
			sp_base ? HWT_INSN_RET : HWT_INSN_JUMP;
		break;
	case ARM_INS_MOV:
		cls = !(a->op_count && a->operands[0].type == ARM_OP_REG &&
			a->operands[0].reg == ARM_REG_PC) ? HWT_INSN_OTHER :
			lr ? HWT_INSN_RET : HWT_INSN_JUMP;
		break;
	default:
		/* add pc, ... and other data processing into pc; from lr
		 * (subs pc, lr, #4) it is an exception return */
		if (a->op_count && a->operands[0].type == ARM_OP_REG &&
		    a->operands[0].reg == ARM_REG_PC &&
		    (a->operands[0].access & CS_AC_WRITE))
			cls = lr ? HWT_INSN_RET : HWT_INSN_JUMP;
		break;
	}
	return cond && cls != HWT_INSN_OTHER ? HWT_INSN_CJUMP : cls;
}

/* Arm instruction lengths are architectural: 4 bytes in A64 and A32, 2 or
 * 4 in T32 by the first halfword. Capstone 4 does not know every newer
 * instruction (some Advanced SIMD, v8.x and v9 ones); the trace decoder
 * did walk them, so their length is taken from the encoding and they are
 * shown as ".inst". Returns the length, 0 if the bytes are not there. */
static unsigned arm_raw(const uint8_t *b, size_t n, enum hwt_isa isa,
			uint32_t *word)
{
	unsigned len = 4;

	if (isa == HWT_ISA_T32 && n >= 2 && (b[1] >> 3) < 0x1d)
		len = 2;
	if (n < len)
		return 0;
	*word = len == 2 ? (uint32_t)(b[0] | b[1] << 8) :
		isa == HWT_ISA_T32 ? (uint32_t)(b[0] | b[1] << 8) << 16 |
			(uint32_t)(b[2] | b[3] << 8) :
		(uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
			(uint32_t)b[3] << 24;
	return len;
}

/* Capstone's decode of code into the isa's slot: 0, -EILSEQ, -ENOMEM. */
static int capstone(struct hwt_arm *a, int s, const uint8_t *code, size_t n,
		    uint64_t addr, cs_insn **out)
{
	cs_insn *in = open_isa(a, s);
	const uint8_t *p = code;
	uint64_t at = addr;

	if (!in)
		return -ENOMEM;
	if (!cs.disasm_iter(a->cs[s], &p, &n, &at, in))
		return -EILSEQ;
	*out = in;
	return 0;
}

/* Decode code as isa: *in is Capstone's instruction, or NULL for one
 * Capstone does not know, whose architectural length is *raw_len and
 * encoding *word. 0, -EILSEQ (too few bytes), -ENOMEM or -EINVAL. */
static int decode_arm(struct hwt_arm *a, enum hwt_isa isa, const uint8_t *code,
		    size_t n, uint64_t addr, cs_insn **in, unsigned *raw_len,
		    uint32_t *word)
{
	int s = slot(isa), rc;

	*in = NULL;
	if (s < 0)
		return -EINVAL;
	rc = capstone(a, s, code, n, addr, in);
	if (rc != -EILSEQ)
		return rc;
	*in = NULL;
	*raw_len = arm_raw(code, n, isa, word);
	return *raw_len ? 0 : -EILSEQ;
}

int hwt_arm_decode(struct hwt_arm *a, enum hwt_isa isa, const uint8_t *code,
		   size_t n, uint64_t addr, struct hwt_arm_insn *out)
{
	cs_insn *in;
	uint32_t word;
	unsigned len;
	int rc = decode_arm(a, isa, code, n, addr, &in, &len, &word);

	if (rc)
		return rc;
	out->len = in ? (uint8_t)in->size : (uint8_t)len;
	out->cls = !in ? HWT_INSN_OTHER : isa == HWT_ISA_A64 ?
		classify_a64(in) : classify_a32(in);
	return 0;
}

int hwt_arm_text(struct hwt_arm *a, enum hwt_isa isa, const uint8_t *code,
		 size_t n, uint64_t addr, char *text, size_t size)
{
	cs_insn *in;
	uint32_t word;
	unsigned len;
	int rc = decode_arm(a, isa, code, n, addr, &in, &len, &word);

	if (rc)
		return rc;
	if (!in)
		snprintf(text, size, len == 2 ? ".inst.n 0x%04x" :
			 ".inst  0x%08x", word);
	/* Capstone's Arm text is GDB's, padded the same way */
	else if (in->op_str[0])
		snprintf(text, size, "%-6.24s %.64s", in->mnemonic, in->op_str);
	else
		snprintf(text, size, "%.31s", in->mnemonic);
	return 0;
}
