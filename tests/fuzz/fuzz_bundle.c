// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_bundle.c - the bundle reader (common/bundle_read.c).
 *
 * Input: trace.json text, written into a bundle directory that holds
 * trace files it may name: HWT_FUZZ_BUNDLE_DIR (prepared by
 * tests/integration/test_fuzz.py with real traces and the LLDB intel-pt
 * corpus files), else a temporary directory with one small hwt-sw trace
 * "t.trace". A bundle that reads is opened thread by thread (at most 4)
 * as histories over an image without modules: module paths in the input
 * are never mapped, so the fuzzer reads no file the input names except
 * through the reader's own checks.
 *
 * Seeds (HWT_FUZZ_SEEDS=DIR): HWT_FUZZ_SEED_FILES lists trace.json files
 * separated by ':'.
 */
#include <unistd.h>

#include "fuzz-common.h"

static char dir[4096], json[4200], own[4200];

/* The temporary directory is the fuzzer's own: leave nothing behind. */
static void remove_dir(void)
{
	char path[4300];

	snprintf(path, sizeof(path), "%s/t.trace", own);
	unlink(path);
	unlink(json);
	rmdir(own);
}

static void setup_dir(void)
{
	static const uint8_t rec[] = { 0x04, 0x02, 0x11, 0xf0, 0x03 };
	struct hwt_sw_chunk_hdr h = {
		.payload_size = sizeof(rec), .first_pc = 0x401000,
		.last_pc = 0x401000 + 4 + 2 - 16 + 3, .insn_count = 5,
	};
	uint8_t hdr[HWT_SW_CHUNK_HDR_SIZE];
	char tmpl[] = "/tmp/hwt-fuzz-bundle-XXXXXX";

	if (getenv("HWT_FUZZ_BUNDLE_DIR")) {
		snprintf(dir, sizeof(dir), "%s", getenv("HWT_FUZZ_BUNDLE_DIR"));
	} else {
		if (!mkdtemp(tmpl))
			abort();
		snprintf(dir, sizeof(dir), "%s", tmpl);
		snprintf(own, sizeof(own), "%s", tmpl);
		atexit(remove_dir);
		hwt_sw_chunk_hdr_pack(&h, hdr);
		fuzz_write_seed(dir, "t.trace", hdr, sizeof(hdr), rec,
				sizeof(rec));
	}
	snprintf(json, sizeof(json), "%s/trace.json", dir);
}

static void make_seeds(const char *out)
{
	char *list = strdup(getenv("HWT_FUZZ_SEED_FILES") ?
			    getenv("HWT_FUZZ_SEED_FILES") : "");
	char *save = NULL;
	int k = 0;

	for (char *e = strtok_r(list, ":", &save); e;
	     e = strtok_r(NULL, ":", &save)) {
		char name[32];
		size_t size;
		uint8_t *data = fuzz_read(e, 65536, &size);

		if (!data)
			continue;
		snprintf(name, sizeof(name), "seed-json-%d", k++);
		fuzz_write_seed(out, name, data, size, NULL, 0);
		free(data);
	}
	free(list);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (getenv("HWT_FUZZ_SEEDS")) {
		make_seeds(getenv("HWT_FUZZ_SEEDS"));
		exit(0);
	}
	setup_dir();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fopen(json, "w");

	if (!f || fwrite(data, 1, size, f) != size) {
		if (f)
			fclose(f);
		return 0;
	}
	fclose(f);
	fuzz_read_bundle(dir);
	return 0;
}
