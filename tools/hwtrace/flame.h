/* SPDX-License-Identifier: BSD-2-Clause */
/* flame.h - a thread's history as function activations, for pictures:
 * each call of a function from its entry (or the history's start) to its
 * return (or the history's end), its callees inside it, one level deeper.
 *
 * The call history (hwt_calls_build) cuts an activation into segments
 * at each call it makes; flame_build joins them again: a segment at the
 * level of the open activation of the same function continues it, any
 * other ends what is open at its level and deeper. Gaps end everything
 * (the nesting across one is unknown); they and signal deliveries are
 * kept as marks. */
#ifndef HWT_FLAME_H
#define HWT_FLAME_H

#include <stddef.h>
#include <stdint.h>

#include "hwt-replay.h"

struct flame_frame {
	uint64_t first, last;     /* history items, 1-based, inclusive */
	int depth;                /* 0 = the outermost level seen */
	const char *function;     /* NULL when unknown (names live in calls) */
	const char *file;         /* NULL when unknown */
	int line_min, line_max;   /* 0 when unknown */
	uint64_t t_first, t_last; /* trace time of first and last (0: none) */
};

enum flame_mark_kind { FLAME_GAP, FLAME_SIGNAL };

struct flame_mark {
	uint64_t item;
	enum flame_mark_kind kind;
	const char *what;         /* the gap's reason; NULL for a signal */
	uint64_t time;            /* trace time, 0 when none */
};

struct flame {
	struct flame_frame *frames;  /* in order of their first item */
	size_t nframes;
	struct flame_mark *marks;
	size_t nmarks;
	uint64_t base, items;        /* the items shown: base .. base+items-1 */
	int max_depth;
	bool timed;                  /* every frame has trace times */
	struct hwt_calls *calls;     /* the segments the names belong to */
};

/* The activations of items first..last (1-based; 0, 0: all) of history
 * h, whose code img holds. */
int flame_build(struct hwt_history *h, struct hwt_image *img, uint64_t first,
		uint64_t last, struct flame *out, struct hwt_err *err);
void flame_free(struct flame *f);

/* The threads of a bundle, in its order, each over the part of its
 * history the window shows (a thread that never entered --since's
 * function is left out); each history stays open for what points into
 * it (the gaps' reasons). */
struct flame_set {
	struct hwt_history **h;
	struct flame *f;
	size_t *thread;              /* the bundle's thread index of each */
	size_t n;
};

struct cli_window;
/* Each thread decodes with its process's image from ims. */
int flame_set_build(const struct hwt_bundle *b, struct hwt_bundle_images *ims,
		    const struct cli_window *win, struct flame_set *set,
		    struct hwt_err *err);
void flame_set_free(struct flame_set *set);

#endif
