/* backend.c - the ptrace backend's ops table: a portable software
 * recorder that single-steps every thread of the program. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer.h"

/* Yama's ptrace_scope 3 forbids ptrace for everyone; the lower scopes
 * allow tracing our own child, which is all this backend does. */
static int ptrace_available(struct hwt_err *err)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int scope = 0;

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
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

	hwt_step_kill_and_reap(c);
	hwt_step_unpin(c);
	hwt_step_threads_free(c);
	hwt_step_modules_free(c);
	free(c);
}

const struct hwt_backend hwt_backend_ptrace = {
	.name = "ptrace",
	.caps = HWT_COLLECT_CAP_LIVE | HWT_COLLECT_CAP_ATTACH |
		HWT_COLLECT_CAP_WATCH |
		HWT_COLLECT_CAP_EXACT_WATCH | HWT_COLLECT_CAP_CORE |
		HWT_COLLECT_CAP_BUNDLE,
	.available = ptrace_available,
	.launch = hwt_step_launch,
	.run = hwt_step_run,
	.write_core = hwt_step_write_core,
	.finish = hwt_step_finish,
	.threads = hwt_step_threads_get,
	.modules = hwt_step_modules_get,
	.close = ptrace_close,
	.attach = hwt_step_attach,
	.resume = hwt_step_resume,
	.live_tids = hwt_step_live_tids,
	.regset = hwt_step_regset,
	.detach = hwt_step_detach,
};
