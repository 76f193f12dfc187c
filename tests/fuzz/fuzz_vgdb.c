// SPDX-License-Identifier: BSD-2-Clause
/* fuzz_vgdb.c - the valgrind backend's link to Valgrind's gdbserver
 * (collect/valgrind/vgdb.c), which reads what the vgdb relay passes on:
 * untrusted bytes from another process.
 *
 * Input: the bytes the gdbserver sends, all of them, then the end of the
 * link. A monitor command is asked first (its 'O' console packets are
 * collected apart), then replies are read until the link reports an
 * error or its end. Checked: every reply is '\0'-ended within its
 * buffer, and the console text stays within its bound and '\0'-ended.
 * Seeds, with HWT_FUZZ_SEEDS=DIR: the kinds of reply the backend meets
 * (OK, console output, a run-length encoded register dump, a stop reply,
 * escapes), written here.
 */
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz-common.h"
#include "valgrind/vgdb.h"

static void packet(FILE *f, const char *payload)
{
	unsigned sum = 0;

	for (const char *p = payload; *p; p++)
		sum += (unsigned char)*p;
	fprintf(f, "$%s#%02x", payload, sum & 0xff);
}

static void write_seeds(const char *dir)
{
	static const char *const seeds[][3] = {
		{ "ok", "OK", NULL },
		{ "monitor", "O68742e73796e630a", "OK" },
		{ "registers", "0*\"1122334455667788", NULL },
		{ "stop", "T0506:0000000000000000;07:f0ffffff;thread:p1f.1f;",
		  NULL },
		{ "escape", "m}]}#}*}}", "E01" },
	};
	char path[4096];

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/seed-%s", dir, seeds[i][0]);
		if (!(f = fopen(path, "wb")))
			abort();
		fputs("+", f);
		packet(f, seeds[i][1]);
		if (seeds[i][2])
			packet(f, seeds[i][2]);
		fclose(f);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("HWT_FUZZ_SEEDS");

	(void)argc;
	(void)argv;
	if (seeds) {
		write_seeds(seeds);
		exit(0);
	}
	return 0;
}

static void check_reply(const char *reply, size_t cap)
{
	if (!memchr(reply, '\0', cap))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char reply[VG_LINK_MAX_REPLY + 1];
	struct vg_link l = { .vgdb = -1, .fd = -1 };
	struct hwt_err err = { 0 };
	bool interrupted = false;
	int sv[2];

	/* The socket buffer must take the whole input before anything
	 * reads it. */
	if (size > 65536 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				       sv) < 0)
		return 0;
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	shutdown(sv[1], SHUT_WR);
	l.fd = sv[0];
	if (vg_link_monitor(&l, "hwt.sync", &err) == 0 &&
	    (l.noutput > VG_LINK_MAX_OUTPUT ||
	     (l.output && l.output[l.noutput] != '\0')))
		abort();
	for (int i = 0; i < 64; i++) {
		memset(reply, 'x', sizeof(reply));
		if (vg_link_wait(&l, reply, sizeof(reply), -1, &interrupted,
				 &err) < 0)
			break;
		check_reply(reply, sizeof(reply));
	}
	vg_link_close(&l);
	close(sv[1]);
	return 0;
}
