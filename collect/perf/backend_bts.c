// SPDX-License-Identifier: BSD-2-Clause
/* backend_bts.c - perf-bts: Intel BTS through perf's intel_bts PMU. The
 * trace is 24-byte branch records (docs/bts.md); the PMU has no
 * configuration of its own. */
#include "perf.h"

static int bts_configure(const struct hwt_pmu *pmu,
			 const struct hwt_collect_opts *o,
			 struct hwt_perf_attr *a, struct hwt_err *err)
{
	return 0;
}

static const struct hwt_perf_kind bts_kind = {
	.backend = &hwt_backend_perf_bts,
	.pmu = "intel_bts",
	.what = "Intel BTS",
	.format = HWT_COLLECT_FMT_BTS,
	.granule = 24,    /* whole records only */
	.configure = bts_configure,
};

HWT_PERF_BACKEND(hwt_backend_perf_bts, "perf-bts", bts_kind,
		 HWT_COLLECT_CAP_BUNDLE);
