// SPDX-License-Identifier: BSD-2-Clause
/* machine.c - probes of the debug facilities and their simulated faults
 * (machine.h). */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "debugreg.h"
#include "machine.h"

/* Executed only by the probe's child, placed there by its registers:
 * a cpuid, then nops to land on, then a trap if all else fails. */
__asm__(".pushsection .text\n"
	".type hwt_probe_cpuid_code, @function\n"
	"hwt_probe_cpuid_code:\n"
	"\tcpuid\n\tnop\n\tnop\n\tnop\n\tud2\n"
	".size hwt_probe_cpuid_code, . - hwt_probe_cpuid_code\n"
	".popsection\n");
extern const char hwt_probe_cpuid_code[];

static volatile uint64_t probe_word;

static bool at_cpuid(pid_t tid)
{
	uint8_t code[2];
	long pc;
	struct iovec local = { code, sizeof(code) }, remote;

	errno = 0;
	pc = ptrace(PTRACE_PEEKUSER, tid, offsetof(struct user_regs_struct, rip),
		    0);
	if (errno)
		return false;
	remote.iov_base = (void *)pc;
	remote.iov_len = sizeof(code);
	return process_vm_readv(tid, &local, 1, &remote, 1, 0) == 2 &&
	       code[0] == 0x0f && code[1] == 0xa2;
}

/* The simulated fault: the trap after cpuid is swallowed and the thread
 * goes on to stop after the next instruction. Anything but that trap (a
 * signal, the thread's death) is left for the caller's wait to see. */
static int step_losing_trap(pid_t tid, int sig)
{
	siginfo_t si;

	if (ptrace(PTRACE_SINGLESTEP, tid, 0, (void *)(long)sig) < 0)
		return -errno;
	memset(&si, 0, sizeof(si));
	while (waitid(P_PID, (id_t)tid, &si,
		      WEXITED | WSTOPPED | WNOWAIT | __WALL) < 0)
		if (errno != EINTR)
			return 0;
	if (si.si_code != CLD_TRAPPED || si.si_status != SIGTRAP)
		return 0;
	waitpid(tid, NULL, __WALL);
	return ptrace(PTRACE_SINGLESTEP, tid, 0, 0) < 0 ? -errno : 0;
}

int hwt_os_singlestep(pid_t tid, int sig)
{
	if ((hwt_simulated() & HWT_SIM_LOST_CPUID_TRAP) && !sig &&
	    at_cpuid(tid))
		return step_losing_trap(tid, sig);
	return ptrace(PTRACE_SINGLESTEP, tid, 0, (void *)(long)sig) < 0 ?
	       -errno : 0;
}

/* A child stopped under our ptrace, at a point where it will write
 * probe_word, then read it, then exit. -1 when it cannot be made. */
static pid_t probe_child(void)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		uint64_t sink;

		if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
			_exit(127);
		raise(SIGSTOP);
		probe_word = 1;
		sink = probe_word;
		_exit(sink == 1 ? 0 : 1);
	}
	if (waitpid(pid, &status, __WALL) != pid || !WIFSTOPPED(status)) {
		if (waitpid(pid, &status, WNOHANG | __WALL) == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, __WALL);
		}
		return -1;
	}
	return pid;
}

static void probe_child_end(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	while (waitpid(pid, &status, __WALL) == pid && !WIFEXITED(status) &&
	       !WIFSIGNALED(status))
		;
}

/* Continue the child under a watch of kind rw (1: writes, 3: any
 * access) on probe_word: true when it traps in DR0. */
static bool watch_fires(pid_t pid, unsigned long rw, const char **why)
{
	uint64_t addr[HWT_DR_SLOTS] = { (uint64_t)(uintptr_t)&probe_word };
	unsigned long dr7 = 1ul | ((rw | 2ul << 2) << 16);   /* 8 bytes */
	int status;
	long dr6;

	if (hwt_dr_load(pid, addr, dr7) < 0) {
		*why = "the kernel refuses debug register writes";
		return false;
	}
	if (ptrace(PTRACE_CONT, pid, 0, 0) < 0 ||
	    waitpid(pid, &status, __WALL) != pid) {
		*why = "the probe's child could not be resumed";
		return false;
	}
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP) {
		*why = "a watch set on a child's variable did not trap when "
		       "the child accessed it (the hypervisor accepts the "
		       "registers but never raises their traps)";
		return false;
	}
	errno = 0;
	dr6 = ptrace(PTRACE_PEEKUSER, pid,
		     offsetof(struct user, u_debugreg[6]), 0);
	if (errno || !(dr6 & 1)) {
		*why = "a trap came, but DR6 did not name the watch";
		return false;
	}
	ptrace(PTRACE_POKEUSER, pid, offsetof(struct user, u_debugreg[6]), 0);
	return true;
}

static void probe_dr(struct hwt_machine *m)
{
	const char *why = NULL;
	pid_t pid = probe_child();

	if (pid < 0)
		return;
	m->dr_fires = watch_fires(pid, 1, &why) && watch_fires(pid, 3, &why);
	if (!m->dr_fires)
		snprintf(m->dr_reason, sizeof(m->dr_reason),
			 "debug registers do not work on this machine: %s",
			 why);
	probe_child_end(pid);
}

static void probe_cpuid_step(struct hwt_machine *m)
{
	struct user_regs_struct r;
	pid_t pid = probe_child();
	uint64_t start = (uint64_t)(uintptr_t)hwt_probe_cpuid_code;
	int status;

	if (pid < 0)
		return;
	if (ptrace(PTRACE_GETREGS, pid, 0, &r) == 0) {
		r.rip = start;
		r.rax = 0;
		r.rcx = 0;
		r.orig_rax = (unsigned long long)-1;   /* no syscall restart */
		if (ptrace(PTRACE_SETREGS, pid, 0, &r) == 0 &&
		    hwt_os_singlestep(pid, 0) == 0 &&
		    waitpid(pid, &status, __WALL) == pid &&
		    WIFSTOPPED(status) &&
		    ptrace(PTRACE_GETREGS, pid, 0, &r) == 0)
			m->cpuid_trap_lost = r.rip != start + 2;
	}
	probe_child_end(pid);
}

size_t hwt_machine_notes(const char **notes, size_t max)
{
	static char dr[320];
	const struct hwt_machine *m = hwt_machine();
	size_t n = 0;

	if (!m->dr_fires && n < max) {
		snprintf(dr, sizeof(dr), "%s; watchpoints are served by "
			 "stepping the program and decoding each instruction "
			 "(slower, same stops)", m->dr_reason);
		notes[n++] = dr;
	}
	if (m->cpuid_trap_lost && n < max)
		notes[n++] = "a single step over cpuid stops one instruction "
			     "late on this machine (the hypervisor loses its "
			     "trap); the ptrace backend steps such "
			     "instructions with a breakpoint after them, and "
			     "repairs any other step found late";
	return n;
}

const struct hwt_machine *hwt_machine(void)
{
	static struct hwt_machine m;
	static bool probed;

	if (probed)
		return &m;
	probed = true;
	m.dr_fires = true;
	if (hwt_simulated() & HWT_SIM_NO_PROBE)
		return &m;
	probe_dr(&m);
	probe_cpuid_step(&m);
	return &m;
}
