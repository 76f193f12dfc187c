// SPDX-License-Identifier: BSD-2-Clause
/* server.c - hwt-server's session: answers GDB's packets one at a time.
 * The target behind them (struct target_ops) is a crashed process that can
 * move only through its recorded past (target_core.c, reverse.c) or a live
 * one under the collector (target_live.c); traces go out through btrace.c,
 * resumes through vcont.c. Every packet is untrusted: arguments are parsed
 * strictly and anything we cannot do gets an error or the empty
 * "unsupported" reply. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server.h"

#define REPLY_MAX 1024

static void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("hwt-server: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- packets ----------------------------------------------------------- */

static const char SUPPORTED[] =
	"PacketSize=4000;QStartNoAckMode+;swbreak+;hwbreak+;vContSupported+;"
	"qXfer:features:read+;qXfer:auxv:read+;qXfer:exec-file:read+;"
	"qXfer:libraries-svr4:read+;qXfer:threads:read+;qXfer:siginfo:read+;"
	"QNonStop+;Qbtrace:bts+;Qbtrace:pt+;Qbtrace:off+;Qbtrace-conf:bts:size+;"
	"Qbtrace-conf:pt:size+;"
	"qXfer:btrace:read+;qXfer:btrace-conf:read+;"
	"ReverseStep+;ReverseContinue+;QThreadEvents+";

static void hex_bytes(char *out, const uint8_t *in, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* One register in hex, or 'x's when unavailable: in a replay position
 * the pc, and the general registers where the target kept them. */
static size_t reg_hex(struct server *s, size_t ti, int regno, char *out)
{
	uint8_t val[TDESC_MAX_REG_SIZE];
	size_t size = tdesc_reg_size(regno);
	uint64_t pc;
	bool have;

	if (srv_replaying(s, ti, &pc)) {
		have = regno == TDESC_PC_REGNUM;
		memcpy(val, &pc, sizeof(pc));
		if (!have && s->ops->past_reg)
			have = s->ops->past_reg(s, ti, pc, regno, val);
	} else {
		have = s->ops->reg_get(s, ti, regno, val);
	}
	if (have)
		hex_bytes(out, val, size);
	else
		memset(out, 'x', 2 * size);
	return 2 * size;
}

static int handle_g(struct server *s)
{
	char buf[2 * TDESC_AVX_NREGS * TDESC_MAX_REG_SIZE + 1];
	size_t len = 0;

	for (int r = 0; r < srv_nregs(s); r++)
		len += reg_hex(s, s->gthread, r, buf + len);
	buf[len] = '\0';
	return rsp_send_str(&s->conn, buf);
}

static int handle_p(struct server *s, const char *arg)
{
	char buf[2 * TDESC_MAX_REG_SIZE + 1];
	uint64_t regno;
	size_t len;

	if (!srv_parse_hex(arg, '\0', &regno, NULL) ||
	    regno >= (uint64_t)srv_nregs(s))
		return rsp_send_str(&s->conn, "E.No such register.");
	len = reg_hex(s, s->gthread, (int)regno, buf);
	buf[len] = '\0';
	return rsp_send_str(&s->conn, buf);
}

static int handle_m(struct server *s, const char *arg)
{
	static uint8_t data[RSP_MAX_PAYLOAD / 2];
	static char hex[RSP_MAX_PAYLOAD + 1];
	uint64_t addr, len;
	const char *rest;
	size_t n;

	if (!srv_parse_hex(arg, ',', &addr, &rest) ||
	    !srv_parse_hex(rest, '\0', &len, NULL))
		return rsp_send_str(&s->conn, "E.Malformed m packet: m ADDR,LENGTH.");
	/* GDB takes a short read and asks for the rest. */
	if (len > sizeof(data))
		len = sizeof(data);
	n = srv_read_memory(s, addr, data, (size_t)len);
	if (n == 0 && len > 0)
		return rsp_send_str(&s->conn, "E0e");
	hex_bytes(hex, data, n);
	return rsp_send_str(&s->conn, hex);
}

static int handle_threads(struct server *s, const char *pkt)
{
	char buf[RSP_MAX_PAYLOAD];
	size_t len = 0;

	if (strcmp(pkt, "qsThreadInfo") == 0)
		return rsp_send_str(&s->conn, "l");
	buf[len++] = 'm';
	for (size_t i = 0; i < s->nthreads && len + 48 < sizeof(buf); i++) {
		char tid[48];

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
					i ? "," : "",
					srv_tid_str(s, s->threads[i].tid, tid,
						    sizeof(tid)));
	}
	buf[len] = '\0';
	return rsp_send_str(&s->conn, buf);
}

static int xfer_threads(struct server *s, uint64_t off, uint64_t len)
{
	size_t cap = 64 + 64 * s->nthreads, n = 0;
	char *doc = malloc(cap);
	int rc;

	if (!doc)
		return rsp_send_str(&s->conn, "E.Out of memory.");
	n += (size_t)snprintf(doc + n, cap - n, "<?xml version=\"1.0\"?><threads>");
	for (size_t i = 0; i < s->nthreads; i++) {
		char tid[48];

		n += (size_t)snprintf(doc + n, cap - n, "<thread id=\"%s\"/>",
				      srv_tid_str(s, s->threads[i].tid, tid,
						  sizeof(tid)));
	}
	n += (size_t)snprintf(doc + n, cap - n, "</threads>");
	rc = srv_xfer_reply(s, doc, n, off, len);
	free(doc);
	return rc;
}

static int xfer_auxv(struct server *s, uint64_t off, uint64_t len)
{
	struct hwt_err err = { 0 };
	uint8_t *auxv = NULL;
	size_t n = 0;
	char msg[600];
	int rc = s->ops->auxv(s, &auxv, &n, &err);

	if (rc) {
		snprintf(msg, sizeof(msg), "E.%s", err.msg);
		return rsp_send_str(&s->conn, msg);
	}
	rc = srv_xfer_reply(s, auxv, n, off, len);
	free(auxv);
	return rc;
}

/* qXfer:OBJECT:read:ANNEX:OFF,LEN for the objects btrace.c does not own. */
enum xfer_object { XO_FEATURES, XO_AUXV, XO_EXEC, XO_LIBS, XO_THREADS,
		   XO_SIGINFO, XO_COUNT };

static int handle_xfer(struct server *s, const char *pkt)
{
	static const char *const objects[XO_COUNT] = {
		"features", "auxv", "exec-file", "libraries-svr4", "threads",
		"siginfo",
	};
	const char *obj = pkt + 6, *colon = strchr(obj, ':'), *annex, *args;
	const char *tdesc;
	const uint8_t *si;
	uint64_t off, len;
	size_t olen;
	int which;

	if (!colon)
		return rsp_send_str(&s->conn, "");
	olen = (size_t)(colon - obj);
	for (which = 0; which < XO_COUNT; which++)
		if (strlen(objects[which]) == olen &&
		    memcmp(objects[which], obj, olen) == 0)
			break;
	if (which == XO_COUNT)
		return rsp_send_str(&s->conn, "");
	if (strncmp(colon, ":read:", 6) != 0)
		return rsp_send_str(&s->conn, "E.Only reading is supported.");
	annex = colon + 6;
	args = strchr(annex, ':');
	if (!args || !srv_parse_offlen(args + 1, &off, &len))
		return rsp_send_str(&s->conn, "E.Malformed qXfer read.");
	switch (which) {
	case XO_FEATURES:
		if ((size_t)(args - annex) != 10 || strncmp(annex, "target.xml", 10))
			return rsp_send_str(&s->conn, "E.Unknown feature document.");
		tdesc = s->avx ? tdesc_amd64_avx_linux_xml
			       : tdesc_amd64_linux_xml;
		return srv_xfer_reply(s, tdesc, strlen(tdesc), off, len);
	case XO_AUXV:
		return xfer_auxv(s, off, len);
	case XO_EXEC:
		if (!s->exec_path)
			return rsp_send_str(&s->conn, "E.The executable is not known.");
		return srv_xfer_reply(s, s->exec_path, strlen(s->exec_path), off, len);
	case XO_LIBS:
		return srv_xfer_reply(s, s->libs_xml, s->libs_len, off, len);
	case XO_THREADS:
		return xfer_threads(s, off, len);
	default:
		/* $_siginfo: the details of the thread's last signal. */
		si = s->ops->siginfo(s, s->gthread);
		if (!si)
			return rsp_send_str(&s->conn, "E.No signal information for this thread.");
		return srv_xfer_reply(s, si, SRV_SIGINFO_SIZE, off, len);
	}
}

enum session { SESSION_ON, SESSION_END };

/* A packet server.c answers itself, as its route took it apart: the
 * arguments after the route's name, and whether the session ends. */
struct request {
	const char *packet;
	const char *args;
	enum session *state;
};

static int reply_stop(struct server *s, const struct request *rq)
{
	char reply[REPLY_MAX];

	s->ops->stop_reply(s, reply, sizeof(reply));
	return rsp_send_str(&s->conn, reply);
}

static int reply_g(struct server *s, const struct request *rq)
{
	return handle_g(s);
}

static int reply_p(struct server *s, const struct request *rq)
{
	return handle_p(s, rq->args);
}

static int reply_m(struct server *s, const struct request *rq)
{
	return handle_m(s, rq->args);
}

static int set_thread(struct server *s, const struct request *rq)
{
	char which = rq->args[0];
	size_t idx;

	if ((which != 'g' && which != 'c') ||
	    !srv_thread_by_id(s, rq->args + 1, &idx))
		return rsp_send_str(&s->conn, "E.No such thread.");
	if (which == 'g')
		s->gthread = idx;
	else
		s->cthread = idx;
	return rsp_send_str(&s->conn, "OK");
}

static int thread_alive(struct server *s, const struct request *rq)
{
	size_t idx;

	return rsp_send_str(&s->conn, srv_thread_by_id(s, rq->args, &idx) ?
			    "OK" : "E.No such thread.");
}

static int detach(struct server *s, const struct request *rq)
{
	int rc;

	*rq->state = SESSION_END;
	rc = rsp_send_str(&s->conn, "OK");
	s->ops->end(s, SRV_END_DETACH);
	return rc;
}

static int kill_k(struct server *s, const struct request *rq)
{
	*rq->state = SESSION_END;
	s->ops->end(s, SRV_END_KILL);
	/* GDB reads no reply to k (gdbserver sends none); LLDB waits for
	 * the exit, as lldb-server sends it: killed by SIGKILL. */
	return s->client_lldb ? rsp_send_str(&s->conn, "X09") : 0;
}

static int kill_v(struct server *s, const struct request *rq)
{
	*rq->state = SESSION_END;
	s->ops->end(s, SRV_END_KILL);
	return rsp_send_str(&s->conn, "OK");
}

static int supported(struct server *s, const struct request *rq)
{
	char reply[REPLY_MAX];

	/* GDB offers the multiprocess extension; its record full cannot
	 * do without it (docs/gdb-server.md). */
	s->multiprocess = strstr(rq->args, "multiprocess+") != NULL;
	snprintf(reply, sizeof(reply), "%s%s", SUPPORTED,
		 s->multiprocess ? ";multiprocess+" : "");
	return rsp_send_str(&s->conn, reply);
}

static int no_ack(struct server *s, const struct request *rq)
{
	int rc = rsp_send_str(&s->conn, "OK");

	s->conn.noack = true;
	return rc;
}

static int threads(struct server *s, const struct request *rq)
{
	return handle_threads(s, rq->packet);
}

static int current_thread(struct server *s, const struct request *rq)
{
	char reply[REPLY_MAX], tid[48];

	snprintf(reply, sizeof(reply), "QC%s",
		 srv_tid_str(s, s->threads[s->stop_thread].tid, tid,
			     sizeof(tid)));
	return rsp_send_str(&s->conn, reply);
}

/* Thread births and deaths as stop replies (target_live.c). */
static int thread_events(struct server *s, const struct request *rq)
{
	s->thread_events = rq->packet[sizeof("QThreadEvents:") - 1] == '1';
	return rsp_send_str(&s->conn, "OK");
}

static int attached(struct server *s, const struct request *rq)
{
	return rsp_send_str(&s->conn, s->attached ? "1" : "0");
}

static int xfer(struct server *s, const struct request *rq)
{
	return handle_xfer(s, rq->packet);
}

static int hwt_status(struct server *s, const struct request *rq)
{
	static char buf[RSP_MAX_PAYLOAD];

	s->ops->status(s, buf, sizeof(buf));
	return rsp_send_str(&s->conn, buf);
}

static int symbols_done(struct server *s, const struct request *rq)
{
	return rsp_send_str(&s->conn, "OK");
}

/* The packets server.c answers: a name the packet is (whole) or begins
 * with, and its handler. Tried in order after the packet families' own
 * files (dispatch). */
static const struct route {
	const char *name;
	bool whole;
	int (*fn)(struct server *s, const struct request *rq);
} routes[] = {
	{ "?", false, reply_stop },
	{ "g", true, reply_g },
	{ "p", false, reply_p },
	{ "m", false, reply_m },
	{ "H", false, set_thread },
	{ "T", false, thread_alive },
	{ "D", false, detach },
	{ "k", false, kill_k },
	{ "vKill", false, kill_v },
	{ "qSupported", false, supported },
	{ "QStartNoAckMode", true, no_ack },
	{ "qfThreadInfo", true, threads },
	{ "qsThreadInfo", true, threads },
	{ "qC", true, current_thread },
	{ "QThreadEvents:1", true, thread_events },
	{ "QThreadEvents:0", true, thread_events },
	{ "qAttached", false, attached },
	{ "qXfer:", false, xfer },
	{ "qHwtStatus", true, hwt_status },
	{ "qSymbol:", false, symbols_done },
};

static int dispatch(struct server *s, const struct rsp_packet *pk,
		    enum session *state)
{
	const char *p = (const char *)pk->data;
	int rc = 0;

	if (writes_handle(s, p, pk->len, &rc))
		return rc;
	if (strlen(p) != pk->len) {
		/* A NUL byte: only binary writes (X) carry them. */
		return rsp_send_str(&s->conn, "");
	}
	if (lldb_proto_handle(s, p, &rc))
		return rc;
	if (monitor_handle(s, p, &rc)) {
		if (s->exit_requested) {
			*state = SESSION_END;
			s->ops->end(s, SRV_END_HANGUP);
		}
		return rc;
	}
	if (nonstop_handle(s, p, &rc) ||
	    btrace_handle(s, p, &rc) || vcont_handle(s, p, &rc) ||
	    hostio_handle(s, p, &rc) ||
	    breakpoints_handle(s, p, &rc) || save_handle(s, p, &rc))
		return rc;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct route *r = &routes[i];
		size_t n = strlen(r->name);

		if (r->whole ? strcmp(p, r->name) == 0 :
			       strncmp(p, r->name, n) == 0)
			return r->fn(s, &(struct request){
				.packet = p, .args = p + n, .state = state });
	}
	return rsp_send_str(&s->conn, "");
}

static const char *event_name(enum rsp_event ev)
{
	switch (ev) {
	case RSP_BAD_CHECKSUM: return "a packet with a bad checksum";
	case RSP_MALFORMED: return "a malformed packet";
	case RSP_OVERSIZED: return "a packet longer than PacketSize";
	default: return "junk";
	}
}

/* Handle every complete unit in the buffer. */
static int drain(struct server *s, struct rsp_packet *pk, enum session *state)
{
	for (;;) {
		enum rsp_event ev = rsp_conn_next(&s->conn, pk);
		int rc = 0;

		switch (ev) {
		case RSP_NEED_MORE:
			return 0;
		case RSP_ACK:
		case RSP_JUNK:
			break;
		case RSP_INTERRUPT:
			/* All-stop: a resume returns only once everything
			 * stopped (a ^C during one ends it, target_live.c),
			 * so a ^C here finds nothing running. */
			break;
		case RSP_NAK:
			rc = rsp_resend(&s->conn);
			break;
		case RSP_BAD_CHECKSUM:
			log_msg("received %s", event_name(ev));
			/* With acks, '-' asks for it again; without, the
			 * sender expects no answer to a corrupt packet. */
			if (!s->conn.noack)
				rc = rsp_send_raw(&s->conn, "-", 1);
			break;
		case RSP_MALFORMED:
		case RSP_OVERSIZED:
			log_msg("received %s", event_name(ev));
			if (!s->conn.noack)
				rc = rsp_send_raw(&s->conn, "+", 1);
			if (!rc)
				rc = rsp_send_str(&s->conn, ev == RSP_OVERSIZED ?
						  "E.Packet too long." :
						  "E.Malformed packet.");
			break;
		case RSP_PACKET:
			if (!s->conn.noack)
				rc = rsp_send_raw(&s->conn, "+", 1);
			if (s->debug)
				log_msg("received packet %.200s",
					(const char *)pk->data);
			if (!rc)
				rc = dispatch(s, pk, state);
			break;
		}
		if (rc)
			return rc;
		if (*state == SESSION_END)
			return 0;
	}
}

/* Whether the client closed its end and sent everything it had: the
 * bytes still queued are read before the end is seen. */
static bool client_gone(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	return n == 0;
}

int server_run(struct server *s, struct listener *l, int fd, bool keep,
	       struct hwt_err *err)
{
	static struct rsp_packet pk;
	enum session state = SESSION_ON;
	int rc = 0;

	rsp_conn_init(&s->conn, fd);
	/* What a connection asked for ends with it. */
	nonstop_reset(s);
	s->client_lldb = false;
	s->thread_events = false;
	s->multiprocess = false;
	s->hung_up = false;
	while (state == SESSION_ON) {
		struct pollfd p[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = l->fd, .events = POLLIN },
		};
		bool packet = true;
		long n;

		/* Non-stop: the threads GDB resumed run until a packet
		 * comes (served with them paused) or one of them stops. */
		if (nonstop_running(s)) {
			rc = nonstop_run(s, &packet);
			if (rc) {
				log_msg("cannot reply: %s", strerror(-rc));
				rc = 0;
				break;
			}
			if (!packet)
				continue;
		}
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = hwt_err_set(err, errno, "poll: %s", strerror(errno));
			break;
		}
		/* A debugger that disconnects and connects again at once
		 * (GDB's disconnect, then target remote) has closed this
		 * connection first: it is the next one, not a second. */
		if (p[1].revents & POLLIN && !client_gone(fd) &&
		    listener_refuse_pending(l))
			log_msg("refused a second client: one debugger at a time");
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = rsp_conn_fill(&s->conn);
		if (n <= 0) {
			if (n < 0)
				log_msg("connection error: %s", strerror((int)-n));
			break;
		}
		rc = drain(s, &pk, &state);
		if (rc) {
			log_msg("cannot reply: %s", strerror(-rc));
			rc = 0;
			break;
		}
	}
	/* GDB went away without D or k: the program waits for the next
	 * one where it stopped, or nothing may stay stopped for a debugger
	 * that is gone. */
	s->hung_up = state == SESSION_ON;
	if (s->hung_up && !keep)
		s->ops->end(s, SRV_END_HANGUP);
	hostio_close_all(s);
	nonstop_reset(s);
	rsp_conn_free(&s->conn);
	close(fd);
	return rc;
}

void server_close(struct server *s)
{
	srv_invalidate(s);
	if (s->ops)
		s->ops->close(s);
	free(s->threads);
	lldb_trace_free(s->lldb);
	free(s->libs_xml);
	free(s->exec_path);
	if (s->img)
		hwt_image_free(s->img);
	memset(s, 0, sizeof(*s));
}
