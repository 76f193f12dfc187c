// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_decode.c - every trace decoder, chosen by the first input byte.
 *
 * Input: [selector][trace bytes]. The selector picks a decoder from
 * replay/decode.c's table (selector % number of decoders), so a decoder
 * registered there is fuzzed without touching this file. The trace is
 * opened as a history in memory, counted, walked, and turned into calls
 * and cursor moves against an image holding the fuzzer's own code.
 *
 * Seeds (HWT_FUZZ_SEEDS=DIR): HWT_FUZZ_SEED_FILES lists FORMAT=PATH
 * entries separated by ':'; each file becomes a seed for that format.
 */
#include "decode.h"
#include "fuzz-common.h"

#define MAX_DECODERS 16

static char names[MAX_DECODERS][32];
static size_t ndec;

static void list_decoders(void)
{
	char *all = strdup(hwt_decoder_names()), *save = NULL;

	for (char *n = strtok_r(all, ", ", &save); n && ndec < MAX_DECODERS;
	     n = strtok_r(NULL, ", ", &save))
		snprintf(names[ndec++], sizeof(names[0]), "%s", n);
	free(all);
}

static void make_seeds(const char *dir)
{
	char *list = strdup(getenv("HWT_FUZZ_SEED_FILES") ?
			    getenv("HWT_FUZZ_SEED_FILES") : "");
	char *save = NULL;
	int k = 0;

	for (char *e = strtok_r(list, ":", &save); e;
	     e = strtok_r(NULL, ":", &save)) {
		char *eq = strchr(e, '='), name[64];
		uint8_t sel;
		size_t size, i;
		uint8_t *data;

		if (!eq)
			continue;
		*eq = 0;
		for (i = 0; i < ndec && strcmp(names[i], e); i++)
			;
		if (i == ndec) {
			fprintf(stderr, "fuzz: no decoder '%s' in this build\n",
				e);
			continue;
		}
		data = fuzz_read(eq + 1, 8192, &size);
		if (!data)
			continue;
		sel = (uint8_t)i;
		snprintf(name, sizeof(name), "seed-%s-%d", e, k++);
		fuzz_write_seed(dir, name, &sel, 1, data, size);
		free(data);
	}
	free(list);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	list_decoders();
	if (getenv("HWT_FUZZ_SEEDS")) {
		make_seeds(getenv("HWT_FUZZ_SEEDS"));
		exit(0);
	}
	fuzz_image();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_image *img = fuzz_image();
	struct hwt_history *h = NULL;

	if (size < 1 || !ndec)
		return 0;
	if (hwt_history_open_format(names[data[0] % ndec], data + 1, size - 1,
				    img, &h, NULL) == 0) {
		fuzz_walk(h, img);
		hwt_history_free(h);
	}
	return 0;
}
