// SPDX-License-Identifier: BSD-2-Clause
/* test_ring.c - the ptrace collector's per-thread chunk ring: records decode
 * back to the recorded addresses, wrapping drops whole oldest chunks with
 * exact lost accounting, and signal-delivery marks survive chunk
 * boundaries. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hwt-common.h"
#include "ring.h"

struct step {
	uint64_t pc;
	bool async;   /* the transfer into pc was a signal delivery */
};

/* Deterministic mix of sequential steps, short and long jumps, backward
 * branches, repeats (rep-prefixed instructions) and signal deliveries,
 * never more than two deliveries in a row. */
static struct step *make_steps(size_t n, unsigned seed)
{
	struct step *s = calloc(n, sizeof(*s));
	uint64_t pc = 0x555555554000ull;
	unsigned x = seed, async_run = 0;

	s[0].pc = pc;
	for (size_t i = 1; i < n; i++) {
		unsigned k;

		x = x * 1103515245u + 12345u;
		k = (x >> 16) % 100;
		if (k < 60)
			pc += 1 + (x >> 8) % 15;
		else if (k < 70)
			pc -= (x >> 8) % 300;
		else if (k < 75)
			pc += 0;                /* a rep-prefixed iteration */
		else if (k < 85)
			pc += (uint64_t)((x >> 4) % 100000) - 50000;
		else if (k < 90)
			pc = 0x7ffff7fc0000ull + ((x >> 4) & 0xffff);
		else
			pc += 5;
		s[i].pc = pc;
		s[i].async = k >= 95 && async_run < 2;
		async_run = s[i].async ? async_run + 1 : 0;
	}
	return s;
}

static void record(struct hwt_sw_ring *r, const struct step *s, size_t n)
{
	hwt_sw_ring_start(r, s[0].pc);
	for (size_t i = 1; i < n; i++)
		hwt_sw_ring_step(r, s[i].pc, s[i].async);
}

struct decoded {
	struct step *steps;
	size_t n, chunks;
	uint64_t first_seq;     /* of the first chunk */
	char why[700];
};

/* Decode every chunk on its own and check each header against its
 * payload. Chunk-entry transfers are implicit, so their async flag is
 * reported false. */
static bool decode(const uint8_t *p, size_t size, struct decoded *d)
{
	size_t off = 0, cap = 1024;
	uint64_t next_seq = 0;
	struct hwt_err err = {0};

	memset(d, 0, sizeof(*d));
	d->steps = malloc(cap * sizeof(*d->steps));
	while (off < size) {
		struct hwt_sw_chunk_hdr h;
		struct hwt_sw_reader rd;
		uint32_t count = 1;
		bool async;
		int rc;

		if (hwt_sw_chunk_hdr_unpack(p + off, size - off, &h, &err) < 0) {
			snprintf(d->why, sizeof(d->why), "chunk %zu: %s",
				 d->chunks, err.msg);
			return false;
		}
		if (d->chunks == 0)
			d->first_seq = h.first_seq;
		else if (h.first_seq != next_seq) {
			snprintf(d->why, sizeof(d->why),
				 "chunk %zu first_seq %llu, expected %llu",
				 d->chunks, (unsigned long long)h.first_seq,
				 (unsigned long long)next_seq);
			return false;
		}
		hwt_sw_reader_init(&rd, p + off + HWT_SW_CHUNK_HDR_SIZE,
				   h.payload_size, h.first_pc);
		async = false;
		do {
			if (d->n == cap)
				d->steps = realloc(d->steps,
						   (cap *= 2) * sizeof(*d->steps));
			d->steps[d->n].pc = rd.pc;
			d->steps[d->n].async = async;
			d->n++;
			rc = hwt_sw_reader_next(&rd, &async, &err);
			count += rc == HWT_SW_NEXT;
		} while (rc == HWT_SW_NEXT);
		if (rc < 0 || count != h.insn_count || rd.pc != h.last_pc) {
			snprintf(d->why, sizeof(d->why),
				 "chunk %zu: rc %d, %u insns (header %u), "
				 "ends at %llx (header %llx)", d->chunks, rc,
				 count, h.insn_count,
				 (unsigned long long)rd.pc,
				 (unsigned long long)h.last_pc);
			return false;
		}
		next_seq = h.first_seq + h.insn_count;
		off += HWT_SW_CHUNK_HDR_SIZE + h.payload_size;
		d->chunks++;
	}
	return true;
}

/* The decoded history must be the recorded one from index `from` on;
 * async marks must match except on a chunk's first instruction. */
static bool matches(const struct decoded *d, const struct step *s, size_t n,
		    size_t from, size_t *async_seen, char *why, size_t whysz)
{
	*async_seen = 0;
	if (d->n != n - from) {
		snprintf(why, whysz, "decoded %zu instructions, expected %zu",
			 d->n, n - from);
		return false;
	}
	for (size_t i = 0; i < d->n; i++) {
		if (d->steps[i].pc != s[from + i].pc) {
			snprintf(why, whysz, "instruction %zu at %llx, "
				 "expected %llx", from + i,
				 (unsigned long long)d->steps[i].pc,
				 (unsigned long long)s[from + i].pc);
			return false;
		}
		*async_seen += d->steps[i].async;
		if (d->steps[i].async && !s[from + i].async) {
			snprintf(why, whysz, "instruction %zu marked async",
				 from + i);
			return false;
		}
	}
	return true;
}

static size_t count_async(const struct step *s, size_t from, size_t n)
{
	size_t k = 0;

	for (size_t i = from + 1; i < n; i++)
		k += s[i].async;
	return k;
}

static void test_no_wrap(void)
{
	const size_t n = 20000;
	struct step *s = make_steps(n, 1);
	struct hwt_sw_ring r;
	struct decoded d;
	size_t async_seen = 0;
	char why[700] = "";
	bool ok;

	ok = hwt_sw_ring_init(&r, 1u << 20, 512, NULL) == 0;
	record(&r, s, n);
	ok = ok && hwt_sw_ring_seal(&r, NULL) == 0;
	ok = ok && decode(r.sealed, r.sealed_size, &d);
	if (!ok)
		snprintf(why, sizeof(why), "%s", d.why);
	ok = ok && matches(&d, s, n, 0, &async_seen, why, sizeof(why));
	CHECK("ring records decode back to every address", ok, "%s", why);
	CHECK("ring without wrap loses nothing",
	      r.lost_bytes == 0 && r.lost_insns == 0 && r.insn_total == n &&
	      d.first_seq == 0 && d.chunks > 10,
	      "lost %llu bytes %llu insns, total %llu, %zu chunks",
	      (unsigned long long)r.lost_bytes,
	      (unsigned long long)r.lost_insns,
	      (unsigned long long)r.insn_total, d.chunks);
	/* Two deliveries in a row always fit, so no mark may be lost. */
	CHECK("ring keeps every signal-delivery mark",
	      ok && async_seen == count_async(s, 0, n),
	      "%zu marks decoded, %zu recorded", async_seen,
	      count_async(s, 0, n));
	hwt_sw_ring_free(&r);
	free(d.steps);
	free(s);
}

/* Runs of ordinary steps handed over encoded (hwt_sw_ring_steps, as the
 * valgrind reader does for a superblock's instructions), the rest one by
 * one: the same history, wrapping included. */
static void test_bulk(void)
{
	const size_t n = 20000;
	struct step *s = make_steps(n, 3);
	struct hwt_sw_ring r;
	struct decoded d;
	uint8_t enc[8 * HWT_SW_MAX_RECORD];
	size_t bulk = 0, async_seen = 0, i = 1;
	char why[700] = "";
	bool ok;

	ok = hwt_sw_ring_init(&r, 8u << 10, 512, NULL) == 0;
	hwt_sw_ring_start(&r, s[0].pc);
	while (i < n) {
		size_t k = 0, len = 0;

		while (i + k < n && k < 8 && !s[i + k].async) {
			len += hwt_sw_encode_step(s[i + k - 1].pc, s[i + k].pc,
						  false, enc + len);
			k++;
		}
		if (k && hwt_sw_ring_steps(&r, enc, len, (uint32_t)k,
					   s[i + k - 1].pc)) {
			bulk++;
			i += k;
			continue;
		}
		hwt_sw_ring_step(&r, s[i].pc, s[i].async);
		i++;
	}
	ok = ok && hwt_sw_ring_seal(&r, NULL) == 0;
	ok = ok && decode(r.sealed, r.sealed_size, &d);
	if (!ok)
		snprintf(why, sizeof(why), "%s", d.why);
	ok = ok && matches(&d, s, n, r.lost_insns, &async_seen, why,
			   sizeof(why));
	CHECK("ring: runs copied as encoded records decode as steps do, "
	      "wrapped", ok && bulk > 100 && r.lost_insns > 0 &&
	      r.insn_total == n, "%s (%zu runs copied, %llu lost)", why, bulk,
	      (unsigned long long)r.lost_insns);
	hwt_sw_ring_free(&r);
	free(d.steps);
	free(s);
}

/* A ring shrunk while recording (threads sharing one window): the
 * oldest chunks go, counted as lost, and what is left and recorded after
 * decodes as the newest history. */
static void test_shrink(void)
{
	const size_t n = 40000;
	struct step *s = make_steps(n, 5);
	struct hwt_sw_ring r;
	struct decoded d;
	size_t async_seen = 0, lost_at_shrink;
	char why[700] = "";
	bool ok;

	ok = hwt_sw_ring_init(&r, 1u << 20, 512, NULL) == 0;
	hwt_sw_ring_start(&r, s[0].pc);
	for (size_t i = 1; i < n / 2; i++)
		hwt_sw_ring_step(&r, s[i].pc, s[i].async);
	hwt_sw_ring_set_capacity(&r, 8u << 10);
	lost_at_shrink = (size_t)r.lost_insns;
	for (size_t i = n / 2; i < n; i++)
		hwt_sw_ring_step(&r, s[i].pc, s[i].async);
	ok = ok && r.queue_alloc <= (8u << 10) && lost_at_shrink > 0;
	ok = ok && hwt_sw_ring_seal(&r, NULL) == 0;
	ok = ok && decode(r.sealed, r.sealed_size, &d);
	if (!ok)
		snprintf(why, sizeof(why), "%s", d.why);
	ok = ok && matches(&d, s, n, r.lost_insns, &async_seen, why,
			   sizeof(why));
	CHECK("ring: shrunk while recording, it keeps the newest within the "
	      "new capacity and counts the rest", ok &&
	      r.sealed_size <= (8u << 10) && r.insn_total == n,
	      "%s (%zu lost at the shrink, %llu in all, %zu bytes)", why,
	      lost_at_shrink, (unsigned long long)r.lost_insns,
	      r.sealed_size);
	hwt_sw_ring_free(&r);
	free(d.steps);
	free(s);
}

/* Shrunk, then given room again: it grows back to what it was made with,
 * never beyond. */
static void test_regrow(void)
{
	const size_t n = 60000;
	struct step *s = make_steps(n, 5);
	struct hwt_sw_ring r;
	uint64_t lost_small;
	bool ok;

	ok = hwt_sw_ring_init(&r, 64u << 10, 512, NULL) == 0;
	hwt_sw_ring_start(&r, s[0].pc);
	hwt_sw_ring_set_capacity(&r, 4u << 10);
	for (size_t i = 1; i < n / 2; i++)
		hwt_sw_ring_step(&r, s[i].pc, s[i].async);
	lost_small = r.lost_insns;
	hwt_sw_ring_set_capacity(&r, 1u << 30);
	for (size_t i = n / 2; i < n; i++)
		hwt_sw_ring_step(&r, s[i].pc, s[i].async);
	CHECK("ring: shrunk, then given room again, it grows back to its "
	      "own capacity and no further", ok && lost_small > 0 &&
	      r.capacity == (64u << 10) && hwt_sw_ring_used(&r) > (32u << 10) &&
	      hwt_sw_ring_used(&r) <= (64u << 10),
	      "capacity %llu, used %llu, lost while small %llu",
	      (unsigned long long)r.capacity,
	      (unsigned long long)hwt_sw_ring_used(&r),
	      (unsigned long long)lost_small);
	hwt_sw_ring_free(&r);
	free(s);
}

static void test_wrap(void)
{
	const size_t n = 50000;
	const uint64_t cap = 2048;
	struct step *s = make_steps(n, 7);
	struct hwt_sw_ring r, whole;
	struct decoded d = {0};
	size_t async_seen;
	char why[700] = "";
	bool ok;

	ok = hwt_sw_ring_init(&r, cap, 200, NULL) == 0 &&
	     hwt_sw_ring_init(&whole, 1u << 24, 200, NULL) == 0;
	record(&r, s, n);
	record(&whole, s, n);
	ok = ok && hwt_sw_ring_seal(&r, NULL) == 0 && hwt_sw_ring_seal(&whole, NULL) == 0;
	CHECK("ring stays within its capacity",
	      ok && r.sealed_size <= cap && r.sealed_size > cap / 2,
	      "%zu bytes kept of %llu", r.sealed_size,
	      (unsigned long long)cap);
	ok = ok && decode(r.sealed, r.sealed_size, &d);
	if (!ok)
		snprintf(why, sizeof(why), "%s", d.why);
	ok = ok && matches(&d, s, n, (size_t)r.lost_insns, &async_seen, why,
			   sizeof(why));
	CHECK("wrapped ring keeps the newest history, decodable", ok, "%s",
	      why);
	CHECK("wrapped ring accounts lost instructions and bytes",
	      ok && r.insn_total == n && d.first_seq == r.lost_insns &&
	      r.lost_insns + d.n == n &&
	      r.lost_bytes + r.sealed_size == whole.sealed_size,
	      "total %llu, lost %llu insns %llu bytes, kept %zu insns "
	      "%zu bytes, unwrapped %zu bytes",
	      (unsigned long long)r.insn_total,
	      (unsigned long long)r.lost_insns,
	      (unsigned long long)r.lost_bytes, d.n, r.sealed_size,
	      whole.sealed_size);
	hwt_sw_ring_free(&r);
	hwt_sw_ring_free(&whole);
	free(d.steps);
	free(s);
}

static void test_edges(void)
{
	struct hwt_sw_ring r;
	struct hwt_err err = {0};
	struct decoded d = {0};
	bool ok;

	CHECK("ring refuses a capacity below one chunk",
	      hwt_sw_ring_init(&r, 100, 200, &err) < 0 && err.msg[0],
	      "accepted");
	CHECK("ring refuses a tiny chunk payload",
	      hwt_sw_ring_init(&r, 1 << 20, 8, NULL) < 0, "accepted");
	CHECK("chunk payload scales with capacity",
	      hwt_sw_ring_chunk_payload_for(64u << 10) == 4096 &&
	      hwt_sw_ring_chunk_payload_for(4u << 20) == 16384 &&
	      hwt_sw_ring_chunk_payload_for(256) == HWT_RING_MIN_CHUNK_PAYLOAD,
	      "%u %u %u", hwt_sw_ring_chunk_payload_for(64u << 10),
	      hwt_sw_ring_chunk_payload_for(4u << 20),
	      hwt_sw_ring_chunk_payload_for(256));

	ok = hwt_sw_ring_init(&r, 1 << 16, 1024, NULL) == 0 &&
	     hwt_sw_ring_seal(&r, NULL) == 0;
	CHECK("a thread that never ran seals to an empty trace",
	      ok && r.sealed && r.sealed_size == 0, "size %zu",
	      r.sealed_size);
	hwt_sw_ring_free(&r);

	ok = hwt_sw_ring_init(&r, 1 << 16, 1024, NULL) == 0;
	hwt_sw_ring_start(&r, 0x401000);
	ok = ok && hwt_sw_ring_seal(&r, NULL) == 0 &&
	     decode(r.sealed, r.sealed_size, &d);
	CHECK("a single instruction is one empty-payload chunk",
	      ok && d.n == 1 && d.steps[0].pc == 0x401000 &&
	      r.sealed_size == HWT_SW_CHUNK_HDR_SIZE,
	      "%zu insns, %zu bytes %s", d.n, r.sealed_size, d.why);
	hwt_sw_ring_free(&r);
	free(d.steps);
}

/* Rings sharing a budget: the one that takes them past it has the
 * window shared at once (here: halved between the two), so together they
 * never hold more than the budget and a chunk, however one grows. */
struct pair {
	struct hwt_sw_ring a, b;
	unsigned shares;
};

static void halve(void *ctx)
{
	struct pair *p = ctx;

	p->shares++;
	hwt_sw_ring_set_capacity(&p->a, 32u << 10);
	hwt_sw_ring_set_capacity(&p->b, 32u << 10);
}

static void test_budget(void)
{
	const size_t n = 60000;
	struct step *s = make_steps(n, 9);
	struct pair p;
	struct hwt_sw_ring_budget budget = { .limit = 64u << 10,
					     .over = halve, .ctx = &p };
	uint64_t worst = 0;
	bool ok;

	ok = hwt_sw_ring_init(&p.a, 64u << 10, 512, NULL) == 0 &&
		hwt_sw_ring_init(&p.b, 64u << 10, 512, NULL) == 0;
	p.shares = 0;
	p.a.budget = p.b.budget = &budget;
	hwt_sw_ring_start(&p.a, s[0].pc);
	hwt_sw_ring_start(&p.b, s[0].pc);
	/* b fills its window alone, then a grows past the budget. */
	for (size_t i = 1; i < n / 2; i++)
		hwt_sw_ring_step(&p.b, s[i].pc, s[i].async);
	for (size_t i = 1; i < n; i++) {
		hwt_sw_ring_step(&p.a, s[i].pc, s[i].async);
		if (budget.used > worst)
			worst = budget.used;
	}
	CHECK("ring: rings sharing a budget hold no more than it and a chunk, "
	      "the window shared as soon as one passes it",
	      ok && p.shares > 0 && worst <= (64u << 10) + 600 &&
	      budget.used == p.a.queue_used + p.b.queue_used,
	      "%u shares, at most %llu bytes, %llu counted, %zu held",
	      p.shares, (unsigned long long)worst,
	      (unsigned long long)budget.used,
	      p.a.queue_used + p.b.queue_used);
	hwt_sw_ring_free(&p.a);
	hwt_sw_ring_free(&p.b);
	CHECK("ring: freed rings give their bytes back to the budget",
	      budget.used == 0, "%llu left", (unsigned long long)budget.used);
	free(s);
}

int main(void)
{
	RUN(test_no_wrap);
	RUN(test_wrap);
	RUN(test_bulk);
	RUN(test_shrink);
	RUN(test_regrow);
	RUN(test_edges);
	RUN(test_budget);
	return check_exit();
}
