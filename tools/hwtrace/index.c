// SPDX-License-Identifier: BSD-2-Clause
/* index.c - `hwtrace index`: keep each thread's segment index beside its
 * trace, so a bundle of Intel PT, BTS or CoreSight opens without decoding
 * all of it (replay/seg_store.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hwt-replay.h"

static const char index_usage[] =
	"usage: hwtrace index PATH\n"
	"\n"
	"Index each thread's trace of a bundle once and keep the index beside\n"
	"it (TRACE.hwtidx), so that opening the bundle later reads the index\n"
	"instead of decoding the whole trace (Intel PT, BTS; a CoreSight\n"
	"snapshot's sources, with the blocks OpenCSD decoded, in\n"
	"TRACE.ID.hwtidx). hwt-sw traces are indexed when they are recorded;\n"
	"per-cpu traces are not kept. An index that no longer matches its\n"
	"trace is not used.\n"
	"\n"
	"Example:\n"
	"  hwtrace index big-pt.bundle\n";

/* The index of thread i next to its trace, written whole or not at all. */
static int keep_one(const struct hwt_bundle *b, size_t i,
		    struct hwt_image *img, struct hwt_err *err)
{
	const struct hwt_bundle_thread *t = &b->threads[i];
	struct hwt_history *h = NULL;
	char *path = NULL, *tmp = NULL, name[32];
	uint8_t *blob = NULL;
	size_t n = 0;
	FILE *f;
	int rc;

	if (!t->trace_file) {
		printf("thread %s: a per-cpu trace; its index is not kept\n",
		       hwt_bundle_thread_name(b, i, name, sizeof(name)));
		return 0;
	}
	if ((rc = hwt_history_open(b, i, img, &h, err)))
		return rc;
	rc = hwt_history_index_save(h, &blob, &n, err);
	hwt_history_free(h);
	if (rc == -ENOTSUP) {
		printf("thread %s: %s\n",
		       hwt_bundle_thread_name(b, i, name, sizeof(name)),
		       err->msg);
		return 0;
	}
	if (rc)
		return rc;
	{
		char *rel = hwt_history_index_path(b, i);

		path = rel ? hwt_bundle_path(b, rel) : NULL;
		free(rel);
	}
	if (!path || asprintf(&tmp, "%s.tmp", path) < 0) {
		free(path);
		free(blob);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	f = fopen(tmp, "wb");
	if (!f || fwrite(blob, 1, n, f) != n || fclose(f) != 0) {
		rc = hwt_err_set(err, errno ? errno : EIO, "writing %s: %s",
				 tmp, strerror(errno ? errno : EIO));
		unlink(tmp);
	} else if (rename(tmp, path) < 0) {
		rc = hwt_err_set(err, errno, "%s: %s", path, strerror(errno));
		unlink(tmp);
	} else {
		printf("thread %s: %s (%zu bytes)\n",
		       hwt_bundle_thread_name(b, i, name, sizeof(name)), path,
		       n);
	}
	free(blob);
	free(tmp);
	free(path);
	return rc;
}

int cmd_index(int argc, char **argv)
{
	struct hwt_bundle *b = NULL;
	struct hwt_bundle_images *ims = NULL;
	struct hwt_err err = { 0 };
	int rc;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(index_usage, stdout);
		return 0;
	}
	if (argc != 2)
		return cli_usage_error("index", "expected exactly one bundle");
	if (!(rc = hwt_bundle_read(argv[1], &b, &err)) &&
	    !(rc = hwt_bundle_images_new(b, &ims, &err)))
		for (size_t i = 0; i < b->nthreads && !rc; i++) {
			struct hwt_image *img;

			if (!(rc = hwt_bundle_images_thread(ims, i, &img, &err)))
				rc = keep_one(b, i, img, &err);
		}
	hwt_bundle_images_free(ims);
	hwt_bundle_free(b);
	return rc ? cli_fail(&err) : 0;
}
