// SPDX-License-Identifier: BSD-2-Clause
/* memlog.c - memory as it was at any recorded instruction, under live
 * control: before each step the stepper reads the bytes the instruction
 * is about to overwrite (stores.c; for a system call, what the call
 * writes: sysmem.c) and keeps them with the step's number. Memory before
 * step g is today's memory with every kept old byte of steps g and later
 * put back, newest first.
 *
 * A debugger's write (a variable set, code an expression runs) is kept
 * like a store of the present step; registers a debugger changes make
 * the instruction there be read again for what it stores.
 *
 * What cannot be known is never guessed: an instruction or a system call
 * whose writes are not known and the oldest entries dropped at the byte
 * bound move the horizon, before which nothing is known; mappings made,
 * moved or dropped and the
 * kernel's own writes (a signal frame on another stack, a thread's tid
 * cleared at its exit) mark their bytes unknown before that step.
 *
 * Steps are numbered across threads in the order the stepper took them;
 * each thread keeps runs (its instruction index and step number where it
 * was stepped after another thread) to find the step of any of its
 * instructions.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "array.h"
#include "tracer.h"

/* One store's old bytes are read whole up to this (a read(2) into a
 * large buffer); beyond, its bytes are unknown before it. */
#define MAX_UNDO (16u << 20)
/* A signal frame: the red zone, then the frame with the largest x86
 * state (AMX included). */
#define RED_ZONE 128u
#define FRAME_MAX 16384u
#define CLONE_CHILD_CLEARTID_ 0x00200000ull

/* One system call per read: this runs at every step, where
 * hwt_proc_mem_xfer's open of /proc/PID/mem would cost three. */
static ssize_t read_remote(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0);
}

/* Keep entries sorted by step: later steps' entries may come first when
 * a system call's result is known only after other threads stepped. */
static struct hwt_mem_entry *insert(struct step_memlog *m, uint64_t seq)
{
	size_t at = m->n;

	if (HWT_ARRAY_RESERVE(m->e, m->alloc, m->n + 1, 1024))
		return NULL;
	while (at > 0 && m->e[at - 1].seq > seq)
		at--;
	memmove(m->e + at + 1, m->e + at, (m->n - at) * sizeof(*m->e));
	m->n++;
	m->e[at].seq = seq;
	return &m->e[at];
}

static void forget_before(struct step_memlog *m, uint64_t seq)
{
	if (seq > m->horizon)
		m->horizon = seq;
}

/* Past the byte bound: drop the older half, which moves the horizon. */
static void enforce_cap(struct step_memlog *m)
{
	size_t keep_from, shift;

	if (m->nbytes + m->n * sizeof(*m->e) <= m->cap || m->n < 2)
		return;
	keep_from = m->n / 2;
	forget_before(m, m->e[keep_from - 1].seq + 1);
	shift = SIZE_MAX;
	for (size_t i = keep_from; i < m->n; i++)
		if (m->e[i].off != HWT_MEM_UNKNOWN && m->e[i].off < shift)
			shift = m->e[i].off;
	if (shift == SIZE_MAX)
		shift = m->nbytes;
	memmove(m->bytes, m->bytes + shift, m->nbytes - shift);
	m->nbytes -= shift;
	memmove(m->e, m->e + keep_from, (m->n - keep_from) * sizeof(*m->e));
	m->n -= keep_from;
	for (size_t i = 0; i < m->n; i++)
		if (m->e[i].off != HWT_MEM_UNKNOWN)
			m->e[i].off -= shift;
}

static void mark_unknown(struct step_memlog *m, uint64_t seq, uint64_t addr,
			 uint64_t len)
{
	struct hwt_mem_entry *e;

	if (!len)
		return;
	if (!(e = insert(m, seq))) {
		forget_before(m, seq + 1);
		return;
	}
	e->addr = addr;
	e->len = len;
	e->off = HWT_MEM_UNKNOWN;
	e->tid = 0;
}

/* The old bytes of [addr, addr + len) before step seq, read from
 * process pid, written by thread who (0: not the program); what cannot
 * be read (an unmapped tail: the store will fault) is unknown. */
static void keep_old_by(struct step_memlog *m, pid_t pid, pid_t who,
			uint64_t seq, uint64_t addr, uint64_t len)
{
	struct hwt_mem_entry *e;
	ssize_t n;

	if (!len)
		return;
	if (len > MAX_UNDO || addr + len < addr) {
		mark_unknown(m, seq, addr, len);
		return;
	}
	if (HWT_ARRAY_RESERVE(m->bytes, m->bytes_alloc, m->nbytes + len,
			      1 << 16)) {
		forget_before(m, seq + 1);
		return;
	}
	n = read_remote(pid, addr, m->bytes + m->nbytes, (size_t)len);
	if (n <= 0) {
		mark_unknown(m, seq, addr, len);
		return;
	}
	if (!(e = insert(m, seq))) {
		forget_before(m, seq + 1);
		return;
	}
	e->addr = addr;
	e->len = (uint64_t)n;
	e->off = m->nbytes;
	e->tid = who;
	m->nbytes += (size_t)n;
	if ((uint64_t)n < len)
		mark_unknown(m, seq, addr + (uint64_t)n, len - (uint64_t)n);
}

static void keep_old(struct step_memlog *m, pid_t tid, uint64_t seq,
		     uint64_t addr, uint64_t len)
{
	keep_old_by(m, tid, tid, seq, addr, len);
}

static void add_run(struct step_thread *t, uint64_t index, uint64_t seq)
{
	if (t->nruns) {
		const struct hwt_mem_run *r = &t->runs[t->nruns - 1];

		if (index >= r->index && r->seq + (index - r->index) == seq)
			return;
	}
	if (HWT_ARRAY_RESERVE(t->runs, t->runs_alloc, t->nruns + 1, 16)) {
		forget_before(t->memlog, seq + 1);
		t->nruns = 0;
		return;
	}
	t->runs[t->nruns].index = index;
	t->runs[t->nruns].seq = seq;
	t->nruns++;
}

/* A thread's tid word the kernel clears at its exit (glibc's join waits
 * on it): its clone's child_tid or its set_tid_address. */
static void note_clear_tid(struct step_memlog *m, pid_t tid, uint64_t addr)
{
	for (size_t i = 0; i < m->nclear; i++)
		if (m->clear[i].tid == tid) {
			m->clear[i].addr = addr;
			return;
		}
	if (HWT_ARRAY_RESERVE(m->clear, m->clear_alloc, m->nclear + 1, 16))
		return;
	m->clear[m->nclear].tid = tid;
	m->clear[m->nclear].addr = addr;
	m->nclear++;
}

static void finish_syscall(struct step_thread *t,
			   const struct user_regs_struct *r)
{
	struct step_memlog *m = t->memlog;
	struct hwt_store st[HWT_SYS_STORES_MAX];
	int n;

	t->sc_pending = false;
	if (t->sc_nr == SYS_execve || t->sc_nr == SYS_execveat) {
		forget_before(m, t->sc_seq + 1);
		return;
	}
	if ((t->sc_nr == SYS_clone || t->sc_nr == SYS_clone3) &&
	    (int64_t)r->rax > 0 && (t->sc_clone_flags & CLONE_CHILD_CLEARTID_))
		note_clear_tid(m, (pid_t)r->rax, t->sc_clone_ctid);
	if (t->sc_nr == SYS_set_tid_address)
		note_clear_tid(m, t->tid, t->sc_args[0]);
	n = hwt_sys_after(t->sc_nr, t->sc_args, r->rax, &m->brk, st,
			  HWT_SYS_STORES_MAX);
	if (n < 0)
		forget_before(m, t->sc_seq + 1);
	for (int i = 0; i < n; i++)
		mark_unknown(m, t->sc_seq, st[i].addr, st[i].len);
}

static void start_syscall(struct step_thread *t, uint64_t seq,
			  const struct user_regs_struct *r)
{
	struct step_memlog *m = t->memlog;
	struct hwt_store st[HWT_SYS_STORES_MAX];
	uint64_t w[4];
	int n;

	t->sc_pending = true;
	t->sc_nr = r->rax;
	t->sc_seq = seq;
	t->sc_args[0] = r->rdi;
	t->sc_args[1] = r->rsi;
	t->sc_args[2] = r->rdx;
	t->sc_args[3] = r->r10;
	t->sc_args[4] = r->r8;
	t->sc_args[5] = r->r9;
	t->sc_clone_flags = 0;
	if (r->rax == SYS_clone) {
		t->sc_clone_flags = r->rdi;
		t->sc_clone_ctid = r->r10;
	} else if (r->rax == SYS_clone3 &&
		   hwt_sys_clone3_args(t->tid, r->rdi, w)) {
		t->sc_clone_flags = w[0];
		t->sc_clone_ctid = w[2];
	}
	/* vfork's child runs in this memory before the call returns. */
	if (r->rax == SYS_vfork) {
		forget_before(m, seq + 1);
		return;
	}
	n = hwt_sys_stores(t->tid, r, st, HWT_SYS_STORES_MAX);
	if (n < 0)
		forget_before(m, seq + 1);
	for (int i = 0; i < n; i++)
		keep_old(m, t->tid, seq, st[i].addr, st[i].len);
}

/* What the instruction at r->rip is about to write, kept for step seq. */
static void log_stores(struct step_thread *t, uint64_t seq,
		       const struct user_regs_struct *r)
{
	struct step_memlog *m = t->memlog;
	struct hwt_store st[8];
	uint8_t code[HWT_X86_CODE_MAX];
	size_t got = hwt_x86_code_read(t->tid, r->rip, code);
	bool is_syscall;
	int n;

	n = got ? hwt_x86_stores(code, got, r, st, 8, &is_syscall) : -1;
	if (n < 0) {
		/* Undecodable (or unreadable code: it will fault). */
		forget_before(m, seq + 1);
		return;
	}
	for (int i = 0; i < n; i++)
		keep_old(m, t->tid, seq, st[i].addr, st[i].len);
	if (is_syscall)
		start_syscall(t, seq, r);
}

void hwt_step_memlog_step(struct step_thread *t, uint64_t index,
			  const struct user_regs_struct *r)
{
	struct step_memlog *m = t->memlog;
	uint64_t seq;

	if (!m)
		return;
	seq = m->next_seq++;
	add_run(t, index, seq);
	t->mem_seq = seq;
	if (t->sc_pending)
		finish_syscall(t, r);
	if (t->frame_pending) {
		/* On another stack (sigaltstack) the frame went elsewhere. */
		t->frame_pending = false;
		if (r->rsp < t->frame_lo || r->rsp >= t->frame_hi)
			mark_unknown(m, t->frame_seq, r->rsp, FRAME_MAX);
	}
	log_stores(t, seq, r);
	enforce_cap(m);
}

void hwt_step_memlog_signal(struct step_thread *t)
{
	struct step_memlog *m = t->memlog;
	uint64_t hi;
	long rsp;

	if (!m || !t->nruns)
		return;
	errno = 0;
	rsp = ptrace(PTRACE_PEEKUSER, t->tid,
		     offsetof(struct user_regs_struct, rsp), 0);
	if (errno) {
		forget_before(m, t->mem_seq + 1);
		return;
	}
	hi = (uint64_t)rsp - RED_ZONE;
	keep_old(m, t->tid, t->mem_seq, hi - FRAME_MAX, FRAME_MAX);
	t->frame_pending = true;
	t->frame_lo = hi - FRAME_MAX;
	t->frame_hi = hi;
	t->frame_seq = t->mem_seq;
	enforce_cap(m);
}

void hwt_step_memlog_forget(struct step_memlog *m)
{
	if (m)
		forget_before(m, m->next_seq);
}

void hwt_step_memlog_regs_written(struct step_thread *t,
				  const struct user_regs_struct *r)
{
	/* The instruction here stores where its new registers say: what
	 * it overwrites then is kept too (entries for the old registers
	 * restore bytes it leaves alone, harmlessly). */
	if (t->memlog && t->nruns) {
		log_stores(t, t->mem_seq, r);
		enforce_cap(t->memlog);
	}
}

void hwt_step_memory_written(struct hwt_collector *base, uint64_t addr,
			     size_t len)
{
	struct step_collector *c = step_of(base);
	struct step_memlog *m = &c->memlog;

	/* A debugger's write (a variable set, code run for an expression)
	 * is kept as a write of the present step: before it, the old
	 * bytes; no thread of the program made it. */
	if (c->log_regs && m->next_seq) {
		keep_old_by(m, base->pid, 0, m->next_seq - 1, addr, len);
		enforce_cap(m);
	}
}

void hwt_step_memlog_thread_died(struct step_memlog *m, pid_t tid)
{
	if (!m || !m->next_seq)
		return;
	for (size_t i = 0; i < m->nclear; i++)
		if (m->clear[i].tid == tid) {
			if (m->clear[i].addr)
				mark_unknown(m, m->next_seq - 1,
					     m->clear[i].addr, 4);
			return;
		}
	/* A thread whose tid word is not known may have had one. */
	forget_before(m, m->next_seq);
}

void hwt_step_memlog_free(struct step_memlog *m)
{
	free(m->e);
	free(m->bytes);
	free(m->clear);
	memset(m, 0, sizeof(*m));
}
