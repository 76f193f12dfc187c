// SPDX-License-Identifier: BSD-2-Clause
/* event.c - one perf event per traced thread: perf_event_open, the mmap
 * of its ring buffer and AUX area, Intel PT address filters. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perf.h"

/* Sideband is a few MMAP2 records per loaded object: 64 KiB holds
 * hundreds; fewer pages would risk LOST records for big programs. */
#define DATA_PAGES 16u
#define AUX_MIN_PAGES 16u
/* IP filter strings: "filter 0x.../0x...@PATH" per range. */
#define FILTER_MAX 16384u

static const char *open_hint(int e)
{
	switch (e) {
	case EACCES:
	case EPERM:
		return "; lower /proc/sys/kernel/perf_event_paranoid (2 or "
		       "less allows tracing your own programs) or grant "
		       "CAP_PERFMON";
	case ENOENT:
	case ENODEV:
	case EOPNOTSUPP:
	case EINVAL:
		return "; this kernel or cpu does not support that "
		       "configuration";
	case EBUSY:
		return "; another user (perf, a debugger) holds the trace "
		       "hardware";
	default:
		return "";
	}
}

int hwt_perf_event_open(const struct hwt_perf_attr *a, pid_t pid,
			bool at_exec, const char *what,
			struct hwt_perf_event *ev, struct hwt_err *err)
{
	struct perf_event_attr attr;
	long fd;

	memset(ev, 0, sizeof(*ev));
	ev->fd = -1;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = a->type;
	attr.config = a->config[0];
	attr.config1 = a->config[1];
	attr.config2 = a->config[2];
	/* The program's first thread: off until its execve, so nothing of
	 * the launcher is traced and the first traced instruction is the
	 * new image's. A thread it creates is opened before it runs and
	 * traced from its first instruction. */
	attr.disabled = at_exec;
	attr.enable_on_exec = at_exec;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	/* Executable mappings come as MMAP2 records: the module sideband
	 * is complete even for programs gone before /proc could be read. */
	attr.mmap = 1;
	attr.mmap2 = 1;
	attr.sample_id_all = 1;
	attr.watermark = 1;
	attr.wakeup_watermark = DATA_PAGES * (uint32_t)sysconf(_SC_PAGESIZE) / 2;
	fd = syscall(SYS_perf_event_open, &attr, pid, -1, -1,
		     PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return hwt_err_set(err, errno, "cannot open a %s event for "
				   "process %d: %s%s", what, (int)pid,
				   strerror(errno), open_hint(errno));
	ev->fd = (int)fd;
	return 0;
}

uint64_t hwt_perf_aux_size_for(uint64_t bytes)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), size = page;

	while (size * 2 <= bytes)
		size *= 2;
	return size < AUX_MIN_PAGES * page ? AUX_MIN_PAGES * page : size;
}

int hwt_perf_event_map(struct hwt_perf_event *ev, uint64_t aux_size,
		       bool overwrite, struct hwt_err *err)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *meta;

	ev->base_len = (1 + DATA_PAGES) * page;
	ev->base = mmap(NULL, ev->base_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			ev->fd, 0);
	if (ev->base == MAP_FAILED) {
		ev->base = NULL;
		return hwt_err_set(err, errno, "cannot map the perf ring "
				   "buffer: %s", strerror(errno));
	}
	meta = ev->base;
	if (aux_size == 0)
		return hwt_perf_ring_init(&ev->ring, ev->base, ev->base_len,
					  NULL, 0, overwrite, err);
	/* The AUX area follows the data area; its offset and size are
	 * told to the kernel through the metadata page before mapping. */
	meta->aux_offset = ev->base_len;
	meta->aux_size = aux_size;
	ev->aux = mmap(NULL, aux_size, overwrite ? PROT_READ :
		       PROT_READ | PROT_WRITE, MAP_SHARED, ev->fd,
		       (off_t)ev->base_len);
	if (ev->aux == MAP_FAILED) {
		ev->aux = NULL;
		return hwt_err_set(err, errno, "cannot map a perf AUX area of "
				   "%llu bytes: %s%s",
				   (unsigned long long)aux_size,
				   strerror(errno), errno == EPERM ?
				   "; raise /proc/sys/kernel/"
				   "perf_event_mlock_kb or pick a smaller "
				   "--size" : "");
	}
	ev->aux_len = aux_size;
	return hwt_perf_ring_init(&ev->ring, ev->base, ev->base_len, ev->aux,
				  ev->aux_len, overwrite, err);
}

int hwt_perf_filter_string(const struct hwt_collect_ip_filter *f, size_t n,
			   char *s, size_t size, struct hwt_err *err)
{
	size_t used = 0;

	if (size == 0)
		return hwt_err_set(err, EINVAL, "no room for address filters");
	s[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int k;

		if (f[i].size == 0 || f[i].start + f[i].size < f[i].start)
			return hwt_err_set(err, EINVAL, "address filter %zu: "
					   "0x%llx bytes from 0x%llx is not "
					   "a range; give a nonzero length "
					   "that does not wrap", i,
					   (unsigned long long)f[i].size,
					   (unsigned long long)f[i].start);
		/* The kernel splits filters at commas and fields at white
		 * space: such a name would be read as other filters. */
		if (f[i].file && (!f[i].file[0] ||
				  strpbrk(f[i].file, ", \t\n\r\v\f")))
			return hwt_err_set(err, EINVAL, "address filter %zu: "
					   "file name \"%.200s\" is empty or "
					   "holds a comma or white space, "
					   "which perf filters cannot express",
					   i, f[i].file);
		/* The kernel's syntax: "filter START/SIZE[@FILE]", ranges
		 * separated by commas. */
		k = snprintf(s + used, size - used, "%sfilter 0x%llx/0x%llx%s%s",
			     i ? "," : "", (unsigned long long)f[i].start,
			     (unsigned long long)f[i].size,
			     f[i].file ? "@" : "", f[i].file ? f[i].file : "");
		if (k < 0 || (size_t)k >= size - used)
			return hwt_err_set(err, E2BIG, "address filters are "
					   "longer than %zu bytes", size - 1);
		used += (size_t)k;
	}
	return 0;
}

int hwt_perf_event_filters(struct hwt_perf_event *ev,
			   const struct hwt_collect_ip_filter *f, size_t n,
			   struct hwt_err *err)
{
	char *s;
	int rc;

	if (n == 0)
		return 0;
	if (!(s = malloc(FILTER_MAX)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	rc = hwt_perf_filter_string(f, n, s, FILTER_MAX, err);
	if (rc == 0 && ioctl(ev->fd, PERF_EVENT_IOC_SET_FILTER, s) < 0)
		rc = hwt_err_set(err, errno, "the kernel refused address "
				 "filters \"%.200s\": %s; each file must exist "
				 "and each range lie inside it", s,
				 strerror(errno));
	free(s);
	return rc;
}

void hwt_perf_event_close(struct hwt_perf_event *ev)
{
	if (ev->aux)
		munmap(ev->aux, ev->aux_len);
	if (ev->base)
		munmap(ev->base, ev->base_len);
	if (ev->fd >= 0)
		close(ev->fd);
	memset(ev, 0, sizeof(*ev));
	ev->fd = -1;
}
