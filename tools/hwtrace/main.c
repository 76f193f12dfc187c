// SPDX-License-Identifier: BSD-2-Clause
/* main.c - hwtrace command line: dispatch to subcommands. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hwt-collect.h"
#include "cli.h"

static const char usage[] =
	"usage: hwtrace COMMAND [OPTIONS] ...\n"
	"\n"
	"  record [-o DIR] [--backend NAME] [--size BYTES] [--cpu N] -- PROG [ARGS...]\n"
	"         run PROG with every thread traced and write a trace bundle\n"
	"  dump --insn [--thread TID] [--range A,B | --last N | --since FUNC] [--tsv] PATH\n"
	"  dump --calls [--thread TID] [--range A,B | --last N | --since FUNC] [--tsv] PATH\n"
	"         instruction or function-call history of a bundle\n"
	"  info PATH\n"
	"         what a bundle holds\n"
	"  index PATH\n"
	"         keep each trace's index beside it, for a fast open\n"
	"  export --lldb [--per-cpu] -o OUTDIR PATH\n"
	"         write an x86-64 history as an LLDB intel-pt bundle\n"
	"  export --chrome -o FILE PATH | export --svg -o FILE PATH\n"
	"         the call history for Perfetto/chrome://tracing, or as an SVG\n"
	"         flame chart\n"
	"  writes [--last N] ADDR[,LEN] PATH\n"
	"         who wrote this: every recorded store that changed those bytes\n"
	"  backends\n"
	"         each recording backend and whether it works on this machine\n"
	"\n"
	"  --version\n"
	"         print hwtrace's version\n"
	"\n"
	"PATH is a bundle directory or its trace.json. `hwtrace COMMAND --help`\n"
	"describes each command, with examples; hwtrace(1) and docs/ have the\n"
	"details.\n"
	"\n"
	"Examples:\n"
	"  hwtrace record -o crash.bundle -- ./myprog args\n"
	"  hwtrace dump --calls --since main crash.bundle\n"
	"  hwt-server --listen 127.0.0.1:1234 --bundle crash.bundle\n";

int cli_fail(const struct hwt_err *err)
{
	fprintf(stderr, "hwtrace: %s\n",
		err && err->msg[0] ? err->msg : "unknown error");
	return HWT_EXIT_ERROR;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hwtrace %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see 'hwtrace %s --help')\n", cmd);
	return HWT_EXIT_USAGE;
}

static int cmd_backends(int argc, char **argv)
{
	const char *const *names;
	const char *note[4];
	size_t n = hwt_collect_backends(&names), notes;

	if (argc > 1) {
		if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
			puts("usage: hwtrace backends\n\nList the recording "
			     "backends in order of preference, each with\n"
			     "\"available\" or why it cannot record on this "
			     "machine, then what this machine's debug\n"
			     "facilities fail to do (\"machine:\" lines) and "
			     "how recording works\naround it.\n\n"
			     "Example:\n  hwtrace backends");
			return 0;
		}
		return cli_usage_error("backends", "unexpected argument '%s'",
				       argv[1]);
	}
	for (size_t i = 0; i < n; i++) {
		struct hwt_err err = { 0 };

		if (hwt_collect_backend_available(names[i], &err) == 0)
			printf("%-10s available\n", names[i]);
		else
			printf("%-10s unavailable: %s\n", names[i], err.msg);
	}
	notes = hwt_collect_machine_notes(note, 4);
	for (size_t i = 0; i < notes; i++)
		printf("machine:   %s\n", note[i]);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int, char **);
	} cmds[] = {
		{ "record", cmd_record },
		{ "dump", cmd_dump },
		{ "info", cmd_info },
		{ "index", cmd_index },
		{ "export", cmd_export },
		{ "writes", cmd_writes },
		{ "backends", cmd_backends },
	};

	if (argc < 2) {
		fputs(usage, stderr);
		return HWT_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		puts("hwtrace " HWT_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "hwtrace: unknown command '%s'\n\n%s", argv[1], usage);
	return HWT_EXIT_USAGE;
}
