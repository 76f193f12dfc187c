// SPDX-License-Identifier: BSD-2-Clause
/* x86.c - x86 decoding with Zydis (see x86.h).
 *
 * Length, class and direct target come from the instruction alone
 * (ZydisDecoderDecodeInstruction, no operand decoding): that is what the
 * decoders ask for every instruction they walk. Text is rare (listings),
 * so only it decodes operands and formats.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "x86.h"

int hwt_x86_init(struct hwt_x86 *x)
{
	if (ZYAN_FAILED(ZydisDecoderInit(&x->dec64, ZYDIS_MACHINE_MODE_LONG_64,
					 ZYDIS_STACK_WIDTH_64)) ||
	    ZYAN_FAILED(ZydisDecoderInit(&x->dec32,
					 ZYDIS_MACHINE_MODE_LONG_COMPAT_32,
					 ZYDIS_STACK_WIDTH_32)) ||
	    ZYAN_FAILED(ZydisFormatterInit(&x->fmt, ZYDIS_FORMATTER_STYLE_ATT)))
		return -EINVAL;
	/* GDB's numbers: no zero padding, rip-relative operands as
	 * written ("0x2fe2(%rip)"), branch targets absolute. */
	static const struct { ZydisFormatterProperty prop; ZyanUPointer v; }
	props[] = {
		{ ZYDIS_FORMATTER_PROP_FORCE_RELATIVE_RIPREL, ZYAN_TRUE },
		{ ZYDIS_FORMATTER_PROP_ADDR_PADDING_ABSOLUTE, ZYDIS_PADDING_DISABLED },
		{ ZYDIS_FORMATTER_PROP_ADDR_PADDING_RELATIVE, ZYDIS_PADDING_DISABLED },
		{ ZYDIS_FORMATTER_PROP_DISP_PADDING, ZYDIS_PADDING_DISABLED },
		{ ZYDIS_FORMATTER_PROP_IMM_PADDING, ZYDIS_PADDING_DISABLED },
		{ ZYDIS_FORMATTER_PROP_IMM_SIGNEDNESS, ZYDIS_SIGNEDNESS_UNSIGNED },
		{ ZYDIS_FORMATTER_PROP_HEX_UPPERCASE, ZYAN_FALSE },
	};
	for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
		if (ZYAN_FAILED(ZydisFormatterSetProperty(&x->fmt, props[i].prop,
							  props[i].v)))
			return -EINVAL;
	return 0;
}

static enum hwt_insn_class classify(const ZydisDecodedInstruction *in)
{
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_CALL:
		return HWT_INSN_CALL;
	case ZYDIS_MNEMONIC_RET:
	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
	case ZYDIS_MNEMONIC_SYSRET:
	case ZYDIS_MNEMONIC_SYSEXIT:
		return HWT_INSN_RET;
	case ZYDIS_MNEMONIC_JMP:
		return HWT_INSN_JUMP;
	case ZYDIS_MNEMONIC_SYSCALL:
	case ZYDIS_MNEMONIC_SYSENTER:
	case ZYDIS_MNEMONIC_INT:
	case ZYDIS_MNEMONIC_INT1:
	case ZYDIS_MNEMONIC_INT3:
	case ZYDIS_MNEMONIC_INTO:
		return HWT_INSN_SYSCALL;
	case ZYDIS_MNEMONIC_XBEGIN:
		/* Goes on to the next instruction; an abort later is an
		 * asynchronous transfer (Intel PT reports it so too). */
		return HWT_INSN_OTHER;
	default:
		/* jcc, jcxz/jecxz/jrcxz, loop/loope/loopne */
		return in->meta.category == ZYDIS_CATEGORY_COND_BR ?
			HWT_INSN_CJUMP : HWT_INSN_OTHER;
	}
}

/* Where a relative branch goes: next instruction plus displacement, cut
 * to the operand size (a 16-bit jump wraps in its segment) and to the
 * address size of the mode. */
static uint64_t relative_target(const ZydisDecodedInstruction *in,
				uint64_t addr, bool mode32)
{
	uint64_t t = addr + in->length + (uint64_t)in->raw.imm[0].value.s;

	if (in->operand_width == 16)
		return t & 0xffff;
	return mode32 ? t & 0xffffffffu : t;
}

static const ZydisDecoder *decoder(const struct hwt_x86 *x, bool mode32)
{
	return mode32 ? &x->dec32 : &x->dec64;
}

int hwt_x86_decode(const struct hwt_x86 *x, bool mode32, const uint8_t *code,
		   size_t n, uint64_t addr, struct hwt_x86_insn *out)
{
	ZydisDecoderContext ctx;
	ZydisDecodedInstruction in;

	if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(decoder(x, mode32), &ctx,
						      code, n, &in)))
		return -EILSEQ;
	*out = (struct hwt_x86_insn){ .len = in.length, .cls = classify(&in) };
	if (out->cls != HWT_INSN_OTHER && out->cls != HWT_INSN_SYSCALL &&
	    in.raw.imm[0].is_relative) {
		out->direct = true;
		out->target = relative_target(&in, addr, mode32);
	}
	out->rep_string = (in.attributes & (ZYDIS_ATTRIB_HAS_REP |
					    ZYDIS_ATTRIB_HAS_REPE |
					    ZYDIS_ATTRIB_HAS_REPNE)) &&
		(in.meta.category == ZYDIS_CATEGORY_STRINGOP ||
		 in.meta.category == ZYDIS_CATEGORY_IOSTRINGOP);
	return 0;
}

/* Names GDB and objdump (AT&T) give where Zydis's differ: condition
 * codes by their other name, and the AT&T conversions. */
static const struct {
	ZydisMnemonic zydis;
	const char *gdb;
} gdb_names[] = {
	{ ZYDIS_MNEMONIC_JZ, "je" }, { ZYDIS_MNEMONIC_JNZ, "jne" },
	{ ZYDIS_MNEMONIC_JNB, "jae" }, { ZYDIS_MNEMONIC_JNBE, "ja" },
	{ ZYDIS_MNEMONIC_JNL, "jge" }, { ZYDIS_MNEMONIC_JNLE, "jg" },
	{ ZYDIS_MNEMONIC_SETZ, "sete" }, { ZYDIS_MNEMONIC_SETNZ, "setne" },
	{ ZYDIS_MNEMONIC_SETNB, "setae" }, { ZYDIS_MNEMONIC_SETNBE, "seta" },
	{ ZYDIS_MNEMONIC_SETNL, "setge" }, { ZYDIS_MNEMONIC_SETNLE, "setg" },
	{ ZYDIS_MNEMONIC_CMOVZ, "cmove" }, { ZYDIS_MNEMONIC_CMOVNZ, "cmovne" },
	{ ZYDIS_MNEMONIC_CMOVNB, "cmovae" }, { ZYDIS_MNEMONIC_CMOVNBE, "cmova" },
	{ ZYDIS_MNEMONIC_CMOVNL, "cmovge" }, { ZYDIS_MNEMONIC_CMOVNLE, "cmovg" },
	{ ZYDIS_MNEMONIC_CBW, "cbtw" }, { ZYDIS_MNEMONIC_CWDE, "cwtl" },
	{ ZYDIS_MNEMONIC_CDQE, "cltq" }, { ZYDIS_MNEMONIC_CWD, "cwtd" },
	{ ZYDIS_MNEMONIC_CDQ, "cltd" }, { ZYDIS_MNEMONIC_CQO, "cqto" },
};

/* Append s to text[*len], cut to size (text stays terminated). */
static void append(char *text, size_t size, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (*len + n >= size)
		n = size - 1 - *len;
	memcpy(text + *len, s, n);
	*len += n;
	text[*len] = '\0';
}

/* Copy src (at most n bytes of it) into dst of size bytes, always
 * terminated; what the text formatting does instead of snprintf("%s"),
 * which costs more than the decode. */
static void copy_str(char *dst, size_t size, const char *src, size_t n)
{
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* AVX-512 integer compares with a predicate GDB names in the mnemonic
 * ("vpcmpeqb", "vpcmpltub"); the others keep their immediate. */
static const char *const vpcmp_predicates[8] = {
	"eq", "lt", "le", NULL, "neq", "nlt", "nle", NULL,
};

/* SSE and AVX floating-point compares: GDB names the predicate
 * ("cmpnlesd", "vcmpltpd"); SSE has the first eight. */
static const char *const fp_predicates[32] = {
	"eq", "lt", "le", "unord", "neq", "nlt", "nle", "ord",
	"eq_uq", "nge", "ngt", "false", "neq_oq", "ge", "gt", "true",
	"eq_os", "lt_oq", "le_oq", "unord_s", "neq_us", "nlt_uq", "nle_uq",
	"ord_s", "eq_us", "nge_uq", "ngt_uq", "false_os", "neq_os", "ge_oq",
	"gt_oq", "true_us",
};

static char size_letter(unsigned bits)
{
	return bits == 8 ? 'b' : bits == 16 ? 'w' : bits == 32 ? 'l' : 'q';
}

static bool has_register_operand(const ZydisDecodedInstruction *in,
				 const ZydisDecodedOperand *ops)
{
	for (unsigned i = 0; i < in->operand_count_visible; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER)
			return true;
	return false;
}

/* The mnemonic as GDB prints it, into name; *drop_imm when GDB folds
 * the first operand (an immediate) into the name. zy_name is Zydis's
 * formatted mnemonic, which carries an AT&T size suffix where Zydis
 * thinks one is needed. */
static void gdb_mnemonic(const ZydisDecodedInstruction *in,
			 const ZydisDecodedOperand *ops, const char *zy_name,
			 char *name, size_t size, bool *drop_imm)
{
	const char *base = ZydisMnemonicGetString(in->mnemonic);
	size_t blen = base ? strlen(base) : 0;

	*drop_imm = false;
	if (!base) {
		copy_str(name, size, zy_name, strlen(zy_name));
		return;
	}
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_MOVZX:
	case ZYDIS_MNEMONIC_MOVSX:
	case ZYDIS_MNEMONIC_MOVSXD:
		snprintf(name, size, "mov%c%c%c",
			 in->mnemonic == ZYDIS_MNEMONIC_MOVZX ? 'z' : 's',
			 size_letter(ops[1].size), size_letter(ops[0].size));
		return;
	case ZYDIS_MNEMONIC_MOV:
		if (in->raw.imm[0].size == 64) {
			snprintf(name, size, "movabs");
			return;
		}
		break;
	case ZYDIS_MNEMONIC_NOP:
		/* the multi-byte nop: "nopw 0x0(%rax,%rax,1)" */
		if (in->operand_count_visible) {
			snprintf(name, size, "nop%c", size_letter(ops[0].size));
			return;
		}
		break;
	case ZYDIS_MNEMONIC_VPCMPB: case ZYDIS_MNEMONIC_VPCMPUB:
	case ZYDIS_MNEMONIC_VPCMPW: case ZYDIS_MNEMONIC_VPCMPUW:
	case ZYDIS_MNEMONIC_VPCMPD: case ZYDIS_MNEMONIC_VPCMPUD:
	case ZYDIS_MNEMONIC_VPCMPQ: case ZYDIS_MNEMONIC_VPCMPUQ: {
		const char *pred = vpcmp_predicates[in->raw.imm[0].value.u & 7];

		if (pred && in->raw.imm[0].value.u < 8) {
			snprintf(name, size, "vpcmp%s%s", pred, base + 5);
			*drop_imm = true;
			return;
		}
		break;
	}
	case ZYDIS_MNEMONIC_CMPPS: case ZYDIS_MNEMONIC_CMPPD:
	case ZYDIS_MNEMONIC_CMPSS: case ZYDIS_MNEMONIC_CMPSD:
	case ZYDIS_MNEMONIC_VCMPPS: case ZYDIS_MNEMONIC_VCMPPD:
	case ZYDIS_MNEMONIC_VCMPSS: case ZYDIS_MNEMONIC_VCMPSD: {
		bool vex = base[0] == 'v';
		uint64_t pred = in->raw.imm[0].value.u;

		/* cmpsd is also the string compare, which has no imm */
		if (in->raw.imm[0].size && pred < (vex ? 32u : 8u)) {
			snprintf(name, size, "%scmp%s%s", vex ? "v" : "",
				 fp_predicates[pred], base + (vex ? 4 : 3));
			*drop_imm = true;
			return;
		}
		break;
	}
	case ZYDIS_MNEMONIC_CVTSI2SD: case ZYDIS_MNEMONIC_CVTSI2SS:
	case ZYDIS_MNEMONIC_VCVTSI2SD: case ZYDIS_MNEMONIC_VCVTSI2SS: {
		/* the integer source's size, when it is in memory */
		const ZydisDecodedOperand *src =
			&ops[in->operand_count_visible - 1];

		if (src->type == ZYDIS_OPERAND_TYPE_MEMORY) {
			snprintf(name, size, "%s%c", base, size_letter(src->size));
			return;
		}
		break;
	}
	default:
		break;
	}
	for (size_t i = 0; i < sizeof(gdb_names) / sizeof(*gdb_names); i++)
		if (in->mnemonic == gdb_names[i].zydis) {
			copy_str(name, size, gdb_names[i].gdb,
				 strlen(gdb_names[i].gdb));
			return;
		}
	/* Zydis's size suffix stays only where no register operand gives
	 * the size ("movl $0x1,-0x4(%rbp)"), as in GDB. */
	if (strlen(zy_name) == blen + 1 && !strncmp(zy_name, base, blen) &&
	    has_register_operand(in, ops))
		copy_str(name, size, base, strlen(base));
	else
		copy_str(name, size, zy_name, strlen(zy_name));
}

/* Prefix words Zydis writes before the mnemonic, with GDB's spelling. */
static const char *const prefix_names[][2] = {
	{ "lock", "lock" }, { "rep", "rep" }, { "repe", "repz" },
	{ "repne", "repnz" }, { "notrack", "notrack" }, { "bnd", "bnd" },
	{ "xacquire", "xacquire" }, { "xrelease", "xrelease" },
};

static const char *gdb_prefix(const char *w, size_t n)
{
	for (size_t i = 0; i < sizeof(prefix_names) / sizeof(*prefix_names); i++)
		if (strlen(prefix_names[i][0]) == n &&
		    !strncmp(prefix_names[i][0], w, n))
			return prefix_names[i][1];
	return NULL;
}

#define MAX_PIECES ZYDIS_MAX_OPERAND_COUNT
#define PIECE_LEN 96

/* One operand's text; op is its Zydis operand (NULL for the implicit
 * operands GDB shows and Zydis does not). */
struct piece {
	char text[PIECE_LEN];
	const ZydisDecodedOperand *op;
};

struct layout {
	char prefixes[48];
	char name[32];
	struct piece p[MAX_PIECES + 2];
	unsigned n;
};

static void add_piece(struct layout *l, const char *text,
		      const ZydisDecodedOperand *op)
{
	if (l->n < sizeof(l->p) / sizeof(*l->p)) {
		copy_str(l->p[l->n].text, PIECE_LEN, text, strlen(text));
		l->p[l->n++].op = op;
	}
}

static void drop_piece(struct layout *l, unsigned i)
{
	if (i < l->n) {
		memmove(&l->p[i], &l->p[i + 1], (l->n - i - 1) * sizeof(*l->p));
		l->n--;
	}
}

/* Split Zydis's "lock add %eax, (%rdi)" into prefixes, mnemonic and
 * operands; Zydis writes AT&T operands in reverse of its operand array. */
static void split(const ZydisDecodedInstruction *in,
		  const ZydisDecodedOperand *ops, const char *zy,
		  struct layout *l, char *zy_name, size_t name_size)
{
	const char *p = zy, *w;
	size_t wl, plen = 0;
	unsigned k = 0;

	for (;;) {
		const char *gp;

		w = p;
		while (*p && *p != ' ')
			p++;
		wl = (size_t)(p - w);
		if (!*p || !(gp = gdb_prefix(w, wl)))
			break;
		plen += (size_t)snprintf(l->prefixes + plen,
					 sizeof(l->prefixes) - plen, "%s ", gp);
		if (plen >= sizeof(l->prefixes))
			plen = sizeof(l->prefixes) - 1;
		p++;
	}
	copy_str(zy_name, name_size, w, wl);
	if (*p)
		p++;
	while (*p) {
		const char *end = p;
		int depth = 0;
		char text[PIECE_LEN];

		while (*end && !(depth == 0 && end[0] == ',' && end[1] == ' ')) {
			depth += (*end == '(' || *end == '{') -
				(*end == ')' || *end == '}');
			end++;
		}
		copy_str(text, sizeof(text), p, (size_t)(end - p));
		k++;
		add_piece(l, text, k <= in->operand_count_visible ?
			  &ops[in->operand_count_visible - k] : NULL);
		p = *end ? end + 2 : end;
	}
}

/* x87 registers: GDB writes the fixed top of stack "%st" and an encoded
 * one "%st(1)"; Zydis writes "%st0" ... "%st7" for both. */
static void x87_registers(struct piece *pc)
{
	char *r = strstr(pc->text, "%st");
	char out[PIECE_LEN];

	if (!r || r[3] < '0' || r[3] > '7' || !pc->op)
		return;
	if (pc->op->encoding == ZYDIS_OPERAND_ENCODING_NONE)
		snprintf(out, sizeof(out), "%.*s%%st%s", (int)(r - pc->text),
			 pc->text, r + 4);
	else
		snprintf(out, sizeof(out), "%.*s%%st(%c)%s",
			 (int)(r - pc->text), pc->text, r[3], r + 4);
	copy_str(pc->text, PIECE_LEN, out, strlen(out));
}

/* GDB keeps an encoded zero displacement: "0x0(%rbp)". */
static void zero_displacement(struct piece *pc)
{
	const ZydisDecodedOperand *op = pc->op;
	char *paren = strchr(pc->text, '(');
	char out[PIECE_LEN];

	if (!op || op->type != ZYDIS_OPERAND_TYPE_MEMORY || !paren ||
	    !op->mem.disp.has_displacement || op->mem.disp.value ||
	    (paren > pc->text && !strchr(":*", paren[-1])))
		return;
	snprintf(out, sizeof(out), "%.*s0x0%s", (int)(paren - pc->text),
		 pc->text, paren);
	copy_str(pc->text, PIECE_LEN, out, strlen(out));
}

/* Masks and other AVX-512 decorators follow their operand: "%k1{%k2}". */
static void tight_decorators(struct piece *pc)
{
	char *b;

	while ((b = strstr(pc->text, " {")))
		memmove(b, b + 1, strlen(b));
}

static const char *address_register(const ZydisDecodedInstruction *in,
				    char which)
{
	static const char *const names[3][2] = {
		{ "%si", "%di" }, { "%esi", "%edi" }, { "%rsi", "%rdi" },
	};
	int w = in->address_width == 16 ? 0 : in->address_width == 32 ? 1 : 2;

	return names[w][which == 'd'];
}

static const char *accumulator(unsigned bits)
{
	return bits == 8 ? "%al" : bits == 16 ? "%ax" :
		bits == 32 ? "%eax" : "%rax";
}

/* String instructions: GDB shows the operands Zydis leaves implicit,
 * "rep stos %al,%es:(%rdi)", "movsb %ds:(%rsi),%es:(%rdi)". */
static void string_operands(const ZydisDecodedInstruction *in, struct layout *l)
{
	char src[32], dst[32];
	const char *acc = accumulator(in->operand_width);

	snprintf(src, sizeof(src), "%%ds:(%s)", address_register(in, 's'));
	snprintf(dst, sizeof(dst), "%%es:(%s)", address_register(in, 'd'));
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_MOVSD:
		snprintf(l->name, sizeof(l->name), "movsl");
		/* fall through */
	case ZYDIS_MNEMONIC_MOVSB: case ZYDIS_MNEMONIC_MOVSW:
	case ZYDIS_MNEMONIC_MOVSQ:
		add_piece(l, src, NULL);
		add_piece(l, dst, NULL);
		break;
	case ZYDIS_MNEMONIC_CMPSD:
		snprintf(l->name, sizeof(l->name), "cmpsl");
		/* fall through */
	case ZYDIS_MNEMONIC_CMPSB: case ZYDIS_MNEMONIC_CMPSW:
	case ZYDIS_MNEMONIC_CMPSQ:
		add_piece(l, dst, NULL);
		add_piece(l, src, NULL);
		break;
	case ZYDIS_MNEMONIC_STOSB: case ZYDIS_MNEMONIC_STOSW:
	case ZYDIS_MNEMONIC_STOSD: case ZYDIS_MNEMONIC_STOSQ:
		snprintf(l->name, sizeof(l->name), "stos");
		add_piece(l, acc, NULL);
		add_piece(l, dst, NULL);
		break;
	case ZYDIS_MNEMONIC_LODSB: case ZYDIS_MNEMONIC_LODSW:
	case ZYDIS_MNEMONIC_LODSD: case ZYDIS_MNEMONIC_LODSQ:
		snprintf(l->name, sizeof(l->name), "lods");
		add_piece(l, src, NULL);
		add_piece(l, acc, NULL);
		break;
	case ZYDIS_MNEMONIC_SCASB: case ZYDIS_MNEMONIC_SCASW:
	case ZYDIS_MNEMONIC_SCASD: case ZYDIS_MNEMONIC_SCASQ:
		snprintf(l->name, sizeof(l->name), "scas");
		add_piece(l, dst, NULL);
		add_piece(l, acc, NULL);
		break;
	default:
		break;
	}
}

/* Whether raw prefix i changes nothing. Zydis calls an operand-size
 * byte that REX.W overrides, and REX on a near branch (64-bit already),
 * effective; they are not. */
static bool prefix_has_no_effect(const ZydisDecodedInstruction *in, int i)
{
	uint8_t b = in->raw.prefixes[i].value;

	switch (in->raw.prefixes[i].type) {
	case ZYDIS_PREFIX_TYPE_IGNORED:
		return true;
	case ZYDIS_PREFIX_TYPE_EFFECTIVE:
		if (b == 0x66)
			return in->raw.rex.W;
		/* R, X or B extend a register; W alone does nothing here */
		if ((b & 0xf0) == 0x40 && !(b & 7))
			return in->mnemonic == ZYDIS_MNEMONIC_CALL ||
				in->mnemonic == ZYDIS_MNEMONIC_JMP ||
				in->mnemonic == ZYDIS_MNEMONIC_RET ||
				in->meta.category == ZYDIS_CATEGORY_COND_BR;
		return false;
	default:
		return false;
	}
}

/* Prefixes that change nothing and that GDB shows and Zydis leaves out:
 * the surplus operand-size bytes and null segment overrides of padding
 * nops ("data16 cs nopw"), those of TLS call sequences ("data16 data16
 * rex.W call") and "repz ret". */
static void ignored_prefixes(const ZydisDecodedInstruction *in,
			     struct layout *l)
{
	size_t len = strlen(l->prefixes);

	for (int i = 0; i < in->raw.prefix_count; i++) {
		static const struct { uint8_t b; const char *name; } names[] = {
			{ 0x2e, "cs" }, { 0x3e, "ds" }, { 0x26, "es" },
			{ 0x36, "ss" }, { 0x64, "fs" }, { 0x65, "gs" },
			{ 0x66, "data16" }, { 0x67, "addr32" }, { 0xf3, "repz" },
			{ 0xf2, "repnz" },
		};
		uint8_t b = in->raw.prefixes[i].value;
		char rex[12];
		const char *name = NULL;

		if (!prefix_has_no_effect(in, i))
			continue;
		for (size_t k = 0; k < sizeof(names) / sizeof(*names); k++)
			if (names[k].b == b)
				name = names[k].name;
		if ((b & 0xf0) == 0x40) {
			snprintf(rex, sizeof(rex), "rex%s%s%s%s%s",
				 b & 0xf ? "." : "", b & 8 ? "W" : "",
				 b & 4 ? "R" : "", b & 2 ? "X" : "",
				 b & 1 ? "B" : "");
			name = rex;
		}
		if (name && len + strlen(name) + 2 < sizeof(l->prefixes))
			len += (size_t)snprintf(l->prefixes + len,
						sizeof(l->prefixes) - len,
						"%s ", name);
	}
}

/* x87 arithmetic with a memory operand names its size in GDB
 * ("fldt", "fildll"); the register forms with st(i) as destination
 * swap fsub/fsubr and fdiv/fdivr, as AT&T assemblers always have. */
static void x87_names(const ZydisDecodedInstruction *in,
		      const ZydisDecodedOperand *ops, struct layout *l)
{
	static const char *const swapped[][2] = {
		{ "fsub", "fsubr" }, { "fsubp", "fsubrp" },
		{ "fdiv", "fdivr" }, { "fdivp", "fdivrp" },
	};
	size_t n = strlen(l->name);

	if (in->meta.category != ZYDIS_CATEGORY_X87_ALU || l->name[0] != 'f')
		return;
	if ((in->opcode == 0xdc || in->opcode == 0xde) && in->raw.modrm.mod == 3) {
		for (size_t i = 0; i < sizeof(swapped) / sizeof(*swapped); i++)
			for (int d = 0; d < 2; d++)
				if (!strcmp(l->name, swapped[i][d])) {
					snprintf(l->name, sizeof(l->name), "%s",
						 swapped[i][!d]);
					return;
				}
		return;
	}
	for (unsigned i = 0; i < in->operand_count_visible; i++) {
		const ZydisDecodedOperand *op = &ops[i];
		const char *sfx = NULL;

		if (op->type != ZYDIS_OPERAND_TYPE_MEMORY)
			continue;
		if (op->element_type == ZYDIS_ELEMENT_TYPE_FLOAT32)
			sfx = "s";
		else if (op->element_type == ZYDIS_ELEMENT_TYPE_FLOAT64)
			sfx = "l";
		else if (op->element_type == ZYDIS_ELEMENT_TYPE_FLOAT80)
			sfx = "t";
		else if (op->element_type == ZYDIS_ELEMENT_TYPE_INT && l->name[1] == 'i')
			sfx = op->size == 16 ? "s" : op->size == 32 ? "l" :
				op->size == 64 ? "ll" : NULL;
		if (sfx && n + strlen(sfx) < sizeof(l->name))
			strcat(l->name, sfx);
		return;
	}
}

/* Integer operations on memory alone name their size in GDB
 * ("decl (%rdi)", "divq 0x8(%rcx)"); Zydis writes some bare. */
static void integer_size(const ZydisDecodedInstruction *in,
			 const ZydisDecodedOperand *ops, struct layout *l)
{
	const char *base = ZydisMnemonicGetString(in->mnemonic);
	size_t n = strlen(l->name);

	switch (in->meta.category) {
	case ZYDIS_CATEGORY_BINARY: case ZYDIS_CATEGORY_LOGICAL:
	case ZYDIS_CATEGORY_SHIFT: case ZYDIS_CATEGORY_ROTATE:
	case ZYDIS_CATEGORY_DATAXFER: case ZYDIS_CATEGORY_SEMAPHORE:
		break;
	default:
		return;
	}
	if (!base || strcmp(l->name, base) || n + 1 >= sizeof(l->name))
		return;
	/* a shift's count in %cl says nothing of the size */
	if (in->meta.category == ZYDIS_CATEGORY_SHIFT ||
	    in->meta.category == ZYDIS_CATEGORY_ROTATE ?
	    ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER :
	    has_register_operand(in, ops))
		return;
	for (unsigned i = 0; i < in->operand_count_visible; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY) {
			l->name[n] = size_letter(ops[i].size);
			l->name[n + 1] = '\0';
			return;
		}
}

/* Zydis's AT&T text in GDB's layout and spelling: prefixes and mnemonic
 * padded to six columns, operands without blanks after commas. */
static void gdb_layout(const ZydisDecodedInstruction *in,
		       const ZydisDecodedOperand *ops, const char *zy,
		       char *text, size_t size)
{
	struct layout l = { .n = 0 };
	char zy_name[32];
	bool drop_imm;
	size_t len;

	split(in, ops, zy, &l, zy_name, sizeof(zy_name));
	gdb_mnemonic(in, ops, zy_name, l.name, sizeof(l.name), &drop_imm);
	if (drop_imm && l.n && l.p[0].op &&
	    l.p[0].op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
		drop_piece(&l, 0);
	/* shifts by one (d0/d1) and the register of a padding nop are
	 * not written */
	if (in->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
	    (in->opcode == 0xd0 || in->opcode == 0xd1) && l.n == 2)
		drop_piece(&l, 0);
	if (in->mnemonic == ZYDIS_MNEMONIC_NOP && l.n == 2)
		drop_piece(&l, 0);
	if (in->mnemonic == ZYDIS_MNEMONIC_NOP && !l.n && in->opcode == 0x90 &&
	    in->operand_width == 16) {
		snprintf(l.name, sizeof(l.name), "xchg");
		add_piece(&l, "%ax", NULL);
		add_piece(&l, "%ax", NULL);
	}
	if (in->meta.category == ZYDIS_CATEGORY_STRINGOP && !l.n)
		string_operands(in, &l);
	ignored_prefixes(in, &l);
	x87_names(in, ops, &l);
	integer_size(in, ops, &l);
	for (unsigned i = 0; i < l.n; i++) {
		x87_registers(&l.p[i]);
		zero_displacement(&l.p[i]);
		tight_decorators(&l.p[i]);
	}
	len = 0;
	text[0] = '\0';
	append(text, size, &len, l.prefixes);
	append(text, size, &len, l.name);
	/* the mnemonic column is six wide, then one blank */
	while (l.n && len < 6)
		append(text, size, &len, " ");
	if (l.n)
		append(text, size, &len, " ");
	/* GDB marks an indirect branch's operand: "jmp *%rax" */
	if ((in->mnemonic == ZYDIS_MNEMONIC_CALL ||
	     in->mnemonic == ZYDIS_MNEMONIC_JMP) && !in->raw.imm[0].is_relative &&
	    l.n && l.p[0].text[0] != '*' && l.p[0].text[0] != '$')
		append(text, size, &len, "*");
	for (unsigned i = 0; i < l.n; i++) {
		if (i)
			append(text, size, &len, ",");
		append(text, size, &len, l.p[i].text);
	}
}

int hwt_x86_text(const struct hwt_x86 *x, bool mode32, const uint8_t *code,
		 size_t n, uint64_t addr, char *text, size_t size)
{
	ZydisDecoderContext ctx;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

	if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(decoder(x, mode32), &ctx,
						      code, n, &in)) ||
	    ZYAN_FAILED(ZydisDecoderDecodeOperands(decoder(x, mode32), &ctx,
						   &in, ops,
						   in.operand_count_visible)))
		return -EILSEQ;
	char zy[256];

	if (ZYAN_FAILED(ZydisFormatterFormatInstruction(&x->fmt, &in, ops,
							in.operand_count_visible,
							zy, sizeof(zy), addr,
							NULL)))
		return -EILSEQ;
	gdb_layout(&in, ops, zy, text, size);
	return 0;
}
