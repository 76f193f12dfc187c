// SPDX-License-Identifier: BSD-2-Clause
/* backend.c - the module backend: software branch recording by
 * hwtrace.ko, driven through /dev/hwtrace.
 *
 * A recorder over the seized-program layer (collect/seize/seize.h): the program
 * is forked held, followed with ptrace (never stepped: the module
 * records), each thread attached to the module and enabled before its
 * first instruction (the first before its execve, the others at their
 * clone stop). The module reports no mappings, so /proc/PID/maps is read
 * where the address space is complete: after exec, at each thread's exit
 * stop, at a fault, and at the entry of every call that can unmap code
 * (munmap, mremap, MAP_FIXED mmap), so a library dlclose'd before the end
 * is still among the modules. The rings are drained when the process is
 * gone or held at a fault (the module keeps an exited thread's data until
 * we detach it). The module recorded a faulting instruction as the
 * thread's last address (it records the next pc after each step, and the
 * faulting one never completed). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "os/proc.h"
#include "seize/seize.h"
#include "module.h"
#include "array.h"

struct mod_thread {
	pid_t tid;
	bool from_exec;           /* attached before the program's execve */
	struct hwt_mod_trace trace;
};

struct mod_collector {
	struct hwt_collector base;
	int dev;                  /* the /dev/hwtrace session */
	struct hwt_seize seize;   /* the program and its threads */
	uint32_t ring_size;
	uint32_t cfg_flags;       /* HWTRACE_CFG_* for every thread */
	struct mod_thread *threads;
	size_t nthreads, alloc;
	struct hwt_collect_thread *out;
	struct hwt_modset mods;
};

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

/* attach: attach, configure and enable one thread not yet run. */
static int mod_attach(void *ctx, pid_t tid, bool first, struct hwt_err *err)
{
	struct mod_collector *c = ctx;
	struct hwtrace_attach at = { .sz = sizeof(at), .tid = (__u32)tid };
	struct hwtrace_config cf = {
		.sz = sizeof(cf), .tid = (__u32)tid,
		.ring_size = c->ring_size, .flags = c->cfg_flags,
	};
	struct mod_thread *t;

	if (c->nthreads == HWT_BUNDLE_MAX_THREADS)
		return 0;   /* a bundle holds no more: later ones run free */
	if (HWT_ARRAY_RESERVE(c->threads, c->alloc, c->nthreads + 1, 8))
		return hwt_err_set(err, ENOMEM, "out of memory");
	if (ioctl(c->dev, HWTRACE_IOC_ATTACH, &at) < 0)
		return ioctl_err(err, "ATTACH", tid);
	if (ioctl(c->dev, HWTRACE_IOC_CONFIG, &cf) < 0)
		return ioctl_err(err, "CONFIG", tid);
	if (ioctl(c->dev, HWTRACE_IOC_ENABLE, &at) < 0)
		return ioctl_err(err, "ENABLE", tid);
	t = &c->threads[c->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->from_exec = first;
	return 0;
}

/* exec, exiting, maps_change: the address space is complete here (at an
 * exit stop: still there; at a syscall entry: not yet changed). */
static int mod_read_maps(void *ctx, pid_t tid, struct hwt_err *err)
{
	struct mod_collector *c = ctx;

	return hwt_modset_add_maps(&c->mods, c->seize.pid, err);
}

static const struct hwt_seize_ops mod_ops = {
	.attach = mod_attach,
	.exec = mod_read_maps,
	.exiting = mod_read_maps,
	.maps_change = mod_read_maps,
};

static void mod_close(struct hwt_collector *base)
{
	struct mod_collector *c = mod_of(base);

	hwt_seize_close(&c->seize);
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

	if (opts->buffer_size > HWTRACE_RING_MAX)
		return hwt_err_set(err, EINVAL, "hwtrace.ko rings hold at most "
				   "%u MiB per thread; pick a smaller --size",
				   HWTRACE_RING_MAX >> 20);
	if (!(c = calloc(1, sizeof(*c))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	c->base.backend = &hwt_backend_module;
	c->base.tracer_tid = gettid();
	hwt_seize_init(&c->seize, &mod_ops, c, argv[0]);
	c->ring_size = (uint32_t)(opts->buffer_size -
				  opts->buffer_size % HWTRACE_BLOCK_SIZE);
	c->cfg_flags = HWTRACE_CFG_WRAP |
		       (opts->block_step ? HWTRACE_CFG_BLOCKSTEP : 0);
	c->dev = open(HWTRACE_DEVICE, O_RDWR | O_CLOEXEC);
	if (c->dev < 0) {
		rc = hwt_err_set(err, errno, "cannot open %s: %s",
				 HWTRACE_DEVICE, strerror(errno));
		goto fail;
	}
	if ((rc = hwt_seize_start(&c->seize, argv, opts->live_control,
				  &c->base.pid, err)) < 0)
		goto fail;
	*out = &c->base;
	return 0;
fail:
	mod_close(&c->base);
	return rc;
}

/* Copy a thread's ring out (DRAIN until nothing is left) and convert.
 * peek: a snapshot of a live program, the ring left as it is (a buffer of
 * the ring's size takes it whole in one call). */
static int drain_thread(struct mod_collector *c, struct mod_thread *t,
			bool peek, struct hwt_err *err)
{
	struct hwt_perf_buf raw = { .max = c->ring_size, .granule = 1 };
	size_t bufsz = c->ring_size;
	uint8_t *buf = malloc(bufsz);
	int rc = 0;

	if (!buf)
		return hwt_err_set(err, ENOMEM, "out of memory");
	/* Each drain converts the whole history anew. */
	hwt_perf_buf_free(&t->trace.chunks);
	memset(&t->trace, 0, sizeof(t->trace));
	for (;;) {
		struct hwtrace_drain d = {
			.sz = sizeof(d), .tid = (__u32)t->tid,
			.buf = (__u64)(uintptr_t)buf, .buf_size = bufsz,
			.flags = peek ? HWTRACE_DRAIN_PEEK : 0,
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
		    !d.more || d.bytes == 0 || peek)
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

/* The recording is over (process gone or held at a fault), or, with
 * peek, a live program is stopped: drain every ring and describe the
 * threads. */
static int collect_threads(struct mod_collector *c, bool peek,
			   struct hwt_err *err)
{
	int rc;

	free(c->out);
	if (!(c->out = calloc(c->nthreads ? c->nthreads : 1, sizeof(*c->out))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < c->nthreads; i++) {
		struct mod_thread *t = &c->threads[i];

		if ((rc = drain_thread(c, t, peek, err)) < 0)
			return rc;
		c->out[i] = (struct hwt_collect_thread){
			.tid = t->tid,
			.format = HWT_COLLECT_FMT_SW,
			.trace = t->trace.chunks.data,
			.trace_size = t->trace.chunks.len,
			.lost_insns = t->trace.lost_insns,
			.insn_total = t->trace.insn_total,
			.exited = hwt_seize_exited(&c->seize, t->tid),
		};
	}
	return 0;
}

static int mod_run(struct hwt_collector *base, struct hwt_err *err)
{
	struct mod_collector *c = mod_of(base);
	int rc = hwt_seize_run(&c->seize, err);

	if (c->seize.reaped || c->seize.faulted) {
		c->base.end = c->seize.end;
		c->base.state = c->seize.faulted ? HWT_COLLECTOR_FAULTED :
			HWT_COLLECTOR_ENDED;
	}
	if (rc < 0)
		return rc;
	/* The address space as it is at the fault. */
	if (c->seize.faulted &&
	    (rc = hwt_modset_add_maps(&c->mods, c->seize.pid, err)) < 0)
		return rc;
	return collect_threads(c, false, err);
}

static int mod_write_core(struct hwt_collector *base, const char *path,
			  struct hwt_err *err)
{
	return hwt_seize_write_core(&mod_of(base)->seize, path, err);
}

static int mod_finish(struct hwt_collector *base, struct hwt_err *err)
{
	struct mod_collector *c = mod_of(base);
	int rc = hwt_seize_finish(&c->seize, err);

	c->base.state = HWT_COLLECTOR_ENDED;
	if (c->seize.reaped)
		c->base.end = c->seize.end;
	return rc;
}

static size_t mod_threads(struct hwt_collector *base,
			  const struct hwt_collect_thread **threads)
{
	struct mod_collector *c = mod_of(base);
	struct hwt_err why = { 0 };

	/* Live and stopped: the history so far, rings left as they are. */
	if (c->seize.live && base->state != HWT_COLLECTOR_ENDED &&
	    collect_threads(c, true, &why) < 0) {
		free(c->out);
		c->out = NULL;
	}
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

/* ---- live control (collect/seize/live.c) ------------------------------ */

/* A program launched without live_control is still held before its
 * execve: bring it to its first instruction on the first live call. */
static int mod_live_start(struct hwt_collector *base, struct hwt_err *err)
{
	return hwt_seize_live_start(&mod_of(base)->seize, err);
}

/* The process is gone or let go: the whole recording, drained. */
static int mod_end(struct mod_collector *c, struct hwt_err *err)
{
	c->base.state = HWT_COLLECTOR_ENDED;
	if (c->seize.reaped)
		c->base.end = c->seize.end;
	return collect_threads(c, false, err);
}

static int mod_resume(struct hwt_collector *base,
		      const struct hwt_resume_opts *opts,
		      struct hwt_collect_event *event, struct hwt_err *err)
{
	struct mod_collector *c = mod_of(base);
	int rc = hwt_seize_resume(&c->seize, opts, event, err);

	if (rc == 0 && hwt_seize_event_ends(event))
		return mod_end(c, err);
	return rc;
}

static size_t mod_live_tids(struct hwt_collector *base, pid_t *tids,
			    size_t cap)
{
	return hwt_seize_live_tids(&mod_of(base)->seize, tids, cap);
}

static int mod_regset(struct hwt_collector *base, pid_t tid, int nt_type,
		      void *buf, size_t *len, bool write, struct hwt_err *err)
{
	return hwt_seize_regset(&mod_of(base)->seize, tid, nt_type, buf, len,
				write, err);
}

/* The recording so far is drained first (the module drops a thread's
 * data when it is detached); then the module lets the threads go (it
 * clears its trap flag when they next run) and ptrace detaches. */
static int mod_detach(struct hwt_collector *base, struct hwt_err *err)
{
	struct mod_collector *c = mod_of(base);
	int rc = mod_end(c, err);

	for (size_t i = 0; i < c->nthreads; i++) {
		struct hwtrace_attach at = {
			.sz = sizeof(at), .tid = (__u32)c->threads[i].tid,
		};

		/* An exited thread's data goes too: ENOENT-like errors
		 * leave nothing to undo. */
		ioctl(c->dev, HWTRACE_IOC_DETACH, &at);
	}
	if (rc == 0)
		return hwt_seize_detach(&c->seize, err);
	hwt_seize_detach(&c->seize, NULL);
	return rc;
}

const struct hwt_backend hwt_backend_module = {
	.name = "module",
	.caps = HWT_COLLECT_CAP_LIVE | HWT_COLLECT_CAP_WATCH |
		HWT_COLLECT_CAP_BLOCK_STEP |
		HWT_COLLECT_CAP_CORE | HWT_COLLECT_CAP_BUNDLE,
	.available = mod_available,
	.launch = mod_launch,
	.run = mod_run,
	.write_core = mod_write_core,
	.finish = mod_finish,
	.threads = mod_threads,
	.modules = mod_modules,
	.close = mod_close,
	/* attach stays NULL: see docs/backends.md, "Live control". */
	.live_start = mod_live_start,
	.resume = mod_resume,
	.live_tids = mod_live_tids,
	.regset = mod_regset,
	.detach = mod_detach,
};
