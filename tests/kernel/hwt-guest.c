// SPDX-License-Identifier: BSD-2-Clause
/*
 * hwt-guest: the guest side of the kernel module tests (run by
 * tests/kernel/init under qemu). Each subcommand prints PASS/FAIL lines
 * or writes a history file that the init script compares.
 *
 *   record OUT PROG ARGS...   record PROG with /dev/hwtrace, write the PCs
 *                             from its last exec on to OUT (u64 each)
 *   oracle OUT PROG ARGS...   the same history from a ptrace single-stepper
 *   count PROG N              the recorded history of PROG has N instructions
 *   perm PROG                 attach across users is refused, same user works
 *   sessions PROG             a thread belongs to one session at a time
 *   debug PROG                a debugger's single-steps and int3 breakpoints
 *                             work while PROG is recorded; history intact
 *   churn PROG N              N attach/enable/detach cycles on exiting threads
 *   full PROG                 signal-on-full and wrap modes
 *   mmap PROG                 the mapped ring equals what DRAIN returns
 *   sched PROG                scheduling timestamp records appear, in order
 *   threads PROG              two threads of PROG (threads.c) recorded at once
 *   follow OUT PROG           record PROG (fork.c) with HWTRACE_CFG_FOLLOW:
 *                             its child joins the session; write the
 *                             child's PCs to OUT; without the flag the
 *                             session holds PROG alone
 *   oracle_child OUT PROG     a ptrace single-stepper's history of PROG's
 *                             forked child from its first instruction
 *   follow_threads PROG       record PROG (threads.c) from its exec with
 *                             HWTRACE_CFG_FOLLOW: both threads it clones
 *                             join the session, each loop counted exactly
 *   blockstep OUT PROG        record PROG with HWTRACE_CFG_BLOCKSTEP: the
 *                             module falls back to single-step (BTF is not
 *                             honoured here); write the PCs to OUT
 *   tracepoints PROG N        the module's tracepoint probes are
 *                             registered only while a thread is attached;
 *                             PROG recorded from the unregistered state
 *                             has exactly N instructions
 *   bench BIG SMALL           recording rate, module vs ptrace stepper
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "hwtrace.h"

static int failures;

static void result(const char *name, int ok, const char *why)
{
	if (ok)
		printf("PASS %s\n", name);
	else
		printf("FAIL %s: %s\n", name, why);
	fflush(stdout);
	failures += !ok;
}

struct pcs {
	uint64_t *v;
	size_t n, cap;
};

static void pcs_add(struct pcs *p, uint64_t pc)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 4096;
		p->v = realloc(p->v, p->cap * sizeof(*p->v));
		if (!p->v) {
			perror("realloc");
			exit(2);
		}
	}
	p->v[p->n++] = pc;
}

static int write_pcs(const char *path, const struct pcs *p)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(p->v, sizeof(*p->v), p->n, f) != p->n) {
		perror(path);
		return -1;
	}
	return fclose(f);
}

static int hwt_open(void)
{
	int fd = open(HWTRACE_DEVICE, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		perror(HWTRACE_DEVICE);
	return fd;
}

static int tid_cmd(int fd, unsigned long cmd, pid_t tid)
{
	struct hwtrace_attach a = { .sz = sizeof(a), .tid = tid };

	return ioctl(fd, cmd, &a) ? -errno : 0;
}

static int config(int fd, pid_t tid, uint32_t size, uint32_t flags, int sig)
{
	struct hwtrace_config c = {
		.sz = sizeof(c), .tid = tid, .ring_size = size,
		.flags = flags, .signal = sig,
	};

	return ioctl(fd, HWTRACE_IOC_CONFIG, &c) ? -errno : 0;
}

static int status(int fd, pid_t tid, struct hwtrace_status *st)
{
	memset(st, 0, sizeof(*st));
	st->sz = sizeof(*st);
	st->tid = tid;
	return ioctl(fd, HWTRACE_IOC_STATUS, st) ? -errno : 0;
}

struct decoded {
	struct pcs pcs;		/* from the last exec on */
	unsigned execs;
	unsigned async;
	unsigned gaps;
	unsigned bad;
	unsigned branch;	/* blocks marked HWTRACE_BLK_BRANCH */
	unsigned sched;		/* scheduling records */
	unsigned sched_backwards;	/* ... whose time went backwards */
	uint64_t last_ts;
	uint64_t next_insn;
};

/* Decode blocks, checking each against its header. */
static void decode(const uint8_t *buf, size_t len, struct decoded *d)
{
	size_t off;

	for (off = 0; off + HWTRACE_BLOCK_SIZE <= len;
	     off += HWTRACE_BLOCK_SIZE) {
		const struct hwtrace_block *b = (const void *)(buf + off);
		const uint8_t *p = (const uint8_t *)(b + 1);
		const uint8_t *end = p + b->used;
		uint64_t pc = b->first_pc, v64;
		uint32_t count = 1;

		if (b->magic != HWTRACE_BLOCK_MAGIC ||
		    b->used > HWTRACE_BLOCK_SIZE - sizeof(*b)) {
			d->bad++;
			continue;
		}
		if (d->next_insn != b->first_insn)
			d->gaps++;
		if (b->flags & HWTRACE_BLK_EXEC) {
			d->execs++;
			d->pcs.n = 0;
		}
		d->async += !!(b->flags & HWTRACE_BLK_ASYNC);
		/* Branch records would need the image to expand. */
		if (b->flags & HWTRACE_BLK_BRANCH) {
			d->branch++;
			d->bad++;
		}
		pcs_add(&d->pcs, pc);
		while (p < end) {
			uint8_t tag = *p++;

			if (tag >= 0x01 && tag <= 0x0f) {
				pc += tag;
			} else if (tag >= 0x11 && tag <= 0x18) {
				unsigned n = tag - 0x10, i;
				uint64_t v = 0;

				if ((size_t)(end - p) < n) {
					d->bad++;
					break;
				}
				for (i = 0; i < n; i++)
					v |= (uint64_t)p[i] << (8 * i);
				if (n < 8 && (v >> (8 * n - 1)) & 1)
					v |= ~0ull << (8 * n);
				p += n;
				pc += v;
			} else if (tag == HWTRACE_REC_ASYNC) {
				d->async++;
				continue;
			} else if (tag == HWTRACE_REC_SCHED) {
				if ((size_t)(end - p) < HWTRACE_REC_SCHED_SIZE - 1) {
					d->bad++;
					break;
				}
				memcpy(&v64, p, 8);
				d->sched++;
				d->sched_backwards += v64 < d->last_ts;
				d->last_ts = v64;
				p += HWTRACE_REC_SCHED_SIZE - 1;
				continue;
			} else {
				d->bad++;
				break;
			}
			pcs_add(&d->pcs, pc);
			count++;
		}
		if (count != b->insn_count || pc != b->last_pc)
			d->bad++;
		d->next_insn = b->first_insn + b->insn_count;
	}
}

static int drain_all(int fd, pid_t tid, uint8_t **out, size_t *len)
{
	size_t cap = 1 << 20;
	uint8_t *buf = malloc(cap);
	struct hwtrace_drain dr;

	*len = 0;
	for (;;) {
		if (!buf)
			return -ENOMEM;
		memset(&dr, 0, sizeof(dr));
		dr.sz = sizeof(dr);
		dr.tid = tid;
		dr.buf = (uintptr_t)(buf + *len);
		dr.buf_size = cap - *len;
		if (ioctl(fd, HWTRACE_IOC_DRAIN, &dr))
			return -errno;
		*len += dr.bytes;
		if (!dr.more)
			break;
		cap *= 2;
		buf = realloc(buf, cap);
	}
	*out = buf;
	return 0;
}

/* Start PROG stopped just before exec; returns its pid. */
static pid_t spawn_stopped(char **argv, int trace_me)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		if (trace_me)
			ptrace(PTRACE_TRACEME, 0, 0, 0);
		else
			kill(getpid(), SIGSTOP);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid > 0 && !trace_me && waitpid(pid, &st, WUNTRACED) != pid)
		return -1;
	return pid;
}

struct rec_opts {
	uint32_t ring_size;
	uint32_t flags;
	int sig;
};

/*
 * Record argv[0] with the module from its exec to its exit. Returns its
 * wait status, or -1; fills @d and @st.
 */
static int record(char **argv, const struct rec_opts *o, struct decoded *d,
		  struct hwtrace_status *st)
{
	int fd = hwt_open(), wst = -1, err;
	pid_t pid;
	uint8_t *buf = NULL;
	size_t len;

	memset(d, 0, sizeof(*d));
	if (fd < 0)
		return -1;
	pid = spawn_stopped(argv, 0);
	if (pid < 0)
		return -1;
	err = tid_cmd(fd, HWTRACE_IOC_ATTACH, pid);
	if (!err)
		err = config(fd, pid, o->ring_size, o->flags, o->sig);
	if (!err)
		err = tid_cmd(fd, HWTRACE_IOC_ENABLE, pid);
	if (err)
		fprintf(stderr, "record: %s\n", strerror(-err));
	kill(pid, SIGCONT);
	if (waitpid(pid, &wst, 0) != pid)
		wst = -1;
	if (!err)
		err = status(fd, pid, st);
	if (!err)
		err = drain_all(fd, pid, &buf, &len);
	if (!err) {
		decode(buf, len, d);
		err = tid_cmd(fd, HWTRACE_IOC_DETACH, pid);
	}
	free(buf);
	close(fd);
	return err ? -1 : wst;
}

static const struct rec_opts big_wrap = {
	.ring_size = HWTRACE_RING_MAX, .flags = HWTRACE_CFG_WRAP,
};

/* A ptrace single-stepper: the oracle, like the project's ptrace backend. */
static int oracle(char **argv, struct pcs *p)
{
	pid_t pid = spawn_stopped(argv, 1);
	struct user_regs_struct regs;
	int st, sig = 0;

	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))
		return -1;
	for (;;) {
		if (WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP) {
			ptrace(PTRACE_GETREGS, pid, 0, &regs);
			pcs_add(p, regs.rip);
			sig = 0;
		} else if (WIFSTOPPED(st)) {
			sig = WSTOPSIG(st);	/* deliver it on the next step */
		}
		if (ptrace(PTRACE_SINGLESTEP, pid, 0, sig))
			return -1;
		if (waitpid(pid, &st, 0) != pid)
			return -1;
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return st;
	}
}

static int cmd_record(int argc, char **argv)
{
	struct hwtrace_status st;
	struct decoded d;
	int wst = record(argv + 1, &big_wrap, &d, &st);

	if (wst < 0 || d.bad || d.gaps || st.lost) {
		fprintf(stderr, "record: status %d bad %u gaps %u lost %llu\n",
			wst, d.bad, d.gaps, (unsigned long long)st.lost);
		return 1;
	}
	printf("recorded %zu instructions, %u exec blocks, exit status %d, "
	       "state %#x\n", d.pcs.n, d.execs, wst, st.state);
	return write_pcs(argv[0], &d.pcs) ? 1 : 0;
}

static int cmd_oracle(int argc, char **argv)
{
	struct pcs p = { 0 };
	int wst = oracle(argv + 1, &p);

	if (wst < 0)
		return 1;
	printf("stepped %zu instructions, exit status %d\n", p.n, wst);
	return write_pcs(argv[0], &p) ? 1 : 0;
}

static int cmd_count(int argc, char **argv)
{
	char *args[] = { argv[0], NULL };
	unsigned long want = strtoul(argv[1], NULL, 0);
	struct hwtrace_status st;
	struct decoded d;
	char why[160];
	int wst = record(args, &big_wrap, &d, &st);

	snprintf(why, sizeof(why), "status %d, %zu instructions (want %lu), "
		 "%u exec blocks, bad %u, gaps %u, state %#x", wst, d.pcs.n,
		 want, d.execs, d.bad, d.gaps, st.state);
	result("exact_count", wst == 0 && d.pcs.n == want && !d.bad &&
	       !d.gaps && d.execs == 1, why);
	result("thread_exit_data_kept", (st.state & HWTRACE_ST_EXITED) &&
	       st.insns >= want, why);
	return 0;
}

static int cmd_perm(int argc, char **argv)
{
	char *args[] = { argv[0], NULL };
	pid_t victim = spawn_stopped(args, 0), child;
	int st = -1;

	child = fork();
	if (child == 0) {
		int fd = hwt_open(), err;

		if (fd < 0 || setgid(1000) || setuid(1000))
			_exit(10);
		err = tid_cmd(fd, HWTRACE_IOC_ATTACH, victim);
		_exit(err == -EPERM ? 0 : 11);
	}
	waitpid(child, &st, 0);
	result("attach_other_user_eperm", WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "an unprivileged user attached to root's process");

	/* Same user, no capability: allowed. */
	child = fork();
	if (child == 0) {
		pid_t own;
		int fd, err;

		/* setuid made us non-dumpable, as ptrace would see it. */
		if (setgid(1000) || setuid(1000) ||
		    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
			_exit(10);
		own = spawn_stopped(args, 0);
		fd = hwt_open();
		err = tid_cmd(fd, HWTRACE_IOC_ATTACH, own);
		kill(own, SIGKILL);
		_exit(err == 0 ? 0 : 12);
	}
	waitpid(child, &st, 0);
	result("attach_same_user_ok", WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "a user could not attach to its own process");
	kill(victim, SIGKILL);
	waitpid(victim, &st, 0);
	return 0;
}

static int cmd_sessions(int argc, char **argv)
{
	char *args[] = { argv[0], NULL };
	pid_t a = spawn_stopped(args, 0), b = spawn_stopped(args, 0);
	int f1 = hwt_open(), f2 = hwt_open(), st;
	int e1 = tid_cmd(f1, HWTRACE_IOC_ATTACH, a);
	int e2 = tid_cmd(f2, HWTRACE_IOC_ATTACH, a);
	int e3 = tid_cmd(f2, HWTRACE_IOC_ATTACH, b);
	int e4 = tid_cmd(f1, HWTRACE_IOC_ENABLE, b);
	struct hwtrace_config bad = { .sz = sizeof(bad), .tid = a,
				      .ring_size = 12345,
				      .flags = HWTRACE_CFG_WRAP };
	struct hwtrace_attach small = { .sz = 4, .tid = a };
	int e5 = ioctl(f1, HWTRACE_IOC_CONFIG, &bad) ? errno : 0;
	int e6 = ioctl(f1, HWTRACE_IOC_ENABLE, &small) ? errno : 0;
	int e7;

	struct hwtrace_threads th = { .sz = sizeof(th), .reserved = 1 };
	int e8, e9;

	bad.ring_size = 0;
	bad.flags = HWTRACE_CFG_WRAP | HWTRACE_CFG_SIGNAL;
	e7 = ioctl(f1, HWTRACE_IOC_CONFIG, &bad) ? errno : 0;
	/* The first flag the module does not know. */
	bad.flags = HWTRACE_CFG_WRAP | (HWTRACE_CFG_FLAGS + 1);
	e8 = ioctl(f1, HWTRACE_IOC_CONFIG, &bad) ? errno : 0;
	e9 = ioctl(f1, HWTRACE_IOC_THREADS, &th) ? errno : 0;
	result("two_sessions_one_owner", !e1 && e2 == -EBUSY && !e3 &&
	       e4 == -ESRCH, "a thread was owned by two sessions");
	result("ioctl_args_validated", e5 == EINVAL && e6 == EINVAL &&
	       e7 == EINVAL && e8 == EINVAL && e9 == EINVAL,
	       "a bad size, flag or reserved field was accepted");
	close(f1);
	/* Closing the first session frees its thread for another one. */
	result("close_releases_thread", tid_cmd(f2, HWTRACE_IOC_ATTACH, a) == 0,
	       "a closed session kept its thread");
	close(f2);
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, &st, 0);
	waitpid(b, &st, 0);
	return 0;
}

/*
 * A debugger single-steps and sets int3 breakpoints on a thread the
 * module records: every stop must still reach the debugger, and the
 * module's history must equal the oracle's (a breakpoint hit re-executes
 * the original instruction, so the history is unchanged).
 */
static int cmd_debug(int argc, char **argv)
{
	char *args[] = { argv[0], NULL };
	char why[200] = "";
	struct user_regs_struct regs;
	struct pcs steps = { 0 }, want = { 0 };
	uint8_t *buf = NULL;
	struct decoded d = { 0 };
	int fd = hwt_open(), st, i, ok = 1, hits = 0;
	pid_t pid;
	long orig, dr6;
	uint64_t bp;
	size_t len = 0;

	if (oracle(args, &want) < 0 || want.n < 40)
		return result("debugger_steps", 0, "oracle failed"), 0;
	pid = spawn_stopped(args, 1);
	if (pid < 0 || waitpid(pid, &st, 0) != pid || fd < 0)
		return result("debugger_steps", 0, "spawn failed"), 0;
	if (tid_cmd(fd, HWTRACE_IOC_ATTACH, pid) ||
	    config(fd, pid, HWTRACE_RING_MAX, HWTRACE_CFG_WRAP, 0) ||
	    tid_cmd(fd, HWTRACE_IOC_ENABLE, pid))
		return result("debugger_steps", 0, "attach failed"), 0;
	/* 20 debugger single-steps, each a SIGTRAP at the oracle's PC. */
	ptrace(PTRACE_GETREGS, pid, 0, &regs);
	pcs_add(&steps, regs.rip);
	for (i = 0; i < 20 && ok; i++) {
		ptrace(PTRACE_SINGLESTEP, pid, 0, 0);
		if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st) ||
		    WSTOPSIG(st) != SIGTRAP) {
			snprintf(why, sizeof(why), "step %d: status %#x", i, st);
			ok = 0;
			break;
		}
		ptrace(PTRACE_GETREGS, pid, 0, &regs);
		pcs_add(&steps, regs.rip);
	}
	for (i = 0; ok && i < (int)steps.n; i++)
		if (steps.v[i] != want.v[i]) {
			snprintf(why, sizeof(why), "step %d at %#llx, want %#llx",
				 i, (unsigned long long)steps.v[i],
				 (unsigned long long)want.v[i]);
			ok = 0;
		}
	result("debugger_steps", ok, why);

	/* int3 at the loop's second instruction, hit five times. */
	bp = want.v[1];
	orig = ptrace(PTRACE_PEEKTEXT, pid, bp, 0);
	for (i = 0; i < 5 && ok; i++) {
		ptrace(PTRACE_POKETEXT, pid, bp, (orig & ~0xffL) | 0xcc);
		ptrace(PTRACE_CONT, pid, 0, 0);
		if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st) ||
		    WSTOPSIG(st) != SIGTRAP) {
			snprintf(why, sizeof(why), "hit %d: status %#x", i, st);
			ok = 0;
			break;
		}
		ptrace(PTRACE_GETREGS, pid, 0, &regs);
		if (regs.rip != bp + 1) {
			snprintf(why, sizeof(why), "hit %d at %#llx", i,
				 (unsigned long long)regs.rip);
			ok = 0;
			break;
		}
		hits++;
		/* Back over the breakpoint: restore, rewind, step once. */
		ptrace(PTRACE_POKETEXT, pid, bp, orig);
		regs.rip = bp;
		ptrace(PTRACE_SETREGS, pid, 0, &regs);
		ptrace(PTRACE_SINGLESTEP, pid, 0, 0);
		waitpid(pid, &st, 0);
	}
	result("debugger_breakpoints", ok && hits == 5, why);

	/* A hardware execution breakpoint (DR0, DR7.L0) on the same spot. */
	ptrace(PTRACE_POKEUSER, pid, offsetof(struct user, u_debugreg[0]), bp);
	ptrace(PTRACE_POKEUSER, pid, offsetof(struct user, u_debugreg[7]), 1);
	ptrace(PTRACE_CONT, pid, 0, 0);
	st = 0;
	waitpid(pid, &st, 0);
	regs.rip = 0;
	ptrace(PTRACE_GETREGS, pid, 0, &regs);
	errno = 0;
	dr6 = ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user, u_debugreg[6]), 0);
	snprintf(why, sizeof(why), "status %#x at %#llx (want %#llx), dr6 %#lx",
		 st, (unsigned long long)regs.rip, (unsigned long long)bp, dr6);
	result("debugger_hw_breakpoint", WIFSTOPPED(st) &&
	       WSTOPSIG(st) == SIGTRAP && regs.rip == bp, why);
	/* DR0 keeps matching while disabled: the recorder must not care. */
	ptrace(PTRACE_POKEUSER, pid, offsetof(struct user, u_debugreg[7]), 0);
	ptrace(PTRACE_CONT, pid, 0, 0);
	waitpid(pid, &st, 0);
	if (drain_all(fd, pid, &buf, &len) == 0)
		decode(buf, len, &d);
	ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && d.pcs.n == want.n &&
	     !d.bad && !memcmp(d.pcs.v, want.v, want.n * sizeof(*want.v));
	snprintf(why, sizeof(why), "exit %#x, %zu recorded vs %zu stepped, "
		 "bad %u", st, d.pcs.n, want.n, d.bad);
	result("debugger_history_intact", ok, why);
	free(buf);
	close(fd);
	return 0;
}

static volatile unsigned long spin_sink;

static void spin(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		spin_sink += i;
}

static int churn_pipe = -1;
static unsigned long churn_len;

/* Second thread of a churn child: report its tid, run briefly, exit. */
static void *churn_thread(void *arg)
{
	pid_t tid = syscall(SYS_gettid);

	if (write(churn_pipe, &tid, sizeof(tid)) != sizeof(tid))
		return NULL;
	spin(churn_len);
	return arg;
}

/*
 * N cycles: start a two-threaded child, attach and enable both threads,
 * detach at varying moments while they run and exit. Children must exit
 * normally (no stray SIGTRAP from a trap flag left behind).
 */
static int cmd_churn(int argc, char **argv)
{
	int n = atoi(argv[1]), i, st, fd = hwt_open(), bad = 0, attached = 0;
	char why[120];

	for (i = 0; i < n && fd >= 0; i++) {
		int pipefd[2];
		pid_t pid, tid2 = 0;

		if (pipe(pipefd))
			break;
		pid = fork();
		if (pid == 0) {
			pthread_t th;

			churn_pipe = pipefd[1];
			churn_len = i % 7 * 300;
			if (pthread_create(&th, NULL, churn_thread, NULL))
				_exit(3);
			spin(i % 5 * 500);
			pthread_join(th, NULL);
			_exit(0);
		}
		close(pipefd[1]);
		if (read(pipefd[0], &tid2, sizeof(tid2)) != sizeof(tid2))
			tid2 = 0;
		close(pipefd[0]);
		if (tid_cmd(fd, HWTRACE_IOC_ATTACH, pid) == 0) {
			attached++;
			tid_cmd(fd, HWTRACE_IOC_ENABLE, pid);
		}
		if (tid2 > 0 && tid_cmd(fd, HWTRACE_IOC_ATTACH, tid2) == 0)
			tid_cmd(fd, HWTRACE_IOC_ENABLE, tid2);
		if (i % 3)
			usleep(i % 4 * 100);
		tid_cmd(fd, HWTRACE_IOC_DETACH, pid);
		if (tid2 > 0)
			tid_cmd(fd, HWTRACE_IOC_DETACH, tid2);
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad++;
	}
	close(fd);
	snprintf(why, sizeof(why), "%d of %d children did not exit cleanly "
		 "(%d attached)", bad, n, attached);
	result("attach_detach_churn", fd >= 0 && i == n && !bad &&
	       attached > n / 2, why);
	return 0;
}

#define TP_PARAM "/sys/module/hwtrace/parameters/tracepoints"

/* Whether the module's tracepoint probes are registered: 1, 0, or -1. */
static int tp_state(void)
{
	FILE *f = fopen(TP_PARAM, "r");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* The module unregisters after a short idle spell: wait up to 5 s. */
static int tp_wait(int want)
{
	int v, i;

	for (i = 0; (v = tp_state()) != want && v >= 0 && i < 500; i++)
		usleep(10000);
	return v;
}

/*
 * The tracepoint probes (sys_exit above all, which slows every task's
 * system calls) are registered only while a thread is attached: none
 * when idle (after every earlier test, the churn included, let go of its
 * threads), registered by ATTACH before the thread can be recorded (a
 * recording started from the unregistered state is exact, exec entry
 * included), and unregistered again once the last thread is released.
 */
static int cmd_tracepoints(int argc, char **argv)
{
	char *args[] = { argv[0], NULL };
	unsigned long want = strtoul(argv[1], NULL, 0);
	struct hwtrace_status st;
	struct decoded d;
	char why[160];
	int v, fd, wst, i, err = -1;
	pid_t pid;

	v = tp_wait(0);
	snprintf(why, sizeof(why), "%s reads %d with no thread attached",
		 TP_PARAM, v);
	result("tracepoints_off_when_idle", v == 0, why);

	/* Each round registers anew: the previous one let them go. */
	for (i = 0; i < 10; i++) {
		if (i && (v = tp_wait(0)) != 0) {
			snprintf(why, sizeof(why), "round %d: %s reads %d", i,
				 TP_PARAM, v);
			break;
		}
		wst = record(args, &big_wrap, &d, &st);
		snprintf(why, sizeof(why), "round %d: status %d, %zu "
			 "instructions (want %lu), %u exec blocks, bad %u, "
			 "gaps %u", i, wst, d.pcs.n, want, d.execs, d.bad,
			 d.gaps);
		free(d.pcs.v);
		if (wst != 0 || d.pcs.n != want || d.execs != 1 || d.bad ||
		    d.gaps)
			break;
	}
	result("tracepoints_registered_on_attach", i == 10, why);

	/* Opened after the fork: the stopped child holds no copy of it. */
	pid = spawn_stopped(args, 0);
	fd = hwt_open();
	v = tp_wait(0);
	if (fd >= 0 && pid > 0 && v == 0)
		err = tid_cmd(fd, HWTRACE_IOC_ATTACH, pid);
	v = err ? -1 : tp_state();
	snprintf(why, sizeof(why), "attach %d, then %s reads %d", err,
		 TP_PARAM, v);
	result("tracepoints_on_while_attached", v == 1, why);
	if (fd >= 0)
		close(fd);	/* releases the thread */
	v = tp_wait(0);
	snprintf(why, sizeof(why), "%s reads %d 5 s after the session closed",
		 TP_PARAM, v);
	result("tracepoints_off_after_close", v == 0, why);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &wst, 0);
	}
	return 0;
}

/*
 * The mapped ring shows the same blocks DRAIN returns: decode [tail, head)
 * from the mapping and from a PEEK drain, then from a consuming drain.
 */
static int cmd_mmap(int argc, char **argv)
{
	char *args[] = { argv[0], NULL };
	struct hwtrace_get g = { .sz = sizeof(g) };
	struct hwtrace_status st;
	struct hwtrace_drain dr;
	struct decoded dm = { 0 }, dp = { 0 }, dd = { 0 };
	int fd = hwt_open(), wst, ok;
	uint8_t *map, *lin, *buf;
	pid_t pid = spawn_stopped(args, 0);
	uint64_t seq, nb;
	size_t len;
	char why[200];

	if (fd < 0 || pid < 0 || tid_cmd(fd, HWTRACE_IOC_ATTACH, pid) ||
	    tid_cmd(fd, HWTRACE_IOC_ENABLE, pid))
		return result("mmap_ring", 0, "attach failed"), 0;
	kill(pid, SIGCONT);
	waitpid(pid, &wst, 0);
	g.tid = pid;
	if (ioctl(fd, HWTRACE_IOC_GET, &g) || status(fd, pid, &st))
		return result("mmap_ring", 0, "GET failed"), 0;
	ok = mmap(NULL, g.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		  g.offset) == MAP_FAILED;
	map = mmap(NULL, g.size, PROT_READ, MAP_SHARED, fd, g.offset);
	if (map == MAP_FAILED)
		return result("mmap_ring", 0, strerror(errno)), 0;
	nb = g.size / HWTRACE_BLOCK_SIZE;
	lin = malloc((st.head - st.tail) * HWTRACE_BLOCK_SIZE + 1);
	buf = malloc((st.head - st.tail) * HWTRACE_BLOCK_SIZE + 1);
	for (seq = st.tail; seq < st.head; seq++)
		memcpy(lin + (seq - st.tail) * HWTRACE_BLOCK_SIZE,
		       map + seq % nb * HWTRACE_BLOCK_SIZE, HWTRACE_BLOCK_SIZE);
	decode(lin, (st.head - st.tail) * HWTRACE_BLOCK_SIZE, &dm);
	memset(&dr, 0, sizeof(dr));
	dr.sz = sizeof(dr);
	dr.tid = pid;
	dr.buf = (uintptr_t)buf;
	dr.buf_size = (st.head - st.tail) * HWTRACE_BLOCK_SIZE;
	dr.flags = HWTRACE_DRAIN_PEEK;
	if (ioctl(fd, HWTRACE_IOC_DRAIN, &dr) == 0)
		decode(buf, dr.bytes, &dp);
	free(buf);
	buf = NULL;
	if (drain_all(fd, pid, &buf, &len) == 0)
		decode(buf, len, &dd);
	ok = ok && dm.pcs.n == 10004 && !dm.bad && dp.pcs.n == dm.pcs.n &&
	     dd.pcs.n == dm.pcs.n &&
	     !memcmp(dm.pcs.v, dd.pcs.v, dm.pcs.n * sizeof(uint64_t)) &&
	     status(fd, pid, &st) == 0 && st.head == st.tail;
	snprintf(why, sizeof(why), "mapped %zu, peeked %zu, drained %zu "
		 "instructions, bad %u, left %llu blocks", dm.pcs.n, dp.pcs.n,
		 dd.pcs.n, dm.bad, (unsigned long long)(st.head - st.tail));
	result("mmap_ring_matches_drain", ok, why);
	munmap(map, g.size);
	free(lin);
	free(buf);
	close(fd);
	return 0;
}

/* Scheduling records: a program that blocks in waitpid gets some. */
static int cmd_sched(int argc, char **argv)
{
	char *args[] = { argv[0], NULL };
	struct rec_opts o = {
		.ring_size = HWTRACE_RING_MAX,
		.flags = HWTRACE_CFG_WRAP | HWTRACE_CFG_SCHED_TS,
	};
	struct hwtrace_status st;
	struct decoded d;
	char why[160];
	int wst = record(args, &o, &d, &st);

	snprintf(why, sizeof(why), "status %d, %u sched records (%u going "
		 "back in time), bad %u", wst, d.sched, d.sched_backwards,
		 d.bad);
	result("sched_timestamps", wst == 0 && d.sched > 0 &&
	       !d.sched_backwards && !d.bad && !d.gaps, why);
	return 0;
}

/*
 * Two threads of one process recorded at once, each running a loop of
 * known length: each history holds its own loop instruction exactly
 * that many times, and both outlive their threads.
 */
static int cmd_threads(int argc, char **argv)
{
	static const unsigned want[2] = { 3000, 5000 };
	int in[2], out[2], fd = hwt_open(), wst, i, ok = 1;
	struct hwtrace_status st;
	char line[128], why[200] = "";
	unsigned long addr = 0;
	pid_t pid, tid[2] = { 0, 0 };
	FILE *f;

	if (fd < 0 || pipe(in) || pipe(out))
		return result("two_threads_at_once", 0, "setup failed"), 0;
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(argv[0], argv[0], (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	f = fdopen(out[0], "r");
	if (!f || !fgets(line, sizeof(line), f) ||
	    sscanf(line, "%d %d %lx", &tid[0], &tid[1], &addr) != 3)
		ok = 0;
	for (i = 0; ok && i < 2; i++)
		ok = !tid_cmd(fd, HWTRACE_IOC_ATTACH, tid[i]) &&
		     !tid_cmd(fd, HWTRACE_IOC_ENABLE, tid[i]);
	if (write(in[1], "gg", 2) != 2)
		ok = 0;
	close(in[1]);
	waitpid(pid, &wst, 0);
	for (i = 0; ok && i < 2; i++) {
		struct decoded d = { 0 };
		uint8_t *buf = NULL;
		size_t len, k;
		unsigned hits = 0;

		if (status(fd, tid[i], &st) || drain_all(fd, tid[i], &buf, &len))
			ok = 0;
		else
			decode(buf, len, &d);
		for (k = 0; k < d.pcs.n; k++)
			hits += d.pcs.v[k] == addr;
		if (!ok || hits != want[i] || d.bad || d.gaps ||
		    !(st.state & HWTRACE_ST_EXITED)) {
			snprintf(why, sizeof(why), "thread %d: loop instruction "
				 "%u times (want %u), bad %u, gaps %u, state %#x",
				 i, hits, want[i], d.bad, d.gaps, st.state);
			ok = 0;
		}
		free(buf);
	}
	if (!why[0])
		snprintf(why, sizeof(why), "setup: '%s', exit %#x", line, wst);
	result("two_threads_at_once", ok && wst == 0, why);
	if (f)
		fclose(f);
	close(fd);
	return 0;
}

/* The session's tids (HWTRACE_IOC_THREADS); returns the total or -errno. */
static int list_tids(int fd, uint32_t *tids, uint32_t count)
{
	struct hwtrace_threads th = {
		.sz = sizeof(th), .count = count, .tids = (uintptr_t)tids,
	};

	return ioctl(fd, HWTRACE_IOC_THREADS, &th) ? -errno : (int)th.total;
}

/*
 * Record PROG, which forks once, with or without HWTRACE_CFG_FOLLOW.
 * Returns PROG's wait status or -1; the session's tids go to @tids (up to
 * 4), their number to @n; @child and @cst: the child's history and status.
 */
static int record_fork(char **argv, uint32_t flags, uint32_t *tids, int *n,
		       struct decoded *child, struct hwtrace_status *cst)
{
	int fd = hwt_open(), wst = -1, err;
	uint8_t *buf = NULL;
	size_t len;
	pid_t pid;

	*n = 0;
	memset(child, 0, sizeof(*child));
	memset(cst, 0, sizeof(*cst));
	if (fd < 0)
		return -1;
	pid = spawn_stopped(argv, 0);
	if (pid < 0)
		return -1;
	err = tid_cmd(fd, HWTRACE_IOC_ATTACH, pid);
	if (!err)
		err = config(fd, pid, 4u << 20, flags, 0);
	if (!err)
		err = tid_cmd(fd, HWTRACE_IOC_ENABLE, pid);
	kill(pid, SIGCONT);
	if (waitpid(pid, &wst, 0) != pid)
		wst = -1;
	if (!err) {
		*n = list_tids(fd, tids, 4);
		err = *n < 0 ? *n : 0;
	}
	/* The child is the one that is not PROG. */
	if (!err && *n == 2 && tids[0] == (uint32_t)pid) {
		err = status(fd, tids[1], cst);
		if (!err)
			err = drain_all(fd, tids[1], &buf, &len);
		if (!err)
			decode(buf, len, child);
	}
	if (err)
		fprintf(stderr, "record_fork: %s\n", strerror(-err));
	free(buf);
	close(fd);
	return err ? -1 : wst;
}

static int cmd_follow(int argc, char **argv)
{
	struct hwtrace_status st;
	struct decoded d;
	uint32_t tids[4];
	char why[200];
	int wst, n;

	wst = record_fork(argv + 1, HWTRACE_CFG_WRAP | HWTRACE_CFG_FOLLOW,
			  tids, &n, &d, &st);
	snprintf(why, sizeof(why), "exit %#x, %d threads in the session, "
		 "child: %zu instructions, bad %u, gaps %u, lost %llu, "
		 "state %#x", wst, n, d.pcs.n, d.bad, d.gaps,
		 (unsigned long long)st.lost, st.state);
	result("follow_fork_child_recorded", wst == 0 && n == 2 &&
	       d.pcs.n > 10 && !d.bad && !d.gaps && !st.lost &&
	       !d.execs && (st.state & HWTRACE_ST_EXITED) &&
	       (st.config.flags & HWTRACE_CFG_FOLLOW), why);
	if (write_pcs(argv[0], &d.pcs))
		return 1;

	wst = record_fork(argv + 1, HWTRACE_CFG_WRAP, tids, &n, &d, &st);
	snprintf(why, sizeof(why), "exit %#x, %d threads in the session",
		 wst, n);
	result("no_follow_child_not_attached", wst == 0 && n == 1, why);
	return 0;
}

/*
 * threads.c recorded from its exec with HWTRACE_CFG_FOLLOW: its two
 * clone(CLONE_THREAD) threads join the session by themselves, and each
 * history holds its own loop instruction exactly as often as it ran.
 */
static int cmd_follow_threads(int argc, char **argv)
{
	int in[2], out[2], fd = hwt_open(), wst = -1, n = 0, i, ok = 1;
	unsigned hits[2] = { 0, 0 }, k = 0;
	char line[128] = "", why[200];
	unsigned long addr = 0;
	uint32_t tids[4];
	pid_t pid;
	FILE *f;

	if (fd < 0 || pipe(in) || pipe(out))
		return result("follow_threads", 0, "setup failed"), 0;
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		kill(getpid(), SIGSTOP);
		execl(argv[0], argv[0], (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (pid < 0 || waitpid(pid, &wst, WUNTRACED) != pid ||
	    tid_cmd(fd, HWTRACE_IOC_ATTACH, pid) ||
	    config(fd, pid, 4u << 20, HWTRACE_CFG_WRAP | HWTRACE_CFG_FOLLOW,
		   0) || tid_cmd(fd, HWTRACE_IOC_ENABLE, pid))
		ok = 0;
	/* Each thread reads one byte before its loop. */
	if (write(in[1], "gg", 2) != 2)
		ok = 0;
	close(in[1]);
	kill(pid, SIGCONT);
	f = fdopen(out[0], "r");
	if (!f || !fgets(line, sizeof(line), f) ||
	    sscanf(line, "%*d %*d %lx", &addr) != 1)
		ok = 0;
	if (waitpid(pid, &wst, 0) != pid)
		ok = 0;
	n = list_tids(fd, tids, 4);
	for (i = 0; ok && i < n && i < 4; i++) {
		struct hwtrace_status st;
		struct decoded d = { 0 };
		uint8_t *buf = NULL;
		size_t len, j;
		unsigned h = 0;

		if (tids[i] == (uint32_t)pid)
			continue;
		if (k == 2 || status(fd, tids[i], &st) ||
		    drain_all(fd, tids[i], &buf, &len)) {
			ok = 0;
			break;
		}
		decode(buf, len, &d);
		for (j = 0; j < d.pcs.n; j++)
			h += d.pcs.v[j] == addr;
		if (d.bad || d.gaps || st.lost ||
		    !(st.state & HWTRACE_ST_EXITED))
			ok = 0;
		hits[k++] = h;
		free(buf);
	}
	snprintf(why, sizeof(why), "exit %#x, %d threads in the session, "
		 "loop counts %u and %u (want 3000 and 5000 in some order), "
		 "line '%s'", wst, n, hits[0], hits[1], line);
	result("follow_threads_recorded", ok && wst == 0 && n == 3 &&
	       k == 2 && hits[0] + hits[1] == 8000 &&
	       (hits[0] == 3000 || hits[0] == 5000), why);
	if (f)
		fclose(f);
	close(fd);
	return 0;
}

/* The ptrace single-stepper's history of PROG's first forked child. */
static int cmd_oracle_child(int argc, char **argv)
{
	pid_t pid = spawn_stopped(argv + 1, 1), child;
	struct user_regs_struct regs;
	unsigned long msg;
	struct pcs p = { 0 };
	int st, sig = 0;

	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st) ||
	    ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEFORK))
		return 1;
	/* Run PROG to its fork, then let it go: only the child is stepped. */
	do {
		if (ptrace(PTRACE_CONT, pid, 0, sig) ||
		    waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))
			return 1;
		sig = WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st);
	} while (st >> 8 != (SIGTRAP | (PTRACE_EVENT_FORK << 8)));
	if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) ||
	    ptrace(PTRACE_DETACH, pid, 0, 0))
		return 1;
	child = (pid_t)msg;
	/* The child starts stopped (SIGSTOP), before its first instruction. */
	if (waitpid(child, &st, __WALL) != child || !WIFSTOPPED(st))
		return 1;
	ptrace(PTRACE_GETREGS, child, 0, &regs);
	pcs_add(&p, regs.rip);
	sig = 0;
	for (;;) {
		if (ptrace(PTRACE_SINGLESTEP, child, 0, sig) ||
		    waitpid(child, &st, __WALL) != child)
			return 1;
		if (WIFEXITED(st) || WIFSIGNALED(st))
			break;
		sig = 0;
		if (WSTOPSIG(st) == SIGTRAP) {
			ptrace(PTRACE_GETREGS, child, 0, &regs);
			pcs_add(&p, regs.rip);
		} else {
			sig = WSTOPSIG(st);	/* deliver it on the next step */
		}
	}
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	printf("stepped %zu child instructions, exit status %d\n", p.n, st);
	return write_pcs(argv[0], &p) ? 1 : 0;
}

/*
 * Block-step requested where the hardware does not honour BTF (qemu):
 * STATUS reports the fallback, and the history (compared by the init
 * script with a plain recording) is exact, no block marked as branch
 * records.
 */
static int cmd_blockstep(int argc, char **argv)
{
	struct rec_opts o = {
		.ring_size = HWTRACE_RING_MAX,
		.flags = HWTRACE_CFG_WRAP | HWTRACE_CFG_BLOCKSTEP,
	};
	struct hwtrace_status st;
	struct decoded d;
	char why[200];
	int wst = record(argv + 1, &o, &d, &st);

	snprintf(why, sizeof(why), "exit %#x, state %#x, %zu instructions, "
		 "branch blocks %u, bad %u, gaps %u", wst, st.state, d.pcs.n,
		 d.branch, d.bad, d.gaps);
	result("blockstep_fallback_reported", wst == 0 &&
	       (st.state & (HWTRACE_ST_BS_PROBING | HWTRACE_ST_BS_BLOCK |
			    HWTRACE_ST_BS_FALLBACK)) == HWTRACE_ST_BS_FALLBACK &&
	       (st.config.flags & HWTRACE_CFG_BLOCKSTEP), why);
	result("blockstep_fallback_blocks_exact", wst == 0 && !d.bad &&
	       !d.gaps && !d.branch && d.pcs.n > 0, why);
	return write_pcs(argv[0], &d.pcs) ? 1 : 0;
}

static int cmd_full(int argc, char **argv)
{
	char *args[] = { argv[0], NULL };
	struct rec_opts sigmode = {
		.ring_size = HWTRACE_RING_MIN, .flags = HWTRACE_CFG_SIGNAL,
		.sig = SIGUSR2,
	};
	struct rec_opts wrap = {
		.ring_size = HWTRACE_RING_MIN,
		.flags = HWTRACE_CFG_WRAP | HWTRACE_CFG_SCHED_TS,
	};
	struct hwtrace_status st;
	struct decoded d;
	char why[200];
	int wst;

	wst = record(args, &sigmode, &d, &st);
	snprintf(why, sizeof(why), "wait status %#x, state %#x, kept %zu",
		 wst, st.state, d.pcs.n);
	result("overflow_signal", wst >= 0 && WIFSIGNALED(wst) &&
	       WTERMSIG(wst) == SIGUSR2 && (st.state & HWTRACE_ST_FULL) &&
	       st.lost > 0 && !d.bad, why);

	wst = record(args, &wrap, &d, &st);
	snprintf(why, sizeof(why), "wait status %#x, state %#x, insns %llu, "
		 "lost %llu, kept %zu, bad %u, gaps %u", wst, st.state,
		 (unsigned long long)st.insns, (unsigned long long)st.lost,
		 d.pcs.n, d.bad, d.gaps);
	/* Only the oldest blocks are dropped: one gap, at the start. */
	result("overflow_wrap", wst == 0 && (st.state & HWTRACE_ST_WRAPPED) &&
	       st.lost > 0 && st.insns - st.lost == d.pcs.n && !d.bad &&
	       d.gaps == 1, why);
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmd_bench(int argc, char **argv)
{
	char *big[] = { argv[0], NULL }, *small[] = { argv[1], NULL };
	struct hwtrace_status st;
	struct decoded d;
	struct pcs p = { 0 };
	double t0, t1, t2, mod, pt;

	t0 = now();
	if (record(big, &big_wrap, &d, &st) != 0)
		return result("bench", 0, "record failed"), 0;
	t1 = now();
	if (oracle(small, &p) < 0)
		return result("bench", 0, "oracle failed"), 0;
	t2 = now();
	mod = st.insns / (t1 - t0);
	pt = p.n / (t2 - t1);
	printf("BENCH module %.0f insn/s (%llu in %.2f s), ptrace %.0f insn/s "
	       "(%zu in %.2f s), ratio %.1fx\n", mod,
	       (unsigned long long)st.insns, t1 - t0, pt, p.n, t2 - t1,
	       mod / pt);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int args;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{ "record", 2, cmd_record }, { "oracle", 2, cmd_oracle },
		{ "count", 2, cmd_count }, { "perm", 1, cmd_perm },
		{ "sessions", 1, cmd_sessions }, { "debug", 1, cmd_debug },
		{ "churn", 2, cmd_churn }, { "full", 1, cmd_full },
		{ "bench", 2, cmd_bench }, { "mmap", 1, cmd_mmap },
		{ "sched", 1, cmd_sched }, { "threads", 1, cmd_threads },
		{ "follow", 2, cmd_follow },
		{ "oracle_child", 2, cmd_oracle_child },
		{ "blockstep", 2, cmd_blockstep },
		{ "follow_threads", 1, cmd_follow_threads },
		{ "tracepoints", 2, cmd_tracepoints },
	};
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/*
	 * Tracer and tracee on one CPU: a ptrace stop and resume across
	 * CPUs costs an IPI each, which under TCG is several times slower.
	 * churn keeps both CPUs to exercise concurrent exits.
	 */
	if (argc > 1 && strcmp(argv[1], "churn")) {
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(0, &one);
		sched_setaffinity(0, sizeof(one), &one);
	}
	for (i = 0; argc > 1 && i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name) && argc - 2 >= cmds[i].args)
			return cmds[i].fn(argc - 2, argv + 2) || failures;
	fprintf(stderr, "usage: hwt-guest record|oracle|count|perm|sessions|"
		"debug|churn|full|bench|mmap|sched|threads|follow|"
		"follow_threads|oracle_child|blockstep|tracepoints ARGS\n");
	return 2;
}
