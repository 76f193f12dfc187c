// SPDX-License-Identifier: BSD-2-Clause
/* format.c - one line of instruction or function-call history as text, in
 * the forms `hwtrace dump` documents (docs/cli.md), so that every front end
 * (the CLI, the LLDB plugin) prints the same bytes for the same item. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hwt-replay.h"

/* Append to buf; remembers overflow in *len (> size) instead of failing
 * at each call, so the caller checks once. */
static void put(char *buf, size_t size, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(*len < size ? buf + *len : NULL,
		      *len < size ? size - *len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n;
}

int hwt_format_item(struct hwt_image *img, const char *tid,
		    const struct hwt_item *it, bool tsv, char *buf,
		    size_t size)
{
	struct hwt_insn insn;
	struct hwt_symbol sym;
	bool have_sym;
	size_t len = 0;
	int rc;

	if (!size)
		return -ENOSPC;
	buf[0] = '\0';
	if (it->kind == HWT_ITEM_GAP) {
		if (tsv)
			put(buf, size, &len, "%s\t%" PRIu64 "\tgap\t%s", tid,
			    it->index, it->gap_reason);
		else
			put(buf, size, &len, "%" PRIu64 "\t[gap: %s]",
			    it->index, it->gap_reason);
		return len < size ? (int)len : -ENOSPC;
	}
	/* Bytes that do not decode are shown as they are ("undecodable:
	 * 62 f2 ..."); only an address without code says so. */
	rc = hwt_image_insn_isa(img, it->addr, it->isa, true, &insn);
	if (rc == -ENOENT)
		strcpy(insn.text, "(no code)");
	else if (rc && rc != -EILSEQ)
		snprintf(insn.text, sizeof(insn.text), "(cannot decode: %s)",
			 strerror(-rc));
	have_sym = hwt_image_symbolize(img, it->addr, &sym) == 0;
	if (tsv) {
		put(buf, size, &len, "%s\t%" PRIu64 "\t0x%" PRIx64 "\t%s", tid,
		    it->index, it->addr, insn.text);
		if (!have_sym || !sym.function)
			put(buf, size, &len, "\t??\t");
		else
			put(buf, size, &len, "\t%s+%" PRIu64 "\t", sym.function,
			    it->addr - sym.func_addr);
		if (have_sym && sym.function && sym.file)
			put(buf, size, &len, "%s:%d", sym.file, sym.line);
		/* Later columns only when the trace has them. */
		if (it->timestamp)
			put(buf, size, &len, "\t%" PRIu64, it->timestamp);
		if (it->flags & HWT_ITEM_PTWRITE)
			put(buf, size, &len, "\tptwrite=0x%" PRIx64, it->ptwrite);
	} else {
		put(buf, size, &len, "%" PRIu64 "\t   0x%016" PRIx64, it->index,
		    it->addr);
		if (have_sym && sym.function)
			put(buf, size, &len, " <%s+%" PRIu64 ">", sym.function,
			    it->addr - sym.func_addr);
		put(buf, size, &len, ":\t%s", insn.text);
		if (have_sym && sym.file)
			put(buf, size, &len, "\tat %s:%d", sym.file, sym.line);
	}
	return len < size ? (int)len : -ENOSPC;
}

int hwt_format_call(const char *tid, size_t n,
		    const struct hwt_call_segment *s, bool tsv, char *buf,
		    size_t size)
{
	const char *fn = s->gap ? "[gap]" : s->function ? s->function : "??";
	size_t len = 0;

	if (!size)
		return -ENOSPC;
	buf[0] = '\0';
	if (tsv) {
		put(buf, size, &len, "%s\t%d\t%s\t%" PRIu64 "\t%" PRIu64, tid,
		    s->level, fn, s->first, s->last);
	} else {
		put(buf, size, &len, "%zu\t%*s%s\tinst %" PRIu64 ",%" PRIu64, n,
		    2 * s->level, "", fn, s->first, s->last);
		if (s->file)
			put(buf, size, &len, "\tat %s:%d,%d", s->file,
			    s->line_min, s->line_max);
	}
	return len < size ? (int)len : -ENOSPC;
}
