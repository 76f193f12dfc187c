// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_vgdata.c - the Valgrind tool's data history file turned into
 * values of the past (collect/valgrind/data.c).
 *
 * Input: a data history file, read for thread 100 ending at 0x1003 and
 * thread 200 ending at 0x2000. What builds must be a data history that
 * writes and reads back whole (common/past_file.c checks every part of
 * it);
 * what does not is refused with a message.
 * Seeds (HWT_FUZZ_SEEDS): the unit test's file of two runs, whole and
 * cut.
 */
#include "fuzz-common.h"
#include "valgrind/data.h"
#include "../vgdata_sample.h"
#include "../past_sample.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (getenv("HWT_FUZZ_SEEDS")) {
		static struct file f;

		two_runs(&f);
		fuzz_write_seed(getenv("HWT_FUZZ_SEEDS"), "seed-two-runs",
				f.out, f.nout, NULL, 0);
		fuzz_write_seed(getenv("HWT_FUZZ_SEEDS"), "seed-two-runs-cut",
				f.out, f.nout / 2, NULL, 0);
		exit(0);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_vg_data_thread t[2] = { { TID, PC1 }, { 200, 0x2000 } };
	struct hwt_err err = { 0 };
	struct hwt_past p, *back = NULL;
	uint8_t *file = NULL;
	size_t len = 0;

	if (hwt_vg_data_build(data, size, t, 2, &p, &err) < 0) {
		if (!err.msg[0])
			abort();
		return 0;
	}
	if (hwt_past_format(&p, &file, &len, &err) < 0 ||
	    hwt_past_load(file, len, &back, &err) < 0 ||
	    !past_read_whole(back))
		abort();
	hwt_past_free(back);
	free(file);
	hwt_vg_data_free(&p);
	return 0;
}
