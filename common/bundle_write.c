// SPDX-License-Identifier: BSD-2-Clause
/* bundle_write.c - write a bundle atomically: everything goes into a
 * staging directory next to the final one, which is renamed into place
 * only when trace.json is complete, so an interrupted write never leaves a
 * half bundle under the final name. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "hwt-common.h"
#include "hwt-json.h"
#include "util.h"

/* Staging directories of final_dir left by a recorder killed before it
 * finished: FINAL.tmp-<pid>-XXXXXX beside it, its pid gone. */
static void remove_stale_staging(const char *final_dir)
{
	char *copy = strdup(final_dir), *slash, *prefix = NULL;

	if (!copy)
		return;
	slash = strrchr(copy, '/');
	if (slash && slash[1] &&
	    asprintf(&prefix, "%s.tmp-", slash + 1) >= 0) {
		*slash = 0;
		hwt_remove_stale(slash == copy ? "/" : copy, prefix);
	} else if (!slash && asprintf(&prefix, "%s.tmp-", copy) >= 0) {
		hwt_remove_stale(".", prefix);
	}
	free(prefix);
	free(copy);
}

int hwt_bundle_stage_begin(const char *final_dir, char **staging_dir,
			   struct hwt_err *err)
{
	struct stat st;
	char *tmpl;

	if (lstat(final_dir, &st) == 0)
		return hwt_err_set(err, EEXIST, "%s already exists; remove it "
				   "or choose another output directory",
				   final_dir);
	if (asprintf(&tmpl, "%s.tmp-%d-XXXXXX", final_dir, (int)getpid()) < 0)
		return hwt_err_set(err, ENOMEM, "out of memory");
	remove_stale_staging(final_dir);
	if (!mkdtemp(tmpl)) {
		int e = errno;

		free(tmpl);
		return hwt_err_set(err, e, "cannot create a staging directory "
				   "next to %s: %s", final_dir, strerror(e));
	}
	*staging_dir = tmpl;
	return 0;
}

static int mkdirs_for(const char *path)
{
	char *p = strdup(path);

	if (!p)
		return -ENOMEM;
	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			int e = errno;

			free(p);
			return -e;
		}
		*s = '/';
	}
	free(p);
	return 0;
}

int hwt_bundle_stage_write(const char *staging_dir, const char *rel,
			   const void *data, size_t size, struct hwt_err *err)
{
	char *path;
	int fd, rc;

	if (asprintf(&path, "%s/%s", staging_dir, rel) < 0)
		return hwt_err_set(err, ENOMEM, "out of memory");
	rc = mkdirs_for(path);
	fd = rc ? -1 : open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = hwt_err_set(err, rc ? -rc : errno, "cannot create %s: %s",
				 path, strerror(rc ? -rc : errno));
	} else {
		rc = hwt_write_all(fd, data, size);
		if (close(fd) < 0 && !rc)
			rc = -errno;
		if (rc)
			hwt_err_set(err, -rc, "writing %s: %s", path,
				    strerror(-rc));
	}
	free(path);
	return rc;
}

/* Copy src to staging_dir/rel a piece at a time: a whole recording's
 * trace may be larger than memory should hold. */
int hwt_bundle_stage_copy(const char *staging_dir, const char *rel,
			  const char *src, struct hwt_err *err)
{
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc;
	char *path = NULL, *buf;

	if (in < 0)
		return hwt_err_set(err, errno, "%s: %s", src, strerror(errno));
	if (!(buf = malloc(1 << 16))) {
		close(in);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	rc = hwt_bundle_stage_write(staging_dir, rel, "", 0, err);
	if (!rc && asprintf(&path, "%s/%s", staging_dir, rel) < 0) {
		path = NULL;
		rc = hwt_err_set(err, ENOMEM, "out of memory");
	}
	if (!rc && (out = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		rc = hwt_err_set(err, errno, "%s: %s", path, strerror(errno));
	while (!rc) {
		ssize_t n = read(in, buf, 1 << 16);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = hwt_err_set(err, errno, "reading %s: %s", src,
					 strerror(errno));
		else if (n == 0)
			break;
		else if ((rc = hwt_write_all(out, buf, (size_t)n)))
			hwt_err_set(err, -rc, "writing %s: %s", path,
				    strerror(-rc));
	}
	if (out >= 0 && close(out) < 0 && !rc)
		rc = hwt_err_set(err, errno, "writing %s: %s", path,
				 strerror(errno));
	close(in);
	free(buf);
	free(path);
	return rc;
}

/* ---- trace.json ---------------------------------------------------------
 * Built with json-c, which writes every uint64 exactly (addresses of the
 * upper half, LLDB's timeZero). Each builder returns NULL when out of
 * memory; hwt_json_add takes such a NULL and fails, so one check at the
 * end of a chain of adds is enough. */

static int add_str(json_object *o, const char *key, const char *v)
{
	return hwt_json_add(o, key, json_object_new_string(v));
}

static int add_i64(json_object *o, const char *key, int64_t v)
{
	return hwt_json_add(o, key, json_object_new_int64(v));
}

static int add_u64(json_object *o, const char *key, uint64_t v)
{
	return hwt_json_add(o, key, json_object_new_uint64(v));
}

static json_object *done(json_object *o, int rc)
{
	if (!rc)
		return o;
	json_object_put(o);
	return NULL;
}

static json_object *cpu_json(const struct hwt_cpu_info *cpu)
{
	json_object *o = json_object_new_object();

	return done(o, add_str(o, "vendor", cpu->vendor) ||
		    add_i64(o, "family", cpu->family) ||
		    add_i64(o, "model", cpu->model) ||
		    add_i64(o, "stepping", cpu->stepping));
}

static json_object *thread_json(const struct hwt_bundle *b,
				const struct hwt_bundle_thread *t)
{
	json_object *o = json_object_new_object();

	return done(o, add_i64(o, "tid", t->tid) ||
		    add_str(o, hwt_bundle_trace_key(b->type), t->trace_file) ||
		    add_u64(o, "traceSize", t->trace_size) ||
		    (t->encoding == HWT_TRACE_ZSTD &&
		     (add_str(o, "traceEncoding", "zstd") ||
		      add_u64(o, "traceDecodedSize", t->decoded_size))) ||
		    (t->index_file &&
		     (add_str(o, "traceIndex", t->index_file) ||
		      add_u64(o, "traceIndexSize", t->index_size))) ||
		    add_u64(o, "lostBytes", t->lost_bytes) ||
		    add_u64(o, "lostInstructions", t->lost_insns) ||
		    add_u64(o, "instructions", t->insn_total) ||
		    (t->step_repairs &&
		     add_u64(o, "stepRepairs", t->step_repairs)) ||
		    (t->step_gaps && add_u64(o, "stepGaps", t->step_gaps)));
}

/* LLDB's schema takes loadAddress as a "0x..." string or a number; our
 * own bundles write the number, LLDB bundles the string LLDB writes. */
static json_object *module_json(const struct hwt_bundle_module *m,
				bool hex_address)
{
	json_object *o = json_object_new_object();
	char addr[24];

	snprintf(addr, sizeof(addr), "0x%llx",
		 (unsigned long long)m->load_address);
	return done(o, add_str(o, "systemPath", m->system_path) ||
		    (m->file && add_str(o, "file", m->file)) ||
		    (hex_address ? add_str(o, "loadAddress", addr) :
		     add_u64(o, "loadAddress", m->load_address)) ||
		    (m->uuid && add_str(o, "uuid", m->uuid)));
}

/* Process p's modules. */
static json_object *modules_json(const struct hwt_bundle *b, size_t p,
				 bool hex_address)
{
	json_object *arr = json_object_new_array();
	int rc = 0;

	for (size_t i = 0; !rc && i < b->nmodules; i++)
		if (b->modules[i].process == p)
			rc = hwt_json_append(arr, module_json(&b->modules[i],
							      hex_address));
	return done(arr, rc);
}

static json_object *stop_reason_json(const struct hwt_bundle *b)
{
	json_object *o = json_object_new_object();

	switch (b->stop_reason) {
	case HWT_STOP_EXITED:
		return done(o, add_str(o, "reason", "exited") ||
			    add_i64(o, "status", b->stop_status));
	case HWT_STOP_SIGNALED:
		return done(o, add_str(o, "reason", "signaled") ||
			    add_i64(o, "signal", b->stop_signal));
	case HWT_STOP_FAULT:
		return done(o, add_str(o, "reason", "fault") ||
			    add_i64(o, "signal", b->stop_signal) ||
			    add_i64(o, "tid", b->stop_tid) ||
			    add_u64(o, "pc", b->stop_pc));
	case HWT_STOP_NONE:
		break;
	}
	return done(o, add_str(o, "reason", "running"));
}

static json_object *stop_json(const struct hwt_bundle *b)
{
	json_object *o = stop_reason_json(b);

	if (o && b->stop_note && add_str(o, "note", b->stop_note)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* Process p with its threads, each written by thread, and its
 * modules. */
static json_object *process_json(const struct hwt_bundle *b, size_t p,
				 json_object *(*thread)(
					 const struct hwt_bundle *,
					 const struct hwt_bundle_thread *),
				 bool hex_address)
{
	json_object *proc = json_object_new_object();
	json_object *threads = json_object_new_array();
	/* LLDB's schema has one program per process: no exec. */
	uint32_t exec = b->processes && p < b->nprocesses && !hex_address ?
		b->processes[p].exec : 0;
	int rc = !threads || add_i64(proc, "pid", hwt_bundle_process_pid(b, p)) ||
		(exec && add_i64(proc, "exec", exec)) ||
		add_str(proc, "triple", b->triple ? b->triple :
			"x86_64-unknown-linux-gnu");

	for (size_t i = 0; !rc && i < b->nthreads; i++)
		if (b->threads[i].process == p)
			rc = hwt_json_append(threads, thread(b, &b->threads[i]));
	if (rc) {
		json_object_put(threads);
		return done(proc, rc);
	}
	return done(proc, hwt_json_add(proc, "threads", threads) ||
		    hwt_json_add(proc, "modules",
				 modules_json(b, p, hex_address)));
}

/* Every process, the program's first. */
static json_object *processes_json(const struct hwt_bundle *b,
				   json_object *(*thread)(
					   const struct hwt_bundle *,
					   const struct hwt_bundle_thread *),
				   bool hex_address)
{
	json_object *arr = json_object_new_array();
	int rc = 0;

	for (size_t p = 0; !rc && p < hwt_bundle_nprocesses(b); p++)
		rc = hwt_json_append(arr, process_json(b, p, thread,
						       hex_address));
	return done(arr, rc);
}

static json_object *bundle_json(const struct hwt_bundle *b)
{
	json_object *root = json_object_new_object();

	return done(root, add_str(root, "type", b->type) ||
		    add_i64(root, "version", HWT_BUNDLE_VERSION) ||
		    hwt_json_add(root, "cpuInfo", cpu_json(&b->cpu)) ||
		    hwt_json_add(root, "processes",
				 processes_json(b, thread_json, false)) ||
		    hwt_json_add(root, "stop", stop_json(b)) ||
		    (b->core && add_str(root, "core", b->core)) ||
		    (b->data_history &&
		     add_str(root, "dataHistory", b->data_history)));
}

/* ---- LLDB's intel-pt schema (docs/lldb.md) ----------------------------
 * What `trace schema intel-pt` asks for and nothing else: no version, no
 * sizes, no stop (LLDB rejects no unknown keys today, but a bundle meant
 * for another tool should not depend on that). Addresses are written as
 * "0x..." strings, as LLDB's own `trace save` does. */

/* A per-cpu bundle's threads have no trace of their own. */
static json_object *pt_thread_json(const struct hwt_bundle *b,
				   const struct hwt_bundle_thread *t)
{
	json_object *o = json_object_new_object();

	return done(o, add_i64(o, "tid", t->tid) ||
		    (t->trace_file && add_str(o, "iptTrace", t->trace_file)));
}

static json_object *pt_cpu_json(const struct hwt_bundle_pt_cpu *c)
{
	json_object *o = json_object_new_object();

	return done(o, add_i64(o, "id", c->id) ||
		    add_str(o, "iptTrace", c->trace_file) ||
		    add_str(o, "contextSwitchTrace", c->switch_file));
}

static json_object *pt_cpus_json(const struct hwt_bundle *b)
{
	json_object *arr = json_object_new_array();
	int rc = 0;

	for (size_t i = 0; !rc && i < b->npt_cpus; i++)
		rc = hwt_json_append(arr, pt_cpu_json(&b->pt_cpus[i]));
	return done(arr, rc);
}

/* timeZero as the number it is, above 2^63 on real machines (LLDB
 * reads it as a number or a string). */
static json_object *tsc_conv_json(const struct hwt_tsc_conv *c)
{
	json_object *o = json_object_new_object();

	return done(o, add_u64(o, "timeMult", c->time_mult) ||
		    add_u64(o, "timeShift", c->time_shift) ||
		    add_u64(o, "timeZero", c->time_zero));
}

static json_object *pt_bundle_json(const struct hwt_bundle *b)
{
	json_object *root = json_object_new_object();

	return done(root, add_str(root, "type", HWT_BUNDLE_TYPE_PT) ||
		    hwt_json_add(root, "cpuInfo", cpu_json(&b->cpu)) ||
		    hwt_json_add(root, "processes",
				 processes_json(b, pt_thread_json, true)) ||
		    (b->npt_cpus &&
		     hwt_json_add(root, "cpus", pt_cpus_json(b))) ||
		    (b->has_tsc_conv &&
		     hwt_json_add(root, "tscPerfZeroConversion",
				  tsc_conv_json(&b->tsc_conv))));
}

int hwt_bundle_stage_commit(const char *staging_dir, const char *final_dir,
			    const struct hwt_bundle *b, struct hwt_err *err)
{
	json_object *root = strcmp(b->type, HWT_BUNDLE_TYPE_PT) ?
		bundle_json(b) : pt_bundle_json(b);
	char *text;
	int rc;

	if (!root)
		return hwt_err_set(err, ENOMEM, "cannot build trace.json");
	text = hwt_json_text(root, true);
	json_object_put(root);
	if (!text)
		return hwt_err_set(err, ENOMEM, "cannot serialise trace.json");
	rc = hwt_bundle_stage_write(staging_dir, "trace.json", text,
				    strlen(text), err);
	free(text);
	if (rc)
		return rc;
	/* NOREPLACE: never clobber a bundle someone created meanwhile. */
	if (renameat2(AT_FDCWD, staging_dir, AT_FDCWD, final_dir,
		      RENAME_NOREPLACE) < 0)
		return hwt_err_set(err, errno, "cannot move %s to %s: %s",
				   staging_dir, final_dir, strerror(errno));
	return 0;
}

void hwt_bundle_stage_abort(const char *staging_dir)
{
	hwt_remove_tree(staging_dir);
}
