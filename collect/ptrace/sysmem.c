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

/* A buffer a call writes: at its argument `at`, of a constant length or
 * as long as argument `len_arg` says (arguments counted from 1; 0: not
 * given). */
struct sys_buf {
	uint8_t at, len_arg;
	uint16_t len;
};
/* What a call writes that its registers alone tell: up to four buffers,
 * or nothing (known, no buf). */
struct sys_writes {
	bool known;
	struct sys_buf buf[4];
};

#define BUF(arg, n) { .at = (arg) + 1, .len = (n) }
#define BUF_ARG(arg, n_arg) { .at = (arg) + 1, .len_arg = (n_arg) + 1 }
#define WRITES(...) { .known = true, .buf = { __VA_ARGS__ } }
#define NOTHING { .known = true }

static const struct sys_writes plain[] = {
	[SYS_read] = WRITES(BUF_ARG(1, 2)),
	[SYS_pread64] = WRITES(BUF_ARG(1, 2)),
	[SYS_stat] = WRITES(BUF(1, STAT_SIZE)),
	[SYS_fstat] = WRITES(BUF(1, STAT_SIZE)),
	[SYS_lstat] = WRITES(BUF(1, STAT_SIZE)),
	[SYS_newfstatat] = WRITES(BUF(2, STAT_SIZE)),
	[SYS_statx] = WRITES(BUF(4, 256)),
	[SYS_rt_sigaction] = WRITES(BUF(2, 32)),
	[SYS_pipe] = WRITES(BUF(0, 8)),
	[SYS_pipe2] = WRITES(BUF(0, 8)),
	[SYS_socketpair] = WRITES(BUF(3, 8)),
	[SYS_select] = WRITES(BUF(1, FDSET_SIZE), BUF(2, FDSET_SIZE),
			      BUF(3, FDSET_SIZE), BUF(4, 16)),
	[SYS_pselect6] = WRITES(BUF(1, FDSET_SIZE), BUF(2, FDSET_SIZE),
				BUF(3, FDSET_SIZE)),
	[SYS_nanosleep] = WRITES(BUF(1, 16)),
	[SYS_clock_nanosleep] = WRITES(BUF(3, 16)),
	[SYS_accept] = WRITES(BUF(1, SOCKADDR_MAX), BUF(2, 4)),
	[SYS_accept4] = WRITES(BUF(1, SOCKADDR_MAX), BUF(2, 4)),
	[SYS_getsockname] = WRITES(BUF(1, SOCKADDR_MAX), BUF(2, 4)),
	[SYS_getpeername] = WRITES(BUF(1, SOCKADDR_MAX), BUF(2, 4)),
	[SYS_recvfrom] = WRITES(BUF_ARG(1, 2), BUF(4, SOCKADDR_MAX),
				BUF(5, 4)),
	[SYS_wait4] = WRITES(BUF(1, 4), BUF(3, RUSAGE_SIZE)),
	[SYS_uname] = WRITES(BUF(0, 390)),
	[SYS_getdents] = WRITES(BUF_ARG(1, 2)),
	[SYS_getdents64] = WRITES(BUF_ARG(1, 2)),
	[SYS_getcwd] = WRITES(BUF_ARG(0, 1)),
	[SYS_readlink] = WRITES(BUF_ARG(1, 2)),
	[SYS_readlinkat] = WRITES(BUF_ARG(2, 3)),
	[SYS_gettimeofday] = WRITES(BUF(0, 16), BUF(1, 8)),
	[SYS_time] = WRITES(BUF(0, 8)),
	[SYS_clock_gettime] = WRITES(BUF(1, 16)),
	[SYS_clock_getres] = WRITES(BUF(1, 16)),
	[SYS_getrlimit] = WRITES(BUF(1, 16)),
	[SYS_prlimit64] = WRITES(BUF(3, 16)),
	[SYS_getrusage] = WRITES(BUF(1, RUSAGE_SIZE)),
	[SYS_sysinfo] = WRITES(BUF(0, 112)),
	[SYS_times] = WRITES(BUF(0, 32)),
	[SYS_sigaltstack] = WRITES(BUF(1, 24)),
	[SYS_statfs] = WRITES(BUF(1, 120)),
	[SYS_fstatfs] = WRITES(BUF(1, 120)),
	[SYS_sched_getaffinity] = WRITES(BUF_ARG(2, 1)),
	[SYS_getrandom] = WRITES(BUF_ARG(0, 1)),
	[SYS_getresuid] = WRITES(BUF(0, 4), BUF(1, 4), BUF(2, 4)),
	[SYS_getresgid] = WRITES(BUF(0, 4), BUF(1, 4), BUF(2, 4)),
	/* Write nothing into the caller's memory. */
	[SYS_write] = NOTHING, [SYS_pwrite64] = NOTHING,
	[SYS_writev] = NOTHING, [SYS_open] = NOTHING, [SYS_openat] = NOTHING,
	[SYS_close] = NOTHING, [SYS_lseek] = NOTHING, [SYS_mprotect] = NOTHING,
	[SYS_access] = NOTHING, [SYS_faccessat] = NOTHING,
	[SYS_faccessat2] = NOTHING, [SYS_sched_yield] = NOTHING,
	[SYS_dup] = NOTHING, [SYS_dup2] = NOTHING, [SYS_dup3] = NOTHING,
	[SYS_getpid] = NOTHING, [SYS_gettid] = NOTHING,
	[SYS_getppid] = NOTHING, [SYS_getuid] = NOTHING,
	[SYS_getgid] = NOTHING, [SYS_geteuid] = NOTHING,
	[SYS_getegid] = NOTHING, [SYS_getpgrp] = NOTHING,
	[SYS_socket] = NOTHING, [SYS_connect] = NOTHING,
	[SYS_sendto] = NOTHING, [SYS_sendmsg] = NOTHING,
	[SYS_shutdown] = NOTHING, [SYS_bind] = NOTHING, [SYS_listen] = NOTHING,
	[SYS_fork] = NOTHING, [SYS_setsockopt] = NOTHING, [SYS_exit] = NOTHING,
	[SYS_exit_group] = NOTHING, [SYS_kill] = NOTHING, [SYS_tkill] = NOTHING,
	[SYS_tgkill] = NOTHING, [SYS_fcntl] = NOTHING,
	[SYS_rt_sigreturn] = NOTHING, [SYS_set_tid_address] = NOTHING,
	[SYS_set_robust_list] = NOTHING, [SYS_unlink] = NOTHING,
	[SYS_unlinkat] = NOTHING, [SYS_mkdir] = NOTHING,
	[SYS_mkdirat] = NOTHING, [SYS_rmdir] = NOTHING, [SYS_rename] = NOTHING,
	[SYS_renameat] = NOTHING, [SYS_chdir] = NOTHING, [SYS_fchdir] = NOTHING,
	[SYS_fsync] = NOTHING, [SYS_fdatasync] = NOTHING,
	[SYS_ftruncate] = NOTHING, [SYS_umask] = NOTHING,
	[SYS_setpgid] = NOTHING, [SYS_setsid] = NOTHING, [SYS_alarm] = NOTHING,
	[SYS_pause] = NOTHING, [SYS_epoll_create] = NOTHING,
	[SYS_epoll_create1] = NOTHING, [SYS_epoll_ctl] = NOTHING,
	[SYS_eventfd2] = NOTHING, [SYS_sched_setaffinity] = NOTHING,
	[SYS_mmap] = NOTHING, [SYS_munmap] = NOTHING, [SYS_brk] = NOTHING,
	[SYS_mremap] = NOTHING, [SYS_madvise] = NOTHING, [SYS_rseq] = NOTHING,
	[SYS_membarrier] = NOTHING,
};

/* The calls whose writes depend on their arguments' values or on memory
 * they point to: false when what they write cannot be told. */
static bool told_stores(struct ranges *r, pid_t pid, uint64_t nr,
			const uint64_t a[6])
{
	uint64_t m[MSGHDR_WORDS], w[4];
	uint32_t optlen = 0;

	switch (nr) {
	case SYS_readv: case SYS_preadv: case SYS_preadv2:
		return add_iovecs(r, pid, a[1], a[2]);
	case SYS_recvmsg:
		/* struct msghdr: name, namelen, iov, iovlen, control,
		 * controllen, flags; the kernel writes the name, the
		 * buffers, the control data and the header's lengths and
		 * flags. */
		if (!read_words(pid, a[1], m, MSGHDR_WORDS))
			return false;
		add(r, a[1], 8 * MSGHDR_WORDS);
		add(r, m[0], (uint32_t)m[1] < SOCKADDR_MAX ?
			(uint32_t)m[1] : SOCKADDR_MAX);
		add(r, m[4], m[5]);
		return add_iovecs(r, pid, m[2], m[3]);
	case SYS_poll: case SYS_ppoll:
		add(r, a[0], a[1] * 8);
		return a[1] < (1u << 20);
	case SYS_epoll_wait: case SYS_epoll_pwait:
		add(r, a[1], a[2] * 12);
		return a[2] < (1u << 20);
	case SYS_rt_sigprocmask:
		add(r, a[2], a[3] <= 128 ? a[3] : 128);
		return true;
	case SYS_ioctl:
		/* TCGETS, TIOCGWINSZ, FIONREAD. */
		add(r, a[2], a[1] == 0x5401 ? 60 : a[1] == 0x5413 ? 8 :
			     a[1] == 0x541B ? 4 : 0);
		return a[1] == 0x5401 || a[1] == 0x5413 || a[1] == 0x541B;
	case SYS_getsockopt:
		/* The value, at most the length the caller offers. */
		if (a[4] && !read_bytes(pid, a[4], &optlen, sizeof(optlen)))
			return false;
		add(r, a[3], optlen);
		add(r, a[4], 4);
		return true;
	case SYS_arch_prctl:
		if (a[0] == 0x1003 || a[0] == 0x1004)  /* ARCH_GET_FS/GS */
			add(r, a[1], 8);
		return a[0] >= 0x1001 && a[0] <= 0x1004;  /* and SET_GS/FS */
	case SYS_prctl:
		if (a[0] == 16)                        /* PR_GET_NAME */
			add(r, a[1], 16);
		return a[0] == 16 || a[0] == 15 || a[0] == 1 || a[0] == 38 ||
		       a[0] == 4 || a[0] == 8 || a[0] == 36 ||
		       a[0] == 0x59616d61;
	case SYS_futex:
		switch (a[1] & 127) {
		case 0: case 1: case 3: case 4: case 9: case 10:
			break;                  /* wait, wake, requeue */
		case 5:                         /* WAKE_OP */
			add(r, a[4], 4);
			break;
		default:                        /* PI: the kernel sets owners */
			add(r, a[0], 4);
			break;
		}
		return true;
	case SYS_clone:
		if (a[0] & CLONE_PARENT_SETTID_)
			add(r, a[2], 4);
		if ((a[0] & CLONE_CHILD_SETTID_) && (a[0] & CLONE_VM_))
			add(r, a[3], 4);
		return true;
	case SYS_clone3:
		if (!hwt_sys_clone3_args(pid, a[0], w))
			return false;
		if (w[0] & CLONE_PARENT_SETTID_)
			add(r, w[3], 4);
		if ((w[0] & CLONE_CHILD_SETTID_) && (w[0] & CLONE_VM_))
			add(r, w[2], 4);
		return true;
	default:
		return false;
	}
}

int hwt_sys_stores(pid_t pid, const struct user_regs_struct *regs,
		   struct hwt_store *out, size_t max)
{
	const uint64_t a[6] = { regs->rdi, regs->rsi, regs->rdx, regs->r10,
				regs->r8, regs->r9 };
	struct ranges r = { out, 0, max, false };
	/* At the syscall instruction rax holds the call's number. */
	uint64_t nr = regs->rax;

	if (nr < sizeof(plain) / sizeof(plain[0]) && plain[nr].known) {
		for (size_t i = 0; i < 4 && plain[nr].buf[i].at; i++) {
			const struct sys_buf *b = &plain[nr].buf[i];

			add(&r, a[b->at - 1],
			    b->len_arg ? a[b->len_arg - 1] : b->len);
		}
	} else if (!told_stores(&r, pid, nr, a)) {
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
