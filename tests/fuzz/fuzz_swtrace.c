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
 *     so that recorded seeds reach expansion too;
 *   - its TABLE chunks read whole and read in part (each translation
 *     when asked) must agree;
 *   - the input packed for a bundle: a trace of TABLE and RUNS chunks
 *     (common/sw_runs.c) is walked for its restart points, and its
 *     flattening never reads outside it.
 * Seeds are real recorded traces (tests/integration/test_fuzz.py) and,
 * written here (HWT_FUZZ_SEEDS), a trace of a table and runs.
 */
#include <errno.h>

#include "fuzz-common.h"

/* A table of two translations and runs of them, as the valgrind
 * recorder keeps a thread's window. */
static void write_runs_seed(const char *dir)
{
	static uint64_t pc0[] = { 0x1000, 0x1003, 0x1005 }, tg0[] = { 0x2000 };
	static uint64_t pc1[] = { 0x2000, 0x2004 };
	static uint32_t ex0[] = { 1 };
	const struct hwt_sw_tr tr[2] = {
		{ .ninsns = 3, .nexits = 1, .flags = HWT_SW_TR_IMPLIED,
		  .entry = 0x1000, .pc = pc0, .exit_after = ex0,
		  .target = tg0 },
		{ .ninsns = 2, .entry = 0x2000, .pc = pc1 },
	};
	uint8_t buf[4096], tab[256], items[64];
	struct hwt_sw_chunk_hdr h = { .flags = HWT_SW_CHUNK_TABLE };
	size_t n = 0, tn = 0, in = 0;
	char path[4096];
	FILE *f;

	for (int i = 0; i < 2; i++)
		tn += hwt_sw_tr_encode((uint64_t)i, &tr[i], tab + tn);
	for (int i = 0; i < 20; i++) {
		items[in++] = 0;          /* translation 0 ... */
		items[in++] = i % 4 ? 4 : 1 << 2 | 2;   /* 1, or a mark */
		if (!(i % 4))
			items[in++] = 4;  /* ... then 1 */
	}
	h.payload_size = (uint32_t)tn;
	hwt_sw_chunk_hdr_pack(&h, buf);
	memcpy(buf + HWT_SW_CHUNK_HDR_SIZE, tab, tn);
	n = HWT_SW_CHUNK_HDR_SIZE + tn;
	h = (struct hwt_sw_chunk_hdr){
		.flags = HWT_SW_CHUNK_RUNS | HWT_SW_CHUNK_PREV,
		.first_pc = 0x2004, .first_seq = 5, .last_pc = 0x2004,
		.insn_count = 20 * 3 + 5 * 2, .payload_size = (uint32_t)in,
	};
	hwt_sw_chunk_hdr_pack(&h, buf + n);
	memcpy(buf + n + HWT_SW_CHUNK_HDR_SIZE, items, in);
	n += HWT_SW_CHUNK_HDR_SIZE + in;
	snprintf(path, sizeof(path), "%s/seed-runs", dir);
	if ((f = fopen(path, "wb"))) {
		fwrite(buf, 1, n, f);
		fclose(f);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* The seeds are trace files as they are, and one of runs. */
	if (getenv("HWT_FUZZ_SEEDS")) {
		write_runs_seed(getenv("HWT_FUZZ_SEEDS"));
		exit(0);
	}
	fuzz_image();
	return 0;
}

static bool same_tr(const struct hwt_sw_tr *a, const struct hwt_sw_tr *b)
{
	return a->ninsns == b->ninsns && a->nexits == b->nexits &&
		a->flags == b->flags && a->entry == b->entry &&
		!memcmp(a->pc, b->pc, a->ninsns * sizeof(*a->pc)) &&
		(!a->nexits || !memcmp(a->exit_after, b->exit_after,
				       a->nexits * sizeof(*a->exit_after))) &&
		!a->target == !b->target &&
		(!a->target || !memcmp(a->target, b->target,
				       a->nexits * sizeof(*a->target)));
}

/* Each TABLE chunk read whole and read in part: what reads whole reads
 * in part, each translation the same; what is damaged fails one way or
 * the other, never reading outside the chunk. */
static void lazy_tables(const uint8_t *data, size_t size)
{
	size_t off = 0;
	struct hwt_sw_chunk_hdr h;

	while (off < size &&
	       !hwt_sw_chunk_hdr_unpack_flags(data + off, size - off,
					      HWT_SW_CHUNK_RUNS_FLAGS, &h,
					      NULL)) {
		const uint8_t *pay = data + off + HWT_SW_CHUNK_HDR_SIZE;
		struct hwt_sw_table whole = { 0 }, part = { 0 };
		bool whole_ok, part_ok;

		off += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
		if (!(h.flags & HWT_SW_CHUNK_TABLE))
			continue;
		whole_ok = !hwt_sw_table_add(&whole, pay, h.payload_size,
					     NULL);
		part_ok = !hwt_sw_table_add_lazy(&part, pay, h.payload_size,
						 NULL);
		if (whole_ok && (!part_ok || part.count != whole.count))
			abort();
		for (size_t id = 0; part_ok && id < part.n; id++) {
			const struct hwt_sw_tr *tr;
			int rc = hwt_sw_table_get(&part, id, &tr, NULL);

			if (whole_ok && (rc ? rc != -ENOENT || whole.v[id] :
					 !whole.v[id] ||
					 !same_tr(tr, whole.v[id])))
				abort();
		}
		hwt_sw_table_free(&whole);
		hwt_sw_table_free(&part);
	}
}

static void runs(const uint8_t *data, size_t size)
{
	uint8_t *zst = NULL, *idx = NULL, *flat = NULL;
	size_t zst_n, idx_n, flat_n;
	struct hwt_sw_index *ix = NULL;

	if (hwt_sw_trace_pack(data, size, &zst, &zst_n, &idx, &idx_n,
			      NULL) == 0 && idx &&
	    hwt_sw_index_parse(idx, idx_n, zst, zst_n, size, &ix, NULL))
		abort();   /* the packer's own index must read back */
	hwt_sw_index_free(ix);
	free(zst);
	free(idx);
	if (hwt_sw_runs_flatten(data, size, &flat, &flat_n, NULL) == 0 &&
	    flat_n && hwt_sw_chunk_hdr_unpack(flat, flat_n, &(struct
		    hwt_sw_chunk_hdr){ 0 }, NULL))
		abort();   /* flattened: plain chunks */
	free(flat);
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
	runs(data, size);
	lazy_tables(data, size);
	return 0;
}
