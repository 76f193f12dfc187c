// SPDX-License-Identifier: BSD-2-Clause
/* bundle_images.c - one image per process of a bundle: a followed child
 * that exec'd another program has other files where the program has its
 * own, so each process's history decodes with its own modules. Images
 * are made when a thread of theirs is first asked about, and share the
 * symbol and line tables of files they have in common (a cc1 in each
 * of a make's processes is read once). */
#include <errno.h>
#include <stdlib.h>

#include "replay-int.h"

struct hwt_bundle_images {
	const struct hwt_bundle *b;
	struct hwt_image **img;  /* per process; NULL: not made yet */
	size_t n;
	struct hwt_image *newest; /* the last made: the kin of the next */
};

int hwt_bundle_images_new(const struct hwt_bundle *b,
			  struct hwt_bundle_images **out, struct hwt_err *err)
{
	struct hwt_bundle_images *ims = calloc(1, sizeof(*ims));

	*out = NULL;
	if (!ims || !(ims->img = calloc(hwt_bundle_nprocesses(b),
					sizeof(*ims->img)))) {
		free(ims);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	ims->b = b;
	ims->n = hwt_bundle_nprocesses(b);
	*out = ims;
	return 0;
}

static int process_image(struct hwt_bundle_images *ims, size_t p,
			 struct hwt_image **img, struct hwt_err *err)
{
	int rc;

	*img = NULL;
	if (p >= ims->n)
		return hwt_err_set(err, EINVAL, "no process %zu in the bundle",
				   p);
	if (ims->img[p]) {
		*img = ims->img[p];
		return 0;
	}
	if ((rc = hwt_image_new(&ims->img[p], err)))
		return rc;
	ims->img[p]->kin = ims->newest;
	ims->newest = ims->img[p];
	*img = ims->img[p];
	return hwt_image_add_bundle_process(*img, ims->b, p, err);
}

int hwt_bundle_images_thread(struct hwt_bundle_images *ims, size_t t,
			     struct hwt_image **img, struct hwt_err *err)
{
	if (t >= ims->b->nthreads) {
		*img = NULL;
		return hwt_err_set(err, EINVAL, "no thread %zu in the bundle",
				   t);
	}
	return process_image(ims, ims->b->threads[t].process, img, err);
}

int hwt_bundle_images_program(struct hwt_bundle_images *ims,
			      struct hwt_image **img, struct hwt_err *err)
{
	return process_image(ims, 0, img, err);
}

void hwt_bundle_images_free(struct hwt_bundle_images *ims)
{
	if (!ims)
		return;
	/* Newest first: each image may read tables of its kin's modules. */
	while (ims->newest) {
		struct hwt_image *kin = ims->newest->kin;

		hwt_image_free(ims->newest);
		ims->newest = kin;
	}
	free(ims->img);
	free(ims);
}
