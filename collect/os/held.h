/* SPDX-License-Identifier: BSD-2-Clause */
/* held.h - a program forked but held before execvp, so a backend can set
 * up its recording on the child's pid (perf events, the module's
 * ATTACH, ptrace) before any of the program runs. Closing the go pipe
 * releases it; a failed execvp sends its errno back. The child dies with
 * the thread that forked it (PR_SET_PDEATHSIG), before or after exec. */
#ifndef HWT_HELD_H
#define HWT_HELD_H

#include <sys/types.h>

#include "hwt-common.h"

struct hwt_held {
	pid_t pid;
	int go_fd;                /* write end: closing it starts the child */
	int err_fd;               /* read end: errno of a failed execvp */
};

/* Fork argv[0] held. On failure no child and no descriptor is left. */
int hwt_held_fork(char *const argv[], struct hwt_held *h,
		  struct hwt_err *err);
/* The same with the environment envp (NULL: the caller's). */
int hwt_held_fork_env(char *const argv[], char *const envp[],
		      struct hwt_held *h, struct hwt_err *err);
/* Let the child execvp. */
void hwt_held_release(struct hwt_held *h);
/* Once the child has ended (or exec'd): 0, or -errno of a failed execvp
 * with err naming prog. */
int hwt_held_exec_error(struct hwt_held *h, const char *prog,
			struct hwt_err *err);
/* Close the descriptors (the process is the caller's to kill and reap;
 * a child killed before release never execs). */
void hwt_held_close(struct hwt_held *h);

#endif
