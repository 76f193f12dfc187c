// SPDX-License-Identifier: BSD-2-Clause
/* dump.c - `hwtrace dump`: instruction and function-call history.
 *
 * Human output follows GDB's `record instruction-history` and
 * `record function-call-history /ilc`; --tsv is the stable machine format
 * documented in docs/cli.md. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hwt-replay.h"
#include "util.h"

static const char dump_usage[] =
	"usage: hwtrace dump (--insn | --calls | --ranges) [OPTIONS] PATH\n"
	"\n"
	"  --insn               instruction history, oldest first\n"
	"  --calls              function-call history with nesting\n"
	"  --ranges             executed address ranges (decoded blocks)\n"
	"  -t, --thread TID     only this thread\n"
	"  -r, --range A,B      items A to B (inclusive, 1 = oldest)\n"
	"  -l, --last N         the newest N items (calls with --calls)\n"
	"  -s, --since FUNC     from the most recent entry into function FUNC\n"
	"      --tsv            tab-separated output (docs/cli.md)\n"
	"\n"
	"PATH is a bundle directory, its trace.json, or a CoreSight snapshot\n"
	"directory (TID is then the trace ID, e.g. 0x10).\n"
	"\n"
	"Examples:\n"
	"  hwtrace dump --insn --last 30 crash.bundle\n"
	"  hwtrace dump --calls --since main crash.bundle\n"
	"  hwtrace dump --insn --thread 4242 --tsv crash.bundle\n";

enum dump_what { DUMP_NONE, DUMP_INSN, DUMP_CALLS, DUMP_RANGES };

struct dump_args {
	enum dump_what what;
	bool tsv, has_tid;
	int64_t tid;
	struct cli_window win;
	const char *path;
};

static int parse_args(int argc, char **argv, struct dump_args *a)
{
	static const struct option longopts[] = {
		{ "insn", no_argument, NULL, 'i' },
		{ "calls", no_argument, NULL, 'C' },
		{ "ranges", no_argument, NULL, 'R' },
		{ "thread", required_argument, NULL, 't' },
		{ "range", required_argument, NULL, 'r' },
		{ "last", required_argument, NULL, 'l' },
		{ "since", required_argument, NULL, 's' },
		{ "tsv", no_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "t:r:l:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
		case 'C':
		case 'R':
			if (a->what != DUMP_NONE)
				return cli_usage_error("dump",
					"give one of --insn, --calls and --ranges");
			a->what = c == 'i' ? DUMP_INSN : c == 'C' ? DUMP_CALLS :
				DUMP_RANGES;
			break;
		case 't':
			if (hwt_parse_u64(optarg, &v) || v == 0 || v > INT32_MAX)
				return cli_usage_error("dump",
					"--thread '%s' is not a thread id", optarg);
			a->tid = (int64_t)v;
			a->has_tid = true;
			break;
		case 'r':
		case 'l':
		case 's':
			if ((rc = cli_window_option(&a->win, "dump", c, optarg)))
				return rc;
			break;
		case 'T':
			a->tsv = true;
			break;
		case 'h':
			fputs(dump_usage, stdout);
			exit(0);
		default:
			return cli_usage_error("dump", "bad option");
		}
	}
	if (a->what == DUMP_NONE)
		return cli_usage_error("dump", "give --insn or --calls (or --ranges)");
	if (optind != argc - 1)
		return cli_usage_error("dump", optind >= argc ?
				       "no bundle given" : "more than one bundle given");
	a->path = argv[optind];
	return 0;
}

/* One formatted history line (docs/cli.md). */
static char line[16384];

static int dump_insns(const struct dump_args *a, const char *tid,
		      struct hwt_history *h, struct hwt_image *img,
		      struct hwt_err *err)
{
	uint64_t count = hwt_history_count(h), first, last;
	int rc = cli_window_apply(&a->win, h, img, &first, &last, err);
	struct cli_progress pr;

	if (rc)
		return rc;
	if (!a->tsv)
		printf("Thread %s (%" PRIu64 " items):\n", tid, count);
	/* Only when the history goes elsewhere than the terminal. */
	cli_progress_begin(&pr, "hwtrace dump: decoding", last - first + 1,
			   !isatty(STDOUT_FILENO));
	for (uint64_t i = first; i <= last; i++) {
		struct hwt_item it;

		cli_progress_step(&pr, i - first);
		if ((rc = hwt_history_get(h, i, &it, err))) {
			cli_progress_end(&pr);
			return rc;
		}
		/* A line longer than the buffer (a huge symbol name) is
		 * printed cut short rather than not at all. */
		hwt_format_item(img, tid, &it, a->tsv, line, sizeof(line));
		puts(line);
	}
	cli_progress_end(&pr);
	return 0;
}

/* How far back --calls --last N looks: a thread that runs one loop
 * without calls for a billion instructions would be decoded whole. The
 * search stops when two growths of the window found no call more, or
 * at this many instructions, and says so. */
#define NEWEST_CALLS_STALLS 2
#define NEWEST_CALLS_SPAN_MAX ((uint64_t)1 << 24)

/* --last N with --calls: the newest N calls, as GDB's function-call
 * history counts them, not the calls of the newest N instructions. The
 * calls of a window that grows from the newest item until it holds more
 * than N (its oldest may be cut short), the whole history, or the search
 * stops (*cut: the window's first item then); *skip: those before the
 * N. */
static int newest_calls(struct hwt_history *h, struct hwt_image *img,
			uint64_t n, struct hwt_calls **out, size_t *skip,
			uint64_t *cut, struct hwt_err *err)
{
	uint64_t count = hwt_history_count(h);
	uint64_t span = n < UINT64_MAX / 64 ? n * 64 : count;
	size_t before = 0;
	int stalls = 0;

	*cut = 0;
	for (;;) {
		uint64_t first = span < count ? count - span + 1 : 1;
		size_t got;
		int rc = hwt_calls_build(h, img, first, count, out, err);

		if (rc)
			return rc;
		got = hwt_calls_count(*out);
		stalls = got > before ? 0 : stalls + 1;
		before = got;
		if (got > n || first == 1 || stalls == NEWEST_CALLS_STALLS ||
		    span >= NEWEST_CALLS_SPAN_MAX) {
			*skip = got > n ? got - (size_t)n : 0;
			*cut = got > n || first == 1 ? 0 : first;
			return 0;
		}
		hwt_calls_free(*out);
		span = span < UINT64_MAX / 4 ? span * 4 : UINT64_MAX;
	}
}

static int dump_calls(const struct dump_args *a, const char *tid,
		      struct hwt_history *h, struct hwt_image *img,
		      struct hwt_err *err)
{
	struct hwt_calls *calls;
	uint64_t first, last, cut = 0;
	size_t skip = 0;
	int rc = a->win.newest ? 0 :
		cli_window_apply(&a->win, h, img, &first, &last, err);

	if (rc)
		return rc;
	if (!a->tsv)
		printf("Thread %s:\n", tid);
	/* An empty history (a trace with nothing decodable) has no calls. */
	if (!hwt_history_count(h))
		return 0;
	rc = a->win.newest ? newest_calls(h, img, a->win.newest, &calls,
					  &skip, &cut, err) :
		hwt_calls_build(h, img, first, last, &calls, err);
	if (rc)
		return rc;
	for (size_t i = skip; i < hwt_calls_count(calls); i++) {
		hwt_format_call(tid, i - skip + 1, hwt_calls_get(calls, i),
				a->tsv, line, sizeof(line));
		puts(line);
	}
	if (cut)
		fprintf(stderr, "hwtrace: thread %s: %zu of the newest %" PRIu64
			" calls: the search stopped at item %" PRIu64 ", where "
			"the oldest shown may have begun earlier (--range "
			"1,%" PRIu64 " for the calls before)\n", tid,
			hwt_calls_count(calls), a->win.newest, cut, cut);
	hwt_calls_free(calls);
	return 0;
}

static const char *isa_name(enum hwt_isa isa)
{
	switch (isa) {
	case HWT_ISA_A64: return "A64";
	case HWT_ISA_A32: return "A32";
	case HWT_ISA_T32: return "T32";
	case HWT_ISA_X86_32: return "x86-32";
	default: return "x86-64";
	}
}

static void print_range(const char *tid, const struct hwt_item *first,
			const struct hwt_item *last, uint64_t n, bool tsv)
{
	if (tsv)
		printf("%s\t0x%" PRIx64 "\t0x%" PRIx64 "\t%" PRIu64 "\t%s\n",
		       tid, first->addr, last->addr + last->len, n,
		       isa_name(first->isa));
	else
		printf("0x%016" PRIx64 "-0x%016" PRIx64 "\t%" PRIu64
		       " instructions\t%s\n", first->addr,
		       last->addr + last->len, n, isa_name(first->isa));
}

/* Executed ranges: the decoder's blocks as the history expands them, so
 * END (exclusive) is the last instruction's address plus its decoded
 * length. Gaps are shown as in --insn. */
static int dump_ranges(const struct dump_args *a, const char *tid,
		       struct hwt_history *h, struct hwt_image *img,
		       struct hwt_err *err)
{
	struct hwt_item it, first = { 0 }, last = { 0 };
	uint64_t from, to, n = 0;
	int rc = cli_window_apply(&a->win, h, img, &from, &to, err);

	if (rc)
		return rc;
	if (!a->tsv)
		printf("Thread %s:\n", tid);
	for (uint64_t i = from; i <= to; i++) {
		if ((rc = hwt_history_get(h, i, &it, err)))
			return rc;
		if (n && (it.kind == HWT_ITEM_GAP || (it.flags & HWT_ITEM_BLOCK))) {
			print_range(tid, &first, &last, n, a->tsv);
			n = 0;
		}
		if (it.kind == HWT_ITEM_GAP) {
			if (a->tsv)
				printf("%s\tgap\t%s\n", tid, it.gap_reason);
			else
				printf("[gap: %s]\n", it.gap_reason);
			continue;
		}
		if (!n++)
			first = it;
		last = it;
	}
	if (n)
		print_range(tid, &first, &last, n, a->tsv);
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	struct dump_args a = { 0 };
	struct hwt_bundle *b = NULL;
	struct hwt_bundle_images *ims = NULL;
	struct hwt_err err = { 0 };
	bool found = false;
	int rc;

	if ((rc = parse_args(argc, argv, &a)))
		return rc;
	if ((rc = hwt_bundle_read(a.path, &b, &err)) ||
	    (rc = hwt_bundle_images_new(b, &ims, &err)))
		goto out;
	for (size_t t = 0; t < b->nthreads && !rc; t++) {
		struct hwt_history *h;
		struct hwt_image *img;
		int64_t tid = b->threads[t].tid;
		char name[32];

		if (a.has_tid && tid != a.tid)
			continue;
		found = true;
		hwt_bundle_thread_name(b, t, name, sizeof(name));
		if ((rc = hwt_bundle_images_thread(ims, t, &img, &err)))
			break;
		if ((rc = hwt_history_open(b, t, img, &h, &err))) {
			hwt_err_prefix(&err, "thread %s: ", name);
			break;
		}
		rc = a.what == DUMP_INSN ? dump_insns(&a, name, h, img, &err) :
			a.what == DUMP_CALLS ? dump_calls(&a, name, h, img, &err) :
			dump_ranges(&a, name, h, img, &err);
		hwt_history_free(h);
	}
	/* A CoreSight snapshot without a source hwtrace decodes (software
	 * messages only, say) has no thread: say why rather than print
	 * nothing. */
	if (!rc && !b->nthreads && b->nsources) {
		fprintf(stderr, "hwtrace: %s has no instruction trace hwtrace "
			"decodes:", a.path);
		for (size_t i = 0; i < b->nsources; i++)
			fprintf(stderr, "%s %s: %s", i ? ";" : "",
				b->sources[i].name, b->sources[i].skipped ?
				b->sources[i].skipped : "not decoded");
		fputc('\n', stderr);
	}
	else if (!rc && !found)
		rc = hwt_err_set(&err, ENOENT, b->nsources ?
				 "%s has no trace ID 0x%" PRIx64 :
				 "%s has no thread %" PRId64, a.path, a.tid);
out:
	fflush(stdout);
	hwt_bundle_images_free(ims);
	hwt_bundle_free(b);
	return rc ? cli_fail(&err) : 0;
}
