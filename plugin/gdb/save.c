// SPDX-License-Identifier: BSD-2-Clause
/* save.c - qHwtSave:HEXDIR (hwtrace.py's `hwt save DIR`): write what the
 * session holds as a trace bundle through common/'s bundle writer, for
 * `hwtrace dump`, `hwt-server --bundle` or LLDB later. Live: every
 * thread's history up to this stop and copies of the modules seen; a
 * recording: a copy of its bundle. DIR must not exist yet. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-collect.h"
#include "server.h"

#define SAVE_MAX_PATH 4096

int save_collected(struct hwt_collector *c, const struct hwt_collect_thread *t,
		   size_t nthreads, const char *dir, struct hwt_err *err)
{
	/* Saved from a stop: the program was still running. */
	struct hwt_bundle b = { .stop_reason = HWT_STOP_NONE };
	char *staging = NULL;
	int rc = hwt_bundle_stage_begin(dir, &staging, err);

	if (!rc)
		rc = hwt_collect_stage(staging, c, t, nthreads, true, &b, err);
	if (!rc)
		rc = hwt_bundle_stage_commit(staging, dir, &b, err);
	if (rc && staging)
		hwt_bundle_stage_abort(staging);
	free(staging);
	hwt_collect_stage_free(&b);
	return rc;
}

bool save_handle(struct server *s, const char *pkt, int *rc)
{
	struct hwt_err err = { 0 };
	char dir[SAVE_MAX_PATH + 1], msg[700];
	const char *hex;
	size_t n;

	if (strncmp(pkt, "qHwtSave:", 9) != 0)
		return false;
	hex = pkt + 9;
	n = strlen(hex);
	if (n == 0 || n % 2 || n / 2 > SAVE_MAX_PATH) {
		*rc = rsp_send_str(&s->conn, "E.qHwtSave takes a directory in hex.");
		return true;
	}
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1 || v == 0 ||
		    !strchr("0123456789abcdefABCDEF", hex[2 * i]) ||
		    !strchr("0123456789abcdefABCDEF", hex[2 * i + 1])) {
			*rc = rsp_send_str(&s->conn, "E.qHwtSave takes a directory in hex.");
			return true;
		}
		dir[i] = (char)v;
	}
	dir[n / 2] = '\0';
	if (s->ops->save(s, dir, &err)) {
		snprintf(msg, sizeof(msg), "E.%s", err.msg);
		*rc = rsp_send_str(&s->conn, msg);
	} else {
		*rc = rsp_send_str(&s->conn, "OK");
	}
	return true;
}
