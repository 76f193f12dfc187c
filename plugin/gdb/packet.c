// SPDX-License-Identifier: BSD-2-Clause
/* packet.c - what every packet handler shares: strict hex arguments,
 * "offset,length" pairs, thread ids and qXfer's partial replies.
 *
 * The handlers (btrace.c, vcont.c, breakpoints.c, writes.c, ...) and the
 * dispatcher in server.c all use these; keeping them out of server.c means
 * the handlers depend on this file and server.c depends on the handlers,
 * never both ways. */
#include <stdio.h>
#include <string.h>

#include "server.h"

/* Strict hex number: at least one digit, at most 16, nothing else up to
 * the terminator `end`. */
bool srv_parse_hex(const char *s, char end, uint64_t *v, const char **rest)
{
	uint64_t x = 0;
	int n = 0;

	for (; *s && *s != end; s++, n++) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return false;
		if (n == 16)
			return false;
		x = x << 4 | (uint64_t)d;
	}
	if (n == 0 || *s != end)
		return false;
	*v = x;
	if (rest)
		*rest = *s ? s + 1 : s;
	return true;
}

bool srv_parse_offlen(const char *s, uint64_t *off, uint64_t *len)
{
	const char *rest;

	return srv_parse_hex(s, ',', off, &rest) && srv_parse_hex(rest, '\0', len, NULL);
}

int srv_xfer_reply(struct server *s, const void *doc, size_t doclen,
		   uint64_t off, uint64_t len)
{
	static uint8_t buf[RSP_MAX_PAYLOAD];
	size_t n;

	if (off > doclen)
		return rsp_send_str(&s->conn, "E.Offset beyond the object's end.");
	n = doclen - off;
	if (len > RSP_MAX_PAYLOAD - 1)
		len = RSP_MAX_PAYLOAD - 1;
	buf[0] = n > len ? 'm' : 'l';
	if (n > len)
		n = (size_t)len;
	memcpy(buf + 1, (const char *)doc + off, n);
	return rsp_send(&s->conn, buf, n + 1, true);
}

const char *srv_tid_str(const struct server *s, int64_t tid, char *buf,
			size_t cap)
{
	if (s->multiprocess)
		snprintf(buf, cap, "p%llx.%llx", (unsigned long long)s->pid,
			 (unsigned long long)tid);
	else
		snprintf(buf, cap, "%llx", (unsigned long long)tid);
	return buf;
}

/* One part of a thread id, up to end: hex, or -1 for all. *rest is
 * past end. */
static bool parse_part(const char *text, char end, int64_t *v,
		       const char **rest)
{
	uint64_t u;

	if (text[0] == '-' && text[1] == '1' && text[2] == end) {
		*v = -1;
		if (rest)
			*rest = end ? text + 3 : text + 2;
		return true;
	}
	if (!srv_parse_hex(text, end, &u, rest) || u > INT32_MAX)
		return false;
	*v = (int64_t)u;
	return true;
}

bool srv_parse_tid(const struct server *s, const char *id, int64_t *tid)
{
	int64_t pid;
	const char *rest;

	if (id[0] != 'p')
		return parse_part(id, '\0', tid, NULL);
	/* pPID.TID, pPID (all of its threads), p-1.-1 (all). */
	if (strchr(id, '.')) {
		if (!parse_part(id + 1, '.', &pid, &rest) ||
		    !parse_part(rest, '\0', tid, NULL))
			return false;
	} else {
		if (!parse_part(id + 1, '\0', &pid, NULL))
			return false;
		*tid = -1;
	}
	return pid == -1 || pid == 0 || pid == s->pid;
}

bool srv_thread_by_id(struct server *s, const char *id, size_t *idx)
{
	int64_t tid;

	if (!srv_parse_tid(s, id, &tid))
		return false;
	if (tid == -1 || tid == 0) {
		*idx = s->stop_thread;
		return true;
	}
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid) {
			*idx = i;
			return true;
		}
	return false;
}
