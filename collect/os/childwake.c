// SPDX-License-Identifier: BSD-2-Clause
/* childwake.c - SIGCHLD through a signalfd (childwake.h). */
#include <errno.h>
#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "childwake.h"

static void chld_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
}

void hwt_child_wake_init(struct hwt_child_wake *w)
{
	w->fd = -1;
	w->unavailable = false;
	w->armed = false;
}

int hwt_child_wake_arm(struct hwt_child_wake *w)
{
	struct signalfd_siginfo si[8];
	sigset_t chld;

	if (w->unavailable)
		return -1;
	chld_set(&chld);
	if (w->fd < 0) {
		w->fd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
		if (w->fd < 0) {
			w->unavailable = true;
			return -1;
		}
	}
	if (!w->armed) {
		if (pthread_sigmask(SIG_BLOCK, &chld, &w->saved) != 0)
			return -1;
		w->armed = true;
	}
	/* Stops already waited for left their signals behind. */
	while (read(w->fd, si, sizeof(si)) > 0)
		;
	return w->fd;
}

void hwt_child_wake_disarm(struct hwt_child_wake *w)
{
	if (!w->armed)
		return;
	pthread_sigmask(SIG_SETMASK, &w->saved, NULL);
	w->armed = false;
}

void hwt_child_wake_close(struct hwt_child_wake *w)
{
	hwt_child_wake_disarm(w);
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}
