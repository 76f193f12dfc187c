// SPDX-License-Identifier: BSD-2-Clause
/* regs.c - the pc of a stopped traced thread, the one register the
 * stepper reads at every turn without its whole set. */
#include <errno.h>
#include <stddef.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "tracer.h"

int hwt_step_read_pc(pid_t tid, uint64_t *pc)
{
	long v;

	errno = 0;
	v = ptrace(PTRACE_PEEKUSER, tid,
		   offsetof(struct user_regs_struct, rip), 0);
	*pc = (uint64_t)v;
	return v == -1 && errno ? -errno : 0;
}
