// SPDX-License-Identifier: BSD-2-Clause
/* test_vgdb_link.c - the valgrind backend's link to Valgrind's gdbserver
 * (collect/valgrind/vgdb.c) against a fake relay: a shell script in
 * vgdb's place that writes canned replies. Run-length encoded replies
 * expand, a monitor command's output is collected, and every bad reply (a
 * wrong checksum, a malformed run, one longer than any packet, a relay
 * that dies) is a clear error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "valgrind/vgdb.h"

static char dir[] = "/tmp/hwt-vgdb-test-XXXXXX";

/* A packet as the stub frames it. */
static void frame(char *out, size_t cap, const char *payload)
{
	unsigned sum = 0;

	for (const char *p = payload; *p; p++)
		sum += (unsigned char)*p;
	snprintf(out, cap, "$%s#%02x", payload, sum & 0xff);
}

/* Start a fake relay that writes reply (raw bytes) once it read a
 * command, then waits for its input to close. */
static int fake(struct vg_link *l, const char *reply, struct hwt_err *err)
{
	char script[256], data[256], log[256];
	FILE *f;

	snprintf(script, sizeof(script), "%s/vgdb", dir);
	snprintf(data, sizeof(data), "%s/reply", dir);
	snprintf(log, sizeof(log), "%s/log", dir);
	f = fopen(data, "w");
	if (!f)
		return -errno;
	fputs(reply, f);
	fclose(f);
	f = fopen(script, "w");
	if (!f)
		return -errno;
	fprintf(f, "#!/bin/sh\ndd bs=1 count=1 2>/dev/null >/dev/null\n"
		"cat '%s'\ncat >/dev/null\n", data);
	fclose(f);
	chmod(script, 0700);
	return vg_link_open(l, script, dir, 1, log, err);
}

/* The reply to one command from a relay that answers raw. */
static int exchange(const char *raw, char *reply, size_t cap,
		    struct vg_link *l, struct hwt_err *err)
{
	int rc = fake(l, raw, err);

	if (rc == 0)
		rc = vg_link_call(l, "g", reply, cap, err);
	return rc;
}

static void test_replies(void)
{
	char raw[64 << 10], reply[VG_LINK_MAX_REPLY + 1], pkt[512];
	struct vg_link l;
	struct hwt_err err = { 0 };
	int rc;

	/* "0*%" is 0 and 8 more; acks before the packet are skipped. */
	frame(pkt, sizeof(pkt), "T05a*%;");
	snprintf(raw, sizeof(raw), "+%s", pkt);
	rc = exchange(raw, reply, sizeof(reply), &l, &err);
	CHECK("link: a run-length encoded reply expands",
	      rc == 0 && !strcmp(reply, "T05aaaaaaaaa;"), "rc %d (%s): %s",
	      rc, err.msg, reply);
	vg_link_close(&l);

	frame(raw, sizeof(raw), "OK");
	raw[strlen(raw) - 1] ^= 1;
	err = (struct hwt_err){ 0 };
	rc = exchange(raw, reply, sizeof(reply), &l, &err);
	CHECK("link: a wrong checksum is an error",
	      rc == -EBADMSG && strstr(err.msg, "checksum"), "rc %d (%s)", rc,
	      err.msg);
	vg_link_close(&l);

	frame(raw, sizeof(raw), "*!");
	err = (struct hwt_err){ 0 };
	rc = exchange(raw, reply, sizeof(reply), &l, &err);
	CHECK("link: a run with nothing to repeat is an error",
	      rc == -EBADMSG && strstr(err.msg, "malformed"), "rc %d (%s)", rc,
	      err.msg);
	vg_link_close(&l);

	/* 200 runs of 97 bytes expand past any packet. */
	{
		char big[600];
		size_t k = 0;

		for (int i = 0; i < 200 && k + 3 < sizeof(big); i++) {
			big[k++] = '0';
			big[k++] = '*';
			big[k++] = '~';
		}
		big[k] = '\0';
		frame(raw, sizeof(raw), big);
	}
	err = (struct hwt_err){ 0 };
	rc = exchange(raw, reply, 64, &l, &err);
	CHECK("link: a reply that expands past the buffer is an error",
	      rc == -EBADMSG, "rc %d (%s)", rc, err.msg);
	vg_link_close(&l);

	memset(raw, '$', sizeof(raw) - 1);
	raw[sizeof(raw) - 1] = '\0';
	err = (struct hwt_err){ 0 };
	rc = exchange(raw, reply, sizeof(reply), &l, &err);
	CHECK("link: a packet with no end is an error",
	      rc == -EMSGSIZE, "rc %d (%s)", rc, err.msg);
	vg_link_close(&l);
}

static void test_monitor_and_death(void)
{
	char raw[1024], a[256], b[256], c[64];
	struct vg_link l;
	struct hwt_err err = { 0 };
	int rc;

	/* "hwt 1 2\n" in two console packets, then OK. */
	frame(a, sizeof(a), "O6877742031");
	frame(b, sizeof(b), "O20320a");
	frame(c, sizeof(c), "OK");
	snprintf(raw, sizeof(raw), "%s%s%s", a, b, c);
	rc = fake(&l, raw, &err);
	if (rc == 0)
		rc = vg_link_monitor(&l, "hwt.sync", &err);
	CHECK("link: a monitor command's output is collected",
	      rc == 0 && l.output && !strcmp(l.output, "hwt 1 2\n"),
	      "rc %d (%s): %s", rc, err.msg, l.output ? l.output : "-");
	vg_link_close(&l);

	frame(raw, sizeof(raw), "E01");
	err = (struct hwt_err){ 0 };
	rc = fake(&l, raw, &err);
	if (rc == 0)
		rc = vg_link_monitor(&l, "hwt.sync", &err);
	CHECK("link: a monitor command refused is an error",
	      rc == -EPROTO && strstr(err.msg, "hwt.sync"), "rc %d (%s)", rc,
	      err.msg);
	vg_link_close(&l);

	/* The relay writes half a packet and exits. */
	err = (struct hwt_err){ 0 };
	rc = vg_link_open(&l, "/bin/true", dir, 1, "/dev/null", &err);
	if (rc == 0)
		rc = vg_link_call(&l, "?", raw, sizeof(raw), &err);
	CHECK("link: a relay that is gone is an error",
	      rc == -EPIPE && strstr(err.msg, "vgdb"), "rc %d (%s)", rc,
	      err.msg);
	vg_link_close(&l);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_replies);
	RUN(test_monitor_and_death);
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			return 1;
	}
	return check_exit();
}
