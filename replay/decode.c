// SPDX-License-Identifier: BSD-2-Clause
/* decode.c - the decoder registry and the containers decoders fill. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "array.h"

/* New formats (Intel PT, BTS, ETM) add their ops here. */
static const struct hwt_decoder *const decoders[] = {
	&hwt_decoder_sw,
	&hwt_decoder_pt,
	&hwt_decoder_bts,
	&hwt_decoder_etm,
};

const struct hwt_decoder *hwt_decoder_find(const char *format)
{
	for (size_t i = 0; i < sizeof(decoders) / sizeof(decoders[0]); i++) {
		if (format && !strcmp(decoders[i]->format, format))
			return decoders[i];
	}
	return NULL;
}

const char *hwt_decoder_names(void)
{
	static char names[256];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(decoders) / sizeof(decoders[0]) &&
	     n < sizeof(names); i++)
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s",
				      i ? ", " : "", decoders[i]->format);
	return names;
}

int hwt_segments_push(struct hwt_segments *s, const struct hwt_segment *seg)
{
	if (HWT_ARRAY_RESERVE(s->v, s->cap, s->n + 1, 64))
		return -ENOMEM;
	s->v[s->n++] = *seg;
	return 0;
}

const char *hwt_segments_reason(struct hwt_segments *s, const char *fmt, ...)
{
	char *str;
	va_list ap;
	int len;

	if (HWT_ARRAY_RESERVE(s->strs, s->strcap, s->nstrs + 1, 16))
		return NULL;
	va_start(ap, fmt);
	len = vasprintf(&str, fmt, ap);
	va_end(ap);
	if (len < 0)
		return NULL;
	s->strs[s->nstrs++] = str;
	s->str_bytes += (size_t)len + 1;
	return str;
}

void hwt_segments_free(struct hwt_segments *s)
{
	for (size_t i = 0; i < s->nstrs; i++)
		free(s->strs[i]);
	free(s->strs);
	free(s->v);
	if (s->priv_free)
		s->priv_free(s->priv);
	memset(s, 0, sizeof(*s));
}

void hwt_blocks_priv_free(void *priv)
{
	struct hwt_blocks *b = priv;

	if (b)
		free(b->v);
	free(b);
}

int hwt_blocks_push(struct hwt_blocks *b, const struct hwt_block *blk)
{
	if (HWT_ARRAY_RESERVE(b->v, b->cap, b->n + 1, 256))
		return -ENOMEM;
	b->v[b->n++] = *blk;
	return 0;
}

int hwt_blocks_push_gap(struct hwt_blocks *b, const char *reason)
{
	struct hwt_block blk = { .reason = reason, .count = 1,
				 .flags = HWT_BLOCK_GAP };

	return hwt_blocks_push(b, &blk);
}
