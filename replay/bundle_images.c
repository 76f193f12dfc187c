// SPDX-License-Identifier: BSD-2-Clause
/* bundle_images.c - one image per process of a bundle: a followed child
 * that exec'd another program has other files where the program has its
 * own, so each process's history decodes with its own modules. Images
 * are made when a thread of theirs is first asked about; processes with
 * the same modules share one, and images share the files they have in
 * common at one address (mapping, symbols, line tables). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "replay-int.h"

struct hwt_bundle_images {
	const struct hwt_bundle *b;
	struct hwt_image **img;  /* per process; NULL: not made yet */
	bool *made;              /* img[p] was made for p, not shared */
	size_t n;
	struct hwt_image *newest; /* the last made: the kin of the next */
};

int hwt_bundle_images_new(const struct hwt_bundle *b,
			  struct hwt_bundle_images **out, struct hwt_err *err)
{
	struct hwt_bundle_images *ims = calloc(1, sizeof(*ims));

	*out = NULL;
	if (!ims || !(ims->img = calloc(hwt_bundle_nprocesses(b),
					sizeof(*ims->img))) ||
	    !(ims->made = calloc(hwt_bundle_nprocesses(b),
				 sizeof(*ims->made)))) {
		if (ims)
			free(ims->img);
		free(ims);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	ims->b = b;
	ims->n = hwt_bundle_nprocesses(b);
	*out = ims;
	return 0;
}

/* The process whose modules process p decodes with: its own, or the
 * program's when it lists none. */
static size_t modules_of(const struct hwt_bundle *b, size_t p)
{
	for (size_t i = 0; i < b->nmodules; i++)
		if (b->modules[i].process == p)
			return p;
	return 0;
}

/* Whether processes p and q list the same files at the same addresses,
 * in the same order. */
static bool same_modules(const struct hwt_bundle *b, size_t p, size_t q)
{
	size_t i = 0, j = 0;

	for (;;) {
		while (i < b->nmodules && b->modules[i].process != p)
			i++;
		while (j < b->nmodules && b->modules[j].process != q)
			j++;
		if (i == b->nmodules || j == b->nmodules)
			return i == b->nmodules && j == b->nmodules;
		if (b->modules[i].load_address != b->modules[j].load_address ||
		    strcmp(b->modules[i].system_path, b->modules[j].system_path))
			return false;
		i++, j++;
	}
}

/* An image made already that process p can decode with: one of a process
 * with the same modules (make's twenty cc1s share one). The program's
 * holds its core and memory dumps too, so no child shares it. Only the
 * processes that made an image are compared: a few, however many
 * share them. */
static struct hwt_image *alike(struct hwt_bundle_images *ims, size_t p)
{
	const struct hwt_bundle *b = ims->b;
	size_t mp = modules_of(b, p);

	for (size_t q = p ? 1 : ims->n; q < ims->n; q++)
		if (q != p && ims->made[q] &&
		    same_modules(b, mp, modules_of(b, q)))
			return ims->img[q];
	return NULL;
}

static int process_image(struct hwt_bundle_images *ims, size_t p,
			 struct hwt_image **img, struct hwt_err *err)
{
	int rc;

	*img = NULL;
	if (p >= ims->n)
		return hwt_err_set(err, EINVAL, "no process %zu in the bundle",
				   p);
	if (!ims->img[p])
		ims->img[p] = alike(ims, p);
	if (ims->img[p]) {
		*img = ims->img[p];
		return 0;
	}
	if ((rc = hwt_image_new(&ims->img[p], err)))
		return rc;
	ims->made[p] = true;
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
	free(ims->made);
	free(ims);
}
