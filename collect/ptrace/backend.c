// SPDX-License-Identifier: BSD-2-Clause
/* backend.c - the ptrace backend's ops table: a portable software
 * recorder that single-steps every thread of the program. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seize/seize.h"
#include "tracer.h"

/* Yama's ptrace_scope 3 forbids ptrace for everyone; the lower scopes
 * allow tracing our own child, which is all this backend does. */
static int ptrace_available(struct hwt_err *err)
{
	int scope = hwt_proc_yama_scope();

	if (scope >= 3)
		return hwt_err_set(err, EPERM,
				   "ptrace is disabled on this system "
				   "(kernel.yama.ptrace_scope = %d; only a "
				   "reboot can lower it)", scope);
	return 0;
}

static void ptrace_close(struct hwt_collector *base)
{
	struct step_collector *c = step_of(base);

	hwt_step_untraced_close(c);
	hwt_step_kill_and_reap(c);
	hwt_step_unpin(c);
	hwt_step_threads_free(c);
	hwt_step_modules_free(c);
	free(c);
}

/* A deferred launch (deferred.c) runs untraced until record_start: the
 * calls below go to the seize layer until then. */
static int ptrace_run(struct hwt_collector *base, struct hwt_err *err)
{
	int rc = hwt_step_record_start(base, err);

	return rc < 0 ? rc : hwt_step_run(base, err);
}

static size_t ptrace_threads(struct hwt_collector *base,
			     const struct hwt_collect_thread **threads)
{
	*threads = NULL;
	return step_of(base)->untraced ? 0 : hwt_step_threads_get(base, threads);
}

/* Untraced, nothing watches the mappings change: they are read at each
 * call, at a stop, into the same union the stepper keeps. */
static size_t ptrace_modules(struct hwt_collector *base,
			     const struct hwt_collect_module **modules)
{
	if (step_of(base)->untraced && base->state != HWT_COLLECTOR_ENDED)
		hwt_step_modules_refresh(step_of(base), base->pid, NULL);
	return hwt_step_modules_get(base, modules);
}

static int ptrace_resume(struct hwt_collector *base,
			 const struct hwt_resume_opts *opts,
			 struct hwt_collect_event *event, struct hwt_err *err)
{
	struct step_collector *c = step_of(base);

	return c->untraced ? hwt_step_untraced_resume(c, opts, event, err)
			   : hwt_step_resume(base, opts, event, err);
}

static size_t ptrace_live_tids(struct hwt_collector *base, pid_t *tids,
			       size_t cap)
{
	struct step_collector *c = step_of(base);

	return c->untraced ? hwt_seize_live_tids(c->untraced, tids, cap)
			   : hwt_step_live_tids(base, tids, cap);
}

static int ptrace_regset(struct hwt_collector *base, pid_t tid, int nt_type,
			 void *buf, size_t *len, bool write,
			 struct hwt_err *err)
{
	struct step_collector *c = step_of(base);

	return c->untraced ? hwt_seize_regset(c->untraced, tid, nt_type, buf,
					      len, write, err)
			   : hwt_step_regset(base, tid, nt_type, buf, len,
					     write, err);
}

static int ptrace_detach(struct hwt_collector *base, struct hwt_err *err)
{
	struct step_collector *c = step_of(base);

	return c->untraced ? hwt_step_untraced_detach(c, err)
			   : hwt_step_detach(base, err);
}

const struct hwt_backend hwt_backend_ptrace = {
	.name = "ptrace",
	.caps = HWT_COLLECT_CAP_LIVE | HWT_COLLECT_CAP_ATTACH |
		HWT_COLLECT_CAP_WATCH |
		HWT_COLLECT_CAP_EXACT_WATCH | HWT_COLLECT_CAP_CORE |
		HWT_COLLECT_CAP_BUNDLE | HWT_COLLECT_CAP_DEFER,
	.available = ptrace_available,
	.launch = hwt_step_launch,
	.run = ptrace_run,
	.write_core = hwt_step_write_core,
	.finish = hwt_step_finish,
	.threads = ptrace_threads,
	.modules = ptrace_modules,
	.close = ptrace_close,
	.attach = hwt_step_attach,
	.resume = ptrace_resume,
	.live_tids = ptrace_live_tids,
	.regset = ptrace_regset,
	.regs_at = hwt_step_regs_at,
	.mem_at = hwt_step_mem_at,
	.find_write = hwt_step_find_write,
	.index_at_step = hwt_step_index_at_step,
	.write_past = hwt_step_write_past,
	.memory_written = hwt_step_memory_written,
	.record_start = hwt_step_record_start,
	.recording = hwt_step_recording,
	.detach = ptrace_detach,
};
