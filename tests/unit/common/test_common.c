// SPDX-License-Identifier: BSD-2-Clause
/* test_common.c - hwt-sw records, chunk headers, bundle read/write. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hwt-common.h"
#include "hwt-json.h"
#include "check.h"
#include "xorshift.h"
#include "util.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	return xorshift64(&rng);
}

static void test_records(void)
{
	enum { N = 100000 };
	static uint64_t pcs[N];
	static bool asyncs[N];
	static uint8_t buf[N * (HWT_SW_MAX_RECORD + 1)];
	struct hwt_sw_reader r;
	size_t len = 0, i = 1;
	bool async, ok = true;
	int rc;

	pcs[0] = 0x401000;
	for (size_t k = 1; k < N; k++) {
		uint64_t x = next_rand();
		int64_t d = (x & 3) ? (int64_t)(x % 15) + 1
				    : (int64_t)(x >> 4) >> (x % 60);

		pcs[k] = pcs[k - 1] + (uint64_t)d;
		asyncs[k] = (x % 97) == 0;
		len += hwt_sw_encode_step(pcs[k - 1], pcs[k], asyncs[k], buf + len);
	}
	hwt_sw_reader_init(&r, buf, len, pcs[0]);
	while ((rc = hwt_sw_reader_next(&r, &async, NULL)) == HWT_SW_NEXT) {
		if (i >= N || r.pc != pcs[i] || async != asyncs[i]) {
			ok = false;
			break;
		}
		i++;
	}
	CHECK("sw records round trip", ok && rc == HWT_SW_END && i == N,
	      "stopped at %zu of %d (rc %d)", i, N, rc);
	CHECK("sw records compact", len < (size_t)N * 3,
	      "%zu bytes for %d steps", len, N);
}

static void test_bad_records(void)
{
	static const uint8_t bad_tag[] = { 0x03, 0x7f };
	static const uint8_t truncated[] = { 0x14, 0x01, 0x02 };
	static const uint8_t async_step[] = { 0x20, 0x03 };
	struct hwt_sw_reader r;
	struct hwt_err err = { 0 };
	bool async;

	hwt_sw_reader_init(&r, bad_tag, sizeof(bad_tag), 0x1000);
	hwt_sw_reader_next(&r, &async, &err);
	CHECK("sw bad tag rejected",
	      hwt_sw_reader_next(&r, &async, &err) == -EBADMSG &&
	      strstr(err.msg, "0x7f"), "msg '%s'", err.msg);
	hwt_sw_reader_init(&r, truncated, sizeof(truncated), 0x1000);
	CHECK("sw truncated jump rejected",
	      hwt_sw_reader_next(&r, &async, &err) == -EBADMSG, "accepted");
	hwt_sw_reader_init(&r, async_step, sizeof(async_step), 0x1000);
	CHECK("sw async short step rejected",
	      hwt_sw_reader_next(&r, &async, &err) == -EBADMSG, "accepted");
}

static void test_chunk_header(void)
{
	struct hwt_sw_chunk_hdr in = { .payload_size = 10, .first_pc = 0x401000,
		.first_seq = 77, .last_pc = 0x401020, .insn_count = 5 }, out;
	uint8_t buf[HWT_SW_CHUNK_HDR_SIZE + 10] = { 0 };
	struct hwt_err err = { 0 };

	hwt_sw_chunk_hdr_pack(&in, buf);
	CHECK("chunk header round trip",
	      hwt_sw_chunk_hdr_unpack(buf, sizeof(buf), &out, &err) == 0 &&
	      out.payload_size == in.payload_size &&
	      out.first_pc == in.first_pc && out.first_seq == in.first_seq &&
	      out.last_pc == in.last_pc && out.insn_count == in.insn_count &&
	      out.flags == 0, "%s", err.msg);
	CHECK("chunk header past end rejected",
	      hwt_sw_chunk_hdr_unpack(buf, sizeof(buf) - 1, &out, &err) == -EBADMSG,
	      "accepted");
	buf[0] = 'X';
	CHECK("chunk header bad magic rejected",
	      hwt_sw_chunk_hdr_unpack(buf, sizeof(buf), &out, &err) == -EBADMSG,
	      "accepted");
	in.insn_count = 12;
	hwt_sw_chunk_hdr_pack(&in, buf);
	CHECK("chunk header impossible count rejected",
	      hwt_sw_chunk_hdr_unpack(buf, sizeof(buf), &out, &err) == -EBADMSG,
	      "accepted");
}

static void test_parse(void)
{
	uint64_t v = 0;

	CHECK("parse sizes",
	      hwt_parse_size("4M", &v) == 0 && v == 4u << 20 &&
	      hwt_parse_size("64KiB", &v) == 0 && v == 64u << 10 &&
	      hwt_parse_size("0x10", &v) == 0 && v == 16, "v=%llu",
	      (unsigned long long)v);
	CHECK("parse rejects junk",
	      hwt_parse_size("4Q", &v) < 0 && hwt_parse_size("-1", &v) < 0 &&
	      hwt_parse_size("", &v) < 0 && hwt_parse_u64("12x", &v) < 0 &&
	      hwt_parse_size("99999999999999999999G", &v) < 0, "accepted");
}

/* ---- JSON: exact uint64, and what json-c alone would let through ---- */

/* Values LLDB writes (timeZero of a Skylake server) and the edges of the
 * signed range, where a signed 64-bit reader stops. */
static const uint64_t big_values[] = {
	1ull << 63, (1ull << 63) + 1, 18433473881008870804ull, UINT64_MAX,
};

static bool json_refused(const char *text, const char *needle, char *msg,
			 size_t size)
{
	struct json_object *o = NULL;
	struct hwt_err err = { 0 };
	int rc = hwt_json_parse(text, strlen(text), &o, &err);

	snprintf(msg, size, "rc %d: %s", rc, err.msg);
	json_object_put(o);
	return rc == -EINVAL && !o && strstr(err.msg, needle);
}

static void test_json(void)
{
	static const struct { const char *name, *text, *needle; } bad[] = {
		{ "above UINT64_MAX",
		  "{\"tscPerfZeroConversion\": {\"timeZero\": "
		  "18446744073709551616}}",
		  "field 'tscPerfZeroConversion.timeZero': the integer "
		  "18446744073709551616 does not fit in 64 bits" },
		{ "below INT64_MIN", "{\"a\": [-9223372036854775809]}",
		  "field 'a[0]': the integer -9223372036854775809" },
		{ "duplicate key",
		  "{\"processes\": [{\"pid\": 1,\n \"pid\": 2}]}",
		  "line 2 column 2, in field 'processes[0].pid': this key "
		  "is given twice" },
		{ "duplicate key spelled with an escape",
		  "{\"pid\": 1, \"\\u0070id\": 2}", "given twice" },
		{ "NUL in a key", "{\"a\\u0000b\": 1}", "NUL" },
		{ "NaN", "{\"a\": NaN}", "a value was expected" },
		{ "single-quoted key", "{'a': 1}", "double quotes" },
		{ "leading zero", "[00]", "leading zeros" },
		{ "fraction without digits", "[1.]", "digit must follow" },
		{ "raw tab in a string", "[\"a\tb\"]", "control character" },
		{ "lone surrogate", "[\"\\udc00\"]", "surrogate" },
		{ "invalid UTF-8", "[\"\xc3\x28\"]", "UTF-8" },
		{ "trailing text", "{} {}", "text follows" },
		{ "empty", " ", "empty" },
	};
	static const char mixed[] = "[-5, 1.5, \"0x8000000000000001\", "
		"\" -1\", -9223372036854775808]";
	char msg[600], why[96], *text = NULL;
	struct json_object *o = NULL, *arr = json_object_new_array();
	struct hwt_err err = { 0 };
	bool ok = arr != NULL;
	uint64_t u = 0;
	int64_t i = 0;

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		char name[96];

		snprintf(name, sizeof(name), "json refuses %s", bad[k].name);
		CHECK(name, json_refused(bad[k].text, bad[k].needle, msg,
					 sizeof(msg)), "%s", msg);
	}

	/* Written and read back digit for digit. */
	for (size_t k = 0; ok && k < 4; k++)
		ok = hwt_json_append(arr, json_object_new_uint64(
					     big_values[k])) == 0;
	text = ok ? hwt_json_text(arr, false) : NULL;
	CHECK("json writes uint64 exactly", text && !strcmp(text,
	      "[9223372036854775808,9223372036854775809,"
	      "18433473881008870804,18446744073709551615]"), "%s", text ? text : "(out of memory)");
	ok = text && hwt_json_parse(text, strlen(text), &o, &err) == 0;
	for (size_t k = 0; ok && k < 4; k++)
		ok = hwt_json_get_u64(json_object_array_get_idx(o, k), &u, why,
				      sizeof(why)) == 0 && u == big_values[k];
	CHECK("json reads uint64 exactly", ok, "%s; last read %llu", err.msg,
	      (unsigned long long)u);
	CHECK("json uint64 is not a signed integer",
	      ok && hwt_json_get_i64(json_object_array_get_idx(o, 0), &i, why,
				     sizeof(why)) == -EINVAL &&
	      strstr(why, "9223372036854775808"), "%s", why);
	json_object_put(o);
	json_object_put(arr);
	free(text);

	ok = hwt_json_parse(mixed, strlen(mixed), &o, &err) == 0;
	CHECK("json negative is not unsigned",
	      ok && hwt_json_get_u64(json_object_array_get_idx(o, 0), &u, why,
				     sizeof(why)) == -EINVAL &&
	      strstr(why, "negative (-5)"), "%s %s", err.msg, why);
	CHECK("json fraction is not an integer",
	      ok && hwt_json_get_u64(json_object_array_get_idx(o, 1), &u, why,
				     sizeof(why)) == -EINVAL &&
	      strstr(why, "1.5, not an integer"), "%s", why);
	CHECK("json hex string above 2^63",
	      ok && hwt_json_get_u64(json_object_array_get_idx(o, 2), &u, why,
				     sizeof(why)) == 0 &&
	      u == (1ull << 63) + 1, "%s", why);
	CHECK("json string with a sign is not a number",
	      ok && hwt_json_get_u64(json_object_array_get_idx(o, 3), &u, why,
				     sizeof(why)) == -EINVAL, "took %llu",
	      (unsigned long long)u);
	CHECK("json INT64_MIN exactly",
	      ok && hwt_json_get_i64(json_object_array_get_idx(o, 4), &i, why,
				     sizeof(why)) == 0 && i == INT64_MIN,
	      "%s", why);
	json_object_put(o);
}

static char tmpdir[] = "/tmp/hwt-test-common-XXXXXX";

static int write_typed_bundle(const char *dir, const char *type,
			      const char *trace_rel, uint64_t size)
{
	static const uint8_t trace[16] = { 1 };
	struct hwt_bundle_thread th = { .tid = 42, .trace_file = (char *)trace_rel,
		.trace_size = size, .insn_total = 3 };
	struct hwt_bundle_module mod = { .system_path = "/bin/true",
		.load_address = 0x555555554000, .uuid = "abcd" };
	struct hwt_bundle b = { .type = (char *)type, .pid = 42,
		.threads = &th, .nthreads = 1, .modules = &mod, .nmodules = 1,
		.stop_reason = HWT_STOP_FAULT, .stop_signal = 11, .stop_tid = 42,
		.stop_pc = 0x401234, .stop_note = "the recorder stopped early" };
	struct hwt_err err = { 0 };
	char *staging;
	int rc;

	strcpy(b.cpu.vendor, "AuthenticAMD");
	if ((rc = hwt_bundle_stage_begin(dir, &staging, &err)))
		return rc;
	rc = hwt_bundle_stage_write(staging, "threads/42.hwtsw", trace,
				    sizeof(trace), &err);
	if (!rc)
		rc = hwt_bundle_stage_commit(staging, dir, &b, &err);
	if (rc)
		hwt_bundle_stage_abort(staging);
	free(staging);
	return rc;
}

static int write_bundle(const char *dir, const char *trace_rel, uint64_t size)
{
	return write_typed_bundle(dir, HWT_BUNDLE_TYPE_SW, trace_rel, size);
}

static char *path_in(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
		abort();
	return p;
}

static void replace_json(const char *dir, const char *from, const char *to)
{
	char *json, *text;
	uint8_t *data;
	size_t size;
	FILE *f;

	if (asprintf(&json, "%s/trace.json", dir) < 0 ||
	    hwt_read_file(json, 1 << 20, &data, &size, NULL))
		abort();
	text = (char *)data;
	char *at = strstr(text, from);
	f = fopen(json, "w");
	if (!at || !f)
		abort();
	fwrite(text, 1, (size_t)(at - text), f);
	fputs(to, f);
	fputs(at + strlen(from), f);
	fclose(f);
	free(data);
	free(json);
}

static void expect_bad(const char *name, const char *dir, const char *needle)
{
	struct hwt_bundle *b = NULL;
	struct hwt_err err = { 0 };
	int rc = hwt_bundle_read(dir, &b, &err);

	CHECK(name, rc < 0 && !b && strstr(err.msg, needle),
	      "rc %d, message '%s' lacks '%s'", rc, err.msg, needle);
}

static void test_bundle(void)
{
	struct hwt_bundle *b = NULL;
	struct hwt_err err = { 0 };
	char *good = path_in("good"), *p;
	int rc;

	rc = write_bundle(good, "threads/42.hwtsw", 16);
	CHECK("bundle written", rc == 0, "rc %d", rc);
	rc = hwt_bundle_read(good, &b, &err);
	CHECK("bundle read back",
	      rc == 0 && b->nthreads == 1 && b->threads[0].tid == 42 &&
	      b->threads[0].trace_size == 16 && b->nmodules == 1 &&
	      b->modules[0].load_address == 0x555555554000 &&
	      b->stop_reason == HWT_STOP_FAULT && b->stop_pc == 0x401234 &&
	      b->stop_note &&
	      !strcmp(b->stop_note, "the recorder stopped early") &&
	      strcmp(b->cpu.vendor, "AuthenticAMD") == 0,
	      "rc %d: %s", rc, err.msg);
	hwt_bundle_free(b);
	CHECK("bundle refuses to overwrite",
	      write_bundle(good, "threads/42.hwtsw", 16) == -EEXIST, "overwrote");

	/* Each type names its trace with its own key (btsTrace for BTS). */
	p = path_in("bts");
	rc = write_typed_bundle(p, HWT_BUNDLE_TYPE_BTS, "threads/42.hwtsw", 16);
	if (!rc)
		rc = hwt_bundle_read(p, &b, &err);
	CHECK("BTS bundle written and read back",
	      rc == 0 && !strcmp(b->type, HWT_BUNDLE_TYPE_BTS) &&
	      b->nthreads == 1 && b->threads[0].trace_size == 16,
	      "rc %d: %s", rc, err.msg);
	if (!rc)
		hwt_bundle_free(b);
	free(p);

	p = path_in("size");
	write_bundle(p, "threads/42.hwtsw", 17);
	expect_bad("bundle size mismatch", p, "trace.json says 17");
	free(p);

	p = path_in("missing");
	write_bundle(p, "threads/43.hwtsw", 16);
	expect_bad("bundle missing trace file", p, "swTrace");
	free(p);

	p = path_in("escape");
	write_bundle(p, "../good/threads/42.hwtsw", 16);
	expect_bad("bundle path escape", p, "inside the bundle");
	free(p);

	p = path_in("badjson");
	write_bundle(p, "threads/42.hwtsw", 16);
	replace_json(p, "\"type\"", "{\"type\"");
	expect_bad("bundle broken JSON", p, "invalid JSON");
	free(p);

	p = path_in("wrongtype");
	write_bundle(p, "threads/42.hwtsw", 16);
	replace_json(p, "\"tid\": 42", "\"tid\": \"x\"");
	expect_bad("bundle wrong field type", p, "threads[0].tid");
	free(p);

	p = path_in("unknowntype");
	write_bundle(p, "threads/42.hwtsw", 16);
	replace_json(p, "hwtrace-sw", "hwtrace-zz");
	expect_bad("bundle unknown type", p, "not supported");
	free(p);

	p = path_in("nothing");
	expect_bad("bundle missing directory", p, "nothing");
	free(p);
	free(good);
}

/* A followed child's threads and modules are a process of their own:
 * written grouped by process, the program's first, and read back each
 * naming its process; a pid given twice or a process without threads is
 * refused. */
static const struct hwt_bundle_process two_children[3] = {
	{ .pid = 50 }, { .pid = 51 }, { .pid = 53 } };

static int write_processes(const char *dir,
			   const struct hwt_bundle_process *given,
			   size_t nprocesses)
{
	static const uint8_t trace[16] = { 1 };
	/* Threads and modules of the two processes interleaved: the writer
	 * groups them. */
	struct hwt_bundle_thread th[3] = {
		{ .tid = 51, .trace_file = "threads/51.hwtsw", .trace_size = 16,
		  .process = 1 },
		{ .tid = 50, .trace_file = "threads/50.hwtsw", .trace_size = 16 },
		{ .tid = 52, .trace_file = "threads/52.hwtsw", .trace_size = 16,
		  .process = 1 },
	};
	struct hwt_bundle_module mod[3] = {
		{ .system_path = "/usr/bin/true", .load_address = 0x108000,
		  .process = 1 },
		{ .system_path = "/usr/bin/make", .load_address = 0x108000 },
		{ .system_path = "/usr/lib/libc.so.6", .load_address = 0x4847000,
		  .process = 1 },
	};
	struct hwt_bundle_process procs[3];
	struct hwt_bundle b = { .type = HWT_BUNDLE_TYPE_SW, .pid = 50,
		.processes = procs, .nprocesses = nprocesses, .threads = th,
		.nthreads = 3, .modules = mod, .nmodules = 3 };
	struct hwt_err err = { 0 };
	char *staging;
	int rc;

	memcpy(procs, given, nprocesses * sizeof(*procs));
	strcpy(b.cpu.vendor, "AuthenticAMD");
	if ((rc = hwt_bundle_stage_begin(dir, &staging, &err)))
		return rc;
	for (size_t i = 0; !rc && i < 3; i++)
		rc = hwt_bundle_stage_write(staging, th[i].trace_file, trace,
					    sizeof(trace), &err);
	if (!rc)
		rc = hwt_bundle_stage_commit(staging, dir, &b, &err);
	if (rc)
		hwt_bundle_stage_abort(staging);
	free(staging);
	return rc;
}

/* A bundle of nprocesses with from replaced by to in its trace.json (no
 * replacement when from is NULL) is refused saying needle. */
static void bad_processes(const char *name, size_t nprocesses,
			  const char *from, const char *to, const char *needle)
{
	char *p = path_in(name);

	write_processes(p, two_children, nprocesses);
	if (from)
		replace_json(p, from, to);
	expect_bad(name, p, needle);
	free(p);
}

/* A process that exec'd: once per program, the program's last first;
 * the histories before the exec are named so. */
static void test_bundle_execs(void)
{
	static const struct hwt_bundle_process execs[2] = {
		{ .pid = 50, .exec = 1 }, { .pid = 50 } };
	struct hwt_bundle *b = NULL;
	struct hwt_err err = { 0 };
	char *p = path_in("execs");
	char name[32] = "";
	int rc = write_processes(p, execs, 2);

	if (!rc)
		rc = hwt_bundle_read(p, &b, &err);
	if (!rc)
		hwt_bundle_thread_name(b, 1, name, sizeof(name));
	CHECK("a process's programs before and after its exec read back",
	      rc == 0 && hwt_bundle_nprocesses(b) == 2 &&
	      b->processes[0].pid == 50 && b->processes[0].exec == 1 &&
	      b->processes[1].pid == 50 && b->processes[1].exec == 0 &&
	      hwt_bundle_process_replaced_by(b, 0) == 0 &&
	      hwt_bundle_process_replaced_by(b, 1) == 1 &&
	      b->threads[1].tid == 51 && b->threads[1].process == 1 &&
	      !strcmp(name, "51 (before exec 1)"),
	      "rc %d: %s; thread named '%s'", rc, err.msg, name);
	hwt_bundle_free(b);
	free(p);
}

static void test_bundle_processes(void)
{
	struct hwt_bundle *b = NULL;
	struct hwt_err err = { 0 };
	char *p = path_in("procs");
	int rc = write_processes(p, two_children, 2);

	if (!rc)
		rc = hwt_bundle_read(p, &b, &err);
	CHECK("two processes written grouped and read back",
	      rc == 0 && b->pid == 50 && hwt_bundle_nprocesses(b) == 2 &&
	      hwt_bundle_process_pid(b, 0) == 50 &&
	      hwt_bundle_process_pid(b, 1) == 51 && b->nthreads == 3 &&
	      b->threads[0].tid == 50 && b->threads[0].process == 0 &&
	      b->threads[1].tid == 51 && b->threads[1].process == 1 &&
	      b->threads[2].tid == 52 && b->threads[2].process == 1 &&
	      b->nmodules == 3 &&
	      !strcmp(b->modules[0].system_path, "/usr/bin/make") &&
	      b->modules[0].process == 0 &&
	      !strcmp(b->modules[1].system_path, "/usr/bin/true") &&
	      b->modules[1].process == 1 && b->modules[2].process == 1,
	      "rc %d: %s", rc, err.msg);
	hwt_bundle_free(b);
	b = NULL;
	/* A bundle without processes[] of its own model is one process. */
	free(p);
	p = path_in("good");
	rc = hwt_bundle_read(p, &b, &err);
	CHECK("a bundle of one process",
	      rc == 0 && hwt_bundle_nprocesses(b) == 1 &&
	      hwt_bundle_process_pid(b, 0) == 42 && b->threads[0].process == 0,
	      "rc %d: %s", rc, err.msg);
	hwt_bundle_free(b);
	free(p);

	test_bundle_execs();
	bad_processes("a process's program given twice", 2, "\"pid\": 51",
		      "\"pid\": 50",
		      "field 'processes[1].exec' names a program of a process "
		      "twice");
	bad_processes("a program later than the program's last", 2,
		      "\"pid\": 51", "\"pid\": 50, \"exec\": 2",
		      "field 'processes[1].exec' is later than processes[0]'s");
	bad_processes("an exec count out of range", 2, "\"pid\": 51",
		      "\"pid\": 51, \"exec\": 4097",
		      "field 'processes[1].exec' must be at most 4096");
	bad_processes("a child's thread is checked with its path", 2,
		      "\"tid\": 51", "\"tid\": 0",
		      "processes[1].threads[0].tid");
	bad_processes("a process without threads", 3, NULL, NULL,
		      "processes[2].threads' must be an array of 1 to 4096");
}

/* Unsigned fields of our own bundles and LLDB's timeZero keep every value
 * of the uint64 range through write and read; values they cannot hold
 * are errors naming the field. */
static void test_bundle_big(void)
{
	static const char lldb_json[] =
		"{\"type\": \"intel-pt\", \"cpuInfo\": {\"vendor\": "
		"\"GenuineIntel\", \"family\": 6, \"model\": 85, \"stepping\": "
		"4}, \"processes\": [{\"pid\": 7, \"threads\": [{\"tid\": 7}], "
		"\"modules\": []}], \"cpus\": [{\"id\": 0, \"iptTrace\": "
		"\"0.pt\", \"contextSwitchTrace\": \"0.sw\"}], "
		"\"tscPerfZeroConversion\": {\"timeMult\": 1076264588, "
		"\"timeShift\": 31, \"timeZero\": TIME_ZERO}}";
	static const uint8_t trace[16] = { 1 };
	struct hwt_bundle_thread th = { .tid = 42,
		.trace_file = "threads/42.hwtsw", .trace_size = sizeof(trace),
		.lost_bytes = 1ull << 63, .insn_total = UINT64_MAX,
		.lost_insns = 18433473881008870804ull };
	struct hwt_bundle_module mods[4];
	struct hwt_bundle b = { .type = HWT_BUNDLE_TYPE_SW, .pid = 42,
		.threads = &th, .nthreads = 1, .modules = mods, .nmodules = 4,
		.stop_reason = HWT_STOP_FAULT, .stop_signal = 11,
		.stop_tid = 42, .stop_pc = UINT64_MAX };
	char *dir = path_in("big"), *staging = NULL, *lldb = path_in("lldb");
	struct hwt_bundle *r = NULL;
	struct hwt_err err = { 0 };
	bool same;
	int rc;

	strcpy(b.cpu.vendor, "AuthenticAMD");
	for (size_t k = 0; k < 4; k++)
		mods[k] = (struct hwt_bundle_module){ .system_path = "/bin/true",
			.load_address = big_values[k] };
	rc = hwt_bundle_stage_begin(dir, &staging, &err);
	if (!rc)
		rc = hwt_bundle_stage_write(staging, th.trace_file, trace,
					    sizeof(trace), &err);
	if (!rc)
		rc = hwt_bundle_stage_commit(staging, dir, &b, &err);
	free(staging);
	if (!rc)
		rc = hwt_bundle_read(dir, &r, &err);
	same = !rc && r->nmodules == 4 && r->stop_pc == UINT64_MAX &&
		r->threads[0].lost_bytes == 1ull << 63 &&
		r->threads[0].insn_total == UINT64_MAX &&
		r->threads[0].lost_insns == 18433473881008870804ull;
	for (size_t k = 0; same && k < 4; k++)
		same = r->modules[k].load_address == big_values[k];
	CHECK("bundle keeps 2^63, 2^63+1, 18433473881008870804 and UINT64_MAX",
	      same, "rc %d: %s", rc, err.msg);
	hwt_bundle_free(r);

	replace_json(dir, "\"pc\": 18446744073709551615",
		     "\"pc\": 18446744073709551616");
	expect_bad("bundle refuses a value above UINT64_MAX", dir,
		   "in field 'stop.pc': the integer 18446744073709551616 does "
		   "not fit in 64 bits");
	replace_json(dir, "\"pc\": 18446744073709551616", "\"pc\": -1");
	expect_bad("bundle refuses a negative unsigned field", dir,
		   "field 'stop.pc' must be a non-negative integer (a number "
		   "or a string such as \"0x7f00\"); it is negative (-1)");
	replace_json(dir, "\"pc\": -1", "\"pc\": 4096.5");
	expect_bad("bundle refuses a fraction", dir,
		   "field 'stop.pc' must be a non-negative integer");
	replace_json(dir, "\"pc\": 4096.5", "\"pc\": 4096, \"pc\": 4097");
	expect_bad("bundle refuses a key given twice", dir,
		   "in field 'stop.pc': this key is given twice");
	replace_json(dir, "\"pc\": 4096, \"pc\": 4097", "\"pc\": 4096");
	replace_json(dir, "\"pid\": 42", "\"pid\": 9223372036854775808");
	expect_bad("bundle refuses a signed field above INT64_MAX", dir,
		   "field 'processes[0].pid' must be an integer; it is "
		   "9223372036854775808, above the largest");

	/* LLDB's per-cpu shape, timeZero as a number and as a string. */
	if (mkdir(lldb, 0755) == 0) {
		static const char *const zeros[] = { "18433473881008870804",
			"\"18433473881008870804\"" };
		char *pt, *sw, *json, *text = NULL;
		FILE *f;

		if (asprintf(&pt, "%s/0.pt", lldb) < 0 ||
		    asprintf(&sw, "%s/0.sw", lldb) < 0 ||
		    asprintf(&json, "%s/trace.json", lldb) < 0)
			abort();
		fclose(fopen(pt, "w"));
		fclose(fopen(sw, "w"));
		for (size_t k = 0; k < 3; k++) {
			const char *zero = k < 2 ? zeros[k] :
				"18446744073709551616";
			const char *at = strstr(lldb_json, "TIME_ZERO");

			free(text);
			if (asprintf(&text, "%.*s%s%s", (int)(at - lldb_json),
				     lldb_json, zero, at + 9) < 0 ||
			    !(f = fopen(json, "w")))
				abort();
			fputs(text, f);
			fclose(f);
			if (k == 2)
				break;
			rc = hwt_bundle_read(lldb, &r, &err);
			CHECK(k ? "per-cpu bundle: timeZero as a string" :
			      "per-cpu bundle: timeZero above 2^63",
			      rc == 0 && r->has_tsc_conv &&
			      r->tsc_conv.time_zero == 18433473881008870804ull &&
			      r->tsc_conv.time_mult == 1076264588 &&
			      r->tsc_conv.time_shift == 31 && r->npt_cpus == 1,
			      "rc %d: %s", rc, err.msg);
			if (!rc)
				hwt_bundle_free(r);
		}
		expect_bad("per-cpu bundle: timeZero above UINT64_MAX", lldb,
			   "field 'tscPerfZeroConversion.timeZero': the integer "
			   "18446744073709551616 does not fit");
		free(text);
		free(pt);
		free(sw);
		free(json);
	}
	free(lldb);
	free(dir);
}

/* The writer's per-cpu LLDB schema: cpus[], tscPerfZeroConversion with
 * timeZero as the number it is, threads without a trace of their own. */
static void test_write_per_cpu(void)
{
	struct hwt_bundle_thread th = { .tid = 7 };
	struct hwt_bundle_pt_cpu cpu = { .id = 3,
		.trace_file = "cpus/3.intelpt_trace",
		.switch_file = "cpus/3.perf_context_switch_trace" };
	struct hwt_bundle b = { .type = HWT_BUNDLE_TYPE_PT, .pid = 7,
		.threads = &th, .nthreads = 1, .pt_cpus = &cpu, .npt_cpus = 1,
		.has_tsc_conv = true, .tsc_conv = { 1076264588, 31,
						    18433473881008870804ull } };
	char *dir = path_in("percpu"), *staging = NULL, *json = NULL;
	struct hwt_bundle *r = NULL;
	struct hwt_err err = { 0 };
	uint8_t *text = NULL;
	size_t len = 0;
	int rc;

	strcpy(b.cpu.vendor, "GenuineIntel");
	b.cpu.family = 6;
	b.cpu.model = 85;
	b.cpu.stepping = 4;
	rc = hwt_bundle_stage_begin(dir, &staging, &err);
	if (!rc)
		rc = hwt_bundle_stage_write(staging, cpu.trace_file, "", 0, &err);
	if (!rc)
		rc = hwt_bundle_stage_write(staging, cpu.switch_file, "", 0,
					    &err);
	if (!rc)
		rc = hwt_bundle_stage_commit(staging, dir, &b, &err);
	free(staging);
	if (!rc)
		rc = hwt_bundle_read(dir, &r, &err);
	CHECK("per-cpu bundle written and read back", rc == 0 &&
	      r->npt_cpus == 1 && r->pt_cpus[0].id == 3 &&
	      !strcmp(r->pt_cpus[0].switch_file, cpu.switch_file) &&
	      r->nthreads == 1 && !r->threads[0].trace_file &&
	      r->has_tsc_conv && r->tsc_conv.time_zero == b.tsc_conv.time_zero &&
	      r->tsc_conv.time_mult == 1076264588 &&
	      r->tsc_conv.time_shift == 31, "rc %d: %s", rc, err.msg);
	if (!rc)
		hwt_bundle_free(r);
	if (asprintf(&json, "%s/trace.json", dir) < 0)
		abort();
	rc = hwt_read_file(json, 1 << 20, &text, &len, &err);
	CHECK("per-cpu bundle: timeZero written as a number",
	      rc == 0 && strstr((char *)text,
				"\"timeZero\": 18433473881008870804"),
	      "%s", text ? (char *)text : err.msg);
	free(text);
	free(json);
	free(dir);
}

/* A trace compressed and back; the decoded size is checked exactly and
 * bounded before anything is allocated; damage is an error. */
static void test_trace_zstd(void)
{
	uint8_t in[4096], *packed = NULL, *out = NULL, *idx = NULL;
	size_t n = 0, idx_n = 0;
	struct hwt_err err = { 0 };
	int rc;

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i % 7 * 3);
	rc = hwt_sw_trace_pack(in, sizeof(in), &packed, &n, &idx, &idx_n,
			       &err);
	CHECK("zstd: a repetitive trace compresses", rc == 0 && n < 200,
	      "rc %d (%s), %zu bytes", rc, err.msg, n);
	CHECK("zstd: bytes that are no hwt-sw chunks get no index",
	      idx == NULL && idx_n == 0, "%zu bytes of index", idx_n);
	if (rc)
		return;
	rc = hwt_trace_decompress(packed, n, sizeof(in), &out, &err);
	CHECK("zstd: and decodes to the same bytes",
	      rc == 0 && !memcmp(out, in, sizeof(in)), "rc %d (%s)", rc,
	      err.msg);
	free(out);
	rc = hwt_trace_decompress(packed, n, sizeof(in) - 1, &out, &err);
	CHECK("zstd: a decoded size other than the frame's is an error",
	      rc == -EINVAL && out == NULL && strstr(err.msg, "trace.json says"),
	      "rc %d (%s)", rc, err.msg);
	rc = hwt_trace_decompress(packed, n, HWT_BUNDLE_MAX_DECODED + 1, &out,
				  &err);
	CHECK("zstd: a decoded size past the bound is refused",
	      rc == -EFBIG && out == NULL, "rc %d (%s)", rc, err.msg);
	rc = hwt_trace_decompress(packed, n / 2, sizeof(in), &out, &err);
	CHECK("zstd: a frame cut short is an error",
	      rc == -EINVAL && out == NULL, "rc %d (%s)", rc, err.msg);
	rc = hwt_trace_decompress(in, 64, sizeof(in), &out, &err);
	CHECK("zstd: bytes that are no frame are an error",
	      rc == -EINVAL && out == NULL && strstr(err.msg, "zstd"),
	      "rc %d (%s)", rc, err.msg);
	free(packed);
	/* A caller with no message (the fuzzer's) still sees the failure:
	 * a decoded size one off once read as success with no trace. */
	CHECK("an error passed on without a message stays an error",
	      hwt_err_prefix(NULL, "%s: ", "t.trace") < 0, "returned 0");
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		return 2;
	RUN(test_records);
	RUN(test_bad_records);
	RUN(test_chunk_header);
	RUN(test_parse);
	RUN(test_json);
	RUN(test_bundle);
	RUN(test_bundle_processes);
	RUN(test_bundle_big);
	RUN(test_write_per_cpu);
	RUN(test_trace_zstd);
	hwt_bundle_stage_abort(tmpdir);
	return check_exit();
}
