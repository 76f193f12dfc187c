// SPDX-License-Identifier: BSD-2-Clause
/* backend.c - the valgrind backend: runs the program on Valgrind's
 * synthetic cpu with the hwtrace tool (tool/hwt_tool.c), which writes a
 * stream of superblock runs; stream.c turns it into hwt-sw rings.
 *
 * Valgrind emulates the cpu, so nothing is single-stepped: recording
 * costs about what Valgrind's translation costs, a small factor over
 * native code, where the ptrace stepper costs a system call round trip
 * per instruction. What the program sees differs from a native run in
 * the ways Valgrind's cpu does (docs/valgrind.md): no AVX-512, so glibc
 * picks other string functions.
 *
 * The stream goes to a file in a private directory, read while the
 * program runs; Valgrind's own messages go to a log beside it, so the
 * program's stderr is its own and errors can quote them. A fatal signal
 * leaves Valgrind's core beside the log (LOG.core.PID).
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "os/corenote.h"
#include "os/which.h"
#include "vg.h"
#include "util.h"

#define TOOL_FILE "hwtrace-amd64-linux"
#define IDLE_NS 5000000L          /* between looks at a quiet stream */
#define STR(x) #x
#define XSTR(x) STR(x)

extern char **environ;

/* Where the tool is: HWT_VALGRIND_LIB, else valgrind/ beside the running
 * program (the build directory), else an installed tree's
 * ../libexec/hwtrace/valgrind (install.mk). */
static int tool_dir(char *out, size_t size, struct hwt_err *err)
{
	const char *env = getenv("HWT_VALGRIND_LIB");
	char exe[PATH_MAX], tool[PATH_MAX + 32];
	ssize_t n;

	if (env && *env) {
		if ((size_t)snprintf(out, size, "%s", env) >= size)
			return hwt_err_set(err, ENAMETOOLONG, "HWT_VALGRIND_LIB "
					   "is too long");
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n <= 0)
			return hwt_err_set(err, errno, "cannot find the "
					   "running program: %s",
					   strerror(errno));
		exe[n] = '\0';
		*strrchr(exe, '/') = '\0';
		if ((size_t)snprintf(out, size, "%s/valgrind", exe) >= size)
			return hwt_err_set(err, ENAMETOOLONG, "path too long");
		snprintf(tool, sizeof(tool), "%s/%s", out, TOOL_FILE);
		if (access(tool, X_OK) &&
		    (size_t)snprintf(out, size, "%s/../libexec/hwtrace/valgrind",
				     exe) >= size)
			return hwt_err_set(err, ENAMETOOLONG, "path too long");
	}
	snprintf(tool, sizeof(tool), "%s/%s", out, TOOL_FILE);
	if (access(tool, X_OK))
		return hwt_err_set(err, ENOENT, "the hwtrace Valgrind tool is "
				   "not built: no %s (make builds it; "
				   "HWT_VALGRIND_LIB names another directory)",
				   tool);
	return 0;
}

static int vg_available(struct hwt_err *err)
{
	char path[PATH_MAX];

#if !defined(__x86_64__)
	return hwt_err_set(err, EOPNOTSUPP, "the valgrind backend is built "
			   "for x86-64 only");
#endif
	if (!hwt_which("valgrind", path, sizeof(path)))
		return hwt_err_set(err, ENOENT, "valgrind is not installed "
				   "(Debian package valgrind)");
	return tool_dir(path, sizeof(path), err);
}

/* The environment with VALGRIND_LIB naming the tool's directory. */
static char **tool_environ(const char *dir)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	if (!(env = calloc(n + 2, sizeof(*env))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "VALGRIND_LIB=", 13))
			env[k++] = environ[i];
	if (asprintf(&env[k], "VALGRIND_LIB=%s", dir) < 0) {
		free(env);
		return NULL;
	}
	return env;
}

/* dir/name into out; false when it does not fit. */
static bool join(char *out, size_t size, const char *dir, const char *name)
{
	return (size_t)snprintf(out, size, "%s/%s", dir, name) < size;
}

/* Live control runs a private copy of the tool, removed once it runs:
 * LLDB takes the file /proc/PID/exe names as the program
 * (DynamicLoaderPOSIXDYLD), which for a program on Valgrind would be the
 * tool; a file that is gone leaves it the program it was given. Its
 * directory (VALGRIND_LIB) links to the rest of Valgrind's files. */
static int private_tool(struct vg_collector *c, const char *dir,
			struct hwt_err *err)
{
	char lib[PATH_MAX], from[PATH_MAX], to[PATH_MAX], target[PATH_MAX];
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (!join(lib, sizeof(lib), c->dir, "lib"))
		return hwt_err_set(err, ENAMETOOLONG, "path too long");
	if (mkdir(lib, 0700) < 0 || !(d = opendir(dir)))
		return hwt_err_set(err, errno, "cannot make %s: %s", lib,
				   strerror(errno));
	while (rc == 0 && (e = readdir(d))) {
		ssize_t n;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, TOOL_FILE))
			continue;
		if (!join(from, sizeof(from), dir, e->d_name) ||
		    !join(to, sizeof(to), lib, e->d_name)) {
			rc = hwt_err_set(err, ENAMETOOLONG, "path too long");
			break;
		}
		n = readlink(from, target, sizeof(target) - 1);
		if (n > 0)
			target[n] = '\0';
		if (symlink(n > 0 ? target : from, to) < 0)
			rc = hwt_err_set(err, errno, "cannot link %s: %s", to,
					 strerror(errno));
	}
	closedir(d);
	if (rc)
		return rc;
	if (!join(from, sizeof(from), dir, TOOL_FILE) ||
	    !join(to, sizeof(to), lib, TOOL_FILE))
		return hwt_err_set(err, ENAMETOOLONG, "path too long");
	if (link(from, to) < 0 &&
	    ((rc = hwt_bundle_stage_copy(lib, TOOL_FILE, from, err)) < 0 ||
	     chmod(to, 0700) < 0))
		return rc ? rc : hwt_err_set(err, errno, "cannot copy the "
					      "tool to %s: %s", to,
					      strerror(errno));
	if (!(c->private_tool = strdup(to)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	/* The tool's code (its signal return trampoline) decodes from the
	 * file that stays. */
	c->rd.tool_path = c->private_tool;
	c->rd.tool_alias = c->tool_path;
	return 0;
}

static void vg_close(struct hwt_collector *base)
{
	struct vg_collector *c = vg_of(base);
	int status;

	vg_live_free(c);
	if (c->held.pid > 0 && !c->reaped && !c->detached) {
		kill(c->held.pid, SIGKILL);
		while (waitpid(c->held.pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	hwt_held_close(&c->held);
	if (c->stream_fd >= 0)
		close(c->stream_fd);
	/* The stream, the log, a core not taken, vgdb's FIFOs and the
	 * tool's private copy: all in the private directory. */
	if (c->dir)
		hwt_remove_tree(c->dir);
	hwt_vg_reader_free(&c->rd);
	vg_children_free(c);
	/* After the spills that used it, freed with the threads above. */
	hwt_sw_pack_work_free(c->pack_work);
	free(c->threads);
	free(c->piece);
	free(c->used);
	free(c->by_end);
	free(c->stream_path);
	free(c->log_path);
	free(c->data_path);
	free(c->dir);
	free(c->prog);
	free(c->tool_path);
	free(c->private_tool);
	free(c->core_path);
	free(c);
}

#define VG_REGISTER_UPDATES "allregs-at-mem-access"
/* A recording (not live) program waits while more of its stream than its
 * window (--size), within these bounds, waits to be read: the disk a run
 * of any length takes in the stream directory. */
#define PACE_MIN (4u << 20)
#define PACE_MAX (64u << 20)

/* Valgrind's options that name the collector's files. */
struct vg_file_opts {
	char *out, *log, *parent, *prefix, *data_out;
	char pace[48], data[48];
};

static void file_opts_free(struct vg_file_opts *f)
{
	free(f->out);
	free(f->log);
	free(f->parent);
	free(f->prefix);
	free(f->data_out);
}

/* A collector with its reader, its window's budget and its stream
 * directory made (under TMPDIR, else /tmp). */
static int vg_collector_new(const struct hwt_collect_opts *opts,
			    const char *prog, struct vg_collector **out,
			    struct hwt_err *err)
{
	const char *tmp = getenv("TMPDIR");
	struct vg_collector *c;
	int rc;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (!(c = calloc(1, sizeof(*c))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	c->stream_fd = -1;
	c->held.pid = -1;
	c->held.go_fd = c->held.err_fd = -1;
	rc = hwt_vg_reader_init(&c->rd, opts->buffer_size, err);
	/* Those of runs killed before they could remove theirs go first. */
	if (rc == 0)
		hwt_remove_stale(tmp, "hwt-vg-");
	if (rc == 0 && (!(c->dir = hwt_temp_template(tmp, "hwt-vg-")) ||
			!(c->prog = strdup(prog))))
		rc = hwt_err_set(err, ENOMEM, "out of memory");
	if (rc == 0 && !mkdtemp(c->dir))
		rc = hwt_err_set(err, errno, "cannot make a directory for the "
				 "trace stream (%s): %s", c->dir,
				 strerror(errno));
	/* --whole: what the window drops goes beside the stream, through
	 * one compressor for all threads. */
	c->rd.whole_dir = opts->whole_bound ? c->dir : NULL;
	if (rc == 0 && opts->whole_bound &&
	    (rc = hwt_sw_pack_work_new(&c->pack_work, err)) == 0)
		c->rd.pack_work = c->pack_work;
	c->budget = (struct hwt_sw_ring_budget){
		.limit = 2 * opts->buffer_size, .over = vg_share_now, .ctx = c,
	};
	c->rd.budget = &c->budget;
	c->rd.whole_bound = opts->whole_bound;
	/* A recording that runs to its end expands only the window it
	 * keeps; live control and --whole want every instruction as read. */
	c->rd.defer = !opts->live_control;
	if (rc < 0) {
		vg_close(&c->base);
		return rc;
	}
	*out = c;
	return 0;
}

/* The paths of c's stream, log and data files, Valgrind's options that
 * name them, and the tool's environment (*env); dir: the tool's
 * directory, a private copy's under live control (made here). */
static int vg_files(struct vg_collector *c,
		    const struct hwt_collect_opts *opts, char *dir,
		    size_t dir_size, struct vg_file_opts *f, char ***env,
		    struct hwt_err *err)
{
	int rc = 0;

	if (asprintf(&c->stream_path, "%s/stream", c->dir) < 0 ||
	    asprintf(&c->log_path, "%s/valgrind.log", c->dir) < 0 ||
	    asprintf(&f->out, "--hwt-out=%s", c->stream_path) < 0 ||
	    asprintf(&f->log, "--log-file=%s", c->log_path) < 0 ||
	    asprintf(&f->parent, "--hwt-parent=%d", (int)getpid()) < 0 ||
	    asprintf(&f->prefix, "--vgdb-prefix=%s/vgdb", c->dir) < 0 ||
	    asprintf(&c->tool_path, "%s/%s", dir, TOOL_FILE) < 0)
		return hwt_err_set(err, ENOMEM, "out of memory");
	c->rd.tool_path = c->tool_path;
	if (opts->live_control) {
		rc = private_tool(c, dir, err);
		snprintf(dir, dir_size, "%s/lib", c->dir);
	}
	if (rc == 0 && !(*env = tool_environ(dir)))
		rc = hwt_err_set(err, ENOMEM, "out of memory");
	if (rc == 0 && opts->data_bytes &&
	    (asprintf(&c->data_path, "%s/data", c->dir) < 0 ||
	     asprintf(&f->data_out, "--hwt-data-out=%s", c->data_path) < 0)) {
		f->data_out = NULL;
		rc = hwt_err_set(err, ENOMEM, "out of memory");
	}
	snprintf(f->pace, sizeof(f->pace), "--hwt-pace-bytes=%llu",
		 (unsigned long long)(opts->buffer_size < PACE_MIN ? PACE_MIN :
				      opts->buffer_size > PACE_MAX ? PACE_MAX :
				      opts->buffer_size));
	snprintf(f->data, sizeof(f->data), "--hwt-data-bytes=%llu",
		 (unsigned long long)opts->data_bytes);
	return rc;
}

/* Valgrind's command line to run prog with argv's arguments (calloc'd;
 * its strings are the caller's), NULL without memory. */
static char **valgrind_argv(const struct vg_collector *c,
			    const struct hwt_collect_opts *opts,
			    struct vg_file_opts *f, char *valgrind, char *prog,
			    char *const argv[])
{
	size_t argc = 0, k = 0;
	char **v;

	while (argv[argc])
		argc++;
	if (!(v = calloc(argc + 20, sizeof(*v))))
		return NULL;
	v[k++] = valgrind;
	v[k++] = "--tool=hwtrace";
	v[k++] = "-q";
	v[k++] = "--max-threads=" XSTR(VG_MAX_THREADS_N);
	if (opts->live_control) {
		/* Stopped before the first instruction for vgdb, breakpoints
		 * and steps exact to the instruction. An exec would end the
		 * gdbserver: not followed. */
		v[k++] = "--vgdb=full";
		v[k++] = "--vgdb-error=0";
		v[k++] = f->prefix;
	} else {
		v[k++] = "--vgdb=no";
		/* exec'd programs are recorded on (the tool's own check
		 * leaves forked children out, unless followed). */
		v[k++] = "--trace-children=yes";
		if (opts->follow_fork)
			v[k++] = "--hwt-follow-fork=yes";
		/* A recording of a program that exits opens in a debugger
		 * at its exit. */
		v[k++] = "--hwt-exit-core=yes";
		/* A fault is reported at the faulting instruction with the
		 * cpu's registers there: no loop unrolled into one
		 * translation (its fault lands on the loop's branch), every
		 * register written back before each memory access. */
		v[k++] = "--vex-iropt-unroll-thresh=0";
		v[k++] = "--vex-iropt-register-updates=" VG_REGISTER_UPDATES;
		/* Side exits told by where the thread goes next
		 * (vgstream.h): no stop asks in the middle. */
		v[k++] = "--hwt-implied-exits=yes";
		/* The stream is read all along while recording (vg_run);
		 * live, only at stops. */
		if (vg_can_free_read_part(c->dir))
			v[k++] = f->pace;
	}
	/* The values of the past: a ring in the tool's memory, written out
	 * at the end (data.c), and under live control at a stop that asks
	 * about the past (live_past.c). */
	if (f->data_out) {
		v[k++] = f->data;
		v[k++] = f->data_out;
	}
	v[k++] = f->parent;
	v[k++] = f->out;
	v[k++] = f->log;
	v[k++] = "--";
	v[k++] = prog;
	for (size_t i = 1; i < argc; i++)
		v[k++] = argv[i];
	return v;
}

static void free_tool_environ(char **env)
{
	if (!env)
		return;
	for (size_t i = 0; env[i]; i++)
		if (!strncmp(env[i], "VALGRIND_LIB=", 13))
			free(env[i]);
	free(env);
}

static int vg_launch(const struct hwt_collect_opts *opts, char *const argv[],
		     struct hwt_collector **out, struct hwt_err *err)
{
	char valgrind[PATH_MAX], dir[PATH_MAX], prog[PATH_MAX];
	struct vg_file_opts f = { 0 };
	struct vg_collector *c = NULL;
	struct rlimit core;
	char **vargv, **env = NULL;
	int rc;

	if ((rc = vg_available(err)) < 0)
		return rc;
	if (!hwt_which(argv[0], prog, sizeof(prog)))
		return hwt_err_set(err, errno ? errno : ENOENT, "cannot run "
				   "%s: %s", argv[0],
				   strerror(errno ? errno : ENOENT));
	hwt_which("valgrind", valgrind, sizeof(valgrind));
	if ((rc = tool_dir(dir, sizeof(dir), err)) < 0 ||
	    (rc = vg_collector_new(opts, argv[0], &c, err)) < 0)
		return rc;
	rc = vg_files(c, opts, dir, sizeof(dir), &f, &env, err);
	if (rc == 0) {
		vargv = valgrind_argv(c, opts, &f, valgrind, prog, argv);
		rc = vargv ? hwt_held_fork_env(vargv, env, &c->held, err) :
			     hwt_err_set(err, ENOMEM, "out of memory");
		free(vargv);
	}
	file_opts_free(&f);
	free_tool_environ(env);
	if (rc < 0) {
		vg_close(&c->base);
		return rc;
	}
	/* A fatal signal leaves Valgrind's core where the limit allows. */
	if (prlimit(c->held.pid, RLIMIT_CORE, NULL, &core) == 0 &&
	    core.rlim_cur != core.rlim_max) {
		core.rlim_cur = core.rlim_max;
		prlimit(c->held.pid, RLIMIT_CORE, &core, NULL);
	}
	c->live_launch = opts->live_control;
	c->follow_fork = opts->follow_fork;
	c->base.pid = c->held.pid;
	c->base.tracer_tid = gettid();
	/* Live control starts here: the program is left stopped at its
	 * first instruction under Valgrind's gdbserver. */
	if (c->live_launch && (rc = vg_live_start(c, err)) < 0) {
		vg_close(&c->base);
		return rc;
	}
	*out = &c->base;
	return 0;
}

static int vg_run(struct hwt_collector *base, struct hwt_err *err)
{
	struct vg_collector *c = vg_of(base);
	struct timespec idle = { 0, IDLE_NS };
	int status = 0, rc;
	bool got;

	hwt_held_release(&c->held);
	for (;;) {
		pid_t w = waitpid(c->held.pid, &status, WNOHANG);

		if (w < 0 && errno != EINTR)
			return hwt_err_set(err, errno, "waiting for %s: %s",
					   c->prog, strerror(errno));
		if (w == c->held.pid)
			break;
		if ((rc = vg_drain(c, &got, err)) < 0)
			return rc;
		if (!got)
			nanosleep(&idle, NULL);
	}
	return vg_wind_up(c, status, err);
}

/* Valgrind's core has no NT_AUXV: without it GDB cannot tell where a
 * position-independent executable was loaded. The tool gave the vector. */
static int add_auxv(struct vg_collector *c, const char *path,
		    struct hwt_err *err)
{
	uint64_t v[2 * HWT_VG_MAX_AUXV + 2] = { 0 };
	size_t n = c->rd.nauxv;

	if (!n)
		return 0;
	memcpy(v, c->rd.auxv, 2 * n * sizeof(*v));
	/* AT_NULL ends it: the two zeros after the last pair. */
	return hwt_core_append_note(path, "CORE", NT_AUXV, v,
				    (2 * n + 2) * sizeof(*v), err);
}

static int vg_auxv(struct hwt_collector *base, uint8_t **out, size_t *len,
		   struct hwt_err *err)
{
	struct vg_collector *c = vg_of(base);
	size_t n = 2 * c->rd.nauxv + 2;

	/* AT_NULL ends it: the two zeros after the last pair. */
	if (!(*out = calloc(n, sizeof(uint64_t))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	memcpy(*out, c->rd.auxv, 2 * c->rd.nauxv * sizeof(uint64_t));
	*len = n * sizeof(uint64_t);
	return 0;
}

static int vg_write_core(struct hwt_collector *base, const char *path,
			 struct hwt_err *err)
{
	struct vg_collector *c = vg_of(base);
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int rc = 0;

	if (rename(c->core_path, path) < 0) {
		if (errno != EXDEV)
			return hwt_err_set(err, errno, "cannot move %s to %s: "
					   "%s", c->core_path, path,
					   strerror(errno));
		/* Another file system: a copy, then the original goes. */
		snprintf(dir, sizeof(dir), "%.*s",
			 slash ? (int)(slash - path) : 1, slash ? path : ".");
		rc = hwt_bundle_stage_copy(dir, slash ? slash + 1 : path,
					   c->core_path, err);
		if (rc == 0)
			unlink(c->core_path);
	}
	return rc ? rc : add_auxv(c, path, err);
}

static int vg_finish(struct hwt_collector *base, struct hwt_err *err)
{
	base->end.reason = HWT_STOP_SIGNALED;
	base->state = HWT_COLLECTOR_ENDED;
	return 0;
}

static size_t vg_threads(struct hwt_collector *base,
			 const struct hwt_collect_thread **threads)
{
	struct vg_collector *c = vg_of(base);

	*threads = c->threads;
	return c->nthreads;
}

static size_t vg_modules(struct hwt_collector *base,
			 const struct hwt_collect_module **modules)
{
	struct vg_collector *c = vg_of(base);

	if (c->modules) {
		*modules = c->modules;
		return c->nmodules;
	}
	*modules = c->rd.modules.v;
	return c->rd.modules.n;
}

const struct hwt_backend hwt_backend_valgrind = {
	.name = "valgrind",
	.caps = HWT_COLLECT_CAP_LIVE | HWT_COLLECT_CAP_CORE |
		HWT_COLLECT_CAP_BUNDLE | HWT_COLLECT_CAP_FOLLOW_FORK |
		HWT_COLLECT_CAP_WHOLE,
	.no_attach = "Valgrind must start the program to run it on its "
		     "synthetic cpu",
	/* A flight recorder: each thread's newest 64 MiB of history (about
	 * 55 M instructions), whatever the program's length (--size). */
	.default_buffer = 64ull << 20,
	.available = vg_available,
	.launch = vg_launch,
	.run = vg_run,
	.write_core = vg_write_core,
	.write_past = vg_write_past,
	.finish = vg_finish,
	.threads = vg_threads,
	.modules = vg_modules,
	.close = vg_close,
	.resume = vg_resume,
	.live_tids = vg_live_tids,
	.auxv = vg_auxv,
	.regset = vg_regset,
	.regs_at = vg_regs_at,
	.mem_at = vg_mem_at,
	.find_write = vg_find_write,
	.index_at_step = vg_index_at_step,
	.memory_written = vg_memory_written,
	.keeps_past = vg_keeps_past,
	.detach = vg_detach,
};
