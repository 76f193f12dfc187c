/* SPDX-License-Identifier: BSD-2-Clause */
/* x86mem.h - which bytes of memory an x86-64 instruction is about to
 * read or write, from its bytes and the registers before it. The ptrace
 * stepper keeps the old bytes of stores (ptrace/memlog.c); watchpoints
 * are told from loads and stores where debug registers do not fire
 * (ptrace/debugreg.c, seize/softwatch.c). */
#ifndef HWT_X86MEM_H
#define HWT_X86MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/* A range of memory an instruction or a system call accesses. */
struct hwt_store {
	uint64_t addr, len;
};

/* The memory the code at r->rip is about to write (up to max ranges),
 * and whether it is a syscall; -1 when it cannot be told. */
int hwt_x86_stores(const uint8_t *code, size_t n,
		   const struct user_regs_struct *r,
		   struct hwt_store *out, size_t max, bool *is_syscall);

#define HWT_X86_CODE_MAX 16u   /* bytes an instruction may take, and one */

/* Up to HWT_X86_CODE_MAX bytes of pid's code at pc into code, stopping
 * at the page's end when the next page is unmapped: how many (0 when
 * none could be read). */
size_t hwt_x86_code_read(pid_t pid, uint64_t pc,
			 uint8_t code[HWT_X86_CODE_MAX]);

/* The memory it is about to read, the same way (addresses computed, not
 * accessed: lea and prefetches read nothing). */
int hwt_x86_loads(const uint8_t *code, size_t n,
		  const struct user_regs_struct *r,
		  struct hwt_store *out, size_t max);

#endif
