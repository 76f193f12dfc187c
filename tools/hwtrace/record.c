// SPDX-License-Identifier: BSD-2-Clause
/* record.c - `hwtrace record`: run a program traced and write a bundle.
 *
 * The bundle is staged next to its final name and renamed into place only
 * when complete. On a fatal signal the process is kept stopped at the
 * faulting instruction long enough to write its core into the bundle. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hwt-collect.h"
#include "util.h"

static const char record_usage[] =
	"usage: hwtrace record [OPTIONS] -- PROG [ARGS...]\n"
	"\n"
	"Run PROG with every thread traced from exec and write a trace bundle.\n"
	"The exit status is PROG's (128+N when killed by signal N). On a fatal\n"
	"signal the bundle also holds a core file of the process at the faulting\n"
	"instruction.\n"
	"\n"
	"  -o, --output DIR     bundle directory (default hwtrace-PROG-PID);\n"
	"                       must not exist\n"
	"  -b, --backend NAME   recording backend (default: the first available\n"
	"                       of those below; `hwtrace backends` says which\n"
	"                       work here and why not)\n"
	"  -s, --size BYTES     per-thread window of the newest history (default\n"
	"                       64M for valgrind, about 50 M instructions, all\n"
	"                       threads together at most twice that; else 4M;\n"
	"                       K/M/G suffixes); when it is full the oldest\n"
	"                       trace is dropped and counted as lost\n"
	"  -c, --cpu N          run tracer and program on cpu N (default: the\n"
	"                       current cpu)\n"
	"      --no-pin         do not pin to a cpu\n"
	"      --no-copy        record module paths without copying the files\n"
	"      --snapshot       perf backends: let the hardware overwrite its\n"
	"                       buffer of --size bytes instead of draining it\n"
	"      --whole[=BYTES]  keep the whole history, not a window of it\n"
	"                       (valgrind backend): what the window drops is\n"
	"                       compressed to a file beside the recording, at\n"
	"                       most BYTES per thread (default 4G), the newest\n"
	"                       kept past that; memory stays the window's\n"
	"      --values[=BYTES] valgrind backend: keep the values of the past,\n"
	"                       registers and memory before each of the newest\n"
	"                       instructions, in BYTES of memory (default 64M,\n"
	"                       about 3 M instructions); the ptrace backend\n"
	"                       always keeps them\n"
	"      --follow-fork    record the children the program forks too\n"
	"                       (valgrind backend), their threads beside its own\n"
	"      --block-step     module backend: one record per taken branch\n"
	"                       where the cpu honours block-step (expanded with\n"
	"                       the program's code on replay)\n"
	"  -q, --quiet          no summary on stderr\n"
	"\n"
	"Examples:\n"
	"  hwtrace record -o crash.bundle -- ./myprog --flag input\n"
	"  hwtrace record --backend valgrind -- python3 -c pass\n"
	"  hwtrace record --size 64M --backend ptrace -- ./myprog\n"
	"  hwtrace record --whole=16G -- ./long-test-suite\n";

/* Disk a whole recording keeps per thread by default. */
#define HWT_RECORD_WHOLE_DEFAULT (4ull << 30)

/* The usage text, then the registered backends: the list comes from the
 * collector library so it never goes stale. */
static void print_usage(void)
{
	const char *const *names;
	size_t n = hwt_collect_backends(&names);

	fputs(record_usage, stdout);
	fputs("\nBackends, in order of preference:", stdout);
	for (size_t i = 0; i < n; i++)
		printf("%s %s", i ? "," : "", names[i]);
	fputs("\n", stdout);
}

/* Bundles by trace format. CoreSight is decoded from OpenCSD snapshot
 * directories, which hwtrace cannot write yet. */
struct record_args {
	const char *output;
	struct hwt_collect_opts opts;
	bool copy_modules, quiet;
	char **prog_argv;
};

static int parse_args(int argc, char **argv, struct record_args *a)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "backend", required_argument, NULL, 'b' },
		{ "size", required_argument, NULL, 's' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "no-pin", no_argument, NULL, 'P' },
		{ "no-copy", no_argument, NULL, 'N' },
		{ "snapshot", no_argument, NULL, 'S' },
		{ "block-step", no_argument, NULL, 'B' },
		{ "follow-fork", no_argument, NULL, 'F' },
		{ "whole", optional_argument, NULL, 'W' },
		{ "values", optional_argument, NULL, 'V' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int c;

	a->opts.sz = sizeof(a->opts);
	a->copy_modules = true;
	optind = 1;
	/* '+': stop at PROG so its own options are not ours. */
	while ((c = getopt_long(argc, argv, "+o:b:s:c:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			a->output = optarg;
			break;
		case 'b':
			a->opts.backend = optarg;
			break;
		case 's':
			if (hwt_parse_size(optarg, &v) || v < HWT_COLLECT_MIN_BUFFER ||
			    v > HWT_COLLECT_MAX_BUFFER)
				return cli_usage_error("record",
					"--size '%s' must be a size between 64K and 16G",
					optarg);
			a->opts.buffer_size = v;
			break;
		case 'c':
			if (hwt_parse_u64(optarg, &v) || v >= CPU_SETSIZE)
				return cli_usage_error("record",
					"--cpu '%s' is not a cpu number", optarg);
			a->opts.pin = HWT_PIN_CPU;
			a->opts.cpu = (unsigned)v;
			break;
		case 'P':
			a->opts.pin = HWT_PIN_NONE;
			break;
		case 'N':
			a->copy_modules = false;
			break;
		case 'S':
			a->opts.perf_snapshot = true;
			break;
		case 'B':
			a->opts.block_step = true;
			break;
		case 'F':
			a->opts.follow_fork = true;
			break;
		case 'W':
			v = HWT_RECORD_WHOLE_DEFAULT;
			if (optarg && (hwt_parse_size(optarg, &v) ||
				       v < HWT_COLLECT_MIN_BUFFER))
				return cli_usage_error("record",
					"--whole='%s' must be a size of at "
					"least 64K", optarg);
			a->opts.whole_bound = v;
			break;
		case 'V':
			v = HWT_COLLECT_VALUES_DEFAULT;
			if (optarg && (hwt_parse_size(optarg, &v) ||
				       v < HWT_COLLECT_VALUES_MIN ||
				       v > HWT_COLLECT_VALUES_MAX))
				return cli_usage_error("record",
					"--values='%s' must be a size between "
					"1M and 16G", optarg);
			a->opts.data_bytes = v;
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'h':
			print_usage();
			exit(0);
		default:
			return cli_usage_error("record", "bad option");
		}
	}
	if (optind >= argc)
		return cli_usage_error("record", "no program given");
	a->prog_argv = argv + optind;
	return 0;
}

/* Interruption (^C, SIGTERM, SIGHUP). While the program runs, the signal
 * is the program's: a terminal sends it to the program too, and one sent
 * to hwtrace alone is passed on to it, so the program ends as it would
 * and its recording, that end included, is written. Once it has ended, a
 * signal stops the writing: the staged bundle is removed, leaving no
 * bundle rather than a partial one. */
static volatile sig_atomic_t writing, stop_writing;
static volatile pid_t program;

static void on_interrupt(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (writing)
		stop_writing = sig;
	else if (si->si_code == SI_USER && si->si_pid != program && program > 0)
		kill(program, sig);
}

static void catch_interrupts(pid_t pid)
{
	struct sigaction sa = { .sa_sigaction = on_interrupt,
				.sa_flags = SA_SIGINFO };

	program = pid;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static int interrupted(struct hwt_err *err)
{
	return stop_writing ? hwt_err_set(err, EINTR, "interrupted by %s "
					  "while writing the bundle: none was "
					  "written", strsignal(stop_writing))
			    : 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int exit_code(const struct hwt_collect_end *end)
{
	switch (end->reason) {
	case HWT_STOP_EXITED:
		return end->status;
	case HWT_STOP_SIGNALED:
	case HWT_STOP_FAULT:
		return 128 + end->signal;
	case HWT_STOP_NONE:
		break;
	}
	return HWT_EXIT_ERROR;
}

static void summary(const char *dir, const struct hwt_bundle *b,
		    const struct hwt_collect_end *end, bool block_step,
		    bool whole)
{
	uint64_t total = 0, lost = 0;

	for (size_t i = 0; i < b->nthreads; i++) {
		total += b->threads[i].insn_total;
		lost += b->threads[i].lost_insns;
	}
	fprintf(stderr, "hwtrace: %s: ", dir);
	if (end->reason == HWT_STOP_EXITED)
		fprintf(stderr, "program exited with status %d", end->status);
	else
		fprintf(stderr, "program killed by signal %d (%s)%s", end->signal,
			strsignal(end->signal),
			b->core ? ", core saved" : "");
	if (strcmp(b->type, HWT_BUNDLE_TYPE_SW)) {
		uint64_t bytes = 0;

		/* Hardware trace is counted when decoded, not here. */
		for (size_t i = 0; i < b->nthreads; i++)
			bytes += b->threads[i].trace_size;
		fprintf(stderr, "; %zu thread%s, %llu bytes of %s trace",
			b->nthreads, b->nthreads == 1 ? "" : "s",
			(unsigned long long)bytes, b->type);
	} else if (block_step) {
		/* Branch records stand for the straight-line code between
		 * them, which only replay can count. */
		fprintf(stderr, "; %zu thread%s, %llu block-step records",
			b->nthreads, b->nthreads == 1 ? "" : "s",
			(unsigned long long)total);
	} else {
		fprintf(stderr, "; %zu thread%s, %llu instructions recorded",
			b->nthreads, b->nthreads == 1 ? "" : "s",
			(unsigned long long)total);
	}
	if (lost)
		fprintf(stderr, whole ? ", %llu oldest lost to the --whole "
			"bound" : ", %llu oldest lost to ring wrap",
			(unsigned long long)lost);
	fputc('\n', stderr);
}

/* The core of the fault or of the exit into the staged bundle, and where
 * a fault stopped the program. */
static int stage_core(struct hwt_collector *col, const char *staging,
		      const struct hwt_collect_end *end, struct hwt_bundle *b,
		      struct hwt_err *err)
{
	char *core_path;
	int rc;

	if (end->reason == HWT_STOP_FAULT) {
		b->stop_tid = end->tid;
		b->stop_pc = end->pc;
	}
	if (asprintf(&core_path, "%s/core", staging) < 0)
		return hwt_err_set(err, ENOMEM, "out of memory");
	rc = hwt_collect_write_core(col, core_path, err);
	/* A core of the exit is a convenience: without it the history is
	 * still whole (a full disk cut it short). */
	if (rc < 0 && end->reason != HWT_STOP_FAULT) {
		fprintf(stderr, "hwtrace: warning: no core of the program's "
			"exit in the bundle: %s\n", err->msg);
		unlink(core_path);
		rc = 0;
	} else if (rc == 0) {
		b->core = "core";
	}
	free(core_path);
	return rc;
}

int cmd_record(int argc, char **argv)
{
	struct record_args a = { 0 };
	struct hwt_collector *col = NULL;
	struct hwt_collect_end end = { 0 };
	struct hwt_bundle b = { .type = HWT_BUNDLE_TYPE_SW };
	struct hwt_err err = { 0 };
	struct cli_progress pr = { 0 };
	char *staging = NULL, *outdir = NULL;
	int rc, status = HWT_EXIT_ERROR;

	if ((rc = parse_args(argc, argv, &a)))
		return rc;
	if ((rc = hwt_collect_launch(&a.opts, a.prog_argv, &col, &err)))
		return cli_fail(&err);
	/* Launch checked the hardware; a perf backend's program has not run
	 * any of its code yet, and now never will. */
	if (!(hwt_collect_backend_caps(col) & HWT_COLLECT_CAP_BUNDLE)) {
		hwt_collect_close(col);
		hwt_err_set(&err, ENOTSUP, "the %s backend's trace cannot be "
			    "written into a bundle yet (hwtrace reads "
			    "CoreSight only as OpenCSD snapshot directories); "
			    "pick another --backend",
			    hwt_collect_backend_name(col));
		return cli_fail(&err);
	}
	/* A backend the automatic choice would have used is not there (a
	 * Valgrind tool that is not built, say): the one recording may be
	 * far slower. */
	if (!a.quiet && hwt_collect_passed_over(col))
		fprintf(stderr, "hwtrace: note: %s; recording with %s\n",
			hwt_collect_passed_over(col),
			hwt_collect_backend_name(col));
	if (a.output)
		outdir = strdup(a.output);
	else if (asprintf(&outdir, "hwtrace-%s-%d", base_name(a.prog_argv[0]),
			  (int)hwt_collect_pid(col)) < 0)
		outdir = NULL;
	if (!outdir) {
		hwt_collect_close(col);
		return cli_fail(&(struct hwt_err){ ENOMEM, "out of memory" });
	}
	/* Fail before running the program if the bundle cannot be written. */
	if ((rc = hwt_bundle_stage_begin(outdir, &staging, &err)))
		goto out;
	catch_interrupts(hwt_collect_pid(col));
	rc = hwt_collect_run(col, &end, &err);
	writing = 1;
	if (rc)
		goto out;
	/* The program is done with the terminal: compressing the traces and
	 * copying the modules can take a while. */
	cli_progress_begin(&pr, "hwtrace record: writing the bundle", 0,
			   !a.quiet);
	cli_progress_show(&pr);
	if (hwt_collect_warning(col))
		fprintf(stderr, "hwtrace: warning: %s\n", hwt_collect_warning(col));
	if ((end.reason == HWT_STOP_FAULT || end.exit_core) &&
	    ((rc = stage_core(col, staging, &end, &b, &err)) ||
	     (rc = interrupted(&err))))
		goto out;
	b.stop_reason = end.reason;
	b.stop_status = end.status;
	b.stop_signal = end.signal;
	b.stop_note = (char *)hwt_collect_warning(col);
	if ((rc = hwt_collect_stage(staging, col, NULL, 0, a.copy_modules,
				    &b, &err)) || (rc = interrupted(&err)))
		goto out;
	if (end.reason == HWT_STOP_FAULT &&
	    (rc = hwt_collect_finish(col, &end, &err)))
		goto out;
	status = exit_code(&end);
	if ((rc = interrupted(&err)) ||
	    (rc = hwt_bundle_stage_commit(staging, outdir, &b, &err)))
		goto out;
	cli_progress_end(&pr);
	if (!a.quiet)
		summary(outdir, &b, &end, a.opts.block_step,
			a.opts.whole_bound != 0);
out:
	cli_progress_end(&pr);
	if (rc) {
		cli_fail(&err);
		status = stop_writing ? 128 + stop_writing : HWT_EXIT_ERROR;
		if (staging)
			hwt_bundle_stage_abort(staging);
	}
	hwt_collect_close(col);
	hwt_collect_stage_free(&b);
	free(staging);
	free(outdir);
	return status;
}
