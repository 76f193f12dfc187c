// SPDX-License-Identifier: BSD-2-Clause
/* test_pt.c - the Intel PT decoder (replay/decode_pt.c) on synthetic
 * streams written with libipt's own encoder: PSB segments that split a
 * run, resynchronization after damage, overflow, tracing off and on,
 * timestamps, and bytes before the first PSB.
 *
 * The code traced is a loop at BASE:
 *   BASE+0  inc %rax        (48 ff c0)
 *   BASE+3  cmp %rcx,%rax   (48 39 c8)
 *   BASE+6  jne BASE+0      (75 f8)
 *   BASE+8  ret             (c3)
 * so every taken TNT bit is one more iteration of three instructions;
 * BASE+0x10 is a PTWRITE; BASE+0x20 is 32-bit code (test_mode32).
 */
#include <errno.h>
#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hwt-replay.h"
#include "decode.h"
#include "replay-int.h"
#include "check.h"

#define BASE 0x401000ull
#define MAXI 4096

static const uint8_t code[] = {
	0x48, 0xff, 0xc0, 0x48, 0x39, 0xc8, 0x75, 0xf8, 0xc3,
	0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	0xf3, 0x48, 0x0f, 0xae, 0xe0,          /* BASE+0x10: ptwrite %rax */
	0x90,                                  /* BASE+0x15: nop */
	0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	/* BASE+0x20, 32-bit code: inc %eax; dec %eax; ret. In 64-bit mode
	 * 0x40 and 0x48 are REX prefixes of one long instruction. */
	0x40, 0x48, 0xc3,
	0x90, 0x90, 0x90, 0x90, 0x90,
	0x48, 0xff, 0xc0, 0xc3,                /* BASE+0x28: inc %rax; ret */
};

struct enc {
	struct pt_encoder *e;
	struct pt_config cfg;
	uint8_t buf[1 << 16];
	bool failed;
};

struct items {
	size_t n;
	bool gap[MAXI];
	uint64_t addr[MAXI], ts[MAXI];
	const char *reason[MAXI];
};

static void enc_fini(struct enc *x)
{
	pt_free_encoder(x->e);
	x->e = NULL;
}

static void enc_init(struct enc *x)
{
	memset(x, 0, sizeof(*x));
	pt_config_init(&x->cfg);
	x->cfg.begin = x->buf;
	x->cfg.end = x->buf + sizeof(x->buf);
	x->e = pt_alloc_encoder(&x->cfg);
	x->failed = !x->e;
}

static size_t enc_off(struct enc *x)
{
	uint64_t off = 0;

	pt_enc_get_offset(x->e, &off);
	return (size_t)off;
}

static void put(struct enc *x, struct pt_packet *p)
{
	if (pt_enc_next(x->e, p) < 0)
		x->failed = true;
}

static void ip_pkt(struct enc *x, enum pt_packet_type type, uint64_t ip,
		   bool suppressed)
{
	struct pt_packet p = { .type = type };

	p.payload.ip.ipc = suppressed ? pt_ipc_suppressed : pt_ipc_sext_48;
	p.payload.ip.ip = ip;
	put(x, &p);
}

static void simple(struct enc *x, enum pt_packet_type type)
{
	struct pt_packet p = { .type = type };

	put(x, &p);
}

/* PSB+ with the IP tracing is at (tsc 0: no TSC packet). */
static void psb(struct enc *x, uint64_t ip, uint64_t tsc)
{
	struct pt_packet p = { .type = ppt_psb };

	put(x, &p);
	if (tsc) {
		p = (struct pt_packet){ .type = ppt_tsc };
		p.payload.tsc.tsc = tsc;
		put(x, &p);
	}
	p = (struct pt_packet){ .type = ppt_mode };
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;
	put(x, &p);
	ip_pkt(x, ppt_fup, ip, false);
	simple(x, ppt_psbend);
}

/* n conditional branches, the first one in the highest bit; 1 = taken. */
static void tnt(struct enc *x, uint64_t bits, uint8_t n)
{
	struct pt_packet p = { .type = ppt_tnt_8 };

	p.payload.tnt.bit_size = n;
	p.payload.tnt.payload = bits;
	put(x, &p);
}

static void raw(struct enc *x, const void *bytes, size_t n)
{
	size_t off = enc_off(x);

	memcpy(x->buf + off, bytes, n);
	if (pt_enc_sync_set(x->e, off + n) < 0)
		x->failed = true;
}

static void push(struct items *it, bool gap, uint64_t addr, uint64_t ts,
		 const char *reason)
{
	if (it->n < MAXI) {
		it->gap[it->n] = gap;
		it->addr[it->n] = addr;
		it->ts[it->n] = ts;
		it->reason[it->n] = reason;
	}
	it->n++;
}

/* Index, then decode every segment, as the history does; the reasons
 * stay valid until segs is freed. */
static int decode_all(const uint8_t *t, size_t size, struct hwt_image *img,
		      struct hwt_segments *segs, struct items *it,
		      struct hwt_err *err)
{
	static const struct hwt_cpu_info cpu = { "GenuineIntel", 6, 79, 1 };
	uint64_t total = 0;
	int rc;

	memset(it, 0, sizeof(*it));
	memset(segs, 0, sizeof(*segs));
	segs->in.cpu = &cpu;
	rc = hwt_decoder_pt.index_image(t, size, 0, 0, img, segs, err);
	for (size_t s = 0; !rc && s < segs->n; s++) {
		struct hwt_blocks b = { 0 };

		total += segs->v[s].nitems;
		rc = hwt_decoder_pt.decode(t, size, &segs->v[s], img, &b, err);
		for (size_t i = 0; !rc && i < b.n; i++) {
			uint64_t a = b.v[i].begin;

			if (b.v[i].flags & HWT_BLOCK_GAP) {
				push(it, true, 0, 0, b.v[i].reason);
				continue;
			}
			for (uint32_t k = 0; k < b.v[i].count; k++) {
				enum hwt_insn_class cls;
				uint8_t len = 0;

				push(it, false, a, b.v[i].timestamp, NULL);
				hwt_image_insn_info(img, a, &len, &cls);
				a += len;
			}
		}
		free(b.v);
	}
	if (!rc && total != it->n)
		rc = hwt_err_set(err, EIO, "index says %llu items, decode "
				 "gave %zu", (unsigned long long)total, it->n);
	return rc;
}

/* Decode a big stream and compare with want[0..n-1]; *bad gets the first
 * differing item (SIZE_MAX: none). */
static int decode_all_big(const uint8_t *t, size_t size, struct hwt_image *img,
			  struct hwt_segments *segs, const uint64_t *want,
			  size_t n, size_t *bad, struct hwt_err *err)
{
	static const struct hwt_cpu_info cpu = { "GenuineIntel", 6, 79, 1 };
	size_t at = 0;
	int rc;

	memset(segs, 0, sizeof(*segs));
	segs->in.cpu = &cpu;
	rc = hwt_decoder_pt.index_image(t, size, 0, 0, img, segs, err);
	for (size_t s = 0; !rc && s < segs->n; s++) {
		struct hwt_blocks b = { 0 };

		rc = hwt_decoder_pt.decode(t, size, &segs->v[s], img, &b, err);
		for (size_t i = 0; !rc && i < b.n; i++) {
			uint64_t a = b.v[i].begin;

			for (uint32_t k = 0; k < b.v[i].count; k++, at++) {
				enum hwt_insn_class cls;
				uint8_t len = 0;

				if (*bad == SIZE_MAX &&
				    ((b.v[i].flags & HWT_BLOCK_GAP) ||
				     at >= n || want[at] != a))
					*bad = at;
				hwt_image_insn_info(img, a, &len, &cls);
				a += len;
			}
		}
		free(b.v);
	}
	if (!rc && at != n && *bad == SIZE_MAX)
		*bad = at;
	return rc;
}

/* Whether items from..from+3*n-1 are n loop iterations. */
static bool loops(const struct items *it, size_t from, size_t n)
{
	for (size_t i = 0; i < 3 * n; i++) {
		static const uint64_t off[] = { 0, 3, 6 };

		if (from + i >= it->n || it->gap[from + i] ||
		    it->addr[from + i] != BASE + off[i % 3])
			return false;
	}
	return true;
}

static size_t count_gaps(const struct items *it)
{
	size_t n = 0;

	for (size_t i = 0; i < it->n; i++)
		n += it->gap[i];
	return n;
}

static void show(const char *what, const struct items *it)
{
	printf("  | %s: %zu items:", what, it->n);
	for (size_t i = 0; i < it->n && i < 64; i++) {
		if (it->gap[i])
			printf(" [gap: %s]", it->reason[i]);
		else
			printf(" %llx", (unsigned long long)(it->addr[i] - BASE));
	}
	printf("\n");
}

/* One run split by a PSB in the middle of it: the first segment must stop
 * where the second starts, no instruction twice, none lost. */
static void test_split(struct hwt_image *img)
{
	struct enc *x = malloc(sizeof(*x));
	struct hwt_segments segs;
	struct items *it = malloc(sizeof(*it));
	struct hwt_err err = { 0 };
	int rc;

	enc_init(x);
	psb(x, BASE, 1000);
	tnt(x, 0x7, 3);              /* three iterations taken */
	psb(x, BASE, 2000);          /* at the start of the fourth */
	tnt(x, 0x6, 3);              /* taken, taken, not taken */
	ip_pkt(x, ppt_fup, BASE + 8, false);
	ip_pkt(x, ppt_tip_pgd, 0, true);
	rc = decode_all(x->buf, enc_off(x), img, &segs, it, &err);
	CHECK("pt split: decodes", !x->failed && rc == 0, "rc %d: %s", rc,
	      err.msg);
	CHECK("pt split: two segments", segs.n == 2, "%zu segments", segs.n);
	CHECK("pt split: 6 iterations, no duplicates, no gaps",
	      it->n == 18 && loops(it, 0, 6) && !count_gaps(it),
	      "%zu items, %zu gaps", it->n, count_gaps(it));
	show("split", it);
	CHECK("pt split: timestamps from TSC",
	      it->n == 18 && it->ts[0] == 1000 && it->ts[8] == 1000 &&
	      it->ts[9] == 2000 && it->ts[17] == 2000,
	      "ts %llu %llu %llu", (unsigned long long)it->ts[0],
	      (unsigned long long)it->ts[8], (unsigned long long)it->ts[9]);
	hwt_segments_free(&segs);
	enc_fini(x);
	free(x);
	free(it);
}

/* A bad packet: a gap with libipt's message and the offset, decoding
 * resumes at the next PSB. */
static void test_resync(struct hwt_image *img)
{
	static const uint8_t junk[] = { 0x02, 0xff, 0x02, 0xff };
	struct enc *x = malloc(sizeof(*x));
	struct hwt_segments segs;
	struct items *it = malloc(sizeof(*it));
	struct hwt_err err = { 0 };
	char want[64];
	size_t junk_off, g = 0;
	int rc;

	enc_init(x);
	psb(x, BASE, 0);
	tnt(x, 0x3, 2);
	junk_off = enc_off(x);
	raw(x, junk, sizeof(junk));
	tnt(x, 0x3, 2);
	psb(x, BASE, 0);
	tnt(x, 0x1, 1);
	ip_pkt(x, ppt_fup, BASE + 3, false);
	ip_pkt(x, ppt_tip_pgd, 0, true);
	rc = decode_all(x->buf, enc_off(x), img, &segs, it, &err);
	show("resync", it);
	CHECK("pt resync: decodes", !x->failed && rc == 0, "rc %d: %s", rc,
	      err.msg);
	while (g < it->n && !it->gap[g])
		g++;
	snprintf(want, sizeof(want), "offset %zu", junk_off);
	CHECK("pt resync: one gap with offset and libipt's message",
	      count_gaps(it) == 1 && g < it->n && strstr(it->reason[g], want) &&
	      strstr(it->reason[g], pt_errstr(pte_bad_opc)),
	      "%zu gaps, reason %s (want '%s')", count_gaps(it),
	      g < it->n ? it->reason[g] : "-", want);
	/* libipt reads ahead: the error shows one iteration early. */
	CHECK("pt resync: before the damage, then from the next PSB",
	      g >= 3 && loops(it, 0, 1) && loops(it, g + 1, 1) &&
	      it->n == g + 5 && it->addr[g + 4] == BASE,
	      "gap at %zu of %zu", g, it->n);
	hwt_segments_free(&segs);
	enc_fini(x);
	free(x);
	free(it);
}

/* OVF: a gap saying overflow, then on at the FUP's IP. */
static void test_overflow(struct hwt_image *img)
{
	struct enc *x = malloc(sizeof(*x));
	struct hwt_segments segs;
	struct items *it = malloc(sizeof(*it));
	struct hwt_err err = { 0 };
	size_t g = 0;
	int rc;

	enc_init(x);
	psb(x, BASE, 0);
	tnt(x, 0x3, 2);
	simple(x, ppt_ovf);
	ip_pkt(x, ppt_fup, BASE + 3, false);
	tnt(x, 0x1, 1);
	ip_pkt(x, ppt_fup, BASE + 3, false);
	ip_pkt(x, ppt_tip_pgd, 0, true);
	rc = decode_all(x->buf, enc_off(x), img, &segs, it, &err);
	show("overflow", it);
	CHECK("pt overflow: decodes", !x->failed && rc == 0, "rc %d: %s", rc,
	      err.msg);
	while (g < it->n && !it->gap[g])
		g++;
	CHECK("pt overflow: one overflow gap", count_gaps(it) == 1 &&
	      strstr(it->reason[g], "overflow"), "%zu gaps, first: %s",
	      count_gaps(it), g < it->n ? it->reason[g] : "-");
	CHECK("pt overflow: resumes at the FUP's IP",
	      g + 1 < it->n && it->addr[g + 1] == BASE + 3 && loops(it, 0, 2),
	      "gap at %zu of %zu, next %llx", g, it->n,
	      g + 1 < it->n ? (unsigned long long)it->addr[g + 1] : 0ull);
	hwt_segments_free(&segs);
	enc_fini(x);
	free(x);
	free(it);
}

/* Tracing off and on: at the instruction it stopped before (no gap), and
 * somewhere else (a gap naming both addresses). */
static void test_off_on(struct hwt_image *img, uint64_t on_ip, bool want_gap)
{
	struct enc *x = malloc(sizeof(*x));
	struct hwt_segments segs;
	struct items *it = malloc(sizeof(*it));
	struct hwt_err err = { 0 };
	char name[96];
	int rc;

	enc_init(x);
	psb(x, BASE, 0);
	tnt(x, 0x1, 1);
	ip_pkt(x, ppt_fup, BASE + 3, false);   /* async stop before cmp */
	ip_pkt(x, ppt_tip_pgd, 0, true);
	ip_pkt(x, ppt_tip_pge, on_ip, false);
	tnt(x, 0x1, 1);
	ip_pkt(x, ppt_fup, BASE + 3, false);
	ip_pkt(x, ppt_tip_pgd, 0, true);
	rc = decode_all(x->buf, enc_off(x), img, &segs, it, &err);
	show("off/on", it);
	snprintf(name, sizeof(name), "pt off/on at +%llx: %s",
		 (unsigned long long)(on_ip - BASE), want_gap ? "gap" : "no gap");
	CHECK(name, !x->failed && rc == 0 && count_gaps(it) == (want_gap ? 1u : 0u) &&
	      loops(it, 0, 1) && it->n > 4 && it->addr[3] == BASE &&
	      (!want_gap || (it->gap[4] && strstr(it->reason[4], "0x401003") &&
			     strstr(it->reason[4], "0x401000"))) &&
	      (want_gap || it->addr[4] == BASE + 3),
	      "rc %d (%s), %zu items, %zu gaps", rc, err.msg, it->n,
	      count_gaps(it));
	hwt_segments_free(&segs);
	enc_fini(x);
	free(x);
	free(it);
}

/* Bytes before the first PSB: zeros are padding, anything else a gap. */
static void test_prefix(struct hwt_image *img)
{
	struct enc *x = malloc(sizeof(*x));
	struct hwt_segments segs;
	struct items *it = malloc(sizeof(*it));
	struct hwt_err err = { 0 };
	static const uint8_t zeros[16], junk[3] = { 0x1d, 0x55, 0x02 };
	int rc;

	enc_init(x);
	raw(x, zeros, sizeof(zeros));
	psb(x, BASE, 0);
	tnt(x, 0x0, 1);
	rc = decode_all(x->buf, enc_off(x), img, &segs, it, &err);
	CHECK("pt padding before the first PSB: no gap",
	      rc == 0 && !count_gaps(it) && it->n >= 3, "rc %d, %zu items, "
	      "%zu gaps", rc, it->n, count_gaps(it));
	hwt_segments_free(&segs);
	enc_fini(x);
	enc_init(x);
	raw(x, junk, sizeof(junk));
	psb(x, BASE, 0);
	tnt(x, 0x0, 1);
	rc = decode_all(x->buf, enc_off(x), img, &segs, it, &err);
	CHECK("pt bytes before the first PSB: a gap first",
	      rc == 0 && count_gaps(it) == 1 && it->gap[0] &&
	      strstr(it->reason[0], "3 bytes"), "rc %d, %zu items: %s", rc,
	      it->n, it->n && it->gap[0] ? it->reason[0] : "-");
	hwt_segments_free(&segs);
	rc = decode_all(zeros, sizeof(zeros), img, &segs, it, &err);
	CHECK("pt all padding: no items", rc == 0 && it->n == 0,
	      "rc %d, %zu items", rc, it->n);
	hwt_segments_free(&segs);
	enc_fini(x);
	free(x);
	free(it);
}

/* Every truncation of a stream: never a failure, never a crash. */
static void test_truncations(struct hwt_image *img)
{
	struct enc *x = malloc(sizeof(*x));
	struct hwt_segments segs;
	struct items *it = malloc(sizeof(*it));
	struct hwt_err err = { 0 };
	size_t size, bad = 0;

	enc_init(x);
	psb(x, BASE, 7);
	tnt(x, 0x3f, 6);
	simple(x, ppt_ovf);
	ip_pkt(x, ppt_fup, BASE, false);
	psb(x, BASE, 9);
	tnt(x, 0x3e, 6);
	ip_pkt(x, ppt_fup, BASE + 8, false);
	ip_pkt(x, ppt_tip_pgd, 0, true);
	size = enc_off(x);
	for (size_t cut = 0; cut <= size; cut++) {
		for (size_t start = 0; start < 24 && start <= cut; start += 5) {
			if (decode_all(x->buf + start, cut - start, img, &segs, it,
				       &err))
				bad++;
			hwt_segments_free(&segs);
		}
	}
	CHECK("pt truncated streams decode (gaps, no errors)", bad == 0,
	      "%zu failed, last: %s", bad, err.msg);
	enc_fini(x);
	free(x);
	free(it);
}

/* A long run through hwt_pt_encode (the encoder in replay/), decoded back
 * to exactly the history the stream was written from. */
static void test_round_trip(struct hwt_image *img)
{
	enum { N = 200000 };
	size_t npc = 3 * N + 1, cap = npc * (HWT_SW_MAX_RECORD + 1), len = 0;
	uint64_t *pcs = malloc(npc * sizeof(*pcs));
	uint8_t *sw = malloc(HWT_SW_CHUNK_HDR_SIZE + cap), *pt = NULL;
	HWT_OPTS(hwt_pt_encode_opts, opts,
		 .cpu = { "GenuineIntel", 6, 79, 1 });
	struct hwt_sw_chunk_hdr hdr = { 0 };
	struct hwt_history *h = NULL;
	struct hwt_segments segs = { 0 };
	struct hwt_err err = { 0 };
	size_t ptsize = 0, bad = SIZE_MAX;
	int rc;

	for (size_t i = 0; i < N; i++)
		for (size_t k = 0; k < 3; k++)
			pcs[3 * i + k] = BASE + 3 * k;
	pcs[npc - 1] = BASE + 8;
	for (size_t i = 1; i < npc; i++)
		len += hwt_sw_encode_step(pcs[i - 1], pcs[i], false,
					  sw + HWT_SW_CHUNK_HDR_SIZE + len);
	hdr = (struct hwt_sw_chunk_hdr){
		.payload_size = (uint32_t)len, .first_pc = BASE,
		.last_pc = BASE + 8, .insn_count = (uint32_t)npc,
	};
	hwt_sw_chunk_hdr_pack(&hdr, sw);
	rc = hwt_history_open_sw(sw, HWT_SW_CHUNK_HDR_SIZE + len, 0, img, &h,
				 &err);
	if (!rc)
		rc = hwt_pt_encode(h, img, 0, 0, &opts, &pt, &ptsize, &err);
	CHECK("pt round trip: history encoded", rc == 0, "rc %d: %s", rc,
	      err.msg);
	if (!rc)
		rc = decode_all_big(pt, ptsize, img, &segs, pcs, npc - 1, &bad,
				    &err);
	CHECK("pt round trip: 600000 instructions, one for one",
	      rc == 0 && bad == SIZE_MAX,
	      "rc %d (%s), %zu segments, first difference at item %zu", rc,
	      err.msg, segs.n, bad);
	hwt_segments_free(&segs);
	hwt_history_free(h);
	free(pt);
	free(sw);
	free(pcs);
}

/* Many PSBs, each in the middle of the run: 300 segments of 141
 * iterations, every one cut where the next PSB's IP is. */
static void test_many_psbs(struct hwt_image *img)
{
	enum { SEGS = 300, PER = 3 * 47 };
	struct enc *x = malloc(sizeof(*x));
	struct hwt_segments segs;
	uint64_t *want = malloc((3 * SEGS * PER + 1) * sizeof(*want));
	size_t n = 0, bad = SIZE_MAX;
	struct hwt_err err = { 0 };
	int rc;

	enc_init(x);
	for (int s = 0; s < SEGS; s++) {
		psb(x, BASE, 100 + (uint64_t)s);
		for (int k = 0; k < 3; k++) {
			struct pt_packet p = { .type = ppt_tnt_64 };

			p.payload.tnt.bit_size = 47;
			p.payload.tnt.payload = (1ull << 47) - 1;
			put(x, &p);
		}
		for (int i = 0; i < PER; i++) {
			want[n++] = BASE;
			want[n++] = BASE + 3;
			want[n++] = BASE + 6;
		}
	}
	want[n++] = BASE;
	ip_pkt(x, ppt_fup, BASE + 3, false);
	ip_pkt(x, ppt_tip_pgd, 0, true);
	rc = decode_all_big(x->buf, enc_off(x), img, &segs, want, n, &bad,
			    &err);
	CHECK("pt 300 PSBs: every instruction once, in order",
	      !x->failed && rc == 0 && segs.n == SEGS && bad == SIZE_MAX,
	      "rc %d (%s), %zu segments, first difference at item %zu", rc,
	      err.msg, segs.n, bad);
	hwt_segments_free(&segs);
	enc_fini(x);
	free(x);
	free(want);
}

/* PTW: the payload on the PTWRITE's item, through the history. */
static void test_ptwrite(struct hwt_image *img)
{
	struct enc *x = malloc(sizeof(*x));
	struct pt_packet p = { .type = ppt_ptw };
	struct hwt_history *h = NULL;
	struct hwt_err err = { 0 };
	struct hwt_item a = { 0 }, b = { 0 };
	int rc;

	enc_init(x);
	psb(x, BASE + 0x10, 0);
	p.payload.ptw.plc = 1;
	p.payload.ptw.payload = 0x1122334455667788ull;
	put(x, &p);
	ip_pkt(x, ppt_fup, BASE + 0x16, false);
	ip_pkt(x, ppt_tip_pgd, 0, true);
	rc = hwt_history_open_format(HWT_BUNDLE_TYPE_PT, x->buf, enc_off(x),
				     img, &h, &err);
	if (!rc)
		rc = hwt_history_get(h, 1, &a, &err);
	if (!rc)
		rc = hwt_history_get(h, 2, &b, &err);
	CHECK("pt ptwrite: payload on the PTWRITE's item", !x->failed &&
	      rc == 0 && hwt_history_count(h) == 2 && a.addr == BASE + 0x10 &&
	      (a.flags & HWT_ITEM_PTWRITE) &&
	      a.ptwrite == 0x1122334455667788ull && b.addr == BASE + 0x15 &&
	      !(b.flags & HWT_ITEM_PTWRITE),
	      "rc %d (%s), %llu items, item 1 at %llx flags %x payload %llx",
	      rc, err.msg, h ? (unsigned long long)hwt_history_count(h) : 0ull,
	      (unsigned long long)a.addr, a.flags,
	      (unsigned long long)a.ptwrite);
	hwt_history_free(h);
	enc_fini(x);
	free(x);
}

static void test_vendor(struct hwt_image *img)
{
	static const struct hwt_cpu_info amd = { "AuthenticAMD", 25, 1, 1 };
	struct hwt_segments segs = { .in.cpu = &amd };
	struct hwt_err err = { 0 };
	uint8_t none[1] = { 0 };
	int rc = hwt_decoder_pt.index_image(none, 1, 0, 0, img, &segs, &err);

	CHECK("pt non-Intel cpu refused", rc == -ENOTSUP &&
	      strstr(err.msg, "GenuineIntel"), "rc %d: %s", rc, err.msg);
	hwt_segments_free(&segs);
}

/* MODE.EXEC: 32-bit code, then a return into 64-bit code. The 32-bit
 * instructions must be marked so and disassemble as 32-bit. */
static void test_mode32(struct hwt_image *img)
{
	static const struct hwt_cpu_info cpu = { "GenuineIntel", 6, 79, 1 };
	static const uint64_t want[] = { 0x20, 0x21, 0x22, 0x28, 0x2b };
	static const enum hwt_isa isa[] = { HWT_ISA_X86_32, HWT_ISA_X86_32,
		HWT_ISA_X86_32, HWT_ISA_DEFAULT, HWT_ISA_DEFAULT };
	static const uint8_t len[] = { 1, 1, 1, 3, 1 };
	struct enc *x = malloc(sizeof(*x));
	struct hwt_segments segs = { .in.cpu = &cpu };
	struct hwt_blocks b = { 0 };
	struct hwt_err err = { 0 };
	struct pt_packet p = { .type = ppt_psb };
	struct hwt_insn insn;
	bool ok = true;
	int rc;

	enc_init(x);
	put(x, &p);
	p = (struct pt_packet){ .type = ppt_mode };
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csd = 1;        /* 32-bit */
	put(x, &p);
	ip_pkt(x, ppt_fup, BASE + 0x20, false);
	simple(x, ppt_psbend);
	p.payload.mode.bits.exec.csd = 0;
	p.payload.mode.bits.exec.csl = 1;        /* back to 64-bit */
	put(x, &p);
	ip_pkt(x, ppt_tip, BASE + 0x28, false);  /* the 32-bit ret */
	ip_pkt(x, ppt_tip_pgd, 0, true);         /* the 64-bit ret */
	rc = x->failed ? -EIO :
		hwt_decoder_pt.index_image(x->buf, enc_off(x), 0, 0, img, &segs,
					   &err);
	if (!rc && segs.n == 1)
		rc = hwt_decoder_pt.decode(x->buf, enc_off(x), &segs.v[0], img,
					   &b, &err);
	CHECK("pt mode.exec: decodes", rc == 0 && segs.n == 1, "rc %d: %s",
	      rc, err.msg);
	/* Walk the blocks as the history does. */
	for (size_t i = 0, k = 0; !rc && i < b.n; i++) {
		uint64_t a = b.v[i].begin;

		for (uint32_t j = 0; j < b.v[i].count; j++, k++) {
			enum hwt_insn_class cls;
			uint8_t l = 0;

			hwt_image_insn_info_isa(img, a, b.v[i].isa, &l, &cls);
			printf("  | %llx isa %d len %u\n",
			       (unsigned long long)(a - BASE), b.v[i].isa, l);
			ok &= k < 5 && a == BASE + want[k] &&
				b.v[i].isa == isa[k] && l == len[k];
			a += l;
		}
	}
	CHECK("pt mode.exec: 32-bit instructions marked x86-32 with their "
	      "32-bit lengths, then 64-bit ones", !rc && ok, "see above");
	rc = hwt_image_insn_isa(img, BASE + 0x20, HWT_ISA_X86_32, true, &insn);
	CHECK("pt mode.exec: 32-bit text", rc == 0 && insn.len == 1 &&
	      strstr(insn.text, "inc") && strstr(insn.text, "eax"),
	      "rc %d len %u '%s'", rc, insn.len, insn.text);
	rc = hwt_image_insn_isa(img, BASE + 0x20, HWT_ISA_DEFAULT, true, &insn);
	CHECK("pt mode.exec: the same bytes differ as 64-bit code",
	      rc != 0 || insn.len != 1, "rc %d len %u '%s'", rc, insn.len,
	      insn.text);
	free(b.v);
	hwt_segments_free(&segs);
	enc_fini(x);
	free(x);
}

/* ---- per-cpu bundles: context switches split cpu traces into threads */

#define SW_OUT 0x2000u

/* One PERF_RECORD_SWITCH_CPU_WIDE as LLDB stores it: header, next/prev
 * pid and tid, then sample_id's pid, tid and time. */
static size_t sw_rec(uint8_t *p, uint16_t misc, uint16_t size,
		     uint32_t tid, uint64_t ns)
{
	uint32_t type = 15, zero = 0;

	memset(p, 0, 32);
	memcpy(p, &type, 4);
	memcpy(p + 4, &misc, 2);
	memcpy(p + 6, &size, 2);
	memcpy(p + 8, &zero, 4);
	memcpy(p + 16, &tid, 4);
	memcpy(p + 20, &tid, 4);
	memcpy(p + 24, &ns, 8);
	return 32;
}

/* perf's clock from a TSC (perf_event_mmap_page's formula), and back as
 * LLDB's ToTSC does: both modulo 2^64, the way a time_zero above 2^63
 * (perf's clock read before its own zero) works on real machines. */
static uint64_t perf_ns(const struct hwt_tsc_conv *c, uint64_t tsc)
{
	uint64_t quot = tsc >> c->time_shift;
	uint64_t rem = tsc & ((1ull << c->time_shift) - 1);

	return c->time_zero + quot * c->time_mult +
		((rem * c->time_mult) >> c->time_shift);
}

static uint64_t lldb_tsc(const struct hwt_tsc_conv *c, uint64_t ns)
{
	uint64_t t = ns - c->time_zero;

	return (t / c->time_mult << c->time_shift) +
		((t % c->time_mult) << c->time_shift) / c->time_mult;
}

static bool put_file(const char *dir, const char *name, const void *d,
		     size_t n)
{
	char path[256];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f)
		return false;
	ok = fwrite(d, 1, n, f) == n;
	return fclose(f) == 0 && ok;
}

static char gap_reason[512];

/* All items of thread idx: addresses (0 for a gap) and timestamps;
 * gap_reason gets the first gap's reason. */
static int thread_items(const struct hwt_bundle *b, size_t idx,
			struct hwt_image *img, struct items *it,
			struct hwt_err *err)
{
	struct hwt_history *h;
	int rc = hwt_history_open(b, idx, img, &h, err);

	memset(it, 0, sizeof(*it));
	gap_reason[0] = '\0';
	for (uint64_t i = 1; !rc && i <= hwt_history_count(h); i++) {
		struct hwt_item item;

		rc = hwt_history_get(h, i, &item, err);
		/* The reason lives with the history: keep the first. */
		if (!rc && item.kind == HWT_ITEM_GAP && !gap_reason[0])
			snprintf(gap_reason, sizeof(gap_reason), "%s",
				 item.gap_reason);
		if (!rc)
			push(it, item.kind == HWT_ITEM_GAP, item.addr,
			     item.timestamp, NULL);
	}
	if (!rc)
		hwt_history_free(h);
	return rc;
}

static bool ts_run(const struct items *it, size_t from, size_t n,
		   uint64_t ts)
{
	for (size_t i = from; i < from + n; i++)
		if (i >= it->n || it->gap[i] || it->ts[i] != ts)
			return false;
	return true;
}

/* Thread 11 (A) runs on cpu 0 from tsc 900 to 1998, then on cpu 1 from
 * 3000 to 5000; thread 12 (B) on cpu 1 from 990 until A is switched in
 * at 3000 without B's switch-out, then on cpu 0 from 2000 to the end.
 * Times are tsc0 + those, the records' times perf's for conv; what
 * each switch is in TSC again is LLDB's ToTSC of that (sw_tsc), a few
 * ticks early where the conversion rounds. */
static void per_cpu(struct hwt_image *img, const char *what,
		    struct hwt_tsc_conv conv, uint64_t tsc0)
{
	char dir[] = "/tmp/hwt-pt-cpus-XXXXXX", json[1024], name[160];
	struct enc *x0 = malloc(sizeof(*x0)), *x1 = malloc(sizeof(*x1));
	struct items *it = malloc(sizeof(*it));
	struct hwt_bundle *b = NULL;
	struct hwt_err err = { 0 };
	uint8_t sw0[128], sw1[128];
	size_t n0 = 0, n1 = 0, nv = 0, vcap = 0;
	struct hwt_pt_piece *v = NULL;
	bool ok = mkdtemp(dir) != NULL;
	char a_gap[96], b_gap[96];
	/* B's piece on cpu 0 starts at its switch-in: its PSB says so. */
	uint64_t b_cpu0 = lldb_tsc(&conv, perf_ns(&conv, tsc0 + 2000));
	int rc;

#define NS(tsc) perf_ns(&conv, tsc0 + (tsc))
	snprintf(json, sizeof(json),
		 "{\"type\": \"intel-pt\", \"cpuInfo\": {\"vendor\": "
		 "\"GenuineIntel\", \"family\": 6, \"model\": 79, "
		 "\"stepping\": 1}, \"processes\": [{\"pid\": 10, \"threads\": "
		 "[{\"tid\": 11}, {\"tid\": 12}, {\"tid\": 13}], \"modules\": "
		 "[]}], \"cpus\": [{\"id\": 0, \"iptTrace\": \"cpu0.pt\", "
		 "\"contextSwitchTrace\": \"cpu0.sw\"}, {\"id\": 1, "
		 "\"iptTrace\": \"cpu1.pt\", \"contextSwitchTrace\": "
		 "\"cpu1.sw\"}], \"tscPerfZeroConversion\": {\"timeMult\": "
		 "%u, \"timeShift\": %u, \"timeZero\": %llu}}", conv.time_mult,
		 conv.time_shift, (unsigned long long)conv.time_zero);
	snprintf(a_gap, sizeof(a_gap), "cpu 1 up to tsc %llu",
		 (unsigned long long)lldb_tsc(&conv, NS(3000)));
	snprintf(b_gap, sizeof(b_gap), "cpu 0 from tsc %llu",
		 (unsigned long long)b_cpu0);
	enc_init(x0);
	psb(x0, BASE, tsc0 + 1000);
	tnt(x0, 0x7, 3);                 /* A: 9 instructions */
	psb(x0, BASE, b_cpu0);
	tnt(x0, 0x6, 3);                 /* B: 9 instructions */
	ip_pkt(x0, ppt_fup, BASE + 8, false);
	ip_pkt(x0, ppt_tip_pgd, 0, true);
	enc_init(x1);
	psb(x1, BASE, tsc0 + 1000);
	tnt(x1, 0x6, 3);                 /* B: 9 instructions */
	ip_pkt(x1, ppt_fup, BASE + 8, false);
	ip_pkt(x1, ppt_tip_pgd, 0, true);
	psb(x1, BASE, tsc0 + 3002);
	tnt(x1, 0xe, 4);                 /* A: 12 instructions */
	ip_pkt(x1, ppt_fup, BASE + 8, false);
	ip_pkt(x1, ppt_tip_pgd, 0, true);
	n0 += sw_rec(sw0 + n0, 0, 32, 11, NS(900));
	n0 += sw_rec(sw0 + n0, SW_OUT, 32, 11, NS(1998));
	n0 += sw_rec(sw0 + n0, 0, 32, 12, NS(2000));
	n1 += sw_rec(sw1 + n1, 0, 32, 12, NS(990));
	n1 += sw_rec(sw1 + n1, 0, 32, 11, NS(3000));
	n1 += sw_rec(sw1 + n1, SW_OUT, 32, 11, NS(5000));
#undef NS
	ok = ok && !x0->failed && !x1->failed &&
		put_file(dir, "trace.json", json, strlen(json)) &&
		put_file(dir, "cpu0.pt", x0->buf, enc_off(x0)) &&
		put_file(dir, "cpu1.pt", x1->buf, enc_off(x1)) &&
		put_file(dir, "cpu0.sw", sw0, n0) &&
		put_file(dir, "cpu1.sw", sw1, n1);
	rc = ok ? hwt_bundle_read(dir, &b, &err) : -EIO;
#define NAME(text) (snprintf(name, sizeof(name), "pt per-cpu%s: %s", what, \
			     text), name)
	CHECK(NAME("bundle reads"), rc == 0, "rc %d: %s", rc, err.msg);
	if (!rc) {
		rc = thread_items(b, 0, img, it, &err);
		show("per-cpu thread 11", it);
		CHECK(NAME("thread 11 is 3 iterations on cpu 0, then 4 on cpu "
			   "1, no gap (both switches known)"),
		      rc == 0 && it->n == 21 && loops(it, 0, 3) &&
		      ts_run(it, 0, 9, tsc0 + 1000) && loops(it, 9, 4) &&
		      ts_run(it, 9, 12, tsc0 + 3002) && !count_gaps(it),
		      "rc %d %s, %zu items", rc, err.msg, it->n);
		rc = thread_items(b, 1, img, it, &err);
		show("per-cpu thread 12", it);
		CHECK(NAME("thread 12 is cpu 1's first 9, a gap (no "
			   "switch-out), then cpu 0's last 9"),
		      rc == 0 && it->n == 19 && loops(it, 0, 3) &&
		      ts_run(it, 0, 9, tsc0 + 1000) && it->gap[9] &&
		      loops(it, 10, 3) && ts_run(it, 10, 9, b_cpu0),
		      "rc %d %s, %zu items", rc, err.msg, it->n);
		printf("  | gap: %s\n", gap_reason);
		CHECK(NAME("the gap names both cpus and the missing "
			   "switch-out"), strstr(gap_reason, a_gap) &&
		      strstr(gap_reason, b_gap) &&
		      strstr(gap_reason, "switch-out"), "%s", gap_reason);
		rc = thread_items(b, 2, img, it, &err);
		CHECK(NAME("a thread that never ran has no items"),
		      rc == 0 && it->n == 0, "rc %d %s, %zu items", rc,
		      err.msg, it->n);
		/* A truncated record in a cpu's file: the error names it. */
		ok = put_file(dir, "cpu1.sw", sw1, n1 - 5);
		rc = ok ? thread_items(b, 0, img, it, &err) : 0;
		CHECK(NAME("truncated context-switch file is an error naming "
			   "the file and offset"), rc == -EBADMSG &&
		      strstr(err.msg, "cpu1.sw") && strstr(err.msg, "offset 64"),
		      "rc %d: %s", rc, err.msg);
	}
	hwt_bundle_free(b);
	/* The records' times become TSC as LLDB converts them. */
	rc = hwt_pt_switch_parse(sw1, n1, 11, &conv, 1, 1, &v, &nv, &vcap, &err);
	CHECK(NAME("switch times are LLDB's ToTSC of the records"),
	      rc == 0 && nv == 1 &&
	      v[0].tsc_begin == lldb_tsc(&conv, perf_ns(&conv, tsc0 + 3000)) &&
	      v[0].tsc_end == lldb_tsc(&conv, perf_ns(&conv, tsc0 + 5000)),
	      "rc %d %s: %zu pieces, first %llu to %llu", rc, err.msg, nv,
	      nv ? (unsigned long long)v[0].tsc_begin : 0,
	      nv ? (unsigned long long)v[0].tsc_end : 0);
#undef NAME
	free(v);
	snprintf(json, sizeof(json), "rm -rf '%s'", dir);
	if (system(json) != 0)
		printf("  | could not remove %s\n", dir);
	enc_fini(x0);
	enc_fini(x1);
	free(x0);
	free(x1);
	free(it);
}

static void test_per_cpu(struct hwt_image *img)
{
	/* ns = 100 + tsc / 2 */
	per_cpu(img, "", (struct hwt_tsc_conv){ 512, 10, 100 }, 0);
	/* A Skylake server's (LLDB's multi-core test bundle): timeZero
	 * above 2^63, TSCs of a machine up for months. */
	per_cpu(img, " (timeZero above 2^63)", (struct hwt_tsc_conv){
		1076264588, 31, 18433473881008870804ull },
		29000000000000000ull);
}

/* Records as `export --per-cpu` writes them (hwt_pt_switch_record at
 * hwt_tsc_to_perf_ns times) read back as the executions they describe,
 * each switch at most a few ticks early (ToTSC rounds down). */
static void test_switch_writer(void)
{
	const struct hwt_tsc_conv conv = { 1076264588, 31,
					   18433473881008870804ull };
	const uint64_t t0 = 29000000000000000ull, at[4] = {
		t0, t0 + 500000, t0 + 1000000, t0 + 1500000 };
	uint8_t rec[4][HWT_PT_SWITCH_RECORD_SIZE];
	struct hwt_err err = { 0 };
	struct hwt_pt_piece *v = NULL;
	size_t nv = 0, vcap = 0;
	bool same = true;
	int rc;

	for (size_t k = 0; k < 4; k++) {
		uint64_t ns = hwt_tsc_to_perf_ns(&conv, at[k]);

		same &= ns == perf_ns(&conv, at[k]);
		hwt_pt_switch_record(rec[k], k % 2, 10, k < 2 ? 11 : 12, ns);
	}
	CHECK("pt switch writer: perf's clock from a TSC", same,
	      "hwt_tsc_to_perf_ns differs from perf_event_mmap_page's formula");
	rc = hwt_pt_switch_parse(rec[0], sizeof(rec), 12, &conv, 0, 3, &v,
				 &nv, &vcap, &err);
	CHECK("pt switch writer: records read back as the execution",
	      rc == 0 && nv == 1 && v[0].begin_known && v[0].end_known &&
	      v[0].tsc_begin <= at[2] && v[0].tsc_begin + 3 >= at[2] &&
	      v[0].tsc_end <= at[3] && v[0].tsc_end + 3 >= at[3] &&
	      v[0].cpu == 3, "rc %d %s: %zu pieces", rc, err.msg, nv);
	free(v);
}

/* Malformed context-switch records, straight to the parser. */
static void test_switch_records(void)
{
	struct hwt_tsc_conv conv = { 512, 10, 100 };
	struct hwt_err err = { 0 };
	struct hwt_pt_piece *v = NULL;
	uint8_t bad[64];
	size_t nv = 0, vcap = 0;
	int rc;

	sw_rec(bad, 0, 4, 11, 200);
	rc = hwt_pt_switch_parse(bad, 32, 11, &conv, 0, 0, &v, &nv, &vcap, &err);
	CHECK("pt switch: size under the header refused", rc == -EBADMSG &&
	      strstr(err.msg, "size 4"), "rc %d: %s", rc, err.msg);
	sw_rec(bad, 0, 64, 11, 200);
	rc = hwt_pt_switch_parse(bad, 32, 11, &conv, 0, 0, &v, &nv, &vcap, &err);
	CHECK("pt switch: size past the end refused", rc == -EBADMSG &&
	      strstr(err.msg, "size 64"), "rc %d: %s", rc, err.msg);
	sw_rec(bad, 0, 16, 11, 200);
	rc = hwt_pt_switch_parse(bad, 16, 11, &conv, 0, 0, &v, &nv, &vcap, &err);
	CHECK("pt switch: switch record too short for tid and time refused",
	      rc == -EBADMSG && strstr(err.msg, "size 16"), "rc %d: %s", rc,
	      err.msg);
	sw_rec(bad, 0, 32, 11, 500);
	sw_rec(bad + 32, SW_OUT, 32, 11, 400);
	rc = hwt_pt_switch_parse(bad, 64, 11, &conv, 0, 0, &v, &nv, &vcap, &err);
	CHECK("pt switch: time going backwards refused", rc == -EBADMSG &&
	      strstr(err.msg, "back in time") && strstr(err.msg, "offset 32"),
	      "rc %d: %s", rc, err.msg);
	for (size_t cut = 0; cut < 64; cut++) {
		sw_rec(bad, 0, 32, 11, 300);
		sw_rec(bad + 32, SW_OUT, 32, 11, 400);
		nv = 0;
		rc = hwt_pt_switch_parse(bad, cut, 11, &conv, 0, 0, &v, &nv,
					 &vcap, &err);
		if ((cut % 32 == 0) != (rc == 0))
			break;
		if (cut == 63)
			CHECK("pt switch: every truncation is an error or whole "
			      "records", true, "-");
	}
	free(v);
}

int main(void)
{
	char path[] = "/tmp/hwt-pt-code-XXXXXX";
	struct hwt_image *img = NULL;
	struct hwt_err err = { 0 };
	int fd = mkstemp(path), rc;

	rc = fd >= 0 && write(fd, code, sizeof(code)) == (ssize_t)sizeof(code) ?
		0 : -EIO;
	if (fd >= 0)
		close(fd);
	if (!rc)
		rc = hwt_image_new(&img, &err);
	if (!rc)
		rc = hwt_image_add_raw(img, path, 0, sizeof(code), BASE,
				       HWT_ISA_X86_64, &err);
	CHECK("pt test image", rc == 0, "rc %d: %s", rc, err.msg);
	if (!rc) {
		RUN(test_split, img);
		RUN(test_resync, img);
		RUN(test_overflow, img);
		RUN(test_off_on, img, BASE + 3, false);
		RUN(test_off_on, img, BASE, true);
		RUN(test_prefix, img);
		RUN(test_truncations, img);
		RUN(test_vendor, img);
		RUN(test_round_trip, img);
		RUN(test_many_psbs, img);
		RUN(test_ptwrite, img);
		RUN(test_per_cpu, img);
		RUN(test_switch_records);
		RUN(test_switch_writer);
		RUN(test_mode32, img);
	}
	hwt_image_free(img);
	unlink(path);
	return check_exit();
}
