// SPDX-License-Identifier: BSD-2-Clause
/* test_seize_live.c - live control of the seized-program layer
 * (collect/seize/live.c, break.c) with a test recorder that records
 * nothing, over the test programs in build/programs: int3 breakpoints hit
 * in order at the right pc and never seen in memory, steps, continuing
 * from a breakpoint, debug-register watches, signals reported before
 * delivery, thread births and exits, interrupt_fd, exit and kill status,
 * detach letting the program run to its normal end. Then the perf
 * recorder (collect/perf/collector.c) under live control for real, on
 * perf's software dummy event (no trace hardware needed): breakpoints in
 * every thread, its events polled while the threads run, snapshots, the
 * mappings from its sideband at the end. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "collect_util.h"
#include "perf/perf.h"
#include "os/proc.h"
#include "seize/seize.h"

static char progdir[PATH_MAX - 64];

/* ---- a recorder that only counts ------------------------------------- */

struct rec {
	struct hwt_seize s;
	size_t attached, execs, exits;
};

static int rec_attach(void *ctx, pid_t tid, bool first, struct hwt_err *err)
{
	((struct rec *)ctx)->attached++;
	return 0;
}

static int rec_exec(void *ctx, pid_t tid, struct hwt_err *err)
{
	((struct rec *)ctx)->execs++;
	return 0;
}

static int rec_exiting(void *ctx, pid_t tid, struct hwt_err *err)
{
	((struct rec *)ctx)->exits++;
	return 0;
}

static const struct hwt_seize_ops rec_ops = {
	.attach = rec_attach, .exec = rec_exec, .exiting = rec_exiting,
};

/* ---- helpers --------------------------------------------------------- */

/* A symbol's value in an ELF file, through nm; 0 when not found. */
static uint64_t symbol(const char *path, const char *name)
{
	char cmd[PATH_MAX + 32], line[512], type, sym[256];
	unsigned long long v, found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -a '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p))
		if (sscanf(line, "%llx %c %255s", &v, &type, sym) == 3 &&
		    !strcmp(sym, name))
			found = v;
	pclose(p);
	return found;
}

/* Where a PIE program is loaded (0 for a fixed-address one): the start
 * of its mapping of file offset 0. */
static uint64_t load_bias(pid_t pid, const char *path)
{
	char maps[64], line[PATH_MAX + 128], file[PATH_MAX];
	unsigned long long lo, off;
	Elf64_Ehdr eh;
	uint64_t bias = 0;
	FILE *f;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || read(fd, &eh, sizeof(eh)) != sizeof(eh) ||
	    eh.e_type != ET_DYN) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	close(fd);
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(maps, "r")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %4095s", &lo,
			   &off, file) == 3 && off == 0 &&
		    !strcmp(file, path)) {
			bias = lo;
			break;
		}
	fclose(f);
	return bias;
}

static struct rec *launch(char *const argv[], struct hwt_err *err)
{
	struct rec *r = calloc(1, sizeof(*r));

	hwt_seize_init(&r->s, &rec_ops, r, argv[0]);
	if (hwt_seize_launch(&r->s, argv, err) < 0 ||
	    hwt_seize_live_start(&r->s, err) < 0) {
		hwt_seize_close(&r->s);
		free(r);
		return NULL;
	}
	return r;
}

static struct rec *launch_prog(const char *prog, char *path, size_t size,
			       struct hwt_err *err)
{
	char *argv[] = { path, NULL };

	snprintf(path, size, "%s/%s", progdir, prog);
	return launch(argv, err);
}

static void finish(struct rec *r)
{
	if (!r)
		return;
	hwt_seize_close(&r->s);
	free(r);
}

static int resume(struct rec *r, enum hwt_resume_kind kind, int sig,
		  const uint64_t *bps, size_t nbps,
		  struct hwt_collect_event *ev, struct hwt_err *err)
{
	struct hwt_resume_action a = { .tid = 0, .kind = kind, .signal = sig };
	struct hwt_resume_opts o = {
		.sz = sizeof(o), .actions = &a, .nactions = 1,
		.breakpoints = bps, .nbreakpoints = nbps, .interrupt_fd = -1,
	};

	return hwt_seize_resume(&r->s, &o, ev, err);
}

static struct user_regs_struct regs_of(struct rec *r, pid_t tid)
{
	struct user_regs_struct regs;
	size_t len = sizeof(regs);
	struct hwt_err err = {0};

	memset(&regs, 0, sizeof(regs));
	hwt_seize_regset(&r->s, tid, NT_PRSTATUS, &regs, &len, false, &err);
	return regs;
}

/* ---- breakpoints, memory, steps ---------------------------------------- */

static void test_breakpoints(void)
{
	char path[PATH_MAX];
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct rec *r = launch_prog("hits3", path, sizeof(path), &err);
	uint64_t tick, main_pc, bias;
	uint8_t before[16], at[16];
	int rc, hits = 0, args[3] = {0};

	CHECK("seize live: start stopped at the first instruction",
	      r && r->execs == 1 && r->attached == 1 &&
	      regs_of(r, r->s.pid).rip != 0, "%s", err.msg);
	if (!r)
		return;
	bias = load_bias(r->s.pid, path);
	tick = symbol(path, "tick") + bias;
	main_pc = symbol(path, "main") + bias;
	hwt_proc_mem_xfer(r->s.pid, tick, before, sizeof(before), false);

	rc = resume(r, HWT_RESUME_CONT, 0, &main_pc, 1, &ev, &err);
	CHECK("seize live: continue stops at main", rc == 0 &&
	      ev.kind == HWT_EVENT_BREAKPOINT && ev.pc == main_pc &&
	      regs_of(r, ev.tid).rip == main_pc,
	      "rc %d kind %d pc 0x%llx main 0x%llx: %s", rc, ev.kind,
	      (unsigned long long)ev.pc, (unsigned long long)main_pc, err.msg);
	/* Resuming from main steps over it: three tick hits follow. */
	for (int i = 0; i < 4; i++) {
		uint64_t bps[2] = { tick, main_pc };

		rc = resume(r, HWT_RESUME_CONT, 0, bps, 2, &ev, &err);
		if (rc < 0 || ev.kind != HWT_EVENT_BREAKPOINT)
			break;
		if (ev.pc == tick && hits < 3)
			args[hits] = (int)regs_of(r, ev.tid).rdi;
		hits += ev.pc == tick;
		if (hits == 1) {
			hwt_proc_mem_xfer(r->s.pid, tick, at, sizeof(at), false);
			CHECK("seize live: memory at a breakpoint shows the "
			      "original bytes", !memcmp(before, at, 16) &&
			      at[0] != 0xcc, "first byte 0x%02x", at[0]);
		}
	}
	CHECK("seize live: a breakpoint hit three times in order",
	      hits == 3 && args[0] == 1 && args[1] == 2 && args[2] == 3,
	      "%d hits, args %d %d %d, last kind %d: %s", hits, args[0],
	      args[1], args[2], ev.kind, err.msg);
	/* The fourth resume went on to the NULL read. */
	CHECK("seize live: a fault is reported as a signal before delivery",
	      rc == 0 && ev.kind == HWT_EVENT_SIGNAL && ev.signal == SIGSEGV,
	      "rc %d kind %d sig %d", rc, ev.kind, ev.signal);
	rc = resume(r, HWT_RESUME_CONT, SIGSEGV, NULL, 0, &ev, &err);
	CHECK("seize live: passing the fault's signal kills the program",
	      rc == 0 && ev.kind == HWT_EVENT_KILLED && ev.signal == SIGSEGV &&
	      r->s.reaped, "rc %d kind %d sig %d: %s", rc, ev.kind, ev.signal,
	      err.msg);
	finish(r);
}

static void test_steps(void)
{
	char path[PATH_MAX];
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct rec *r = launch_prog("loops", path, sizeof(path), &err);
	uint64_t main_pc, pc, prev;
	uint8_t code[4], again[4], nop = 0x90;
	int rc, steps = 0;

	if (!r) {
		CHECK("seize live: launch loops", 0, "%s", err.msg);
		return;
	}
	main_pc = symbol(path, "main") + load_bias(r->s.pid, path);
	rc = resume(r, HWT_RESUME_CONT, 0, &main_pc, 1, &ev, &err);
	/* Steps from a breakpoint address: the first one steps over it. */
	prev = main_pc;
	for (int i = 0; rc == 0 && i < 5; i++) {
		rc = resume(r, HWT_RESUME_STEP, 0, &main_pc, 1, &ev, &err);
		pc = regs_of(r, ev.tid).rip;
		if (rc < 0 || ev.kind != HWT_EVENT_STEPPED || pc == prev ||
		    pc != ev.pc)
			break;
		prev = pc;
		steps++;
	}
	CHECK("seize live: five steps from a breakpoint, each moving on",
	      steps == 5, "%d steps, kind %d: %s", steps, ev.kind, err.msg);
	/* Memory writes between stops stay: a byte patched and put back. */
	hwt_proc_mem_xfer(r->s.pid, main_pc, code, sizeof(code), false);
	hwt_proc_mem_xfer(r->s.pid, main_pc + 1, &nop, 1, true);
	hwt_proc_mem_xfer(r->s.pid, main_pc, again, sizeof(again), false);
	hwt_proc_mem_xfer(r->s.pid, main_pc + 1, &code[1], 1, true);
	CHECK("seize live: memory writes reach code", again[1] == 0x90 &&
	      again[0] == code[0], "byte 0x%02x", again[1]);
	rc = resume(r, HWT_RESUME_CONT, 0, &main_pc, 1, &ev, &err);
	CHECK("seize live: continue to exit with its status", rc == 0 &&
	      ev.kind == HWT_EVENT_EXITED && ev.status == 0 &&
	      r->s.end.reason == HWT_STOP_EXITED,
	      "rc %d kind %d status %d: %s", rc, ev.kind, ev.status, err.msg);
	finish(r);
}

/* A step over cpuid stops at the instruction after it, also where the
 * machine loses cpuid's single-step trap (the suite's run on a simulated
 * faulty machine: tests/run.py): the step then runs to a guard. */
static void test_cpuid_step(void)
{
	char path[PATH_MAX];
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct rec *r = launch_prog("cpuid", path, sizeof(path), &err);
	uint64_t after, at_cpuid, pc1 = 0, pc2 = 0;
	uint8_t code[8];
	int rc;

	if (!r) {
		CHECK("seize live: launch cpuid", 0, "%s", err.msg);
		return;
	}
	after = symbol(path, "after_cpuid") + load_bias(r->s.pid, path);
	at_cpuid = after - 2;
	rc = resume(r, HWT_RESUME_CONT, 0, &at_cpuid, 1, &ev, &err);
	if (rc == 0 && ev.kind == HWT_EVENT_BREAKPOINT) {
		rc = resume(r, HWT_RESUME_STEP, 0, &at_cpuid, 1, &ev, &err);
		pc1 = rc == 0 && ev.kind == HWT_EVENT_STEPPED ? ev.pc : 0;
		rc = resume(r, HWT_RESUME_STEP, 0, &at_cpuid, 1, &ev, &err);
		pc2 = rc == 0 && ev.kind == HWT_EVENT_STEPPED ? ev.pc : 0;
	}
	hwt_proc_mem_xfer(r->s.pid, after, code, sizeof(code), false);
	CHECK("seize live: a step over cpuid stops at the next instruction, "
	      "the next step one further, and no guard byte is left",
	      pc1 == after && pc2 == after + 1 && code[0] == 0x90 &&
	      code[1] == 0x90, "pc 0x%llx then 0x%llx, after_cpuid 0x%llx, "
	      "byte 0x%02x: %s", (unsigned long long)pc1,
	      (unsigned long long)pc2, (unsigned long long)after, code[0],
	      err.msg);
	rc = resume(r, HWT_RESUME_CONT, 0, NULL, 0, &ev, &err);
	CHECK("seize live: cpuid runs to its normal end", rc == 0 &&
	      ev.kind == HWT_EVENT_EXITED && ev.status == 0,
	      "rc %d kind %d status %d: %s", rc, ev.kind, ev.status, err.msg);
	finish(r);
}

static void test_watches(void)
{
	char path[PATH_MAX];
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct rec *r = launch_prog("loops", path, sizeof(path), &err);
	struct hwt_resume_action a = { .kind = HWT_RESUME_CONT };
	struct hwt_watch w[2];
	struct hwt_resume_opts o = { .sz = sizeof(o), .actions = &a,
				     .nactions = 1, .watches = w,
				     .nwatches = 1, .interrupt_fd = -1 };
	uint64_t grid, main_pc;
	uint32_t v = 0;
	int rc;

	if (!r) {
		CHECK("seize live: launch loops", 0, "%s", err.msg);
		return;
	}
	grid = symbol(path, "grid") + load_bias(r->s.pid, path);
	main_pc = symbol(path, "main") + load_bias(r->s.pid, path);
	rc = resume(r, HWT_RESUME_CONT, 0, &main_pc, 1, &ev, &err);
	/* grid[1][1] is written once, then read; grid[5][5] too. */
	w[0] = (struct hwt_watch){ grid + 4 * 7, 4, HWT_WATCH_WRITE };
	w[1] = (struct hwt_watch){ grid + 4 * 35, 4, HWT_WATCH_READ };
	rc = hwt_seize_resume(&r->s, &o, &ev, &err);
	if (rc == -EOPNOTSUPP) {
		printf("SKIP seize live: watchpoints: debug registers cannot "
		       "be set here: %s\n", err.msg);
		finish(r);
		return;
	}
	hwt_proc_mem_xfer(r->s.pid, grid + 4 * 7, &v, 4, false);
	CHECK("seize live: a write watch stops after the write",
	      rc == 0 && ev.kind == HWT_EVENT_WATCHPOINT &&
	      ev.data_addr == grid + 28 && ev.watch_kind == HWT_WATCH_WRITE &&
	      v == 1 * 1 + 0 + 1, "rc %d kind %d addr 0x%llx value %u: %s",
	      rc, ev.kind, (unsigned long long)ev.data_addr, v, err.msg);
	o.watches = &w[1];
	rc = hwt_seize_resume(&r->s, &o, &ev, &err);
	hwt_proc_mem_xfer(r->s.pid, grid + 4 * 35, &v, 4, false);
	CHECK("seize live: a read watch reports the read, not the write",
	      rc == 0 && ev.kind == HWT_EVENT_WATCHPOINT &&
	      ev.data_addr == grid + 140 && ev.watch_kind == HWT_WATCH_READ &&
	      v == 25 + 1, "rc %d kind %d addr 0x%llx value %u: %s", rc,
	      ev.kind, (unsigned long long)ev.data_addr, v, err.msg);
	o.nwatches = 0;
	rc = hwt_seize_resume(&r->s, &o, &ev, &err);
	CHECK("seize live: without watches it runs to its end",
	      rc == 0 && ev.kind == HWT_EVENT_EXITED, "rc %d kind %d: %s", rc,
	      ev.kind, err.msg);
	finish(r);
}

/* ---- signals ----------------------------------------------------------- */

static void test_signals(void)
{
	char path[PATH_MAX];
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct rec *r = launch_prog("signal", path, sizeof(path), &err);
	uint64_t work;
	int rc;

	if (!r) {
		CHECK("seize live: launch signal", 0, "%s", err.msg);
		return;
	}
	work = symbol(path, "handler_work") + load_bias(r->s.pid, path);
	rc = resume(r, HWT_RESUME_CONT, 0, &work, 1, &ev, &err);
	CHECK("seize live: raise(SIGUSR1) is reported before delivery",
	      rc == 0 && ev.kind == HWT_EVENT_SIGNAL && ev.signal == SIGUSR1,
	      "rc %d kind %d sig %d: %s", rc, ev.kind, ev.signal, err.msg);
	rc = resume(r, HWT_RESUME_CONT, SIGUSR1, &work, 1, &ev, &err);
	CHECK("seize live: the passed signal runs its handler",
	      rc == 0 && ev.kind == HWT_EVENT_BREAKPOINT && ev.pc == work,
	      "rc %d kind %d pc 0x%llx: %s", rc, ev.kind,
	      (unsigned long long)ev.pc, err.msg);
	rc = resume(r, HWT_RESUME_CONT, 0, &work, 1, &ev, &err);
	CHECK("seize live: then the program exits normally",
	      rc == 0 && ev.kind == HWT_EVENT_EXITED && ev.status == 0,
	      "rc %d kind %d status %d: %s", rc, ev.kind, ev.status, err.msg);
	finish(r);
}

/* ---- threads ----------------------------------------------------------- */

static void test_threads(void)
{
	char path[PATH_MAX];
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct rec *r = launch_prog("threads4", path, sizeof(path), &err);
	struct hwt_resume_action a = { .kind = HWT_RESUME_CONT };
	struct hwt_resume_opts o = { .sz = sizeof(o), .actions = &a,
				     .nactions = 1, .interrupt_fd = -1,
				     .report_thread_created = true };
	size_t created = 0, exited = 0, hits = 0, most = 0;
	pid_t hit_tids[8] = {0};
	uint64_t worker;
	int rc = 0;

	if (!r) {
		CHECK("seize live: launch threads4", 0, "%s", err.msg);
		return;
	}
	worker = symbol(path, "worker") + load_bias(r->s.pid, path);
	o.breakpoints = &worker;
	o.nbreakpoints = 1;
	for (int i = 0; i < 64; i++) {
		pid_t tids[16];
		size_t n;

		rc = hwt_seize_resume(&r->s, &o, &ev, &err);
		if (rc < 0 || ev.kind == HWT_EVENT_EXITED)
			break;
		n = hwt_seize_live_tids(&r->s, tids, 16);
		most = n > most ? n : most;
		if (ev.kind == HWT_EVENT_THREAD_CREATED)
			created++;
		else if (ev.kind == HWT_EVENT_THREAD_EXITED)
			exited++;
		else if (ev.kind == HWT_EVENT_BREAKPOINT && ev.pc == worker &&
			 hits < 8)
			hit_tids[hits++] = ev.tid;
		else
			break;
	}
	CHECK("seize live: four threads born, hit and gone, then exit",
	      rc == 0 && ev.kind == HWT_EVENT_EXITED && ev.status == 0 &&
	      created == 4 && exited == 4 && hits == 4 && most >= 2 &&
	      r->attached == 5 && hit_tids[0] != hit_tids[1] &&
	      hit_tids[0] != r->s.pid,
	      "rc %d last kind %d: %zu created, %zu exited, %zu hits, at most "
	      "%zu live, %zu attached: %s", rc, ev.kind, created, exited, hits,
	      most, r->attached, err.msg);
	finish(r);
}

/* ---- the perf recorder, live ------------------------------------------- */

static int dummy_configure(const struct hwt_pmu *pmu,
			   const struct hwt_collect_opts *o,
			   struct hwt_perf_attr *a, struct hwt_err *err)
{
	a->config[0] = PERF_COUNT_SW_DUMMY;
	return 0;
}

extern const struct hwt_backend test_backend_dummy;

static const struct hwt_perf_kind dummy_kind = {
	.backend = &test_backend_dummy,
	.pmu = "software",
	.what = "software dummy",
	.format = HWT_COLLECT_FMT_PT,
	.granule = 1,
	.sideband_only = true,
	.configure = dummy_configure,
};

HWT_PERF_BACKEND(test_backend_dummy, "test-dummy", dummy_kind,
		 HWT_COLLECT_CAP_BUNDLE);

static void test_perf_live(void)
{
	char path[PATH_MAX];
	char *argv[] = { path, NULL };
	struct hwt_collect_opts co = {
		.sz = sizeof(co), .buffer_size = HWT_COLLECT_DEFAULT_BUFFER,
		.live_control = true,
	};
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct hwt_collector *c = NULL;
	const struct hwt_collect_thread *th;
	const struct hwt_collect_module *m;
	struct hwt_resume_action a = { .kind = HWT_RESUME_CONT };
	struct hwt_resume_opts o = { .sz = sizeof(o), .actions = &a,
				     .nactions = 1, .interrupt_fd = -1 };
	size_t hits = 0, most = 0, nm;
	bool prog_seen = false;
	uint64_t worker;
	int rc;

	snprintf(path, sizeof(path), "%s/threads4", progdir);
	rc = test_backend_dummy.launch(&co, argv, &c, &err);
	if (rc == -EACCES || rc == -EPERM || rc == -ENOENT) {
		printf("SKIP seize live: perf: no perf events here: %s\n",
		       err.msg);
		return;
	}
	CHECK("seize live: perf launch stops at the first instruction",
	      rc == 0 && test_backend_dummy.threads(c, &th) == 1,
	      "rc %d: %s", rc, err.msg);
	if (rc < 0)
		return;
	c->backend = &test_backend_dummy;
	worker = symbol(path, "worker") + load_bias(c->pid, path);
	o.breakpoints = &worker;
	o.nbreakpoints = 1;
	for (int i = 0; i < 32; i++) {
		size_t n;

		rc = test_backend_dummy.resume(c, &o, &ev, &err);
		if (rc < 0 || ev.kind == HWT_EVENT_EXITED)
			break;
		n = test_backend_dummy.threads(c, &th);
		most = n > most ? n : most;
		if (ev.kind == HWT_EVENT_BREAKPOINT && ev.pc == worker)
			hits++;
		else if (ev.kind != HWT_EVENT_THREAD_EXITED)
			break;
	}
	nm = test_backend_dummy.modules(c, &m);
	for (size_t i = 0; i < nm; i++)
		prog_seen |= !strcmp(m[i].path, path);
	CHECK("seize live: perf: breakpoints in four threads, then exit",
	      rc == 0 && ev.kind == HWT_EVENT_EXITED && hits == 4 &&
	      most == 5 && c->state == HWT_COLLECTOR_ENDED &&
	      test_backend_dummy.threads(c, &th) == 5 && prog_seen,
	      "rc %d kind %d: %zu hits, at most %zu threads, program %s "
	      "among %zu modules: %s", rc, ev.kind, hits, most,
	      prog_seen ? "" : "not", nm, err.msg);
	test_backend_dummy.close(c);
}

/* ---- interrupt_fd and detach --------------------------------------------- */

static const char sleeper_src[] =
	"#include <time.h>\n"
	"int main(void) {\n"
	"  struct timespec ts = { 1, 0 }; nanosleep(&ts, 0); return 7; }\n";

static int wake_fd = -1;

static void *write_later(void *arg)
{
	struct timespec ts = { 0, 200 * 1000 * 1000 };

	(void)arg;
	nanosleep(&ts, NULL);
	if (write(wake_fd, "x", 1) != 1)
		wake_fd = -1;
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_interrupt_detach(const char *sleeper)
{
	char *argv[] = { (char *)sleeper, NULL };
	struct hwt_collect_event ev;
	struct hwt_err err = {0};
	struct hwt_resume_action a = { .kind = HWT_RESUME_CONT };
	struct hwt_resume_opts o = { .sz = sizeof(o), .actions = &a,
				     .nactions = 1 };
	struct rec *r;
	pthread_t writer;
	int fds[2], rc, status = 0;
	pid_t pid;
	double t0, t1;

	if (pipe(fds) < 0 || !(r = launch(argv, &err))) {
		CHECK("seize live: launch the sleeper", 0, "%s", err.msg);
		return;
	}
	wake_fd = fds[1];
	o.interrupt_fd = fds[0];
	t0 = now();
	pthread_create(&writer, NULL, write_later, NULL);
	rc = hwt_seize_resume(&r->s, &o, &ev, &err);
	t1 = now();
	pthread_join(writer, NULL);
	CHECK("seize live: interrupt_fd stops a program blocked in nanosleep",
	      rc == 0 && ev.kind == HWT_EVENT_INTERRUPTED &&
	      ev.tid == r->s.pid && t1 - t0 < 0.9,
	      "rc %d kind %d after %.2f s: %s", rc, ev.kind, t1 - t0, err.msg);
	pid = r->s.pid;
	rc = hwt_seize_detach(&r->s, &err);
	finish(r);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	CHECK("seize live: detached, the program ends normally",
	      rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 7,
	      "rc %d status 0x%x: %s", rc, status, err.msg);
	close(fds[0]);
	close(fds[1]);
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX], sleeper[512];

	(void)argc;
	(void)argv;
	/* The programs by their real path, as /proc/PID/maps names them. */
	if (!check_programs_dir(dir, sizeof(dir)))
		return 2;
	if (!realpath(dir, progdir)) {
		printf("SKIP seize live: %s is not built (make programs)\n",
		       dir);
		return 0;
	}
	/* A hang (a stop waited for that never comes) is a failure. */
	alarm(120);
	/* Built first: its compiler's children are reaped before any
	 * seized program's waits. */
	bool have_sleeper = subject_build(sleeper_src, "sleeper", "", sleeper,
					  sizeof(sleeper));

	RUN(test_breakpoints);
	RUN(test_steps);
	RUN(test_cpuid_step);
	RUN(test_watches);
	RUN(test_signals);
	RUN(test_threads);
	RUN(test_perf_live);
	if (have_sleeper)
		RUN(test_interrupt_detach, sleeper);
	else
		printf("SKIP seize live: interrupt and detach: no static "
		       "libc to build the sleeper\n");
	if (have_sleeper)
		subject_remove(sleeper);
	return check_exit();
}
