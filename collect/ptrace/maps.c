// SPDX-License-Identifier: BSD-2-Clause
/* maps.c - the stepper's sideband: every executable file mapping the
 * program had (os/modset.c reads them from /proc/PID/maps), so that a
 * decoder can find the code that ran. */
#include "tracer.h"

int hwt_step_modules_refresh(struct step_collector *c, pid_t tid,
			     struct hwt_err *err)
{
	hwt_step_code_forget(c);
	return hwt_modset_add_maps(&c->mods, tid, err);
}

size_t hwt_step_modules_get(struct hwt_collector *base,
			    const struct hwt_collect_module **modules)
{
	struct step_collector *c = step_of(base);

	*modules = c->mods.v;
	return c->mods.n;
}

void hwt_step_modules_free(struct step_collector *c)
{
	hwt_modset_free(&c->mods);
}
