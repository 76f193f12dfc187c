// SPDX-License-Identifier: BSD-2-Clause
/* lldb_trace.c - LLDB's trace packets (jLLDBTrace*, lldb-gdb-remote.txt)
 * over the recorded histories, so stock LLDB's intel-pt plugin runs
 * `thread trace dump instructions`, `... function-calls` and `trace save`
 * against hwt-server as it would against lldb-server on Intel PT
 * hardware.
 *
 * The trace LLDB reads is each thread's history since its trace started,
 * written as Intel PT by hwt_pt_encode for the cpu the stream claims
 * (procfsCpuInfo tells LLDB the same cpu, so its libipt applies the
 * errata the stream was written for). Post-mortem the recorder traced
 * every thread from its first instruction, so the process is traced from
 * the start: GetState lists every thread with a trace before any
 * jLLDBTraceStart, a start request only confirms it, and a start after a
 * stop gives the whole history again (nothing runs after the crash, so a
 * trace from "now" would stay empty). Live, a thread's trace starts at the
 * instruction where it stands when LLDB starts it.
 *
 * There is no buffer to size: iptTraceSize is checked as lldb-server
 * checks it, but the whole history since the start is served (no ring
 * wraps; processBufferSizeLimit and psbPeriod are parsed and have nothing
 * to limit), up to a whole life's newest SRV_WHOLE_LIFE_MAX_ITEMS
 * instructions, as to GDB. What the software backend cannot do is
 * refused with the reason: TSC timestamps (the history has none) and
 * per-cpu tracing (there are no cpu buffers). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-json.h"
#include "server.h"

/* lldb-server's limits for a per-thread buffer: a power of two from one
 * page up to what perf can map. */
#define LT_MIN_TRACE_SIZE 4096u
#define LT_MAX_TRACE_SIZE (1ull << 30)
#define LT_DEFAULT_TRACE_SIZE 4096u

struct lt_thread {
	int64_t tid;
	bool from_birth;            /* traced over its whole history */
	uint64_t start_now;         /* else: insn_now when it started */
	/* The encoded stream and what it covers, rebuilt when the thread
	 * ran or its history was reopened (live: at every stop; a full ring
	 * keeps its count while it moves, so the instruction total counts). */
	struct hwt_history *enc_hist;
	uint64_t enc_last, enc_now;
	uint8_t *pt;
	size_t pt_len;
};

struct lldb_trace {
	bool process_wide;          /* new threads are traced from birth */
	struct lt_thread *th;
	size_t n;
	char cpuinfo[256];
	size_t cpuinfo_len;
};

/* The cpu the streams claim, as btrace.c's for GDB (hwt_pt_stream_cpu). */
static struct hwt_cpu_info stream_cpu(const struct server *s)
{
	return hwt_pt_stream_cpu(s->bundle ? &s->bundle->cpu : NULL);
}

static struct lt_thread *find(struct lldb_trace *lt, int64_t tid)
{
	for (size_t i = 0; i < lt->n; i++)
		if (lt->th[i].tid == tid)
			return &lt->th[i];
	return NULL;
}

static struct srv_thread *srv_thread_of(struct server *s, int64_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

static void drop(struct lldb_trace *lt, struct lt_thread *t)
{
	free(t->pt);
	*t = lt->th[--lt->n];
}

/* Start tracing tid where it stands now, or over its whole history
 * (post-mortem, and threads born while the process is traced). */
static int add(struct server *s, struct lldb_trace *lt, int64_t tid,
	       bool from_birth, struct hwt_err *err)
{
	struct srv_thread *st = srv_thread_of(s, tid);
	struct lt_thread *t;

	if (!st)
		return hwt_err_set(err, ESRCH, "no thread %lld in the process",
				   (long long)tid);
	/* A thread without a readable history cannot be traced. */
	if (!srv_history(s, st, err))
		return -err->code;
	t = realloc(lt->th, (lt->n + 1) * sizeof(*t));
	if (!t)
		return hwt_err_set(err, ENOMEM, "out of memory");
	lt->th = t;
	lt->th[lt->n++] = (struct lt_thread){
		.tid = tid, .from_birth = from_birth,
		.start_now = s->ops->insn_now(s, st),
	};
	return 0;
}

/* The item the trace starts at: counted back from the current one by
 * what ran since the start, as btrace.c does for GDB; 1 when the
 * collector's ring no longer reaches that far back (as a wrapped PT
 * buffer, LLDB gets what is left); for a thread traced from its birth,
 * the first of its newest SRV_WHOLE_LIFE_MAX_ITEMS. */
static uint64_t first_item(struct server *s, struct lt_thread *t,
			   struct srv_thread *st, uint64_t count)
{
	uint64_t ran;

	if (count == 0)
		return 1;
	if (t->from_birth)
		return srv_whole_life_first(count);
	ran = s->ops->insn_now(s, st) - t->start_now;
	return ran >= count ? 1 : count - ran;
}

static bool post_mortem(const struct server *s)
{
	return strcmp(s->ops->mode, "live") != 0;
}

static struct lldb_trace *state(struct server *s)
{
	struct lldb_trace *lt = s->lldb;
	struct hwt_cpu_info cpu;
	struct hwt_err err = { 0 };

	if (lt)
		return lt;
	lt = calloc(1, sizeof(*lt));
	if (!lt)
		return NULL;
	cpu = stream_cpu(s);
	/* The lines LLDB's cpuinfo parser reads, as /proc/cpuinfo has them. */
	lt->cpuinfo_len = (size_t)snprintf(lt->cpuinfo, sizeof(lt->cpuinfo),
		"processor\t: 0\nvendor_id\t: %s\ncpu family\t: %d\n"
		"model\t\t: %d\nstepping\t: %d\n\n", cpu.vendor, cpu.family,
		cpu.model, cpu.stepping);
	s->lldb = lt;
	if (post_mortem(s)) {
		/* The recorder traced the whole process from the start; a
		 * thread without a trace (or an unreadable one) is simply not
		 * traced, as LLDB shows a thread lldb-server lost. */
		lt->process_wide = true;
		for (size_t i = 0; i < s->nthreads; i++)
			if (s->threads[i].bundle_idx >= 0)
				add(s, lt, s->threads[i].tid, true, &err);
	}
	return lt;
}

void lldb_trace_free(struct lldb_trace *lt)
{
	if (!lt)
		return;
	for (size_t i = 0; i < lt->n; i++)
		free(lt->th[i].pt);
	free(lt->th);
	free(lt);
}

/* The thread's stream up to where it stands now. */
static int encode(struct server *s, struct lt_thread *t, struct hwt_err *err)
{
	struct srv_thread *st = srv_thread_of(s, t->tid);
	HWT_OPTS(hwt_pt_encode_opts, opts, .cpu = stream_cpu(s));
	struct hwt_history *h;
	uint64_t last, first, now;
	int rc;

	if (!st)
		return hwt_err_set(err, ESRCH, "thread %lld is gone",
				   (long long)t->tid);
	h = srv_history(s, st, err);
	if (!h)
		return -err->code;
	last = hwt_history_count(h);
	now = s->ops->insn_now(s, st);
	if (t->pt && t->enc_hist == h && t->enc_last == last &&
	    t->enc_now == now)
		return 0;
	free(t->pt);
	t->pt = NULL;
	t->pt_len = 0;
	t->enc_hist = h;
	t->enc_last = last;
	t->enc_now = now;
	first = first_item(s, t, st, last);
	/* Nothing run since the start: an empty trace, as a fresh buffer. */
	if (last == 0 || first >= last)
		return 0;
	rc = hwt_pt_encode(h, s->img, first, last, &opts, &t->pt,
			   &t->pt_len, err);
	if (rc)
		t->enc_hist = NULL;
	return rc;
}

/* ---- requests ------------------------------------------------------------ */

static int reply_err(struct server *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int reply_err(struct server *s, const char *fmt, ...)
{
	static const char hex[] = "0123456789abcdef";
	char msg[600], reply[4 + 2 * sizeof(msg)];
	size_t n = 4;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* LLDB's error form (lldb-gdb-remote.txt): a code, then the message
	 * hex-encoded, which LLDB prints as the command's error. */
	memcpy(reply, "E01;", n);
	for (const char *c = msg; *c; c++) {
		reply[n++] = hex[(unsigned char)*c >> 4];
		reply[n++] = hex[(unsigned char)*c & 15];
	}
	reply[n] = '\0';
	return rsp_send_str(&s->conn, reply);
}

/* A member of the request; null counts as absent. */
static json_object *member(json_object *j, const char *key)
{
	json_object *f = NULL;

	json_object_object_get_ex(j, key, &f);
	return json_object_is_type(f, json_type_null) ? NULL : f;
}

/* The request's JSON object with "type" checked to be ours. */
static json_object *parse(struct server *s, const char *arg, int *rc)
{
	struct hwt_err err = { 0 };
	json_object *j = NULL, *type;

	/* The packet bound (RSP_MAX_PAYLOAD) keeps the text small. */
	*rc = 0;
	if (hwt_json_parse(arg, strlen(arg), &j, &err) ||
	    !json_object_is_type(j, json_type_object)) {
		json_object_put(j);
		*rc = reply_err(s, "Malformed JSON request: %s.",
				j ? "not an object" : err.msg);
		return NULL;
	}
	type = member(j, "type");
	if (!json_object_is_type(type, json_type_string) ||
	    strcmp(json_object_get_string(type), "intel-pt")) {
		json_object_put(j);
		*rc = reply_err(s, "Unsupported tracing technology: only "
				"\"intel-pt\" is served.");
		return NULL;
	}
	return j;
}

/* An unsigned field LLDB writes as a number or a "0x..." string; absent
 * leaves *v. */
static bool get_u64(json_object *j, const char *key, uint64_t *v)
{
	json_object *f = member(j, key);
	char why[96];

	return !f || hwt_json_get_u64(f, v, why, sizeof(why)) == 0;
}

static bool get_bool(json_object *j, const char *key, bool *v)
{
	json_object *f = member(j, key);

	if (!f)
		return true;
	if (!json_object_is_type(f, json_type_boolean))
		return false;
	*v = json_object_get_boolean(f);
	return true;
}

/* A tid of a request's list; -1 for anything but a positive integer. */
static int64_t tid_of(json_object *v)
{
	int64_t tid;
	char why[96];

	return hwt_json_get_i64(v, &tid, why, sizeof(why)) || tid <= 0 ?
		-1 : tid;
}

static int handle_start(struct server *s, struct lldb_trace *lt,
			const char *arg)
{
	uint64_t size = LT_DEFAULT_TRACE_SIZE, limit = 0, psb = 0;
	bool tsc = false, per_cpu = false;
	struct hwt_err err = { 0 };
	json_object *j, *tids;
	int rc;

	j = parse(s, arg, &rc);
	if (!j)
		return rc;
	tids = member(j, "tids");
	if (!get_u64(j, "iptTraceSize", &size) ||
	    !get_u64(j, "processBufferSizeLimit", &limit) ||
	    !get_u64(j, "psbPeriod", &psb) || !get_bool(j, "enableTsc", &tsc) ||
	    !get_bool(j, "perCpuTracing", &per_cpu) ||
	    (tids && !json_object_is_type(tids, json_type_array))) {
		rc = reply_err(s, "Malformed jLLDBTraceStart request.");
		goto out;
	}
	if (tsc) {
		rc = reply_err(s, "Timestamps are not available: the software "
			       "trace has no TSC. Start without enableTsc.");
		goto out;
	}
	if (per_cpu && !tids) {
		rc = reply_err(s, "Per-cpu tracing is not available: the "
			       "software trace is per thread. Start without "
			       "perCpuTracing.");
		goto out;
	}
	if (size < LT_MIN_TRACE_SIZE || size > LT_MAX_TRACE_SIZE ||
	    (size & (size - 1))) {
		rc = reply_err(s, "The trace buffer size must be a power of 2 "
			       "from %u to %llu bytes; it was %llu.",
			       LT_MIN_TRACE_SIZE, LT_MAX_TRACE_SIZE,
			       (unsigned long long)size);
		goto out;
	}
	if (srv_record_start(s, &err)) {
		rc = reply_err(s, "Cannot start recording: %s", err.msg);
		goto out;
	}
	if (!tids) {
		if (lt->process_wide) {
			/* Post-mortem it was traced from the start: the
			 * request is already satisfied. */
			rc = post_mortem(s) ? rsp_send_str(&s->conn, "OK") :
			     reply_err(s, "Process currently traced. Stop "
				       "process tracing first.");
			goto out;
		}
		/* Threads traced on their own stay as they are. */
		for (size_t i = 0; i < s->nthreads; i++)
			if (!find(lt, s->threads[i].tid) &&
			    add(s, lt, s->threads[i].tid, post_mortem(s), &err)) {
				rc = reply_err(s, "Cannot trace thread %lld: %s",
					       (long long)s->threads[i].tid,
					       err.msg);
				goto out;
			}
		lt->process_wide = true;
	} else {
		size_t i, n = json_object_array_length(tids);

		/* All or nothing: check every tid before tracing any. */
		for (i = 0; i < n; i++) {
			int64_t tid = tid_of(json_object_array_get_idx(tids, i));

			if (tid <= 0 || !srv_thread_of(s, tid)) {
				rc = reply_err(s, "Thread %lld is not in the "
					       "process.", (long long)tid);
				goto out;
			}
			if (find(lt, tid) && !post_mortem(s)) {
				rc = reply_err(s, "Thread %lld already traced.",
					       (long long)tid);
				goto out;
			}
		}
		/* Post-mortem a thread with a trace has had it from the
		 * start, so asking again changes nothing. */
		for (i = 0; i < n; i++) {
			int64_t tid = tid_of(json_object_array_get_idx(tids, i));

			if (!find(lt, tid) && add(s, lt, tid, post_mortem(s), &err)) {
				rc = reply_err(s, "Cannot trace thread %lld: %s",
					       (long long)tid, err.msg);
				goto out;
			}
		}
	}
	rc = rsp_send_str(&s->conn, "OK");
out:
	json_object_put(j);
	return rc;
}

static int handle_stop(struct server *s, struct lldb_trace *lt,
		       const char *arg)
{
	json_object *j, *tids;
	size_t i, n;
	int rc;

	j = parse(s, arg, &rc);
	if (!j)
		return rc;
	tids = member(j, "tids");
	if (!tids) {
		if (!lt->process_wide) {
			rc = reply_err(s, "Process not currently traced.");
			goto out;
		}
		while (lt->n)
			drop(lt, &lt->th[lt->n - 1]);
		lt->process_wide = false;
	} else if (!json_object_is_type(tids, json_type_array)) {
		rc = reply_err(s, "Malformed jLLDBTraceStop request.");
		goto out;
	} else {
		n = json_object_array_length(tids);
		for (i = 0; i < n; i++) {
			int64_t tid = tid_of(json_object_array_get_idx(tids, i));

			if (!find(lt, tid)) {
				rc = reply_err(s, "Thread %lld not currently "
					       "traced.", (long long)tid);
				goto out;
			}
		}
		for (i = 0; i < n; i++)
			drop(lt, find(lt, tid_of(
				json_object_array_get_idx(tids, i))));
	}
	rc = rsp_send_str(&s->conn, "OK");
out:
	json_object_put(j);
	return rc;
}

static int send_json(struct server *s, json_object *j)
{
	char *text = j ? hwt_json_text(j, false) : NULL;
	int rc;

	json_object_put(j);
	if (!text)
		return reply_err(s, "Out of memory.");
	rc = rsp_send(&s->conn, text, strlen(text), true);
	free(text);
	return rc;
}

/* [{"kind": kind, "size": size}] */
static json_object *binary_data(const char *kind, size_t size)
{
	json_object *arr = json_object_new_array(), *o = json_object_new_object();

	if (hwt_json_add(o, "kind", json_object_new_string(kind)) ||
	    hwt_json_add(o, "size", json_object_new_uint64(size)) ||
	    hwt_json_append(arr, o)) {
		json_object_put(o);
		json_object_put(arr);
		return NULL;
	}
	return arr;
}

/* {"tid": tid, "binaryData": [{"kind": "iptTrace", "size": size}]} */
static json_object *traced_thread(int64_t tid, size_t size)
{
	json_object *o = json_object_new_object();

	if (hwt_json_add(o, "tid", json_object_new_int64(tid)) ||
	    hwt_json_add(o, "binaryData", binary_data("iptTrace", size))) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static int handle_get_state(struct server *s, struct lldb_trace *lt,
			    const char *arg)
{
	struct hwt_err err = { 0 };
	json_object *j, *threads, *resp, *warnings;
	int rc;

	j = parse(s, arg, &rc);
	if (!j)
		return rc;
	json_object_put(j);
	/* A process-wide trace takes in the threads born since. */
	if (lt->process_wide)
		for (size_t i = 0; i < s->nthreads; i++)
			if (!find(lt, s->threads[i].tid) &&
			    (!post_mortem(s) || s->threads[i].bundle_idx >= 0))
				add(s, lt, s->threads[i].tid, true, &err);
	threads = json_object_new_array();
	warnings = json_object_new_array();
	rc = threads && warnings ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < lt->n;) {
		struct lt_thread *t = &lt->th[i];

		if (!srv_thread_of(s, t->tid)) {
			/* Exited: LLDB no longer asks for it. */
			drop(lt, t);
			continue;
		}
		if (encode(s, t, &err)) {
			char w[640];

			snprintf(w, sizeof(w), "thread %lld: %s",
				 (long long)t->tid, err.msg);
			rc = hwt_json_append(warnings,
					     json_object_new_string(w));
		}
		if (!rc)
			rc = hwt_json_append(threads,
					     traced_thread(t->tid, t->pt_len));
		i++;
	}
	resp = json_object_new_object();
	if (rc || hwt_json_add(resp, "tracedThreads", threads) ||
	    hwt_json_add(resp, "processBinaryData",
			 binary_data("procfsCpuInfo", lt->cpuinfo_len)) ||
	    hwt_json_add(resp, "usingCgroupFiltering",
			 json_object_new_boolean(0)) ||
	    (json_object_array_length(warnings) &&
	     hwt_json_add(resp, "warnings", json_object_get(warnings)))) {
		if (rc)
			json_object_put(threads);
		json_object_put(resp);
		resp = NULL;
	}
	json_object_put(warnings);
	return send_json(s, resp);
}

static int handle_get_binary(struct server *s, struct lldb_trace *lt,
			     const char *arg)
{
	/* LLDB 22 asks for the whole object (no offset or size); older
	 * clients name a range. */
	uint64_t off = 0, size = 0, tid = 0;
	struct hwt_err err = { 0 };
	const uint8_t *data;
	const char *kind;
	json_object *j;
	size_t len;
	int rc;

	j = parse(s, arg, &rc);
	if (!j)
		return rc;
	kind = json_object_is_type(member(j, "kind"), json_type_string) ?
		json_object_get_string(member(j, "kind")) : NULL;
	if (!kind || !get_u64(j, "offset", &off) || !get_u64(j, "size", &size) ||
	    !get_u64(j, "tid", &tid)) {
		rc = reply_err(s, "Malformed jLLDBTraceGetBinaryData request.");
		goto out;
	}
	if (member(j, "cpuId")) {
		rc = reply_err(s, "No per-cpu data: the trace is per thread.");
		goto out;
	}
	if (strcmp(kind, "procfsCpuInfo") == 0) {
		data = (const uint8_t *)lt->cpuinfo;
		len = lt->cpuinfo_len;
	} else if (strcmp(kind, "iptTrace") == 0) {
		struct lt_thread *t = find(lt, (int64_t)tid);

		if (!t) {
			rc = reply_err(s, "Thread %llu not currently traced.",
				       (unsigned long long)tid);
			goto out;
		}
		if (encode(s, t, &err)) {
			rc = reply_err(s, "%s", err.msg);
			goto out;
		}
		data = t->pt;
		len = t->pt_len;
	} else {
		rc = reply_err(s, "Unknown binary data kind \"%s\".", kind);
		goto out;
	}
	/* No size: all from the offset on. */
	if (!member(j, "size") && off <= len)
		size = len - off;
	if (off > len || size > len - off)
		rc = reply_err(s, "Range %llu+%llu is beyond the %zu bytes of "
			       "%s.", (unsigned long long)off,
			       (unsigned long long)size, len, kind);
	else
		rc = rsp_send(&s->conn, data ? data + off :
			      (const uint8_t *)"", (size_t)size, true);
out:
	json_object_put(j);
	return rc;
}

bool lldb_trace_handle(struct server *s, const char *pkt, int *rc)
{
	struct lldb_trace *lt;

	if (strncmp(pkt, "jLLDBTrace", 10) != 0)
		return false;
	pkt += 10;
	if (strcmp(pkt, "Supported") == 0) {
		static const char reply[] = "{\"name\":\"intel-pt\","
			"\"description\":\"Intel PT written from hwtrace's "
			"recorded histories\"}";

		/* JSON ends in '}', the protocol's escape byte. */
		*rc = rsp_send(&s->conn, reply, sizeof(reply) - 1, true);
		return true;
	}
	lt = state(s);
	if (!lt)
		*rc = reply_err(s, "Out of memory.");
	else if (strncmp(pkt, "Start:", 6) == 0)
		*rc = handle_start(s, lt, pkt + 6);
	else if (strncmp(pkt, "Stop:", 5) == 0)
		*rc = handle_stop(s, lt, pkt + 5);
	else if (strncmp(pkt, "GetState:", 9) == 0)
		*rc = handle_get_state(s, lt, pkt + 9);
	else if (strncmp(pkt, "GetBinaryData:", 14) == 0)
		*rc = handle_get_binary(s, lt, pkt + 14);
	else
		*rc = rsp_send_str(&s->conn, "");
	return true;
}
