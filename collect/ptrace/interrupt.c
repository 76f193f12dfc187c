// SPDX-License-Identifier: BSD-2-Clause
/* interrupt.c - make interrupt_fd stop a resumed program.
 *
 * The stepping loop blocks in waitpid, which nothing but a tracee's stop
 * ends. A helper thread polls interrupt_fd while the program runs and sets
 * c->interrupt_fired, which the loop reads after every stop: a stepping
 * thread stops again within microseconds, so that is all it takes as long
 * as one thread executes instructions. When every running thread sits in
 * a blocking system call no stop comes, so after a short grace period the
 * helper sends the process a SIGSTOP: it interrupts the call (which is
 * restarted later), the signal's delivery stop wakes the loop, and
 * live.c recognises it by its sender and never delivers or reports it.
 * Only ptrace calls are tied to the tracing thread; kill is not.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer.h"

/* How long a stepping program has to notice the flag by itself. */
#define KICK_DELAY_MS 20

struct step_interrupt {
	pthread_t thread;
	int fd;
	int wake[2];              /* written to end the helper */
	struct step_collector *c;
};

/* Wait for fd or the wake pipe; true when fd became readable first. */
static bool wait_fd(struct step_interrupt *in, int fd, int timeout_ms,
		    bool *woken)
{
	struct pollfd p[2] = {
		{ .fd = in->wake[0], .events = POLLIN },
		{ .fd = fd, .events = POLLIN },
	};
	int n;

	do
		n = poll(p, fd >= 0 ? 2 : 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	*woken = n < 0 || (p[0].revents != 0);
	return !*woken && n > 0 && p[1].revents;
}

static void *watch(void *arg)
{
	struct step_interrupt *in = arg;
	bool woken;

	if (!wait_fd(in, in->fd, -1, &woken))
		return NULL;
	atomic_store(&in->c->interrupt_fired, true);
	wait_fd(in, -1, KICK_DELAY_MS, &woken);
	if (woken)
		return NULL;
	kill(in->c->base.pid, SIGSTOP);
	wait_fd(in, -1, -1, &woken);
	return NULL;
}

int hwt_step_interrupt_start(struct step_collector *c, int fd,
			   struct step_interrupt **out, struct hwt_err *err)
{
	struct step_interrupt *in = calloc(1, sizeof(*in));
	int rc;

	*out = NULL;
	if (!in)
		return hwt_err_set(err, ENOMEM, "out of memory");
	in->fd = fd;
	in->c = c;
	if (pipe2(in->wake, O_CLOEXEC) < 0) {
		rc = hwt_err_set(err, errno, "pipe: %s", strerror(errno));
		free(in);
		return rc;
	}
	rc = pthread_create(&in->thread, NULL, watch, in);
	if (rc) {
		close(in->wake[0]);
		close(in->wake[1]);
		free(in);
		return hwt_err_set(err, rc, "cannot start the thread watching "
				   "interrupt_fd %d: %s", fd, strerror(rc));
	}
	*out = in;
	return 0;
}

void hwt_step_interrupt_stop(struct step_interrupt *in)
{
	char b = 0;

	if (!in)
		return;
	while (write(in->wake[1], &b, 1) < 0 && errno == EINTR)
		;
	pthread_join(in->thread, NULL);
	close(in->wake[0]);
	close(in->wake[1]);
	free(in);
}
