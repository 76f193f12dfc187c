// SPDX-License-Identifier: BSD-2-Clause
/* test_collect.c - the collector API with the ptrace backend, end to end
 * on real programs: system binaries for the API contract (errors, exit
 * status, fatal signals, ring wrap, sideband), and tiny static programs
 * compiled here for threads, signal handlers and faults in a thread. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <unistd.h>

#include "check.h"
#include "collect_util.h"
#include "hwt-collect.h"

/* ---- helpers --------------------------------------------------------- */

/* history_decode, and the check that what was decoded and what was lost
 * add up to what the collector counted. */
static struct history decode(const struct hwt_collect_thread *t)
{
	struct history h = history_decode(t);

	if (h.ok && h.n + t->lost_insns != t->insn_total) {
		snprintf(h.why, sizeof(h.why),
			 "decoded %zu + lost %llu != total %llu", h.n,
			 (unsigned long long)t->lost_insns,
			 (unsigned long long)t->insn_total);
		h.ok = false;
	}
	return h;
}

static const struct hwt_collect_module *find_module(struct hwt_collector *c,
						     const char *suffix)
{
	const struct hwt_collect_module *m;
	size_t n = hwt_collect_modules(c, &m), sl = strlen(suffix);

	for (size_t i = 0; i < n; i++) {
		size_t pl = strlen(m[i].path);

		if (pl >= sl && strcmp(m[i].path + pl - sl, suffix) == 0)
			return &m[i];
	}
	return NULL;
}

static uint64_t elf_entry(const char *path)
{
	Elf64_Ehdr eh;
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, &eh, sizeof(eh));

	if (fd >= 0)
		close(fd);
	return n == sizeof(eh) ? eh.e_entry : 0;
}

/* Launch and run argv with opts; returns the collector or NULL. */
static struct hwt_collector *record(const struct hwt_collect_opts *opts,
				    char *const argv[],
				    struct hwt_collect_end *end,
				    struct hwt_err *err)
{
	struct hwt_collector *c;

	memset(end, 0, sizeof(*end));
	if (hwt_collect_launch(opts, argv, &c, err) < 0)
		return NULL;
	if (hwt_collect_run(c, end, err) < 0) {
		hwt_collect_close(c);
		return NULL;
	}
	return c;
}

/* ---- API contract on system programs --------------------------------- */

/* The first available backend in the registry's order that does what
 * the options ask, or NULL. */
static const char *expected_default(bool live, bool block_step)
{
	const char *const *names;
	size_t n = hwt_collect_backends(&names);

	for (size_t i = 0; i < n; i++) {
		struct hwt_err err = {0};

		if (live && strcmp(names[i], "ptrace"))
			continue;
		if (block_step && strcmp(names[i], "module"))
			continue;
		if (hwt_collect_backend_available(names[i], &err) == 0)
			return names[i];
	}
	return NULL;
}

/* Without a name the first available backend in order of preference
 * records, among those that can do what the options ask. */
static void test_default_choice(struct hwt_collect_opts *opts,
				char *argv[])
{
	const char *const *names;
	size_t n = hwt_collect_backends(&names);
	struct hwt_collector *c = NULL;
	struct hwt_err err = {0};
	const char *want;
	int rc;

	CHECK("backends are listed hardware first, then valgrind, module, "
	      "ptrace, perf-etm",
	      n == 6 && !strcmp(names[0], "perf-pt") &&
	      !strcmp(names[1], "perf-bts") && !strcmp(names[2], "valgrind") &&
	      !strcmp(names[3], "module") && !strcmp(names[4], "ptrace") &&
	      !strcmp(names[5], "perf-etm"),
	      "%zu backends, first %s", n, n ? names[0] : "-");

	want = expected_default(false, false);
	rc = hwt_collect_launch(opts, argv, &c, &err);
	CHECK("the default is the first available backend",
	      rc == 0 && want && !strcmp(hwt_collect_backend_name(c), want),
	      "rc %d (%s): got %s, want %s", rc, err.msg,
	      c ? hwt_collect_backend_name(c) : "-", want ? want : "-");
	hwt_collect_close(c);
	c = NULL;

	opts->live_control = true;
	rc = hwt_collect_launch(opts, argv, &c, &err);
	CHECK("live control picks a backend that can resume",
	      rc == 0 && !strcmp(hwt_collect_backend_name(c), "ptrace"),
	      "rc %d (%s): got %s", rc, err.msg,
	      c ? hwt_collect_backend_name(c) : "-");
	CHECK("the stepper says what it can do",
	      c && hwt_collect_backend_caps(c) ==
	      (HWT_COLLECT_CAP_LIVE | HWT_COLLECT_CAP_ATTACH |
	       HWT_COLLECT_CAP_WATCH | HWT_COLLECT_CAP_EXACT_WATCH |
	       HWT_COLLECT_CAP_CORE | HWT_COLLECT_CAP_BUNDLE |
	       HWT_COLLECT_CAP_DEFER), "caps 0x%x",
	      c ? hwt_collect_backend_caps(c) : 0);
	hwt_collect_close(c);
	c = NULL;

	opts->backend = "ptrace";
	opts->block_step = true;
	opts->live_control = false;
	rc = hwt_collect_launch(opts, argv, &c, &err);
	CHECK("block-step is refused by the ptrace backend",
	      rc == -EINVAL && !c && strstr(err.msg, "block-step") &&
	      strstr(err.msg, "ptrace"), "rc %d: %s", rc, err.msg);

	opts->backend = NULL;
	want = expected_default(false, true);
	rc = hwt_collect_launch(opts, argv, &c, &err);
	CHECK("block-step by default needs the module backend",
	      want ? rc == 0 && !strcmp(hwt_collect_backend_name(c), want)
		   : rc < 0 && !c && strstr(err.msg, "no trace backend") &&
		     strstr(err.msg, "hwtrace.ko"),
	      "rc %d: %s", rc, err.msg);
	hwt_collect_close(c);
	opts->block_step = false;
}

static void test_registry_and_options(void)
{
	const char *const *names;
	size_t n = hwt_collect_backends(&names);
	HWT_OPTS(hwt_collect_opts, opts);
	char *argv[] = { "/bin/true", NULL };
	struct hwt_collector *c = NULL;
	struct hwt_err err = {0};
	int rc;

	bool have_ptrace = false;

	for (size_t i = 0; i < n; i++)
		have_ptrace |= !strcmp(names[i], "ptrace");
	CHECK("backends list names ptrace", have_ptrace,
	      "%zu backends, first %s", n, n ? names[0] : "-");

	opts.backend = "nosuch";
	rc = hwt_collect_launch(&opts, argv, &c, &err);
	CHECK("unknown backend is refused with the list of names",
	      rc == -EINVAL && strstr(err.msg, "nosuch") &&
	      strstr(err.msg, "ptrace") && !c, "rc %d: %s", rc, err.msg);

	opts.backend = NULL;
	opts.buffer_size = 1000;
	rc = hwt_collect_launch(&opts, argv, &c, &err);
	CHECK("buffer below the minimum is refused",
	      rc == -EINVAL && strstr(err.msg, "buffer"), "rc %d: %s", rc,
	      err.msg);

	opts.buffer_size = 0;
	opts.pin = HWT_PIN_CPU;
	opts.cpu = 100000;
	rc = hwt_collect_launch(&opts, argv, &c, &err);
	CHECK("pinning to a cpu we may not use is refused",
	      rc == -EINVAL && strstr(err.msg, "cpu 100000"), "rc %d: %s", rc,
	      err.msg);

	opts.pin = HWT_PIN_HERE;
	opts.cpu = 0;
	opts.sz = 0;
	rc = hwt_collect_launch(&opts, argv, &c, &err);
	CHECK("options without sz are refused", rc == -EINVAL && strstr(err.msg, "sz"),
	      "rc %d: %s", rc, err.msg);

	/* A caller built against a newer, larger struct: what it adds
	 * must be zero, else the call fails rather than ignore it. */
	{
		struct {
			struct hwt_collect_opts o;
			uint64_t newer;
		} big = { .o = { .sz = sizeof(big) }, .newer = 1 };

		rc = hwt_collect_launch(&big.o, argv, &c, &err);
		CHECK("a larger struct with a non-zero new field is refused",
		      rc == -EINVAL && !c && strstr(err.msg, "newer"),
		      "rc %d: %s", rc, err.msg);
		big.newer = 0;
		rc = hwt_collect_launch(&big.o, argv, &c, &err);
		CHECK("a larger struct whose new fields are zero is taken",
		      rc == 0 && c, "rc %d: %s", rc, err.msg);
		hwt_collect_close(c);
		c = NULL;
	}
	/* A zeroed struct (but its size) is every default. */
	{
		HWT_OPTS(hwt_collect_opts, zero);

		rc = hwt_collect_launch(&zero, argv, &c, &err);
		CHECK("HWT_OPTS with nothing set launches with the defaults",
		      rc == 0 && c, "rc %d: %s", rc, err.msg);
		hwt_collect_close(c);
		c = NULL;
	}

	opts.sz = sizeof(opts);
	test_default_choice(&opts, argv);

	{
		char *missing[] = { "/nonexistent/hwt-no-such-program", NULL };

		rc = hwt_collect_launch(NULL, missing, &c, &err);
		CHECK("a program that cannot run is reported",
		      rc == -ENOENT && strstr(err.msg, "cannot run"),
		      "rc %d: %s", rc, err.msg);
	}
}

static void test_exit_and_history(void)
{
	char *argv[] = { "true", NULL };
	const struct hwt_collect_thread *t;
	const struct hwt_collect_module *ld, *prog, *libc;
	struct hwt_collect_end end;
	struct hwt_err err = {0};
	struct hwt_collector *c = record(NULL, argv, &end, &err);
	struct history h = {0};
	size_t n;
	int rc;

	CHECK("true runs to a normal exit", c && end.reason == HWT_STOP_EXITED &&
	      end.status == 0, "%s (reason %d status %d)", err.msg, end.reason,
	      end.status);
	if (!c)
		return;
	n = hwt_collect_threads(c, &t);
	if (n == 1)
		h = decode(&t[0]);
	CHECK("one thread, decodable, nothing lost",
	      n == 1 && t[0].tid == hwt_collect_pid(c) && t[0].exited &&
	      h.ok && t[0].lost_insns == 0 && h.n > 10000,
	      "%zu threads, %zu insns: %s", n, h.n, h.why);

	ld = find_module(c, "/ld-linux-x86-64.so.2");
	prog = find_module(c, "/true");
	libc = find_module(c, "/libc.so.6");
	CHECK("sideband has the program, loader and libc with build-ids",
	      ld && prog && libc && ld->build_id && strlen(ld->build_id) == 40 &&
	      prog->build_id && libc->build_id,
	      "loader %p program %p libc %p", (void *)ld, (void *)prog,
	      (void *)libc);
	CHECK("history starts at the loader's entry point",
	      h.n && ld && h.pc[0] == ld->load_address + elf_entry(ld->path),
	      "first pc %llx, loader at %llx entry %llx",
	      h.n ? (unsigned long long)h.pc[0] : 0ull,
	      ld ? (unsigned long long)ld->load_address : 0ull,
	      ld ? (unsigned long long)elf_entry(ld->path) : 0ull);

	rc = hwt_collect_run(c, &end, &err);
	CHECK("a second run is refused", rc == -EBUSY, "rc %d", rc);
	rc = hwt_collect_write_core(c, "/tmp/hwt-never-written", &err);
	CHECK("a core needs a fault", rc == -EINVAL, "rc %d", rc);
	rc = hwt_collect_finish(c, &end, &err);
	CHECK("finish needs a fault", rc == -EINVAL, "rc %d", rc);
	history_free(&h);
	hwt_collect_close(c);
}

static void test_exit_status_and_wrap(void)
{
	char *argv[] = { "/bin/sh", "-c", "exit 3", NULL };
	struct hwt_collect_opts opts = {
		.sz = sizeof(opts),
		.buffer_size = HWT_COLLECT_MIN_BUFFER,
	};
	const struct hwt_collect_thread *t;
	struct hwt_collect_end end;
	struct hwt_err err = {0};
	struct hwt_collector *c = record(&opts, argv, &end, &err);
	struct history h = {0};
	struct hwt_sw_chunk_hdr first;

	CHECK("exit status is reported", c && end.reason == HWT_STOP_EXITED &&
	      end.status == 3, "%s (reason %d status %d)", err.msg,
	      end.reason, end.status);
	if (!c)
		return;
	if (hwt_collect_threads(c, &t) == 1)
		h = decode(&t[0]);
	CHECK("a small ring wraps, keeps the newest, counts the lost",
	      h.ok && t[0].lost_insns > 0 && t[0].lost_bytes > 0 &&
	      t[0].trace_size <= HWT_COLLECT_MIN_BUFFER &&
	      hwt_sw_chunk_hdr_unpack(t[0].trace, t[0].trace_size, &first,
				      NULL) == 0 &&
	      first.first_seq == t[0].lost_insns,
	      "%s; lost %llu insns, %zu bytes kept", h.why,
	      (unsigned long long)t[0].lost_insns, t[0].trace_size);
	history_free(&h);
	hwt_collect_close(c);
}

/* The first PRSTATUS note of a core: who faulted, with which signal. */
static bool core_first_prstatus(const char *path, pid_t *pid, int *sig,
				uint64_t pc, bool *pc_covered)
{
	uint8_t *buf = malloc(1 << 16);
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, 1 << 16);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(buf + sizeof(*eh));
	bool ok = false;

	if (fd >= 0)
		close(fd);
	*pc_covered = false;
	if (n < (ssize_t)sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_type != ET_CORE || eh->e_phnum < 2 ||
	    sizeof(*eh) + eh->e_phnum * sizeof(*ph) > (size_t)n ||
	    ph[0].p_type != PT_NOTE)
		goto out;
	for (size_t i = 1; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && pc >= ph[i].p_vaddr &&
		    pc < ph[i].p_vaddr + ph[i].p_memsz)
			*pc_covered = ph[i].p_filesz == ph[i].p_memsz;
	if (ph[0].p_offset + sizeof(Elf64_Nhdr) + 8 +
	    sizeof(struct elf_prstatus) <= (size_t)n) {
		const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(buf + ph[0].p_offset);
		struct elf_prstatus st;

		memcpy(&st, (const uint8_t *)(nh + 1) + 8, sizeof(st));
		ok = nh->n_type == NT_PRSTATUS;
		*pid = st.pr_pid;
		*sig = st.pr_cursig;
	}
out:
	free(buf);
	return ok;
}

static void test_fatal_signal_and_core(void)
{
	char *argv[] = { "/bin/sh", "-c", "kill -SEGV $$", NULL };
	char core[] = "/tmp/hwt-test-core-XXXXXX";
	const struct hwt_collect_thread *t;
	struct hwt_collect_end end;
	struct hwt_err err = {0};
	struct hwt_collector *c = record(NULL, argv, &end, &err);
	struct history h = {0};
	bool covered = false;
	pid_t core_pid = 0;
	int core_sig = 0, fd, rc;

	CHECK("an uncaught SIGSEGV stops the recording as a fault",
	      c && end.reason == HWT_STOP_FAULT && end.signal == SIGSEGV &&
	      end.tid == hwt_collect_pid(c),
	      "%s (reason %d signal %d)", err.msg, end.reason, end.signal);
	if (!c)
		return;
	if (hwt_collect_threads(c, &t) == 1)
		h = decode(&t[0]);
	CHECK("the faulting pc is the thread's last recorded instruction",
	      h.ok && h.n && h.pc[h.n - 1] == end.pc && !t[0].exited,
	      "%s; last %llx, fault at %llx", h.why,
	      h.n ? (unsigned long long)h.pc[h.n - 1] : 0ull,
	      (unsigned long long)end.pc);
	fd = mkstemp(core);
	if (fd >= 0)
		close(fd);
	rc = hwt_collect_write_core(c, core, &err);
	CHECK("core names the faulting thread and signal, holds the code",
	      rc == 0 && core_first_prstatus(core, &core_pid, &core_sig,
					     end.pc, &covered) &&
	      core_pid == end.tid && core_sig == SIGSEGV && covered,
	      "rc %d %s; pid %d sig %d code included %d", rc, err.msg,
	      (int)core_pid, core_sig, covered);
	unlink(core);
	rc = hwt_collect_finish(c, &end, &err);
	CHECK("finish lets the signal kill the program",
	      rc == 0 && end.reason == HWT_STOP_SIGNALED &&
	      end.signal == SIGSEGV, "rc %d %s (reason %d signal %d)", rc,
	      err.msg, end.reason, end.signal);
	CHECK("the trace survives finish",
	      hwt_collect_threads(c, &t) == 1 && t[0].exited &&
	      t[0].insn_total == h.n, "thread list changed");
	history_free(&h);
	hwt_collect_close(c);
}

static void test_caught_signal(void)
{
	char *argv[] = { "/bin/sh", "-c", "trap 'exit 4' USR1; kill -USR1 $$; "
			 "exit 9", NULL };
	const struct hwt_collect_thread *t;
	struct hwt_collect_end end;
	struct hwt_err err = {0};
	struct hwt_collector *c = record(NULL, argv, &end, &err);
	struct history h = {0};

	CHECK("a caught signal runs its handler under recording",
	      c && end.reason == HWT_STOP_EXITED && end.status == 4,
	      "%s (reason %d status %d)", err.msg, end.reason, end.status);
	if (!c)
		return;
	if (hwt_collect_threads(c, &t) == 1)
		h = decode(&t[0]);
	CHECK("the handler entry is recorded as an asynchronous transfer",
	      h.ok && h.asyncs == 1, "%s; %zu async transfers", h.why,
	      h.asyncs);
	history_free(&h);
	hwt_collect_close(c);
}

static void test_close_kills(void)
{
	char *sleeper[] = { "/bin/sleep", "1000", NULL };
	char *crasher[] = { "/bin/sh", "-c", "kill -BUS $$", NULL };
	struct hwt_collect_end end;
	struct hwt_err err = {0};
	struct hwt_collector *c;
	pid_t pid = 0;
	int rc;

	rc = hwt_collect_launch(NULL, sleeper, &c, &err);
	if (rc == 0) {
		pid = hwt_collect_pid(c);
		hwt_collect_close(c);
	}
	CHECK("close before run kills and reaps the program",
	      rc == 0 && kill(pid, 0) < 0 && errno == ESRCH, "rc %d %s", rc,
	      err.msg);

	c = record(NULL, crasher, &end, &err);
	if (c) {
		pid = hwt_collect_pid(c);
		hwt_collect_close(c);
	}
	CHECK("close after a fault, without finish, kills and reaps",
	      c && end.reason == HWT_STOP_FAULT && end.signal == SIGBUS &&
	      kill(pid, 0) < 0 && errno == ESRCH, "%s (reason %d)", err.msg,
	      end.reason);
}

/* ---- threads and faults on compiled subjects ------------------------- */

static const char threads_src[] =
	"#include <pthread.h>\n"
	"#include <signal.h>\n"
	"#include <string.h>\n"
	"static volatile int handled;\n"
	"static void on_usr1(int s) { handled = s; }\n"
	"static void *work(void *a) { volatile long s = 0;\n"
	"  for (long i = 0; i < 1000; i++) s += i; return a; }\n"
	"static void *crash(void *a) { return (void *)(long)*(volatile int *)a; }\n"
	"int main(int argc, char **argv) { pthread_t t[3];\n"
	"  signal(SIGUSR1, on_usr1); signal(SIGUSR2, SIG_IGN);\n"
	"  raise(SIGUSR2); raise(SIGUSR1);\n"
	"  for (int i = 0; i < 3; i++) pthread_create(&t[i], 0, work, 0);\n"
	"  for (int i = 0; i < 3; i++) pthread_join(t[i], 0);\n"
	"  if (argc > 1 && !strcmp(argv[1], \"crash\")) {\n"
	"    pthread_create(&t[0], 0, crash, 0); pthread_join(t[0], 0); }\n"
	"  if (argc > 1 && !strcmp(argv[1], \"trap\")) __asm__ volatile(\"int3\");\n"
	"  return handled == SIGUSR1 ? 5 : 1; }\n";

static char subject[512];

static void test_threads(void)
{
	char *argv[] = { subject, NULL };
	const struct hwt_collect_thread *t;
	struct hwt_collect_end end;
	struct hwt_err err = {0};
	struct hwt_collector *c = record(NULL, argv, &end, &err);
	size_t n = 0, asyncs = 0, workers_ok = 0;
	bool all_ok = true;
	char why[700] = "";

	CHECK("threaded program runs to its exit status",
	      c && end.reason == HWT_STOP_EXITED && end.status == 5,
	      "%s (reason %d status %d)", err.msg, end.reason, end.status);
	if (!c)
		return;
	n = hwt_collect_threads(c, &t);
	for (size_t i = 0; i < n; i++) {
		struct history h = decode(&t[i]);

		if (!h.ok) {
			all_ok = false;
			snprintf(why, sizeof(why), "thread %d: %s",
				 (int)t[i].tid, h.why);
		}
		asyncs += h.asyncs;
		/* Each worker ran its 1000-iteration loop. */
		workers_ok += i > 0 && t[i].exited && h.n > 5000;
		history_free(&h);
	}
	CHECK("every thread has its own decodable history",
	      n == 4 && all_ok && workers_ok == 3 &&
	      t[0].tid == hwt_collect_pid(c),
	      "%zu threads, %zu workers complete %s", n, workers_ok, why);
	CHECK("only the caught signal shows as an asynchronous transfer",
	      asyncs == 1, "%zu async transfers", asyncs);
	hwt_collect_close(c);
}

static void test_fault_in_thread(void)
{
	char *argv[] = { subject, "crash", NULL };
	const struct hwt_collect_thread *t;
	struct hwt_collect_end end;
	struct hwt_err err = {0};
	struct hwt_collector *c = record(NULL, argv, &end, &err);
	char core[] = "/tmp/hwt-test-core-XXXXXX";
	bool covered = false, last_ok = false;
	pid_t core_pid = 0;
	int core_sig = 0, fd, rc;
	size_t n;

	CHECK("a fault in a second thread is reported for that thread",
	      c && end.reason == HWT_STOP_FAULT && end.signal == SIGSEGV &&
	      end.tid != hwt_collect_pid(c),
	      "%s (reason %d signal %d tid %d)", err.msg, end.reason,
	      end.signal, (int)end.tid);
	if (!c)
		return;
	n = hwt_collect_threads(c, &t);
	for (size_t i = 0; i < n; i++)
		if (t[i].tid == end.tid) {
			struct history h = decode(&t[i]);

			last_ok = h.ok && h.n && h.pc[h.n - 1] == end.pc;
			history_free(&h);
		}
	CHECK("the faulting thread's history ends at the fault", last_ok,
	      "fault pc %llx", (unsigned long long)end.pc);
	fd = mkstemp(core);
	if (fd >= 0)
		close(fd);
	rc = hwt_collect_write_core(c, core, &err);
	CHECK("the core puts the faulting thread first",
	      rc == 0 && core_first_prstatus(core, &core_pid, &core_sig,
					     end.pc, &covered) &&
	      core_pid == end.tid && core_sig == SIGSEGV && covered,
	      "rc %d %s; first thread %d sig %d", rc, err.msg, (int)core_pid,
	      core_sig);
	unlink(core);
	rc = hwt_collect_finish(c, &end, &err);
	CHECK("finish after a fault in a thread reaps the whole process",
	      rc == 0 && end.reason == HWT_STOP_SIGNALED &&
	      end.signal == SIGSEGV, "rc %d %s", rc, err.msg);
	hwt_collect_close(c);
}

static void test_int3(void)
{
	char *argv[] = { subject, "trap", NULL };
	const struct hwt_collect_thread *t;
	struct hwt_collect_end end;
	struct hwt_err err = {0};
	struct hwt_collector *c = record(NULL, argv, &end, &err);
	struct history h = {0};

	CHECK("the program's own int3 is a fatal SIGTRAP, not a step",
	      c && end.reason == HWT_STOP_FAULT && end.signal == SIGTRAP,
	      "%s (reason %d signal %d)", err.msg, end.reason, end.signal);
	if (!c)
		return;
	if (hwt_collect_threads(c, &t) >= 1)
		h = decode(&t[0]);
	CHECK("int3 is executed: the history ends just after it",
	      h.ok && h.n >= 2 && h.pc[h.n - 1] == end.pc &&
	      h.pc[h.n - 2] + 1 == end.pc, "%s", h.why);
	history_free(&h);
	hwt_collect_close(c);
}

int main(void)
{
	struct hwt_cpu_info cpu = hwt_collect_cpu_info();

	CHECK("cpu identity is read", cpu.vendor[0] && cpu.family > 0,
	      "vendor '%s' family %d", cpu.vendor, cpu.family);
	RUN(test_registry_and_options);
	RUN(test_exit_and_history);
	RUN(test_exit_status_and_wrap);
	RUN(test_fatal_signal_and_core);
	RUN(test_caught_signal);
	RUN(test_close_kills);
	/* Static: its startup is a few ten thousand instructions. */
	if (subject_build(threads_src, "threads", "-pthread", subject,
			  sizeof(subject))) {
		RUN(test_threads);
		RUN(test_fault_in_thread);
		RUN(test_int3);
		subject_remove(subject);
	} else {
		printf("SKIP collect threads: no C compiler with static "
		       "libc to build the subject\n");
	}
	return check_exit();
}
