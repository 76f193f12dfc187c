// SPDX-License-Identifier: BSD-2-Clause
/* past.c - the values of the past of a valgrind recording: the tool's
 * data history (data.c) against the threads the stream recorded, into a
 * bundle's data history file (common/past_file.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hwt-past.h"
#include "valgrind/data.h"
#include "vg.h"
#include "util.h"

int vg_write_past(struct hwt_collector *base, const char *path,
		  struct hwt_err *err)
{
	struct vg_collector *c = vg_of(base);
	struct hwt_vg_data_thread *t;
	struct hwt_past p;
	struct hwt_past_writer *out;
	uint8_t *file = NULL;
	size_t len = 0, n = 0;
	int rc;

	/* None asked for, or the tool kept none (the stream stopped at its
	 * bound, an exec replaced the program's first image). */
	if (!c->data_path || access(c->data_path, R_OK) != 0)
		return 0;
	if ((rc = hwt_read_file(c->data_path, (size_t)1 << 36, &file, &len, err)) < 0)
		return rc;
	if (!(t = calloc(c->rd.nthreads ? c->rd.nthreads : 1, sizeof(*t)))) {
		free(file);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < c->rd.nthreads; i++) {
		/* The tool kept the values of the program's last only. */
		if (c->rd.threads[i].exec != c->rd.modules.exec)
			continue;
		t[n].tid = c->rd.threads[i].tid;
		if (hwt_vg_reader_last_pc(&c->rd, &c->rd.threads[i],
					  &t[n].last_pc))
			n++;
	}
	/* The register logs go to the file as they grow: the values of a
	 * long ring are never all in memory. */
	if ((rc = hwt_past_writer_open(path, &out, err)) < 0) {
		free(file);
		free(t);
		return rc;
	}
	rc = hwt_vg_data_build_to(file, len, t, n, &p, out, err);
	free(file);
	free(t);
	if (rc < 0 || !p.nthreads) {
		hwt_past_writer_abort(out);
		hwt_vg_data_free(&p);
		if (rc == -ENOMEM)
			return rc;
		/* The history is kept; only its values are not. */
		if (rc < 0 && !base->warning[0])
			snprintf(base->warning, sizeof(base->warning),
				 "the values of the past are not kept: %.400s",
				 err->msg);
		return 0;
	}
	rc = hwt_past_writer_finish(out, &p, err);
	hwt_vg_data_free(&p);
	return rc < 0 ? rc : 1;
}
