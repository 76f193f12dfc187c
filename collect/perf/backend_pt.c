// SPDX-License-Identifier: BSD-2-Clause
/* backend_pt.c - perf-pt: Intel PT through perf's intel_pt PMU. The
 * trace is raw Intel PT packets of the program's user-space code. */
#include <errno.h>

#include "perf.h"

/* Intel SDM: PSB frequency field value n means 2^(n+11) bytes. */
#define PSB_SHIFT 11

static int psb_field(const struct hwt_pmu *pmu, uint32_t bytes,
		     uint64_t config[3], struct hwt_err *err)
{
	uint64_t allowed;
	unsigned n;
	int rc;

	if (bytes < (1u << PSB_SHIFT) || (bytes & (bytes - 1)))
		return hwt_err_set(err, EINVAL, "PSB period of %u bytes is not "
				   "a power of two from 2048", bytes);
	n = (unsigned)__builtin_ctz(bytes) - PSB_SHIFT;
	if ((rc = hwt_pmu_cap(pmu, "psb_periods", &allowed, err)) < 0)
		return rc;
	if (n >= 64 || !(allowed & (1ull << n)))
		return hwt_err_set(err, EINVAL, "this cpu cannot emit a PSB "
				   "every %u bytes (caps/psb_periods is "
				   "0x%llx: bit n allows 2^(n+11) bytes)",
				   bytes, (unsigned long long)allowed);
	return hwt_pmu_config(pmu, "psb_period", n, config, err);
}

/* A packet kind the cpu must support: caps/<cap> nonzero. */
static int need_cap(const struct hwt_pmu *pmu, const char *cap,
		    const char *what, struct hwt_err *err)
{
	uint64_t v = 0;
	int rc = hwt_pmu_cap(pmu, cap, &v, err);

	if (rc < 0 || v == 0)
		return hwt_err_set(err, ENOTSUP, "this cpu cannot emit %s "
				   "packets (intel_pt caps/%s is %s)", what,
				   cap, rc < 0 ? "missing" : "0");
	return 0;
}

int hwt_perf_pt_config(const struct hwt_pmu *pmu,
		       const struct hwt_collect_opts *o,
		       struct hwt_perf_attr *a, struct hwt_err *err)
{
	uint64_t ranges = 0;
	int rc = 0;

	/* Branch packets (TNT, TIP, FUP) are the trace; the field is absent
	 * on kernels where they cannot be turned off. CR3 filtering to the
	 * traced process is done by the kernel for per-thread events. */
	rc = hwt_pmu_config(pmu, "branch", 1, a->config, err);
	if (rc == -ENOENT) {
		hwt_err_clear(err);
		rc = 0;
	}
	if (!rc && o->pt_tsc)
		rc = hwt_pmu_config(pmu, "tsc", 1, a->config, err);
	if (!rc && o->pt_mtc &&
	    !(rc = need_cap(pmu, "mtc", "MTC", err)))
		rc = hwt_pmu_config(pmu, "mtc", 1, a->config, err);
	if (!rc && o->pt_cyc &&
	    !(rc = need_cap(pmu, "psb_cyc", "CYC", err)))
		rc = hwt_pmu_config(pmu, "cyc", 1, a->config, err);
	if (!rc && o->pt_psb_bytes)
		rc = psb_field(pmu, o->pt_psb_bytes, a->config, err);
	if (rc || !o->pt_nfilters)
		return rc;
	if (!o->pt_filters)
		return hwt_err_set(err, EINVAL, "pt_nfilters is %zu but "
				   "pt_filters is NULL", o->pt_nfilters);
	if (hwt_pmu_cap(pmu, "num_address_ranges", &ranges, NULL) < 0)
		ranges = 0;
	if (o->pt_nfilters > ranges)
		return hwt_err_set(err, ENOTSUP, "%zu address filters asked "
				   "for but this cpu has %llu (intel_pt "
				   "caps/num_address_ranges)", o->pt_nfilters,
				   (unsigned long long)ranges);
	return 0;
}

static int pt_setup(struct hwt_perf_event *ev,
		    const struct hwt_collect_opts *o, struct hwt_err *err)
{
	return hwt_perf_event_filters(ev, o->pt_filters, o->pt_nfilters, err);
}

static const struct hwt_perf_kind pt_kind = {
	.backend = &hwt_backend_perf_pt,
	.pmu = "intel_pt",
	.what = "Intel PT",
	.format = HWT_COLLECT_FMT_PT,
	.granule = 1,     /* decoders resynchronise at the next PSB */
	.configure = hwt_perf_pt_config,
	.setup = pt_setup,
};

HWT_PERF_BACKEND(hwt_backend_perf_pt, "perf-pt", pt_kind,
		 HWT_COLLECT_CAP_BUNDLE);
