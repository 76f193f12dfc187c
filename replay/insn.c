/* insn.c - instruction length and class from Capstone (x86-64, AT&T).
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

static int cs_setup(struct hwt_image *img)
{
	if (img->cs_open)
		return 0;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &img->cs) != CS_ERR_OK)
		return -ENOMEM;
	/* Groups (call/ret/jump/int) need detail; GDB prints AT&T. */
	if (cs_option(img->cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK ||
	    cs_option(img->cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT) != CS_ERR_OK ||
	    !(img->csi = cs_malloc(img->cs))) {
		cs_close(&img->cs);
		return -ENOMEM;
	}
	img->cs_open = true;
	return 0;
}

void hwt_insn_fini(struct hwt_image *img)
{
	if (img->cs_open) {
		cs_free(img->csi, 1);
		cs_close(&img->cs);
		img->cs_open = false;
	}
	free(img->icache);
	img->icache = NULL;
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

/* Decode at addr into img->csi. */
static int decode(struct hwt_image *img, uint64_t addr)
{
	uint8_t buf[HWT_MAX_INSN];
	const uint8_t *code = buf;
	size_t n = hwt_image_read(img, addr, buf, sizeof(buf));
	uint64_t a = addr;
	int rc;

	if (n == 0)
		return -ENOENT;
	rc = cs_setup(img);
	if (rc)
		return rc;
	if (!cs_disasm_iter(img->cs, &code, &n, &a, img->csi))
		return -EILSEQ;
	return 0;
}

static size_t slot_of(uint64_t addr)
{
	/* Fibonacci hashing: instruction addresses are dense and would
	 * otherwise crowd into neighbouring slots by their low bits. */
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 49) &
		(HWT_ICACHE_SIZE - 1);
}

int hwt_image_insn_info(struct hwt_image *img, uint64_t addr, uint8_t *len,
			enum hwt_insn_class *cls)
{
	struct hwt_insn_slot *s;
	int rc;

	if (!img->icache) {
		img->icache = calloc(HWT_ICACHE_SIZE, sizeof(*img->icache));
		if (!img->icache)
			return -ENOMEM;
	}
	s = &img->icache[slot_of(addr)];
	if (!s->used || s->addr != addr) {
		rc = decode(img, addr);
		if (rc == -ENOMEM)
			return rc;
		s->used = true;
		s->addr = addr;
		s->rc = (int8_t)rc;
		s->len = rc ? 0 : (uint8_t)img->csi->size;
		s->cls = rc ? HWT_INSN_OTHER : (uint8_t)classify(img->cs,
								 img->csi);
	}
	*len = s->len;
	*cls = (enum hwt_insn_class)s->cls;
	return s->rc;
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

int hwt_image_insn(struct hwt_image *img, uint64_t addr, bool want_text,
		   struct hwt_insn *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	rc = hwt_image_insn_info(img, addr, &out->len, &out->cls);
	if (rc || !want_text)
		return rc;
	rc = decode(img, addr);
	if (rc)
		return rc;
	format_text(img->cs, img->csi, out->text, sizeof(out->text));
	return 0;
}
