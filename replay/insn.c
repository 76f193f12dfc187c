/* insn.c - instruction length and class from Capstone: x86-64 (AT&T),
 * AArch64, AArch32 ARM and Thumb.
 *
 * Decoders ask for the length of every instruction they walk, so length
 * and class are cached per address in a direct-mapped table: a hot loop
 * costs one Capstone call per distinct address. Text is rare (listings)
 * and is produced on demand, never cached.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay-int.h"

static const char *const class_names[] = {
	[HWT_INSN_OTHER] = "other",
	[HWT_INSN_CALL] = "call",
	[HWT_INSN_RET] = "return",
	[HWT_INSN_JUMP] = "jump",
	[HWT_INSN_CJUMP] = "cond-jump",
	[HWT_INSN_SYSCALL] = "syscall",
};

const char *hwt_insn_class_name(enum hwt_insn_class cls)
{
	if ((unsigned)cls < sizeof(class_names) / sizeof(class_names[0]))
		return class_names[cls];
	return "unknown";
}

static bool is_x86(enum hwt_isa isa)
{
	return isa == HWT_ISA_X86_64 || isa == HWT_ISA_X86_32;
}

/* Open the Capstone handle for isa and make it the current one. */
static int cs_setup(struct hwt_image *img, enum hwt_isa isa)
{
	static const struct { cs_arch arch; int mode; } modes[] = {
		[HWT_ISA_X86_64] = { CS_ARCH_X86, CS_MODE_64 },
		[HWT_ISA_A64] = { CS_ARCH_ARM64, CS_MODE_ARM },
		[HWT_ISA_A32] = { CS_ARCH_ARM, CS_MODE_ARM },
		[HWT_ISA_T32] = { CS_ARCH_ARM, CS_MODE_THUMB },
		[HWT_ISA_X86_32] = { CS_ARCH_X86, CS_MODE_32 },
	};

	if (!img->cs_open[isa]) {
		if (cs_open(modes[isa].arch, (cs_mode)modes[isa].mode,
			    &img->cs[isa]) != CS_ERR_OK)
			return -ENOMEM;
		/* Groups (call/ret/jump/int) need detail; GDB prints x86
		 * in AT&T syntax. */
		if (cs_option(img->cs[isa], CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK ||
		    (is_x86(isa) &&
		     cs_option(img->cs[isa], CS_OPT_SYNTAX,
			       CS_OPT_SYNTAX_ATT) != CS_ERR_OK) ||
		    !(img->csis[isa] = cs_malloc(img->cs[isa]))) {
			cs_close(&img->cs[isa]);
			return -ENOMEM;
		}
		img->cs_open[isa] = true;
	}
	img->cur_cs = img->cs[isa];
	img->csi = img->csis[isa];
	return 0;
}

void hwt_insn_fini(struct hwt_image *img)
{
	for (int i = 0; i <= HWT_ISA_X86_32; i++) {
		if (img->cs_open[i]) {
			cs_free(img->csis[i], 1);
			cs_close(&img->cs[i]);
			img->cs_open[i] = false;
		}
	}
	free(img->icache);
	img->icache = NULL;
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

static enum hwt_insn_class classify(csh cs, const cs_insn *in)
{
	switch (in->id) {
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
	case X86_INS_INT:
	case X86_INS_INT1:
	case X86_INS_INT3:
	case X86_INS_INTO:
		return HWT_INSN_SYSCALL;
	case X86_INS_JMP:
	case X86_INS_LJMP:
		return HWT_INSN_JUMP;
	case X86_INS_LOOP:       /* Capstone leaves these out of the */
	case X86_INS_LOOPE:      /* jump group */
	case X86_INS_LOOPNE:
		return HWT_INSN_CJUMP;
	default:
		break;
	}
	if (cs_insn_group(cs, in, CS_GRP_CALL))
		return HWT_INSN_CALL;
	if (cs_insn_group(cs, in, CS_GRP_RET) ||
	    cs_insn_group(cs, in, CS_GRP_IRET))
		return HWT_INSN_RET;
	/* Every other jump-group member (jcc, jrcxz, loop*) may fall
	 * through. */
	if (cs_insn_group(cs, in, CS_GRP_JUMP))
		return HWT_INSN_CJUMP;
	if (cs_insn_group(cs, in, CS_GRP_INT))
		return HWT_INSN_SYSCALL;
	return HWT_INSN_OTHER;
}

/* The instruction set addr is read in: isa, else its span's. */
static enum hwt_isa resolve_isa(struct hwt_image *img, uint64_t addr,
				enum hwt_isa isa)
{
	const struct hwt_span *s;

	if (isa > HWT_ISA_DEFAULT && isa <= HWT_ISA_X86_32)
		return isa;
	s = hwt_image_span(img, addr);
	return s && s->isa > HWT_ISA_DEFAULT && s->isa <= HWT_ISA_X86_32 ?
		s->isa : HWT_ISA_X86_64;
}

/* Decode at addr as isa (resolved) into img->csi. */
static int decode(struct hwt_image *img, uint64_t addr, enum hwt_isa isa)
{
	uint8_t buf[HWT_MAX_INSN];
	const uint8_t *code = buf;
	size_t n = hwt_image_read(img, addr, buf, sizeof(buf));
	uint64_t a = addr;
	int rc;

	if (n == 0)
		return -ENOENT;
	rc = cs_setup(img, isa);
	if (rc)
		return rc;
	if (!cs_disasm_iter(img->cur_cs, &code, &n, &a, img->csi))
		return -EILSEQ;
	return 0;
}

/* Arm instruction lengths are architectural: 4 bytes in A64 and A32, 2 or
 * 4 in T32 by the first halfword. Capstone 4 does not know every newer
 * instruction (some Advanced SIMD, v8.x and v9 ones); the trace decoder
 * did walk them, so their length is taken from the encoding and they are
 * shown as ".inst". Returns the length, 0 if the bytes are not there. */
static unsigned arm_raw(struct hwt_image *img, uint64_t addr, enum hwt_isa isa,
			uint32_t *word)
{
	uint8_t b[4];
	size_t n = hwt_image_read(img, addr, b, sizeof(b));
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

static size_t slot_of(uint64_t addr)
{
	/* Fibonacci hashing: instruction addresses are dense and would
	 * otherwise crowd into neighbouring slots by their low bits. */
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 49) &
		(HWT_ICACHE_SIZE - 1);
}

int hwt_image_insn_info_isa(struct hwt_image *img, uint64_t addr,
			    enum hwt_isa isa, uint8_t *len,
			    enum hwt_insn_class *cls)
{
	struct hwt_insn_slot *s;
	int rc;

	if (!img->icache) {
		img->icache = calloc(HWT_ICACHE_SIZE, sizeof(*img->icache));
		if (!img->icache)
			return -ENOMEM;
	}
	/* Keyed by the isa asked for, so that the common DEFAULT lookup
	 * costs no span search on a hit; the image clears the cache when
	 * what DEFAULT means at an address changes. */
	s = &img->icache[slot_of(addr)];
	if (!s->used || s->addr != addr || s->isa != isa) {
		enum hwt_isa want = isa;
		uint32_t word;
		unsigned raw = 0;

		isa = resolve_isa(img, addr, isa);
		rc = decode(img, addr, isa);
		if (rc == -ENOMEM)
			return rc;
		if (rc == -EILSEQ && !is_x86(isa) &&
		    (raw = arm_raw(img, addr, isa, &word)))
			rc = 0;
		s->used = true;
		s->addr = addr;
		s->isa = (uint8_t)want;
		s->rc = (int8_t)rc;
		s->len = rc ? 0 : raw ? (uint8_t)raw : (uint8_t)img->csi->size;
		s->cls = rc ? HWT_INSN_OTHER :
			raw ? HWT_INSN_OTHER :
			isa == HWT_ISA_A64 ? (uint8_t)classify_a64(img->csi) :
			!is_x86(isa) ? (uint8_t)classify_a32(img->csi) :
			(uint8_t)classify(img->cur_cs, img->csi);
	}
	*len = s->len;
	*cls = (enum hwt_insn_class)s->cls;
	return s->rc;
}

int hwt_image_insn_info(struct hwt_image *img, uint64_t addr, uint8_t *len,
			enum hwt_insn_class *cls)
{
	return hwt_image_insn_info_isa(img, addr, HWT_ISA_DEFAULT, len, cls);
}

/* Capstone writes the AT&T size suffix everywhere ("movq %rsp, %rbp");
 * GDB and objdump only where no register operand gives the size, and
 * never on branches and stack operations. Drop it in those cases, when
 * what is left is the instruction's base name (so "movzbl" stays). */
static bool drop_suffix(csh cs, const cs_insn *in)
{
	const char *base = cs_insn_name(cs, in->id);
	size_t n = strlen(in->mnemonic);
	const cs_x86 *x = &in->detail->x86;
	bool reg = false;

	if (!base || n < 2 || strlen(base) != n - 1 ||
	    strncmp(base, in->mnemonic, n - 1) ||
	    !strchr("bwlq", in->mnemonic[n - 1]))
		return false;
	for (int i = 0; i < x->op_count; i++)
		reg |= x->operands[i].type == X86_OP_REG;
	return reg || cs_insn_group(cs, in, CS_GRP_CALL) ||
		cs_insn_group(cs, in, CS_GRP_RET) ||
		cs_insn_group(cs, in, CS_GRP_JUMP) ||
		in->id == X86_INS_PUSH || in->id == X86_INS_POP;
}

/* "mov    %rsp,%rbp": mnemonic padded like GDB and objdump, operands
 * without the blank Capstone puts after commas. */
static void format_text(csh cs, const cs_insn *in, char *out, size_t size)
{
	char mn[sizeof(in->mnemonic)];
	size_t n;
	int depth = 0;

	snprintf(mn, sizeof(mn), "%s", in->mnemonic);
	if (drop_suffix(cs, in))
		mn[strlen(mn) - 1] = '\0';
	if (!in->op_str[0]) {
		snprintf(out, size, "%s", mn);
		return;
	}
	n = (size_t)snprintf(out, size, "%-6s ", mn);
	for (const char *p = in->op_str; *p && n + 3 < size; p++) {
		if (*p == ' ' && p > in->op_str && p[-1] == ',')
			continue;
		depth += (*p == '(') - (*p == ')');
		/* Capstone writes numbers below 10 in decimal, GDB in hex;
		 * scale factors inside parentheses stay decimal. */
		if (!depth && *p >= '0' && *p <= '9' && p[1] != 'x' &&
		    (p == in->op_str || strchr("$-,", p[-1]))) {
			out[n++] = '0';
			out[n++] = 'x';
		}
		out[n++] = *p;
	}
	out[n < size ? n : size - 1] = '\0';
}

int hwt_image_insn_isa(struct hwt_image *img, uint64_t addr, enum hwt_isa isa,
		       bool want_text, struct hwt_insn *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	rc = hwt_image_insn_info_isa(img, addr, isa, &out->len, &out->cls);
	if (rc || !want_text)
		return rc;
	isa = resolve_isa(img, addr, isa);
	rc = decode(img, addr, isa);
	if (rc == -EILSEQ && !is_x86(isa)) {
		uint32_t word;
		unsigned len = arm_raw(img, addr, isa, &word);

		snprintf(out->text, sizeof(out->text), len == 2 ?
			 ".inst.n 0x%04x" : ".inst  0x%08x", word);
		return 0;
	}
	if (rc)
		return rc;
	if (is_x86(isa))
		format_text(img->cur_cs, img->csi, out->text, sizeof(out->text));
	else if (img->csi->op_str[0])
		/* Arm: Capstone's text is GDB's, padded the same way */
		snprintf(out->text, sizeof(out->text), "%-6.24s %.64s",
			 img->csi->mnemonic, img->csi->op_str);
	else
		snprintf(out->text, sizeof(out->text), "%.31s",
			 img->csi->mnemonic);
	return 0;
}

int hwt_image_insn(struct hwt_image *img, uint64_t addr, bool want_text,
		   struct hwt_insn *out)
{
	return hwt_image_insn_isa(img, addr, HWT_ISA_DEFAULT, want_text, out);
}
