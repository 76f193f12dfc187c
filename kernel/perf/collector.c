/* collector.c - what the perf backends share: run a program with a trace
 * event that turns on at its execve, wait for it (no ptrace, no stepping:
 * the hardware records), read the AUX area and the MMAP2 sideband.
 *
 * The child is forked blocked on a pipe so the event can be opened on its
 * pid before it runs anything of the program; closing the pipe's write
 * end releases it to execvp. The event is per thread: perf refuses to map
 * the buffer of an inherited per-thread event (all children would write
 * into one buffer), so threads the program creates are not traced; see
 * docs/backends.md. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../held.h"
#include "perf.h"

struct perf_collector {
	struct hwt_collector base;
	const struct hwt_perf_kind *kind;
	struct hwt_perf_event ev;
	bool snapshot;
	bool reaped;
	struct hwt_held held;     /* the program, until it runs */
	int pidfd;
	const char *prog;
	struct hwt_perf_buf trace;
	struct hwt_perf_stats stats;
	struct hwt_modset mods;
	struct hwt_collect_thread out;
	bool have_out;
};

static struct perf_collector *perf_of(struct hwt_collector *c)
{
	return (struct perf_collector *)c;
}

int hwt_perf_available(const struct hwt_perf_kind *k, struct hwt_err *err)
{
	struct hwt_pmu pmu;

	return hwt_pmu_open(NULL, k->pmu, k->what, &pmu, err);
}

static void kill_and_reap(struct perf_collector *c)
{
	int status;

	if (c->base.pid <= 0 || c->reaped)
		return;
	kill(c->base.pid, SIGKILL);
	while (waitpid(c->base.pid, &status, 0) < 0 && errno == EINTR)
		;
	c->reaped = true;
}

void hwt_perf_close(struct hwt_collector *base)
{
	struct perf_collector *c = perf_of(base);

	/* Killed before the pipe closes: an unreleased child never execs. */
	kill_and_reap(c);
	hwt_held_close(&c->held);
	if (c->pidfd >= 0)
		close(c->pidfd);
	hwt_perf_event_close(&c->ev);
	hwt_perf_buf_free(&c->trace);
	hwt_modset_free(&c->mods);
	free(c);
}

int hwt_perf_launch(const struct hwt_perf_kind *k,
		    const struct hwt_collect_opts *opts, char *const argv[],
		    struct hwt_collector **out, struct hwt_err *err)
{
	struct perf_collector *c;
	struct hwt_perf_attr attr = { 0 };
	struct hwt_pmu pmu;
	int rc;
	pid_t pid;

	if (!(c = calloc(1, sizeof(*c))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	c->base.backend = k->backend;
	c->base.tracer_tid = gettid();
	c->kind = k;
	c->held.go_fd = c->held.err_fd = c->pidfd = -1;
	c->ev.fd = -1;
	c->snapshot = opts->perf_snapshot;
	c->prog = argv[0];
	c->trace.max = opts->buffer_size;
	c->trace.granule = k->granule;
	if ((rc = hwt_pmu_open(NULL, k->pmu, k->what, &pmu, err)) < 0 ||
	    (rc = k->configure(&pmu, opts, &attr, err)) < 0)
		goto fail;
	attr.type = pmu.type;
	if ((rc = hwt_held_fork(argv, &c->held, err)) < 0)
		goto fail;
	pid = c->held.pid;
	c->base.pid = pid;
	if ((rc = hwt_perf_event_open(&attr, pid, k->what, &c->ev, err)) < 0 ||
	    (k->setup && (rc = k->setup(&c->ev, opts, err)) < 0) ||
	    (rc = hwt_perf_event_map(&c->ev,
				     hwt_perf_aux_size_for(opts->buffer_size),
				     c->snapshot, err)) < 0)
		goto fail;
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (c->pidfd < 0) {
		rc = hwt_err_set(err, errno, "pidfd_open: %s (Linux 5.3 or "
				 "later is needed)", strerror(errno));
		goto fail;
	}
	*out = &c->base;
	return 0;
fail:
	hwt_perf_close(&c->base);
	return rc;
}

static int on_mmap(void *arg, const struct hwt_perf_mmap *m,
		   struct hwt_err *err)
{
	struct perf_collector *c = arg;

	return hwt_modset_add(&c->mods, m->path, m->addr, m->pgoff, err);
}

/* Read what the kernel has written so far. */
static int collect(struct perf_collector *c, struct hwt_err *err)
{
	int rc = hwt_perf_ring_records(&c->ev.ring, &c->stats, on_mmap, c,
				       err);

	if (rc < 0 || c->snapshot)
		return rc;
	return hwt_perf_aux_drain(&c->ev.ring, &c->trace, err);
}

static int wait_end(struct perf_collector *c, struct hwt_err *err)
{
	int status, e = 0;

	while (waitpid(c->base.pid, &status, 0) < 0)
		if (errno != EINTR)
			return hwt_err_set(err, errno, "waiting for %s: %s",
					   c->prog, strerror(errno));
	c->reaped = true;
	c->base.state = HWT_COLLECTOR_ENDED;
	if ((e = hwt_held_exec_error(&c->held, c->prog, err)) < 0)
		return e;
	if (WIFEXITED(status)) {
		c->base.end.reason = HWT_STOP_EXITED;
		c->base.end.status = WEXITSTATUS(status);
	} else {
		c->base.end.reason = HWT_STOP_SIGNALED;
		c->base.end.signal = WTERMSIG(status);
	}
	return 0;
}

int hwt_perf_run(struct hwt_collector *base, struct hwt_err *err)
{
	struct perf_collector *c = perf_of(base);
	struct pollfd fds[2];
	int rc;

	hwt_held_release(&c->held);
	fds[0] = (struct pollfd){ .fd = c->pidfd, .events = POLLIN };
	fds[1] = (struct pollfd){ .fd = c->ev.fd, .events = POLLIN };
	for (;;) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return hwt_err_set(err, errno, "poll: %s",
					   strerror(errno));
		}
		if (fds[1].revents & POLLIN &&
		    (rc = collect(c, err)) < 0)
			return rc;
		/* The event's task is gone: it will say nothing more. */
		if (fds[1].revents & (POLLHUP | POLLERR))
			fds[1].fd = -1;
		if (fds[0].revents)
			break;
	}
	if ((rc = wait_end(c, err)) < 0 || (rc = collect(c, err)) < 0 ||
	    (c->snapshot &&
	     (rc = hwt_perf_aux_snapshot(&c->ev.ring, &c->trace, err)) < 0))
		return rc;
	c->out = (struct hwt_collect_thread){
		.tid = c->base.pid,
		.format = c->kind->format,
		.trace = c->trace.data,
		.trace_size = c->trace.len,
		.lost_bytes = c->trace.dropped,
		.exited = true,
	};
	c->have_out = true;
	return 0;
}

int hwt_perf_write_core(struct hwt_collector *base, const char *path,
			struct hwt_err *err)
{
	return hwt_err_set(err, ENOTSUP, "the %s backend does not stop "
			   "programs at faults, so it writes no core; use "
			   "--backend ptrace for a core", base->backend->name);
}

int hwt_perf_finish(struct hwt_collector *base, struct hwt_err *err)
{
	return hwt_err_set(err, ENOTSUP, "the %s backend ends with the "
			   "program; there is no fault stop to finish",
			   base->backend->name);
}

size_t hwt_perf_threads(struct hwt_collector *base,
			const struct hwt_collect_thread **threads)
{
	struct perf_collector *c = perf_of(base);

	*threads = c->have_out ? &c->out : NULL;
	return c->have_out ? 1 : 0;
}

size_t hwt_perf_modules(struct hwt_collector *base,
			const struct hwt_collect_module **modules)
{
	struct perf_collector *c = perf_of(base);

	*modules = c->mods.v;
	return c->mods.n;
}
