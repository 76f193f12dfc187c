// SPDX-License-Identifier: BSD-2-Clause
/*
 * hwt-collect-guest: the module backend of libhwt-collect against the
 * ptrace backend, through the public collector API, inside the guest
 * (tests/kernel/init). Prints PASS/FAIL lines; exits 0 when all passed,
 * 1 when one failed, 2 on a usage error.
 *
 *   compare [-l LIB] NAME PROG [ARGS]
 *                              record PROG with each backend; the
 *                              per-thread instruction addresses, the end
 *                              and the modules must agree; with -l, the
 *                              modules of both must also name a file
 *                              called LIB (a library PROG dlopen()s and
 *                              dlclose()s before it exits)
 *   fault NAME PROG [ARGS]     as compare for a program killed by a
 *                              fatal signal: both stop at the same pc,
 *                              the module backend writes a core, finish
 *                              delivers the signal
 *   nodev PROG                 without /dev/hwtrace the module backend
 *                              refuses with a clear error
 *   live NAME PROG SYM N STEPS [WSYM]
 *                              drive PROG under live control with each
 *                              backend: continue N times with a
 *                              breakpoint on function SYM, step STEPS
 *                              times, then continue to the end, passing
 *                              on every signal reported and, with WSYM,
 *                              watching writes of that 4-byte variable
 *                              throughout; every stop's event, pc and
 *                              stopped thread's history snapshot, and
 *                              the end, must agree
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hwt-collect.h"

#define ASYNC_BIT (1ull << 63)   /* user addresses never have it */
/* live: the entry starts a chunk (hwt-sw chunks mark no signal handler
 * entry at their first pc: see seq_same_live). */
#define START_BIT (1ull << 62)

static int failures;

static void pass(const char *name, const char *what)
{
	printf("PASS %s%s%s\n", name, what ? ": " : "", what ? what : "");
}

static void fail(const char *name, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures++;
}

/* One thread's history: addresses, ASYNC_BIT set on the first
 * instruction of a signal handler. */
struct seq {
	pid_t tid;
	uint64_t *pc;
	size_t n, alloc;
	bool matched;
};

struct run {
	const char *backend;
	struct hwt_collect_end end, finished;
	struct seq *threads;
	size_t nthreads;
	bool has_prog;            /* modules list names the program */
	bool has_lib;             /* ... and the library asked for */
	char mods[400];           /* the modules' file names, for messages */
	bool core_ok;             /* fault: an ELF core was written */
	uint64_t trace_bytes;     /* every thread's trace, summed */
	uint64_t insns;           /* ... and its instructions */
	char why[600];            /* a failure before the comparison */
};

static int push(struct seq *s, uint64_t v)
{
	if (s->n == s->alloc) {
		size_t n = s->alloc ? s->alloc * 2 : 4096;
		uint64_t *p = realloc(s->pc, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->pc = p;
		s->alloc = n;
	}
	s->pc[s->n++] = v;
	return 0;
}

/* Decode a thread's hwt-sw chunks into s. */
static int decode(const struct hwt_collect_thread *t, struct seq *s,
		  bool mark_starts, char *why, size_t whysz)
{
	size_t off = 0;

	s->tid = t->tid;
	if (t->format != HWT_COLLECT_FMT_SW) {
		snprintf(why, whysz, "thread %d: format %d is not hwt-sw",
			 (int)t->tid, (int)t->format);
		return -1;
	}
	if (t->lost_insns) {
		snprintf(why, whysz, "thread %d lost %llu instructions",
			 (int)t->tid, (unsigned long long)t->lost_insns);
		return -1;
	}
	while (off < t->trace_size) {
		struct hwt_sw_chunk_hdr h;
		struct hwt_sw_reader r;
		struct hwt_err err = { 0 };
		uint64_t count = 1;
		bool async;
		int rc;

		if (hwt_sw_chunk_hdr_unpack(t->trace + off,
					    t->trace_size - off, &h, &err) < 0 ||
		    h.payload_size > t->trace_size - off - HWT_SW_CHUNK_HDR_SIZE) {
			snprintf(why, whysz, "thread %d chunk at %zu: %s",
				 (int)t->tid, off, err.msg[0] ? err.msg :
				 "payload past the end");
			return -1;
		}
		hwt_sw_reader_init(&r, t->trace + off + HWT_SW_CHUNK_HDR_SIZE,
				   h.payload_size, h.first_pc);
		if (push(s, h.first_pc | (mark_starts ? START_BIT : 0)) < 0)
			return -1;
		while ((rc = hwt_sw_reader_next(&r, &async, &err)) ==
		       HWT_SW_NEXT) {
			if (push(s, r.pc | (async ? ASYNC_BIT : 0)) < 0)
				return -1;
			count++;
		}
		if (rc < 0 || count != h.insn_count || r.pc != h.last_pc) {
			snprintf(why, whysz, "thread %d chunk at %zu: %s "
				 "(%llu of %u instructions, last 0x%llx)",
				 (int)t->tid, off, rc < 0 ? err.msg : "bad chunk",
				 (unsigned long long)count, h.insn_count,
				 (unsigned long long)r.pc);
			return -1;
		}
		off += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
	}
	return 0;
}

/* The program's stdin: two bytes (threads.c reads one per worker). */
static void feed_stdin(void)
{
	int p[2];

	if (pipe(p) < 0)
		return;
	if (write(p[1], "xy", 2) != 2)
		perror("write");
	close(p[1]);
	dup2(p[0], 0);
	close(p[0]);
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

/* Record argv with one backend into r; false with r->why on failure. */
static bool record(const char *backend, char **argv, bool fault,
		   const char *lib, struct run *r)
{
	struct hwt_collect_opts opts = { .sz = sizeof(opts),
					 .backend = backend };
	const struct hwt_collect_thread *th;
	const struct hwt_collect_module *mods;
	struct hwt_collector *c;
	struct hwt_err err = { 0 };
	char prog[PATH_MAX], core[64];
	size_t n;
	bool ok = false;

	r->backend = backend;
	if (!realpath(argv[0], prog)) {
		snprintf(r->why, sizeof(r->why), "%s: %s", argv[0],
			 strerror(errno));
		return false;
	}
	feed_stdin();
	if (hwt_collect_launch(&opts, argv, &c, &err) < 0) {
		snprintf(r->why, sizeof(r->why), "launch: %s", err.msg);
		return false;
	}
	if (hwt_collect_run(c, &r->end, &err) < 0) {
		snprintf(r->why, sizeof(r->why), "run: %s", err.msg);
		goto out;
	}
	n = hwt_collect_threads(c, &th);
	if (!(r->threads = calloc(n ? n : 1, sizeof(*r->threads))))
		goto out;
	for (size_t i = 0; i < n; i++, r->nthreads++) {
		if (decode(&th[i], &r->threads[i], false, r->why,
			   sizeof(r->why)) < 0)
			goto out;
		r->trace_bytes += th[i].trace_size;
		r->insns += th[i].insn_total;
	}
	n = hwt_collect_modules(c, &mods);
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(mods[i].path, '/');
		size_t len = strlen(r->mods);

		base = base ? base + 1 : mods[i].path;
		r->has_prog |= strcmp(mods[i].path, prog) == 0;
		r->has_lib |= lib && strcmp(base, lib) == 0;
		snprintf(r->mods + len, sizeof(r->mods) - len, "%s%s",
			 len ? " " : "", base);
	}
	if (fault && r->end.reason == HWT_STOP_FAULT) {
		snprintf(core, sizeof(core), "/tmp/core.%s", backend);
		if (hwt_collect_write_core(c, core, &err) < 0) {
			snprintf(r->why, sizeof(r->why), "write_core: %s",
				 err.msg);
			goto out;
		}
		r->core_ok = is_core(core);
		unlink(core);
		if (hwt_collect_finish(c, &r->finished, &err) < 0) {
			snprintf(r->why, sizeof(r->why), "finish: %s", err.msg);
			goto out;
		}
	}
	ok = true;
out:
	hwt_collect_close(c);
	return ok;
}

static bool seq_equal(const struct seq *a, const struct seq *b)
{
	return a->n == b->n && !memcmp(a->pc, b->pc, a->n * sizeof(*a->pc));
}

/* Both backends record each thread from its first instruction (the
 * program's entry after exec, a new thread's first instruction after
 * clone), so no alignment is needed; a history that starts elsewhere is
 * a difference. Threads are matched by history: tids differ between the
 * two runs, and threads other than the first may appear in either order. */
static void compare_threads(const char *name, struct run *p, struct run *m)
{
	char test[128];
	size_t total = 0;

	snprintf(test, sizeof(test), "collect_%s_history", name);
	if (p->nthreads != m->nthreads || p->nthreads == 0) {
		fail(test, "ptrace recorded %zu threads, module %zu",
		     p->nthreads, m->nthreads);
		return;
	}
	if (!seq_equal(&p->threads[0], &m->threads[0])) {
		const struct seq *a = &p->threads[0], *b = &m->threads[0];
		size_t i = 0;

		while (i < a->n && i < b->n && a->pc[i] == b->pc[i])
			i++;
		fail(test, "first thread: ptrace %zu instructions, module %zu,"
		     " first difference at %zu (0x%llx vs 0x%llx)", a->n,
		     b->n, i, i < a->n ? (unsigned long long)a->pc[i] : 0ull,
		     i < b->n ? (unsigned long long)b->pc[i] : 0ull);
		return;
	}
	total += m->threads[0].n;
	for (size_t i = 1; i < m->nthreads; i++) {
		struct seq *b = &m->threads[i];
		bool found = false;

		for (size_t j = 1; j < p->nthreads && !found; j++)
			if (!p->threads[j].matched &&
			    seq_equal(&p->threads[j], b))
				found = p->threads[j].matched = true;
		if (!found) {
			fail(test, "module thread %zu (tid %d, %zu "
			     "instructions) matches no ptrace thread", i,
			     (int)b->tid, b->n);
			return;
		}
		total += b->n;
	}
	snprintf(test + strlen(test), sizeof(test) - strlen(test),
		 ": %zu threads, %zu instructions", m->nthreads, total);
	printf("PASS %s\n", test);
}

static bool end_equal(const struct hwt_collect_end *a,
		      const struct hwt_collect_end *b, bool fault)
{
	return a->reason == b->reason && a->status == b->status &&
	       a->signal == b->signal && (!fault || a->pc == b->pc);
}

static void free_run(struct run *r)
{
	for (size_t i = 0; i < r->nthreads; i++)
		free(r->threads[i].pc);
	free(r->threads);
}

static int cmd_compare(char **argv, bool fault, const char *lib)
{
	const char *name = argv[0];
	struct run p = { 0 }, m = { 0 };
	char test[128];

	if (!record("ptrace", argv + 1, fault, lib, &p) ||
	    !record("module", argv + 1, fault, lib, &m)) {
		snprintf(test, sizeof(test), "collect_%s", name);
		fail(test, "%s backend: %s", m.backend ? "module" : "ptrace",
		     m.backend ? m.why : p.why);
		goto out;
	}
	compare_threads(name, &p, &m);
	/* The module's records, as the collector hands them out (the
	 * ring's blocks less their scheduling records, joined): at most two
	 * bytes per instruction on ordinary code (docs/kernel-module.md). */
	snprintf(test, sizeof(test), "collect_%s_compact", name);
	{
		char what[96];

		snprintf(what, sizeof(what), "%llu bytes for %llu "
			 "instructions, %.2f per instruction",
			 (unsigned long long)m.trace_bytes,
			 (unsigned long long)m.insns,
			 m.insns ? (double)m.trace_bytes / (double)m.insns : 0);
		if (m.insns && m.trace_bytes <= 2 * m.insns)
			pass(test, what);
		else
			fail(test, "%s", what);
	}
	snprintf(test, sizeof(test), "collect_%s_end", name);
	if (end_equal(&p.end, &m.end, fault) &&
	    (!fault || p.end.reason == HWT_STOP_FAULT))
		pass(test, NULL);
	else
		fail(test, "ptrace ended %d status %d signal %d pc 0x%llx, "
		     "module %d status %d signal %d pc 0x%llx", p.end.reason,
		     p.end.status, p.end.signal,
		     (unsigned long long)p.end.pc, m.end.reason, m.end.status,
		     m.end.signal, (unsigned long long)m.end.pc);
	snprintf(test, sizeof(test), "collect_%s_modules", name);
	if (!(p.has_prog && m.has_prog))
		fail(test, "%s not among the modules (ptrace %s, module %s)",
		     argv[1], p.has_prog ? "has it" : "lacks it",
		     m.has_prog ? "has it" : "lacks it");
	else if (lib && !(p.has_lib && m.has_lib))
		fail(test, "%s not among the modules (ptrace %s: %s; module "
		     "%s: %s)", lib, p.has_lib ? "has it" : "lacks it", p.mods,
		     m.has_lib ? "has it" : "lacks it", m.mods);
	else
		pass(test, lib);
	if (!fault)
		goto out;
	snprintf(test, sizeof(test), "collect_%s_core", name);
	if (m.core_ok && p.core_ok)
		pass(test, NULL);
	else
		fail(test, "no ELF core written (ptrace %s, module %s)",
		     p.core_ok ? "ok" : "bad", m.core_ok ? "ok" : "bad");
	snprintf(test, sizeof(test), "collect_%s_finish", name);
	if (m.finished.reason == HWT_STOP_SIGNALED &&
	    end_equal(&p.finished, &m.finished, false) &&
	    m.finished.signal == m.end.signal)
		pass(test, NULL);
	else
		fail(test, "after finish: ptrace %d signal %d, module %d "
		     "signal %d", p.finished.reason, p.finished.signal,
		     m.finished.reason, m.finished.signal);
out:
	free_run(&p);
	free_run(&m);
	return failures != 0;
}

static int cmd_nodev(char **argv)
{
	struct hwt_collect_opts opts = { .sz = sizeof(opts),
					 .backend = "module" };
	struct hwt_collector *c = NULL;
	struct hwt_err err = { 0 };
	int rc = hwt_collect_launch(&opts, argv, &c, &err);

	if (rc == -ENODEV && strstr(err.msg, "/dev/hwtrace") &&
	    strstr(err.msg, "hwtrace"))
		pass("collect_module_absent", err.msg);
	else
		fail("collect_module_absent", "launch returned %d: \"%s\"", rc,
		     err.msg);
	if (rc == 0)
		hwt_collect_close(c);
	return failures != 0;
}

/* Launch prog with opts and say which backend the collector chose (NULL
 * when launch failed; err then says why). */
static const char *chosen(const struct hwt_collect_opts *opts, char **argv,
			  struct hwt_err *err)
{
	struct hwt_collector *c = NULL;
	const char *name = NULL;

	if (hwt_collect_launch(opts, argv, &c, err) == 0)
		name = hwt_collect_backend_name(c);
	hwt_collect_close(c);
	return name;
}

/* Which backend records without a name: want by default (the first
 * available in order of preference), ptrace when live control is asked
 * for, and the module backend gives live control when named. */
static int cmd_choice(const char *name, const char *want, char **argv)
{
	struct hwt_collect_opts opts = { .sz = sizeof(opts) };
	struct hwt_err err = { 0 };
	const char *got;
	char case_name[96];
	int rc;

	got = chosen(&opts, argv, &err);
	snprintf(case_name, sizeof(case_name), "collect_default_%s", name);
	if (got && !strcmp(got, want))
		pass(case_name, got);
	else
		fail(case_name, "chose %s, want %s (%s)", got ? got : "none",
		     want, err.msg);
	opts.live_control = true;
	got = chosen(&opts, argv, &err);
	snprintf(case_name, sizeof(case_name), "collect_default_live_%s", name);
	if (got && !strcmp(got, "ptrace"))
		pass(case_name, got);
	else
		fail(case_name, "chose %s, want ptrace (%s)",
		     got ? got : "none", err.msg);
	if (strcmp(want, "module"))
		return failures != 0;
	opts.backend = "module";
	got = chosen(&opts, argv, &err);
	rc = err.code;
	if (got && !strcmp(got, "module"))
		pass("collect_module_live_by_name", got);
	else
		fail("collect_module_live_by_name", "chose %s (%d: %s)",
		     got ? got : "none", rc, err.msg);
	return failures != 0;
}

/* ---- live control ------------------------------------------------------ */

/* A symbol's value in PROG's .symtab, read with <elf.h>; 0 if none. */
static uint64_t elf_symbol(const char *path, const char *name, bool *pie)
{
	struct stat st;
	const uint8_t *f;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	uint64_t v = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(*eh)) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f == MAP_FAILED)
		return 0;
	eh = (const Elf64_Ehdr *)f;
	*pie = eh->e_type == ET_DYN;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || !eh->e_shoff ||
	    eh->e_shentsize != sizeof(*sh) ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(*sh) >
	    (uint64_t)st.st_size)
		goto out;
	sh = (const Elf64_Shdr *)(f + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum && !v; i++) {
		const Elf64_Shdr *strs;
		const Elf64_Sym *sym;

		if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
			continue;
		strs = &sh[sh[i].sh_link];
		if (sh[i].sh_offset + sh[i].sh_size > (uint64_t)st.st_size ||
		    strs->sh_offset + strs->sh_size > (uint64_t)st.st_size)
			continue;
		sym = (const Elf64_Sym *)(f + sh[i].sh_offset);
		for (size_t j = 0; j < sh[i].sh_size / sizeof(*sym); j++) {
			const char *nm = (const char *)f + strs->sh_offset +
					 sym[j].st_name;
			size_t max = sym[j].st_name < strs->sh_size ?
				     strs->sh_size - sym[j].st_name : 0;

			/* Names are NUL-terminated within the table. */
			if (sym[j].st_value && strnlen(nm, max) < max &&
			    !strcmp(nm, name)) {
				v = sym[j].st_value;
				break;
			}
		}
	}
out:
	munmap((void *)f, (size_t)st.st_size);
	return v;
}

/* Where PIE program prog is loaded: its mapping of file offset 0. */
static uint64_t load_bias(pid_t pid, const char *prog)
{
	char maps[64], line[PATH_MAX + 128], file[PATH_MAX];
	unsigned long long lo, off;
	uint64_t bias = 0;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(maps, "r")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%*x %*s %llx %*s %*s %4095s", &lo, &off,
			   file) == 3 && off == 0 && !strcmp(file, prog)) {
			bias = lo;
			break;
		}
	fclose(f);
	return bias;
}

#define MAX_STOPS 32

/* One stop of a live session: the event, and the history snapshot of the
 * thread it is about. */
struct stop {
	struct hwt_collect_event ev;
	struct seq hist;
	bool first_thread;        /* about the program's initial thread */
};

struct live_run {
	struct stop stops[MAX_STOPS];
	size_t n;
	char why[600];
};

static int live_resume(struct hwt_collector *c, enum hwt_resume_kind kind,
		       int sig, const uint64_t *bp, const struct hwt_watch *w,
		       struct live_run *r, struct hwt_err *err)
{
	struct hwt_resume_action a = { .kind = kind, .signal = sig };
	struct hwt_resume_opts o = {
		.sz = sizeof(o), .actions = &a, .nactions = 1,
		.breakpoints = bp, .nbreakpoints = bp ? 1 : 0,
		.watches = w, .nwatches = w ? 1 : 0, .interrupt_fd = -1,
	};
	struct stop *st = &r->stops[r->n];
	const struct hwt_collect_thread *th;
	size_t n;
	int rc;

	if (r->n == MAX_STOPS)
		return hwt_err_set(err, E2BIG, "more than %d stops", MAX_STOPS);
	if ((rc = hwt_collect_resume(c, &o, &st->ev, err)) < 0)
		return rc;
	r->n++;
	printf("INFO live %s stop %zu: event %d tid %d pc 0x%llx signal %d\n",
	       hwt_collect_backend_name(c), r->n, st->ev.kind,
	       (int)st->ev.tid, (unsigned long long)st->ev.pc, st->ev.signal);
	if (st->ev.kind == HWT_EVENT_EXITED || st->ev.kind == HWT_EVENT_KILLED)
		return 0;
	n = hwt_collect_threads(c, &th);
	for (size_t i = 0; i < n; i++)
		if (th[i].tid == st->ev.tid) {
			st->first_thread = i == 0;
			if (decode(&th[i], &st->hist, true, r->why,
				   sizeof(r->why)) < 0)
				return hwt_err_set(err, EPROTO, "%s", r->why);
		}
	return 0;
}

/* Histories of one stop agree: the same addresses and the same handler
 * entries (where each backend starts its chunks may differ). */
static bool seq_same_live(const struct seq *p, const struct seq *m,
			  size_t *diff)
{
	for (*diff = 0; *diff < p->n && *diff < m->n; ++*diff)
		if ((p->pc[*diff] & ~START_BIT) != (m->pc[*diff] & ~START_BIT))
			return false;
	return p->n == m->n;
}

static int last_signal(const struct live_run *r)
{
	const struct hwt_collect_event *ev = r->n ? &r->stops[r->n - 1].ev
						  : NULL;

	return ev && ev->kind == HWT_EVENT_SIGNAL ? ev->signal : 0;
}

static bool live_session(const char *backend, char **argv, const char *sym,
			 int ncont, int nsteps, const char *wsym,
			 struct live_run *r)
{
	struct hwt_collect_opts opts = { .sz = sizeof(opts),
					 .backend = backend,
					 .live_control = true };
	struct hwt_collector *c = NULL;
	struct hwt_err err = { 0 };
	struct hwt_watch w = { .len = 4, .kind = HWT_WATCH_WRITE };
	const struct hwt_watch *wp;
	char prog[PATH_MAX];
	uint64_t bp, bias = 0;
	bool pie = false, ok = false;
	int rc = 0;

	if (!realpath(argv[0], prog) || !(bp = elf_symbol(prog, sym, &pie)) ||
	    (wsym && !(w.addr = elf_symbol(prog, wsym, &pie)))) {
		snprintf(r->why, sizeof(r->why), "no symbol %s%s%s in %s", sym,
			 wsym ? " or " : "", wsym ? wsym : "", argv[0]);
		return false;
	}
	feed_stdin();
	if (hwt_collect_launch(&opts, argv, &c, &err) < 0) {
		snprintf(r->why, sizeof(r->why), "launch: %s", err.msg);
		return false;
	}
	if (pie)
		bias = load_bias(hwt_collect_pid(c), prog);
	bp += bias;
	w.addr += wsym ? bias : 0;
	wp = wsym ? &w : NULL;
	/* A signal reported is passed on by the next resume. */
	for (int i = 0; rc == 0 && i < ncont; i++)
		rc = live_resume(c, HWT_RESUME_CONT, last_signal(r), &bp, wp, r,
				 &err);
	for (int i = 0; rc == 0 && i < nsteps; i++)
		rc = live_resume(c, HWT_RESUME_STEP, last_signal(r), &bp, wp, r,
				 &err);
	while (rc == 0 && r->n < MAX_STOPS &&
	       r->stops[r->n - 1].ev.kind != HWT_EVENT_EXITED &&
	       r->stops[r->n - 1].ev.kind != HWT_EVENT_KILLED)
		rc = live_resume(c, HWT_RESUME_CONT, last_signal(r), NULL, wp,
				 r, &err);
	if (rc < 0)
		snprintf(r->why, sizeof(r->why), "resume %zu: %s", r->n,
			 err.msg);
	else
		ok = true;
	hwt_collect_close(c);
	return ok;
}

static void free_live(struct live_run *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->stops[i].hist.pc);
}

static int cmd_live(char **argv)
{
	const char *name = argv[0], *sym = argv[2], *wsym = argv[5];
	int ncont = atoi(argv[3]), nsteps = atoi(argv[4]);

	/* A session that never stops again kills this tool (a failure the
	 * init script reports) instead of the whole guest run. */
	alarm(120);
	char *prog_argv[] = { argv[1], NULL };
	struct live_run p = { .n = 0 }, m = { .n = 0 };
	char test[160];
	size_t i, k;

	snprintf(test, sizeof(test), "collect_live_%s", name);
	if (!live_session("ptrace", prog_argv, sym, ncont, nsteps, wsym, &p) ||
	    !live_session("module", prog_argv, sym, ncont, nsteps, wsym,
			  &m)) {
		fail(test, "%s backend: %s", p.why[0] ? "ptrace" : "module",
		     p.why[0] ? p.why : m.why);
		goto out;
	}
	for (i = 0; i < p.n && i < m.n; i++) {
		const struct stop *a = &p.stops[i], *b = &m.stops[i];

		if (a->ev.kind != b->ev.kind || a->ev.pc != b->ev.pc ||
		    a->ev.signal != b->ev.signal ||
		    a->ev.status != b->ev.status ||
		    a->ev.data_addr != b->ev.data_addr ||
		    a->first_thread != b->first_thread)
			break;
		if (!seq_same_live(&a->hist, &b->hist, &k)) {
			fail(test, "stop %zu (event %d at 0x%llx): histories "
			     "differ: ptrace %zu instructions, module %zu, "
			     "first difference at %zu (0x%llx vs 0x%llx; bit "
			     "63: a signal handler's entry)", i, a->ev.kind,
			     (unsigned long long)a->ev.pc, a->hist.n,
			     b->hist.n, k, k < a->hist.n ?
			     (unsigned long long)a->hist.pc[k] : 0ull,
			     k < b->hist.n ? (unsigned long long)
			     (b->hist.pc[k] & ~START_BIT) : 0ull);
			goto out;
		}
	}
	if (i < p.n || i < m.n) {
		const struct hwt_collect_event *a = i < p.n ? &p.stops[i].ev
							    : NULL;
		const struct hwt_collect_event *b = i < m.n ? &m.stops[i].ev
							    : NULL;

		fail(test, "stop %zu: ptrace event %d pc 0x%llx sig %d, "
		     "module event %d pc 0x%llx sig %d (%zu and %zu stops)", i,
		     a ? (int)a->kind : -1, a ? (unsigned long long)a->pc : 0ull,
		     a ? a->signal : 0, b ? (int)b->kind : -1,
		     b ? (unsigned long long)b->pc : 0ull, b ? b->signal : 0,
		     p.n, m.n);
		goto out;
	}
	{
		/* The events, one letter each, for the log. */
		static const char letter[] = "SBWGITCXK";
		char kinds[MAX_STOPS + 1] = "";

		for (i = 0; i < p.n; i++) {
			unsigned kind = (unsigned)p.stops[i].ev.kind;

			kinds[i] = kind < sizeof(letter) - 1 ? letter[kind] : '?';
		}
		kinds[p.n] = '\0';
		snprintf(test + strlen(test), sizeof(test) - strlen(test),
			 ": %zu stops (%s), last history %zu instructions",
			 p.n, kinds, p.n > 1 ? p.stops[p.n - 2].hist.n : 0);
	}
	printf("PASS %s\n", test);
out:
	free_live(&p);
	free_live(&m);
	return failures != 0;
}

int main(int argc, char **argv)
{
	cpu_set_t one;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Tracer and tracee on one cpu, as hwt-guest does: under TCG a
	 * ptrace stop across cpus costs an IPI each. */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof(one), &one);
	if (argc >= 6 && !strcmp(argv[1], "compare") &&
	    !strcmp(argv[2], "-l"))
		return cmd_compare(argv + 4, false, argv[3]);
	if (argc >= 4 && !strcmp(argv[1], "compare"))
		return cmd_compare(argv + 2, false, NULL);
	if (argc >= 4 && !strcmp(argv[1], "fault"))
		return cmd_compare(argv + 2, true, NULL);
	if (argc >= 3 && !strcmp(argv[1], "nodev"))
		return cmd_nodev(argv + 2);
	if (argc >= 5 && !strcmp(argv[1], "choice"))
		return cmd_choice(argv[2], argv[3], argv + 4);
	if ((argc == 7 || argc == 8) && !strcmp(argv[1], "live"))
		return cmd_live(argv + 2);
	fprintf(stderr, "usage: hwt-collect-guest compare [-l LIB] NAME PROG "
		"[ARGS] | fault NAME PROG [ARGS] | nodev PROG | choice NAME "
		"BACKEND PROG | live NAME PROG SYM N STEPS [WSYM]\n");
	return 2;
}
