// SPDX-License-Identifier: BSD-2-Clause
/* test_stores.c - what the ptrace recorder takes an instruction or a
 * system call to write (collect/ptrace/stores.c, sysmem.c): the ranges
 * whose old bytes it keeps for memory of the past. */
#include <cpuid.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "check.h"
#include "ptrace/tracer.h"

static struct user_regs_struct regs(void)
{
	struct user_regs_struct r;

	memset(&r, 0, sizeof(r));
	r.rsp = 0x7ffff000;
	r.rbp = 0x7ffff100;
	r.rdi = 0x500000;
	r.rip = 0x401000;
	r.fs_base = 0x7f0000000000;
	return r;
}

struct case_ {
	const char *name;
	const char *bytes;
	size_t len;
	int count;             /* stores expected, -1: cannot be told */
	uint64_t addr, size;   /* the first store */
	bool syscall;
};

static void test_instructions(void)
{
	const struct case_ cases[] = {
		{ "push %rbp", "\x55", 1, 1, 0x7ffff000 - 8, 8, false },
		{ "call rel32", "\xe8\x00\x00\x00\x00", 5, 1, 0x7ffff000 - 8, 8,
		  false },
		{ "mov %eax,-0x4(%rbp)", "\x89\x45\xfc", 3, 1, 0x7ffff0fc, 4,
		  false },
		{ "mov %rax,%fs:0x28", "\x64\x48\x89\x04\x25\x28\x00\x00\x00",
		  9, 1, 0x7f0000000028, 8, false },
		{ "mov %rax,0x10(%rip)", "\x48\x89\x05\x10\x00\x00\x00", 7, 1,
		  0x401000 + 7 + 0x10, 8, false },
		{ "rep stos %al,(%rdi): one iteration", "\xf3\xaa", 2, 1,
		  0x500000, 1, false },
		{ "movups %xmm0,(%rdi)", "\x0f\x11\x07", 3, 1, 0x500000, 16,
		  false },
		{ "vmovdqu64 %zmm0,(%rdi)", "\x62\xf1\xfe\x48\x7f\x07", 6, 1,
		  0x500000, 64, false },
		{ "lock cmpxchg %ecx,(%rdi)", "\xf0\x0f\xb1\x0f", 4, 1,
		  0x500000, 4, false },
		{ "fxsave (%rdi)", "\x0f\xae\x07", 3, 1, 0x500000, 512, false },
		{ "mov (%rdi),%rax stores nothing", "\x48\x8b\x07", 3, 0, 0, 0,
		  false },
		{ "lea (%rdi),%rax stores nothing", "\x48\x8d\x07", 3, 0, 0, 0,
		  false },
		{ "syscall", "\x0f\x05", 2, 0, 0, 0, true },
		{ "call *%rax", "\xff\xd0", 2, 1, 0x7ffff000 - 8, 8, false },
		{ "pushfq", "\x9c", 1, 1, 0x7ffff000 - 8, 8, false },
		{ "enter $0x10,$0", "\xc8\x10\x00\x00", 4, 1,
		  0x7ffff000 - 8, 8, false },
		{ "pop %rax stores nothing", "\x58", 1, 0, 0, 0, false },
		{ "an undecodable byte", "\x06", 1, -1, 0, 0, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct case_ *k = &cases[i];
		struct user_regs_struct r = regs();
		struct hwt_store st[8];
		bool sc = false;
		int n = hwt_x86_stores((const uint8_t *)k->bytes, k->len, &r,
				       st, 8, &sc);
		char name[128];

		snprintf(name, sizeof(name), "stores: %s", k->name);
		CHECK(name, n == k->count && sc == k->syscall &&
		      (n < 1 || (st[0].addr == k->addr &&
				 st[0].len == k->size)),
		      "%d stores (first 0x%llx, %llu bytes), syscall %d",
		      n, n > 0 ? (unsigned long long)st[0].addr : 0ull,
		      n > 0 ? (unsigned long long)st[0].len : 0ull, sc);
	}
}

/* The XSAVE family writes the whole state area this cpu's XCR0 asks for,
 * not the 576 bytes of its legacy part and header: with AVX-512 that is
 * about 2.7 KB (ld.so's lazy binding saves it below its caller's stack
 * frame, which memory of the past must then restore). */
static void test_xsave(void)
{
	static const struct { const char *name, *bytes; size_t len; } k[] = {
		{ "xsave (%rdi)", "\x0f\xae\x27", 3 },
		{ "xsavec 0x40(%rsp)", "\x0f\xc7\x64\x24\x40", 5 },
		{ "xsaveopt (%rdi)", "\x0f\xae\x37", 3 },
	};
	unsigned a, b = 0, c, d;
	uint64_t want;

	if (!__get_cpuid_count(0xd, 0, &a, &b, &c, &d) || b == 0)
		b = 16384;
	want = b;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		struct user_regs_struct r = regs();
		struct hwt_store st[8];
		bool sc;
		int n = hwt_x86_stores((const uint8_t *)k[i].bytes, k[i].len, &r,
				       st, 8, &sc);
		char name[128];

		snprintf(name, sizeof(name), "stores: %s writes the cpu's "
			 "whole state area (%llu bytes)", k[i].name,
			 (unsigned long long)want);
		CHECK(name, n == 1 && st[0].len == want && st[0].len >= 576,
		      "%d stores, %llu bytes", n,
		      n > 0 ? (unsigned long long)st[0].len : 0ull);
	}
}

static int sys(uint64_t nr, uint64_t a0, uint64_t a1, uint64_t a2,
	       uint64_t a3, struct hwt_store *st)
{
	struct user_regs_struct r = regs();

	r.rax = nr;
	r.rdi = a0;
	r.rsi = a1;
	r.rdx = a2;
	r.r10 = a3;
	return hwt_sys_stores(getpid(), &r, st, 8);
}

/* Calls that fill the buffers a vector in the caller's memory names:
 * the vector is read from the process (here, this one). */
static void test_vectored(void)
{
	static char a[10], b[20], name[16], control[40];
	struct iovec iov[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	struct iovec many[HWT_SYS_MAX_IOV + 1];
	struct msghdr msg = {
		.msg_name = name, .msg_namelen = sizeof(name),
		.msg_iov = iov, .msg_iovlen = 2,
		.msg_control = control, .msg_controllen = sizeof(control),
	};
	struct hwt_store st[HWT_SYS_STORES_MAX];
	struct user_regs_struct r = regs();
	int n;

	n = sys(SYS_readv, 3, (uint64_t)(uintptr_t)iov, 2, 0, st);
	CHECK("sys: readv writes each buffer of its vector", n == 2 &&
	      st[0].addr == (uintptr_t)a && st[0].len == sizeof(a) &&
	      st[1].addr == (uintptr_t)b && st[1].len == sizeof(b), "%d", n);
	n = sys(SYS_preadv, 3, 0x10, 2, 0, st);
	CHECK("sys: a vector that cannot be read cannot be told", n == -1,
	      "%d", n);
	memset(many, 0, sizeof(many));
	r.rax = SYS_readv;
	r.rsi = (uintptr_t)many;
	r.rdx = HWT_SYS_MAX_IOV + 1;
	n = hwt_sys_stores(getpid(), &r, st, HWT_SYS_STORES_MAX);
	CHECK("sys: more buffers than are followed cannot be told", n == -1,
	      "%d", n);
	n = sys(SYS_recvmsg, 3, (uint64_t)(uintptr_t)&msg, 0, 0, st);
	CHECK("sys: recvmsg writes its header, name, control data and "
	      "buffers", n == 5 && st[0].addr == (uintptr_t)&msg &&
	      st[0].len == sizeof(msg) && st[1].addr == (uintptr_t)name &&
	      st[2].addr == (uintptr_t)control &&
	      st[2].len == sizeof(control) && st[3].addr == (uintptr_t)a &&
	      st[4].addr == (uintptr_t)b, "%d", n);
}

static void test_syscalls(void)
{
	struct hwt_store st[8];
	uint64_t args[6] = { 0, 8192, 3, 0x22, 0, 0 }, brk = 0x600000;
	int n;

	n = sys(SYS_read, 0, 0x1000, 100, 0, st);
	CHECK("sys: read writes its buffer", n == 1 && st[0].addr == 0x1000 &&
	      st[0].len == 100, "%d", n);
	n = sys(SYS_fstat, 3, 0x2000, 0, 0, st);
	CHECK("sys: fstat writes a struct stat", n == 1 &&
	      st[0].addr == 0x2000 && st[0].len == 144, "%d", n);
	n = sys(SYS_rt_sigprocmask, 0, 0, 0x3000, 8, st);
	CHECK("sys: rt_sigprocmask writes the old set", n == 1 &&
	      st[0].addr == 0x3000 && st[0].len == 8, "%d", n);
	n = sys(SYS_write, 1, 0x1000, 100, 0, st);
	CHECK("sys: write writes nothing", n == 0, "%d", n);
	n = sys(SYS_futex, 0x4000, 5, 1, 0, st);
	CHECK("sys: futex wake writes nothing but WAKE_OP's word", n == 0 ||
	      n == 1, "%d", n);
	n = sys(9999, 0, 0, 0, 0, st);
	CHECK("sys: an unknown call cannot be told", n == -1, "%d", n);
	n = sys(SYS_ioctl, 1, 0x5401, 0x5000, 0, st);
	CHECK("sys: ioctl TCGETS writes a termios", n == 1 &&
	      st[0].addr == 0x5000, "%d", n);
	n = sys(SYS_ioctl, 1, 0x1234, 0x5000, 0, st);
	CHECK("sys: another ioctl cannot be told", n == -1, "%d", n);
	test_vectored();
	n = hwt_sys_after(SYS_mmap, args, 0x7f0000001000ull, &brk, st, 8);
	CHECK("sys after: mmap's new pages are unknown before it", n == 1 &&
	      st[0].addr == 0x7f0000001000ull && st[0].len == 8192, "%d", n);
	n = hwt_sys_after(SYS_mmap, args, (uint64_t)-12, &brk, st, 8);
	CHECK("sys after: a failed mmap maps nothing", n == 0, "%d", n);
	n = hwt_sys_after(SYS_brk, args, 0x621000, &brk, st, 8);
	CHECK("sys after: brk's growth is unknown before it", n == 1 &&
	      st[0].addr == 0x600000 && st[0].len == 0x21000 &&
	      brk == 0x621000, "%d", n);
}

int main(void)
{
	RUN(test_instructions);
	RUN(test_xsave);
	RUN(test_syscalls);
	return check_exit();
}
