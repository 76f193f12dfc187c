// SPDX-License-Identifier: GPL-2.0-only
/*
 * hwt_tp.c - the module's tracepoint probes (the tables hwt_recorder.c
 * and hwt_exec.c export, registered here so neither calls back into us)
 * are registered only while a thread is hashed (attached, or detached
 * with our trap flag possibly still set): a registered sys_exit probe
 * puts every task of the system on the syscall-work slow path
 * (SYSCALL_WORK_SYSCALL_TRACEPOINT), so an idle module must not have one.
 *
 * hwt_tp_get() (process context, may sleep) registers the probes for the
 * first user, before the caller hashes a thread. hwt_tp_put() runs where
 * a thread leaves the hash (any context: under spinlocks, in the debug
 * exception, in tracepoint probes), so it only counts down and schedules
 * the unregistration, which a work item does once no thread has been
 * hashed for HWT_TP_IDLE: registering patches kernel text and walks
 * every task, too costly to repeat for every attach/detach cycle. The
 * user count rises only under hwt_tp_mutex, which the work holds: a count
 * it reads as zero stays zero until it has unregistered, and a later get
 * registers again. The work waits for running probes to return
 * (tracepoint_synchronize_unregister) before it lets a get go on.
 */
#include <linux/atomic.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/tracepoint.h>
#include <linux/workqueue.h>
#include "hwt.h"

#define HWT_TP_IDLE	(HZ / 10)

static DEFINE_MUTEX(hwt_tp_mutex);
static atomic_t hwt_tp_users = ATOMIC_INIT(0);	/* hashed threads */
static bool hwt_tp_on;				/* under hwt_tp_mutex */

static void hwt_tp_idle(struct work_struct *work);
static DECLARE_DELAYED_WORK(hwt_tp_work, hwt_tp_idle);

struct hwt_tp_find {
	const char *name;
	struct tracepoint *tp;
};

static void hwt_tp_match(struct tracepoint *tp, void *priv)
{
	struct hwt_tp_find *f = priv;

	if (!strcmp(tp->name, f->name))
		f->tp = tp;
}

static struct tracepoint *hwt_tp_find(const char *name)
{
	struct hwt_tp_find f = { .name = name };

	for_each_kernel_tracepoint(hwt_tp_match, &f);
	return f.tp;
}

/* Every probe, in registration order: the recorder's, then exec's. */
static const struct hwt_probe *const hwt_tp_tables[] = {
	hwt_recorder_probes,
	hwt_exec_probes,
};

/* Tracepoints are not all exported; find them by name. */
static int hwt_tp_register(const struct hwt_probe *p)
{
	struct tracepoint *tp = hwt_tp_find(p->name);

	if (!tp) {
		pr_err("hwtrace: tracepoint %s not found\n", p->name);
		return -ENOENT;
	}
	return tracepoint_probe_register(tp, p->fn, NULL);
}

static void hwt_tp_unregister(const struct hwt_probe *p)
{
	struct tracepoint *tp = hwt_tp_find(p->name);

	if (tp)
		tracepoint_probe_unregister(tp, p->fn, NULL);
}

/* The i-th probe over every table, or NULL past the last. */
static const struct hwt_probe *hwt_tp_probe(size_t i)
{
	size_t t;

	for (t = 0; t < ARRAY_SIZE(hwt_tp_tables); t++) {
		const struct hwt_probe *p;

		for (p = hwt_tp_tables[t]; p->name; p++)
			if (!i--)
				return p;
	}
	return NULL;
}

/* Unregister probes [0, n), last first. Caller holds hwt_tp_mutex. */
static void hwt_tp_unregister_first(size_t n)
{
	lockdep_assert_held(&hwt_tp_mutex);

	while (n)
		hwt_tp_unregister(hwt_tp_probe(--n));
}

/* Caller holds hwt_tp_mutex. */
static void hwt_tp_off_locked(void)
{
	size_t n = 0;

	lockdep_assert_held(&hwt_tp_mutex);
	while (hwt_tp_probe(n))
		n++;
	hwt_tp_unregister_first(n);
	/* No probe of ours is running once this returns. */
	tracepoint_synchronize_unregister();
	hwt_tp_on = false;
}

/* Caller holds hwt_tp_mutex. */
static int hwt_tp_on_locked(void)
{
	const struct hwt_probe *p;
	size_t i;
	int err;

	lockdep_assert_held(&hwt_tp_mutex);
	for (i = 0; (p = hwt_tp_probe(i)); i++) {
		err = hwt_tp_register(p);
		if (err) {
			hwt_tp_unregister_first(i);
			tracepoint_synchronize_unregister();
			return err;
		}
	}
	hwt_tp_on = true;
	return 0;
}

/* A thread is about to be hashed: the probes must be in place. */
int hwt_tp_get(void)
{
	int err = 0;

	mutex_lock(&hwt_tp_mutex);
	if (!hwt_tp_on)
		err = hwt_tp_on_locked();
	if (!err)
		atomic_inc(&hwt_tp_users);
	mutex_unlock(&hwt_tp_mutex);
	return err;
}

/* A thread left the hash (or was not hashed after all). Any context. */
void hwt_tp_put(void)
{
	if (atomic_dec_and_test(&hwt_tp_users))
		mod_delayed_work(system_wq, &hwt_tp_work, HWT_TP_IDLE);
}

static void hwt_tp_idle(struct work_struct *work)
{
	mutex_lock(&hwt_tp_mutex);
	if (hwt_tp_on && !atomic_read(&hwt_tp_users))
		hwt_tp_off_locked();
	mutex_unlock(&hwt_tp_mutex);
}

/* Module exit: no thread is hashed (each holds a module reference). */
void hwt_tp_exit(void)
{
	cancel_delayed_work_sync(&hwt_tp_work);
	mutex_lock(&hwt_tp_mutex);
	if (hwt_tp_on)
		hwt_tp_off_locked();
	mutex_unlock(&hwt_tp_mutex);
}

/*
 * /sys/module/hwtrace/parameters/tracepoints, read-only: 1 while the
 * probes are registered, so the cost of an idle module can be checked.
 */
static int hwt_tp_param_get(char *buf, const struct kernel_param *kp)
{
	bool on;

	mutex_lock(&hwt_tp_mutex);
	on = hwt_tp_on;
	mutex_unlock(&hwt_tp_mutex);
	return sysfs_emit(buf, "%d\n", on);
}

static int hwt_tp_param_set(const char *val, const struct kernel_param *kp)
{
	return -EPERM;	/* a state, not a setting */
}

static const struct kernel_param_ops hwt_tp_param_ops = {
	.set = hwt_tp_param_set,
	.get = hwt_tp_param_get,
};
module_param_cb(tracepoints, &hwt_tp_param_ops, NULL, 0444);
MODULE_PARM_DESC(tracepoints,
		 "1 while the tracepoint probes are registered (read-only)");
