// SPDX-License-Identifier: BSD-2-Clause
/* writes.c - changing the target: G (all registers), P (one register), M
 * (memory, hex) and X (memory, binary). A recording cannot be changed;
 * the target says so by having no reg_set / mem_write. */
#include <stdio.h>
#include <string.h>

#include "server.h"
#include "util.h"

static const char READ_ONLY[] =
	"E.The target is a crashed process recorded in a core: it cannot be "
	"changed.";
static const char PAST[] =
	"E.The past cannot be changed: return to the present first "
	"(record goto end, or continue to the end of the history).";

/* n bytes from 2n hex digits; false on anything else. */
static bool unhex(const char *in, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int hi = hwt_hex_digit(in[2 * i]);
		int lo = hi < 0 ? -1 : hwt_hex_digit(in[2 * i + 1]);

		if (lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

static int reply_err(struct server *s, const struct hwt_err *err)
{
	char msg[600];

	snprintf(msg, sizeof(msg), "E.%s", err->msg);
	return rsp_send_str(&s->conn, msg);
}

static int write_reg(struct server *s, const char *arg)
{
	uint8_t val[TDESC_MAX_REG_SIZE];
	struct hwt_err err = { 0 };
	uint64_t regno;
	const char *hex;
	size_t size;

	if (!srv_parse_hex(arg, '=', &regno, &hex) ||
	    regno >= (uint64_t)srv_nregs(s))
		return rsp_send_str(&s->conn, "E.Malformed P packet: P REG=VALUE.");
	size = tdesc_reg_size((int)regno);
	if (strlen(hex) != 2 * size || !unhex(hex, val, size))
		return rsp_send_str(&s->conn, "E.Register value of the wrong size.");
	if (s->ops->reg_set(s, s->gthread, (int)regno, val, &err))
		return reply_err(s, &err);
	return rsp_send_str(&s->conn, "OK");
}

/* 'x' digits mark registers GDB does not know and leaves alone. */
static int write_all_regs(struct server *s, const char *hex)
{
	struct hwt_err err = { 0 };
	size_t off = 0, total = strlen(hex);

	for (int r = 0; r < srv_nregs(s); r++) {
		uint8_t val[TDESC_MAX_REG_SIZE];
		size_t size = tdesc_reg_size(r);

		if (off + 2 * size > total)
			break;
		if (unhex(hex + off, val, size) &&
		    s->ops->reg_set(s, s->gthread, r, val, &err))
			return reply_err(s, &err);
		off += 2 * size;
	}
	if (off != total)
		return rsp_send_str(&s->conn, "E.Malformed G packet.");
	return rsp_send_str(&s->conn, "OK");
}

static int write_mem(struct server *s, const char *pkt, size_t pktlen)
{
	static uint8_t data[RSP_MAX_PAYLOAD];
	bool binary = pkt[0] == 'X';
	uint64_t addr, len;
	const char *rest, *payload;
	size_t have;
	long n;

	if (!srv_parse_hex(pkt + 1, ',', &addr, &rest) ||
	    !srv_parse_hex(rest, ':', &len, &payload))
		return rsp_send_str(&s->conn, "E.Malformed memory write: "
				    "M ADDR,LENGTH:DATA.");
	have = pktlen - (size_t)(payload - pkt);
	if (len > sizeof(data) || have != (binary ? len : 2 * len) ||
	    (!binary && !unhex(payload, data, (size_t)len)))
		return rsp_send_str(&s->conn, "E.Memory write data does not "
				    "match its length.");
	if (binary)
		memcpy(data, payload, (size_t)len);
	if (len == 0)
		return rsp_send_str(&s->conn, "OK");
	n = s->ops->mem_write(s, addr, data, (size_t)len);
	if (n < 0 || (uint64_t)n != len)
		return rsp_send_str(&s->conn, "E0e");
	/* Memory changed under the replayed code: re-read histories. */
	srv_invalidate(s);
	return rsp_send_str(&s->conn, "OK");
}

bool writes_handle(struct server *s, const char *pkt, size_t len, int *rc)
{
	if (!strchr("GPMX", pkt[0]) || !pkt[0])
		return false;
	/* "X" with no payload is GDB probing binary-download support. */
	if (!s->ops->reg_set || !s->ops->mem_write)
		*rc = rsp_send_str(&s->conn, READ_ONLY);
	else if (srv_in_past(s))
		*rc = rsp_send_str(&s->conn, PAST);
	else if (pkt[0] == 'G')
		*rc = write_all_regs(s, pkt + 1);
	else if (pkt[0] == 'P')
		*rc = write_reg(s, pkt + 1);
	else
		*rc = write_mem(s, pkt, len);
	return true;
}
