// SPDX-License-Identifier: BSD-2-Clause
/* bundle.c - what every user of a struct hwt_bundle needs, whichever
 * reader made it: freeing it, naming its files and threads, loading a
 * member file.
 *
 * bundle_read.c (trace.json) and snapshot.c (OpenCSD snapshots) both build
 * bundles and both use these, so they live apart from either reader. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-common.h"
#include "util.h"

const char *hwt_bundle_trace_key(const char *type)
{
	if (strcmp(type, HWT_BUNDLE_TYPE_PT) == 0)
		return "iptTrace";
	if (strcmp(type, HWT_BUNDLE_TYPE_BTS) == 0)
		return "btsTrace";
	return strcmp(type, HWT_BUNDLE_TYPE_SW) == 0 ? "swTrace" : NULL;
}

void hwt_bundle_free(struct hwt_bundle *b)
{
	if (!b)
		return;
	for (size_t i = 0; b->threads && i < b->nthreads; i++) {
		free(b->threads[i].trace_file);
		free(b->threads[i].index_file);
	}
	for (size_t i = 0; b->modules && i < b->nmodules; i++) {
		free(b->modules[i].system_path);
		free(b->modules[i].file);
		free(b->modules[i].uuid);
	}
	for (size_t i = 0; b->sources && i < b->nsources; i++) {
		free(b->sources[i].name);
		free(b->sources[i].core);
		free(b->sources[i].skipped);
	}
	for (size_t i = 0; b->regions && i < b->nregions; i++)
		free(b->regions[i].file);
	free(b->sources);
	free(b->regions);
	for (size_t i = 0; b->pt_cpus && i < b->npt_cpus; i++) {
		free(b->pt_cpus[i].trace_file);
		free(b->pt_cpus[i].switch_file);
	}
	free(b->pt_cpus);
	free(b->kernel_file);
	free(b->processes);
	free(b->threads);
	free(b->modules);
	free(b->dir);
	free(b->type);
	free(b->triple);
	free(b->core);
	free(b->data_history);
	free(b->stop_note);
	free(b);
}

char *hwt_bundle_path(const struct hwt_bundle *b, const char *rel)
{
	char *p;

	if (rel[0] == '/')
		return strdup(rel);
	if (asprintf(&p, "%s/%s", b->dir ? b->dir : ".", rel) < 0)
		return NULL;
	return p;
}

int hwt_bundle_load_file(const struct hwt_bundle *b, const char *rel,
			 uint64_t expect_size, uint8_t **data, size_t *size,
			 struct hwt_err *err)
{
	char *path = hwt_bundle_path(b, rel);
	int rc;

	if (!path)
		return hwt_err_set(err, ENOMEM, "out of memory");
	rc = hwt_read_file(path, SIZE_MAX / 2, data, size, err);
	if (rc == 0 && *size != expect_size) {
		rc = hwt_err_set(err, EINVAL, "%s changed size: %zu bytes, "
				 "trace.json says %llu", path, *size,
				 (unsigned long long)expect_size);
		free(*data);
		*data = NULL;
	}
	free(path);
	return rc;
}

const char *hwt_bundle_thread_name(const struct hwt_bundle *b, size_t i,
				   char *buf, size_t size)
{
	uint32_t by = hwt_bundle_process_replaced_by(b, b->threads[i].process);

	if (b->type && !strcmp(b->type, HWT_BUNDLE_TYPE_CORESIGHT))
		snprintf(buf, size, "0x%llx", (unsigned long long)b->threads[i].tid);
	else if (by)
		snprintf(buf, size, "%lld (before exec %u)",
			 (long long)b->threads[i].tid, by);
	else
		snprintf(buf, size, "%lld", (long long)b->threads[i].tid);
	return buf;
}

size_t hwt_bundle_nprocesses(const struct hwt_bundle *b)
{
	return b->processes && b->nprocesses ? b->nprocesses : 1;
}

int64_t hwt_bundle_process_pid(const struct hwt_bundle *b, size_t p)
{
	return b->processes && p < b->nprocesses ? b->processes[p].pid :
		b->pid;
}

bool hwt_bundle_thread_faulted(const struct hwt_bundle *b, size_t t)
{
	return b->stop_reason == HWT_STOP_FAULT && t < b->nthreads &&
		b->stop_tid == b->threads[t].tid && b->threads[t].process == 0;
}

uint32_t hwt_bundle_process_replaced_by(const struct hwt_bundle *b, size_t p)
{
	if (!b->processes || p >= b->nprocesses)
		return 0;
	/* A later program of its pid: the next exec replaced p's. */
	for (size_t q = 0; q < b->nprocesses; q++)
		if (b->processes[q].pid == b->processes[p].pid &&
		    b->processes[q].exec > b->processes[p].exec)
			return b->processes[p].exec + 1;
	return 0;
}
