// SPDX-License-Identifier: BSD-2-Clause
/* image_spans.c - the image's address space as a sorted, disjoint span
 * array, rebuilt when modules were added (image.c says which wins where
 * they overlap), and the lookups every decoder makes through it: the span
 * or module at an address, and the bytes there. */
#include <stdlib.h>
#include <string.h>

#include "replay-int.h"
#include "array.h"

static int span_cmp(const void *a, const void *b)
{
	const struct hwt_span *x = a, *y = b;

	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq;
}

/* Insert into map the parts of s that no span already in map covers. */
static int insert_uncovered(struct hwt_span **map, size_t *n, size_t *cap,
			    const struct hwt_span *s)
{
	size_t lo = 0, hi = *n;
	uint64_t cur = s->start;

	/* First span ending after s->start (ends are sorted too). */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if ((*map)[mid].end <= cur)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (cur < s->end) {
		uint64_t stop;

		if (lo < *n && (*map)[lo].start <= cur) {
			cur = (*map)[lo].end;
			lo++;
			continue;
		}
		stop = lo < *n && (*map)[lo].start < s->end ?
			(*map)[lo].start : s->end;
		if (HWT_ARRAY_RESERVE(*map, *cap, *n + 1, 64))
			return -ENOMEM;
		memmove(*map + lo + 1, *map + lo, (*n - lo) * sizeof(**map));
		(*map)[lo] = *s;
		(*map)[lo].start = cur;
		(*map)[lo].end = stop;
		(*map)[lo].data = s->data + (cur - s->start);
		(*n)++;
		lo++;
		cur = stop;
	}
	return 0;
}

/* Winners first: each span then only takes what is still free. */
static int rebuild(struct hwt_image *img)
{
	struct hwt_span *order, *map = NULL;
	size_t n = 0, cap = 0;

	order = malloc((img->nraw ? img->nraw : 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	memcpy(order, img->raw, img->nraw * sizeof(*order));
	qsort(order, img->nraw, sizeof(*order), span_cmp);
	for (size_t i = 0; i < img->nraw; i++) {
		if (insert_uncovered(&map, &n, &cap, &order[i])) {
			free(order);
			free(map);
			return -ENOMEM;
		}
	}
	free(order);
	free(img->map);
	img->map = map;
	img->nmap = n;
	img->last = 0;
	img->dirty = false;
	/* What an address holds may have changed: forget every answer
	 * (a cache never written is left untouched: it is a megabyte the
	 * kernel has not backed yet). */
	if (img->icache && img->icache_filled)
		memset(img->icache, 0, HWT_ICACHE_SIZE * sizeof(*img->icache));
	if (img->scache && img->scache_filled)
		memset(img->scache, 0, HWT_SCACHE_SIZE * sizeof(*img->scache));
	img->icache_filled = img->scache_filled = false;
	img->fcache.valid = false;
	img->lcache.valid = false;
	return 0;
}

const struct hwt_span *hwt_image_span(struct hwt_image *img, uint64_t addr)
{
	size_t lo = 0, hi;

	/* Out of memory while rebuilding: answer from the old map, which
	 * is only missing the newest additions. */
	if (img->dirty)
		rebuild(img);
	if (img->last < img->nmap && addr >= img->map[img->last].start &&
	    addr < img->map[img->last].end)
		return &img->map[img->last];
	hi = img->nmap;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (img->map[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < img->nmap && img->map[lo].start <= addr) {
		img->last = lo;
		return &img->map[lo];
	}
	return NULL;
}

struct hwt_module *hwt_image_module(struct hwt_image *img, uint64_t addr)
{
	const struct hwt_span *s = hwt_image_span(img, addr);

	return s && !s->mod->is_core ? s->mod : NULL;
}

static size_t read_spans(struct hwt_image *img, uint64_t addr, void *buf,
			 size_t len, bool constant_only)
{
	size_t done = 0;

	/* Adjacent spans (segments of different files, or a module next
	 * to core memory) read as one range. */
	while (done < len) {
		const struct hwt_span *s = hwt_image_span(img, addr + done);
		size_t n;

		if (!s || (constant_only && !s->constant))
			break;
		n = s->end - (addr + done) < len - done ?
			(size_t)(s->end - (addr + done)) : len - done;
		memcpy((uint8_t *)buf + done,
		       s->data + (addr + done - s->start), n);
		done += n;
	}
	return done;
}

size_t hwt_image_read(struct hwt_image *img, uint64_t addr, void *buf,
		      size_t len)
{
	return read_spans(img, addr, buf, len, false);
}

size_t hwt_image_read_constant(struct hwt_image *img, uint64_t addr,
			       void *buf, size_t len)
{
	return read_spans(img, addr, buf, len, true);
}
