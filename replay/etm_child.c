// SPDX-License-Identifier: BSD-2-Clause
/* etm_child.c - the process plumbing that keeps an OpenCSD crash out of
 * the process opening a CoreSight history (etm_child.h says why).
 *
 * The child is a fork of the caller: it has the caller's image (the memory
 * OpenCSD reads through its callback) without copying anything, and it
 * does nothing but the decode and _exit, so atexit handlers, stdio
 * buffers, C++ destructors and leak checks of the caller never run in it,
 * and the caller's other threads (a debugger's) do not exist there.
 *
 * Wire format: struct hwt_etm_rec, fixed size, batched into writes of up
 * to HWT_ETM_BATCH bytes; the last record is END. The parent reads until
 * end of file, keeping partial records across reads, checks every record
 * and hands it on. A record after END, an offset past the trace, a record
 * the decoder rejects, or bytes that do not make a whole record end the
 * stream as a malformed one.
 *
 * In the child, crash signals get a handler that writes out the records
 * queued so far (they are whole: the count grows only after a copy) and
 * dies of the same signal, so the parent keeps everything decoded before
 * the crash and sees the signal. It also takes the place of the sanitizer
 * and libFuzzer handlers inherited from the caller, and the sanitizers'
 * death callback (libFuzzer's) becomes the same writing out, so that under
 * the fuzzer a crash in the child is a gap in the history and not a
 * finding written as the fuzzer's own. A sanitizer report in the child
 * still ends it with a nonzero status, which the parent turns into the
 * same kind of gap.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "etm_child.h"
#include "fdio.h"

uint64_t hwt_etm_test_crash_at;

/* Set by the sanitizer runtimes when linked in (the fuzz build). */
void __sanitizer_set_death_callback(void (*callback)(void))
	__attribute__((weak));

#define REC_SIZE sizeof(struct hwt_etm_rec)

static const int crash_signals[] = {
	SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS,
};

/* Child only: the records the crash handler writes out, and the stack it
 * runs on (a crash may be a stack overflow). */
static struct hwt_etm_out child_out;
static uint64_t child_recs;
static uint8_t child_altstack[65536];

/* Write all of d; false when the pipe is gone. */
static void flush(struct hwt_etm_out *o)
{
	if (hwt_write_all(o->fd, o->buf, o->n) < 0)
		_exit(2);        /* the parent stopped reading */
	o->n = 0;
}

void hwt_etm_out_put(struct hwt_etm_out *o, const struct hwt_etm_rec *r)
{
	if (hwt_etm_test_crash_at && ++child_recs == hwt_etm_test_crash_at)
		raise(SIGSEGV);
	if (o->n + REC_SIZE > sizeof(o->buf))
		flush(o);
	memcpy(o->buf + o->n, r, REC_SIZE);
	o->n += REC_SIZE;
}

/* Write out the whole records queued so far; the child is dying. */
static void write_queued(void)
{
	size_t n = child_out.n <= sizeof(child_out.buf) ? child_out.n : 0;

	hwt_write_all(child_out.fd, child_out.buf, n - n % REC_SIZE);
	child_out.n = 0;
}

static void on_crash(int sig)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	/* Only async-signal-safe calls: write, sigaction, raise. */
	write_queued();
	sigaction(sig, &dfl, NULL);
	/* Blocked while this handler runs: delivered, with the default
	 * action, on return (a fault would also recur there). */
	raise(sig);
}

static void child_setup(int fd, pid_t parent)
{
	struct sigaction sa = { .sa_handler = on_crash, .sa_flags = SA_ONSTACK };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	stack_t ss = { .ss_sp = child_altstack,
		       .ss_size = sizeof(child_altstack) };

	/* Die with the parent (a debugger killed mid-decode); a parent gone
	 * before this call is seen through getppid. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(2);
	/* A crash is expected here on damaged trace: no core file. */
	prctl(PR_SET_DUMPABLE, 0);
	/* Instead of libFuzzer's (which would write the input out as a
	 * finding): keep what was decoded before the report. */
	if (__sanitizer_set_death_callback)
		__sanitizer_set_death_callback(write_queued);
	sigaltstack(&ss, NULL);
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]);
	     i++)
		sigaction(crash_signals[i], &sa, NULL);
	/* A write to a closed pipe fails with EPIPE instead. */
	sigaction(SIGPIPE, &ign, NULL);
	child_out.fd = fd;
	child_out.n = 0;
	child_recs = 0;
}

static _Noreturn void child_main(int fd, pid_t parent, hwt_etm_child_fn child,
				 void *arg, uint64_t size)
{
	struct hwt_etm_rec end = { .type = HWT_ETM_REC_END, .at = size };
	int rc;

	child_setup(fd, parent);
	rc = child(arg, &child_out);
	if (rc == 0)
		hwt_etm_out_put(&child_out, &end);
	flush(&child_out);
	_exit(rc ? 1 : 0);
}

/* Read up to cap bytes into buf; 0 at end of file, -1 on error. */
static ssize_t read_some(int fd, uint8_t *buf, size_t cap)
{
	for (;;) {
		ssize_t r = read(fd, buf, cap);

		if (r >= 0 || errno != EINTR)
			return r;
	}
}

/* Reap pid; false when its status is unknown (the caller ignores
 * SIGCHLD, or reaped it itself). */
static bool reap(pid_t pid, int *status)
{
	for (;;) {
		pid_t w = waitpid(pid, status, 0);

		if (w == pid)
			return true;
		if (w < 0 && errno != EINTR)
			return false;
	}
}

struct run {
	uint64_t size, reached;  /* the furthest trace offset seen */
	bool ended;              /* END arrived */
	const char *bad;         /* what was malformed, or NULL */
};

/* Check and hand on the whole records in d; the count of bytes used.
 * Sets r->bad, or returns a negative errno from take. */
static ssize_t take_all(struct run *r, const uint8_t *d, size_t n,
			hwt_etm_take_fn take, void *ctx, struct hwt_err *err)
{
	size_t used = 0;

	for (; n - used >= REC_SIZE && !r->bad; used += REC_SIZE) {
		struct hwt_etm_rec rec;
		int rc;

		memcpy(&rec, d + used, REC_SIZE);
		if (r->ended) {
			r->bad = "a record after the end";
			break;
		}
		if (rec.at > r->size) {
			r->bad = "an offset past the trace";
			break;
		}
		if (rec.at > r->reached)
			r->reached = rec.at;
		if (rec.type == HWT_ETM_REC_END) {
			r->ended = true;
			continue;
		}
		rc = take(ctx, &rec, err);
		if (rc == -EPROTO)
			r->bad = "a record the decoder does not know";
		else if (rc)
			return rc;
	}
	return (ssize_t)used;
}

static void say_why(const struct run *r, bool known, int status, char *why,
		    size_t whylen)
{
	const char *name;
	char what[96];

	if (r->bad) {
		snprintf(what, sizeof(what), "sent %s", r->bad);
	} else if (known && WIFSIGNALED(status)) {
		name = sigabbrev_np(WTERMSIG(status));
		if (name)
			snprintf(what, sizeof(what), "crashed with SIG%s", name);
		else
			snprintf(what, sizeof(what), "crashed with signal %d",
				 WTERMSIG(status));
	} else if (known && WIFEXITED(status) && WEXITSTATUS(status)) {
		snprintf(what, sizeof(what), "failed with exit status %d",
			 WEXITSTATUS(status));
	} else if (!r->ended) {
		snprintf(what, sizeof(what), "stopped without finishing");
	} else {
		why[0] = '\0';
		return;
	}
	snprintf(why, whylen, "CoreSight decoder (OpenCSD) %s at trace offset "
		 "%llu; history after that point is lost", what,
		 (unsigned long long)r->reached);
}

int hwt_etm_child_run(hwt_etm_child_fn child, void *arg, uint64_t size,
		      hwt_etm_take_fn take, void *ctx, char *why, size_t whylen,
		      struct hwt_err *err)
{
	struct run r = { .size = size };
	size_t cap = HWT_ETM_BATCH + REC_SIZE, have = 0;
	uint8_t *buf = malloc(cap);
	int fds[2], status = 0, rc = 0;
	pid_t pid, self = getpid();
	bool known;

	why[0] = '\0';
	if (!buf)
		return hwt_err_set(err, ENOMEM, "out of memory");
	if (pipe2(fds, O_CLOEXEC) < 0) {
		rc = errno;
		free(buf);
		return hwt_err_set(err, rc, "cannot create a pipe to the "
				   "CoreSight decoder process: %s",
				   strerror(rc));
	}
	pid = fork();
	if (pid < 0) {
		rc = errno;
		close(fds[0]);
		close(fds[1]);
		free(buf);
		return hwt_err_set(err, rc, "cannot start the CoreSight decoder "
				   "process: %s; check the process limit "
				   "(ulimit -u) and free memory", strerror(rc));
	}
	if (pid == 0) {
		close(fds[0]);
		child_main(fds[1], self, child, arg, size);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n = read_some(fds[0], buf + have, cap - have), used;

		if (n < 0) {
			r.bad = "nothing readable";
			break;
		}
		if (n == 0) {
			if (have)
				r.bad = "a truncated record";
			break;
		}
		have += (size_t)n;
		used = take_all(&r, buf, have, take, ctx, err);
		if (used < 0) {
			rc = (int)used;
			break;
		}
		if (r.bad)
			break;
		have -= (size_t)used;
		memmove(buf, buf + used, have);
	}
	/* Stopped before the end: the child must not run on, or block on a
	 * full pipe, once nobody reads. */
	if (rc || r.bad)
		kill(pid, SIGKILL);
	close(fds[0]);
	free(buf);
	known = reap(pid, &status);
	if (rc)
		return rc;
	/* A child killed here because of its own bad record failed for that
	 * reason, not for the SIGKILL. */
	say_why(&r, known && !r.bad, status, why, whylen);
	return 0;
}
