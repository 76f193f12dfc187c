// SPDX-License-Identifier: GPL-2.0-only
/*
 * hwt_exec.c - exec sideband. The module reports one image event in
 * the trace itself: exec. A block flagged HWTRACE_BLK_EXEC starts at the
 * new program's entry point, so user space knows that the address space
 * was replaced there. Which files are mapped where (the program, the
 * dynamic loader, libraries mapped later with mmap) user space reads from
 * /proc/TID/maps when it drains (docs/kernel-module.md, "Images").
 */
#include <linux/binfmts.h>
#include <linux/tracepoint.h>
#include "hwt.h"

/* sched_process_exec: the new image is loaded, the syscall not yet done. */
static void hwt_exec(void *data, struct task_struct *p, pid_t old_pid,
		     struct linux_binprm *bprm)
{
	struct hwt_thread *t;

	rcu_read_lock();
	t = hwt_thread_lookup_rcu(p);
	/* sys_exit of execve (hwt_recorder.c) records the entry point. */
	if (t)
		WRITE_ONCE(t->exec_pending, true);
	rcu_read_unlock();
}

/* Registered after the recorder's probes (hwt_tp.c). */
const struct hwt_probe hwt_exec_probes[] = {
	{ "sched_process_exec", hwt_exec },
	{ }
};
