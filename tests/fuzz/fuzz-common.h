/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz-common.h - what the libFuzzer targets share.
 *
 * Each target is one .c file defining LLVMFuzzerTestOneInput; they are
 * built with clang -fsanitize=fuzzer,address,undefined against the library
 * sources (make fuzz, docs/fuzzing.md). Code for the decoders to walk is
 * the fuzzer's own text, mapped from /proc/self/exe at its load address,
 * plus what HWT_FUZZ_IMAGE names: "DIR" (a bundle's modules) or
 * "PATH@ADDR" entries separated by ':'.
 *
 * Seeds: with HWT_FUZZ_SEEDS=DIR a target writes its seeds into DIR in
 * LLVMFuzzerInitialize and exits, so seeds come from real data at run
 * time; what long runs found is kept, merged, in tests/fuzz/corpus/
 * (make fuzz-long, docs/fuzzing.md).
 */
#ifndef HWT_FUZZ_COMMON_H
#define HWT_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-replay.h"
#include "../self_image.h"
#include "util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Items walked per input: enough for every decoder path, small enough to
 * keep thousands of executions a second (a BTS block alone may be a
 * million instructions). */
#define FUZZ_MAX_ITEMS 4096u

static struct self_image fuzz_self;


/* The image every input decodes against; aborts (a fuzzer setup error,
 * not a finding) when the fuzzer's own code cannot be mapped. */
static inline struct hwt_image *fuzz_image(void)
{
	static struct hwt_image *img;
	struct hwt_err err = { 0 };
	const char *extra = getenv("HWT_FUZZ_IMAGE");

	if (img)
		return img;
	fuzz_self = self_image_find();
	if (hwt_image_new(&img, &err) ||
	    hwt_image_add_elf(img, "/proc/self/exe", fuzz_self.load, &err)) {
		fprintf(stderr, "fuzz: %s\n", err.msg);
		abort();
	}
	if (extra) {
		char *list = strdup(extra), *save = NULL;

		for (char *e = strtok_r(list, ":", &save); e;
		     e = strtok_r(NULL, ":", &save)) {
			char *at = strrchr(e, '@');
			struct hwt_bundle *b = NULL;

			if (at) {
				*at = 0;
				if (hwt_image_add_elf(img, e, strtoull(at + 1,
						      NULL, 0), &err))
					fprintf(stderr, "fuzz: %s\n", err.msg);
			} else if (!hwt_bundle_read(e, &b, &err)) {
				if (hwt_image_add_bundle(img, b, &err))
					fprintf(stderr, "fuzz: %s\n", err.msg);
				hwt_bundle_free(b);
			} else {
				fprintf(stderr, "fuzz: %s\n", err.msg);
			}
		}
		free(list);
	}
	return img;
}

/* Read every item (up to the bound), build calls over them and move a
 * cursor: what a debugger does with a history. */
static inline void fuzz_walk(struct hwt_history *h, struct hwt_image *img)
{
	uint64_t n = hwt_history_count(h), last = n;
	struct hwt_calls *calls = NULL;
	struct hwt_cursor *cur = NULL;
	struct hwt_item it;

	if (last > FUZZ_MAX_ITEMS)
		last = FUZZ_MAX_ITEMS;
	for (uint64_t i = 1; i <= last; i++)
		hwt_history_get(h, i, &it, NULL);
	/* The newest items, as a debugger shows them first. */
	for (uint64_t i = n; i > last && i > n - 64; i--)
		hwt_history_get(h, i, &it, NULL);
	if (last && !hwt_calls_build(h, img, 1, last, &calls, NULL))
		hwt_calls_free(calls);
	if (n && !hwt_cursor_new(h, img, &cur, NULL)) {
		for (int i = 0; i < 16; i++)
			hwt_cursor_stepi(cur, HWT_BACKWARD, NULL);
		hwt_cursor_finish(cur, HWT_BACKWARD, NULL);
		hwt_cursor_step(cur, HWT_FORWARD, NULL);
		hwt_cursor_free(cur);
	}
}

/* Read the bundle at dir as a user would open it and walk the first few
 * threads' histories; code comes from no image (the inputs carry none). */
static inline void fuzz_read_bundle(const char *dir)
{
	static struct hwt_image *empty;
	struct hwt_bundle *b = NULL;

	if (!empty && hwt_image_new(&empty, NULL))
		abort();
	if (hwt_bundle_read(dir, &b, NULL))
		return;
	for (size_t i = 0; i < b->nthreads && i < 4; i++) {
		struct hwt_history *h = NULL;

		if (hwt_history_open(b, i, empty, &h, NULL) == 0) {
			fuzz_walk(h, empty);
			hwt_history_free(h);
		}
	}
	hwt_bundle_free(b);
}

static inline void fuzz_write_seed(const char *dir, const char *name,
			    const void *a, size_t na, const void *b, size_t nb)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fwrite(a, 1, na, f) != na || (nb && fwrite(b, 1, nb, f) != nb))
		fprintf(stderr, "fuzz: cannot write seed %s\n", path);
	if (f)
		fclose(f);
}

static inline uint8_t *fuzz_read(const char *path, size_t max, size_t *size)
{
	struct hwt_err err = { 0 };
	uint8_t *data = NULL;

	/* Seeds are cut at max: long inputs make slow executions. */
	if (hwt_read_file(path, 1u << 30, &data, size, &err)) {
		fprintf(stderr, "fuzz: %s\n", err.msg);
		return NULL;
	}
	if (*size > max)
		*size = max;
	return data;
}

#endif
