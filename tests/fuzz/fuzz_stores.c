// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_stores.c - what the ptrace recorder takes an instruction or a
 * system call to write (collect/ptrace/stores.c, sysmem.c): the traced
 * program's code bytes and registers are its own, untrusted.
 *
 * Input: [struct user_regs_struct][up to 15 code bytes][6 more words for
 * a finished call's arguments and result]. Checked: never more ranges
 * than asked for; each range 1 to 16 KiB (an instruction's operand, an
 * XSAVE area) or, for a call, as long as its arguments say; a syscall is
 * said so only where the bytes hold the syscall opcode (after prefixes).
 */
#include "fuzz-common.h"
#include <unistd.h>

#include "ptrace/tracer.h"

static void write_seeds(const char *dir)
{
	static const uint8_t code[][4] = {
		{ 0x55 }, { 0xe8, 0, 0, 0 }, { 0x0f, 0x05 }, { 0x89, 0x45, 0xfc },
		{ 0xf3, 0xaa }, { 0x0f, 0xae, 0x07 },
	};
	char path[4096];

	for (size_t i = 0; i < sizeof(code) / sizeof(code[0]); i++) {
		struct user_regs_struct r;
		FILE *f;

		memset(&r, 0, sizeof(r));
		r.rsp = 0x7ffff000;
		r.rdi = 0x500000;
		r.rax = i == 2 ? 0 : 1;       /* read(0, ...) at the syscall */
		r.rsi = 0x600000;
		r.rdx = 64;
		snprintf(path, sizeof(path), "%s/seed-%zu", dir, i);
		f = fopen(path, "wb");
		if (!f)
			continue;
		fwrite(&r, sizeof(r), 1, f);
		fwrite(code[i], sizeof(code[i]), 1, f);
		fclose(f);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("HWT_FUZZ_SEEDS");

	(void)argc;
	(void)argv;
	if (seeds) {
		write_seeds(seeds);
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct user_regs_struct r;
	struct hwt_store st[8];
	uint64_t args[6] = { 0 }, result = 0, brk;
	size_t ncode;
	bool sc = false;
	int n;

	if (size < sizeof(r))
		return 0;
	memcpy(&r, data, sizeof(r));
	data += sizeof(r);
	size -= sizeof(r);
	ncode = size < 15 ? size : 15;
	n = hwt_x86_stores(data, ncode, &r, st, 8, &sc);
	if (n > 8)
		abort();
	for (int i = 0; i < n; i++)
		if (st[i].len == 0 || st[i].len > 16384)
			abort();
	/* Prefixes may come first (REX after REX is legal, if useless). */
	if (sc && !memmem(data, ncode, "\x0f\x05", 2))
		abort();
	/* A call's ranges come from its arguments: only the count bounds. */
	n = hwt_sys_stores(getpid(), &r, st, 8);
	if (n > 8)
		abort();
	data += ncode;
	size -= ncode;
	memcpy(args, data, size < sizeof(args) ? size : sizeof(args));
	if (size > sizeof(args))
		memcpy(&result, data + sizeof(args),
		       size - sizeof(args) < sizeof(result) ?
		       size - sizeof(args) : sizeof(result));
	brk = args[5];
	n = hwt_sys_after(r.rax % 512, args, result, &brk, st, 8);
	if (n > 8)
		abort();
	return 0;
}
