// SPDX-License-Identifier: BSD-2-Clause
/* test_perf_aux.c - the perf ring reader (collect/perf/aux.c) on synthetic
 * rings: a fake perf_event_mmap_page with data and AUX areas in plain
 * memory, written the way the kernel writes them. Areas are allocated to
 * their exact size so AddressSanitizer catches any read past them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "perf/perf.h"

#define DATA_OFF 4096u
#define DATA_SIZE 512u
#define AUX_SIZE 64u

struct fake {
	uint8_t *base;
	uint8_t *aux;
	struct perf_event_mmap_page *meta;
	struct hwt_perf_ring ring;
};

static void fake_init(struct fake *f, bool overwrite, uint64_t start)
{
	struct hwt_err err = { 0 };

	f->base = calloc(1, DATA_OFF + DATA_SIZE);
	f->aux = calloc(1, AUX_SIZE);
	if (!f->base || !f->aux)
		abort();
	f->meta = (struct perf_event_mmap_page *)f->base;
	f->meta->data_offset = DATA_OFF;
	f->meta->data_size = DATA_SIZE;
	f->meta->aux_size = AUX_SIZE;
	f->meta->data_head = f->meta->data_tail = start;
	if (hwt_perf_ring_init(&f->ring, f->base, DATA_OFF + DATA_SIZE, f->aux,
			       AUX_SIZE, overwrite, &err) < 0) {
		printf("FAIL fake ring: %s\n", err.msg);
		abort();
	}
}

static void fake_free(struct fake *f)
{
	free(f->base);
	free(f->aux);
}

/* Write a record at data_head the way the kernel does: wrapping. */
static void emit(struct fake *f, const void *rec, size_t n)
{
	const uint8_t *p = rec;

	for (size_t i = 0; i < n; i++)
		f->base[DATA_OFF + ((f->meta->data_head + i) & (DATA_SIZE - 1))] =
			p[i];
	f->meta->data_head += n;
}

static void emit_aux(struct fake *f, uint64_t flags)
{
	struct { struct perf_event_header h; uint64_t off, size, flags; } r = {
		{ PERF_RECORD_AUX, 0, sizeof(r) }, 0, 64, flags };

	emit(f, &r, sizeof(r));
}

static void emit_lost(struct fake *f, uint64_t lost)
{
	struct { struct perf_event_header h; uint64_t id, lost; } r = {
		{ PERF_RECORD_LOST, 0, sizeof(r) }, 1, lost };

	emit(f, &r, sizeof(r));
}

static void emit_mmap2(struct fake *f, uint32_t prot, const char *path,
		       bool terminate)
{
	uint8_t r[8 + 64 + 32] = { 0 };
	struct perf_event_header h = { PERF_RECORD_MMAP2, 0, sizeof(r) };
	uint32_t pid = 42;
	uint64_t addr = 0x401000, len = 0x2000, pgoff = 0x1000;

	memcpy(r, &h, 8);
	memcpy(r + 8, &pid, 4);
	memcpy(r + 16, &addr, 8);
	memcpy(r + 24, &len, 8);
	memcpy(r + 32, &pgoff, 8);
	memcpy(r + 8 + 56, &prot, 4);
	memcpy(r + 8 + 64, path, strlen(path));
	if (!terminate)
		memset(r + 8 + 64 + strlen(path), 'x',
		       sizeof(r) - 8 - 64 - strlen(path));
	emit(f, r, sizeof(r));
}

struct seen {
	int n;
	uint64_t addr, pgoff;
	char path[64];
};

static int on_mmap(void *arg, const struct hwt_perf_mmap *m,
		   struct hwt_err *err)
{
	struct seen *s = arg;

	s->n++;
	s->addr = m->addr;
	s->pgoff = m->pgoff;
	snprintf(s->path, sizeof(s->path), "%s", m->path);
	return 0;
}

static void test_init(void)
{
	struct hwt_err err = { 0 };
	struct hwt_perf_ring r;
	uint8_t *base = calloc(1, DATA_OFF + DATA_SIZE), aux[AUX_SIZE];
	struct perf_event_mmap_page *meta = (void *)base;
	int rc;

	meta->data_offset = DATA_OFF;
	meta->data_size = DATA_SIZE - 8;
	rc = hwt_perf_ring_init(&r, base, DATA_OFF + DATA_SIZE, NULL, 0, false,
				&err);
	CHECK("data area not a power of two", rc == -EINVAL, "rc %d", rc);
	meta->data_size = DATA_SIZE * 2;
	rc = hwt_perf_ring_init(&r, base, DATA_OFF + DATA_SIZE, NULL, 0, false,
				&err);
	CHECK("data area beyond the mapping", rc == -EINVAL &&
	      strstr(err.msg, "does not fit"), "rc %d %s", rc, err.msg);
	meta->data_size = DATA_SIZE;
	meta->aux_size = AUX_SIZE * 2;
	rc = hwt_perf_ring_init(&r, base, DATA_OFF + DATA_SIZE, aux, AUX_SIZE,
				false, &err);
	CHECK("AUX size mismatch", rc == -EINVAL && strstr(err.msg, "aux_size"),
	      "rc %d %s", rc, err.msg);
	rc = hwt_perf_ring_init(&r, base, 100, NULL, 0, false, &err);
	CHECK("mapping smaller than the metadata page", rc == -EINVAL, "rc %d",
	      rc);
	free(base);
}

static void test_records(void)
{
	struct hwt_err err = { 0 };
	struct hwt_perf_stats st = { 0 };
	struct seen s = { 0 };
	struct fake f;
	int rc;

	fake_init(&f, false, 0);
	emit_aux(&f, PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL);
	emit_lost(&f, 7);
	emit_mmap2(&f, 5 /* r-x */, "/usr/bin/true", true);
	emit_mmap2(&f, 3 /* rw- */, "/usr/lib/data", true);
	emit_aux(&f, PERF_AUX_FLAG_COLLISION);
	rc = hwt_perf_ring_records(&f.ring, &st, on_mmap, &s, &err);
	CHECK("records read", rc == 0, "rc %d %s", rc, err.msg);
	CHECK("AUX flags counted", st.aux_records == 2 && st.truncated == 1 &&
	      st.partial == 1 && st.collisions == 1, "aux %llu trunc %llu "
	      "partial %llu coll %llu", (unsigned long long)st.aux_records,
	      (unsigned long long)st.truncated, (unsigned long long)st.partial,
	      (unsigned long long)st.collisions);
	CHECK("LOST counted", st.lost_records == 7, "lost %llu",
	      (unsigned long long)st.lost_records);
	CHECK("executable MMAP2 only", s.n == 1 && s.addr == 0x401000 &&
	      s.pgoff == 0x1000 && !strcmp(s.path, "/usr/bin/true"),
	      "n %d addr %llx path %s", s.n, (unsigned long long)s.addr, s.path);
	CHECK("tail follows head", f.meta->data_tail == f.meta->data_head,
	      "tail %llu head %llu", (unsigned long long)f.meta->data_tail,
	      (unsigned long long)f.meta->data_head);
	rc = hwt_perf_ring_records(&f.ring, &st, on_mmap, &s, &err);
	CHECK("empty ring reads nothing", rc == 0 && st.aux_records == 2 &&
	      s.n == 1, "rc %d", rc);
	fake_free(&f);

	/* A record across the end of the area, at a head counted far past
	 * the area size (heads only grow). */
	fake_init(&f, false, 10 * DATA_SIZE + DATA_SIZE - 16);
	memset(&st, 0, sizeof(st));
	emit_aux(&f, PERF_AUX_FLAG_TRUNCATED);
	emit_lost(&f, 3);
	rc = hwt_perf_ring_records(&f.ring, &st, NULL, NULL, &err);
	CHECK("record split by the wrap", rc == 0 && st.truncated == 1 &&
	      st.lost_records == 3, "rc %d trunc %llu lost %llu: %s", rc,
	      (unsigned long long)st.truncated,
	      (unsigned long long)st.lost_records, err.msg);
	fake_free(&f);
}

static void expect_garbage(const char *name, const void *rec, size_t n,
			   uint64_t extra_head, const char *needle)
{
	struct hwt_err err = { 0 };
	struct hwt_perf_stats st = { 0 };
	struct seen s = { 0 };
	struct fake f;
	int rc;

	fake_init(&f, false, DATA_SIZE - 8);
	emit(&f, rec, n);
	f.meta->data_head += extra_head;
	rc = hwt_perf_ring_records(&f.ring, &st, on_mmap, &s, &err);
	CHECK(name, rc == -EBADMSG && strstr(err.msg, needle) &&
	      f.meta->data_tail == f.meta->data_head && s.n == 0,
	      "rc %d msg '%s'", rc, err.msg);
	fake_free(&f);
}

static void test_garbage(void)
{
	struct perf_event_header zero = { PERF_RECORD_AUX, 0, 0 };
	struct { struct perf_event_header h; uint32_t x; } odd = {
		{ PERF_RECORD_LOST, 0, 12 }, 0 };
	struct { struct perf_event_header h; uint64_t x; } big = {
		{ PERF_RECORD_LOST, 0, 4096 }, 0 };
	struct { struct perf_event_header h; uint64_t x; } short_aux = {
		{ PERF_RECORD_AUX, 0, 16 }, 0 };
	struct { struct perf_event_header h; uint64_t x; } short_lost = {
		{ PERF_RECORD_LOST, 0, 16 }, 0 };
	uint8_t half[4] = { 0 };
	struct fake f;
	struct hwt_err err = { 0 };
	struct hwt_perf_stats st = { 0 };
	struct seen s = { 0 };
	int rc;

	expect_garbage("size 0 record", &zero, sizeof(zero), 0, "size 0");
	expect_garbage("misaligned size", &odd, sizeof(odd), 4, "size 12");
	expect_garbage("record larger than the ring", &big, sizeof(big), 0,
		       "size 4096");
	expect_garbage("short AUX record", &short_aux, sizeof(short_aux), 0,
		       "AUX record");
	expect_garbage("short LOST record", &short_lost, sizeof(short_lost), 0,
		       "LOST record");
	expect_garbage("truncated header", half, sizeof(half), 0,
		       "middle of a record header");

	fake_init(&f, false, 0);
	emit_mmap2(&f, 5, "/bin/unterminated", false);
	rc = hwt_perf_ring_records(&f.ring, &st, on_mmap, &s, &err);
	CHECK("MMAP2 name not terminated", rc == -EBADMSG && s.n == 0 &&
	      strstr(err.msg, "not terminated"), "rc %d %s", rc, err.msg);
	fake_free(&f);

	fake_init(&f, false, 0);
	emit_lost(&f, 1);
	f.meta->data_head += DATA_SIZE;   /* claims more than the area */
	rc = hwt_perf_ring_records(&f.ring, &st, on_mmap, &s, &err);
	CHECK("head beyond the area refused", rc == -EBADMSG &&
	      st.lost_records == 0 && strstr(err.msg, "unread bytes"),
	      "rc %d %s", rc, err.msg);
	fake_free(&f);
}

static void fill_aux(struct fake *f)
{
	for (unsigned i = 0; i < AUX_SIZE; i++)
		f->aux[i] = (uint8_t)(i + 1);
}

/* out holds the AUX bytes from ring position pos onwards, n of them. */
static bool holds(const struct hwt_perf_buf *b, uint64_t pos, size_t n)
{
	if (b->len != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (b->data[i] != (uint8_t)(((pos + i) & (AUX_SIZE - 1)) + 1))
			return false;
	return true;
}

static void test_drain(void)
{
	struct hwt_err err = { 0 };
	struct hwt_perf_buf out = { .max = 1024, .granule = 1 };
	struct fake f;
	int rc;

	fake_init(&f, false, 0);
	fill_aux(&f);
	f.meta->aux_tail = 40;
	f.meta->aux_head = 100;
	rc = hwt_perf_aux_drain(&f.ring, &out, &err);
	CHECK("drain across the wrap", rc == 0 && holds(&out, 40, 60) &&
	      f.meta->aux_tail == 100, "rc %d len %zu tail %llu: %s", rc,
	      out.len, (unsigned long long)f.meta->aux_tail, err.msg);
	rc = hwt_perf_aux_drain(&f.ring, &out, &err);
	CHECK("nothing new, nothing read", rc == 0 && out.len == 60, "len %zu",
	      out.len);
	f.meta->aux_head = 100 + AUX_SIZE + 1;
	rc = hwt_perf_aux_drain(&f.ring, &out, &err);
	CHECK("head beyond the AUX area refused", rc == -EBADMSG &&
	      out.len == 60 && out.dropped == AUX_SIZE + 1 &&
	      f.meta->aux_tail == f.meta->aux_head, "rc %d len %zu", rc,
	      out.len);
	rc = hwt_perf_aux_snapshot(&f.ring, &out, &err);
	CHECK("snapshot of a drained ring refused", rc == -EINVAL, "rc %d", rc);
	hwt_perf_buf_free(&out);
	fake_free(&f);
}

static void test_snapshot(void)
{
	struct hwt_err err = { 0 };
	struct hwt_perf_buf out = { .max = 1024, .granule = 1 };
	struct fake f;
	int rc;

	fake_init(&f, true, 0);
	memset(f.aux, 0x5a, 20);
	f.meta->aux_head = 20;
	rc = hwt_perf_aux_snapshot(&f.ring, &out, &err);
	CHECK("snapshot before the wrap", rc == 0 && out.len == 20 &&
	      out.data[0] == 0x5a && out.data[19] == 0x5a && out.dropped == 0,
	      "rc %d len %zu: %s", rc, out.len, err.msg);
	hwt_perf_buf_free(&out);

	out = (struct hwt_perf_buf){ .max = 1024, .granule = 1 };
	fill_aux(&f);
	f.meta->aux_head = 3 * AUX_SIZE + 10;
	rc = hwt_perf_aux_snapshot(&f.ring, &out, &err);
	CHECK("snapshot of a counted wrap", rc == 0 &&
	      holds(&out, 10, AUX_SIZE) && out.dropped == 2 * AUX_SIZE + 10,
	      "rc %d len %zu dropped %llu", rc, out.len,
	      (unsigned long long)out.dropped);
	hwt_perf_buf_free(&out);

	/* Head kept as an offset: bytes past it betray the wrap. */
	out = (struct hwt_perf_buf){ .max = 1024, .granule = 1 };
	f.meta->aux_head = 10;
	rc = hwt_perf_aux_snapshot(&f.ring, &out, &err);
	CHECK("snapshot of an offset wrap", rc == 0 &&
	      holds(&out, 10, AUX_SIZE), "rc %d len %zu", rc, out.len);
	hwt_perf_buf_free(&out);

	/* 24-byte records end at the head: 64 % 24 = 16 bytes cut. */
	out = (struct hwt_perf_buf){ .max = 1024, .granule = 24 };
	rc = hwt_perf_aux_snapshot(&f.ring, &out, &err);
	CHECK("snapshot cut at whole records", rc == 0 &&
	      holds(&out, 26, 48) && out.dropped == 16, "rc %d len %zu", rc,
	      out.len);
	hwt_perf_buf_free(&out);
	rc = hwt_perf_aux_drain(&f.ring, &out, &err);
	CHECK("drain of an overwrite ring refused", rc == -EINVAL, "rc %d", rc);
	fake_free(&f);
}

static void test_buf(void)
{
	struct hwt_err err = { 0 };
	struct hwt_perf_buf b = { .max = 10, .granule = 1 };
	const uint8_t src[25] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
				  14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
				  25 };
	int rc;

	rc = hwt_perf_buf_append(&b, src, 6, &err) ||
	     hwt_perf_buf_append(&b, src + 6, 6, &err);
	CHECK("buffer keeps the newest bytes", rc == 0 && b.len == 10 &&
	      b.data[0] == 3 && b.data[9] == 12 && b.dropped == 2,
	      "len %zu first %d dropped %llu", b.len, b.len ? b.data[0] : -1,
	      (unsigned long long)b.dropped);
	rc = hwt_perf_buf_append(&b, src, 25, &err);
	CHECK("oversized append keeps its tail", rc == 0 && b.len == 10 &&
	      b.data[0] == 16 && b.data[9] == 25 && b.dropped == 27,
	      "len %zu first %d dropped %llu", b.len, b.data[0],
	      (unsigned long long)b.dropped);
	hwt_perf_buf_free(&b);

	b = (struct hwt_perf_buf){ .max = 10, .granule = 3 };
	rc = hwt_perf_buf_append(&b, src, 6, &err) ||
	     hwt_perf_buf_append(&b, src + 6, 6, &err);
	CHECK("buffer cuts whole granules", rc == 0 && b.len == 9 &&
	      b.data[0] == 4 && b.dropped == 3, "len %zu first %d", b.len,
	      b.len ? b.data[0] : -1);
	hwt_perf_buf_free(&b);
}

int main(void)
{
	RUN(test_init);
	RUN(test_records);
	RUN(test_garbage);
	RUN(test_drain);
	RUN(test_snapshot);
	RUN(test_buf);
	return check_exit();
}
