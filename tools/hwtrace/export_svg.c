// SPDX-License-Identifier: BSD-2-Clause
/* export_svg.c - `hwtrace export --svg`: a self-contained SVG flame chart
 * of the call history that any browser opens.
 *
 * The history runs along x (the instruction index, the same scale for
 * every thread), call depth down y, one band per thread. Every function
 * activation (flame.h) is a box named after its function where it is wide
 * enough; hovering one shows its function, source file and lines and its
 * instruction range (an SVG <title>). Gaps are grey bars across the band,
 * signal deliveries red ticks, and the fault that ended a crashed
 * process a red bar at the end of its thread. Boxes narrower than a tenth of a pixel are
 * left out and counted in the band's caption, so a long history stays a
 * picture of bounded size. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "cli.h"
#include "flame.h"

#define SVG_WIDTH 1600.0
#define SVG_MARGIN 10.0
#define SVG_ROW 17.0
#define SVG_CAPTION 22.0
#define SVG_BAND_GAP 14.0
#define SVG_CHAR_WIDTH 6.6      /* 11px sans-serif, on average */
#define SVG_MIN_BOX 0.1

struct out {
	struct hwt_bytes b;
	bool failed;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf) ||
	    hwt_bytes_put(&o->b, buf, (size_t)n))
		o->failed = true;
}

/* Text for XML character data and attribute values, at most max chars
 * (an ellipsis marks a cut). */
static void put_text(struct out *o, const char *s, size_t max)
{
	size_t n = 0;

	for (; *s && !o->failed; s++, n++) {
		if (n + 1 == max && s[1]) {
			put(o, "\xe2\x80\xa6");
			return;
		}
		switch (*s) {
		case '<': put(o, "&lt;"); break;
		case '>': put(o, "&gt;"); break;
		case '&': put(o, "&amp;"); break;
		case '"': put(o, "&quot;"); break;
		default:
			/* Control bytes are not XML. */
			if ((unsigned char)*s < 0x20)
				put(o, "?");
			else
				put(o, "%c", *s);
		}
	}
}

/* A warm colour of its own for each function name. */
static void colour_of(const char *name, int *r, int *g, int *b)
{
	uint32_t h = 2166136261u;

	for (const char *p = name ? name : "??"; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	*r = 205 + (int)(h % 50);
	*g = 90 + (int)((h >> 8) % 130);
	*b = 40 + (int)((h >> 16) % 50);
}

static double band_height(const struct flame *f)
{
	return SVG_CAPTION + SVG_ROW * (f->nframes ? f->max_depth + 1 : 1);
}

static void frame_box(struct out *o, const struct flame_frame *fr, double x,
		      double w, double y)
{
	const char *name = fr->function ? fr->function : "??";
	int r, g, b;
	size_t fit = (size_t)((w - 4) / SVG_CHAR_WIDTH);

	colour_of(fr->function, &r, &g, &b);
	put(o, "<g><title>");
	put_text(o, name, 512);
	if (fr->file) {
		put(o, " \xe2\x80\x94 ");
		put_text(o, fr->file, 512);
		if (fr->line_min)
			put(o, ":%d-%d", fr->line_min, fr->line_max);
	}
	put(o, " \xe2\x80\x94 instructions %" PRIu64 "-%" PRIu64 " (%" PRIu64
	    ")</title>", fr->first, fr->last, fr->last - fr->first + 1);
	put(o, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
	    "fill=\"rgb(%d,%d,%d)\" rx=\"2\"/>", x, y, w, SVG_ROW - 1, r, g, b);
	if (fit >= 3) {
		put(o, "<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + SVG_ROW - 5);
		put_text(o, name, fit);
		put(o, "</text>");
	}
	put(o, "</g>\n");
}

static void band(struct out *o, const struct hwt_bundle *bu, size_t t,
		 const struct flame *f, double scale, double y)
{
	char name[64];
	size_t hidden = 0;

	hwt_bundle_thread_name(bu, t, name, sizeof(name));
	put(o, "<text class=\"caption\" x=\"%.1f\" y=\"%.1f\">thread %s: %"
	    PRIu64 " instructions, %zu calls", SVG_MARGIN, y + 15, name,
	    f->items, f->nframes);
	for (size_t i = 0; i < f->nframes; i++)
		hidden += (double)(f->frames[i].last - f->frames[i].first + 1) *
			  scale < SVG_MIN_BOX;
	/* x counts from the first item shown. */
	if (hidden)
		put(o, " (%zu too narrow to draw)", hidden);
	put(o, "</text>\n");
	y += SVG_CAPTION;
	for (size_t i = 0; i < f->nframes; i++) {
		const struct flame_frame *fr = &f->frames[i];
		double w = (double)(fr->last - fr->first + 1) * scale;

		if (w >= SVG_MIN_BOX)
			frame_box(o, fr, SVG_MARGIN + (double)(fr->first - f->base) * scale,
				  w, y + fr->depth * SVG_ROW);
	}
	for (size_t i = 0; i < f->nmarks; i++) {
		const struct flame_mark *m = &f->marks[i];
		double x = SVG_MARGIN + (double)(m->item - f->base) * scale;

		put(o, "<g><title>%s at instruction %" PRIu64,
		    m->kind == FLAME_GAP ? "gap" :
		    !strcmp(bu->type, HWT_BUNDLE_TYPE_SW) ? "signal" :
		    "asynchronous transfer (interrupt, context switch or signal)",
		    m->item);
		if (m->what) {
			put(o, ": ");
			put_text(o, m->what, 256);
		}
		put(o, "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"2\" "
		    "height=\"%.1f\" fill=\"%s\"/></g>\n", x, y,
		    band_height(f) - SVG_CAPTION,
		    m->kind == FLAME_GAP ? "#999" : "#d00");
	}
	if (hwt_bundle_thread_faulted(bu, t))
		put(o, "<g><title>%s at 0x%" PRIx64 ": the process ended here"
		    "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"4\" "
		    "height=\"%.1f\" fill=\"#c00\"/></g>\n",
		    strsignal(bu->stop_signal), bu->stop_pc,
		    SVG_MARGIN + (double)f->items * scale, y,
		    band_height(f) - SVG_CAPTION);
}

int export_svg(const struct hwt_bundle *b, const char *path,
	       const struct cli_window *win, const char *out_path,
	       struct hwt_err *err)
{
	struct hwt_bundle_images *ims = NULL;
	struct flame_set set = { 0 };
	struct out o = { 0 };
	uint64_t longest = 1;
	double height = SVG_MARGIN + 28, y, scale;
	int rc;

	if ((rc = hwt_bundle_images_new(b, &ims, err)) ||
	    (rc = flame_set_build(b, ims, win, &set, err)))
		goto out;
	for (size_t t = 0; t < set.n; t++) {
		height += band_height(&set.f[t]) + SVG_BAND_GAP;
		if (set.f[t].items > longest)
			longest = set.f[t].items;
	}
	scale = (SVG_WIDTH - 2 * SVG_MARGIN) / (double)longest;
	put(&o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
	    "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n"
	    "<style>text { font: 11px sans-serif; fill: #000; } "
	    "text.caption { font-size: 13px; } "
	    "g:hover rect { stroke: #000; stroke-width: 0.7; }</style>\n"
	    "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
	    SVG_WIDTH, height, SVG_WIDTH, height);
	put(&o, "<text class=\"caption\" x=\"%.1f\" y=\"%.1f\">", SVG_MARGIN,
	    SVG_MARGIN + 14);
	put_text(&o, path, 200);
	put(&o, ": call history, instructions along x (hover a box for its "
	    "source)</text>\n");
	y = SVG_MARGIN + 28;
	for (size_t t = 0; t < set.n; t++) {
		band(&o, b, set.thread[t], &set.f[t], scale, y);
		y += band_height(&set.f[t]) + SVG_BAND_GAP;
	}
	put(&o, "</svg>\n");
	rc = o.failed ? hwt_err_set(err, ENOMEM, "out of memory")
		      : cli_write_file(out_path, o.b.p, o.b.n, err);
out:
	hwt_bytes_free(&o.b);
	flame_set_free(&set);
	hwt_bundle_images_free(ims);
	return rc;
}
