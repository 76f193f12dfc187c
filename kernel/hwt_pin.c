// SPDX-License-Identifier: GPL-2.0-only
/*
 * hwt_pin.c - module references that kernel code drops.
 *
 * A hashed thread keeps the module loaded (hwt_thread.c). It leaves the
 * hash in its own task_work (hwt_thread_sync), and a module_put() there
 * would let rmmod free the module's text while that callback still has
 * to return into it: nothing the module can call after module_put()
 * waits for the callback's last instructions (module_put_and_kthread_exit
 * exists for kthreads only).
 *
 * So the reference is a file instead: an anonymous file whose
 * file_operations name this module as owner holds a module reference
 * (anon_inode_getfile takes it) that the kernel's __fput() drops, in the
 * kernel's own code, after the file's last fput(). fput() never releases
 * at once in a task: it queues the release as task_work of the current
 * task (or, in a kthread or when the task can take no more task_work, on
 * the kernel's delayed-fput work). Queued from inside a task_work
 * callback, the release runs only after that callback has returned
 * (task_work_run runs the works queued meanwhile in its next round);
 * from a trap or tracepoint, after the handler has returned. Either way
 * the module's last reference goes after the module's last instruction.
 * fput() takes no lock and does not sleep: it may be called under the
 * module's spinlocks.
 *
 * A child waiting to be followed (hwt_follow.c) holds the session's own
 * file in the same way.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include "hwt.h"

static const struct file_operations hwt_pin_fops = {
	.owner = THIS_MODULE,
};

/* A new pin, or an ERR_PTR. Process context. */
struct file *hwt_pin_new(void)
{
	return anon_inode_getfile("[hwtrace-pin]", &hwt_pin_fops, NULL,
				  O_RDONLY);
}

/* Drop @pin (NULL: nothing). Any context but interrupts. */
void hwt_pin_drop(struct file *pin)
{
	if (pin)
		fput(pin);
}
