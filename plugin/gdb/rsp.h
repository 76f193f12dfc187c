/* SPDX-License-Identifier: BSD-2-Clause */
/* rsp.h - GDB remote serial protocol framing.
 *
 * The parser is a pure function over a byte buffer (plus a two-field
 * state), so it can be fuzzed and unit tested without sockets; the
 * connection half (rsp_conn_*) moves bytes between a socket and it.
 */
#ifndef HWT_RSP_H
#define HWT_RSP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest decoded payload we accept and the PacketSize we advertise. A
 * large size lets GDB fetch big qXfer objects (btrace) in few round
 * trips; incoming packets beyond it are refused, never truncated. */
#define RSP_MAX_PAYLOAD 0x4000u
/* Raw bytes between '$' and '#' we scan before calling a packet
 * oversized: escapes and run-lengths can only shrink the payload, but a
 * payload of RSP_MAX_PAYLOAD escaped bytes takes twice as many. */
#define RSP_MAX_RAW (2u * RSP_MAX_PAYLOAD)

enum rsp_event {
	RSP_NEED_MORE = 0,   /* no complete unit in the buffer yet */
	RSP_PACKET,          /* a packet with a good checksum: out filled */
	RSP_ACK,             /* '+' */
	RSP_NAK,             /* '-': resend the last packet */
	RSP_INTERRUPT,       /* 0x03 */
	RSP_BAD_CHECKSUM,    /* framing fine, checksum wrong */
	RSP_MALFORMED,       /* checksum digits not hex, or a bad escape or
			      * run length in the payload */
	RSP_OVERSIZED,       /* the end of a packet longer than we accept */
	RSP_JUNK,            /* a byte outside any packet, skipped */
};

struct rsp_parser {
	bool skipping;       /* inside an oversized packet, dropping bytes */
	uint8_t skip_tail;   /* checksum digits still to drop after '#' */
};

struct rsp_packet {
	uint8_t data[RSP_MAX_PAYLOAD + 1];  /* decoded, NUL-terminated */
	size_t len;
};

/* Look at buf[0..len): returns the first event and sets *consumed to the
 * bytes it used (always > 0 unless RSP_NEED_MORE with nothing usable).
 * RSP_PACKET fills out. Never reads beyond len, never writes beyond out. */
enum rsp_event rsp_parse(struct rsp_parser *st, const uint8_t *buf,
			 size_t len, size_t *consumed, struct rsp_packet *out);

/* Binary escaping for replies ('$', '#', '}', '*' become '}' x^0x20).
 * Writes at most cap bytes to out; returns how many input bytes fit. */
size_t rsp_escape(const uint8_t *in, size_t len, uint8_t *out, size_t cap,
		  size_t *out_len);

/* ---- connection -------------------------------------------------------- */

struct rsp_conn {
	int fd;
	bool noack;                  /* after QStartNoAckMode */
	struct rsp_parser parser;
	uint8_t in[RSP_MAX_RAW + 64];
	size_t in_len;
	/* The last packet sent, framed, for '-' retransmission. */
	uint8_t *last;
	size_t last_len, last_cap;
};

void rsp_conn_init(struct rsp_conn *c, int fd);
void rsp_conn_free(struct rsp_conn *c);
/* Read what the socket has (blocking once) into the buffer. Returns bytes
 * read, 0 at end of file, negative errno on error. */
long rsp_conn_fill(struct rsp_conn *c);
/* Next event from the buffered bytes (RSP_NEED_MORE: fill again). */
enum rsp_event rsp_conn_next(struct rsp_conn *c, struct rsp_packet *out);
/* Frame and send a reply; binary replies get escaped. Returns 0 or a
 * negative errno. */
int rsp_send(struct rsp_conn *c, const void *data, size_t len, bool binary);
int rsp_send_str(struct rsp_conn *c, const char *s);
/* Resend the last packet (after a '-'). */
int rsp_resend(struct rsp_conn *c);
/* Send raw bytes ('+', '-'). */
int rsp_send_raw(struct rsp_conn *c, const void *data, size_t len);
/* An asynchronous notification (%...#cs, non-stop mode): not
 * acknowledged, so never sent again on a '-'. */
int rsp_send_notification(struct rsp_conn *c, const char *s);

#endif
