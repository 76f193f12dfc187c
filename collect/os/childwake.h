/* SPDX-License-Identifier: BSD-2-Clause */
/* childwake.h - a descriptor that becomes readable when a traced child
 * stops or ends, so a tracer can poll it beside other descriptors.
 *
 * A tracee's stop sends its tracer SIGCHLD. While armed, the calling
 * thread blocks SIGCHLD and a signalfd receives it; disarming puts the
 * thread's signal mask back, so programs forked later do not inherit a
 * blocked SIGCHLD. The wakeup is a hint, never the only way out: another
 * thread of the process that leaves SIGCHLD unblocked may take the
 * signal, and where the process ignores SIGCHLD none is sent. Callers
 * therefore poll with a timeout and wait for the stop with WNOHANG after
 * arming, which a stop between the two cannot slip past.
 */
#ifndef HWT_CHILDWAKE_H
#define HWT_CHILDWAKE_H

#include <signal.h>
#include <stdbool.h>

struct hwt_child_wake {
	int fd;                   /* the signalfd; -1 before the first arm */
	bool unavailable;         /* signalfd failed: no wakeups here */
	bool armed;
	sigset_t saved;           /* the thread's mask before arming */
};

void hwt_child_wake_init(struct hwt_child_wake *w);
/* Block SIGCHLD in the calling thread and empty the descriptor. Returns
 * the descriptor to poll for POLLIN, or -1 when there is none (then the
 * caller polls on a timer alone). */
int hwt_child_wake_arm(struct hwt_child_wake *w);
/* The calling thread's mask as before arming; nothing when not armed. */
void hwt_child_wake_disarm(struct hwt_child_wake *w);
void hwt_child_wake_close(struct hwt_child_wake *w);

#endif
