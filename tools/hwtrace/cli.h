/* SPDX-License-Identifier: BSD-2-Clause */
/* cli.h - the hwtrace subcommands and what they share. */
#ifndef HWT_CLI_H
#define HWT_CLI_H

#include "hwt-common.h"
#include "progress.h"

/* Exit codes besides the traced program's own status (record). */
#define HWT_EXIT_USAGE 2
#define HWT_EXIT_ERROR 1

int cmd_record(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_index(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_writes(int argc, char **argv);

struct hwt_image;
struct hwt_history;

/* window.c: --range A,B, --last N or --since FUNC (at most one). */
struct cli_window {
	bool has_range;
	uint64_t first, last, newest;
	const char *since;
};

/* Take option opt ('r', 'l' or 's') of command cmd; a usage error (its
 * exit code) for a bad value or a second window option. */
int cli_window_option(struct cli_window *w, const char *cmd, int opt,
		      const char *arg);
/* The 1-based items [*first, *last] of h the window covers. */
int cli_window_apply(const struct cli_window *w, struct hwt_history *h,
		     struct hwt_image *img, uint64_t *first, uint64_t *last,
		     struct hwt_err *err);

/* export_cpus.c: the threads of b, whose code img holds, as the cpus[] of
 * the per-cpu LLDB bundle o (its threads, pt_cpus and tscPerfZeroConversion
 * filled in, the files written into staging): the histories cut into
 * slices of about slice items run in turn on ncpus cpus, Intel PT streams
 * for cpu. */
int export_per_cpu(const struct hwt_bundle *b, struct hwt_image *img,
		   const struct hwt_cpu_info *cpu, size_t ncpus,
		   uint64_t slice, const char *staging, struct hwt_bundle *o,
		   struct hwt_err *err);


/* output.c: from here on ^C, SIGTERM and SIGHUP remove what is being
 * written (cli_write_file's temporary file, the staging directory named
 * by cli_pending_dir; NULL: none) and end the command with 128+N. */
void cli_catch_interrupts(void);
void cli_pending_dir(const char *dir);
/* output.c: write path whole (a temporary file renamed over it). */
int cli_write_file(const char *path, const void *data, size_t len,
		   struct hwt_err *err);

/* export_chrome.c, export_svg.c: the bundle's call history as Trace
 * Event JSON (Perfetto, chrome://tracing) or as an SVG flame chart. */
int export_chrome(const struct hwt_bundle *b, const char *path,
		  const struct cli_window *win, const char *out,
		  struct hwt_err *err);
int export_svg(const struct hwt_bundle *b, const char *path,
	       const struct cli_window *win, const char *out,
	       struct hwt_err *err);

/* Print "hwtrace: <msg>" for err to stderr; returns HWT_EXIT_ERROR. */
int cli_fail(const struct hwt_err *err);
/* Print a usage error and a hint; returns HWT_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
