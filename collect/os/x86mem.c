// SPDX-License-Identifier: BSD-2-Clause
/* x86mem.c - which bytes of memory an x86-64 instruction is about to
 * read or write (x86mem.h): its memory operands with that action, the
 * stack slots push, call, pop and ret use included (Zydis lists them as
 * hidden operands). A rep-prefixed string instruction is stepped one
 * iteration at a time, so its operand is one element. */
#include <Zydis/Zydis.h>
#include <cpuid.h>
#include <string.h>
#include <sys/uio.h>

#include "x86mem.h"

/* The general registers as Zydis names them, 64-bit and 32-bit forms
 * (an address-size prefix computes with the latter). */
static void fill_context(ZydisRegisterContext *ctx,
			 const struct user_regs_struct *r)
{
	static const ZydisRegister r64[16] = {
		ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_RDX,
		ZYDIS_REGISTER_RBX, ZYDIS_REGISTER_RSP, ZYDIS_REGISTER_RBP,
		ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_R8,
		ZYDIS_REGISTER_R9, ZYDIS_REGISTER_R10, ZYDIS_REGISTER_R11,
		ZYDIS_REGISTER_R12, ZYDIS_REGISTER_R13, ZYDIS_REGISTER_R14,
		ZYDIS_REGISTER_R15,
	};
	static const ZydisRegister r32[16] = {
		ZYDIS_REGISTER_EAX, ZYDIS_REGISTER_ECX, ZYDIS_REGISTER_EDX,
		ZYDIS_REGISTER_EBX, ZYDIS_REGISTER_ESP, ZYDIS_REGISTER_EBP,
		ZYDIS_REGISTER_ESI, ZYDIS_REGISTER_EDI, ZYDIS_REGISTER_R8D,
		ZYDIS_REGISTER_R9D, ZYDIS_REGISTER_R10D, ZYDIS_REGISTER_R11D,
		ZYDIS_REGISTER_R12D, ZYDIS_REGISTER_R13D, ZYDIS_REGISTER_R14D,
		ZYDIS_REGISTER_R15D,
	};
	const uint64_t v[16] = {
		r->rax, r->rcx, r->rdx, r->rbx, r->rsp, r->rbp, r->rsi, r->rdi,
		r->r8, r->r9, r->r10, r->r11, r->r12, r->r13, r->r14, r->r15,
	};

	memset(ctx, 0, sizeof(*ctx));
	for (int i = 0; i < 16; i++) {
		ctx->values[r64[i]] = v[i];
		ctx->values[r32[i]] = (uint32_t)v[i];
	}
	ctx->values[ZYDIS_REGISTER_RIP] = r->rip;
	ctx->values[ZYDIS_REGISTER_EIP] = (uint32_t)r->rip;
}

/* An XSAVE-family area is as large as the state the cpu saves (XCR0);
 * this bounds every x86 state there is today. */
#define MAX_STATE_AREA 16384u

/* What an XSAVE-family instruction writes: Zydis gives the legacy area
 * and header (576 bytes) whatever the state, but with AVX-512 the area
 * is about 2.7 KB (ld.so's lazy binding saves it on the stack). The
 * size CPUID gives for the state XCR0 enables bounds the standard and
 * the compacted forms; the traced program runs on this cpu. */
static uint64_t xsave_area_size(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid_count(0xd, 0, &a, &b, &c, &d) || b == 0 ||
	    b > MAX_STATE_AREA)
		return MAX_STATE_AREA;
	return b;
}

static bool is_xsave(ZydisMnemonic m)
{
	return m == ZYDIS_MNEMONIC_XSAVE || m == ZYDIS_MNEMONIC_XSAVE64 ||
	       m == ZYDIS_MNEMONIC_XSAVEC || m == ZYDIS_MNEMONIC_XSAVEC64 ||
	       m == ZYDIS_MNEMONIC_XSAVEOPT ||
	       m == ZYDIS_MNEMONIC_XSAVEOPT64 ||
	       m == ZYDIS_MNEMONIC_XSAVES || m == ZYDIS_MNEMONIC_XSAVES64;
}

static bool decode(const uint8_t *code, size_t n,
		   ZydisDecodedInstruction *insn, ZydisDecodedOperand *ops)
{
	static ZydisDecoder dec;
	static bool dec_ready;

	if (!dec_ready) {
		ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64,
				 ZYDIS_STACK_WIDTH_64);
		dec_ready = true;
	}
	return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code, n, insn, ops));
}

/* The memory operands of insn with one of these actions, as ranges. */
static int operands(const ZydisDecodedInstruction *insn,
		    const ZydisDecodedOperand *ops,
		    const struct user_regs_struct *r, ZydisOperandActions want,
		    struct hwt_store *out, size_t max)
{
	static ZydisRegisterContext ctx;
	size_t k = 0;

	fill_context(&ctx, r);
	for (unsigned i = 0; i < insn->operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];
		ZyanU64 addr;
		uint64_t size;

		if (op->type != ZYDIS_OPERAND_TYPE_MEMORY ||
		    !(op->actions & want))
			continue;
		/* lea computes an address; it accesses nothing. */
		if (op->mem.type == ZYDIS_MEMOP_TYPE_AGEN ||
		    op->mem.type == ZYDIS_MEMOP_TYPE_MIB)
			continue;
		/* Gathers and scatters access where a vector of indices
		 * says: not followed; the caller treats this as unknown. */
		if (op->mem.type != ZYDIS_MEMOP_TYPE_MEM || k == max)
			return -1;
		if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddressEx(insn, op, r->rip,
							     &ctx, &addr)))
			return -1;
		if (op->mem.segment == ZYDIS_REGISTER_FS)
			addr += r->fs_base;
		else if (op->mem.segment == ZYDIS_REGISTER_GS)
			addr += r->gs_base;
		size = op->size / 8u;
		if (size == 0 || size > MAX_STATE_AREA)
			size = MAX_STATE_AREA;
		if (is_xsave(insn->mnemonic))
			size = xsave_area_size();
		/* Zydis names a push's stack slot [rsp]: it is below. */
		if (op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN &&
		    op->mem.base == ZYDIS_REGISTER_RSP &&
		    (insn->mnemonic == ZYDIS_MNEMONIC_PUSH ||
		     insn->mnemonic == ZYDIS_MNEMONIC_PUSHFQ ||
		     insn->mnemonic == ZYDIS_MNEMONIC_CALL))
			addr -= size;
		out[k].addr = addr;
		out[k].len = size;
		k++;
	}
	return (int)k;
}

int hwt_x86_stores(const uint8_t *code, size_t n,
		   const struct user_regs_struct *r,
		   struct hwt_store *out, size_t max, bool *is_syscall)
{
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

	*is_syscall = false;
	if (!decode(code, n, &insn, ops))
		return -1;
	*is_syscall = insn.mnemonic == ZYDIS_MNEMONIC_SYSCALL;
	/* enter pushes rbp and up to 31 outer frame pointers. */
	if (insn.mnemonic == ZYDIS_MNEMONIC_ENTER) {
		uint64_t level = insn.raw.imm[1].value.u & 31;

		out[0].addr = r->rsp - 8 * (level + 1);
		out[0].len = 8 * (level + 1);
		return max ? 1 : -1;
	}
	return operands(&insn, ops, r, ZYDIS_OPERAND_ACTION_MASK_WRITE, out,
			max);
}

int hwt_x86_loads(const uint8_t *code, size_t n,
		  const struct user_regs_struct *r,
		  struct hwt_store *out, size_t max)
{
	ZydisDecodedInstruction insn;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

	if (!decode(code, n, &insn, ops))
		return -1;
	if (insn.meta.category == ZYDIS_CATEGORY_PREFETCH)
		return 0;
	/* enter reads the outer frame pointers it copies. */
	if (insn.mnemonic == ZYDIS_MNEMONIC_ENTER) {
		uint64_t level = insn.raw.imm[1].value.u & 31;

		if (level < 2)
			return 0;
		out[0].addr = r->rbp - 8 * (level - 1);
		out[0].len = 8 * (level - 1);
		return max ? 1 : -1;
	}
	return operands(&insn, ops, r, ZYDIS_OPERAND_ACTION_MASK_READ, out,
			max);
}

static ssize_t read_remote(pid_t pid, uint64_t addr, uint8_t *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

size_t hwt_x86_code_read(pid_t pid, uint64_t pc,
			 uint8_t code[HWT_X86_CODE_MAX])
{
	ssize_t got = read_remote(pid, pc, code, HWT_X86_CODE_MAX), again;
	uint64_t room = 4096 - (pc & 4095);

	if (got == (ssize_t)HWT_X86_CODE_MAX || room >= HWT_X86_CODE_MAX)
		return got > 0 ? (size_t)got : 0;
	/* Code at a page's end may be followed by an unmapped page. */
	again = read_remote(pid, pc, code, (size_t)room);
	if (again > got)
		got = again;
	return got > 0 ? (size_t)got : 0;
}
