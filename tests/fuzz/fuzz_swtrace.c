// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_swtrace.c - the hwt-sw record format (common/swtrace.c).
 *
 * Input: hwt-sw trace bytes. Three checks per input:
 *   - the first chunk's header is unpacked and the bytes after it read as
 *     records: the reader never leaves the payload and each step consumes
 *     1 to HWT_SW_MAX_RECORD + 1 bytes;
 *   - the first 17 bytes as (pc, next, async) encode with
 *     hwt_sw_encode_step and read back as the same step;
 *   - the whole input opens as an hwt-sw history that reads item by item;
 *   - so does a copy whose chunk headers (as many as unpack in a row) are
 *     flagged HWT_SW_CHUNK_BRANCHES: the records read as block-step
 *     branch records and are expanded with the image (replay/expand_sw.c),
 *     so that recorded seeds reach expansion too.
 * Seeds are real recorded traces (tests/integration/test_fuzz.py).
 */
#include "fuzz-common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* The seeds are trace files as they are; none to generate. */
	if (getenv("HWT_FUZZ_SEEDS"))
		exit(0);
	fuzz_image();
	return 0;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void records(const uint8_t *data, size_t size)
{
	struct hwt_sw_chunk_hdr hdr;
	struct hwt_sw_reader r;
	struct hwt_err err = { 0 };
	size_t pay = size > HWT_SW_CHUNK_HDR_SIZE ?
		size - HWT_SW_CHUNK_HDR_SIZE : 0;
	uint64_t first_pc = 0x1000;
	bool async;
	int rc;

	if (!hwt_sw_chunk_hdr_unpack(data, size, &hdr, &err)) {
		first_pc = hdr.first_pc;
		if (hdr.payload_size < pay)
			pay = hdr.payload_size;
	}
	hwt_sw_reader_init(&r, data + size - pay, pay, first_pc);
	do {
		const uint8_t *before = r.p;

		rc = hwt_sw_reader_next(&r, &async, &err);
		if (rc == HWT_SW_NEXT &&
		    (r.p <= before || r.p - before > HWT_SW_MAX_RECORD + 1 ||
		     r.p > data + size))
			abort();
	} while (rc == HWT_SW_NEXT);
}

static void encode_step(const uint8_t *data, size_t size)
{
	uint8_t rec[HWT_SW_MAX_RECORD + 1];
	struct hwt_sw_reader r;
	uint64_t pc, next;
	bool async, got_async = false;
	size_t n;

	if (size < 17)
		return;
	pc = get64(data);
	next = get64(data + 8);
	async = data[16] & 1;
	n = hwt_sw_encode_step(pc, next, async, rec);
	if (n == 0 || n > sizeof(rec))
		abort();
	hwt_sw_reader_init(&r, rec, n, pc);
	if (hwt_sw_reader_next(&r, &got_async, NULL) != HWT_SW_NEXT ||
	    r.pc != next || got_async != async || r.p != rec + n)
		abort();
}

static void as_branches(const uint8_t *data, size_t size,
			struct hwt_image *img)
{
	uint8_t *copy = malloc(size ? size : 1);
	struct hwt_history *h = NULL;
	size_t off = 0;

	if (!copy)
		abort();
	memcpy(copy, data, size);
	while (size - off >= HWT_SW_CHUNK_HDR_SIZE) {
		struct hwt_sw_chunk_hdr hdr;

		if (hwt_sw_chunk_hdr_unpack_flags(copy + off, size - off,
						  HWT_SW_CHUNK_BRANCHES |
						  HWT_SW_CHUNK_ASYNC, &hdr,
						  NULL))
			break;
		copy[off + 36] |= HWT_SW_CHUNK_BRANCHES;
		off += HWT_SW_CHUNK_HDR_SIZE + hdr.payload_size;
	}
	if (hwt_history_open_sw(copy, size, 0, img, &h, NULL) == 0) {
		fuzz_walk(h, img);
		hwt_history_free(h);
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hwt_image *img = fuzz_image();
	struct hwt_history *h = NULL;

	records(data, size);
	encode_step(data, size);
	if (hwt_history_open_sw(data, size, 0, img, &h, NULL) == 0) {
		fuzz_walk(h, img);
		hwt_history_free(h);
	}
	as_branches(data, size, img);
	return 0;
}
