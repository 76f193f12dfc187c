// SPDX-License-Identifier: BSD-2-Clause
/* backend_etm.c - perf-etm: Arm CoreSight ETM/ETE through perf's cs_etm
 * PMU. The trace is what the sink collected: CoreSight formatted frames
 * (16 bytes each) mixing the trace IDs of the sources. */
#include <errno.h>

#include "perf.h"

static int etm_configure(const struct hwt_pmu *pmu,
			 const struct hwt_collect_opts *o,
			 struct hwt_perf_attr *a, struct hwt_err *err)
{
	int rc;

	/* Timestamps let a decoder order the frames of several cpus; the
	 * field is absent on ETMs without a timestamp generator. */
	rc = hwt_pmu_config(pmu, "timestamp", 1, a->config, err);
	if (rc == -ENOENT) {
		hwt_err_clear(err);
		rc = 0;
	}
	return rc;
}

static const struct hwt_perf_kind etm_kind = {
	.backend = &hwt_backend_perf_etm,
	.pmu = "cs_etm",
	.what = "CoreSight ETM",
	.format = HWT_COLLECT_FMT_ETM,
	.granule = 16,    /* whole formatter frames only */
	.configure = etm_configure,
};

/* Not written into bundles yet: replay reads CoreSight as OpenCSD
 * snapshot directories only (docs/backends.md). */
HWT_PERF_BACKEND(hwt_backend_perf_etm, "perf-etm", etm_kind, 0);
