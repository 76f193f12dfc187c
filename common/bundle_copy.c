// SPDX-License-Identifier: BSD-2-Clause
/* bundle_copy.c - write a bundle that was read back out to a new directory
 * through the bundle writer: trace files, module copies and the core are
 * copied under fresh relative names, so a bundle whose trace.json names
 * absolute paths (LLDB's `trace save`) becomes self-contained. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-common.h"

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int copy_member(const char *staging, const struct hwt_bundle *b,
		       const char *rel, const char *new_rel,
		       struct hwt_err *err)
{
	char *src = hwt_bundle_path(b, rel);
	int rc;

	if (!src)
		return hwt_err_set(err, ENOMEM, "out of memory");
	rc = hwt_bundle_stage_copy(staging, new_rel, src, err);
	free(src);
	return rc;
}

/* A compressed trace is copied as it is, with its index: a whole
 * recording decodes to gigabytes. Others are written decoded. */
static int copy_threads(const char *staging, const struct hwt_bundle *b,
			struct hwt_bundle_thread *out, struct hwt_err *err)
{
	for (size_t i = 0; i < b->nthreads; i++) {
		const struct hwt_bundle_thread *t = &b->threads[i];
		bool packed = t->encoding == HWT_TRACE_ZSTD;
		uint8_t *data;
		size_t size;
		int rc;

		out[i] = *t;
		out[i].trace_file = out[i].index_file = NULL;
		if (asprintf(&out[i].trace_file, packed ? "threads/%lld.trace.zst"
			     : "threads/%lld.trace", (long long)t->tid) < 0 ||
		    (packed && t->index_file &&
		     asprintf(&out[i].index_file, "threads/%lld.trace.idx",
			      (long long)t->tid) < 0)) {
			out[i].trace_file = out[i].index_file = NULL;
			return hwt_err_set(err, ENOMEM, "out of memory");
		}
		if (packed) {
			if ((rc = copy_member(staging, b, t->trace_file,
					      out[i].trace_file, err)) ||
			    (out[i].index_file &&
			     (rc = copy_member(staging, b, t->index_file,
					       out[i].index_file, err))))
				return rc;
			continue;
		}
		if ((rc = hwt_bundle_load_trace(b, t, &data, &size, err)))
			return rc;
		out[i].trace_size = size;
		rc = hwt_bundle_stage_write(staging, out[i].trace_file, data,
					    size, err);
		free(data);
		if (rc)
			return rc;
	}
	return 0;
}

static int copy_modules(const char *staging, const struct hwt_bundle *b,
			struct hwt_bundle_module *out, struct hwt_err *err)
{
	for (size_t i = 0; i < b->nmodules; i++) {
		const struct hwt_bundle_module *m = &b->modules[i];
		int rc;

		out[i] = *m;
		out[i].file = NULL;
		if (!m->file)
			continue;   /* recorded by path only: stays so */
		/* The index keeps two libraries of one name apart; the
		 * file keeps its name, which LLDB shows as the module. */
		if (asprintf(&out[i].file, "modules/%zu/%s", i,
			     base_name(m->system_path)) < 0) {
			out[i].file = NULL;
			return hwt_err_set(err, ENOMEM, "out of memory");
		}
		if ((rc = copy_member(staging, b, m->file, out[i].file, err)))
			return rc;
	}
	return 0;
}

int hwt_bundle_copy(const struct hwt_bundle *b, const char *out_dir,
		    struct hwt_err *err)
{
	struct hwt_bundle o = *b;
	char *staging = NULL;
	int rc;

	if (!strcmp(b->type, HWT_BUNDLE_TYPE_CORESIGHT))
		return hwt_err_set(err, ENOTSUP, "a CoreSight snapshot cannot "
				   "be saved as a bundle; copy the snapshot "
				   "directory %s instead", b->dir);
	if (b->npt_cpus || b->kernel_file)
		return hwt_err_set(err, ENOTSUP, "a per-cpu or kernel Intel PT "
				   "trace cannot be saved as a bundle; copy the "
				   "directory %s instead", b->dir);
	o.threads = calloc(b->nthreads ? b->nthreads : 1, sizeof(*o.threads));
	o.modules = calloc(b->nmodules ? b->nmodules : 1, sizeof(*o.modules));
	o.core = NULL;
	o.data_history = NULL;
	if (!o.threads || !o.modules) {
		rc = hwt_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = hwt_bundle_stage_begin(out_dir, &staging, err)))
		goto out;
	if (!(rc = copy_threads(staging, b, o.threads, err)) &&
	    !(rc = copy_modules(staging, b, o.modules, err)) && b->core) {
		o.core = "core";
		rc = copy_member(staging, b, b->core, o.core, err);
	}
	if (!rc && b->data_history) {
		o.data_history = HWT_BUNDLE_DATA_HISTORY;
		rc = copy_member(staging, b, b->data_history, o.data_history,
				 err);
	}
	if (!rc)
		rc = hwt_bundle_stage_commit(staging, out_dir, &o, err);
	if (rc) {
		hwt_err_prefix(err, "saving to %s: ", out_dir);
		hwt_bundle_stage_abort(staging);
	}
	free(staging);
out:
	for (size_t i = 0; o.threads && i < b->nthreads; i++) {
		free(o.threads[i].trace_file);
		free(o.threads[i].index_file);
	}
	for (size_t i = 0; o.modules && i < b->nmodules; i++)
		free(o.modules[i].file);
	free(o.threads);
	free(o.modules);
	return rc;
}
