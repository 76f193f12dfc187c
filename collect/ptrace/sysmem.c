// SPDX-License-Identifier: BSD-2-Clause
/* sysmem.c - what a Linux x86-64 system call writes into its caller's
 * memory, from the registers at its `syscall` instruction: the ranges its
 * output arguments name (read's buffer, fstat's struct stat, ...), so the
 * stepper keeps their old bytes (memlog.c). A call this table does not
 * know is unknown: memory before it cannot be told (never guessed).
 * Ranges name the most a call may write; bytes it leaves alone are kept
 * with their own values, which is harmless. Mappings made or moved
 * (mmap, mremap, brk) are known only from the result: sysmem_after. */
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "tracer.h"

#define STAT_SIZE 144u        /* struct stat */
#define RUSAGE_SIZE 144u
#define SOCKADDR_MAX 128u     /* struct sockaddr_storage */
#define FDSET_SIZE 128u
#define MSGHDR_WORDS 7u       /* struct msghdr */
#define CLONE_PARENT_SETTID_ 0x00100000ull
#define CLONE_CHILD_SETTID_ 0x01000000ull
#define CLONE_VM_ 0x00000100ull

struct ranges {
	struct hwt_store *v;
	size_t n, max;
	bool overflow;
};

static void add(struct ranges *r, uint64_t addr, uint64_t len)
{
	if (!addr || !len)
		return;
	if (r->n == r->max) {
		r->overflow = true;
		return;
	}
	r->v[r->n].addr = addr;
	r->v[r->n].len = len;
	r->n++;
}

/* len bytes at at in process pid; false if unreadable. */
static bool read_bytes(pid_t pid, uint64_t at, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)at, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) ==
	       (ssize_t)len;
}

static bool read_words(pid_t pid, uint64_t at, uint64_t *w, size_t n)
{
	return read_bytes(pid, at, w, n * sizeof(*w));
}

/* The buffers of the iovcnt struct iovec at iov, each a range the call
 * may fill; false when they cannot be read or are more than there is
 * room for (the call is then unknown). */
static bool add_iovecs(struct ranges *r, pid_t pid, uint64_t iov,
		       uint64_t iovcnt)
{
	uint64_t w[2 * HWT_SYS_MAX_IOV];

	if (iovcnt > HWT_SYS_MAX_IOV || iovcnt > r->max - r->n)
		return false;
	if (iovcnt && !read_words(pid, iov, w, 2 * (size_t)iovcnt))
		return false;
	for (uint64_t i = 0; i < iovcnt; i++)
		add(r, w[2 * i], w[2 * i + 1]);
	return true;
}

bool hwt_sys_clone3_args(pid_t pid, uint64_t at, uint64_t w[4])
{
	return read_words(pid, at, w, 4);
}

int hwt_sys_stores(pid_t pid, const struct user_regs_struct *regs,
		   struct hwt_store *out, size_t max)
{
	const uint64_t a0 = regs->rdi, a1 = regs->rsi, a2 = regs->rdx,
		a3 = regs->r10, a4 = regs->r8, a5 = regs->r9;
	struct ranges r = { out, 0, max, false };
	uint64_t w[4];

	/* At the syscall instruction rax holds the call's number. */
	switch (regs->rax) {
	case SYS_read: case SYS_pread64:
		add(&r, a1, a2);
		break;
	case SYS_readv: case SYS_preadv: case SYS_preadv2:
		if (!add_iovecs(&r, pid, a1, a2))
			return -1;
		break;
	case SYS_recvmsg: {
		/* struct msghdr: name, namelen, iov, iovlen, control,
		 * controllen, flags; the kernel writes the name, the
		 * buffers, the control data and the header's lengths and
		 * flags. */
		uint64_t m[MSGHDR_WORDS];

		if (!read_words(pid, a1, m, MSGHDR_WORDS))
			return -1;
		add(&r, a1, 8 * MSGHDR_WORDS);
		add(&r, m[0], (uint32_t)m[1] < SOCKADDR_MAX ?
			(uint32_t)m[1] : SOCKADDR_MAX);
		add(&r, m[4], m[5]);
		if (!add_iovecs(&r, pid, m[2], m[3]))
			return -1;
		break;
	}
	case SYS_stat: case SYS_fstat: case SYS_lstat:
		add(&r, a1, STAT_SIZE);
		break;
	case SYS_newfstatat:
		add(&r, a2, STAT_SIZE);
		break;
	case SYS_statx:
		add(&r, a4, 256);
		break;
	case SYS_poll: case SYS_ppoll:
		if (a1 < (1u << 20))
			add(&r, a0, a1 * 8);
		else
			return -1;
		break;
	case SYS_rt_sigaction:
		add(&r, a2, 32);
		break;
	case SYS_rt_sigprocmask:
		add(&r, a2, a3 <= 128 ? a3 : 128);
		break;
	case SYS_ioctl:
		if (a1 == 0x5401)               /* TCGETS */
			add(&r, a2, 60);
		else if (a1 == 0x5413)          /* TIOCGWINSZ */
			add(&r, a2, 8);
		else if (a1 == 0x541B)          /* FIONREAD */
			add(&r, a2, 4);
		else
			return -1;
		break;
	case SYS_pipe: case SYS_pipe2: case SYS_socketpair:
		add(&r, regs->rax == SYS_socketpair ? a3 : a0, 8);
		break;
	case SYS_select: case SYS_pselect6:
		add(&r, a1, FDSET_SIZE);
		add(&r, a2, FDSET_SIZE);
		add(&r, a3, FDSET_SIZE);
		if (regs->rax == SYS_select)
			add(&r, a4, 16);
		break;
	case SYS_nanosleep:
		add(&r, a1, 16);
		break;
	case SYS_clock_nanosleep:
		add(&r, a3, 16);
		break;
	case SYS_accept: case SYS_accept4: case SYS_getsockname:
	case SYS_getpeername:
		add(&r, a1, SOCKADDR_MAX);
		add(&r, a2, 4);
		break;
	case SYS_recvfrom:
		add(&r, a1, a2);
		add(&r, a4, SOCKADDR_MAX);
		add(&r, a5, 4);
		break;
	case SYS_getsockopt: {
		/* The value, at most the length the caller offers. */
		uint32_t optlen = 0;

		if (a4 && !read_bytes(pid, a4, &optlen, sizeof(optlen)))
			return -1;
		add(&r, a3, optlen);
		add(&r, a4, 4);
		break;
	}
	case SYS_wait4:
		add(&r, a1, 4);
		add(&r, a3, RUSAGE_SIZE);
		break;
	case SYS_uname:
		add(&r, a0, 390);
		break;
	case SYS_getdents: case SYS_getdents64:
		add(&r, a1, a2);
		break;
	case SYS_getcwd:
		add(&r, a0, a1);
		break;
	case SYS_readlink:
		add(&r, a1, a2);
		break;
	case SYS_readlinkat:
		add(&r, a2, a3);
		break;
	case SYS_gettimeofday:
		add(&r, a0, 16);
		add(&r, a1, 8);
		break;
	case SYS_time:
		add(&r, a0, 8);
		break;
	case SYS_clock_gettime: case SYS_clock_getres:
		add(&r, a1, 16);
		break;
	case SYS_getrlimit:
		add(&r, a1, 16);
		break;
	case SYS_prlimit64:
		add(&r, a3, 16);
		break;
	case SYS_getrusage:
		add(&r, a1, RUSAGE_SIZE);
		break;
	case SYS_sysinfo:
		add(&r, a0, 112);
		break;
	case SYS_times:
		add(&r, a0, 32);
		break;
	case SYS_sigaltstack:
		add(&r, a1, 24);
		break;
	case SYS_statfs: case SYS_fstatfs:
		add(&r, a1, 120);
		break;
	case SYS_sched_getaffinity:
		add(&r, a2, a1);
		break;
	case SYS_epoll_wait: case SYS_epoll_pwait:
		if (a2 < (1u << 20))
			add(&r, a1, a2 * 12);
		else
			return -1;
		break;
	case SYS_getrandom:
		add(&r, a0, a1);
		break;
	case SYS_getresuid: case SYS_getresgid:
		add(&r, a0, 4);
		add(&r, a1, 4);
		add(&r, a2, 4);
		break;
	case SYS_arch_prctl:
		if (a0 == 0x1003 || a0 == 0x1004)        /* ARCH_GET_FS/GS */
			add(&r, a1, 8);
		else if (a0 != 0x1001 && a0 != 0x1002)   /* ARCH_SET_GS/FS */
			return -1;
		break;
	case SYS_prctl:
		if (a0 == 16)                            /* PR_GET_NAME */
			add(&r, a1, 16);
		else if (a0 != 15 && a0 != 1 && a0 != 38 && a0 != 4 &&
			 a0 != 8 && a0 != 36 && a0 != 0x59616d61)
			return -1;
		break;
	case SYS_futex:
		switch (a1 & 127) {
		case 0: case 1: case 3: case 4: case 9: case 10:
			break;                  /* wait, wake, requeue */
		case 5:                         /* WAKE_OP */
			add(&r, a4, 4);
			break;
		default:                        /* PI: the kernel sets owners */
			add(&r, a0, 4);
			break;
		}
		break;
	case SYS_clone:
		if (a0 & CLONE_PARENT_SETTID_)
			add(&r, a2, 4);
		if ((a0 & CLONE_CHILD_SETTID_) && (a0 & CLONE_VM_))
			add(&r, a3, 4);
		break;
	case SYS_clone3:
		if (!hwt_sys_clone3_args(pid, a0, w))
			return -1;
		if (w[0] & CLONE_PARENT_SETTID_)
			add(&r, w[3], 4);
		if ((w[0] & CLONE_CHILD_SETTID_) && (w[0] & CLONE_VM_))
			add(&r, w[2], 4);
		break;
	/* Write nothing into the caller's memory. */
	case SYS_write: case SYS_pwrite64: case SYS_writev: case SYS_open:
	case SYS_openat: case SYS_close: case SYS_lseek: case SYS_mprotect:
	case SYS_access: case SYS_faccessat: case SYS_faccessat2:
	case SYS_sched_yield: case SYS_dup: case SYS_dup2: case SYS_dup3:
	case SYS_getpid: case SYS_gettid: case SYS_getppid: case SYS_getuid:
	case SYS_getgid: case SYS_geteuid: case SYS_getegid: case SYS_getpgrp:
	case SYS_socket: case SYS_connect: case SYS_sendto: case SYS_sendmsg:
	case SYS_shutdown: case SYS_bind: case SYS_listen: case SYS_fork:
	case SYS_setsockopt:
	case SYS_exit: case SYS_exit_group: case SYS_kill: case SYS_tkill:
	case SYS_tgkill: case SYS_fcntl: case SYS_rt_sigreturn:
	case SYS_set_tid_address: case SYS_set_robust_list:
	case SYS_unlink: case SYS_unlinkat: case SYS_mkdir: case SYS_mkdirat:
	case SYS_rmdir: case SYS_rename: case SYS_renameat: case SYS_chdir:
	case SYS_fchdir: case SYS_fsync: case SYS_fdatasync: case SYS_ftruncate:
	case SYS_umask: case SYS_setpgid: case SYS_setsid: case SYS_alarm:
	case SYS_pause: case SYS_epoll_create: case SYS_epoll_create1:
	case SYS_epoll_ctl: case SYS_eventfd2: case SYS_sched_setaffinity:
	case SYS_mmap: case SYS_munmap: case SYS_brk: case SYS_mremap:
	case SYS_madvise: case SYS_rseq: case SYS_membarrier:
		break;
	default:
		return -1;
	}
	return r.overflow ? -1 : (int)r.n;
}

int hwt_sys_after(uint64_t nr, const uint64_t args[6], uint64_t result,
		  uint64_t *brk, struct hwt_store *out, size_t max)
{
	struct ranges r = { out, 0, max, false };
	bool failed = result > (uint64_t)-4096;

	switch (nr) {
	case SYS_mmap:
		if (!failed)
			add(&r, result, args[1]);
		break;
	case SYS_mremap:
		add(&r, args[0], args[1]);
		if (!failed)
			add(&r, result, args[2]);
		break;
	case SYS_munmap:
		add(&r, args[0], args[1]);
		break;
	case SYS_madvise:
		/* DONTNEED, FREE, REMOVE, WIPEONFORK: pages may read back as
		 * zeros. */
		if (args[2] == 4 || args[2] == 8 || args[2] == 9)
			add(&r, args[0], args[1]);
		break;
	case SYS_brk:
		if (*brk && result > *brk)
			add(&r, *brk, result - *brk);
		else if (*brk && result < *brk)
			add(&r, result, *brk - result);
		*brk = result;
		break;
	default:
		break;
	}
	return r.overflow ? -1 : (int)r.n;
}
