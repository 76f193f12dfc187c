// SPDX-License-Identifier: BSD-2-Clause
/* rsp.c - GDB remote serial protocol framing: a pure parser over bytes and
 * a thin socket layer. Every byte comes from the network: lengths are
 * bounded before anything is copied, and a bad packet is reported as an
 * event so the server can answer it and go on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hwt-common.h"
#include "rsp.h"
#include "util.h"

/* Drop the rest of an oversized packet: its body up to '#', then the two
 * checksum characters. One RSP_OVERSIZED event per packet. */
static enum rsp_event skip_oversized(struct rsp_parser *st, const uint8_t *buf,
				     size_t len, size_t *consumed)
{
	size_t i = 0;

	if (st->skip_tail == 0) {
		while (i < len && buf[i] != '#')
			i++;
		if (i == len) {
			*consumed = len;
			return RSP_NEED_MORE;
		}
		i++;
		st->skip_tail = 2;
	}
	while (i < len && st->skip_tail > 0) {
		i++;
		st->skip_tail--;
	}
	*consumed = i;
	if (st->skip_tail > 0)
		return RSP_NEED_MORE;
	st->skipping = false;
	return RSP_OVERSIZED;
}

/* Undo '}' escapes and '*' run lengths of body[0..n) into out. */
static enum rsp_event decode_body(const uint8_t *body, size_t n,
				  struct rsp_packet *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		uint8_t c = body[i];

		if (c == '}') {
			if (++i == n)
				return RSP_MALFORMED;
			c = body[i] ^ 0x20;
		} else if (c == '*') {
			/* The count character encodes repeats + 29; GDB
			 * only emits printable counts. */
			if (++i == n || o == 0 || body[i] < 29 + 1 ||
			    body[i] > 126)
				return RSP_MALFORMED;
			size_t rep = (size_t)body[i] - 29;

			if (rep > RSP_MAX_PAYLOAD - o)
				return RSP_OVERSIZED;
			memset(out->data + o, out->data[o - 1], rep);
			o += rep;
			continue;
		}
		if (o == RSP_MAX_PAYLOAD)
			return RSP_OVERSIZED;
		out->data[o++] = c;
	}
	out->data[o] = '\0';
	out->len = o;
	return RSP_PACKET;
}

enum rsp_event rsp_parse(struct rsp_parser *st, const uint8_t *buf,
			 size_t len, size_t *consumed, struct rsp_packet *out)
{
	size_t hash, limit, rest;
	enum rsp_event ev;
	uint8_t sum = 0;
	int hi, lo;

	*consumed = 0;
	if (len == 0)
		return RSP_NEED_MORE;
	if (st->skipping)
		return skip_oversized(st, buf, len, consumed);
	switch (buf[0]) {
	case '+':
		*consumed = 1;
		return RSP_ACK;
	case '-':
		*consumed = 1;
		return RSP_NAK;
	case 0x03:
		*consumed = 1;
		return RSP_INTERRUPT;
	case '$':
		break;
	default:
		*consumed = 1;
		return RSP_JUNK;
	}
	limit = len < RSP_MAX_RAW + 1 ? len : RSP_MAX_RAW + 1;
	for (hash = 1; hash < limit; hash++) {
		if (buf[hash] == '#')
			break;
		/* A new '$' means the sender gave up on this packet. */
		if (buf[hash] == '$') {
			*consumed = hash;
			return RSP_MALFORMED;
		}
	}
	if (hash == limit) {
		if (len <= RSP_MAX_RAW)
			return RSP_NEED_MORE;
		st->skipping = true;
		st->skip_tail = 0;
		ev = skip_oversized(st, buf + hash, len - hash, &rest);
		*consumed = hash + rest;
		return ev;
	}
	if (len < hash + 3)
		return RSP_NEED_MORE;
	*consumed = hash + 3;
	hi = hwt_hex_digit(buf[hash + 1]);
	lo = hwt_hex_digit(buf[hash + 2]);
	if (hi < 0 || lo < 0)
		return RSP_MALFORMED;
	for (size_t i = 1; i < hash; i++)
		sum = (uint8_t)(sum + buf[i]);
	if (sum != (uint8_t)(hi << 4 | lo))
		return RSP_BAD_CHECKSUM;
	return decode_body(buf + 1, hash - 1, out);
}

size_t rsp_escape(const uint8_t *in, size_t len, uint8_t *out, size_t cap,
		  size_t *out_len)
{
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		uint8_t c = in[i];
		bool esc = c == '$' || c == '#' || c == '}' || c == '*';

		if (o + (esc ? 2 : 1) > cap)
			break;
		if (esc) {
			out[o++] = '}';
			c ^= 0x20;
		}
		out[o++] = c;
	}
	*out_len = o;
	return i;
}

/* ---- connection -------------------------------------------------------- */

void rsp_conn_init(struct rsp_conn *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
}

void rsp_conn_free(struct rsp_conn *c)
{
	free(c->last);
	c->last = NULL;
}

long rsp_conn_fill(struct rsp_conn *c)
{
	ssize_t n;

	do
		n = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	c->in_len += (size_t)n;
	return (long)n;
}

enum rsp_event rsp_conn_next(struct rsp_conn *c, struct rsp_packet *out)
{
	for (;;) {
		size_t used;
		enum rsp_event ev = rsp_parse(&c->parser, c->in, c->in_len,
					      &used, out);

		memmove(c->in, c->in + used, c->in_len - used);
		c->in_len -= used;
		/* Skipping an oversized body consumes without an event. */
		if (ev != RSP_NEED_MORE || used == 0)
			return ev;
	}
}

int rsp_send_raw(struct rsp_conn *c, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len > 0) {
		ssize_t n = write(c->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int rsp_send(struct rsp_conn *c, const void *data, size_t len, bool binary)
{
	const uint8_t *in = data;
	size_t need = 2 * len + 4, body;
	uint8_t sum = 0;
	static const char hex[] = "0123456789abcdef";

	if (need > c->last_cap) {
		uint8_t *p = realloc(c->last, need);

		if (!p)
			return -ENOMEM;
		c->last = p;
		c->last_cap = need;
	}
	c->last[0] = '$';
	if (binary) {
		rsp_escape(in, len, c->last + 1, need - 4, &body);
	} else {
		memcpy(c->last + 1, in, len);
		body = len;
	}
	for (size_t i = 1; i <= body; i++)
		sum = (uint8_t)(sum + c->last[i]);
	c->last[body + 1] = '#';
	c->last[body + 2] = (uint8_t)hex[sum >> 4];
	c->last[body + 3] = (uint8_t)hex[sum & 15];
	c->last_len = body + 4;
	return rsp_send_raw(c, c->last, c->last_len);
}

int rsp_send_notification(struct rsp_conn *c, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = strlen(s);
	uint8_t *buf = malloc(len + 4);
	uint8_t sum = 0;
	int rc;

	if (!buf)
		return -ENOMEM;
	buf[0] = '%';
	memcpy(buf + 1, s, len);
	for (size_t i = 0; i < len; i++)
		sum = (uint8_t)(sum + (uint8_t)s[i]);
	buf[len + 1] = '#';
	buf[len + 2] = (uint8_t)hex[sum >> 4];
	buf[len + 3] = (uint8_t)hex[sum & 15];
	rc = rsp_send_raw(c, buf, len + 4);
	free(buf);
	return rc;
}

int rsp_send_str(struct rsp_conn *c, const char *s)
{
	return rsp_send(c, s, strlen(s), false);
}

int rsp_resend(struct rsp_conn *c)
{
	if (!c->last_len)
		return 0;
	return rsp_send_raw(c, c->last, c->last_len);
}
