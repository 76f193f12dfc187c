// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_rsp.c - hwt-server's remote-protocol parser (plugin/gdb/rsp.c).
 *
 * Input: [window byte][bytes as they arrive from the network]. The bytes
 * go through the parser the way rsp_conn_next feeds it: in pieces of
 * 1 + window bytes into a buffer of the connection's size, consumed bytes
 * dropped. Checked: the parser never claims more than it was given, never
 * returns a payload beyond RSP_MAX_PAYLOAD or without its NUL, and always
 * makes progress once the buffer is full. Then the input (bounded) is
 * escaped with rsp_escape, framed, and must parse back to itself.
 * Seeds: a GDB 13 session's packets, written with HWT_FUZZ_SEEDS=DIR.
 */
#include "fuzz-common.h"
#include "../../plugin/gdb/rsp.h"

static struct rsp_packet pk;
static uint8_t win[RSP_MAX_RAW + 64];

static void write_seeds(const char *dir)
{
	static const char *const seeds[] = {
		"\x10+$qSupported:multiprocess+;swbreak+;xmlRegisters=i386#6a",
		"\x07$vMustReplyEmpty#3a+$QStartNoAckMode#b0$Hg0#df",
		"\x01$qXfer:btrace:read:all:1000,1000#e2$m7ffff7fc3000,40#00",
		"\x20$X1000,4:}\x03}\x04*$#00$Z0,401000,1#ab\x03",
		"\x05$0* #7e$bs#d5$bc#c5$vCont;s:2a#00-",
	};
	char name[32];

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		snprintf(name, sizeof(name), "session-%zu", i);
		fuzz_write_seed(dir, name, seeds[i], strlen(seeds[i]), NULL, 0);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("HWT_FUZZ_SEEDS");

	(void)argc;
	(void)argv;
	if (dir) {
		write_seeds(dir);
		exit(0);
	}
	return 0;
}

static void stream(const uint8_t *data, size_t size, size_t piece)
{
	struct rsp_parser st = { 0 };
	size_t at = 0, wlen = 0;

	while (at < size) {
		size_t take = size - at < piece ? size - at : piece, used;

		if (take > sizeof(win) - wlen)
			take = sizeof(win) - wlen;
		memcpy(win + wlen, data + at, take);
		wlen += take;
		at += take;
		do {
			enum rsp_event ev = rsp_parse(&st, win, wlen, &used, &pk);

			if (used > wlen)
				abort();
			if (ev == RSP_PACKET &&
			    (pk.len > RSP_MAX_PAYLOAD || pk.data[pk.len] != '\0'))
				abort();
			memmove(win, win + used, wlen - used);
			wlen -= used;
		} while (used > 0);
		/* A full buffer must always hold a decision. */
		if (wlen == sizeof(win))
			abort();
	}
}

static void round_trip(const uint8_t *data, size_t size)
{
	static uint8_t frame[2 * RSP_MAX_PAYLOAD + 8];
	struct rsp_parser st = { 0 };
	size_t elen, used, n = size < RSP_MAX_PAYLOAD ? size : RSP_MAX_PAYLOAD;
	unsigned sum = 0;

	if (rsp_escape(data, n, frame + 1, sizeof(frame) - 4, &elen) != n)
		abort();
	frame[0] = '$';
	for (size_t i = 1; i <= elen; i++)
		sum += frame[i];
	snprintf((char *)frame + 1 + elen, 4, "#%02x", sum & 0xff);
	if (rsp_parse(&st, frame, elen + 4, &used, &pk) != RSP_PACKET ||
	    used != elen + 4 || pk.len != n || memcmp(pk.data, data, n) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	stream(data + 1, size - 1, 1 + (size_t)data[0] * 64);
	round_trip(data + 1, size - 1);
	return 0;
}
