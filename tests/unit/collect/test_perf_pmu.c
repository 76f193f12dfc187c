// SPDX-License-Identifier: BSD-2-Clause
/* test_perf_pmu.c - PMU capability parsing (collect/perf/pmu.c) on a fake
 * sysfs tree in a temporary directory, the format-file parser, and what is
 * built from them: Intel PT config words and address-filter text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "perf/perf.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[256], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	/* Create the parent directories. */
	for (slash = strchr(path + strlen(root) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(2);
	}
	fputs(text, f);
	fclose(f);
}

static void test_format_parse(void)
{
	struct hwt_err err = { 0 };
	struct hwt_pmu_field f;
	static const char *const bad[] = {
		"", "config", "config:", "config:5-3", "config:64",
		"config3:1", "confi:1", "config:1-2-3", "config:0x1",
		"config:1 ", "config:1,1", "config:-1", "config:1,",
		"config:0-70", "config:1\n\n", "config1:",
	};

	CHECK("format config:0",
	      hwt_pmu_format_parse("config:0", &f, &err) == 0 && f.word == 0 &&
	      f.mask == 1, "word %d mask %llx: %s", f.word,
	      (unsigned long long)f.mask, err.msg);
	CHECK("format config:14-17 with newline",
	      hwt_pmu_format_parse("config:14-17\n", &f, &err) == 0 &&
	      f.word == 0 && f.mask == 0x3c000ull, "mask %llx",
	      (unsigned long long)f.mask);
	CHECK("format config1:0-63",
	      hwt_pmu_format_parse("config1:0-63", &f, &err) == 0 &&
	      f.word == 1 && f.mask == ~0ull, "word %d mask %llx", f.word,
	      (unsigned long long)f.mask);
	CHECK("format config2 with two ranges",
	      hwt_pmu_format_parse("config2:3,5-6", &f, &err) == 0 &&
	      f.word == 2 && f.mask == 0x68ull, "word %d mask %llx", f.word,
	      (unsigned long long)f.mask);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[64];
		int rc;

		hwt_err_clear(&err);
		rc = hwt_pmu_format_parse(bad[i], &f, &err);
		snprintf(name, sizeof(name), "malformed format \"%s\"", bad[i]);
		/* One line per result: newlines shown as "/". */
		for (char *nl = strchr(name, '\n'); nl; nl = strchr(nl, '\n'))
			*nl = '/';
		CHECK(name, rc == -EBADMSG && strstr(err.msg, "config[12]:LO"),
		      "rc %d msg '%s'", rc, err.msg);
	}
}

static void test_field_set(void)
{
	struct hwt_err err = { 0 };
	struct hwt_pmu_field f = { 0, 0xfull << 24 }, split = { 1, 0x303 };
	uint64_t config[3] = { 1, 0, 0 };
	int rc;

	rc = hwt_pmu_field_set(&f, "psb_period", 5, config, &err);
	CHECK("field value lands in its bits", rc == 0 &&
	      config[0] == ((5ull << 24) | 1), "rc %d config %llx", rc,
	      (unsigned long long)config[0]);
	rc = hwt_pmu_field_set(&f, "psb_period", 16, config, &err);
	CHECK("value too wide for field", rc == -ERANGE &&
	      strstr(err.msg, "psb_period") && strstr(err.msg, "4 bits") &&
	      config[0] == ((5ull << 24) | 1), "rc %d msg '%s'", rc, err.msg);
	rc = hwt_pmu_field_set(&f, "psb_period", 0, config, &err);
	CHECK("zero clears the field", rc == 0 && config[0] == 1,
	      "config %llx", (unsigned long long)config[0]);
	/* bits 0,1,8,9 of config1: value 0b1011 -> bits 0, 1, 9 */
	rc = hwt_pmu_field_set(&split, "split", 0xb, config, &err);
	CHECK("value spread over split ranges", rc == 0 &&
	      config[1] == 0x203, "config1 %llx", (unsigned long long)config[1]);
}

static void test_sysfs(void)
{
	struct hwt_err err = { 0 };
	struct hwt_pmu pmu;
	uint64_t config[3] = { 0 }, v = 0;
	char want[256];
	int rc;

	rc = hwt_pmu_open(root, "intel_pt", "Intel PT", &pmu, &err);
	snprintf(want, sizeof(want),
		 "no Intel PT on this CPU (no intel_pt PMU in %s)", root);
	CHECK("absent PMU names it", rc == -ENODEV && !strcmp(err.msg, want),
	      "rc %d msg '%s'", rc, err.msg);

	put("intel_pt/type", "8\n");
	put("intel_pt/format/tsc", "config:10\n");
	put("intel_pt/format/psb_period", "config:24-27\n");
	put("intel_pt/format/bad", "config:banana\n");
	put("intel_pt/caps/psb_periods", "0x003f\n");
	put("intel_pt/caps/num_address_ranges", "2\n");
	put("intel_pt/caps/junk", "two\n");
	put("broken/type", "eight\n");

	hwt_err_clear(&err);
	rc = hwt_pmu_open(root, "intel_pt", "Intel PT", &pmu, &err);
	CHECK("PMU type read", rc == 0 && pmu.type == 8, "rc %d type %u: %s",
	      rc, pmu.type, err.msg);
	rc = hwt_pmu_config(&pmu, "tsc", 1, config, &err) ||
	     hwt_pmu_config(&pmu, "psb_period", 3, config, &err);
	CHECK("config from format files", rc == 0 &&
	      config[0] == ((1ull << 10) | (3ull << 24)), "rc %d config %llx: %s",
	      rc, (unsigned long long)config[0], err.msg);
	rc = hwt_pmu_config(&pmu, "cyc", 1, config, &err);
	CHECK("missing format field", rc == -ENOENT &&
	      strstr(err.msg, "no 'cyc' field"), "rc %d msg '%s'", rc, err.msg);
	rc = hwt_pmu_config(&pmu, "bad", 1, config, &err);
	CHECK("malformed format file names the file", rc == -EBADMSG &&
	      strstr(err.msg, "format/bad"), "rc %d msg '%s'", rc, err.msg);
	rc = hwt_pmu_cap(&pmu, "psb_periods", &v, &err);
	CHECK("hex capability", rc == 0 && v == 0x3f, "rc %d v %llx", rc,
	      (unsigned long long)v);
	rc = hwt_pmu_cap(&pmu, "num_address_ranges", &v, &err);
	CHECK("decimal capability", rc == 0 && v == 2, "rc %d v %llu", rc,
	      (unsigned long long)v);
	rc = hwt_pmu_cap(&pmu, "mtc", &v, &err);
	CHECK("missing capability", rc == -ENOENT && strstr(err.msg, "'mtc'"),
	      "rc %d msg '%s'", rc, err.msg);
	rc = hwt_pmu_cap(&pmu, "junk", &v, &err);
	CHECK("non-numeric capability", rc == -EBADMSG, "rc %d", rc);
	rc = hwt_pmu_open(root, "broken", "broken PMU", &pmu, &err);
	CHECK("non-numeric type", rc == -EBADMSG &&
	      strstr(err.msg, "not a perf type number"), "rc %d msg '%s'", rc,
	      err.msg);
}

/* Intel PT options against the fake intel_pt PMU of test_sysfs. */
static void test_pt_config(void)
{
	struct hwt_err err = { 0 };
	struct hwt_pmu pmu;
	struct hwt_perf_attr a = { 0 };
	struct hwt_collect_opts o = { .sz = sizeof(o), .pt_tsc = true,
				      .pt_psb_bytes = 16384 };
	struct hwt_collect_ip_filter f[3] = { { 0x1000, 0x100, "/bin/true" } };
	int rc;

	put("intel_pt/format/branch", "config:13\n");
	put("intel_pt/format/mtc", "config:9\n");
	put("intel_pt/format/cyc", "config:1\n");
	put("intel_pt/caps/mtc", "1\n");
	put("intel_pt/caps/psb_cyc", "0\n");
	if (hwt_pmu_open(root, "intel_pt", "Intel PT", &pmu, &err) < 0) {
		CHECK("pt config setup", false, "%s", err.msg);
		return;
	}
	rc = hwt_perf_pt_config(&pmu, &o, &a, &err);
	/* branch bit 13, tsc bit 10, psb 16K = 2^(3+11): 3 in bits 24-27 */
	CHECK("pt config bits from format files", rc == 0 &&
	      a.config[0] == ((1ull << 13) | (1ull << 10) | (3ull << 24)),
	      "rc %d config %llx: %s", rc, (unsigned long long)a.config[0],
	      err.msg);
	o.pt_mtc = true;
	memset(&a, 0, sizeof(a));
	rc = hwt_perf_pt_config(&pmu, &o, &a, &err);
	CHECK("pt mtc with caps/mtc", rc == 0 && (a.config[0] & (1ull << 9)),
	      "rc %d config %llx: %s", rc, (unsigned long long)a.config[0],
	      err.msg);
	o.pt_cyc = true;
	rc = hwt_perf_pt_config(&pmu, &o, &a, &err);
	CHECK("pt cyc refused without caps/psb_cyc", rc == -ENOTSUP &&
	      strstr(err.msg, "CYC") && strstr(err.msg, "psb_cyc"),
	      "rc %d msg '%s'", rc, err.msg);
	o.pt_cyc = false;
	o.pt_psb_bytes = 1u << 20;   /* n = 9, not in 0x3f */
	rc = hwt_perf_pt_config(&pmu, &o, &a, &err);
	CHECK("pt psb period outside caps/psb_periods", rc == -EINVAL &&
	      strstr(err.msg, "psb_periods"), "rc %d msg '%s'", rc, err.msg);
	o.pt_psb_bytes = 3000;
	rc = hwt_perf_pt_config(&pmu, &o, &a, &err);
	CHECK("pt psb period not a power of two", rc == -EINVAL,
	      "rc %d msg '%s'", rc, err.msg);
	o.pt_psb_bytes = 0;
	o.pt_filters = f;
	o.pt_nfilters = 2;
	rc = hwt_perf_pt_config(&pmu, &o, &a, &err);
	CHECK("pt filters within num_address_ranges", rc == 0, "rc %d: %s",
	      rc, err.msg);
	o.pt_nfilters = 3;
	rc = hwt_perf_pt_config(&pmu, &o, &a, &err);
	CHECK("pt filters beyond num_address_ranges", rc == -ENOTSUP &&
	      strstr(err.msg, "num_address_ranges"), "rc %d msg '%s'", rc,
	      err.msg);
}

static void test_filter_string(void)
{
	struct hwt_err err = { 0 };
	struct hwt_collect_ip_filter f[2] = {
		{ 0x1000, 0x200, "/bin/true" }, { 0xffffffff81000000ull, 0x10, NULL },
	};
	char s[128], tiny[20];
	int rc;

	rc = hwt_perf_filter_string(f, 2, s, sizeof(s), &err);
	CHECK("filter text in the kernel's syntax", rc == 0 &&
	      !strcmp(s, "filter 0x1000/0x200@/bin/true,"
		      "filter 0xffffffff81000000/0x10"), "rc %d '%s'", rc, s);
	rc = hwt_perf_filter_string(f, 2, tiny, sizeof(tiny), &err);
	CHECK("filter text too long refused", rc == -E2BIG, "rc %d", rc);
	f[0].file = "/tmp/a,filter 0x0/0x1";
	rc = hwt_perf_filter_string(f, 1, s, sizeof(s), &err);
	CHECK("filter file with a comma refused", rc == -EINVAL &&
	      strstr(err.msg, "comma"), "rc %d msg '%s'", rc, err.msg);
	f[0].file = "/bin/true";
	f[0].size = 0;
	rc = hwt_perf_filter_string(f, 1, s, sizeof(s), &err);
	CHECK("empty filter range refused", rc == -EINVAL, "rc %d", rc);
	f[0].start = ~0ull;
	f[0].size = 2;
	rc = hwt_perf_filter_string(f, 1, s, sizeof(s), &err);
	CHECK("wrapping filter range refused", rc == -EINVAL, "rc %d", rc);
}

int main(void)
{
	char cmd[128];

	snprintf(root, sizeof(root), "/tmp/hwt-pmu-XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 2;
	}
	RUN(test_format_parse);
	RUN(test_field_set);
	RUN(test_sysfs);
	RUN(test_pt_config);
	RUN(test_filter_string);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
	return check_exit();
}
