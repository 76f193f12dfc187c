/* test_common.c - hwt-sw records, chunk headers, bundle read/write. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hwt-common.h"
#include "check.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
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
		.stop_pc = 0x401234 };
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

int main(void)
{
	if (!mkdtemp(tmpdir))
		return 2;
	test_records();
	test_bad_records();
	test_chunk_header();
	test_parse();
	test_bundle();
	hwt_bundle_stage_abort(tmpdir);
	return check_exit();
}
