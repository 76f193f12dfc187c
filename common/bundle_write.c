/* bundle_write.c - write a bundle atomically: everything goes into a
 * staging directory next to the final one, which is renamed into place
 * only when trace.json is complete, so an interrupted write never leaves a
 * half bundle under the final name. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hwt-common.h"

int hwt_bundle_stage_begin(const char *final_dir, char **staging_dir,
			   struct hwt_err *err)
{
	struct stat st;
	char *tmpl;

	if (lstat(final_dir, &st) == 0)
		return hwt_err_set(err, EEXIST, "%s already exists; remove it "
				   "or choose another output directory",
				   final_dir);
	if (asprintf(&tmpl, "%s.tmp-XXXXXX", final_dir) < 0)
		return hwt_err_set(err, ENOMEM, "out of memory");
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

static int write_all(int fd, const void *data, size_t size)
{
	const uint8_t *p = data;

	while (size) {
		ssize_t n = write(fd, p, size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		size -= (size_t)n;
	}
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
		rc = write_all(fd, data, size);
		if (close(fd) < 0 && !rc)
			rc = -errno;
		if (rc)
			hwt_err_set(err, -rc, "writing %s: %s", path,
				    strerror(-rc));
	}
	free(path);
	return rc;
}

int hwt_bundle_stage_copy(const char *staging_dir, const char *rel,
			  const char *src, struct hwt_err *err)
{
	uint8_t *data;
	size_t size;
	int rc;

	/* Modules are ELF files of bounded size; 1 GiB is far above any. */
	rc = hwt_read_file(src, 1u << 30, &data, &size, err);
	if (rc)
		return rc;
	rc = hwt_bundle_stage_write(staging_dir, rel, data, size, err);
	free(data);
	return rc;
}

static json_t *cpu_json(const struct hwt_cpu_info *cpu)
{
	return json_pack("{s:s, s:i, s:i, s:i}", "vendor", cpu->vendor,
			 "family", cpu->family, "model", cpu->model,
			 "stepping", cpu->stepping);
}

static json_t *threads_json(const struct hwt_bundle *b)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < b->nthreads; i++) {
		const struct hwt_bundle_thread *t = &b->threads[i];
		json_t *o = json_pack("{s:I, s:s, s:I, s:I, s:I, s:I}",
				      "tid", (json_int_t)t->tid,
				      hwt_bundle_trace_key(b->type),
				      t->trace_file,
				      "traceSize", (json_int_t)t->trace_size,
				      "lostBytes", (json_int_t)t->lost_bytes,
				      "lostInstructions",
				      (json_int_t)t->lost_insns,
				      "instructions",
				      (json_int_t)t->insn_total);

		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* LLDB's schema takes loadAddress as a "0x..." string or a number; our
 * own bundles write the number, LLDB bundles the string LLDB writes. */
static json_t *modules_json(const struct hwt_bundle *b, bool hex_address)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < b->nmodules; i++) {
		const struct hwt_bundle_module *m = &b->modules[i];
		char addr[24];
		json_t *o;

		snprintf(addr, sizeof(addr), "0x%llx",
			 (unsigned long long)m->load_address);
		o = json_pack("{s:s, s:o}", "systemPath", m->system_path,
			      "loadAddress", hex_address ? json_string(addr)
			      : json_integer((json_int_t)m->load_address));
		if (o && m->file && json_object_set_new(o, "file",
							json_string(m->file)))
			json_decref(o), o = NULL;
		if (o && m->uuid && json_object_set_new(o, "uuid",
							json_string(m->uuid)))
			json_decref(o), o = NULL;
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *stop_json(const struct hwt_bundle *b)
{
	switch (b->stop_reason) {
	case HWT_STOP_EXITED:
		return json_pack("{s:s, s:i}", "reason", "exited", "status",
				 b->stop_status);
	case HWT_STOP_SIGNALED:
		return json_pack("{s:s, s:i}", "reason", "signaled", "signal",
				 b->stop_signal);
	case HWT_STOP_FAULT:
		return json_pack("{s:s, s:i, s:I, s:I}", "reason", "fault",
				 "signal", b->stop_signal, "tid",
				 (json_int_t)b->stop_tid, "pc",
				 (json_int_t)b->stop_pc);
	case HWT_STOP_NONE:
		break;
	}
	return json_pack("{s:s}", "reason", "running");
}

static json_t *bundle_json(const struct hwt_bundle *b)
{
	json_t *proc = json_pack("{s:I, s:s, s:o, s:o}", "pid",
				 (json_int_t)b->pid, "triple",
				 b->triple ? b->triple : "x86_64-unknown-linux-gnu",
				 "threads", threads_json(b), "modules",
				 modules_json(b, false));
	json_t *root = json_pack("{s:s, s:i, s:o, s:[o], s:o}", "type", b->type,
				 "version", HWT_BUNDLE_VERSION, "cpuInfo",
				 cpu_json(&b->cpu), "processes", proc, "stop",
				 stop_json(b));

	if (root && b->core && json_object_set_new(root, "core",
						   json_string(b->core))) {
		json_decref(root);
		return NULL;
	}
	return root;
}

/* ---- LLDB's intel-pt schema (docs/lldb.md) ----------------------------
 * What `trace schema intel-pt` asks for and nothing else: no version, no
 * sizes, no stop (LLDB rejects no unknown keys today, but a bundle meant
 * for another tool should not depend on that). Addresses are written as
 * "0x..." strings, as LLDB's own `trace save` does. */

static json_t *pt_threads_json(const struct hwt_bundle *b)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr && i < b->nthreads; i++) {
		json_t *o = json_pack("{s:I, s:s}", "tid",
				      (json_int_t)b->threads[i].tid,
				      "iptTrace", b->threads[i].trace_file);

		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *pt_bundle_json(const struct hwt_bundle *b)
{
	json_t *proc = json_pack("{s:I, s:s, s:o, s:o}", "pid",
				 (json_int_t)b->pid, "triple",
				 b->triple ? b->triple : "x86_64-unknown-linux-gnu",
				 "threads", pt_threads_json(b), "modules",
				 modules_json(b, true));

	return json_pack("{s:s, s:o, s:[o]}", "type", HWT_BUNDLE_TYPE_PT,
			 "cpuInfo", cpu_json(&b->cpu), "processes", proc);
}

int hwt_bundle_stage_commit(const char *staging_dir, const char *final_dir,
			    const struct hwt_bundle *b, struct hwt_err *err)
{
	json_t *root = strcmp(b->type, HWT_BUNDLE_TYPE_PT) ? bundle_json(b) :
		pt_bundle_json(b);
	char *text;
	int rc;

	if (!root)
		return hwt_err_set(err, ENOMEM, "cannot build trace.json");
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
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

static int remove_entry(const char *path, const struct stat *st, int type,
			struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

void hwt_bundle_stage_abort(const char *staging_dir)
{
	/* FTW_PHYS: a symlink planted inside is removed, not followed. */
	nftw(staging_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
