// SPDX-License-Identifier: BSD-2-Clause
/* test_seize.c - the seized-program layer (collect/seize/seize.c) with a small
 * recorder of its own over the test programs in build/programs: every
 * thread attached once before its first instruction and reported exiting
 * once, faults held with a core and finished, the munmap stop seeing a
 * library before dlclose removes it, exit status passed through. Then the
 * perf recorder (collect/perf/collector.c) for real on this kernel, with
 * perf's software dummy event: no trace hardware is needed for its
 * per-thread events, MMAP2 sideband, fault stop and core. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <sys/user.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "collect_util.h"
#include "perf/perf.h"
#include "os/proc.h"
#include "seize/seize.h"

#define MAX_T 64

static char progdir[PATH_MAX - 64];

/* ---- a test recorder ------------------------------------------------- */

struct rec {
	struct hwt_seize s;
	pid_t attached[MAX_T];
	int attach_count[MAX_T], exit_count[MAX_T];
	bool first[MAX_T];
	size_t n;
	size_t not_fresh;         /* attached threads that had already run */
	size_t exits_unattached;
	char why[300];
	/* maps_change */
	const char *lib;          /* look for this in the maps */
	size_t changes, changes_with_lib;
	bool lib_at_exit;         /* seen at an exiting stop */
};

static int slot(struct rec *r, pid_t tid)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->attached[i] == tid)
			return (int)i;
	return -1;
}

/* Read one field (1-based) of /proc/PID/task/TID/stat after the
 * parenthesised command name. */
static char task_state(pid_t pid, pid_t tid)
{
	char path[128], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid,
		 (int)tid);
	if (!(f = fopen(path, "r")))
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* A new thread that has not run stops once before its first instruction:
 * in that stop it is just back from clone (rax 0, rip after a syscall
 * instruction). Wait for it to get there (it runs on its own until then)
 * and look. */
static bool fresh_thread(struct rec *r, pid_t tid)
{
	struct user_regs_struct regs;
	struct timespec nap = { 0, 1000000 };
	long word;

	for (int i = 0; i < 2000 && task_state(r->s.pid, tid) != 't'; i++)
		nanosleep(&nap, NULL);
	if (ptrace(PTRACE_GETREGS, tid, 0, &regs) < 0) {
		snprintf(r->why, sizeof(r->why), "thread %d: GETREGS: %s",
			 (int)tid, strerror(errno));
		return false;
	}
	word = ptrace(PTRACE_PEEKTEXT, tid, (void *)(regs.rip - 2), 0);
	if (regs.rax != 0 || (word & 0xffff) != 0x050f) {
		snprintf(r->why, sizeof(r->why), "thread %d: rip 0x%llx rax "
			 "%lld, code before rip 0x%lx: not fresh from clone",
			 (int)tid, (unsigned long long)regs.rip,
			 (long long)regs.rax, word & 0xffff);
		return false;
	}
	return true;
}

static bool held_before_exec(pid_t pid)
{
	char a[PATH_MAX], b[PATH_MAX], path[64];
	ssize_t na, nb;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	na = readlink(path, a, sizeof(a) - 1);
	nb = readlink("/proc/self/exe", b, sizeof(b) - 1);
	return na > 0 && na == nb && !memcmp(a, b, (size_t)na);
}

static int rec_attach(void *ctx, pid_t tid, bool first, struct hwt_err *err)
{
	struct rec *r = ctx;
	int i = slot(r, tid);

	if (i >= 0) {
		r->attach_count[i]++;
		return 0;
	}
	if (r->n == MAX_T)
		return hwt_err_set(err, E2BIG, "more than %d threads", MAX_T);
	i = (int)r->n++;
	r->attached[i] = tid;
	r->attach_count[i] = 1;
	r->first[i] = first;
	if (first ? !held_before_exec(tid) || tid != r->s.pid :
	    !fresh_thread(r, tid))
		r->not_fresh++;
	return 0;
}

static bool maps_have(pid_t pid, const char *name)
{
	struct hwt_maps maps;
	bool found = false;

	if (hwt_maps_read(pid, &maps, NULL) < 0)
		return false;
	for (size_t i = 0; i < maps.n; i++)
		if (maps.v[i].executable && maps.v[i].path &&
		    strstr(maps.v[i].path, name))
			found = true;
	hwt_maps_free(&maps);
	return found;
}

static int rec_exiting(void *ctx, pid_t tid, struct hwt_err *err)
{
	struct rec *r = ctx;
	int i = slot(r, tid);

	if (i < 0)
		r->exits_unattached++;
	else
		r->exit_count[i]++;
	if (r->lib && maps_have(r->s.pid, r->lib))
		r->lib_at_exit = true;
	return 0;
}

static int rec_maps_change(void *ctx, pid_t tid, struct hwt_err *err)
{
	struct rec *r = ctx;

	r->changes++;
	if (maps_have(r->s.pid, r->lib))
		r->changes_with_lib++;
	return 0;
}

static const struct hwt_seize_ops plain_ops = {
	.attach = rec_attach,
	.exiting = rec_exiting,
};

static const struct hwt_seize_ops maps_ops = {
	.attach = rec_attach,
	.exiting = rec_exiting,
	.maps_change = rec_maps_change,
};

/* Launch and run argv with a fresh recorder looking for lib (may be
 * NULL); false on an error, in err. */
static bool run_rec(struct rec *r, const struct hwt_seize_ops *ops,
		    const char *lib, char **argv, struct hwt_err *err)
{
	memset(r, 0, sizeof(*r));
	r->lib = lib;
	hwt_seize_init(&r->s, ops, r, argv[0]);
	return hwt_seize_launch(&r->s, argv, err) == 0 &&
	       hwt_seize_run(&r->s, err) == 0;
}

static char *prog_path(const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", progdir, name);
	return path;
}

static void test_threads(void)
{
	struct rec r;
	struct hwt_err err = { 0 };
	char *argv[] = { prog_path("threads4"), NULL };
	bool ok = run_rec(&r, &plain_ops, NULL, argv, &err);
	size_t once = 0, exits = 0, firsts = 0, exited = 0;

	CHECK("seize: threads4 runs to exit status 0",
	      ok && r.s.reaped && r.s.end.reason == HWT_STOP_EXITED &&
	      r.s.end.status == 0, "%s (reason %d status %d)", err.msg,
	      r.s.end.reason, r.s.end.status);
	for (size_t i = 0; i < r.n; i++) {
		once += r.attach_count[i] == 1;
		exits += r.exit_count[i] == 1;
		firsts += r.first[i];
		exited += hwt_seize_exited(&r.s, r.attached[i]);
	}
	CHECK("seize: every thread attached exactly once, the first before "
	      "its execve", r.n == 5 && once == 5 && firsts == 1 &&
	      r.first[0] && r.attached[0] == r.s.pid,
	      "%zu threads, %zu attached once, %zu first", r.n, once, firsts);
	CHECK("seize: each new thread attached before its first instruction",
	      r.n == 5 && r.not_fresh == 0, "%zu not fresh: %s", r.not_fresh,
	      r.why);
	CHECK("seize: every thread reported exiting once",
	      exits == 5 && r.exits_unattached == 0 && exited == 5,
	      "%zu of %zu exiting once, %zu unattached, %zu exited", exits,
	      r.n, r.exits_unattached, exited);
	hwt_seize_close(&r.s);
}

static bool is_core(const char *path)
{
	Elf64_Ehdr eh;
	int fd = open(path, O_RDONLY);
	bool ok;

	if (fd < 0)
		return false;
	ok = read(fd, &eh, sizeof(eh)) == sizeof(eh) &&
	     !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_type == ET_CORE &&
	     eh.e_phnum > 1;
	close(fd);
	return ok;
}

static void test_fault(void)
{
	struct rec r;
	struct hwt_err err = { 0 };
	char *argv[] = { prog_path("crash"), NULL };
	char core[] = "/tmp/hwt-seize-core-XXXXXX";
	bool ok = run_rec(&r, &plain_ops, NULL, argv, &err);
	int fd = mkstemp(core);

	CHECK("seize: crash is held at its SIGSEGV in the faulting thread",
	      ok && r.s.faulted && !r.s.reaped &&
	      r.s.end.reason == HWT_STOP_FAULT && r.s.end.signal == SIGSEGV &&
	      r.s.end.tid == r.s.pid && r.s.end.pc != 0 &&
	      task_state(r.s.pid, r.s.pid) == 't',
	      "%s (reason %d signal %d tid %d pid %d)", err.msg,
	      r.s.end.reason, r.s.end.signal, (int)r.s.end.tid, (int)r.s.pid);
	if (fd >= 0)
		close(fd);
	ok = ok && hwt_seize_write_core(&r.s, core, &err) == 0;
	CHECK("seize: a core is written at the fault", ok && is_core(core),
	      "%s", err.msg);
	unlink(core);
	ok = r.s.faulted && hwt_seize_finish(&r.s, &err) == 0;
	CHECK("seize: finish delivers the SIGSEGV",
	      ok && r.s.reaped && r.s.end.reason == HWT_STOP_SIGNALED &&
	      r.s.end.signal == SIGSEGV, "%s (reason %d signal %d)", err.msg,
	      r.s.end.reason, r.s.end.signal);
	hwt_seize_close(&r.s);
}

static void test_caught_signal_and_status(void)
{
	struct rec r;
	struct hwt_err err = { 0 };
	char *sig_argv[] = { prog_path("signal"), NULL };
	char *sh_argv[] = { "sh", "-c", "exit 7", NULL };
	char *bad_argv[] = { "/nonexistent/hwt-no-such-program", NULL };
	bool ok = run_rec(&r, &plain_ops, NULL, sig_argv, &err);

	CHECK("seize: a caught signal is delivered, not a fault",
	      ok && r.s.reaped && r.s.end.reason == HWT_STOP_EXITED &&
	      r.s.end.status == 0, "%s (reason %d status %d)", err.msg,
	      r.s.end.reason, r.s.end.status);
	hwt_seize_close(&r.s);
	ok = run_rec(&r, &plain_ops, NULL, sh_argv, &err);
	CHECK("seize: the exit status passes through",
	      ok && r.s.end.reason == HWT_STOP_EXITED && r.s.end.status == 7,
	      "%s (reason %d status %d)", err.msg, r.s.end.reason,
	      r.s.end.status);
	hwt_seize_close(&r.s);
	memset(&err, 0, sizeof(err));
	ok = run_rec(&r, &plain_ops, NULL, bad_argv, &err);
	CHECK("seize: a program that cannot run is an error naming it",
	      !ok && err.code == ENOENT && strstr(err.msg, "hwt-no-such"),
	      "ok %d code %d: %s", ok, err.code, err.msg);
	hwt_seize_close(&r.s);
}

static void test_unmap_stop(void)
{
	struct rec r;
	struct hwt_err err = { 0 };
	char *argv[] = { prog_path("dlopen"), NULL };
	bool ok = run_rec(&r, &maps_ops, "libhwtdemo.so", argv, &err);

	CHECK("seize: dlopen runs to exit status 0 with syscall stops",
	      ok && r.s.end.reason == HWT_STOP_EXITED && r.s.end.status == 0,
	      "%s (reason %d status %d)", err.msg, r.s.end.reason,
	      r.s.end.status);
	/* Gone at the exit stop: only the unmap stop could see it. */
	CHECK("seize: an unmap stop sees libhwtdemo before dlclose",
	      r.changes_with_lib > 0 && !r.lib_at_exit,
	      "%zu unmap stops, %zu with the library; at exit %s",
	      r.changes, r.changes_with_lib,
	      r.lib_at_exit ? "still mapped" : "gone");
	hwt_seize_close(&r.s);
	ok = run_rec(&r, &plain_ops, "libhwtdemo.so", argv, &err);
	CHECK("seize: without maps_change there are no unmap stops",
	      ok && r.changes == 0 && r.s.end.status == 0, "%s (%zu stops)",
	      err.msg, r.changes);
	hwt_seize_close(&r.s);
}

/* A thread other than the leader execs a program that faults: the
 * execing thread takes the leader's tid, and the fault must still find
 * every thread it waits for. */
static const char exec_src[] =
	"#include <pthread.h>\n"
	"#include <unistd.h>\n"
	"static char **args;\n"
	"static void *work(void *a) { execv(args[1], args + 1); return a; }\n"
	"int main(int argc, char **argv) { pthread_t t; args = argv;\n"
	"  pthread_create(&t, 0, work, 0); pthread_join(t, 0); return 9; }\n";

static void test_exec_from_thread(void)
{
	struct rec r;
	struct hwt_err err = { 0 };
	char subject[512];
	char *argv[] = { subject, prog_path("crash"), NULL };
	bool ok;

	if (!subject_build(exec_src, "texec", "-pthread", subject,
			   sizeof(subject))) {
		printf("SKIP seize exec from a thread: no C compiler with "
		       "static libc to build the subject\n");
		return;
	}
	ok = run_rec(&r, &plain_ops, NULL, argv, &err);
	CHECK("seize: a thread's execve of a crashing program stops at the "
	      "fault under the leader's tid",
	      ok && r.s.faulted && r.s.end.signal == SIGSEGV &&
	      r.s.end.tid == r.s.pid && r.n == 2,
	      "%s (reason %d signal %d tid %d, %zu threads)", err.msg,
	      r.s.end.reason, r.s.end.signal, (int)r.s.end.tid, r.n);
	ok = ok && hwt_seize_finish(&r.s, &err) == 0;
	CHECK("seize: ... and finish delivers its signal",
	      ok && r.s.end.reason == HWT_STOP_SIGNALED &&
	      r.s.end.signal == SIGSEGV, "%s", err.msg);
	hwt_seize_close(&r.s);
	subject_remove(subject);
}

/* ---- the perf recorder with the software dummy event ----------------- */

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

/* Each worker maps a file executable: only its own event reports it. */
static const char mapper_src[] =
	"#include <fcntl.h>\n"
	"#include <pthread.h>\n"
	"#include <sys/mman.h>\n"
	"static const char *file;\n"
	"static void *work(void *a) {\n"
	"  int fd = open(file, O_RDONLY);\n"
	"  void *p = mmap(0, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd,"
	" 0);\n"
	"  return p == MAP_FAILED ? a : 0; }\n"
	"int main(int argc, char **argv) { pthread_t t[3]; void *r;\n"
	"  int bad = 0; file = argv[1];\n"
	"  for (int i = 0; i < 3; i++) pthread_create(&t[i], 0, work, "
	"(void *)1);\n"
	"  for (int i = 0; i < 3; i++) { pthread_join(t[i], &r); bad += r != 0;"
	" }\n"
	"  return bad ? 3 : 4; }\n";

/* A worker floods its event's sideband: 3000 executable mappings made
 * and unmapped in paced bursts, far more MMAP2 records than the data
 * area holds, then one mapping of the marker file kept. The marker is
 * seen only if the ring was read while the thread ran (records that find
 * the area full are dropped). */
static const char flood_src[] =
	"#include <fcntl.h>\n"
	"#include <pthread.h>\n"
	"#include <sys/mman.h>\n"
	"#include <unistd.h>\n"
	"static char **args;\n"
	"static void *work(void *a) {\n"
	"  int fd = open(args[1], O_RDONLY), mk = open(args[2], O_RDONLY);\n"
	"  for (int i = 0; i < 3000; i++) {\n"
	"    void *p = mmap(0, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd,"
	" 0);\n"
	"    if (p == MAP_FAILED) return a;\n"
	"    munmap(p, 4096);\n"
	"    if (i % 100 == 99) usleep(3000); }\n"
	"  return mmap(0, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, mk, 0) =="
	" MAP_FAILED ? a : 0; }\n"
	"int main(int argc, char **argv) { pthread_t t; void *r;\n"
	"  args = argv; pthread_create(&t, 0, work, (void *)1);\n"
	"  pthread_join(t, &r); return r ? 3 : 0; }\n";

static bool has_module(struct hwt_collector *c, const char *suffix,
		       size_t *count)
{
	const struct hwt_collect_module *m;
	size_t n = test_backend_dummy.modules(c, &m), hits = 0, len;

	for (size_t i = 0; i < n; i++) {
		len = strlen(m[i].path);
		hits += len >= strlen(suffix) &&
			!strcmp(m[i].path + len - strlen(suffix), suffix);
	}
	if (count)
		*count = hits;
	return hits > 0;
}

static struct hwt_collector *dummy_run(char **argv, struct hwt_err *err,
				       bool *skip)
{
	struct hwt_collect_opts o = {
		.sz = sizeof(o), .buffer_size = HWT_COLLECT_DEFAULT_BUFFER,
	};
	struct hwt_collector *c = NULL;
	int rc = test_backend_dummy.launch(&o, argv, &c, err);

	*skip = rc == -EACCES || rc == -EPERM || rc == -ENOENT;
	if (rc < 0)
		return NULL;
	if (test_backend_dummy.run(c, err) < 0) {
		test_backend_dummy.close(c);
		return NULL;
	}
	return c;
}

/* A stop (here a child's exit) ends a polling wait at once, however long
 * its timer: SIGCHLD wakes it (os/childwake.h). Without the wakeup the
 * first wait would sleep its full minute and the alarm ends the test. */
static void test_wait_woken(void)
{
	struct hwt_seize s;
	struct hwt_err err = { 0 };
	struct pollfd quiet;
	sigset_t mask;
	int never[2], status = 0, idle_ms = 60000, ready = 0, calls = 0;
	pid_t child, got = 0;

	if (pipe(never) < 0) {
		CHECK("wait: a pipe", false, "%s", strerror(errno));
		return;
	}
	hwt_seize_init(&s, &plain_ops, NULL, "child");
	child = fork();
	if (child == 0) {
		struct timespec nap = { 0, 50000000 };

		nanosleep(&nap, NULL);
		_exit(7);
	}
	alarm(20);
	while (got == 0 && calls < 3) {
		quiet = (struct pollfd){ .fd = never[0], .events = POLLIN };
		got = hwt_seize_wait_or_poll(&s, &status, &quiet, 1, &idle_ms,
					     &ready, &err);
		calls++;
	}
	alarm(120);
	pthread_sigmask(SIG_SETMASK, NULL, &mask);
	CHECK("wait: a stop ends a polling wait before its timer",
	      got == child && WIFEXITED(status) && WEXITSTATUS(status) == 7 &&
	      ready == 0, "got %d (child %d), status 0x%x, %d waits: %s",
	      (int)got, (int)child, status, calls, err.msg);
	CHECK("wait: SIGCHLD is not left blocked after the wait",
	      !sigismember(&mask, SIGCHLD), "blocked");
	close(never[0]);
	close(never[1]);
	hwt_seize_close(&s);
}

static void test_perf_dummy(void)
{
	struct hwt_err err = { 0 };
	const struct hwt_collect_thread *t;
	char subject[512], lib[PATH_MAX];
	char *argv[] = { subject, lib, NULL };
	char *crash_argv[] = { prog_path("crash"), NULL };
	char core[] = "/tmp/hwt-seize-core-XXXXXX";
	struct hwt_collector *c;
	size_t n, distinct = 0, exited = 0, maps = 0;
	bool skip;
	int fd;

	snprintf(lib, sizeof(lib), "%s/libhwtdemo.so", progdir);
	if (!subject_build(mapper_src, "mapper", "-pthread", subject,
			   sizeof(subject))) {
		printf("SKIP perf dummy: no C compiler with static libc to "
		       "build the subject\n");
		return;
	}
	c = dummy_run(argv, &err, &skip);
	if (!c && skip) {
		printf("SKIP perf dummy: %s\n", err.msg);
		subject_remove(subject);
		return;
	}
	CHECK("perf dummy: threaded program runs to its exit status",
	      c && c->end.reason == HWT_STOP_EXITED && c->end.status == 4,
	      "%s (reason %d status %d)", err.msg, c ? (int)c->end.reason : -1,
	      c ? c->end.status : -1);
	if (c) {
		n = test_backend_dummy.threads(c, &t);
		for (size_t i = 0; i < n; i++) {
			bool dup = false;

			for (size_t j = 0; j < i; j++)
				dup |= t[j].tid == t[i].tid;
			distinct += !dup;
			exited += t[i].exited;
		}
		CHECK("perf dummy: one event per thread, the first the "
		      "program's", n == 4 && distinct == 4 && exited == 4 &&
		      t[0].tid == c->pid, "%zu threads, %zu distinct, %zu "
		      "exited", n, distinct, exited);
		/* Three mappings at three addresses, each made by a worker:
		 * seen only if every worker had an event of its own. */
		has_module(c, "/libhwtdemo.so", &maps);
		CHECK("perf dummy: each worker's MMAP2 is seen on its event",
		      maps == 3 && has_module(c, "/mapper", NULL),
		      "%zu mappings of libhwtdemo.so", maps);
		test_backend_dummy.close(c);
	}
	subject_remove(subject);

	if (subject_build(flood_src, "flood", "-pthread", subject,
			  sizeof(subject))) {
		char *flood_argv[] = { subject, lib, prog_path("crash"),
				       NULL };

		c = dummy_run(flood_argv, &err, &skip);
		CHECK("perf dummy: a thread's ring is read while it runs",
		      c && c->end.reason == HWT_STOP_EXITED &&
		      c->end.status == 0 && has_module(c, "/crash", NULL),
		      "%s (status %d): the marker mapping after 3000 others "
		      "is %s", err.msg, c ? c->end.status : -1,
		      c && has_module(c, "/crash", NULL) ? "there" : "lost");
		if (c)
			test_backend_dummy.close(c);
		subject_remove(subject);
	}

	c = dummy_run(crash_argv, &err, &skip);
	CHECK("perf dummy: crash is held at its SIGSEGV",
	      c && c->state == HWT_COLLECTOR_FAULTED &&
	      c->end.reason == HWT_STOP_FAULT && c->end.signal == SIGSEGV &&
	      c->end.tid == c->pid && has_module(c, "/crash", NULL),
	      "%s", err.msg);
	if (!c)
		return;
	fd = mkstemp(core);
	if (fd >= 0)
		close(fd);
	CHECK("perf dummy: a core is written at the fault",
	      test_backend_dummy.write_core(c, core, &err) == 0 &&
	      is_core(core), "%s", err.msg);
	unlink(core);
	CHECK("perf dummy: finish delivers the SIGSEGV",
	      test_backend_dummy.finish(c, &err) == 0 &&
	      c->end.reason == HWT_STOP_SIGNALED && c->end.signal == SIGSEGV,
	      "%s (reason %d signal %d)", err.msg, c->end.reason,
	      c->end.signal);
	test_backend_dummy.close(c);
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	if (!check_programs_dir(progdir, sizeof(progdir)))
		return 2;
	if (access(prog_path("threads4"), X_OK) < 0) {
		printf("SKIP seize: %s is not built (make programs)\n",
		       prog_path("threads4"));
		return 0;
	}
	/* A hang (a thread waited for that never stops) is a failure. */
	alarm(120);
	RUN(test_threads);
	RUN(test_fault);
	RUN(test_caught_signal_and_status);
	RUN(test_unmap_stop);
	RUN(test_exec_from_thread);
	RUN(test_wait_woken);
	RUN(test_perf_dummy);
	return check_exit();
}
