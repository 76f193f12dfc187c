/* save.c - qHwtSave:HEXDIR (hwtrace.py's `hwt save DIR`): write what the
 * session holds as a trace bundle through common/'s bundle writer, for
 * `hwtrace dump`, `hwt-server --bundle` or LLDB later. Live: every
 * thread's history up to this stop and copies of the modules seen; a
 * recording: a copy of its bundle. DIR must not exist yet. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-collect.h"
#include "server.h"

#define SAVE_MAX_PATH 4096

static void free_staged(struct hwt_bundle *b)
{
	for (size_t i = 0; i < b->nthreads; i++)
		free(b->threads[i].trace_file);
	for (size_t i = 0; i < b->nmodules; i++) {
		free(b->modules[i].system_path);
		free(b->modules[i].file);
		free(b->modules[i].uuid);
	}
	free(b->threads);
	free(b->modules);
}

static int stage_threads(const char *staging, const struct hwt_collect_thread *t,
			 size_t n, struct hwt_bundle *b, struct hwt_err *err)
{
	b->threads = calloc(n ? n : 1, sizeof(*b->threads));
	if (!b->threads)
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct hwt_bundle_thread *bt = &b->threads[b->nthreads];
		int rc;

		if (t[i].format != HWT_COLLECT_FMT_SW)
			return hwt_err_set(err, ENOTSUP, "thread %d: only hwt-sw "
					   "traces are saved live", (int)t[i].tid);
		if (asprintf(&bt->trace_file, "threads/%d.hwtsw", (int)t[i].tid) < 0)
			return hwt_err_set(err, ENOMEM, "out of memory");
		b->nthreads++;
		bt->tid = t[i].tid;
		bt->trace_size = t[i].trace_size;
		bt->lost_bytes = t[i].lost_bytes;
		bt->lost_insns = t[i].lost_insns;
		bt->insn_total = t[i].insn_total;
		rc = hwt_bundle_stage_write(staging, bt->trace_file, t[i].trace,
					    t[i].trace_size, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Each file once, under modules/ by its system path; a file gone since it
 * was mapped keeps its path only. */
static int stage_modules(const char *staging, const struct hwt_collect_module *m,
			 size_t n, struct hwt_bundle *b, struct hwt_err *err)
{
	b->modules = calloc(n ? n : 1, sizeof(*b->modules));
	if (!b->modules)
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		struct hwt_bundle_module *bm = &b->modules[b->nmodules];
		const char *rel = m[i].path;

		bm->system_path = strdup(m[i].path);
		bm->uuid = m[i].build_id ? strdup(m[i].build_id) : NULL;
		bm->load_address = m[i].load_address;
		if (!bm->system_path)
			return hwt_err_set(err, ENOMEM, "out of memory");
		b->nmodules++;
		for (size_t j = 0; j + 1 < b->nmodules && !bm->file; j++)
			if (!strcmp(b->modules[j].system_path, bm->system_path) &&
			    b->modules[j].file && !(bm->file = strdup(b->modules[j].file)))
				return hwt_err_set(err, ENOMEM, "out of memory");
		if (bm->file || rel[0] != '/')
			continue;
		while (*rel == '/')
			rel++;
		if (asprintf(&bm->file, "modules/%s", rel) < 0) {
			bm->file = NULL;
			return hwt_err_set(err, ENOMEM, "out of memory");
		}
		if (hwt_bundle_stage_copy(staging, bm->file, bm->system_path, err)) {
			free(bm->file);
			bm->file = NULL;
			hwt_err_clear(err);
		}
	}
	return 0;
}

int save_collected(struct hwt_collector *c, const struct hwt_collect_thread *t,
		   size_t nthreads, const char *dir, struct hwt_err *err)
{
	const struct hwt_collect_module *m;
	size_t nmods = hwt_collect_modules(c, &m);
	struct hwt_bundle b = {
		.type = HWT_BUNDLE_TYPE_SW,
		.cpu = hwt_collect_cpu_info(),
		.pid = hwt_collect_pid(c),
		.triple = "x86_64-unknown-linux-gnu",
		/* Saved from a stop: the program was still running. */
		.stop_reason = HWT_STOP_NONE,
	};
	char *staging = NULL;
	int rc = hwt_bundle_stage_begin(dir, &staging, err);

	if (!rc)
		rc = stage_threads(staging, t, nthreads, &b, err);
	if (!rc)
		rc = stage_modules(staging, m, nmods, &b, err);
	if (!rc)
		rc = hwt_bundle_stage_commit(staging, dir, &b, err);
	if (rc && staging)
		hwt_bundle_stage_abort(staging);
	free(staging);
	free_staged(&b);
	return rc;
}

bool save_handle(struct server *s, const char *pkt, int *rc)
{
	struct hwt_err err = { 0 };
	char dir[SAVE_MAX_PATH + 1], msg[700];
	const char *hex;
	size_t n;

	if (strncmp(pkt, "qHwtSave:", 9) != 0)
		return false;
	hex = pkt + 9;
	n = strlen(hex);
	if (n == 0 || n % 2 || n / 2 > SAVE_MAX_PATH) {
		*rc = rsp_send_str(&s->conn, "E.qHwtSave takes a directory in hex.");
		return true;
	}
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1 || v == 0 ||
		    !strchr("0123456789abcdefABCDEF", hex[2 * i]) ||
		    !strchr("0123456789abcdefABCDEF", hex[2 * i + 1])) {
			*rc = rsp_send_str(&s->conn, "E.qHwtSave takes a directory in hex.");
			return true;
		}
		dir[i] = (char)v;
	}
	dir[n / 2] = '\0';
	if (s->ops->save(s, dir, &err)) {
		snprintf(msg, sizeof(msg), "E.%s", err.msg);
		*rc = rsp_send_str(&s->conn, msg);
	} else {
		*rc = rsp_send_str(&s->conn, "OK");
	}
	return true;
}
