// SPDX-License-Identifier: BSD-2-Clause
/* writes.c - `hwtrace writes`: who wrote this? Every recorded store that
 * changed bytes of ADDR[,LEN], newest first, from a bundle's data history
 * (common/hwt-past.h), the core being the memory where it ends: thread,
 * history item, pc, function and source line, the bytes before and after.
 * The same question as GDB's watch -l + reverse-continue over hwt-server,
 * asked of the whole history at once (Undo's `last`, Pernosco's dataflow
 * are the anchors). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hwt-past.h"
#include "hwt-replay.h"
#include "util.h"

static const char writes_usage[] =
	"usage: hwtrace writes [--last N] [--tsv] ADDR[,LEN] PATH\n"
	"\n"
	"Every recorded store that changed a byte of LEN bytes at ADDR (hex\n"
	"or decimal; LEN 1 to 64, default 8), newest first: its thread, its\n"
	"item in the thread's history (numbered as hwtrace dump numbers\n"
	"instructions), pc, function and source line, and the bytes before\n"
	"and after it (in memory order; for 1, 2, 4 or 8 bytes also as a\n"
	"little-endian number). Needs a bundle with a data history and a\n"
	"core (the ptrace backend's recording of a crash); the list stops\n"
	"where earlier bytes cannot be known, and says so.\n"
	"\n"
	"  -l, --last N   the newest N writes only\n"
	"      --tsv      tab-separated: tid, item, pc, function, file:line,\n"
	"                 bytes before, bytes after ('?' for a byte unknown)\n"
	"\n"
	"Examples:\n"
	"  hwtrace writes 0x555555558050 crash.bundle\n"
	"  hwtrace writes --last 1 0x7ffc0d5e8a10,4 crash.bundle\n";

struct writes_args {
	uint64_t addr, len, last;
	bool tsv;
	const char *path;
};

static int parse_range(const char *s, struct writes_args *a)
{
	char buf[64], *comma;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	a->len = 8;
	if ((comma = strchr(buf, ','))) {
		*comma = '\0';
		if (hwt_parse_u64(comma + 1, &a->len) || a->len == 0 ||
		    a->len > HWT_MEM_WATCH_MAX)
			return -EINVAL;
	}
	if (hwt_parse_u64(buf, &a->addr) || a->addr + a->len < a->addr)
		return -EINVAL;
	return 0;
}

static int parse_args(int argc, char **argv, struct writes_args *a)
{
	static const struct option longopts[] = {
		{ "last", required_argument, NULL, 'l' },
		{ "tsv", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "l:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (hwt_parse_u64(optarg, &a->last) || a->last == 0)
				return cli_usage_error("writes", "--last '%s' is "
						       "not a positive count",
						       optarg);
			break;
		case 'T':
			a->tsv = true;
			break;
		case 'h':
			fputs(writes_usage, stdout);
			exit(0);
		default:
			return cli_usage_error("writes", "bad option");
		}
	}
	if (argc - optind != 2)
		return cli_usage_error("writes", "give ADDR[,LEN] and a bundle");
	if (parse_range(argv[optind], a))
		return cli_usage_error("writes", "'%s' is not ADDR[,LEN] (LEN 1 "
				       "to %u)", argv[optind], HWT_MEM_WATCH_MAX);
	a->path = argv[optind + 1];
	return 0;
}

struct lister {
	const struct writes_args *a;
	const struct hwt_bundle *b;
	struct hwt_past *past;
	struct hwt_image *img, *now;
	struct hwt_history **hist;    /* per bundle thread, opened on demand */
	uint64_t shown;
};

/* The history item of instruction index of thread tid (0: not kept). */
static uint64_t item_of(struct lister *l, int32_t tid, uint64_t index)
{
	const struct hwt_past_thread *pt = hwt_past_thread_of(l->past, tid);
	size_t t;
	uint64_t count, back;

	for (t = 0; t < l->b->nthreads && l->b->threads[t].tid != tid; t++)
		;
	if (!pt || t == l->b->nthreads || index > pt->end_index)
		return 0;
	if (!l->hist[t] &&
	    hwt_history_open(l->b, t, l->img, &l->hist[t], NULL) < 0)
		return 0;
	count = hwt_history_count(l->hist[t]);
	back = pt->end_index - index;
	return back < count ? count - back : 0;
}

static void hex(char *out, const uint8_t *v, const bool *known, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (known[i])
			sprintf(out + 2 * i, "%02x", v[i]);
		else
			memcpy(out + 2 * i, "??", 3);
	out[2 * n] = '\0';
}

/* " (0x...)" for a little-endian number of 1, 2, 4 or 8 known bytes. */
static void number(char *out, const uint8_t *v, const bool *known, size_t n)
{
	uint64_t x = 0;

	out[0] = '\0';
	if (n != 1 && n != 2 && n != 4 && n != 8)
		return;
	for (size_t i = 0; i < n; i++) {
		if (!known[i])
			return;
		x |= (uint64_t)v[i] << (8 * i);
	}
	sprintf(out, " (0x%" PRIx64 ")", x);
}

static bool show(void *ctx, const struct hwt_mem_write *w)
{
	struct lister *l = ctx;
	const struct hwt_past_thread *pt = hwt_past_thread_of(l->past, w->tid);
	struct user_regs_struct r;
	struct hwt_symbol sym = { 0 };
	uint64_t item = item_of(l, w->tid, w->index), pc = 0;
	char before[2 * HWT_MEM_WATCH_MAX + 1], after[sizeof(before)];
	char nb[24], na[24], where[512] = "", itembuf[24] = "-";
	size_t n = (size_t)l->a->len;

	if (pt && hwt_past_regs(l->past, pt, false, w->index, &r) == 0)
		pc = r.rip;
	if (pc)
		hwt_image_symbolize(l->img, pc, &sym);
	if (item)
		snprintf(itembuf, sizeof(itembuf), "%" PRIu64, item);
	hex(before, w->before, w->known, n);
	hex(after, w->after, w->known, n);
	if (l->a->tsv) {
		printf("%d\t%s\t0x%" PRIx64 "\t%s\t", w->tid, itembuf, pc,
		       sym.function ? sym.function : "");
		if (sym.file)
			printf("%s:%d", sym.file, sym.line);
		printf("\t%s\t%s\n", before, after);
	} else {
		if (sym.function)
			snprintf(where, sizeof(where), " %s+%" PRIu64,
				 sym.function, pc - sym.func_addr);
		if (sym.file)
			snprintf(where + strlen(where),
				 sizeof(where) - strlen(where), " at %s:%d",
				 sym.file, sym.line);
		number(nb, w->before, w->known, n);
		number(na, w->after, w->known, n);
		printf("thread %d item %s: 0x%" PRIx64 "%s\n"
		       "    before %s%s\n    after  %s%s\n", w->tid, itembuf,
		       pc, where, before, nb, after, na);
	}
	return !l->a->last || ++l->shown < l->a->last;
}

static size_t now_of(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return hwt_image_read(ctx, addr, buf, len);
}

int cmd_writes(int argc, char **argv)
{
	struct writes_args a = { 0 };
	struct lister l = { .a = &a };
	struct hwt_bundle *b = NULL;
	struct hwt_past *past = NULL;
	struct hwt_mem_thread *threads = NULL;
	struct hwt_mem_history h;
	struct hwt_err err = { 0 };
	char *path = NULL, *core = NULL;
	bool cut = false;
	int rc, n = 0;

	if ((rc = parse_args(argc, argv, &a)))
		return rc;
	if ((rc = hwt_bundle_read(a.path, &b, &err)))
		goto out;
	if (!b->data_history || !b->core) {
		rc = hwt_err_set(&err, ENOENT, "%s has no %s: who wrote memory "
				 "is known from a recording with a data "
				 "history and a core (hwtrace record --backend "
				 "ptrace, or --backend valgrind --values, of a "
				 "program that crashes)", a.path,
				 b->data_history ? "core" : "data history");
		goto out;
	}
	if (!(path = hwt_bundle_path(b, b->data_history)) ||
	    !(core = hwt_bundle_path(b, b->core))) {
		rc = hwt_err_set(&err, ENOMEM, "out of memory");
		goto out;
	}
	/* The core alone is the present's memory; the image with the
	 * modules places pcs. */
	if ((rc = hwt_past_read(path, &past, &err)) ||
	    (rc = hwt_image_new(&l.now, &err)) ||
	    (rc = hwt_image_add_core(l.now, core, &err)) ||
	    (rc = hwt_image_new(&l.img, &err)))
		goto out;
	hwt_image_add_bundle(l.img, b, NULL);   /* a missing module: no name */
	l.b = b;
	l.past = past;
	l.hist = calloc(b->nthreads ? b->nthreads : 1, sizeof(*l.hist));
	threads = calloc(past->nthreads ? past->nthreads : 1,
			 sizeof(*threads));
	if (!l.hist || !threads) {
		rc = hwt_err_set(&err, ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = hwt_past_memory(past, &err)) < 0)
		goto out;
	hwt_past_mem_view(past, threads, now_of, l.now, &h);
	n = hwt_mem_history_writes(&h, a.addr, a.len, show, &l, &cut);
	if (n < 0) {
		rc = hwt_err_set(&err, -n, "searching the data history");
		goto out;
	}
	if (!a.tsv && (!a.last || l.shown < a.last))
		printf("%s\n", cut ? "(earlier writes cannot be told: bytes "
		       "there are unknown before this point)" : n ?
		       "(the recorded history starts here)" :
		       "(no recorded store changed these bytes)");
out:
	fflush(stdout);
	for (size_t t = 0; l.hist && t < b->nthreads; t++)
		if (l.hist[t])
			hwt_history_free(l.hist[t]);
	free(l.hist);
	free(threads);
	free(path);
	free(core);
	hwt_past_free(past);
	hwt_image_free(l.img);
	hwt_image_free(l.now);
	hwt_bundle_free(b);
	return rc ? cli_fail(&err) : 0;
}
