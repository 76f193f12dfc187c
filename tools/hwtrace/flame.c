// SPDX-License-Identifier: BSD-2-Clause
/* flame.c - function activations from the call history (flame.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cli.h"
#include "flame.h"

#define FLAME_MAX_DEPTH 4096

struct builder {
	struct flame *f;
	size_t frames_cap, marks_cap;
	/* open[d]: index of the open activation at depth d, or -1 */
	long open[FLAME_MAX_DEPTH];
	int top;                     /* deepest open depth + 1 */
	struct hwt_history *h;
};

static uint64_t time_of(struct builder *b, uint64_t item)
{
	struct hwt_item it;

	return hwt_history_get(b->h, item, &it, NULL) ? 0 : it.timestamp;
}

/* End the activations at depth d and deeper, their last item last. */
static void close_from(struct builder *b, int d, uint64_t last)
{
	for (; b->top > d; b->top--) {
		long i = b->open[b->top - 1];

		if (i < 0)
			continue;
		b->f->frames[i].last = last;
		b->f->frames[i].t_last = time_of(b, last);
		b->open[b->top - 1] = -1;
	}
}

static int add_mark(struct builder *b, uint64_t item,
		    enum flame_mark_kind kind, const char *what)
{
	if (HWT_ARRAY_RESERVE(b->f->marks, b->marks_cap, b->f->nmarks + 1, 16))
		return -ENOMEM;
	b->f->marks[b->f->nmarks++] = (struct flame_mark){
		.item = item, .kind = kind, .what = what,
		.time = time_of(b, item) };
	return 0;
}

static bool same_function(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int take(struct builder *b, const struct hwt_call_segment *s, int base)
{
	struct flame *f = b->f;
	struct hwt_item it;
	int d = s->level - base;
	long i;

	if (s->gap) {
		close_from(b, 0, s->first - 1);
		return add_mark(b, s->first, FLAME_GAP, NULL);
	}
	if (d < 0 || d >= FLAME_MAX_DEPTH)
		d = d < 0 ? 0 : FLAME_MAX_DEPTH - 1;
	if (!hwt_history_get(b->h, s->first, &it, NULL) &&
	    (it.flags & HWT_ITEM_ASYNC) && add_mark(b, s->first, FLAME_SIGNAL, NULL))
		return -ENOMEM;
	close_from(b, d + 1, s->first - 1);
	if (b->top == d + 1 && b->open[d] >= 0 &&
	    same_function(f->frames[b->open[d]].function, s->function))
		return 0;     /* back in the activation after its callee */
	close_from(b, d, s->first - 1);
	if (HWT_ARRAY_RESERVE(f->frames, b->frames_cap, f->nframes + 1, 64))
		return -ENOMEM;
	i = (long)f->nframes++;
	f->frames[i] = (struct flame_frame){
		.first = s->first, .last = s->last, .depth = d,
		.function = s->function, .file = s->file,
		.line_min = s->line_min, .line_max = s->line_max,
		.t_first = time_of(b, s->first) };
	for (int k = b->top; k < d; k++)
		b->open[k] = -1;
	b->open[d] = i;
	b->top = d + 1;
	if (d > f->max_depth)
		f->max_depth = d;
	return 0;
}

int flame_build(struct hwt_history *h, struct hwt_image *img, uint64_t first,
		uint64_t last, struct flame *out, struct hwt_err *err)
{
	static struct builder b;
	size_t n;
	int base = 0, rc;

	memset(out, 0, sizeof(*out));
	memset(&b, 0, sizeof(b));
	b.f = out;
	b.h = h;
	if (!first) {
		first = 1;
		last = hwt_history_count(h);
	}
	if (!last || last < first)
		return 0;
	out->base = first;
	out->items = last - first + 1;
	if ((rc = hwt_calls_build(h, img, first, last, &out->calls, err)))
		return rc;
	n = hwt_calls_count(out->calls);
	for (size_t i = 0, seen = 0; i < n; i++) {
		const struct hwt_call_segment *s = hwt_calls_get(out->calls, i);

		if (!s->gap && (!seen++ || s->level < base))
			base = s->level;
	}
	for (size_t i = 0; i < n; i++)
		if (take(&b, hwt_calls_get(out->calls, i), base)) {
			flame_free(out);
			return hwt_err_set(err, ENOMEM, "out of memory");
		}
	close_from(&b, 0, last);
	out->timed = out->nframes > 0;
	for (size_t i = 0; i < out->nframes && out->timed; i++)
		out->timed = out->frames[i].t_first && out->frames[i].t_last;
	return 0;
}

void flame_free(struct flame *f)
{
	free(f->frames);
	free(f->marks);
	if (f->calls)
		hwt_calls_free(f->calls);
	memset(f, 0, sizeof(*f));
}

void flame_set_free(struct flame_set *th)
{
	for (size_t t = 0; t < th->n; t++) {
		flame_free(&th->f[t]);
		hwt_history_free(th->h[t]);
	}
	free(th->h);
	free(th->f);
	free(th->thread);
}

int flame_set_build(const struct hwt_bundle *b, struct hwt_bundle_images *ims,
		    const struct cli_window *win, struct flame_set *th,
		    struct hwt_err *err)
{
	struct hwt_err skipped = { 0 };
	struct cli_progress pr;
	char name[64];
	int rc = 0;

	th->h = calloc(b->nthreads + 1, sizeof(*th->h));
	th->f = calloc(b->nthreads + 1, sizeof(*th->f));
	th->thread = calloc(b->nthreads + 1, sizeof(*th->thread));
	if (!th->h || !th->f || !th->thread)
		return hwt_err_set(err, ENOMEM, "out of memory");
	cli_progress_begin(&pr, "hwtrace export: threads decoded", b->nthreads,
			   true);
	for (size_t t = 0; t < b->nthreads && !rc; t++) {
		struct hwt_history *h;
		struct hwt_image *img;
		uint64_t first, last;

		cli_progress_step(&pr, t);
		hwt_bundle_thread_name(b, t, name, sizeof(name));
		if ((rc = hwt_bundle_images_thread(ims, t, &img, err)) ||
		    (rc = hwt_history_open(b, t, img, &h, err))) {
			hwt_err_prefix(err, "thread %s: ", name);
			break;
		}
		rc = cli_window_apply(win, h, img, &first, &last, err);
		/* --since FUNC: the threads that never entered it. */
		if (rc == -ENOENT && win->since) {
			hwt_history_free(h);
			skipped = *err;
			rc = 0;
			continue;
		}
		th->h[th->n] = h;
		th->thread[th->n] = t;
		if (!rc)
			rc = flame_build(h, img, first, last, &th->f[th->n], err);
		th->n++;
		if (rc)
			hwt_err_prefix(err, "thread %s: ", name);
		for (size_t i = 0; !rc && i < th->f[th->n - 1].nmarks; i++) {
			struct flame_mark *m = &th->f[th->n - 1].marks[i];
			struct hwt_item it;

			if (m->kind == FLAME_GAP &&
			    !hwt_history_get(h, m->item, &it, NULL))
				m->what = it.gap_reason;
		}
	}
	cli_progress_end(&pr);
	if (!rc && !th->n && b->nthreads) {
		*err = skipped;     /* why the last thread was left out */
		rc = -ENOENT;
	}
	return rc;
}
