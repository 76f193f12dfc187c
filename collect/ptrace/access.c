// SPDX-License-Identifier: BSD-2-Clause
/* access.c - registers and memory of a stopped traced program.
 *
 * Register sets go through PTRACE_GETREGSET/SETREGSET of the thread.
 * Writing a new pc makes the thread continue elsewhere without executing
 * a jump, so the history gets the new pc as an asynchronous transfer (as
 * a signal handler's entry) and keeps ending at the instruction the thread
 * is stopped at. Memory goes through /proc/PID/mem, which reaches
 * read-only (code) pages too for the tracer.
 */
#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include "tracer.h"

int hwt_step_regset(struct hwt_collector *base, pid_t tid, int nt_type,
		  void *buf, size_t *len, bool write, struct hwt_err *err)
{
	struct step_collector *c = step_of(base);
	struct step_thread *t = hwt_step_thread_find(c, tid);
	struct iovec iov = { .iov_base = buf, .iov_len = *len };
	uint64_t old_pc = 0, new_pc;

	if (nt_type != NT_PRSTATUS && nt_type != NT_PRFPREG &&
	    nt_type != NT_X86_XSTATE)
		return hwt_err_set(err, EINVAL,
				   "register set type %d; use NT_PRSTATUS, "
				   "NT_PRFPREG or NT_X86_XSTATE", nt_type);
	if (!t || t->state != PT_STOPPED)
		return hwt_err_set(err, ESRCH,
				   "thread %d is not a stopped thread of "
				   "process %d", (int)tid, (int)base->pid);
	if (write && nt_type == NT_PRSTATUS &&
	    hwt_step_read_pc(tid, &old_pc) < 0)
		return hwt_err_set(err, errno, "reading thread %d's pc: %s",
				   (int)tid, strerror(errno));
	if (ptrace(write ? PTRACE_SETREGSET : PTRACE_GETREGSET, tid,
		   (void *)(uintptr_t)nt_type, &iov) < 0)
		return hwt_err_set(err, errno, "%s register set %d of thread "
				   "%d: %s", write ? "writing" : "reading",
				   nt_type, (int)tid, strerror(errno));
	*len = iov.iov_len;
	if (write && nt_type == NT_PRSTATUS &&
	    hwt_step_read_pc(tid, &new_pc) == 0 && new_pc != old_pc) {
		if (t->ring.started)
			hwt_sw_ring_step(&t->ring, new_pc, true);
		else
			hwt_sw_ring_start(&t->ring, new_pc);
		hwt_step_log_regs(t);
		/* A signal injected next lands on the new pc's handler. */
		t->handler_entry_next = false;
	} else if (write && nt_type == NT_PRSTATUS && t->log_regs &&
		   ptrace(PTRACE_GETREGS, tid, 0, &t->now) == 0) {
		/* The instruction here runs with the registers written. */
		hwt_reglog_replace_last(&t->reglog, &t->now);
		hwt_step_memlog_regs_written(t, &t->now);
	} else if (write && nt_type != NT_PRSTATUS && t->log_regs) {
		struct user_fpregs_struct fp;

		/* x87/SSE written (NT_PRFPREG, or through the XSAVE area). */
		if (ptrace(PTRACE_GETFPREGS, tid, 0, &fp) == 0)
			hwt_reglog_replace_last(&t->fplog, &fp);
	}
	return 0;
}

int hwt_step_regs_at(struct hwt_collector *base, pid_t tid, uint64_t insn,
		     int nt_type, void *out, struct hwt_err *err)
{
	struct step_thread *t = hwt_step_thread_find(step_of(base), tid);

	if (!t || hwt_reglog_get(nt_type == NT_PRSTATUS ? &t->reglog :
				 &t->fplog, insn, out) < 0)
		return hwt_err_set(err, ENOENT, "no registers kept for "
				   "instruction %llu of thread %d",
				   (unsigned long long)insn, (int)tid);
	return 0;
}

