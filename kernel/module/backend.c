/* backend.c - the module backend: software branch recording by
 * hwtrace.ko, driven through /dev/hwtrace.
 *
 * The program is forked blocked on a pipe; we PTRACE_SEIZE it (never
 * stepping it: the module records, ptrace only reports exec, clone and
 * exit), attach it to the module and enable recording, then close the
 * pipe so it execs. Threads it creates are attached at their clone event,
 * before they run. At each thread's exit stop the process still has its
 * address space, so /proc/PID/maps is read there; the rings are drained
 * when the process is gone (the module keeps an exited thread's data
 * until we detach it).
 *
 * Signal-delivery stops are where a fault shows: a signal whose action is
 * to terminate (as the ptrace backend decides it, from /proc dispositions)
 * ends the recording with the process stopped there, every other thread
 * brought to a stop, so a core can be written and finish lets the signal
 * take effect. The module recorded the faulting instruction as the
 * thread's last address (it records the next pc after each step, and the
 * faulting one never completed). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../proc.h"
#include "../held.h"
#include "module.h"

#define TRACE_OPTIONS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | \
		       PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)

struct mod_thread {
	pid_t tid;
	bool from_exec;           /* attached before the program's execve */
	bool gone;                /* reaped */
	bool stopped;             /* held in a ptrace-stop after a fault */
	int pending_signal;       /* arrived while stopping for a fault */
	struct hwt_mod_trace trace;
};

struct mod_collector {
	struct hwt_collector base;
	int dev;                  /* the /dev/hwtrace session */
	struct hwt_held held;     /* the program, until it runs */
	bool reaped;
	const char *prog;
	uint32_t ring_size;
	struct mod_thread *threads;
	size_t nthreads, alloc;
	struct hwt_collect_thread *out;
	struct hwt_modset mods;
	struct mod_thread *fault;   /* after a FAULT end */
	siginfo_t fault_siginfo;
};

/* on_stop: the process stopped on a fatal signal. */
#define MOD_FAULTED 1

static struct mod_collector *mod_of(struct hwt_collector *c)
{
	return (struct mod_collector *)c;
}

static int mod_available(struct hwt_err *err)
{
	if (access(HWTRACE_DEVICE, F_OK) < 0)
		return hwt_err_set(err, ENODEV, "hwtrace.ko is not loaded (%s "
				   "missing): modprobe hwtrace or use "
				   "--backend ptrace", HWTRACE_DEVICE);
	if (access(HWTRACE_DEVICE, R_OK | W_OK) < 0)
		return hwt_err_set(err, errno, "cannot open %s: %s; ask for "
				   "access to the device or use --backend "
				   "ptrace", HWTRACE_DEVICE, strerror(errno));
	return 0;
}

static int ioctl_err(struct hwt_err *err, const char *what, pid_t tid)
{
	int e = errno;

	return hwt_err_set(err, e, "hwtrace.ko: %s of thread %d failed: %s%s",
			   what, (int)tid, strerror(e),
			   e == EBUSY ? " (another session records it)" :
			   e == EPERM ? " (no ptrace rights over it)" : "");
}

/* Attach, configure and enable one thread (stopped or not yet run). */
static int add_thread(struct mod_collector *c, pid_t tid, bool from_exec,
		      struct hwt_err *err)
{
	struct hwtrace_attach at = { .sz = sizeof(at), .tid = (__u32)tid };
	struct hwtrace_config cf = {
		.sz = sizeof(cf), .tid = (__u32)tid,
		.ring_size = c->ring_size, .flags = HWTRACE_CFG_WRAP,
	};
	struct mod_thread *t;

	if (c->nthreads == HWT_BUNDLE_MAX_THREADS)
		return 0;   /* a bundle holds no more: later ones run free */
	if (c->nthreads == c->alloc) {
		size_t n = c->alloc ? c->alloc * 2 : 8;

		t = realloc(c->threads, n * sizeof(*t));
		if (!t)
			return hwt_err_set(err, ENOMEM, "out of memory");
		c->threads = t;
		c->alloc = n;
	}
	if (ioctl(c->dev, HWTRACE_IOC_ATTACH, &at) < 0)
		return ioctl_err(err, "ATTACH", tid);
	if (ioctl(c->dev, HWTRACE_IOC_CONFIG, &cf) < 0)
		return ioctl_err(err, "CONFIG", tid);
	if (ioctl(c->dev, HWTRACE_IOC_ENABLE, &at) < 0)
		return ioctl_err(err, "ENABLE", tid);
	t = &c->threads[c->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->from_exec = from_exec;
	return 0;
}

static void mod_close(struct hwt_collector *base)
{
	struct mod_collector *c = mod_of(base);
	int status;

	/* Killed before the pipe closes: an unreleased child never execs. */
	if (c->base.pid > 0 && !c->reaped) {
		kill(c->base.pid, SIGKILL);
		/* Traced threads are ours to reap before the leader can be. */
		for (;;) {
			pid_t got = waitpid(-1, &status, __WALL | __WNOTHREAD);

			if (got == c->base.pid || (got < 0 && errno != EINTR))
				break;
		}
	}
	hwt_held_close(&c->held);
	/* Closing the session detaches every thread. */
	if (c->dev >= 0)
		close(c->dev);
	for (size_t i = 0; i < c->nthreads; i++)
		hwt_perf_buf_free(&c->threads[i].trace.chunks);
	free(c->threads);
	free(c->out);
	hwt_modset_free(&c->mods);
	free(c);
}

static int mod_launch(const struct hwt_collect_opts *opts, char *const argv[],
		      struct hwt_collector **out, struct hwt_err *err)
{
	struct mod_collector *c;
	int rc;
	pid_t pid;

	if (opts->buffer_size > HWTRACE_RING_MAX)
		return hwt_err_set(err, EINVAL, "hwtrace.ko rings hold at most "
				   "%u MiB per thread; pick a smaller --size",
				   HWTRACE_RING_MAX >> 20);
	if (!(c = calloc(1, sizeof(*c))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	c->base.backend = &hwt_backend_module;
	c->base.tracer_tid = gettid();
	c->held.go_fd = c->held.err_fd = -1;
	c->prog = argv[0];
	c->ring_size = (uint32_t)(opts->buffer_size -
				  opts->buffer_size % HWTRACE_BLOCK_SIZE);
	c->dev = open(HWTRACE_DEVICE, O_RDWR | O_CLOEXEC);
	if (c->dev < 0) {
		rc = hwt_err_set(err, errno, "cannot open %s: %s",
				 HWTRACE_DEVICE, strerror(errno));
		goto fail;
	}
	if ((rc = hwt_held_fork(argv, &c->held, err)) < 0)
		goto fail;
	pid = c->held.pid;
	c->base.pid = pid;
	if (ptrace(PTRACE_SEIZE, pid, 0, TRACE_OPTIONS) < 0) {
		rc = hwt_err_set(err, errno, "cannot follow %s with ptrace: "
				 "%s; check /proc/sys/kernel/yama/ptrace_scope",
				 argv[0], strerror(errno));
		goto fail;
	}
	if ((rc = add_thread(c, pid, true, err)) < 0)
		goto fail;
	*out = &c->base;
	return 0;
fail:
	mod_close(&c->base);
	return rc;
}

/* Copy a thread's ring out (DRAIN until nothing is left) and convert. */
static int drain_thread(struct mod_collector *c, struct mod_thread *t,
			struct hwt_err *err)
{
	struct hwt_perf_buf raw = { .max = c->ring_size, .granule = 1 };
	size_t bufsz = c->ring_size;
	uint8_t *buf = malloc(bufsz);
	int rc = 0;

	if (!buf)
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (;;) {
		struct hwtrace_drain d = {
			.sz = sizeof(d), .tid = (__u32)t->tid,
			.buf = (__u64)(uintptr_t)buf, .buf_size = bufsz,
		};

		if (ioctl(c->dev, HWTRACE_IOC_DRAIN, &d) < 0) {
			rc = ioctl_err(err, "DRAIN", t->tid);
			break;
		}
		if (d.bytes > bufsz) {
			rc = hwt_err_set(err, EPROTO, "hwtrace.ko returned %llu "
					 "bytes for a %zu-byte buffer",
					 (unsigned long long)d.bytes, bufsz);
			break;
		}
		if ((rc = hwt_perf_buf_append(&raw, buf, d.bytes, err)) < 0 ||
		    !d.more || d.bytes == 0)
			break;
	}
	free(buf);
	if (rc == 0) {
		struct hwt_err why = { 0 };

		/* Corrupt blocks are counted lost, not fatal. */
		rc = hwt_mod_convert(raw.data, raw.len, t->from_exec,
				     &t->trace, &why);
		if (rc < 0)
			*err = why;
	}
	hwt_perf_buf_free(&raw);
	return rc;
}

static struct mod_thread *find_thread(struct mod_collector *c, pid_t tid)
{
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i].tid == tid && !c->threads[i].gone)
			return &c->threads[i];
	return NULL;
}

/* A signal-delivery stop: a signal the program does not catch or ignore
 * and whose default action terminates is a fault. The thread stays at
 * the faulting instruction with the signal not yet delivered. */
static int on_signal(struct mod_collector *c, pid_t tid, int sig,
		     struct hwt_err *err)
{
	enum hwt_sig_action action;
	struct user_regs_struct regs;
	struct mod_thread *t = find_thread(c, tid);

	/* Unreadable status: the thread is being killed; let it go. */
	if (!t || hwt_proc_sig_action(tid, sig, &action, NULL) < 0 ||
	    action != HWT_SIG_KILLS)
		return 0;
	if (ptrace(PTRACE_GETREGS, tid, 0, &regs) < 0)
		return hwt_err_set(err, errno, "reading the registers of "
				   "faulting thread %d: %s", (int)tid,
				   strerror(errno));
	memset(&c->fault_siginfo, 0, sizeof(c->fault_siginfo));
	ptrace(PTRACE_GETSIGINFO, tid, 0, &c->fault_siginfo);
	c->fault = t;
	t->stopped = true;
	t->pending_signal = sig;
	memset(&c->base.end, 0, sizeof(c->base.end));
	c->base.end.reason = HWT_STOP_FAULT;
	c->base.end.signal = sig;
	c->base.end.tid = tid;
	c->base.end.pc = regs.rip;
	return MOD_FAULTED;
}

static int on_stop(struct mod_collector *c, pid_t tid, int status,
		   struct hwt_err *err)
{
	int event = status >> 16, sig = WSTOPSIG(status);
	unsigned long msg;
	int rc;

	switch (event) {
	case PTRACE_EVENT_CLONE:
		if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) < 0)
			return hwt_err_set(err, errno, "reading a new thread's "
					   "id: %s", strerror(errno));
		/* It has not run yet: attach before its first instruction. */
		if ((rc = add_thread(c, (pid_t)msg, false, err)) < 0)
			return rc;
		sig = 0;
		break;
	case PTRACE_EVENT_EXEC:
	case PTRACE_EVENT_EXIT:
		/* The address space is complete here (exit: still there). */
		if ((rc = hwt_modset_add_maps(&c->mods, c->base.pid, err)) < 0)
			return rc;
		sig = 0;
		break;
	case PTRACE_EVENT_STOP:
		/* A new thread's first stop, or a group-stop: keep the
		 * program's own stop semantics. */
		if (sig != SIGTRAP) {
			ptrace(PTRACE_LISTEN, tid, 0, 0);
			return 0;
		}
		sig = 0;
		break;
	default:
		/* A signal: a fault stops here, any other is delivered. */
		if ((rc = on_signal(c, tid, sig, err)) != 0)
			return rc;
		break;
	}
	/* ESRCH: it was killed meanwhile; its exit is reported later. */
	if (ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig) < 0 &&
	    errno != ESRCH)
		return hwt_err_set(err, errno, "resuming thread %d: %s",
				   (int)tid, strerror(errno));
	return 0;
}

/* A thread or the whole process is gone; true when it was the leader. */
static bool on_death(struct mod_collector *c, pid_t tid, int status)
{
	struct mod_thread *t = find_thread(c, tid);

	if (t) {
		t->gone = true;
		t->stopped = false;
	}
	if (tid != c->base.pid)
		return false;
	c->reaped = true;
	c->base.state = HWT_COLLECTOR_ENDED;
	memset(&c->base.end, 0, sizeof(c->base.end));
	if (WIFEXITED(status)) {
		c->base.end.reason = HWT_STOP_EXITED;
		c->base.end.status = WEXITSTATUS(status);
	} else {
		c->base.end.reason = HWT_STOP_SIGNALED;
		c->base.end.signal = WTERMSIG(status);
	}
	return true;
}

static bool all_held(const struct mod_collector *c)
{
	for (size_t i = 0; i < c->nthreads; i++)
		if (!c->threads[i].gone && !c->threads[i].stopped)
			return false;
	return true;
}

/* After a fault: bring every other thread to a ptrace-stop so the process
 * can be examined and its core written. Signals that arrive meanwhile are
 * held for finish; threads created meanwhile are attached and held at
 * their first stop. Returns MOD_FAULTED, or 0 when the process was killed
 * from outside meanwhile (c->end says how). */
static int quiesce(struct mod_collector *c, struct hwt_err *err)
{
	for (size_t i = 0; i < c->nthreads; i++)
		if (!c->threads[i].gone && !c->threads[i].stopped)
			ptrace(PTRACE_INTERRUPT, c->threads[i].tid, 0, 0);
	while (!all_held(c)) {
		struct mod_thread *t;
		unsigned long msg;
		int status, rc;
		pid_t tid = waitpid(-1, &status, __WALL | __WNOTHREAD);

		if (tid < 0) {
			if (errno == EINTR)
				continue;
			return hwt_err_set(err, errno, "waiting for the threads "
					   "of %s to stop: %s", c->prog,
					   strerror(errno));
		}
		if (!WIFSTOPPED(status)) {
			if (on_death(c, tid, status))
				return 0;
			continue;
		}
		if (status >> 16 == PTRACE_EVENT_CLONE &&
		    ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) == 0 &&
		    (rc = add_thread(c, (pid_t)msg, false, err)) < 0)
			return rc;
		if (!(t = find_thread(c, tid)))
			continue;     /* past the bundle's thread limit */
		t->stopped = true;
		if (!(status >> 16))
			t->pending_signal = WSTOPSIG(status);
	}
	return MOD_FAULTED;
}

/* The recording is over (process gone or held at a fault): drain every
 * ring and describe the threads. */
static int collect_threads(struct mod_collector *c, struct hwt_err *err)
{
	int rc;

	if ((rc = hwt_held_exec_error(&c->held, c->prog, err)) < 0)
		return rc;
	if (!(c->out = calloc(c->nthreads ? c->nthreads : 1, sizeof(*c->out))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < c->nthreads; i++) {
		struct mod_thread *t = &c->threads[i];

		if ((rc = drain_thread(c, t, err)) < 0)
			return rc;
		c->out[i] = (struct hwt_collect_thread){
			.tid = t->tid,
			.format = HWT_COLLECT_FMT_SW,
			.trace = t->trace.chunks.data,
			.trace_size = t->trace.chunks.len,
			.lost_insns = t->trace.lost_insns,
			.insn_total = t->trace.insn_total,
			.exited = t->gone || c->reaped,
		};
	}
	return 0;
}

static int mod_run(struct hwt_collector *base, struct hwt_err *err)
{
	struct mod_collector *c = mod_of(base);
	int rc;

	hwt_held_release(&c->held);
	for (;;) {
		int status;
		pid_t tid = waitpid(-1, &status, __WALL | __WNOTHREAD);

		if (tid < 0) {
			if (errno == EINTR)
				continue;
			return hwt_err_set(err, errno, "waiting for %s: %s",
					   c->prog, strerror(errno));
		}
		if (WIFSTOPPED(status)) {
			if ((rc = on_stop(c, tid, status, err)) < 0)
				return rc;
			if (rc == MOD_FAULTED)
				break;
			continue;
		}
		if (on_death(c, tid, status))
			break;
	}
	if (c->fault && !c->reaped) {
		if ((rc = quiesce(c, err)) < 0)
			return rc;
		if (rc == MOD_FAULTED) {
			/* The address space as it is at the fault. */
			if ((rc = hwt_modset_add_maps(&c->mods, c->base.pid,
						      err)) < 0)
				return rc;
			c->base.state = HWT_COLLECTOR_FAULTED;
		}
	}
	return collect_threads(c, err);
}

/* A process held at a fault by this backend is in the state the core
 * writer needs: every live thread in a ptrace-stop of this tracer. */
static int mod_write_core(struct hwt_collector *base, const char *path,
			  struct hwt_err *err)
{
	struct mod_collector *c = mod_of(base);
	pid_t *tids = calloc(c->nthreads ? c->nthreads : 1, sizeof(*tids));
	struct hwt_core_desc d = {
		.pid = c->base.pid, .fault_tid = c->fault->tid, .tids = tids,
		.siginfo = &c->fault_siginfo, .signal = c->base.end.signal,
	};
	int rc;

	if (!tids)
		return hwt_err_set(err, ENOMEM, "out of memory for a core");
	for (size_t i = 0; i < c->nthreads; i++)
		if (!c->threads[i].gone)
			tids[d.ntids++] = c->threads[i].tid;
	rc = hwt_core_write(&d, path, err);
	free(tids);
	return rc;
}

/* Deliver the fault's signal (and any held for other threads) and reap
 * the process; events on the way out are let through. */
static int mod_finish(struct hwt_collector *base, struct hwt_err *err)
{
	struct mod_collector *c = mod_of(base);

	for (size_t i = 0; i < c->nthreads; i++) {
		struct mod_thread *t = &c->threads[i];

		if (t->stopped)
			ptrace(PTRACE_CONT, t->tid, 0,
			       (void *)(long)t->pending_signal);
		t->stopped = false;
		t->pending_signal = 0;
	}
	while (!c->reaped) {
		int status;
		pid_t tid = waitpid(-1, &status, __WALL | __WNOTHREAD);

		if (tid < 0) {
			if (errno == EINTR)
				continue;
			c->base.state = HWT_COLLECTOR_ENDED;
			return hwt_err_set(err, errno, "waiting for %s to end: "
					   "%s", c->prog, strerror(errno));
		}
		if (!WIFSTOPPED(status))
			on_death(c, tid, status);
		else
			ptrace(PTRACE_CONT, tid, 0, (void *)(long)(status >> 16 ?
			       0 : WSTOPSIG(status)));
	}
	return 0;
}

static size_t mod_threads(struct hwt_collector *base,
			  const struct hwt_collect_thread **threads)
{
	struct mod_collector *c = mod_of(base);

	*threads = c->out;
	return c->out ? c->nthreads : 0;
}

static size_t mod_modules(struct hwt_collector *base,
			  const struct hwt_collect_module **modules)
{
	struct mod_collector *c = mod_of(base);

	*modules = c->mods.v;
	return c->mods.n;
}

const struct hwt_backend hwt_backend_module = {
	.name = "module",
	.available = mod_available,
	.launch = mod_launch,
	.run = mod_run,
	.write_core = mod_write_core,
	.finish = mod_finish,
	.threads = mod_threads,
	.modules = mod_modules,
	.close = mod_close,
};
