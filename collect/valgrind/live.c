// SPDX-License-Identifier: BSD-2-Clause
/* live.c - live control of a program on Valgrind's synthetic cpu.
 *
 * Valgrind's embedded gdbserver, reached through vgdb (vgdb.h), runs,
 * steps and stops the program, holds its breakpoints (Z0: nothing is
 * written into the code) and gives its registers. At each stop the tool
 * (monitor command hwt.sync, tool/hwt_tool.c) flushes its stream and
 * names every thread with its pc; the reader (stream.c) turns what was
 * read into each thread's history up to that pc. The rules of
 * collect/live.c call the mechanisms below (struct hwt_live_ops).
 *
 * What Valgrind's gdbserver cannot do, and so neither can this: keep one
 * thread stopped while others run (every resume moves every thread;
 * Valgrind runs them one at a time anyway), pass different signals to
 * several threads in one resume, and watchpoints (Valgrind leaves them to
 * tools that instrument every memory access). Segment registers are the
 * constants of every x86-64 Linux process; fs_base and gs_base come from
 * the tool and cannot be written.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "array.h"
#include "os/which.h"
#include "vg.h"
#include "signals.h"

/* Valgrind's amd64 register packet ('g'): its layout, in bytes. */
#define G_GPR 0u                  /* rax rbx rcx rdx rsi rdi rbp rsp r8-r15 */
#define G_RIP 128u
#define G_EFLAGS 136u             /* 4 bytes, as the segment registers */
#define G_ST 164u                 /* st0-st7, 10 bytes each */
#define G_FCTRL 244u              /* fctrl fstat ftag fiseg fioff foseg */
#define G_FSTAT 248u              /* fooff fop, 4 bytes each */
#define G_FTAG 252u
#define G_FIOFF 260u
#define G_FOOFF 268u
#define G_FOP 272u
#define G_XMM 276u
#define G_MXCSR 532u
#define G_ORIG_RAX 536u
#define G_YMMH 544u
#define G_SIZE 544u
#define G_SIZE_AVX 800u

/* struct user_regs_struct, in 8-byte words. */
enum { U_R15, U_R14, U_R13, U_R12, U_RBP, U_RBX, U_R11, U_R10, U_R9, U_R8,
       U_RAX, U_RCX, U_RDX, U_RSI, U_RDI, U_ORIG_RAX, U_RIP, U_CS, U_EFLAGS,
       U_RSP, U_SS, U_FS_BASE, U_GS_BASE, U_DS, U_ES, U_FS, U_GS, U_WORDS };

/* The user_regs_struct word of each of the packet's 16 general
 * registers. */
static const unsigned char GPR_WORD[16] = {
	U_RAX, U_RBX, U_RCX, U_RDX, U_RSI, U_RDI, U_RBP, U_RSP,
	U_R8, U_R9, U_R10, U_R11, U_R12, U_R13, U_R14, U_R15,
};

/* FXSAVE and XSAVE offsets. */
#define FX_FCW 0u
#define FX_FSW 2u
#define FX_FTW 4u
#define FX_FOP 6u
#define FX_FIP 8u
#define FX_FDP 16u
#define FX_MXCSR 24u
#define FX_MXCSR_MASK 28u
#define FX_ST 32u
#define FX_XMM 160u
#define FX_SIZE 512u
#define XS_XCR0 464u              /* in FXSAVE's software-reserved bytes */
#define XS_XSTATE_BV 512u
#define XS_YMMH 576u
#define XS_SIZE (XS_YMMH + 256u)

/* Every x86-64 Linux process's user code and stack segments. */
#define USER_CS 0x33u
#define USER_SS 0x2bu

#define REPLY_CAP (VG_LINK_MAX_REPLY + 1u)

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/* ---- threads -------------------------------------------------------------- */

static struct vg_thread *vt_find(struct vg_collector *c, pid_t tid)
{
	for (size_t i = 0; i < c->nvt; i++)
		if (c->vt[i].tid == tid && !c->vt[i].gone)
			return &c->vt[i];
	return NULL;
}

static struct vg_thread *vt_add(struct vg_collector *c, pid_t tid,
				struct hwt_err *err)
{
	if (HWT_ARRAY_RESERVE(c->vt, c->vt_cap, c->nvt + 1, 8)) {
		hwt_err_set(err, ENOMEM, "out of memory for threads");
		return NULL;
	}
	c->vt[c->nvt] = (struct vg_thread){ .tid = tid };
	return &c->vt[c->nvt++];
}

/* One line of hwt.sync: "hwt TID PC FS_BASE GS_BASE", hex. */
static bool parse_sync_line(const char *line, pid_t *tid, uint64_t v[3])
{
	unsigned long t;
	int used = 0;

	if (sscanf(line, "hwt %lx %" SCNx64 " %" SCNx64 " %" SCNx64 "%n", &t,
		   &v[0], &v[1], &v[2], &used) != 4 || used == 0 ||
	    t == 0 || t > INT_MAX)
		return false;
	*tid = (pid_t)t;
	return true;
}

/* The threads the tool names now: new ones are born, missing ones died
 * (Valgrind's gdbserver reports neither). first: the launch, where
 * nothing is reported. */
static int update_threads(struct vg_collector *c, bool first,
			  struct hwt_err *err)
{
	const char *p = c->link.output ? c->link.output : "";
	bool *seen = calloc(c->nvt + 1, sizeof(*seen));
	size_t known = c->nvt;

	if (!seen)
		return hwt_err_set(err, ENOMEM, "out of memory");
	while (*p) {
		const char *nl = strchr(p, '\n');
		char line[128];
		uint64_t v[3];
		pid_t tid;
		struct vg_thread *t;

		snprintf(line, sizeof(line), "%.*s",
			 (int)(nl ? (size_t)(nl - p) : strlen(p)), p);
		p = nl ? nl + 1 : p + strlen(p);
		if (!parse_sync_line(line, &tid, v))
			continue;
		t = vt_find(c, tid);
		if (!t) {
			bool announce = false;

			if (!(t = vt_add(c, tid, err))) {
				free(seen);
				return -ENOMEM;
			}
			if (!first)
				hwt_live_born(&c->rules, &t->lt, &announce);
			if (announce)
				hwt_live_queue(&c->rules, &t->lt, tid,
					       HWT_EVENT_THREAD_CREATED, 0, 0);
		}
		if ((size_t)(t - c->vt) < known)
			seen[t - c->vt] = true;
		t->pc = v[0];
		t->fs_base = v[1];
		t->gs_base = v[2];
	}
	for (size_t i = 0; i < known; i++)
		if (!seen[i] && !c->vt[i].gone) {
			c->vt[i].gone = true;
			hwt_live_died(&c->rules, &c->vt[i].lt, c->vt[i].tid, 0);
		}
	free(seen);
	return 0;
}

/* At a stop: the tool's view of the threads, the stream read up to here,
 * and every thread's history up to where it stands. */
static int sync_stop(struct vg_collector *c, bool first, struct hwt_err *err)
{
	bool got;
	int rc;

	if ((rc = vg_link_monitor(&c->link, "hwt.sync", err)) < 0 ||
	    (rc = update_threads(c, first, err)) < 0 ||
	    (rc = vg_drain(c, &got, err)) < 0)
		return rc;
	for (size_t i = 0; i < c->nvt; i++) {
		const struct vg_thread *t = &c->vt[i];

		if (!t->gone &&
		    (rc = hwt_vg_reader_stop_at(&c->rd, t->tid, t->pc,
						c->mid && t->tid == c->event_tid,
						err)) < 0)
			return rc;
	}
	for (size_t i = 0; i < c->rd.nthreads; i++) {
		struct hwt_sw_ring *ring = &c->rd.threads[i].ring;

		if (ring->started && (rc = hwt_sw_ring_snapshot(ring, err)) < 0)
			return rc;
	}
	return vg_collect_threads(c, err);
}

/* ---- the mechanisms for the rules ----------------------------------------- */

static size_t vg_nthreads(void *ctx)
{
	return ((struct vg_collector *)ctx)->nvt;
}

static struct hwt_live_thread *vg_thread(void *ctx, size_t i, pid_t *tid,
					 bool *gone)
{
	struct vg_collector *c = ctx;

	*tid = c->vt[i].tid;
	*gone = c->vt[i].gone;
	return &c->vt[i].lt;
}

static int vg_read_pc(void *ctx, pid_t tid, uint64_t *pc)
{
	struct vg_thread *t = vt_find(ctx, tid);

	if (!t)
		return -ESRCH;
	*pc = t->pc;
	return 0;
}

static bool vg_is_breakpoint(void *ctx, uint64_t pc)
{
	struct vg_collector *c = ctx;

	return c->nbps && bsearch(&pc, c->bps, c->nbps, sizeof(*c->bps),
				  hwt_cmp_u64);
}

static int z0(struct vg_collector *c, bool insert, uint64_t addr,
	      struct hwt_err *err)
{
	char cmd[48], reply[64];
	int rc;

	snprintf(cmd, sizeof(cmd), "%c0,%" PRIx64 ",1", insert ? 'Z' : 'z',
		 addr);
	rc = vg_link_call(&c->link, cmd, reply, sizeof(reply), err);
	if (rc == 0 && strcmp(reply, "OK"))
		rc = hwt_err_set(err, EINVAL, "Valgrind's gdbserver refused "
				 "%s the breakpoint at 0x%" PRIx64 " (%s)",
				 insert ? "to insert" : "to remove", addr,
				 reply);
	return rc;
}

/* Valgrind holds exactly this resume's breakpoints (they stay between
 * resumes: they change no memory). */
static int vg_prepare(void *ctx, const struct hwt_resume_opts *o,
		      struct hwt_err *err)
{
	struct vg_collector *c = ctx;
	uint64_t *want = NULL;
	size_t keep = 0;
	int rc = 0;

	if (o->nbreakpoints) {
		if (!(want = malloc(o->nbreakpoints * sizeof(*want))))
			return hwt_err_set(err, ENOMEM, "out of memory");
		memcpy(want, o->breakpoints, o->nbreakpoints * sizeof(*want));
		qsort(want, o->nbreakpoints, sizeof(*want), hwt_cmp_u64);
	}
	free(c->bps);
	c->bps = want;
	c->nbps = o->nbreakpoints;
	for (size_t i = 0; i < c->ninserted && rc == 0; i++) {
		if (vg_is_breakpoint(c, c->inserted[i]))
			c->inserted[keep++] = c->inserted[i];
		else
			rc = z0(c, false, c->inserted[i], err);
	}
	if (rc)
		return rc;
	c->ninserted = keep;
	for (size_t i = 0; i < c->nbps && rc == 0; i++) {
		if ((i && c->bps[i] == c->bps[i - 1]) ||
		    (keep && bsearch(&c->bps[i], c->inserted, keep,
				     sizeof(*c->inserted), hwt_cmp_u64)))
			continue;
		if (HWT_ARRAY_RESERVE(c->inserted, c->inserted_cap,
				      c->ninserted + 1, 16))
			return hwt_err_set(err, ENOMEM, "out of memory");
		if ((rc = z0(c, true, c->bps[i], err)) == 0)
			c->inserted[c->ninserted++] = c->bps[i];
	}
	if (c->ninserted)
		qsort(c->inserted, c->ninserted, sizeof(*c->inserted), hwt_cmp_u64);
	return rc;
}

/* The thread that moves by itself this resume and the signal it gets:
 * the stepping one, else one continued with a signal. */
static struct vg_thread *leader(struct vg_collector *c,
				const struct hwt_resume_opts *o, int *sig)
{
	struct vg_thread *with_signal = NULL;
	int with_sig = 0;

	for (size_t i = 0; i < c->nvt; i++) {
		struct vg_thread *t = &c->vt[i];
		const struct hwt_resume_action *a;

		if (t->gone || t->lt.kind == HWT_RESUME_STOP)
			continue;
		a = hwt_live_action(o, t->tid);
		if (t->lt.kind == HWT_RESUME_STEP) {
			*sig = a ? a->signal : 0;
			return t;
		}
		if (a && a->signal && !with_signal) {
			with_signal = t;
			with_sig = a->signal;
		}
	}
	*sig = with_sig;
	return with_signal;
}

/* The process is gone: reap it and read its stream to the end. */
static int wind_up(struct vg_collector *c, struct hwt_err *err)
{
	int status = 0;

	while (waitpid(c->base.pid, &status, 0) < 0) {
		if (errno != EINTR)
			return hwt_err_set(err, errno, "waiting for %s: %s",
					   c->prog, strerror(errno));
	}
	c->ended = true;
	for (size_t i = 0; i < c->nvt; i++)
		c->vt[i].gone = true;
	return vg_wind_up(c, status, err);
}

static uint64_t hex_field(const char *reply, const char *key, bool *found)
{
	const char *p = strstr(reply, key);

	*found = p != NULL;
	return p ? strtoull(p + strlen(key), NULL, 16) : 0;
}

/* The rip of a stop reply's expedited registers ("10:" little-endian). */
static bool reply_pc(const char *reply, uint64_t *pc)
{
	const char *p = strstr(reply, ";10:");
	uint8_t b[8];

	if (!p)
		return false;
	p += 4;
	for (unsigned i = 0; i < 8; i++) {
		unsigned v;

		if (sscanf(p + 2 * i, "%2x", &v) != 1)
			return false;
		b[i] = (uint8_t)v;
	}
	*pc = get_le(b, 8);
	return true;
}

/* What a stop reply says, queued for the rules. */
static int take_stop(struct vg_collector *c, const char *reply,
		     const struct vg_thread *stepping, bool interrupted,
		     struct hwt_err *err)
{
	struct vg_thread *t;
	uint64_t pc = 0;
	bool has_tid, has_pc;
	pid_t tid;
	int sig;

	c->mid = false;
	c->event_tid = 0;
	if (reply[0] != 'T' && reply[0] != 'S')
		return hwt_err_set(err, EPROTO, "Valgrind's gdbserver answered "
				   "a resume with %.60s", reply);
	sig = hwt_linux_signal((int)strtol((char[3]){ reply[1], reply[2], 0 },
					   NULL, 16));
	tid = (pid_t)hex_field(reply, "thread:", &has_tid);
	if (!has_tid || tid <= 0)
		tid = c->base.pid;
	has_pc = reply_pc(reply, &pc);
	if (!(t = vt_find(c, tid)) && !(t = vt_add(c, tid, err)))
		return -ENOMEM;
	c->event_tid = tid;
	if (sig == SIGTRAP && has_pc && t->lt.kind == HWT_RESUME_CONT &&
	    vg_is_breakpoint(c, pc)) {
		hwt_live_queue(&c->rules, &t->lt, tid, HWT_EVENT_BREAKPOINT,
			       0, 0);
		c->mid = true;
	} else if (sig == SIGTRAP && t == stepping) {
		hwt_live_queue(&c->rules, &t->lt, tid, HWT_EVENT_STEPPED, 0, 0);
		c->mid = true;
	} else if (sig == SIGTRAP && has_pc && vg_is_breakpoint(c, pc)) {
		hwt_live_queue(&c->rules, &t->lt, tid, HWT_EVENT_BREAKPOINT,
			       0, 0);
		c->mid = true;
	} else if (interrupted && (sig == SIGTRAP || sig == SIGINT)) {
		/* The rules queue INTERRUPTED where it belongs. */
		c->rules.interrupted = true;
	} else {
		hwt_live_queue(&c->rules, &t->lt, tid, HWT_EVENT_SIGNAL, sig,
			       0);
		/* A fault stops its superblock at the faulting instruction;
		 * other signals come between superblocks. */
		c->mid = sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE ||
			 sig == SIGILL || sig == SIGTRAP;
	}
	return 0;
}

static int vg_run(void *ctx, const struct hwt_resume_opts *o,
		  struct hwt_err *err)
{
	struct vg_collector *c = ctx;
	char cmd[48], reply[REPLY_CAP];
	bool interrupted = false;
	int sig = 0, rc;
	struct vg_thread *lead = leader(c, o, &sig);
	bool step = lead && lead->lt.kind == HWT_RESUME_STEP;

	snprintf(cmd, sizeof(cmd), "Hc%x", lead ? (unsigned)lead->tid : 0u);
	if ((rc = vg_link_call(&c->link, cmd, reply, sizeof(reply), err)) < 0)
		return rc;
	if (sig)
		snprintf(cmd, sizeof(cmd), "%c%02x", step ? 'S' : 'C',
			 hwt_gdb_signal(sig));
	else
		snprintf(cmd, sizeof(cmd), "%c", step ? 's' : 'c');
	if ((rc = vg_link_send(&c->link, cmd, err)) < 0 ||
	    (rc = vg_link_wait(&c->link, reply, sizeof(reply), o->interrupt_fd,
			       &interrupted, err)) < 0)
		return rc;
	if (reply[0] == 'W' || reply[0] == 'X') {
		if ((rc = wind_up(c, err)) < 0)
			return rc;
		return HWT_LIVE_ENDED;
	}
	if ((rc = take_stop(c, reply, step ? lead : NULL, interrupted,
			    err)) < 0)
		return rc;
	return sync_stop(c, false, err);
}

/* Valgrind's gdbserver stops every thread at once. */
static int vg_stop_all(void *ctx, struct hwt_err *err)
{
	return 0;
}

static void vg_release(void *ctx, bool ended)
{
}

static bool vg_ended(void *ctx, struct hwt_collect_end *end)
{
	struct vg_collector *c = ctx;

	if (c->ended)
		*end = c->base.end;
	return c->ended;
}

static const struct hwt_live_ops vg_live_ops = {
	.nthreads = vg_nthreads,
	.thread = vg_thread,
	.read_pc = vg_read_pc,
	.is_breakpoint = vg_is_breakpoint,
	.prepare = vg_prepare,
	.run = vg_run,
	.stop_all = vg_stop_all,
	.release = vg_release,
	.ended = vg_ended,
};

/* ---- the backend ops ------------------------------------------------------ */

int vg_live_start(struct vg_collector *c, struct hwt_err *err)
{
	char vgdb[PATH_MAX], prefix[PATH_MAX], reply[REPLY_CAP];
	int rc;

	if (!hwt_which("vgdb", vgdb, sizeof(vgdb)))
		return hwt_err_set(err, ENOENT, "vgdb is not installed "
				   "(Debian package valgrind)");
	snprintf(prefix, sizeof(prefix), "%s/vgdb", c->dir);
	c->rules = (struct hwt_live){ .ops = &vg_live_ops, .ctx = c,
				      .pid = c->base.pid };
	hwt_held_release(&c->held);
	if ((rc = hwt_held_exec_error(&c->held, "valgrind", err)) < 0)
		return rc;
	if ((rc = vg_link_open(&c->link, vgdb, prefix, c->base.pid,
			       c->log_path, err)) < 0)
		return rc;
	c->link_up = true;
	if ((rc = vg_link_no_ack(&c->link, err)) < 0)
		return rc;
	/* Valgrind stopped before the first instruction: its reply says
	 * so once the gdbserver is up (vgdb waits for it). */
	if ((rc = vg_link_call(&c->link, "?", reply, sizeof(reply), err)) < 0)
		return rc;
	/* Valgrind runs the tool now: its private copy goes (vg.h). */
	if (c->private_tool)
		unlink(c->private_tool);
	if (reply[0] != 'T' && reply[0] != 'S') {
		char msg[200];

		snprintf(msg, sizeof(msg), "%.60s", reply);
		return hwt_err_set(err, EPROTO, "Valgrind's gdbserver did not "
				   "stop %s at its start (%s)", c->prog, msg);
	}
	return sync_stop(c, true, err);
}

int vg_resume(struct hwt_collector *base, const struct hwt_resume_opts *o,
	      struct hwt_collect_event *ev, struct hwt_err *err)
{
	/* The values of the past of the last stop are those of no other. */
	vg_live_past_drop(vg_of(base));
	return hwt_live_resume(&vg_of(base)->rules, o, ev, err);
}

size_t vg_live_tids(struct hwt_collector *base, pid_t *tids, size_t cap)
{
	struct vg_collector *c = vg_of(base);
	size_t n = 0;

	for (size_t i = 0; i < c->nvt; i++)
		if (!c->vt[i].gone) {
			if (n < cap)
				tids[n] = c->vt[i].tid;
			n++;
		}
	return n;
}

/* Thread tid's register packet into g (G_SIZE_AVX bytes): its length. */
static int read_g(struct vg_collector *c, pid_t tid, uint8_t *g,
		  size_t *len, struct hwt_err *err)
{
	char cmd[32], reply[REPLY_CAP];
	size_t n;
	int rc;

	snprintf(cmd, sizeof(cmd), "Hg%x", (unsigned)tid);
	if ((rc = vg_link_call(&c->link, cmd, reply, sizeof(reply), err)) < 0 ||
	    (rc = vg_link_call(&c->link, "g", reply, sizeof(reply), err)) < 0)
		return rc;
	n = strlen(reply) / 2;
	if (reply[0] == 'E' || (n != G_SIZE && n != G_SIZE_AVX))
		return hwt_err_set(err, EPROTO, "thread %d: Valgrind's "
				   "gdbserver gave %zu bytes of registers "
				   "(%.20s)", (int)tid, n, reply);
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(reply + 2 * i, "%2x", &v) != 1)
			return hwt_err_set(err, EPROTO, "thread %d: malformed "
					   "registers from Valgrind's "
					   "gdbserver", (int)tid);
		g[i] = (uint8_t)v;
	}
	*len = n;
	return 0;
}

static int write_g(struct vg_collector *c, const uint8_t *g, size_t len,
		   struct hwt_err *err)
{
	char cmd[2 * G_SIZE_AVX + 2], reply[64];
	int rc;

	cmd[0] = 'G';
	for (size_t i = 0; i < len; i++)
		snprintf(cmd + 1 + 2 * i, 3, "%02x", g[i]);
	rc = vg_link_call(&c->link, cmd, reply, sizeof(reply), err);
	if (rc == 0 && strcmp(reply, "OK"))
		rc = hwt_err_set(err, EPROTO, "Valgrind's gdbserver refused "
				 "the registers (%.40s)", reply);
	return rc;
}

static void g_to_user(const uint8_t *g, const struct vg_thread *t,
		      uint8_t *u)
{
	memset(u, 0, U_WORDS * 8);
	for (unsigned i = 0; i < 16; i++)
		put_le(u + 8 * GPR_WORD[i], get_le(g + G_GPR + 8 * i, 8), 8);
	put_le(u + 8 * U_RIP, get_le(g + G_RIP, 8), 8);
	put_le(u + 8 * U_EFLAGS, get_le(g + G_EFLAGS, 4), 8);
	put_le(u + 8 * U_ORIG_RAX, get_le(g + G_ORIG_RAX, 8), 8);
	put_le(u + 8 * U_CS, USER_CS, 8);
	put_le(u + 8 * U_SS, USER_SS, 8);
	put_le(u + 8 * U_FS_BASE, t->fs_base, 8);
	put_le(u + 8 * U_GS_BASE, t->gs_base, 8);
}

static void user_to_g(const uint8_t *u, uint8_t *g)
{
	for (unsigned i = 0; i < 16; i++)
		put_le(g + G_GPR + 8 * i, get_le(u + 8 * GPR_WORD[i], 8), 8);
	put_le(g + G_RIP, get_le(u + 8 * U_RIP, 8), 8);
	put_le(g + G_EFLAGS, get_le(u + 8 * U_EFLAGS, 8), 4);
	put_le(g + G_ORIG_RAX, get_le(u + 8 * U_ORIG_RAX, 8), 8);
}

static void g_to_fxsave(const uint8_t *g, uint8_t *fx)
{
	unsigned tag = (unsigned)get_le(g + G_FTAG, 4), ftw = 0;

	memset(fx, 0, FX_SIZE);
	/* FXSAVE keeps one bit per register: not empty (tag 3). */
	for (unsigned i = 0; i < 8; i++)
		if (((tag >> (2 * i)) & 3) != 3)
			ftw |= 1u << i;
	put_le(fx + FX_FCW, get_le(g + G_FCTRL, 4), 2);
	put_le(fx + FX_FSW, get_le(g + G_FSTAT, 4), 2);
	fx[FX_FTW] = (uint8_t)ftw;
	put_le(fx + FX_FOP, get_le(g + G_FOP, 4), 2);
	put_le(fx + FX_FIP, get_le(g + G_FIOFF, 4), 8);
	put_le(fx + FX_FDP, get_le(g + G_FOOFF, 4), 8);
	put_le(fx + FX_MXCSR, get_le(g + G_MXCSR, 4), 4);
	put_le(fx + FX_MXCSR_MASK, 0xffff, 4);
	for (unsigned i = 0; i < 8; i++)
		memcpy(fx + FX_ST + 16 * i, g + G_ST + 10 * i, 10);
	memcpy(fx + FX_XMM, g + G_XMM, 16 * 16);
}

static void fxsave_to_g(const uint8_t *fx, uint8_t *g)
{
	for (unsigned i = 0; i < 8; i++)
		memcpy(g + G_ST + 10 * i, fx + FX_ST + 16 * i, 10);
	memcpy(g + G_XMM, fx + FX_XMM, 16 * 16);
	put_le(g + G_MXCSR, get_le(fx + FX_MXCSR, 4), 4);
	put_le(g + G_FCTRL, get_le(fx + FX_FCW, 2), 4);
	put_le(g + G_FSTAT, get_le(fx + FX_FSW, 2), 4);
}

int vg_regset(struct hwt_collector *base, pid_t tid, int nt_type, void *buf,
	      size_t *len, bool write, struct hwt_err *err)
{
	struct vg_collector *c = vg_of(base);
	struct vg_thread *t = vt_find(c, tid);
	uint8_t g[G_SIZE_AVX], *b = buf;
	size_t glen, need;
	bool moved;
	int rc;

	if (!t)
		return hwt_err_set(err, ESRCH, "thread %d is not a thread of "
				   "process %d", (int)tid, (int)c->base.pid);
	need = nt_type == NT_PRSTATUS ? U_WORDS * 8u :
	       nt_type == NT_PRFPREG ? FX_SIZE :
	       nt_type == NT_X86_XSTATE ? XS_SIZE : 0;
	if (!need)
		return hwt_err_set(err, EINVAL, "register set %d is not one "
				   "Valgrind gives", nt_type);
	if (*len < need)
		return hwt_err_set(err, EINVAL, "register set %d needs %zu "
				   "bytes, got %zu", nt_type, need, *len);
	if ((rc = read_g(c, tid, g, &glen, err)) < 0)
		return rc;
	if (nt_type == NT_X86_XSTATE && glen != G_SIZE_AVX)
		return hwt_err_set(err, ENODATA, "Valgrind gives no AVX state "
				   "on this cpu");
	*len = need;
	if (!write) {
		if (nt_type == NT_PRSTATUS) {
			g_to_user(g, t, b);
			return 0;
		}
		g_to_fxsave(g, b);
		if (nt_type == NT_X86_XSTATE) {
			memset(b + FX_SIZE, 0, XS_SIZE - FX_SIZE);
			put_le(b + XS_XCR0, 7, 8);
			put_le(b + XS_XSTATE_BV, 7, 8);
			memcpy(b + XS_YMMH, g + G_YMMH, 256);
		}
		return 0;
	}
	if (nt_type == NT_PRSTATUS) {
		user_to_g(b, g);
	} else {
		fxsave_to_g(b, g);
		if (nt_type == NT_X86_XSTATE)
			memcpy(g + G_YMMH, b + XS_YMMH, 256);
	}
	/* What the registers held goes into the values of the past. */
	moved = get_le(g + G_RIP, 8) != t->pc;
	if ((rc = vg_registers_written(c, tid, moved, err)) < 0 ||
	    (rc = write_g(c, g, glen, err)) < 0)
		return rc;
	t->pc = get_le(g + G_RIP, 8);
	/* Moved elsewhere: the history says so (from the next stop's
	 * snapshot on), as the ptrace recorder's does. */
	if (moved)
		hwt_vg_reader_moved(&c->rd, tid, t->pc);
	return 0;
}

int vg_detach(struct hwt_collector *base, struct hwt_err *err)
{
	struct vg_collector *c = vg_of(base);
	char reply[64];
	int rc;

	/* The program runs on under Valgrind, without us: recording stops
	 * and it no longer stops at breakpoints. */
	if ((rc = vg_link_monitor(&c->link, "hwt.off", err)) < 0)
		return rc;
	for (size_t i = 0; i < c->ninserted; i++)
		if ((rc = z0(c, false, c->inserted[i], err)) < 0)
			return rc;
	c->ninserted = 0;
	if ((rc = vg_link_call(&c->link, "D", reply, sizeof(reply), err)) < 0)
		return rc;
	vg_link_close(&c->link);
	c->link_up = false;
	c->detached = true;
	base->state = HWT_COLLECTOR_ENDED;
	return 0;
}

void vg_live_free(struct vg_collector *c)
{
	vg_live_past_drop(c);
	if (c->link_up)
		vg_link_close(&c->link);
	c->link_up = false;
	free(c->vt);
	free(c->bps);
	free(c->inserted);
	c->vt = NULL;
	c->bps = c->inserted = NULL;
	c->nvt = c->nbps = c->ninserted = 0;
}
