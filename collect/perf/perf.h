/* SPDX-License-Identifier: BSD-2-Clause */
/* perf.h - state shared by the files of the perf backends (perf-pt,
 * perf-bts, perf-etm): hardware branch trace through perf_event_open and
 * the AUX area of its ring buffer.
 *
 * pmu.c         capabilities of a PMU from sysfs: type, format/ fields,
 *               caps/ values
 * aux.c         reading the mmap'd ring: sideband records and AUX data,
 *               lost-data accounting
 * event.c       perf_event_open attributes, mmap of the ring, IP filters
 * collector.c   the recorder the three backends share over collect/seize/seize.c:
 *               one event per thread, drained as it fills and at the
 *               thread's exit; fault stop, core and finish
 * backend_*.c   one PMU each: availability, its config bits, its format
 */
#ifndef HWT_PERF_H
#define HWT_PERF_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "os/modset.h"

/* ---- pmu.c ------------------------------------------------------------- */

#define HWT_PMU_SYSFS_ROOT "/sys/bus/event_source/devices"

/* One field of a PMU's format/ directory: which attr word it lives in
 * (0 config, 1 config1, 2 config2) and its bits there (a format may list
 * several ranges, "config:0-7,32-35"). */
struct hwt_pmu_field {
	int word;
	uint64_t mask;
};

struct hwt_pmu {
	char name[64];         /* "intel_pt" */
	char dir[512];         /* root/name */
	uint32_t type;         /* perf_event_attr.type */
};

/* Parse the text of a format file ("config:0-3", "config1:0-63\n"). */
int hwt_pmu_format_parse(const char *text, struct hwt_pmu_field *f,
			 struct hwt_err *err);
/* Find PMU name under root (NULL: HWT_PMU_SYSFS_ROOT). what says which
 * hardware it is for the error: "no <what> on this CPU (no <name> PMU in
 * <root>)". */
int hwt_pmu_open(const char *root, const char *name, const char *what,
		 struct hwt_pmu *pmu, struct hwt_err *err);
/* A format/ field; -ENOENT (with a message) when the PMU has none. */
int hwt_pmu_format(const struct hwt_pmu *pmu, const char *field,
		   struct hwt_pmu_field *f, struct hwt_err *err);
/* A caps/ value (decimal or 0x hex); -ENOENT when absent. */
int hwt_pmu_cap(const struct hwt_pmu *pmu, const char *cap, uint64_t *value,
		struct hwt_err *err);
/* Deposit value into the field's bits of config[3], lowest bit first;
 * -ERANGE when value does not fit. */
int hwt_pmu_field_set(const struct hwt_pmu_field *f, const char *field,
		      uint64_t value, uint64_t config[3], struct hwt_err *err);
/* Look up field and set it: hwt_pmu_format + hwt_pmu_field_set. */
int hwt_pmu_config(const struct hwt_pmu *pmu, const char *field,
		   uint64_t value, uint64_t config[3], struct hwt_err *err);

/* ---- aux.c ------------------------------------------------------------- */

/* A mapped perf ring: the metadata page, the data area (sideband records)
 * and the AUX area (the trace), each in caller-owned memory. */
struct hwt_perf_ring {
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	uint64_t data_size;    /* power of two */
	uint8_t *aux;
	uint64_t aux_size;     /* power of two */
	bool overwrite;        /* AUX mapped read-only: the hardware wraps */
};

/* What the kernel reported lost, summed over records read. */
struct hwt_perf_stats {
	uint64_t aux_records;
	uint64_t truncated;     /* AUX area was full: trace was dropped */
	uint64_t partial;       /* the hardware left gaps in a record */
	uint64_t collisions;    /* sample collided with another */
	uint64_t lost_records;  /* sideband records the data area dropped */
};

/* An executable mapping from a PERF_RECORD_MMAP2. */
struct hwt_perf_mmap {
	pid_t pid;
	uint64_t addr, len, pgoff;
	const char *path;      /* NUL-terminated inside the record */
};

typedef int (*hwt_perf_mmap_fn)(void *arg, const struct hwt_perf_mmap *m,
				struct hwt_err *err);

/* Output of AUX reads: a linear buffer keeping the newest max bytes, cut
 * at multiples of granule from the front (24 for BTS records). */
struct hwt_perf_buf {
	uint8_t *data;
	size_t len, cap, max, granule;
	uint64_t dropped;      /* bytes cut from the front, or never read */
};

/* base: base_len bytes mapped at the event (metadata page + data area);
 * aux: aux_len bytes mapped at meta->aux_offset, or NULL. */
int hwt_perf_ring_init(struct hwt_perf_ring *r, void *base, size_t base_len,
		       void *aux, size_t aux_len, bool overwrite,
		       struct hwt_err *err);
/* Consume the sideband records between data_tail and data_head: AUX and
 * LOST records go to st, executable MMAP2 records to fn (may be NULL). A
 * malformed record ends the read with -EBADMSG; the area is consumed. */
int hwt_perf_ring_records(struct hwt_perf_ring *r, struct hwt_perf_stats *st,
			  hwt_perf_mmap_fn fn, void *arg, struct hwt_err *err);
/* Non-overwrite mode: move the AUX bytes between aux_tail and aux_head
 * into out and hand the space back to the hardware. */
int hwt_perf_aux_drain(struct hwt_perf_ring *r, struct hwt_perf_buf *out,
		       struct hwt_err *err);
/* Overwrite mode: the newest bytes of the AUX area, oldest first, into
 * out. The area is zero when mapped, so trace bytes past the write
 * position mean it has wrapped. */
int hwt_perf_aux_snapshot(struct hwt_perf_ring *r, struct hwt_perf_buf *out,
			  struct hwt_err *err);
int hwt_perf_buf_append(struct hwt_perf_buf *b, const uint8_t *p, size_t n,
			struct hwt_err *err);
void hwt_perf_buf_free(struct hwt_perf_buf *b);

/* ---- event.c ----------------------------------------------------------- */

struct hwt_perf_attr {
	uint32_t type;
	uint64_t config[3];
};

/* One traced thread's event and its mappings. */
struct hwt_perf_event {
	int fd;
	void *base;            /* metadata page + data area */
	size_t base_len;
	void *aux;
	size_t aux_len;
	struct hwt_perf_ring ring;
};

/* Open a user-space-only event on thread pid with MMAP2 sideband; at_exec:
 * disabled until pid calls execve, else enabled at once (for a thread
 * that has not run yet). */
int hwt_perf_event_open(const struct hwt_perf_attr *a, pid_t pid,
			bool at_exec, const char *what,
			struct hwt_perf_event *ev, struct hwt_err *err);
/* Map the data area and an AUX area of aux_size bytes (a power of two,
 * in pages; 0: none); overwrite maps it read-only (flight recorder). */
int hwt_perf_event_map(struct hwt_perf_event *ev, uint64_t aux_size,
		       bool overwrite, struct hwt_err *err);
/* The kernel's filter text for n ranges ("filter 0x1000/0x200@/bin/ls,
 * ..."), checked: nonzero sizes, file names it can parse. */
int hwt_perf_filter_string(const struct hwt_collect_ip_filter *f, size_t n,
			   char *s, size_t size, struct hwt_err *err);
/* Intel PT address filters through PERF_EVENT_IOC_SET_FILTER. */
int hwt_perf_event_filters(struct hwt_perf_event *ev,
			   const struct hwt_collect_ip_filter *f, size_t n,
			   struct hwt_err *err);
void hwt_perf_event_close(struct hwt_perf_event *ev);
/* Largest power of two <= bytes, at least min_pages pages. */
uint64_t hwt_perf_aux_size_for(uint64_t bytes);

/* ---- collector.c ------------------------------------------------------- */

/* What tells the three backends apart. */
struct hwt_perf_kind {
	const struct hwt_backend *backend;
	const char *pmu;          /* "intel_pt" */
	const char *what;         /* "Intel PT", for errors */
	enum hwt_collect_format format;
	size_t granule;           /* trace bytes are cut at multiples */
	/* The PMU writes no AUX area (perf's software dummy event): only
	 * the MMAP2 sideband is read and threads carry no trace bytes. */
	bool sideband_only;
	/* Fill a->config from opts and the PMU's format/ and caps/. */
	int (*configure)(const struct hwt_pmu *pmu,
			 const struct hwt_collect_opts *opts,
			 struct hwt_perf_attr *a, struct hwt_err *err);
	/* After open, before exec: per-event setup (filters); may be NULL. */
	int (*setup)(struct hwt_perf_event *ev,
		     const struct hwt_collect_opts *opts, struct hwt_err *err);
};

int hwt_perf_available(const struct hwt_perf_kind *k, struct hwt_err *err);
int hwt_perf_launch(const struct hwt_perf_kind *k,
		    const struct hwt_collect_opts *opts, char *const argv[],
		    struct hwt_collector **out, struct hwt_err *err);
int hwt_perf_run(struct hwt_collector *c, struct hwt_err *err);
int hwt_perf_write_core(struct hwt_collector *c, const char *path,
			struct hwt_err *err);
int hwt_perf_finish(struct hwt_collector *c, struct hwt_err *err);
size_t hwt_perf_threads(struct hwt_collector *c,
			const struct hwt_collect_thread **threads);
size_t hwt_perf_modules(struct hwt_collector *c,
			const struct hwt_collect_module **modules);
void hwt_perf_close(struct hwt_collector *c);
/* Live control over collect/seize/live.c (x86: int3 breakpoints, debug
 * register watches); attach is not offered. */
int hwt_perf_resume(struct hwt_collector *c,
		    const struct hwt_resume_opts *opts,
		    struct hwt_collect_event *event, struct hwt_err *err);
size_t hwt_perf_live_tids(struct hwt_collector *c, pid_t *tids, size_t cap);
int hwt_perf_regset(struct hwt_collector *c, pid_t tid, int nt_type,
		    void *buf, size_t *len, bool write, struct hwt_err *err);
int hwt_perf_live_start(struct hwt_collector *c, struct hwt_err *err);
int hwt_perf_detach(struct hwt_collector *c, struct hwt_err *err);

/* Define backend sym, named name, recording with PMU kind k: only the
 * kind differs between perf backends, and ops take no context pointer,
 * so each gets two one-line wrappers. */
#define HWT_PERF_BACKEND(sym, name_str, k, bundle_cap)			\
	static int sym##_available(struct hwt_err *err)			\
	{								\
		return hwt_perf_available(&(k), err);			\
	}								\
	static int sym##_launch(const struct hwt_collect_opts *opts,	\
				char *const argv[],			\
				struct hwt_collector **out,		\
				struct hwt_err *err)			\
	{								\
		return hwt_perf_launch(&(k), opts, argv, out, err);	\
	}								\
	const struct hwt_backend sym = {				\
		.name = name_str,					\
		.caps = HWT_COLLECT_CAP_LIVE | HWT_COLLECT_CAP_CORE |	\
			(bundle_cap),					\
		.available = sym##_available,				\
		.launch = sym##_launch,					\
		.run = hwt_perf_run,					\
		.write_core = hwt_perf_write_core,			\
		.finish = hwt_perf_finish,				\
		.threads = hwt_perf_threads,				\
		.modules = hwt_perf_modules,				\
		.close = hwt_perf_close,				\
		.live_start = hwt_perf_live_start,			\
		.resume = hwt_perf_resume,				\
		.live_tids = hwt_perf_live_tids,			\
		.regset = hwt_perf_regset,				\
		.detach = hwt_perf_detach,				\
	}

/* ---- backend_pt.c ----------------------------------------------------- */

/* Intel PT config words from the options, the PMU's format/ fields and
 * its caps/ (an option the cpu cannot do is an error naming the cap). */
int hwt_perf_pt_config(const struct hwt_pmu *pmu,
		       const struct hwt_collect_opts *o,
		       struct hwt_perf_attr *a, struct hwt_err *err);

#endif
