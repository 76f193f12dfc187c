// SPDX-License-Identifier: BSD-2-Clause
/* btrace.c - GDB's branch-trace packets over a recorded history.
 *
 * The history goes out in the format GDB enabled. BTS (what GDB reopens
 * with at connect, since every history can be served that way): blocks of
 * sequential instructions, newest first, `end` the address of the block's
 * last instruction (inclusive), the newest block ending at the current pc.
 * GDB walks each block by instruction length itself, so a block ends
 * wherever the next item is not the fall-through of the previous one.
 * PT (after `record btrace pt`): the history written as an Intel PT stream
 * by hwt_pt_encode, hex in <raw>, with the cpu the stream was encoded for,
 * which libipt inside GDB needs to pick its errata.
 *
 * What GDB gets starts where it enabled the trace (Qbtrace: the current
 * instruction then; a crashed process's or a newly seen thread's whole
 * recorded life) and ends at the thread's current stop; the BTS buffer
 * size GDB configured keeps only that many bytes of records, newest
 * first, like a ring; the PT size, the newest items whose stream fits.
 *
 * The read annexes: "all" is the whole document; once GDB has it, "new"
 * and "delta" are empty until the thread moves (srv_invalidate after every
 * resume). "delta" is refused whenever GDB's copy is behind, because the
 * history is rebuilt rather than extended, so GDB falls back to "new",
 * which then gives the whole document and replaces its copy (GDB's
 * fallback order). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "progress.h"
#include "server.h"
#include "array.h"
#include "util.h"

#define BTRACE_EMPTY "<btrace version=\"1.0\"/>"

struct block {
	uint64_t begin, end;
};

struct blocks {
	struct block *v;
	size_t n, cap;
};

static int push_block(struct blocks *b, uint64_t begin, uint64_t end)
{
	if (HWT_ARRAY_RESERVE(b->v, b->cap, b->n + 1, 1024))
		return -ENOMEM;
	b->v[b->n++] = (struct block){ begin, end };
	return 0;
}

struct collect {
	struct blocks *b;
	uint64_t begin, last, next;  /* the block being built */
	bool open;
	uint64_t first;              /* the first item served */
	bool clipped;                /* the first block starts mid-run */
};

/* One decoder run into the BTS blocks: runs are sequential inside, and
 * the next one continues the block when it starts at the fall-through of
 * this one's end (decoders also split runs where no branch was taken). */
static int collect_run(void *arg, const struct hwt_run *r)
{
	struct collect *c = arg;
	uint64_t n = r->gap ? 1 : r->count;

	if (r->index + n - 1 < c->first)
		return 0;
	/* Starts before the first item: its begin comes from that item. */
	if (r->index < c->first)
		c->clipped = true;
	/* BTS has no gap record: the first instruction after a gap starts
	 * a new block, as after any branch. */
	if (r->gap) {
		if (c->open && push_block(c->b, c->begin, c->last))
			return -ENOMEM;
		c->open = false;
		return 0;
	}
	if (!c->open || r->begin != c->next) {
		if (c->open && push_block(c->b, c->begin, c->last))
			return -ENOMEM;
		c->begin = r->begin;
		c->open = true;
	}
	c->last = r->end;
	/* Unknown length: no fall-through can be claimed. */
	c->next = r->next;
	return 0;
}

static int collect_blocks(struct hwt_history *h, uint64_t first,
			  struct blocks *b, struct hwt_err *err)
{
	struct collect c = { .b = b, .first = first };
	struct hwt_item it;
	int rc = hwt_history_runs(h, first, collect_run, &c, err);

	if (rc == -ENOMEM || (!rc && c.open && push_block(b, c.begin, c.last)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	if (!rc && c.clipped && b->n) {
		rc = hwt_history_get(h, first, &it, err);
		if (!rc && it.kind == HWT_ITEM_INSN)
			b->v[0].begin = it.addr;
	}
	return rc;
}

/* Bytes of one BTS record: what a configured buffer size holds. */
#define BTS_RECORD 24u

static int build_bts_doc(struct server *s, struct srv_thread *t,
			 struct hwt_history *h, uint64_t first, char **out,
			 size_t *outlen, struct hwt_err *err)
{
	struct blocks b = { 0 };
	size_t cap, len = 0, keep;
	char *doc;
	int rc;

	rc = collect_blocks(h, first, &b, err);
	if (rc) {
		free(b.v);
		return rc;
	}
	/* The configured buffer keeps the newest records, like a ring,
	 * for a trace GDB started; a recording's or a thread's whole life
	 * goes out as it was recorded. */
	keep = t->whole_life ? 0 : s->bts_size / BTS_RECORD;
	if (keep && b.n > keep) {
		memmove(b.v, b.v + (b.n - keep), keep * sizeof(*b.v));
		b.n = keep;
	}
	/* Two 18-digit addresses and the markup fit in 64 bytes. */
	cap = 64 * b.n + 64;
	doc = malloc(cap);
	if (!doc) {
		free(b.v);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	len += (size_t)snprintf(doc + len, cap - len, "<btrace version=\"1.0\">");
	for (size_t i = b.n; i-- > 0;)
		len += (size_t)snprintf(doc + len, cap - len,
					"<block begin=\"0x%llx\" end=\"0x%llx\"/>",
					(unsigned long long)b.v[i].begin,
					(unsigned long long)b.v[i].end);
	len += (size_t)snprintf(doc + len, cap - len, "</btrace>");
	free(b.v);
	*out = doc;
	*outlen = len;
	return 0;
}

/* The cpu the PT stream claims (hwt_pt_stream_cpu). Encoder and
 * <pt-config> get the same one, so GDB applies the errata the stream was
 * written for. */
static struct hwt_cpu_info pt_cpu(const struct server *s)
{
	return hwt_pt_stream_cpu(s->bundle ? &s->bundle->cpu : NULL);
}

/* The PT stream of items first..last; with limit (bytes, 0: none) a longer
 * one is cut to the newest items whose stream fits, as a wrapped PT buffer
 * keeps only its newest part. The stream shrinks as its start moves
 * forward, so the start is found by bisection; the last item is the stop
 * pc, so at least the one instruction before it goes out. */
static int encode_pt(struct server *s, struct hwt_history *h, uint64_t first,
		     size_t limit, const struct hwt_pt_encode_opts *opts,
		     uint8_t **pt, size_t *ptsize, struct hwt_err *err)
{
	uint64_t last = hwt_history_count(h), lo, hi;
	int rc = hwt_pt_encode(h, s->img, first, last, opts, pt, ptsize, err);

	if (rc || !limit || *ptsize <= limit || last < 2 || first >= last - 1)
		return rc;
	/* Invariant: lo's stream is too long; hi's fits or hi = last - 1. */
	lo = first;
	hi = last - 1;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		uint8_t *p = NULL;
		size_t n = 0;

		rc = hwt_pt_encode(h, s->img, mid, last, opts, &p, &n, err);
		if (rc)
			return rc;
		free(p);
		if (n <= limit)
			hi = mid;
		else
			lo = mid;
	}
	free(*pt);
	*pt = NULL;
	return hwt_pt_encode(h, s->img, hi, last, opts, pt, ptsize, err);
}

static int build_pt_doc(struct server *s, struct srv_thread *t,
			struct hwt_history *h, uint64_t first, char **out,
			size_t *outlen, struct hwt_err *err)
{
	static const char hex[] = "0123456789abcdef";
	struct cli_progress pr;
	HWT_OPTS(hwt_pt_encode_opts, opts, .cpu = pt_cpu(s),
		 .progress = cli_progress_report, .progress_ctx = &pr);
	uint8_t *pt = NULL;
	size_t ptsize = 0, cap, len;
	char *doc;
	int rc;

	/* Millions of instructions take seconds: a line on the server's
	 * terminal says how far it is. */
	cli_progress_begin(&pr, "hwt-server: encoding the history for GDB", 0,
			   true);
	/* The configured buffer bounds a trace GDB started, as for BTS. */
	rc = encode_pt(s, h, first, t->whole_life ? 0 : s->pt_size, &opts,
		       &pt, &ptsize, err);
	cli_progress_end(&pr);
	if (rc)
		return rc;
	/* Markup under 256 bytes, two hex digits per byte. */
	if (ptsize > (SIZE_MAX - 256) / 2) {
		free(pt);
		return hwt_err_set(err, EFBIG, "PT stream too large to serve");
	}
	cap = 2 * ptsize + 256;
	doc = malloc(cap);
	if (!doc) {
		free(pt);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	len = (size_t)snprintf(doc, cap, "<btrace version=\"1.0\"><pt><pt-config>"
			       "<cpu vendor=\"GenuineIntel\" family=\"%d\" "
			       "model=\"%d\" stepping=\"%d\"/></pt-config><raw>",
			       opts.cpu.family, opts.cpu.model,
			       opts.cpu.stepping);
	for (size_t i = 0; i < ptsize; i++) {
		doc[len++] = hex[pt[i] >> 4];
		doc[len++] = hex[pt[i] & 15];
	}
	len += (size_t)snprintf(doc + len, cap - len, "</raw></pt></btrace>");
	free(pt);
	*out = doc;
	*outlen = len;
	return 0;
}

/* The first item GDB's trace holds: where it enabled it, counted back
 * from the current instruction by what ran since; 1 when the ring lost
 * that far back, or the thread's whole life is served (its newest
 * SRV_WHOLE_LIFE_MAX_ITEMS). */
static uint64_t first_item(struct server *s, struct srv_thread *t,
			   struct hwt_history *h)
{
	uint64_t count = hwt_history_count(h), ran;

	if (count == 0)
		return 1;
	if (t->whole_life)
		return srv_whole_life_first(count);
	ran = s->ops->insn_now(s, t) - t->btrace_start;
	return ran >= count ? 1 : count - ran;
}

/* Build (or rebuild, when GDB switched formats) the thread's document. */
static int build_doc(struct server *s, struct srv_thread *t,
		     struct hwt_err *err)
{
	struct hwt_history *h = srv_history(s, t, err);
	char *doc = NULL;
	uint64_t first;
	size_t len = 0;
	int rc;

	if (!h)
		return -err->code;
	first = first_item(s, t, h);
	rc = t->btrace_pt ? build_pt_doc(s, t, h, first, &doc, &len, err)
			  : build_bts_doc(s, t, h, first, &doc, &len, err);
	if (rc)
		return rc;
	free(t->btrace_xml);
	t->btrace_xml = doc;
	t->btrace_len = len;
	t->btrace_xml_pt = t->btrace_pt;
	return 0;
}

static int read_btrace(struct server *s, struct srv_thread *t,
		       const char *annex, uint64_t off, uint64_t len)
{
	struct hwt_err err = { 0 };
	char msg[600];
	bool all = strcmp(annex, "all") == 0;

	if (!all && strcmp(annex, "new") != 0 && strcmp(annex, "delta") != 0)
		return rsp_send_str(&s->conn, "E.Unknown btrace read annex.");
	if (!t->btrace_on)
		return rsp_send_str(&s->conn, "E.Btrace not enabled.");
	if (off == 0) {
		if (!all && !t->btrace_served && strcmp(annex, "delta") == 0)
			return rsp_send_str(&s->conn, "E.No delta: the trace "
					    "does not continue GDB's.");
		t->btrace_reading_empty = !all && t->btrace_served;
		if (!t->btrace_reading_empty &&
		    (!t->btrace_xml || t->btrace_xml_pt != t->btrace_pt) &&
		    build_doc(s, t, &err)) {
			snprintf(msg, sizeof(msg), "E.%s", err.msg);
			return rsp_send_str(&s->conn, msg);
		}
		t->btrace_served = true;
	}
	if (t->btrace_reading_empty)
		return srv_xfer_reply(s, BTRACE_EMPTY, strlen(BTRACE_EMPTY), off,
				      len);
	if (!t->btrace_xml)
		return rsp_send_str(&s->conn, "E.Read btrace from offset 0 first.");
	return srv_xfer_reply(s, t->btrace_xml, t->btrace_len, off, len);
}

static int read_conf(struct server *s, struct srv_thread *t, uint64_t off,
		     uint64_t len)
{
	char doc[128];
	int n;

	if (t->btrace_on)
		n = snprintf(doc, sizeof(doc), "<btrace-conf version=\"1.0\">"
			     "<%s size=\"0x%llx\"/></btrace-conf>",
			     t->btrace_pt ? "pt" : "bts",
			     (unsigned long long)(t->btrace_pt ? s->pt_size
							     : s->bts_size));
	else
		n = snprintf(doc, sizeof(doc), "<btrace-conf version=\"1.0\"/>");
	return srv_xfer_reply(s, doc, (size_t)n, off, len);
}

/* The buffer a requested size gets, as GDB's own Linux btrace and
 * gdbserver report it (perf's rule): whole pages, a power of two of them.
 * Sizes past 2 GiB ("unlimited") stay as asked. */
static uint64_t buffer_pages(uint64_t n)
{
	uint64_t size = 4096;

	if (n > (1ull << 31))
		return n;
	while (size < n)
		size <<= 1;
	return size;
}

bool btrace_handle(struct server *s, const char *pkt, int *rc)
{
	struct srv_thread *t = &s->threads[s->gthread];
	char annex[16];
	uint64_t off, n;
	const char *p;

	if (strcmp(pkt, "Qbtrace:bts") == 0 || strcmp(pkt, "Qbtrace:pt") == 0) {
		struct hwt_err err = { 0 };
		char msg[600];

		if (t->btrace_on) {
			*rc = rsp_send_str(&s->conn, "E.Btrace already enabled.");
		} else if (srv_record_start(s, &err) ||
			   !srv_history(s, t, &err)) {
			snprintf(msg, sizeof(msg), "E.%s", err.msg);
			*rc = rsp_send_str(&s->conn, msg);
		} else {
			t->btrace_on = true;
			t->btrace_start = s->ops->insn_now(s, t);
			t->btrace_pt = pkt[8] == 'p';
			t->btrace_served = false;
			*rc = rsp_send_str(&s->conn, "OK");
		}
	} else if (strcmp(pkt, "Qbtrace:off") == 0) {
		if (!t->btrace_on) {
			*rc = rsp_send_str(&s->conn, "E.Btrace not enabled.");
		} else {
			t->btrace_on = false;
			t->btrace_served = false;
			*rc = rsp_send_str(&s->conn, "OK");
		}
	} else if (strncmp(pkt, "Qbtrace-conf:bts:size=", 22) == 0) {
		if (hwt_parse_u64(pkt + 22, &n) || n == 0 || n > UINT32_MAX)
			*rc = rsp_send_str(&s->conn, "E.Bad BTS buffer size.");
		else {
			/* Bounds the records served from the next enable
			 * on (build_bts_doc). */
			s->bts_size = buffer_pages(n);
			*rc = rsp_send_str(&s->conn, "OK");
		}
	} else if (strncmp(pkt, "Qbtrace-conf:pt:size=", 21) == 0) {
		if (hwt_parse_u64(pkt + 21, &n) || n == 0 || n > UINT32_MAX)
			*rc = rsp_send_str(&s->conn, "E.Bad PT buffer size.");
		else {
			/* Bounds the stream served from the next enable
			 * on (encode_pt). */
			s->pt_size = buffer_pages(n);
			*rc = rsp_send_str(&s->conn, "OK");
		}
	} else if (strncmp(pkt, "qXfer:btrace:read:", 18) == 0) {
		p = strchr(pkt + 18, ':');
		if (!p || (size_t)(p - (pkt + 18)) >= sizeof(annex) ||
		    !srv_parse_offlen(p + 1, &off, &n)) {
			*rc = rsp_send_str(&s->conn, "E.Malformed qXfer:btrace:read.");
			return true;
		}
		memcpy(annex, pkt + 18, (size_t)(p - (pkt + 18)));
		annex[p - (pkt + 18)] = '\0';
		*rc = read_btrace(s, t, annex, off, n);
	} else if (strncmp(pkt, "qXfer:btrace-conf:read::", 24) == 0) {
		if (!srv_parse_offlen(pkt + 24, &off, &n))
			*rc = rsp_send_str(&s->conn, "E.Malformed qXfer:btrace-conf:read.");
		else
			*rc = read_conf(s, t, off, n);
	} else {
		return false;
	}
	return true;
}
