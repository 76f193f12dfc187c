// SPDX-License-Identifier: BSD-2-Clause
/* export.c - `hwtrace export`: --lldb writes any x86-64 history as an
 * LLDB intel-pt bundle, so that stock LLDB's `trace load` opens it;
 * --chrome and --svg write the call history as pictures' sources
 * (export_chrome.c, export_svg.c).
 *
 * Each thread's history is written as Intel PT with hwt_pt_encode, one
 * trace per thread, or with --per-cpu as per-cpu traces and context-switch
 * records (export_cpus.c); the modules are copied so the bundle needs
 * nothing from this machine. The bundle is staged and renamed into place
 * like record's (bundle_write.c). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hwt-replay.h"
#include "util.h"

static const char export_usage[] =
	"usage: hwtrace export --lldb [--per-cpu [--cpus N] [--slice N]] -o OUTDIR PATH\n"
	"       hwtrace export --chrome -o FILE PATH\n"
	"       hwtrace export --svg -o FILE PATH\n"
	"\n"
	"  --lldb               write an LLDB intel-pt bundle\n"
	"  --chrome             write the call history as Trace Event JSON, for\n"
	"                       Perfetto (ui.perfetto.dev) and chrome://tracing\n"
	"  --svg                write the call history as an SVG flame chart\n"
	"  --per-cpu            per-cpu traces with perf context-switch records,\n"
	"                       as LLDB's per-cpu tracing saves them, instead of\n"
	"                       one trace per thread\n"
	"  --cpus N             cpus the threads take turns on (default 2)\n"
	"  --slice N            instructions a thread runs per turn (default 4096)\n"
	"  -o, --output OUTDIR  the new bundle directory; must not exist\n"
	"                       (--chrome, --svg: the file, replaced whole)\n"
	"  -r, --range A,B      --chrome, --svg: items A to B of each thread\n"
	"  -l, --last N         ... its newest N items\n"
	"  -s, --since FUNC     ... from its most recent entry into FUNC\n"
	"\n"
	"--lldb: PATH is an x86-64 bundle (hwtrace-sw, hwtrace-bts or intel-pt).\n"
	"Each thread's history becomes Intel PT; modules are copied into OUTDIR.\n"
	"Then: lldb -o 'trace load OUTDIR/trace.json'. See docs/lldb.md.\n"
	"--chrome, --svg: PATH is any bundle or snapshot hwtrace dump reads.\n"
	"\n"
	"Examples:\n"
	"  hwtrace export --lldb -o crash.lldb crash.bundle\n"
	"  hwtrace export --chrome -o crash.json crash.bundle   # open in ui.perfetto.dev\n"
	"  hwtrace export --svg -o crash.svg crash.bundle       # open in a browser\n"
	"  hwtrace export --svg --since main -o main.svg crash.bundle\n";

#define EXPORT_CPUS 2
#define EXPORT_SLICE 4096

/* cpuid of a Skylake server (family 6, model 0x55, stepping 4): a real
 * Intel cpu that libipt knows, so LLDB's decoder applies no unknown-cpu
 * defaults. Our streams use no packet whose errata depend on it. */
static const struct hwt_cpu_info export_cpu = {
	.vendor = "GenuineIntel", .family = 6, .model = 0x55, .stepping = 4,
};

enum export_format { EXPORT_NONE, EXPORT_LLDB, EXPORT_CHROME, EXPORT_SVG };

struct export_args {
	const char *out, *path;
	enum export_format format;
	struct cli_window win;       /* --chrome, --svg */
	bool per_cpu;
	uint64_t cpus, slice;
};

static int parse_args(int argc, char **argv, struct export_args *a)
{
	static const struct option longopts[] = {
		{ "lldb", no_argument, NULL, 'L' },
		{ "chrome", no_argument, NULL, 'J' },
		{ "svg", no_argument, NULL, 'G' },
		{ "per-cpu", no_argument, NULL, 'P' },
		{ "cpus", required_argument, NULL, 'C' },
		{ "slice", required_argument, NULL, 'S' },
		{ "output", required_argument, NULL, 'o' },
		{ "range", required_argument, NULL, 'r' },
		{ "last", required_argument, NULL, 'l' },
		{ "since", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "o:r:l:s:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
		case 'l':
		case 's':
			if ((rc = cli_window_option(&a->win, "export", c, optarg)))
				return rc;
			break;
		case 'L':
		case 'J':
		case 'G':
			if (a->format != EXPORT_NONE)
				return cli_usage_error("export", "give one "
						       "format: --lldb, --chrome "
						       "or --svg");
			a->format = c == 'L' ? EXPORT_LLDB :
				    c == 'J' ? EXPORT_CHROME : EXPORT_SVG;
			break;
		case 'P':
			a->per_cpu = true;
			break;
		case 'C':
			if (hwt_parse_u64(optarg, &a->cpus) || !a->cpus ||
			    a->cpus > HWT_BUNDLE_MAX_CPUS)
				return cli_usage_error("export", "--cpus takes "
						       "1 to %u, not '%s'",
						       HWT_BUNDLE_MAX_CPUS,
						       optarg);
			break;
		case 'S':
			if (hwt_parse_u64(optarg, &a->slice) || !a->slice ||
			    a->slice > UINT32_MAX)
				return cli_usage_error("export", "--slice takes "
						       "1 to %u instructions, "
						       "not '%s'", UINT32_MAX,
						       optarg);
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'h':
			fputs(export_usage, stdout);
			exit(0);
		default:
			return cli_usage_error("export", "bad option");
		}
	}
	if (a->format == EXPORT_NONE)
		return cli_usage_error("export", "give the format: --lldb, "
				       "--chrome or --svg");
	if (a->per_cpu && a->format != EXPORT_LLDB)
		return cli_usage_error("export", "--per-cpu is for --lldb");
	if (a->format == EXPORT_LLDB &&
	    (a->win.has_range || a->win.newest || a->win.since))
		return cli_usage_error("export", "--range, --last and --since "
				       "are for --chrome and --svg");
	if ((a->cpus || a->slice) && !a->per_cpu)
		return cli_usage_error("export", "--cpus and --slice are for "
				       "--per-cpu");
	if (!a->out)
		return cli_usage_error("export", a->format == EXPORT_LLDB ?
				       "give the output directory: -o OUTDIR" :
				       "give the output file: -o FILE");
	if (optind != argc - 1)
		return cli_usage_error("export", optind >= argc ?
				       "no bundle given" : "more than one bundle given");
	a->path = argv[optind];
	return 0;
}

/* hwt_pt_encode writes x86-64 only; a CoreSight snapshot (or a bundle
 * whose triple names another architecture) is refused before anything is
 * written. */
static int check_x86(const struct hwt_bundle *b, const char *path,
		     struct hwt_err *err)
{
	if (!strcmp(b->type, HWT_BUNDLE_TYPE_CORESIGHT) ||
	    (b->triple && strncmp(b->triple, "x86_64", 6)))
		return hwt_err_set(err, EINVAL, "%s is a %s trace (%s), not "
				   "x86-64: only x86-64 histories can be "
				   "written as Intel PT", path, b->type,
				   b->triple ? b->triple : "Arm");
	return 0;
}

/* Thread t of b as o's, in o's process process. */
static int export_thread(const struct hwt_bundle *b, size_t t,
			 struct hwt_bundle_images *ims, const char *staging,
			 size_t process, struct hwt_bundle_thread *ot,
			 struct hwt_err *err)
{
	struct cli_progress pr;
	const HWT_OPTS(hwt_pt_encode_opts, opts, .cpu = export_cpu,
		       .progress = cli_progress_report, .progress_ctx = &pr);
	struct hwt_history *h;
	uint8_t *pt = NULL;
	size_t size = 0;
	int rc;

	struct hwt_image *img;

	ot->tid = b->threads[t].tid;
	ot->process = process;
	if (asprintf(&ot->trace_file, "threads/%" PRId64 ".intelpt",
		     ot->tid) < 0) {
		ot->trace_file = NULL;
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	if ((rc = hwt_bundle_images_thread(ims, t, &img, err)) ||
	    (rc = hwt_history_open(b, t, img, &h, err))) {
		hwt_err_prefix(err, "thread %" PRId64 ": ", ot->tid);
		return rc;
	}
	/* An empty history has nothing to encode; LLDB reads an empty trace
	 * file as a thread without instructions. */
	cli_progress_begin(&pr, "hwtrace export: encoding", 0, true);
	if (hwt_history_count(h))
		rc = hwt_pt_encode(h, img, 0, 0, &opts, &pt, &size, err);
	cli_progress_end(&pr);
	hwt_history_free(h);
	if (!rc)
		rc = hwt_bundle_stage_write(staging, ot->trace_file, pt, size, err);
	free(pt);
	ot->trace_size = size;
	if (rc)
		hwt_err_prefix(err, "thread %" PRId64 ": ", ot->tid);
	return rc;
}

/* Copy a module into modules/<system path> so that the bundle is
 * self-contained; the source is the source bundle's copy when it has one.
 * om is o->modules[k], after the k exported before it. */
static int export_module(const struct hwt_bundle *b,
			 const struct hwt_bundle_module *m, const char *staging,
			 size_t process, const struct hwt_bundle *o,
			 struct hwt_bundle_module *om, struct hwt_err *err)
{
	const char *sp = m->system_path;
	char *src;
	int rc;

	om->load_address = m->load_address;
	om->process = process;
	om->system_path = strdup(m->system_path);
	om->uuid = m->uuid ? strdup(m->uuid) : NULL;
	while (*sp == '/')
		sp++;
	if (asprintf(&om->file, "modules/%s", sp) < 0)
		om->file = NULL;
	src = m->file ? hwt_bundle_path(b, m->file) :
		hwt_bundle_path(b, m->system_path);
	if (!om->system_path || (m->uuid && !om->uuid) || !om->file || !src) {
		free(src);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	/* The same file mapped twice (dlopen again, another process) is
	 * copied once. */
	rc = 0;
	for (const struct hwt_bundle_module *p = o->modules; p < om; p++)
		if (!strcmp(p->system_path, m->system_path))
			goto out;
	rc = hwt_bundle_stage_copy(staging, om->file, src, err);
	if (rc)
		hwt_err_prefix(err, "module %s: ", m->system_path);
out:
	free(src);
	return rc;
}

/* o's processes: b's but the programs an exec replaced, which LLDB's
 * schema cannot tell from the last of their pid. Where each of b's went
 * (SIZE_MAX: left out), malloc'd; NULL out of memory. */
static size_t *keep_last_programs(const struct hwt_bundle *b,
				  struct hwt_bundle *o)
{
	size_t *kept = malloc(hwt_bundle_nprocesses(b) * sizeof(*kept));

	for (size_t p = 0; kept && p < hwt_bundle_nprocesses(b); p++) {
		kept[p] = hwt_bundle_process_replaced_by(b, p) ? SIZE_MAX :
			o->nprocesses;
		if (kept[p] != SIZE_MAX)
			o->processes[o->nprocesses++].pid =
				hwt_bundle_process_pid(b, p);
	}
	return kept;
}

static int export_lldb(const struct hwt_bundle *b,
		       const struct export_args *a, struct hwt_err *err)
{
	struct hwt_bundle_images *ims = NULL;
	struct hwt_image *img;
	struct hwt_bundle *o;
	char *staging = NULL;
	size_t *kept = NULL, replaced = 0;
	int rc;

	if ((rc = check_x86(b, a->path, err)))
		return rc;
	/* Per-cpu traces are split into threads by the context switches of
	 * one process. */
	if (a->per_cpu && hwt_bundle_nprocesses(b) > 1)
		return hwt_err_set(err, ENOTSUP, "%s holds %zu processes (the "
				   "program, children it forked, programs an "
				   "exec replaced); --per-cpu exports one: "
				   "export without it", a->path,
				   hwt_bundle_nprocesses(b));
	o = calloc(1, sizeof(*o));
	if (!o || !(o->type = strdup(HWT_BUNDLE_TYPE_PT)) ||
	    !(o->threads = calloc(b->nthreads + 1, sizeof(*o->threads))) ||
	    !(o->modules = calloc(b->nmodules + 1, sizeof(*o->modules))) ||
	    !(o->processes = calloc(hwt_bundle_nprocesses(b),
				    sizeof(*o->processes)))) {
		hwt_bundle_free(o);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	o->cpu = export_cpu;
	o->pid = b->pid;
	if (!(kept = keep_last_programs(b, o))) {
		rc = hwt_err_set(err, ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = hwt_bundle_images_new(b, &ims, err)) ||
	    (rc = hwt_bundle_images_program(ims, &img, err)) ||
	    (rc = hwt_bundle_stage_begin(a->out, &staging, err)))
		goto out;
	cli_pending_dir(staging);
	if (a->per_cpu)
		rc = export_per_cpu(b, img, &export_cpu,
				    a->cpus ? a->cpus : EXPORT_CPUS,
				    a->slice ? a->slice : EXPORT_SLICE,
				    staging, o, err);
	for (size_t t = 0; !a->per_cpu && t < b->nthreads && !rc; t++) {
		if (kept[b->threads[t].process] == SIZE_MAX) {
			replaced++;
			continue;
		}
		rc = export_thread(b, t, ims, staging,
				   kept[b->threads[t].process],
				   &o->threads[o->nthreads++], err);
	}
	for (size_t i = 0; i < b->nmodules && !rc; i++) {
		if (kept[b->modules[i].process] == SIZE_MAX)
			continue;
		rc = export_module(b, &b->modules[i], staging,
				   kept[b->modules[i].process], o,
				   &o->modules[o->nmodules++], err);
	}
	if (replaced)
		fprintf(stderr, "hwtrace: %zu histories of programs an exec "
			"replaced are left out: LLDB knows one program per "
			"process\n", replaced);
	if (!rc)
		rc = hwt_bundle_stage_commit(staging, a->out, o, err);
	cli_pending_dir(NULL);
	if (rc)
		hwt_bundle_stage_abort(staging);
out:
	free(kept);
	free(staging);
	hwt_bundle_images_free(ims);
	hwt_bundle_free(o);
	return rc;
}

int cmd_export(int argc, char **argv)
{
	struct export_args a = { 0 };
	struct hwt_bundle *b = NULL;
	struct hwt_err err = { 0 };
	int rc;

	if ((rc = parse_args(argc, argv, &a)))
		return rc;
	/* An interruption removes what is half written (output.c). */
	cli_catch_interrupts();
	if (!(rc = hwt_bundle_read(a.path, &b, &err)))
		rc = a.format == EXPORT_LLDB ? export_lldb(b, &a, &err) :
		     a.format == EXPORT_CHROME ?
		     export_chrome(b, a.path, &a.win, a.out, &err) :
		     export_svg(b, a.path, &a.win, a.out, &err);
	hwt_bundle_free(b);
	return rc ? cli_fail(&err) : 0;
}
