/* packet.c - what every packet handler shares: strict hex arguments,
 * "offset,length" pairs, thread ids and qXfer's partial replies.
 *
 * The handlers (btrace.c, vcont.c, breakpoints.c, writes.c, ...) and the
 * dispatcher in server.c all use these; keeping them out of server.c means
 * the handlers depend on this file and server.c depends on the handlers,
 * never both ways. */
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

bool srv_thread_by_id(struct server *s, const char *id, size_t *idx)
{
	uint64_t tid;

	if (strcmp(id, "-1") == 0 || strcmp(id, "0") == 0) {
		*idx = s->stop_thread;
		return true;
	}
	if (!srv_parse_hex(id, '\0', &tid, NULL))
		return false;
	for (size_t i = 0; i < s->nthreads; i++)
		if ((uint64_t)s->threads[i].tid == tid) {
			*idx = i;
			return true;
		}
	return false;
}
