// SPDX-License-Identifier: BSD-2-Clause
/* lldb_proto.c - the gdb-remote packets only LLDB sends
 * (lldb-gdb-remote.txt). LLDB works against a plain GDB stub, but asks
 * first what machine and process it is talking to; answering saves it
 * guessing the architecture from the executable and lets it name the
 * process by its real pid. The trace packets (jLLDBTrace*) are
 * lldb_trace.c's. What is not answered here gets the empty reply, which
 * LLDB takes as "not supported" and works around. */
#include <stdio.h>
#include <string.h>

#include "server.h"

/* hwt-server serves x86-64 Linux processes only (tdesc.c). */
#define LP_TRIPLE "x86_64-pc-linux-gnu"

static size_t put_hex(char *out, size_t cap, const char *str)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	for (; *str && n + 2 < cap; str++) {
		out[n++] = hex[(unsigned char)*str >> 4];
		out[n++] = hex[(unsigned char)*str & 15];
	}
	out[n] = '\0';
	return n;
}

static int host_info(struct server *s)
{
	char triple[2 * sizeof(LP_TRIPLE)], reply[256];

	put_hex(triple, sizeof(triple), LP_TRIPLE);
	snprintf(reply, sizeof(reply), "triple:%s;ptrsize:8;endian:little;"
		 "ostype:linux;vendor:pc;", triple);
	return rsp_send_str(&s->conn, reply);
}

/* The process id: the recorded one post-mortem; live, the first thread
 * the target lists is the one it started (its tid is the pid). */
static int process_info(struct server *s)
{
	char triple[2 * sizeof(LP_TRIPLE)], reply[256];
	long long pid;

	if (s->bundle && s->bundle->pid > 0)
		pid = s->bundle->pid;
	else if (s->nthreads)
		pid = s->threads[0].tid;
	else
		return rsp_send_str(&s->conn, "E.No process.");
	put_hex(triple, sizeof(triple), LP_TRIPLE);
	snprintf(reply, sizeof(reply), "pid:%llx;triple:%s;ostype:linux;"
		 "endian:little;ptrsize:8;", pid, triple);
	return rsp_send_str(&s->conn, reply);
}

bool lldb_proto_handle(struct server *s, const char *pkt, int *rc)
{
	if (lldb_trace_handle(s, pkt, rc))
		return true;
	if (strcmp(pkt, "qHostInfo") == 0) {
		/* GDB never asks: the client is LLDB (see 'k'). */
		s->client_lldb = true;
		*rc = host_info(s);
	}
	else if (strcmp(pkt, "qProcessInfo") == 0)
		*rc = process_info(s);
	else
		return false;
	return true;
}
