// SPDX-License-Identifier: BSD-2-Clause
/* test_pt_encode.c - hwt_pt_encode round trips through libipt.
 *
 * Programs recorded by `hwtrace record` (hwt-sw) are encoded as Intel PT
 * and decoded again with libipt's instruction flow decoder, reading code
 * from the same hwt_image through an image callback. The decoded
 * instructions must be the history's, one for one - signal handler
 * entries included - and the stream must end with tracing disabled at the
 * history's last item. Then through hwtrace's own Intel PT decoder when
 * this build has one ("intel-pt"). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <intel-pt.h>

#include "hwt-replay.h"
#include "decode.h"
#include "check.h"

static char build_dir[PATH_MAX], prog_dir[PATH_MAX];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int read_mem(uint8_t *buf, size_t size, const struct pt_asid *asid,
		    uint64_t ip, void *ctx)
{
	size_t n = hwt_image_read(ctx, ip, buf, size);

	(void)asid;
	return n ? (int)n : -pte_nomap;
}

struct decoded {
	uint64_t *addr;
	size_t n, cap;
	uint64_t end_at;         /* ip of the last async disable */
	size_t asyncs, enables;
	int errors;
	char first_error[128];
};

static void push(struct decoded *d, uint64_t a)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? 2 * d->cap : 65536;
		d->addr = realloc(d->addr, d->cap * sizeof(*d->addr));
	}
	d->addr[d->n++] = a;
}

static void note_error(struct decoded *d, const char *what, int rc,
		       struct pt_insn_decoder *dec)
{
	uint64_t off = 0;

	pt_insn_get_offset(dec, &off);
	if (!d->errors++)
		snprintf(d->first_error, sizeof(d->first_error),
			 "%s: %s at offset %llu after %zu instructions", what,
			 pt_errstr(pt_errcode(rc)), (unsigned long long)off,
			 d->n);
}

static int drain_events(struct pt_insn_decoder *dec, int status,
			struct decoded *d)
{
	while (status & pts_event_pending) {
		struct pt_event ev;

		status = pt_insn_event(dec, &ev, sizeof(ev));
		if (status < 0)
			return status;
		if (ev.type == ptev_async_disabled)
			d->end_at = ev.variant.async_disabled.at;
		else if (ev.type == ptev_async_branch)
			d->asyncs++;
		else if (ev.type == ptev_enabled)
			d->enables++;
	}
	return status;
}

/* Every instruction libipt decodes from the stream. */
static void pt_decode(const uint8_t *buf, size_t size, struct hwt_image *img,
		      struct decoded *d)
{
	struct pt_config cfg;
	struct pt_insn_decoder *dec;
	struct pt_image *pimg = pt_image_alloc("hwt");
	int status;

	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + size;
	cfg.cpu.vendor = pcv_intel;
	cfg.cpu.family = 6;
	cfg.cpu.model = 0x55;
	cfg.cpu.stepping = 4;
	pt_cpu_errata(&cfg.errata, &cfg.cpu);
	dec = pt_insn_alloc_decoder(&cfg);
	pt_image_set_callback(pimg, read_mem, img);
	pt_insn_set_image(dec, pimg);
	for (;;) {
		status = pt_insn_sync_forward(dec);
		if (status < 0) {
			if (status != -pte_eos)
				note_error(d, "sync", status, dec);
			break;
		}
		for (;;) {
			struct pt_insn insn;

			status = drain_events(dec, status, d);
			if (status < 0)
				break;
			status = pt_insn_next(dec, &insn, sizeof(insn));
			if (status < 0)
				break;
			push(d, insn.ip);
		}
		if (status == -pte_eos)
			break;
		note_error(d, "decode", status, dec);
	}
	pt_insn_free_decoder(dec);
	pt_image_free(pimg);
}

static int record(const char *prog, const char *dir)
{
	char cmd[4 * PATH_MAX + 64];

	/* The exact reference recorder: what is encoded is a native run. */
	snprintf(cmd, sizeof(cmd), "%s/hwtrace record --backend ptrace -o %s "
		 "-- %s/%s >/dev/null 2>&1", build_dir, dir, prog_dir, prog);
	return system(cmd);
}

/* The PT stream read back by hwtrace's own Intel PT decoder: the same
 * instructions as the hwt-sw history, in the same order, up to the last
 * item, where tracing stops (and which the decoder may add as the stop
 * pc). Gap items are compared as gaps. */
static void through_hwtrace(const char *prog, struct hwt_history *sw,
			    const uint8_t *pt, size_t size,
			    struct hwt_image *img)
{
	struct hwt_history *h = NULL;
	struct hwt_err err = { 0 };
	uint64_t n = hwt_history_count(sw), i, j = 1, bad = 0;
	/* The encoder's default cpu (docs/bts.md), so libipt applies that
	 * model's errata as it would for a live perf-pt thread's trace. */
	struct hwt_cpu_info cpu = { .vendor = "GenuineIntel", .family = 6,
				    .model = 0x55 };
	char name[128];
	int rc = hwt_history_open_pt(pt, size, &cpu, img, &h, &err);

	snprintf(name, sizeof(name), "pt round trip %s: hwtrace's intel-pt "
		 "decoder gives the history back", prog);
	if (rc) {
		CHECK(name, false, "%s", err.msg);
		return;
	}
	for (i = 1; i < n && !bad; i++, j++) {
		struct hwt_item x, y;

		if (hwt_history_get(sw, i, &x, NULL) ||
		    hwt_history_get(h, j, &y, NULL) || x.kind != y.kind ||
		    (x.kind == HWT_ITEM_INSN && x.addr != y.addr)) {
			bad = i;
			printf("  | item %llu: %s 0x%llx, decoded %s 0x%llx %s\n",
			       (unsigned long long)i, x.kind ? "gap" : "insn",
			       (unsigned long long)x.addr,
			       y.kind ? "gap" : "insn",
			       (unsigned long long)y.addr,
			       y.gap_reason ? y.gap_reason : "");
		}
	}
	CHECK(name, !bad && hwt_history_count(h) >= n - 1 &&
	      hwt_history_count(h) <= n,
	      "%llu items decoded for %llu; first difference at item %llu",
	      (unsigned long long)hwt_history_count(h),
	      (unsigned long long)n, (unsigned long long)bad);
	hwt_history_free(h);
}

static void put_bytes(uint8_t **buf, size_t *n, const void *p, size_t len)
{
	*buf = realloc(*buf, *n + len);
	memcpy(*buf + *n, p, len);
	*n += len;
}

/* An hwt-sw chunk of the instructions addrs[0..n), the first_seq given. */
static void put_chunk(uint8_t **buf, size_t *size, const uint64_t *addrs,
		      size_t n, uint64_t seq)
{
	struct hwt_sw_chunk_hdr hdr = { .first_pc = addrs[0], .first_seq = seq,
					.last_pc = addrs[n - 1],
					.insn_count = (uint32_t)n };
	uint8_t hb[HWT_SW_CHUNK_HDR_SIZE] = { 0 };
	size_t at = *size;

	put_bytes(buf, size, hb, sizeof(hb));
	for (size_t i = 1; i < n; i++) {
		uint8_t rec[HWT_SW_MAX_RECORD + 1];

		put_bytes(buf, size, rec, hwt_sw_encode_step(addrs[i - 1],
				addrs[i], false, rec));
	}
	hdr.payload_size = (uint32_t)(*size - at - sizeof(hb));
	hwt_sw_chunk_hdr_pack(&hdr, *buf + at);
}

/* Gaps and code the image does not have: the recorded history's
 * instructions with a jump to an unmapped address (and back) and 1000
 * instructions lost in the middle. libipt must decode every instruction
 * the image has, with no error, tracing off across both. */
static void gaps(struct hwt_history *sw, struct hwt_image *img)
{
	enum { N = 20000, HOLE = 12000 };
	uint64_t *a = calloc(N + 1, sizeof(*a)), *want = calloc(N, sizeof(*a));
	struct hwt_history *h = NULL;
	struct hwt_err err = { 0 };
	struct decoded d = { 0 };
	uint8_t *trace = NULL, *pt = NULL;
	size_t size = 0, ptsize = 0, nwant = 0, k = 0;
	bool same;
	int rc;

	for (uint64_t i = 1; k < N && i <= hwt_history_count(sw); i++) {
		struct hwt_item it;

		if (!hwt_history_get(sw, i, &it, NULL) &&
		    it.kind == HWT_ITEM_INSN)
			a[k++] = it.addr;
	}
	/* 0x1000 (no code) after instruction 5000; the chunk ends at HOLE
	 * and the next starts 1000 instructions later. */
	memmove(a + 5001, a + 5000, (N - 5000) * sizeof(*a));
	a[5000] = 0x1000;
	put_chunk(&trace, &size, a, HOLE, 0);
	put_chunk(&trace, &size, a + HOLE + 1000, N - HOLE - 1000,
		  HOLE + 1000);
	for (size_t i = 0; i < N; i++)
		if (a[i] != 0x1000 && (i < HOLE || i >= HOLE + 1000))
			want[nwant++] = a[i];
	nwant--;    /* the last is where tracing ends */
	rc = hwt_history_open_sw(trace, size, 0, img, &h, &err);
	if (!rc)
		rc = hwt_pt_encode(h, img, 0, 0, NULL, &pt, &ptsize, &err);
	CHECK("pt gaps: encode a history with gaps and unmapped code", rc == 0,
	      "%s", err.msg);
	if (!rc) {
		pt_decode(pt, ptsize, img, &d);
		same = d.n == nwant && !d.errors;
		for (size_t i = 0; same && i < nwant; i++)
			same = d.addr[i] == want[i];
		CHECK("pt gaps: libipt decodes what the image has",
		      same, "%zu decoded for %zu, %d errors (%s)", d.n, nwant,
		      d.errors, d.first_error);
		CHECK("pt gaps: tracing resumes after each gap",
		      d.enables >= 3, "%zu enables", d.enables);
	}
	free(d.addr);
	free(pt);
	free(trace);
	free(a);
	free(want);
	hwt_history_free(h);
}

/* A TSC in every PSB+ (per-cpu traces are split by it): the packets of a
 * stream of the first 20000 items with PSB+ every 64 bytes, each PSB+
 * with exactly one TSC of the value given, and the same instructions as
 * without it. A TSC beyond the packet's 56 bits is refused. */
static void tsc(struct hwt_history *sw, struct hwt_image *img)
{
	const uint64_t t = 29000000000001000ull;
	HWT_OPTS(hwt_pt_encode_opts, opts, .psb_period = 64, .tsc = t);
	struct decoded with = { 0 }, without = { 0 };
	struct hwt_err err = { 0 };
	uint64_t last = hwt_history_count(sw) < 20000 ?
		hwt_history_count(sw) : 20000;
	uint8_t *pt = NULL, *plain = NULL;
	size_t size = 0, plain_size = 0, psbs = 0, bad = 0;
	int rc = hwt_pt_encode(sw, img, 1, last, &opts, &pt, &size, &err);

	opts.tsc = 0;
	if (!rc)
		rc = hwt_pt_encode(sw, img, 1, last, &opts, &plain,
				   &plain_size, &err);
	CHECK("pt tsc: encode with a TSC in every PSB+", rc == 0, "%s",
	      err.msg);
	if (!rc) {
		struct pt_config cfg;
		struct pt_packet_decoder *pkt;
		struct pt_packet p;
		int in_psb = 0, tscs = 0;

		pt_config_init(&cfg);
		cfg.begin = pt;
		cfg.end = pt + size;
		pkt = pt_pkt_alloc_decoder(&cfg);
		for (rc = pkt ? pt_pkt_sync_forward(pkt) : -1; rc >= 0 &&
		     pt_pkt_next(pkt, &p, sizeof(p)) > 0;) {
			if (p.type == ppt_psb)
				in_psb = 1, tscs = 0, psbs++;
			else if (p.type == ppt_tsc && in_psb)
				bad += ++tscs > 1 || p.payload.tsc.tsc != t;
			else if (p.type == ppt_tsc)
				bad++;
			else if (p.type == ppt_psbend)
				in_psb = 0, bad += tscs != 1;
		}
		pt_pkt_free_decoder(pkt);
		pt_decode(pt, size, img, &with);
		pt_decode(plain, plain_size, img, &without);
		CHECK("pt tsc: each PSB+ has the TSC once",
		      psbs > 10 && !bad, "%zu PSB+, %zu wrong", psbs, bad);
		CHECK("pt tsc: the same instructions as without",
		      with.n == without.n && !with.errors && with.n > 10000 &&
		      !memcmp(with.addr, without.addr,
			      with.n * sizeof(*with.addr)),
		      "%zu and %zu decoded, %d errors", with.n, without.n,
		      with.errors);
	}
	free(pt);
	free(plain);
	free(with.addr);
	free(without.addr);
	opts.tsc = 1ull << 56;
	pt = NULL;
	rc = hwt_pt_encode(sw, img, 1, last, &opts, &pt, &size, &err);
	CHECK("pt tsc: a TSC beyond 56 bits is refused",
	      rc == -EINVAL && strstr(err.msg, "56 bits") && !pt,
	      "rc %d: %s", rc, err.msg);
}

/* The hwt-sw history of prog against its PT round trip. */
/* The progress callback: from 0 every 65536 items, monotonic, ending
 * with every item encoded. */
struct seen {
	uint64_t calls, last, total;
	bool monotonic;
};

static void note(void *ctx, uint64_t done, uint64_t total)
{
	struct seen *s = ctx;

	s->monotonic &= s->calls == 0 ? done == 0 : done > s->last;
	s->calls++;
	s->last = done;
	s->total = total;
}

static void progress(struct hwt_history *h, struct hwt_image *img)
{
	struct seen s = { .monotonic = true };
	HWT_OPTS(hwt_pt_encode_opts, opts, .progress = note, .progress_ctx = &s);
	struct hwt_err err = { 0 };
	uint64_t n = hwt_history_count(h);
	uint8_t *pt = NULL;
	size_t size = 0;
	int rc = hwt_pt_encode(h, img, 0, 0, &opts, &pt, &size, &err);

	CHECK("pt progress: reported from 0 every 65536 items to the end",
	      rc == 0 && s.monotonic && s.calls == (n + 65535) / 65536 + 1 &&
	      s.last == n && s.total == n, "rc %d: %llu calls for %llu items, "
	      "last %llu of %llu (%s)", rc, (unsigned long long)s.calls,
	      (unsigned long long)n, (unsigned long long)s.last,
	      (unsigned long long)s.total, err.msg);
	free(pt);
}

static void round_trip(const char *prog, const char *tmp)
{
	char dir[PATH_MAX + 64], name[128];
	struct hwt_bundle *b = NULL;
	struct hwt_image *img = NULL;
	struct hwt_history *h = NULL;
	struct hwt_err err = { 0 };
	HWT_OPTS(hwt_pt_encode_opts, opts, .psb_period = 4096);
	struct decoded d = { 0 };
	uint8_t *pt = NULL;
	size_t size = 0, k = 0, asyncs = 0;
	uint64_t n, bad = 0, last_addr = 0;
	double t0, t1;
	int rc;

	snprintf(dir, sizeof(dir), "%s/%s", tmp, prog);
	snprintf(name, sizeof(name), "pt round trip %s: record", prog);
	rc = record(prog, dir);
	CHECK(name, rc == 0, "hwtrace record gave %d", rc);
	if (rc)
		return;
	rc = hwt_bundle_read(dir, &b, &err);
	if (!rc)
		rc = hwt_image_new(&img, &err);
	if (!rc)
		rc = hwt_image_add_bundle(img, b, &err);
	if (!rc)
		rc = hwt_history_open(b, 0, img, &h, &err);
	t0 = now();
	if (!rc)
		rc = hwt_pt_encode(h, img, 0, 0, &opts, &pt, &size, &err);
	t1 = now();
	snprintf(name, sizeof(name), "pt round trip %s: encode", prog);
	CHECK(name, rc == 0, "%s", err.msg);
	if (rc)
		goto out;
	pt_decode(pt, size, img, &d);
	n = hwt_history_count(h);
	/* A PSB every psb_period bytes or so, for decoders that start late.
	 * The PSB pattern is 02 82 repeated 8 times. */
	{
		static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2,
						 0x82, 2, 0x82, 2, 0x82, 2,
						 0x82, 2, 0x82 };
		size_t npsb = 0;

		for (const uint8_t *p = pt; (p = memmem(p, size - (size_t)(p -
		     pt), psb, sizeof(psb))); p += sizeof(psb))
			npsb++;
		snprintf(name, sizeof(name), "pt round trip %s: a PSB every "
			 "%zu bytes", prog, opts.psb_period);
		CHECK(name, npsb >= size / (opts.psb_period + 64) &&
		      npsb <= size / opts.psb_period + 1,
		      "%zu PSBs in %zu bytes", npsb, size);
	}
	/* Every instruction but the last, which is where tracing ends. */
	for (uint64_t i = 1; i <= n && !bad; i++) {
		struct hwt_item it;

		if (hwt_history_get(h, i, &it, NULL)) {
			bad = i;
			break;
		}
		if (it.kind != HWT_ITEM_INSN)
			continue;
		asyncs += !!(it.flags & HWT_ITEM_ASYNC);
		if (i == n) {
			last_addr = it.addr;
			break;
		}
		if (k >= d.n || d.addr[k] != it.addr)
			bad = i;
		k++;
	}
	printf("  | %s: %llu items, %zu bytes of PT (%.2f bytes/insn), "
	       "encoded in %.3f s, %zu signal entries\n", prog,
	       (unsigned long long)n, size, (double)size / (double)n, t1 - t0,
	       asyncs);
	/* A decoder that starts at a PSB in the middle sees the same
	 * instructions from there on: the tail of the whole decode. */
	{
		static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2,
						 0x82, 2, 0x82, 2, 0x82, 2,
						 0x82, 2, 0x82 };
		const uint8_t *mid = memmem(pt + size / 2, size - size / 2,
					    psb, sizeof(psb));
		struct decoded late = { 0 };
		bool same = mid != NULL;

		if (mid)
			pt_decode(mid, size - (size_t)(mid - pt), img, &late);
		same = same && late.n && late.n < d.n && !late.errors;
		for (size_t j = 0; same && j < late.n; j++)
			same = late.addr[j] == d.addr[d.n - late.n + j];
		snprintf(name, sizeof(name), "pt round trip %s: decoding from "
			 "a PSB in the middle gives the tail", prog);
		CHECK(name, same, "%zu of %zu instructions, %d errors",
		      late.n, d.n, late.errors);
		free(late.addr);
	}
	snprintf(name, sizeof(name), "pt round trip %s: libipt decodes it "
		 "cleanly", prog);
	CHECK(name, d.errors == 0, "%d errors, first: %s", d.errors,
	      d.first_error);
	snprintf(name, sizeof(name), "pt round trip %s: same instructions one "
		 "for one", prog);
	CHECK(name, !bad && k == d.n,
	      "history item %llu (decoded #%zu: 0x%llx); %zu decoded, %zu "
	      "expected", (unsigned long long)bad, k,
	      (unsigned long long)(k < d.n ? d.addr[k] : 0), d.n, k);
	snprintf(name, sizeof(name), "pt round trip %s: ends at the last item",
		 prog);
	CHECK(name, d.end_at == last_addr, "disabled at 0x%llx, last item "
	      "0x%llx", (unsigned long long)d.end_at,
	      (unsigned long long)last_addr);
	if (asyncs) {
		snprintf(name, sizeof(name), "pt round trip %s: signal entries "
			 "are asynchronous branches", prog);
		CHECK(name, d.asyncs >= asyncs, "%zu in the history, %zu "
		      "decoded", asyncs, d.asyncs);
	}
	if (hwt_decoder_find(HWT_BUNDLE_TYPE_PT))
		through_hwtrace(prog, h, pt, size, img);
	if (!strcmp(prog, "signal")) {
		gaps(h, img);
		tsc(h, img);
		progress(h, img);
	}
out:
	free(d.addr);
	free(pt);
	hwt_history_free(h);
	hwt_image_free(img);
	hwt_bundle_free(b);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/hwt-ptenc-XXXXXX", cmd[PATH_MAX];
	char prog[PATH_MAX + 32];

	(void)argc;
	(void)argv;
	if (!check_build_dir(build_dir, sizeof(build_dir)) ||
	    !check_programs_dir(prog_dir, sizeof(prog_dir)))
		return 1;
	snprintf(prog, sizeof(prog), "%s/qsort", prog_dir);
	if (access(prog, X_OK) || !mkdtemp(tmp)) {
		printf("SKIP pt round trip: %s is not built (make programs)\n",
		       prog);
		return 0;
	}
	round_trip("qsort", tmp);
	round_trip("signal", tmp);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd))
		printf("  | could not remove %s\n", tmp);
	return check_exit();
}
