// SPDX-License-Identifier: BSD-2-Clause
/* monitor.c - gdbserver's monitor commands (qRcmd), which GDB users and
 * GDB's own testsuite send: `monitor help`, `monitor exit` (the server
 * ends with this session, killing a program it started and letting an
 * attached one go, as gdbserver does) and `monitor set debug 0|1` (every
 * packet received logged on stderr). What a command prints goes back as
 * 'O' packets before its OK. */
#include <stdio.h>
#include <string.h>

#include "server.h"
#include "util.h"

#define MAX_COMMAND 256

static const char HELP[] =
	"The following monitor commands are supported:\n"
	"  set debug <0|1>\n"
	"    Enable or disable logging every packet received (on the "
	"server's stderr)\n"
	"  help\n"
	"    Print this message\n"
	"  exit\n"
	"    Quit the server: a program it started is killed, an attached one "
	"let go\n";

/* Text as one console output packet ('O' and hex). */
static int print(struct server *s, const char *text)
{
	static const char hex[] = "0123456789abcdef";
	char pkt[2 * sizeof(HELP) + 2];
	size_t n = 0;

	pkt[n++] = 'O';
	for (const char *t = text; *t && n + 3 < sizeof(pkt); t++) {
		pkt[n++] = hex[(unsigned char)*t >> 4];
		pkt[n++] = hex[(unsigned char)*t & 15];
	}
	pkt[n] = '\0';
	return rsp_send_str(&s->conn, pkt);
}

/* The command of a qRcmd packet, decoded; false when malformed. */
static bool decode(const char *hex, char *out, size_t cap)
{
	size_t n = strlen(hex), k = 0;

	if (n % 2 || n / 2 >= cap)
		return false;
	for (size_t i = 0; i < n; i += 2) {
		int hi = hwt_hex_digit(hex[i]), lo = hwt_hex_digit(hex[i + 1]);

		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
			return false;
		out[k++] = (char)(hi << 4 | lo);
	}
	out[k] = '\0';
	return true;
}

bool monitor_handle(struct server *s, const char *pkt, int *rc)
{
	char cmd[MAX_COMMAND];
	int r = 0;

	if (strncmp(pkt, "qRcmd,", 6) != 0)
		return false;
	if (!decode(pkt + 6, cmd, sizeof(cmd))) {
		*rc = rsp_send_str(&s->conn, "E.Malformed monitor command.");
		return true;
	}
	if (strcmp(cmd, "help") == 0) {
		r = print(s, HELP);
	} else if (strcmp(cmd, "exit") == 0) {
		s->exit_requested = true;
	} else if (strcmp(cmd, "set debug 1") == 0) {
		s->debug = true;
		r = print(s, "Debug output enabled.\n");
	} else if (strcmp(cmd, "set debug 0") == 0) {
		s->debug = false;
		r = print(s, "Debug output disabled.\n");
	} else {
		char msg[MAX_COMMAND + 64];

		snprintf(msg, sizeof(msg), "Unknown monitor command: %s\n",
			 cmd);
		r = print(s, msg);
		if (!r)
			r = print(s, HELP);
	}
	*rc = r ? r : rsp_send_str(&s->conn, "OK");
	return true;
}
