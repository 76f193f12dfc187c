// SPDX-License-Identifier: BSD-2-Clause
/* vcont.c - resume packets: vCont? and vCont;ACTION[:TID]... (c, C, s,
 * S, t), the older c/s/C/S, and reverse bs/bc. All-stop: every resume is
 * answered with one stop reply once everything has stopped; non-stop
 * mode's vCont goes to nonstop.c.
 *
 * A thread GDB moved back into its history (bs/bc, or a thread of a
 * crashed process) moves forward through that history first; a continue
 * that reaches the history's end then goes on as the target's own resume,
 * which runs a live process for real and, for a recording, reports the
 * end of the history. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server.h"
#include "signals.h"

#define MAX_ACTIONS 64
#define REPLY_MAX 1024

/* The thread the actions move first: the thread-specific action (GDB
 * lists it first), else the continue thread. */
static bool lead_thread(struct server *s, const struct srv_action *a,
			size_t n, size_t *ti)
{
	char id[24];

	*ti = s->cthread;
	if (!n || a[0].tid <= 0)
		return true;
	snprintf(id, sizeof(id), "%llx", (unsigned long long)a[0].tid);
	return srv_thread_by_id(s, id, ti);
}

static int forward(struct server *s, const struct srv_action *a, size_t n)
{
	char reply[REPLY_MAX];
	uint64_t pc;
	size_t ti;

	if (!lead_thread(s, a, n, &ti))
		return rsp_send_str(&s->conn, "E.No such thread.");
	/* In the past, forward motion replays: it stops at the end of the
	 * history (replaylog:end) as GDB's record targets do, and only the
	 * next resume runs the program. */
	if (srv_replaying(s, ti, &pc)) {
		reverse_resume(s, ti, HWT_FORWARD, a[0].kind == 's', reply,
			       sizeof(reply));
		return rsp_send_str(&s->conn, reply);
	}
	s->ops->resume(s, a, n, reply, sizeof(reply));
	return rsp_send_str(&s->conn, reply);
}

static bool parse_signal(const char *p, int *sig, const char **rest)
{
	uint64_t g = 0;
	int n = 0;

	for (; n < 2 && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'));
	     p++, n++)
		g = g << 4 | (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
	if (n != 2)
		return false;
	*sig = hwt_linux_signal((int)g);
	*rest = p;
	return true;
}

/* ";c", ";s:TID", ";C0b:TID", ... */
static int handle_vcont(struct server *s, const char *p)
{
	struct srv_action a[MAX_ACTIONS];
	size_t n = 0, keep = 0;

	while (*p == ';') {
		struct srv_action *x = &a[n];
		char kind = p[1];
		int64_t tid;

		if (n == MAX_ACTIONS)
			return rsp_send_str(&s->conn, "E.Too many vCont actions.");
		if (!kind || !strchr("cCsSt", kind))
			return rsp_send_str(&s->conn, "E.Unsupported vCont action.");
		x->kind = kind == 'C' || kind == 'c' ? 'c' : kind == 't' ? 't' : 's';
		x->signal = 0;
		x->tid = -1;
		p += 2;
		if ((kind == 'C' || kind == 'S') && !parse_signal(p, &x->signal, &p))
			return rsp_send_str(&s->conn, "E.Bad signal in vCont.");
		if (*p == ':') {
			const char *end = strchr(p + 1, ';');
			char id[24];
			size_t len = end ? (size_t)(end - p - 1) : strlen(p + 1);

			if (len == 0 || len >= sizeof(id))
				return rsp_send_str(&s->conn, "E.Bad thread id.");
			memcpy(id, p + 1, len);
			id[len] = '\0';
			if (!srv_parse_tid(s, id, &tid) || tid == 0)
				return rsp_send_str(&s->conn, "E.Bad thread id.");
			x->tid = tid;
			p += 1 + len;
		}
		n++;
	}
	if (*p || n == 0)
		return rsp_send_str(&s->conn, "E.Malformed vCont.");
	if (s->non_stop)
		return nonstop_vcont(s, a, n);
	/* All-stop: t (stop) leaves a thread stopped, as it is already. */
	for (size_t i = 0; i < n; i++)
		if (a[i].kind != 't')
			a[keep++] = a[i];
	if (keep == 0)
		return rsp_send_str(&s->conn, "OK");
	return forward(s, a, keep);
}

bool vcont_handle(struct server *s, const char *p, int *rc)
{
	struct srv_action a = { .tid = -1 };
	char reply[REPLY_MAX];
	const char *rest;

	if (strcmp(p, "vCont?") == 0) {
		*rc = rsp_send_str(&s->conn, "vCont;c;C;s;S;t");
	} else if (strncmp(p, "vCont;", 6) == 0) {
		*rc = handle_vcont(s, p + 5);
	} else if (strcmp(p, "bs") == 0 || strcmp(p, "bc") == 0) {
		reverse_resume(s, s->cthread, HWT_BACKWARD, p[1] == 's', reply,
			       sizeof(reply));
		*rc = rsp_send_str(&s->conn, reply);
	} else if (p[0] == 'c' || p[0] == 's') {
		/* "c ADDR" resumes elsewhere: GDB itself never sends it. */
		if (p[1])
			*rc = rsp_send_str(&s->conn, "E.Resuming at another "
					   "address is not supported.");
		else {
			a.kind = p[0];
			*rc = forward(s, &a, 1);
		}
	} else if (p[0] == 'C' || p[0] == 'S') {
		if (!parse_signal(p + 1, &a.signal, &rest) || *rest)
			*rc = rsp_send_str(&s->conn, "E.Malformed C/S packet.");
		else {
			a.kind = p[0] == 'C' ? 'c' : 's';
			*rc = forward(s, &a, 1);
		}
	} else {
		return false;
	}
	return true;
}
