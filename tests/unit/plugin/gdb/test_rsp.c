// SPDX-License-Identifier: BSD-2-Clause
/* test_rsp.c - the remote-protocol parser (plugin/gdb/rsp.c) on good,
 * split, corrupt, oversized and random input: every byte it sees comes
 * from the network. */
#include <stdlib.h>
#include <string.h>

#include "rsp.h"
#include "check.h"

static struct rsp_packet pk;

static size_t framed(const char *payload, char *out)
{
	unsigned sum = 0;

	for (const char *p = payload; *p; p++)
		sum += (unsigned char)*p;
	return (size_t)sprintf(out, "$%s#%02x", payload, sum & 0xff);
}

static enum rsp_event parse(const char *buf, size_t len, size_t *used)
{
	struct rsp_parser st = { 0 };

	return rsp_parse(&st, (const uint8_t *)buf, len, used, &pk);
}

int main(void)
{
	char buf[256];
	size_t n, used;
	enum rsp_event ev;

	n = framed("qC", buf);
	ev = parse(buf, n, &used);
	CHECK("packet", ev == RSP_PACKET && used == n && pk.len == 2 &&
	      strcmp((char *)pk.data, "qC") == 0, "ev %d used %zu", ev, used);
	ev = parse(buf, n - 1, &used);
	CHECK("split packet waits", ev == RSP_NEED_MORE && used == 0, "ev %d", ev);
	buf[n - 1] = buf[n - 1] == '0' ? '1' : '0';
	ev = parse(buf, n, &used);
	CHECK("bad checksum", ev == RSP_BAD_CHECKSUM && used == n, "ev %d", ev);
	ev = parse("$qC#zz", 6, &used);
	CHECK("checksum not hex", ev == RSP_MALFORMED && used == 6, "ev %d", ev);
	CHECK("ack, nak, interrupt, junk",
	      parse("+", 1, &used) == RSP_ACK && parse("-", 1, &used) == RSP_NAK &&
	      parse("\x03", 1, &used) == RSP_INTERRUPT &&
	      parse("x", 1, &used) == RSP_JUNK && used == 1, "events");
	ev = parse("$ab$qC#b4", 9, &used);
	CHECK("new '$' abandons a packet", ev == RSP_MALFORMED && used == 3,
	      "ev %d used %zu", ev, used);

	n = framed("X}\x03}]", buf);
	ev = parse(buf, n, &used);
	CHECK("escapes", ev == RSP_PACKET && pk.len == 3 && pk.data[1] == '#' &&
	      pk.data[2] == '}', "ev %d len %zu", ev, pk.len);
	n = framed("0* ", buf);
	ev = parse(buf, n, &used);
	CHECK("run length", ev == RSP_PACKET && strcmp((char *)pk.data, "0000") == 0,
	      "ev %d '%s'", ev, (char *)pk.data);
	n = framed("ab}", buf);
	CHECK("escape at the end", parse(buf, n, &used) == RSP_MALFORMED, "ev");
	n = framed("*!", buf);
	CHECK("run length with nothing to repeat", parse(buf, n, &used) == RSP_MALFORMED, "ev");
	n = framed("a*\x10", buf);
	CHECK("run length count below range", parse(buf, n, &used) == RSP_MALFORMED, "ev");

	/* An oversized packet arriving in pieces is one OVERSIZED event,
	 * and the packet after it parses. */
	{
		size_t big = RSP_MAX_RAW + 100;
		char *raw = malloc(big + 16);
		struct rsp_parser st = { 0 };
		size_t at = 0, total;
		int events = 0, packets = 0;

		raw[0] = '$';
		memset(raw + 1, 'q', big);
		memcpy(raw + 1 + big, "#00", 3);
		total = 1 + big + 3;
		total += framed("qC", raw + total);
		/* Fed 1000 bytes at a time through a window the size of
		 * the connection's buffer, as rsp_conn_next does. */
		static uint8_t win[RSP_MAX_RAW + 64];
		size_t wlen = 0;

		while (at < total || wlen) {
			size_t take = total - at < 1000 ? total - at : 1000;

			if (take > sizeof(win) - wlen)
				take = sizeof(win) - wlen;
			memcpy(win + wlen, raw + at, take);
			wlen += take;
			at += take;
			do {
				ev = rsp_parse(&st, win, wlen, &used, &pk);
				memmove(win, win + used, wlen - used);
				wlen -= used;
				events += ev == RSP_OVERSIZED;
				packets += ev == RSP_PACKET;
			} while (used > 0);
			if (take == 0)
				break;
		}
		CHECK("oversized packet in pieces", events == 1 && packets == 1 &&
		      wlen == 0, "oversized %d packets %d left %zu", events,
		      packets, wlen);
		free(raw);
	}
	/* Run lengths may not expand beyond the payload bound. */
	{
		char *raw = malloc(3 * 2000 + 16);
		size_t len = 0;
		unsigned sum = 0;

		raw[len++] = '$';
		raw[len++] = 'a';
		for (int i = 0; i < 2000; i++) {
			raw[len++] = '*';
			raw[len++] = '~';
		}
		for (size_t i = 1; i < len; i++)
			sum += (unsigned char)raw[i];
		len += (size_t)sprintf(raw + len, "#%02x", sum & 0xff);
		ev = parse(raw, len, &used);
		CHECK("run length bomb", ev == RSP_OVERSIZED && used == len, "ev %d", ev);
		free(raw);
	}
	/* Escaping round trip over every byte value. */
	{
		uint8_t in[256], esc[512 + 8];
		char frame[600];
		size_t elen;
		unsigned sum = 0;

		for (int i = 0; i < 256; i++)
			in[i] = (uint8_t)i;
		CHECK("escape fits", rsp_escape(in, 256, esc, sizeof(esc), &elen) == 256,
		      "short");
		frame[0] = '$';
		memcpy(frame + 1, esc, elen);
		for (size_t i = 0; i < elen; i++)
			sum += esc[i];
		n = 1 + elen + (size_t)sprintf(frame + 1 + elen, "#%02x", sum & 0xff);
		ev = parse(frame, n, &used);
		CHECK("escape round trip", ev == RSP_PACKET && pk.len == 256 &&
		      memcmp(pk.data, in, 256) == 0, "ev %d len %zu", ev, pk.len);
	}
	/* Random bytes: always progress or wait, never overrun. */
	{
		uint8_t rnd[512];
		unsigned seed = 12345;
		bool ok = true;

		for (int iter = 0; iter < 20000 && ok; iter++) {
			struct rsp_parser st = { 0 };
			size_t len = (size_t)(seed % sizeof(rnd)), at = 0;

			for (size_t i = 0; i < len; i++) {
				seed = seed * 1103515245u + 12345u;
				rnd[i] = (uint8_t)(seed >> 16);
				/* Make framing bytes common. */
				if ((seed >> 8) % 7 == 0)
					rnd[i] = "$#}*+-"[(seed >> 4) % 6];
			}
			while (at < len) {
				ev = rsp_parse(&st, rnd + at, len - at, &used, &pk);
				if (used > len - at || pk.len > RSP_MAX_PAYLOAD)
					ok = false;
				if (used == 0)
					break;
				at += used;
			}
		}
		CHECK("random input", ok, "overrun");
	}
	return check_exit();
}
