// SPDX-License-Identifier: BSD-2-Clause
/* bundle_read.c - read and validate a trace bundle's trace.json.
 *
 * Every field is checked for presence and type, every named file for
 * existence and size, and each error names the file and the field so the
 * user can tell what is wrong with the bundle. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hwt-common.h"
#include "hwt-json.h"
#include "util.h"

struct reader {
	const char *json_path;   /* for messages */
	struct hwt_err *err;
	bool lldb;               /* an LLDB intel-pt bundle (docs/intel-pt.md) */
	/* The process being read, for field paths: processes[proc], whose
	 * threads and modules start at these indexes of the bundle's. */
	size_t proc, first_thread, first_module;
};

static bool is_object(const json_object *v)
{
	return json_object_is_type(v, json_type_object);
}

static bool is_array(const json_object *v)
{
	return json_object_is_type(v, json_type_array);
}

static int field_err(struct reader *rd, const char *field, const char *what)
{
	return hwt_err_set(rd->err, EINVAL, "%s: field '%s' %s", rd->json_path,
			   field, what);
}

/* A field's value; null counts as absent (LLDB's `trace save` writes
 * "cpus": null and the like for what a trace does not have). */
static json_object *field_value(json_object *obj, const char *field)
{
	json_object *v = NULL;

	json_object_object_get_ex(obj, field, &v);
	return json_object_is_type(v, json_type_null) ? NULL : v;
}

static json_object *get(struct reader *rd, json_object *obj,
			const char *field, bool required, int *rc)
{
	json_object *v = field_value(obj, field);

	if (!v && required)
		*rc = field_err(rd, field, "is missing");
	return v;
}

/* The same, naming the field by its whole path when it is missing. */
static json_object *get_at(struct reader *rd, json_object *obj,
			   const char *field, const char *path, bool required,
			   int *rc)
{
	json_object *v = field_value(obj, field);

	if (!v && required)
		*rc = field_err(rd, path, "is missing");
	return v;
}

static int get_string(struct reader *rd, json_object *obj,
		      const char *field, const char *path, bool required,
		      char **out)
{
	int rc = 0;
	json_object *v = get_at(rd, obj, field, path, required, &rc);
	size_t len;

	*out = NULL;
	if (!v)
		return rc;
	len = json_object_is_type(v, json_type_string) ?
		(size_t)json_object_get_string_len(v) : 0;
	if (len == 0 || len >= PATH_MAX)
		return field_err(rd, path, "must be a non-empty string");
	if (strlen(json_object_get_string(v)) != len)
		return field_err(rd, path, "contains a NUL character");
	*out = strdup(json_object_get_string(v));
	return *out ? 0 : hwt_err_set(rd->err, ENOMEM, "out of memory");
}

/* Integers may be JSON numbers or "0x..." / decimal strings, as in LLDB's
 * bundles; every value of the uint64 range is kept exactly. */
static int get_u64(struct reader *rd, json_object *obj, const char *field,
		   const char *path, bool required, uint64_t *out)
{
	char why[96], what[200];
	int rc = 0;
	json_object *v = get_at(rd, obj, field, path, required, &rc);

	if (!v || hwt_json_get_u64(v, out, why, sizeof(why)) == 0)
		return rc;
	snprintf(what, sizeof(what), "must be a non-negative integer (a "
		 "number or a string such as \"0x7f00\"); %s", why);
	return field_err(rd, path, what);
}

static int get_i64(struct reader *rd, json_object *obj, const char *field,
		   const char *path, bool required, int64_t *out)
{
	char why[96], what[160];
	int rc = 0;
	json_object *v = get_at(rd, obj, field, path, required, &rc);

	if (!v || hwt_json_get_i64(v, out, why, sizeof(why)) == 0)
		return rc;
	snprintf(what, sizeof(what), "must be an integer; %s", why);
	return field_err(rd, path, what);
}

static int get_int(struct reader *rd, json_object *obj, const char *field,
		   const char *path, int *out)
{
	int64_t v = 0;
	int rc = get_i64(rd, obj, field, path, true, &v);

	if (rc)
		return rc;
	if (v < INT_MIN || v > INT_MAX)
		return field_err(rd, path, "is out of range");
	*out = (int)v;
	return 0;
}

/* A member path must stay inside the bundle: relative, no "..". */
static int check_member(struct reader *rd, const char *field, const char *rel)
{
	/* LLDB's bundles name files anywhere: absolute or relative. */
	if (rd->lldb)
		return 0;
	if (rel[0] == '/' || strcmp(rel, "..") == 0 || strncmp(rel, "../", 3) == 0 ||
	    strstr(rel, "/../") ||
	    (strlen(rel) >= 3 && strcmp(rel + strlen(rel) - 3, "/..") == 0))
		return field_err(rd, field,
				 "must be a path inside the bundle directory");
	return 0;
}

static int check_file(struct reader *rd, const struct hwt_bundle *b,
		      const char *field, const char *rel, bool has_size,
		      uint64_t size)
{
	char *path = hwt_bundle_path(b, rel);
	struct stat st;
	int rc = 0;

	if (!path)
		return hwt_err_set(rd->err, ENOMEM, "out of memory");
	if (stat(path, &st) < 0)
		rc = hwt_err_set(rd->err, errno, "%s: field '%s': %s: %s",
				 rd->json_path, field, path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		rc = hwt_err_set(rd->err, EINVAL,
				 "%s: field '%s': %s is not a regular file",
				 rd->json_path, field, path);
	else if (has_size && (uint64_t)st.st_size != size)
		rc = hwt_err_set(rd->err, EINVAL,
				 "%s: field '%s': %s is %lld bytes but "
				 "trace.json says %llu",
				 rd->json_path, field, path,
				 (long long)st.st_size,
				 (unsigned long long)size);
	free(path);
	return rc;
}

/* ---- Intel PT (LLDB's intel-pt schema) ---------------------------------
 * LLDB's own bundles carry no sizes: the file's size is taken. */
static int file_size(struct reader *rd, const struct hwt_bundle *b,
		     const char *field, const char *rel, uint64_t *size)
{
	char *path = hwt_bundle_path(b, rel);
	struct stat st;
	int rc;

	if (!path)
		return hwt_err_set(rd->err, ENOMEM, "out of memory");
	rc = check_file(rd, b, field, rel, false, 0);
	if (!rc && stat(path, &st) == 0)
		*size = (uint64_t)st.st_size;
	free(path);
	return rc;
}

/* The x86 cpuid signature bounds: family up to 0xf + 0xff (extended),
 * model up to 0xff, stepping 4 bits. libipt picks errata by them. */
static int check_pt_cpu(struct reader *rd, const struct hwt_bundle *b)
{
	if (strcmp(b->cpu.vendor, "GenuineIntel"))
		return hwt_err_set(rd->err, ENOTSUP, "%s: field "
				   "'cpuInfo.vendor' is '%s': Intel PT traces "
				   "come from Intel cpus only, the vendor must "
				   "be GenuineIntel", rd->json_path,
				   b->cpu.vendor);
	if (b->cpu.family < 0 || b->cpu.family > 0x10e)
		return field_err(rd, "cpuInfo.family", "is not an x86 cpu family "
				 "(0 to 270); give the cpuid family of the "
				 "traced cpu");
	if (b->cpu.model < 0 || b->cpu.model > 0xff)
		return field_err(rd, "cpuInfo.model", "is not an x86 cpu model "
				 "(0 to 255); give the cpuid model of the "
				 "traced cpu");
	if (b->cpu.stepping < 0 || b->cpu.stepping > 0xf)
		return field_err(rd, "cpuInfo.stepping", "is not an x86 cpu "
				 "stepping (0 to 15)");
	return 0;
}

static int read_pt_cpu(struct reader *rd, struct hwt_bundle *b, json_object *c,
		       size_t i)
{
	struct hwt_bundle_pt_cpu *cpu = &b->pt_cpus[i];
	char path[48];
	int rc;

#define P(f) (snprintf(path, sizeof(path), "cpus[%zu]%s%s", i, *f ? "." : "", f), path)
	if (!is_object(c))
		return field_err(rd, P(""), "must be an object");
	if ((rc = get_i64(rd, c, "id", P("id"), true, &cpu->id)) ||
	    (rc = get_string(rd, c, "iptTrace", P("iptTrace"), true,
			     &cpu->trace_file)) ||
	    (rc = file_size(rd, b, P("iptTrace"), cpu->trace_file,
			    &cpu->trace_size)) ||
	    (rc = get_string(rd, c, "contextSwitchTrace",
			     P("contextSwitchTrace"), true, &cpu->switch_file)))
		return rc;
	if (cpu->id < 0)
		return field_err(rd, P("id"), "must not be negative");
	return check_file(rd, b, P("contextSwitchTrace"), cpu->switch_file,
			  false, 0);
#undef P
}

/* cpus[], tscPerfZeroConversion and kernel: the parts of LLDB's schema
 * outside processes[]. */
static int read_pt_extra(struct reader *rd, json_object *root,
			 struct hwt_bundle *b)
{
	json_object *cpus, *conv, *kernel;
	int64_t mult = 0, shift = 0;
	int rc = 0;

	if ((cpus = get(rd, root, "cpus", false, &rc))) {
		if (!is_array(cpus) || json_object_array_length(cpus) == 0 ||
		    json_object_array_length(cpus) > HWT_BUNDLE_MAX_CPUS)
			return field_err(rd, "cpus",
					 "must be an array of 1 to 4096 cpus");
		b->npt_cpus = json_object_array_length(cpus);
		b->pt_cpus = calloc(b->npt_cpus, sizeof(*b->pt_cpus));
		if (!b->pt_cpus)
			return hwt_err_set(rd->err, ENOMEM, "out of memory");
		for (size_t i = 0; i < b->npt_cpus; i++)
			if ((rc = read_pt_cpu(rd, b,
					json_object_array_get_idx(cpus, i), i)))
				return rc;
	}
	if ((conv = get(rd, root, "tscPerfZeroConversion", b->npt_cpus > 0,
			&rc))) {
		if (!is_object(conv))
			return field_err(rd, "tscPerfZeroConversion",
					 "must be an object");
		if ((rc = get_i64(rd, conv, "timeMult",
				  "tscPerfZeroConversion.timeMult", true,
				  &mult)) ||
		    (rc = get_i64(rd, conv, "timeShift",
				  "tscPerfZeroConversion.timeShift", true,
				  &shift)) ||
		    (rc = get_u64(rd, conv, "timeZero",
				  "tscPerfZeroConversion.timeZero", true,
				  &b->tsc_conv.time_zero)))
			return rc;
		if (mult < 0 || mult > UINT32_MAX)
			return field_err(rd, "tscPerfZeroConversion.timeMult",
					 "must be a 32-bit unsigned integer");
		if (shift < 0 || shift > 63)
			return field_err(rd, "tscPerfZeroConversion.timeShift",
					 "must be 0 to 63");
		b->tsc_conv.time_mult = (uint32_t)mult;
		b->tsc_conv.time_shift = (uint16_t)shift;
		b->has_tsc_conv = true;
	} else if (rc) {
		return hwt_err_prefix(rd->err, "per-cpu traces (cpus) need "
				      "it: ");
	}
	if (!(kernel = get(rd, root, "kernel", false, &rc)))
		return 0;
	if (!is_object(kernel))
		return field_err(rd, "kernel", "must be an object");
	b->kernel_load_address = 0xffffffff81000000ull;
	if ((rc = get_string(rd, kernel, "file", "kernel.file", true,
			     &b->kernel_file)) ||
	    (rc = get_u64(rd, kernel, "loadAddress", "kernel.loadAddress",
			  false, &b->kernel_load_address)))
		return rc;
	return check_file(rd, b, "kernel.file", b->kernel_file, false, 0);
}

static int read_cpu(struct reader *rd, json_object *root, struct hwt_bundle *b)
{
	char *vendor = NULL;
	int rc = 0;
	json_object *cpu = get(rd, root, "cpuInfo", true, &rc);

	if (!cpu)
		return rc;
	if (!is_object(cpu))
		return field_err(rd, "cpuInfo", "must be an object");
	if ((rc = get_string(rd, cpu, "vendor", "cpuInfo.vendor", true, &vendor)))
		return rc;
	if (strlen(vendor) >= sizeof(b->cpu.vendor))
		rc = field_err(rd, "cpuInfo.vendor", "is too long");
	else
		strcpy(b->cpu.vendor, vendor);
	free(vendor);
	if (!rc)
		rc = get_int(rd, cpu, "family", "cpuInfo.family", &b->cpu.family);
	if (!rc)
		rc = get_int(rd, cpu, "model", "cpuInfo.model", &b->cpu.model);
	if (!rc)
		rc = get_int(rd, cpu, "stepping", "cpuInfo.stepping",
			     &b->cpu.stepping);
	return rc;
}

/* traceEncoding (absent: the file is the trace) and, for "zstd", the
 * decoded size the reader will allocate. */
static int read_encoding(struct reader *rd, json_object *t,
			 struct hwt_bundle_thread *th, char *path,
			 size_t cap, size_t i)
{
	char *enc = NULL;
	int rc;

#define P(f) (snprintf(path, cap, "processes[%zu].threads[%zu].%s", rd->proc, \
		      i - rd->first_thread, f), path)
	if ((rc = get_string(rd, t, "traceEncoding", P("traceEncoding"), false,
			     &enc)))
		return rc;
	if (!enc)
		return 0;
	if (strcmp(enc, "zstd")) {
		free(enc);
		return field_err(rd, P("traceEncoding"), "must be \"zstd\" "
				 "(or absent for a trace as recorded)");
	}
	free(enc);
	th->encoding = HWT_TRACE_ZSTD;
	if ((rc = get_u64(rd, t, "traceDecodedSize", P("traceDecodedSize"),
			  true, &th->decoded_size)))
		return rc;
	if (th->decoded_size > HWT_BUNDLE_MAX_DECODED)
		return field_err(rd, P("traceDecodedSize"), "is larger than "
				 "the 16 GiB a trace may decode to");
	/* The index is checked against the trace only when a history is
	 * opened, which scans the trace instead when it does not hold. */
	if ((rc = get_string(rd, t, "traceIndex", P("traceIndex"), false,
			     &th->index_file)) || !th->index_file)
		return rc;
	if ((rc = check_member(rd, P("traceIndex"), th->index_file)))
		return rc;
	return get_u64(rd, t, "traceIndexSize", P("traceIndexSize"), true,
		       &th->index_size);
#undef P
}

static int read_thread(struct reader *rd, struct hwt_bundle *b, json_object *t,
		       size_t i, const char *key)
{
	struct hwt_bundle_thread *th = &b->threads[i];
	char path[80];
	int rc;

#define P(f) (snprintf(path, sizeof(path), "processes[%zu].threads[%zu].%s", \
		      rd->proc, i - rd->first_thread, f), path)
	th->process = rd->proc;
	if (!is_object(t))
		return field_err(rd, (snprintf(path, sizeof(path),
					       "processes[%zu].threads[%zu]",
					       rd->proc, i - rd->first_thread),
				      path), "must be an object");
	if ((rc = get_i64(rd, t, "tid", P("tid"), true, &th->tid)))
		return rc;
	if (th->tid <= 0)
		return field_err(rd, P("tid"), "must be positive");
	if (rd->lldb) {
		/* Per-cpu bundles have the trace in cpus[], not here. */
		if ((rc = get_string(rd, t, key, P(key), b->npt_cpus == 0,
				     &th->trace_file)))
			return rc;
		if (th->trace_file && b->npt_cpus)
			return field_err(rd, P(key), "must not be given in a "
					 "per-cpu bundle (one with 'cpus')");
		return th->trace_file ? file_size(rd, b, P(key), th->trace_file,
						  &th->trace_size) : 0;
	}
	if ((rc = get_string(rd, t, key, P(key), true, &th->trace_file)) ||
	    (rc = check_member(rd, P(key), th->trace_file)) ||
	    (rc = get_u64(rd, t, "traceSize", P("traceSize"), true,
			  &th->trace_size)) ||
	    (rc = get_u64(rd, t, "lostBytes", P("lostBytes"), false,
			  &th->lost_bytes)) ||
	    (rc = get_u64(rd, t, "lostInstructions", P("lostInstructions"),
			  false, &th->lost_insns)) ||
	    (rc = get_u64(rd, t, "instructions", P("instructions"), false,
			  &th->insn_total)) ||
	    (rc = get_u64(rd, t, "stepRepairs", P("stepRepairs"), false,
			  &th->step_repairs)) ||
	    (rc = get_u64(rd, t, "stepGaps", P("stepGaps"), false,
			  &th->step_gaps)))
		return rc;
	if (th->lost_insns > th->insn_total && th->insn_total)
		return field_err(rd, P("lostInstructions"),
				 "is larger than 'instructions'");
	if ((rc = read_encoding(rd, t, th, path, sizeof(path), i)))
		return rc;
	return check_file(rd, b, P(key), th->trace_file, true, th->trace_size);
#undef P
}

static int read_module(struct reader *rd, struct hwt_bundle *b, json_object *m,
		       size_t i)
{
	struct hwt_bundle_module *mod = &b->modules[i];
	char path[80];
	int rc;

#define P(f) (snprintf(path, sizeof(path), "processes[%zu].modules[%zu].%s", \
		      rd->proc, i - rd->first_module, f), path)
	mod->process = rd->proc;
	if (!is_object(m))
		return field_err(rd, (snprintf(path, sizeof(path),
					       "processes[%zu].modules[%zu]",
					       rd->proc, i - rd->first_module),
				      path), "must be an object");
	if ((rc = get_string(rd, m, "systemPath", P("systemPath"), true,
			     &mod->system_path)) ||
	    (rc = get_string(rd, m, "file", P("file"), false, &mod->file)) ||
	    (rc = get_u64(rd, m, "loadAddress", P("loadAddress"), true,
			  &mod->load_address)) ||
	    (rc = get_string(rd, m, "uuid", P("uuid"), false, &mod->uuid)))
		return rc;
	if (mod->file && ((rc = check_member(rd, P("file"), mod->file)) ||
			  (rc = check_file(rd, b, P("file"), mod->file, false, 0))))
		return rc;
	/* LLDB reads a relative systemPath from the bundle's directory too;
	 * where it names nothing there, it is a path on the traced system
	 * (or "[vdso]") and the image looks for it as given. */
	if (rd->lldb && !mod->file && mod->system_path[0] != '/' &&
	    mod->system_path[0] != '[') {
		char *in_bundle = hwt_bundle_path(b, mod->system_path);
		struct stat st;

		if (!in_bundle)
			return hwt_err_set(rd->err, ENOMEM, "out of memory");
		if (stat(in_bundle, &st) == 0 && S_ISREG(st.st_mode) &&
		    !(mod->file = strdup(mod->system_path)))
			rc = hwt_err_set(rd->err, ENOMEM, "out of memory");
		free(in_bundle);
	}
	return rc;
#undef P
}

static int read_stop(struct reader *rd, json_object *root, struct hwt_bundle *b)
{
	static const char *const names[] = {
		[HWT_STOP_NONE] = "running", [HWT_STOP_EXITED] = "exited",
		[HWT_STOP_SIGNALED] = "signaled", [HWT_STOP_FAULT] = "fault",
	};
	char *reason = NULL;
	int64_t v = 0;
	int rc = 0;
	json_object *stop = get(rd, root, "stop", false, &rc);

	if (!stop)
		return 0;
	if (!is_object(stop))
		return field_err(rd, "stop", "must be an object");
	if ((rc = get_string(rd, stop, "reason", "stop.reason", true, &reason)))
		return rc;
	rc = field_err(rd, "stop.reason",
		       "must be one of running, exited, signaled, fault");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(reason, names[i]) == 0) {
			b->stop_reason = (enum hwt_stop_reason)i;
			hwt_err_clear(rd->err);
			rc = 0;
		}
	}
	free(reason);
	if (rc)
		return rc;
	if ((rc = get_string(rd, stop, "note", "stop.note", false,
			     &b->stop_note)))
		return rc;
	if (b->stop_reason == HWT_STOP_EXITED)
		return get_int(rd, stop, "status", "stop.status", &b->stop_status);
	if (b->stop_reason == HWT_STOP_SIGNALED || b->stop_reason == HWT_STOP_FAULT) {
		if ((rc = get_int(rd, stop, "signal", "stop.signal", &b->stop_signal)))
			return rc;
		if (b->stop_signal <= 0 || b->stop_signal >= 65)
			return field_err(rd, "stop.signal", "is not a signal number");
	}
	if (b->stop_reason == HWT_STOP_FAULT) {
		if ((rc = get_i64(rd, stop, "tid", "stop.tid", true, &v)))
			return rc;
		b->stop_tid = v;
		return get_u64(rd, stop, "pc", "stop.pc", true, &b->stop_pc);
	}
	return 0;
}

/* LLDB allows several processes per bundle; hwtrace reads several with
 * per-thread traces and one with per-cpu traces (split into threads by
 * one process's context switches). Check the shape of every element
 * first, so that a broken second process is reported as what it is. */
static int check_pt_processes(struct reader *rd, json_object *procs,
			      const struct hwt_bundle *b)
{
	char path[48];
	int64_t pid;
	int rc = 0;

	if (!is_array(procs) || json_object_array_length(procs) == 0)
		return field_err(rd, "processes", "must be a non-empty array "
				 "(hwtrace reads per-thread and per-cpu "
				 "traces of one process)");
	for (size_t i = 0; i < json_object_array_length(procs); i++) {
		json_object *p = json_object_array_get_idx(procs, i), *t;

		snprintf(path, sizeof(path), "processes[%zu]", i);
		if (!is_object(p))
			return field_err(rd, path, "must be an object");
		snprintf(path, sizeof(path), "processes[%zu].pid", i);
		if ((rc = get_i64(rd, p, "pid", path, true, &pid)))
			return rc;
		snprintf(path, sizeof(path), "processes[%zu].threads", i);
		if (!(t = get_at(rd, p, "threads", path, true, &rc)))
			return rc;
		if (!is_array(t))
			return field_err(rd, path, "must be an array");
		snprintf(path, sizeof(path), "processes[%zu].modules", i);
		if ((t = field_value(p, "modules")) && !is_array(t))
			return field_err(rd, path, "must be an array");
	}
	if (json_object_array_length(procs) > 1 && b->npt_cpus)
		return hwt_err_set(rd->err, ENOTSUP, "%s: field 'processes' "
				   "has %zu processes; hwtrace reads per-cpu "
				   "traces of one process: split the bundle",
				   rd->json_path,
				   json_object_array_length(procs));
	return 0;
}

/* Element count of array field key of process p (where names it for
 * messages), between lo and hi; *n. */
static int array_count(struct reader *rd, json_object *proc, const char *key,
		       bool required, size_t lo, size_t hi, const char *what,
		       json_object **arr, size_t *n)
{
	char where[64], msg[64];
	int rc = 0;

	snprintf(where, sizeof(where), "processes[%zu].%s", rd->proc, key);
	*n = 0;
	if (!(*arr = get_at(rd, proc, key, where, required, &rc)))
		return rc;
	*n = is_array(*arr) ? json_object_array_length(*arr) : 0;
	if (is_array(*arr) && *n >= lo && *n <= hi)
		return 0;
	snprintf(msg, sizeof(msg), "must be an array of %zu to %zu %s", lo,
		 hi, what);
	return field_err(rd, where, msg);
}

/* The threads and modules of every process, the program's first. A
 * bundle holds at most HWT_BUNDLE_MAX_THREADS threads in all, and each
 * process at most HWT_BUNDLE_MAX_MODULES modules. */
static int read_processes(struct reader *rd, json_object *procs,
			  struct hwt_bundle *b)
{
	const char *key = hwt_bundle_trace_key(b->type);
	size_t np = json_object_array_length(procs), nt = 0, nm = 0, n;
	json_object *arr;
	int rc = 0;

	/* Counted first, so that each array is allocated once. */
	for (rd->proc = 0; rd->proc < np; rd->proc++) {
		json_object *proc = json_object_array_get_idx(procs, rd->proc);
		char where[32];

		snprintf(where, sizeof(where), "processes[%zu]", rd->proc);
		if (!is_object(proc))
			return field_err(rd, where, "must be an object");
		if ((rc = array_count(rd, proc, "threads", true, 1,
				      HWT_BUNDLE_MAX_THREADS, "threads", &arr,
				      &n)))
			return rc;
		if ((nt += n) > HWT_BUNDLE_MAX_THREADS)
			return field_err(rd, "processes", "must hold at most "
					 "4096 threads in all");
		if ((rc = array_count(rd, proc, "modules", false, 0,
				      HWT_BUNDLE_MAX_MODULES, "modules", &arr,
				      &n)))
			return rc;
		nm += n;
	}
	b->processes = calloc(np, sizeof(*b->processes));
	b->threads = calloc(nt, sizeof(*b->threads));
	b->modules = calloc(nm ? nm : 1, sizeof(*b->modules));
	if (!b->processes || !b->threads || !b->modules)
		return hwt_err_set(rd->err, ENOMEM, "out of memory");
	/* All counted in, so that freeing a bundle read in part frees what
	 * was read. */
	b->nprocesses = np;
	b->nthreads = nt;
	b->nmodules = nm;
	nt = nm = 0;
	for (rd->proc = 0; rd->proc < np; rd->proc++) {
		json_object *proc = json_object_array_get_idx(procs, rd->proc);
		struct hwt_bundle_process *bp = &b->processes[rd->proc];
		uint64_t exec;
		char where[48];

		snprintf(where, sizeof(where), "processes[%zu].pid", rd->proc);
		if ((rc = get_i64(rd, proc, "pid", where, true, &bp->pid)))
			return rc;
		snprintf(where, sizeof(where), "processes[%zu].exec", rd->proc);
		exec = 0;
		if ((rc = get_u64(rd, proc, "exec", where, false, &exec)))
			return rc;
		if (exec > HWT_BUNDLE_MAX_EXECS)
			return field_err(rd, where, "must be at most 4096");
		bp->exec = (uint32_t)exec;
		for (size_t q = 0; q < rd->proc; q++) {
			if (b->processes[q].pid != bp->pid)
				continue;
			if (b->processes[q].exec == bp->exec)
				return field_err(rd, where, "names a program "
						 "of a process twice");
			/* The core is of the program's last. */
			if (q == 0 && bp->exec > b->processes[0].exec)
				return field_err(rd, where, "is later than "
						 "processes[0]'s, which must "
						 "be the program's last");
		}
		if (rd->proc == 0) {
			b->pid = bp->pid;
			if ((rc = get_string(rd, proc, "triple",
					     "processes[0].triple", false,
					     &b->triple)))
				return rc;
		}
		rd->first_thread = nt;
		rd->first_module = nm;
		if ((rc = array_count(rd, proc, "threads", true, 1,
				      HWT_BUNDLE_MAX_THREADS, "threads", &arr,
				      &n)))
			return rc;
		for (size_t j = 0; j < n; j++, nt++)
			if ((rc = read_thread(rd, b,
					      json_object_array_get_idx(arr, j),
					      nt, key)))
				return rc;
		if ((rc = array_count(rd, proc, "modules", false, 0,
				      HWT_BUNDLE_MAX_MODULES, "modules", &arr,
				      &n)))
			return rc;
		for (size_t j = 0; j < n; j++, nm++)
			if ((rc = read_module(rd, b,
					      json_object_array_get_idx(arr, j),
					      nm)))
				return rc;
	}
	return 0;
}

static int read_process(struct reader *rd, json_object *root,
			struct hwt_bundle *b)
{
	json_object *procs;
	int rc = 0;

	if (!(procs = get(rd, root, "processes", true, &rc)))
		return rc;
	if (rd->lldb && (rc = check_pt_processes(rd, procs, b)))
		return rc;
	if (!is_array(procs) || json_object_array_length(procs) == 0 ||
	    json_object_array_length(procs) > HWT_BUNDLE_MAX_PROCESSES)
		return field_err(rd, "processes",
				 "must be an array of 1 to 4096 processes");
	return read_processes(rd, procs, b);
}

static int parse(struct reader *rd, const uint8_t *text, size_t len,
		 struct hwt_bundle *b)
{
	json_object *root;
	int64_t version = 0;
	int rc;

	if ((rc = hwt_json_parse((const char *)text, len, &root, rd->err))) {
		hwt_err_prefix(rd->err, "%s: ", rd->json_path);
		return rc;
	}
	if (!is_object(root)) {
		rc = field_err(rd, "(top level)", "must be an object");
		goto out;
	}
	if ((rc = get_string(rd, root, "type", "type", true, &b->type)))
		goto out;
	if (!hwt_bundle_trace_key(b->type)) {
		rc = hwt_err_set(rd->err, ENOTSUP,
				 "%s: trace type '%s' is not supported "
				 "(supported: " HWT_BUNDLE_TYPE_SW ", "
				 HWT_BUNDLE_TYPE_PT ", " HWT_BUNDLE_TYPE_BTS ")",
				 rd->json_path, b->type);
		goto out;
	}
	rd->lldb = strcmp(b->type, HWT_BUNDLE_TYPE_PT) == 0;
	/* LLDB's schema has no version; ours is versioned. */
	if (!rd->lldb &&
	    (rc = get_i64(rd, root, "version", "version", true, &version)))
		goto out;
	if (!rd->lldb && version != HWT_BUNDLE_VERSION) {
		rc = hwt_err_set(rd->err, ENOTSUP,
				 "%s: bundle version %lld is not supported "
				 "(this hwtrace reads version %d)",
				 rd->json_path, (long long)version,
				 HWT_BUNDLE_VERSION);
		goto out;
	}
	if ((rc = read_cpu(rd, root, b)) ||
	    (rd->lldb && ((rc = check_pt_cpu(rd, b)) ||
			  (rc = read_pt_extra(rd, root, b)))) ||
	    (rc = read_process(rd, root, b)) ||
	    (rc = read_stop(rd, root, b)) ||
	    (rc = get_string(rd, root, "core", "core", false, &b->core)) ||
	    (rc = get_string(rd, root, "dataHistory", "dataHistory", false,
			     &b->data_history)))
		goto out;
	if (b->core && ((rc = check_member(rd, "core", b->core)) ||
			(rc = check_file(rd, b, "core", b->core, false, 0))))
		goto out;
	if (b->data_history &&
	    ((rc = check_member(rd, "dataHistory", b->data_history)) ||
	     (rc = check_file(rd, b, "dataHistory", b->data_history, false,
			      0))))
		goto out;
out:
	json_object_put(root);
	return rc;
}

int hwt_bundle_read(const char *path, struct hwt_bundle **out,
		    struct hwt_err *err)
{
	struct hwt_bundle *b;
	struct reader rd = { .err = err };
	struct stat st;
	char *json_path = NULL;
	uint8_t *text = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	if (stat(path, &st) < 0)
		return hwt_err_set(err, errno, "%s: %s (expected a bundle "
				   "directory or its trace.json)", path,
				   strerror(errno));
	/* An OpenCSD snapshot directory is a CoreSight bundle. */
	if (S_ISDIR(st.st_mode) && hwt_snapshot_is(path))
		return hwt_snapshot_read(path, out, err);
	b = calloc(1, sizeof(*b));
	if (!b)
		return hwt_err_set(err, ENOMEM, "out of memory");
	if (S_ISDIR(st.st_mode)) {
		b->dir = strdup(path);
		if (asprintf(&json_path, "%s/trace.json", path) < 0)
			json_path = NULL;
	} else {
		const char *slash = strrchr(path, '/');

		b->dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path))
			       : strdup(".");
		json_path = strdup(path);
	}
	if (!b->dir || !json_path) {
		rc = hwt_err_set(err, ENOMEM, "out of memory");
		goto fail;
	}
	rd.json_path = json_path;
	if ((rc = hwt_read_file(json_path, HWT_BUNDLE_MAX_JSON, &text, &len, err)))
		goto fail;
	if ((rc = parse(&rd, text, len, b)))
		goto fail;
	free(text);
	free(json_path);
	*out = b;
	return 0;
fail:
	free(text);
	free(json_path);
	hwt_bundle_free(b);
	return rc;
}

