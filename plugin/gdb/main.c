// SPDX-License-Identifier: BSD-2-Clause
/* main.c - hwt-server's command line: a live process (launched after
 * `--`, or --attach PID) recorded while GDB runs it, or a crashed one (a
 * bundle from `hwtrace record` with its core) that can only move through
 * its recorded past. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-collect.h"
#include "server.h"
#include "util.h"

static const char USAGE[] =
	"usage: hwt-server --listen HOST:PORT|unix:PATH [--allow-remote] [--once] [--backend NAME] [--record] [--values=BYTES] -- PROG [ARGS...]\n"
	"       hwt-server --listen HOST:PORT|unix:PATH [--allow-remote] [--once] [--backend NAME] --attach PID\n"
	"       hwt-server --listen HOST:PORT|unix:PATH [--allow-remote] [--once] --bundle DIR\n"
	"       hwt-server --listen HOST:PORT|unix:PATH [--allow-remote] [--once] --core CORE --bundle DIR\n"
	"\n"
	"Serve a process to GDB:\n"
	"  gdb PROG -ex 'target remote HOST:PORT'   (or 'target remote PATH' for unix:PATH)\n"
	"Live (PROG, started stopped at its first instruction, or --attach): the\n"
	"process is recorded while it runs, so GDB's record btrace bts|pt and\n"
	"reverse execution work on it. A started PROG runs untraced, as fast as\n"
	"under gdbserver, until GDB's record btrace or LLDB's thread trace start\n"
	"asks for its history; --record records it from its first instruction\n"
	"(reverse execution without record btrace needs that); --attach records\n"
	"from the attach on. The values of the past (registers and memory as\n"
	"they were, at any point of the newest history) are kept by the ptrace\n"
	"backend, and by the valgrind backend in --values=BYTES of memory\n"
	"(default 64M; 0: none, recording about twice as fast). --bundle: a crashed process recorded by\n"
	"`hwtrace record`; record btrace, reverse-step/finish/continue and record\n"
	"goto work from the crash point. HOST must be a loopback address unless\n"
	"--allow-remote is given; port 0 picks a free port (printed on stderr).\n"
	"When GDB disconnects the program stays stopped, with its trace, for the\n"
	"next connection; with --once, or when GDB detaches, kills it or says\n"
	"monitor exit, the server exits, killing a process it started and\n"
	"letting an attached one go.\n"
	"\n"
	"Examples:\n"
	"  hwt-server --listen 127.0.0.1:1234 -- ./myprog args\n"
	"  hwt-server --listen 127.0.0.1:1234 --record -- ./myprog   # reverse from launch\n"
	"  hwt-server --listen unix:/tmp/hwt.sock --core crash.bundle/core --bundle crash.bundle\n"
	"  gdb ./myprog -ex 'target remote 127.0.0.1:1234'\n";

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "hwt-server: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n%s", USAGE);
	return 2;
}

struct main_args {
	const char *listen_spec, *bundle, *core;
	struct live_opts lo;
	uint64_t pid;
	bool allow_remote, once;
};

/* The command line into *a: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct main_args *a)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "allow-remote", no_argument, NULL, 'r' },
		{ "bundle", required_argument, NULL, 'b' },
		{ "core", required_argument, NULL, 'c' },
		{ "backend", required_argument, NULL, 'B' },
		{ "attach", required_argument, NULL, 'a' },
		{ "once", no_argument, NULL, 'o' },
		{ "record", no_argument, NULL, 'R' },
		{ "values", required_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	struct live_opts *lo = &a->lo;
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (opt) {
		case 'l': a->listen_spec = optarg; break;
		case 'r': a->allow_remote = true; break;
		case 'b': a->bundle = optarg; break;
		case 'c': a->core = optarg; break;
		case 'B': lo->backend = optarg; break;
		case 'o': a->once = true; break;
		case 'R': lo->record = true; break;
		case 'v':
			if (hwt_parse_size(optarg, &lo->values) ||
			    (lo->values &&
			     (lo->values < HWT_COLLECT_VALUES_MIN ||
			      lo->values > HWT_COLLECT_VALUES_MAX)))
				return usage_error("--values=%s must be 0 or a "
						   "size between 1M and 16G",
						   optarg);
			break;
		case 'a':
			if (hwt_parse_u64(optarg, &a->pid) || a->pid == 0 ||
			    a->pid > INT32_MAX)
				return usage_error("--attach needs a process id, "
						   "not %s", optarg);
			break;
		case 'h': fputs(USAGE, stdout); return 0;
		case 'V': puts("hwt-server " HWT_VERSION); return 0;
		default:
			return usage_error("unknown option or missing argument: %s",
					   argv[optind - 1]);
		}
	}
	if (optind < argc)
		lo->argv = argv + optind;
	lo->attach_pid = (int)a->pid;
	if (!a->listen_spec)
		return usage_error("%s", "--listen is required");
	if ((a->bundle != NULL) + (lo->argv != NULL) + (a->pid != 0) != 1)
		return usage_error("%s", "give exactly one of -- PROG [ARGS...], "
				   "--attach PID and --bundle DIR");
	if (a->core && !a->bundle)
		return usage_error("%s", "--core goes with --bundle DIR");
	if (lo->backend && a->bundle)
		return usage_error("%s", "--backend is for live processes");
	if (lo->record && !lo->argv)
		return usage_error("%s", "--record is for a program hwt-server "
				   "starts (an attached one is recorded from "
				   "the attach, a bundle was recorded)");
	return -1;
}

/* Debuggers one after the other, as gdbserver serves them: one that
 * disconnects leaves the program stopped, with its trace, for the next;
 * once ends with it. The exit status. */
static int serve(struct server *srv, struct listener *l, bool once)
{
	struct hwt_err err = { 0 };

	for (;;) {
		int fd = listener_accept(l, &err);

		if (fd < 0) {
			fprintf(stderr, "hwt-server: %s\n", err.msg);
			return 1;
		}
		if (server_run(srv, l, fd, !once, &err)) {
			fprintf(stderr, "hwt-server: %s\n", err.msg);
			return 1;
		}
		if (once || !srv->hung_up || srv->process_gone) {
			fprintf(stderr, "hwt-server: debugger disconnected, "
				"exiting\n");
			return 0;
		}
		fprintf(stderr, "hwt-server: debugger disconnected; waiting "
			"for the next on %s (--once: exit instead)\n", l->desc);
	}
}

int main(int argc, char **argv)
{
	struct main_args a = { .lo.values = HWT_COLLECT_VALUES_DEFAULT };
	static struct server srv;
	struct listener l;
	struct hwt_err err = { 0 };
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	/* A client that vanishes mid-reply must not kill the server. */
	signal(SIGPIPE, SIG_IGN);
	rc = a.bundle ? post_mortem_open(&srv, a.bundle, a.core, &err)
		      : live_open(&srv, &a.lo, &err);
	if (rc) {
		fprintf(stderr, "hwt-server: %s\n", err.msg);
		server_close(&srv);
		return 1;
	}
	if (srv.warning[0])
		fprintf(stderr, "hwt-server: warning: %s\n", srv.warning);
	if (!a.bundle) {
		const char *note[4];
		size_t n = hwt_collect_machine_notes(note, 4);

		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "hwt-server: this machine: %s\n",
				note[i]);
	}
	if (listener_open(&l, a.listen_spec, a.allow_remote, &err)) {
		fprintf(stderr, "hwt-server: %s\n", err.msg);
		/* gdbserver's words, on which scripts that start it try the
		 * next port (GDB's testsuite among them). */
		if (err.code == EADDRINUSE)
			fprintf(stderr, "Can't bind address: Address already "
				"in use.\n");
		server_close(&srv);
		return err.code == EPERM ? 2 : 1;
	}
	if (l.remote)
		fprintf(stderr, "hwt-server: warning: listening on %s, a "
			"non-loopback address: anyone who can reach it can read "
			"this process's memory and trace\n", l.desc);
	fprintf(stderr, "hwt-server: listening on %s\n", l.desc);
	/* gdbserver's own words, which scripts written for it wait for
	 * (GDB's testsuite among them). */
	if (!l.is_unix)
		fprintf(stderr, "Listening on port %s\n",
			strrchr(l.desc, ':') + 1);
	rc = serve(&srv, &l, a.once);
	listener_close(&l);
	server_close(&srv);
	return rc;
}
