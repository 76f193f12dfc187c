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

/* The memory it is about to read, the same way (addresses computed, not
 * accessed: lea and prefetches read nothing). */
int hwt_x86_loads(const uint8_t *code, size_t n,
		  const struct user_regs_struct *r,
		  struct hwt_store *out, size_t max);

#endif
