/* debugreg.c - loading a traced thread's debug registers (debugreg.h). */
#include <errno.h>
#include <stddef.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "debugreg.h"

#define DR_OFFSET(i) offsetof(struct user, u_debugreg[i])

int hwt_dr_load(pid_t tid, const uint64_t addr[HWT_DR_SLOTS],
		unsigned long dr7)
{
	if (ptrace(PTRACE_POKEUSER, tid, DR_OFFSET(7), 0) < 0)
		return -errno;
	for (unsigned i = 0; i < HWT_DR_SLOTS && dr7; i++)
		if (ptrace(PTRACE_POKEUSER, tid, DR_OFFSET(i),
			   (void *)(uintptr_t)addr[i]) < 0)
			return -errno;
	if (dr7 && ptrace(PTRACE_POKEUSER, tid, DR_OFFSET(7),
			  (void *)dr7) < 0)
		return -errno;
	return 0;
}
