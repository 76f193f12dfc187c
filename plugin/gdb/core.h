/* SPDX-License-Identifier: BSD-2-Clause */
/* core.h - a crashed process's core file as hwt-server reads it
 * (target_core.c): its threads, registers and memory. */
#ifndef HWT_CORE_H
#define HWT_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hwt-common.h"

#define CORE_GREGS_SIZE 216u     /* struct user_regs_struct */
#define CORE_FXSAVE_SIZE 512u    /* struct user_fpregs_struct (FXSAVE) */
#define CORE_MAX_AUXV (64u << 10)

struct core_thread {
	int64_t tid;
	uint8_t gregs[CORE_GREGS_SIZE];
	bool have_fp;
	uint8_t fxsave[CORE_FXSAVE_SIZE];
};

struct hwt_core {
	struct core_thread *threads;  /* faulting thread first, as written */
	size_t nthreads;
	uint8_t *auxv;
	size_t auxv_len;
	int signo;                    /* Linux signal that dumped, 0: none */
	uint8_t siginfo[128];         /* NT_SIGINFO: the kernel's siginfo_t */
	bool have_siginfo;
	struct hwt_image *mem;        /* the core's PT_LOAD segments */
};

int core_open(const char *path, struct hwt_core **out, struct hwt_err *err);
void core_free(struct hwt_core *core);
uint64_t core_thread_pc(const struct core_thread *t);

#endif
