// SPDX-License-Identifier: BSD-2-Clause
/* session.c - what the valgrind backend's files share about a recording
 * under way: every stream read as far as it goes (the program's and its
 * followed children's), the window shared between their threads, the
 * threads laid out for threads(), and the end wound up once Valgrind is
 * reaped. backend.c launches and holds the ops table; live.c drives a
 * stop at a time; both call down here. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "array.h"
#include "vg.h"

/* Children whose stream has ended get their place in the order they
 * ended (drains apart; within one, by when they were found); under
 * --whole their histories go to their spills. */
static void note_ended(struct vg_collector *c)
{
	for (size_t j = 0; j < c->nchildren; j++) {
		struct vg_child *ch = &c->children[j];

		if (!ch->rd.ended || ch->ended_at)
			continue;
		ch->ended_at = ++c->end_clock;
		for (size_t i = 0; i < ch->rd.nthreads; i++)
			hwt_vg_thread_spill_ended(&ch->rd.threads[i]);
	}
}

static bool running(const struct vg_child *ch)
{
	return !ch->ended_at;
}

static int newest_ended_first(const void *a, const void *b)
{
	const struct vg_child *x = *(struct vg_child *const *)a;
	const struct vg_child *y = *(struct vg_child *const *)b;

	return x->ended_at < y->ended_at ? 1 : x->ended_at > y->ended_at ?
		-1 : 0;
}

/* The ended children's histories in room, newest ended first: the
 * oldest drop to make room. */
static void fit_ended(struct vg_collector *c, uint64_t room)
{
	size_t n = 0;

	if (HWT_ARRAY_RESERVE(c->by_end, c->by_end_alloc, c->nchildren, 16))
		return;   /* they keep what they hold until the next share */
	for (size_t j = 0; j < c->nchildren; j++)
		if (!running(&c->children[j]))
			c->by_end[n++] = &c->children[j];
	qsort(c->by_end, n, sizeof(*c->by_end), newest_ended_first);
	for (size_t j = 0; j < n; j++) {
		struct hwt_vg_reader *rd = &c->by_end[j]->rd;

		for (size_t i = rd->nthreads; i-- > 0;) {
			struct hwt_vg_thread *t = &rd->threads[i];
			uint64_t used = hwt_vg_thread_window_used(t);

			if (used > room)
				used -= hwt_vg_thread_evict(t, used - room);
			room = used < room ? room - used : 0;
		}
	}
}

/* All threads together, the program's and its followed children's, keep
 * at most twice the per-thread window (--size). Those of streams still
 * read share it max-min fairly, each the newest of its own: one cap for
 * every thread, the largest that fits when threads below it keep all
 * they have. A thousand short-lived workers then cost what they hold,
 * and the main thread keeps the rest (up to the window), instead of
 * everyone getting a thousandth. The cap is recomputed as threads grow,
 * exit and are forgotten. What they leave holds the histories of
 * children that have ended, the newest kept: a make's last compilers,
 * not its first. */
static void share_window(struct vg_collector *c)
{
	uint64_t total = 2 * c->rd.ring_capacity, cap = c->rd.ring_capacity;
	uint64_t held = 0;
	size_t n = c->rd.nthreads, k = 0;

	note_ended(c);
	for (size_t j = 0; j < c->nchildren; j++)
		if (running(&c->children[j]))
			n += c->children[j].rd.nthreads;
	if (n > 2 && HWT_ARRAY_RESERVE(c->used, c->used_alloc, n, 64))
		return;   /* the caps stay as they were */
	if (n > 2) {
		for (size_t i = 0; i < c->rd.nthreads; i++)
			c->used[k++] = hwt_vg_thread_window_used(
				&c->rd.threads[i]);
		for (size_t j = 0; j < c->nchildren; j++)
			for (size_t i = 0; running(&c->children[j]) &&
			     i < c->children[j].rd.nthreads; i++)
				c->used[k++] = hwt_vg_thread_window_used(
					&c->children[j].rd.threads[i]);
		qsort(c->used, n, sizeof(*c->used), hwt_cmp_u64);
		for (size_t i = 0; i < n; i++) {
			if (c->used[i] * (n - i) > total) {
				cap = total / (n - i);
				break;
			}
			total -= c->used[i];
		}
		total = 2 * c->rd.ring_capacity;
	}
	for (size_t i = 0; i < c->rd.nthreads; i++) {
		hwt_vg_thread_set_window(&c->rd.threads[i], cap);
		held += hwt_vg_thread_window_used(&c->rd.threads[i]);
	}
	for (size_t j = 0; j < c->nchildren; j++)
		for (size_t i = 0; running(&c->children[j]) &&
		     i < c->children[j].rd.nthreads; i++) {
			struct hwt_vg_thread *t = &c->children[j].rd.threads[i];

			hwt_vg_thread_set_window(t, cap);
			held += hwt_vg_thread_window_used(t);
		}
	fit_ended(c, total > held ? total - held : 0);
}

/* A ring took all rings past the shared window: share it now. */
void vg_share_now(void *ctx)
{
	share_window(ctx);
}

/* Read every stream as far as it goes now, sharing the window between
 * pieces. */
int vg_drain(struct vg_collector *c, bool *got, struct hwt_err *err)
{
	bool more;
	int rc;

	*got = false;
	do {
		more = false;
		/* Children first seen now forked after what the parent's
		 * stream holds now: read the parent's after looking. */
		if ((rc = vg_children_find(c, err)) < 0)
			return rc;
		if (c->stream_fd < 0)
			/* Written to only to punch out what was read. */
			c->stream_fd = open(c->stream_path,
					    O_RDWR | O_CLOEXEC);
		/* Not there yet: the tool has not opened it. */
		if (c->stream_fd >= 0 &&
		    (rc = vg_feed_fd(c, c->stream_fd, &c->rd, &more,
				     err)) < 0)
			return rc;
		if ((rc = vg_children_drain(c, &more, err)) < 0)
			return rc;
		share_window(c);
		*got |= more;
	} while (more);
	return 0;
}

/* Valgrind's first message line, for an error; what it means when it is
 * Valgrind's thread limit. */
static void log_head(struct vg_collector *c, char *out, size_t size)
{
	FILE *f = fopen(c->log_path, "re");
	char line[512];

	out[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "Max number of threads is too low")) {
			snprintf(out, size, "the program had more than %u "
				 "threads alive at once, the most the valgrind "
				 "backend runs (Valgrind's --max-threads)",
				 VG_MAX_THREADS);
			fclose(f);
			return;
		}
	if (f)
		rewind(f);
	while (f && fgets(line, sizeof(line), f)) {
		char *m = line;

		/* "==PID== text": the text. */
		if (m[0] == '=' && (m = strstr(m + 2, "== ")))
			m += 3;
		else
			m = line;
		m[strcspn(m, "\n")] = '\0';
		if (*m) {
			snprintf(out, size, "%.300s", m);
			break;
		}
	}
	if (f)
		fclose(f);
}

/* rd's threads that ran, appended to c->threads: process pid's (0: the
 * program's). */
static void add_threads(struct vg_collector *c, const struct hwt_vg_reader *rd,
			pid_t pid)
{
	for (size_t i = 0; i < rd->nthreads; i++) {
		const struct hwt_vg_thread *t = &rd->threads[i];

		if (!t->ring.started && !t->ring.sealed_size &&
		    !t->ring.insn_total)
			continue;
		c->threads[c->nthreads++] = (struct hwt_collect_thread){
			.tid = t->tid,
			.pid = pid,
			.exec = t->exec,
			.format = HWT_COLLECT_FMT_SW,
			.trace = t->ring.sealed,
			.trace_size = t->ring.sealed_size,
			.lost_bytes = t->ring.lost_bytes,
			.lost_insns = t->ring.lost_insns,
			.insn_total = t->ring.insn_total,
			.exited = t->exited,
			.spill = t->ring.spill,
		};
	}
}

int vg_collect_threads(struct vg_collector *c, struct hwt_err *err)
{
	size_t n = c->rd.nthreads;

	for (size_t k = 0; k < c->nchildren; k++)
		n += c->children[k].rd.nthreads;
	free(c->threads);
	c->nthreads = 0;
	c->threads = calloc(n ? n : 1, sizeof(*c->threads));
	if (!c->threads)
		return hwt_err_set(err, ENOMEM, "out of memory");
	/* The program's threads, then each followed child's. */
	add_threads(c, &c->rd, 0);
	for (size_t k = 0; k < c->nchildren; k++)
		add_threads(c, &c->children[k].rd, c->children[k].pid);
	return 0;
}

/* How the program ended, from its wait status and the stream. */
static int set_end(struct vg_collector *c, int status, struct hwt_err *err)
{
	struct hwt_collect_end *end = &c->base.end;
	char msg[400];

	if (!c->rd.magic_seen) {
		log_head(c, msg, sizeof(msg));
		return hwt_err_set(err, ENOEXEC, "valgrind could not run %s%s%s",
				   c->prog, msg[0] ? ": " : "", msg);
	}
	c->base.state = HWT_COLLECTOR_ENDED;
	/* With --log-file Valgrind names its core LOG.core.PID: of a fatal
	 * signal, or of the exit (--hwt-exit-core). */
	if (asprintf(&c->core_path, "%s.core.%d", c->log_path,
		     (int)c->base.pid) < 0) {
		c->core_path = NULL;
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	if (WIFEXITED(status)) {
		*end = (struct hwt_collect_end){
			.reason = HWT_STOP_EXITED,
			.status = WEXITSTATUS(status),
			.exit_core = access(c->core_path, R_OK) == 0,
		};
		return 0;
	}
	*end = (struct hwt_collect_end){ .reason = HWT_STOP_SIGNALED,
					 .signal = WTERMSIG(status) };
	if (access(c->core_path, R_OK) == 0 && c->rd.last_at_tid) {
		end->reason = HWT_STOP_FAULT;
		end->tid = c->rd.last_at_tid;
		end->pc = c->rd.last_at_pc;
		c->base.state = HWT_COLLECTOR_FAULTED;
	}
	return 0;
}

/* Whether the stream's file system is full: the tool cannot say so
 * itself, since its log lives there too. Less room than one flush of the
 * tool's buffer is full for it. */
static bool stream_disk_full(const struct vg_collector *c)
{
	struct statvfs fs;

	return statvfs(c->dir, &fs) == 0 &&
	       (uint64_t)fs.f_bavail * fs.f_bsize < VG_READ_PIECE;
}

int vg_wind_up(struct vg_collector *c, int status, struct hwt_err *err)
{
	bool got;
	int rc;

	c->reaped = true;
	if ((rc = hwt_held_exec_error(&c->held, "valgrind", err)) < 0)
		return rc;
	if ((rc = vg_drain(c, &got, err)) < 0)
		return rc;
	/* What was read is kept whatever ends the stream; a stream cut
	 * short (the tool killed or unable to write) is said, not fatal. */
	rc = hwt_vg_reader_finish(&c->rd, err);
	if (rc < 0 && !c->rd.magic_seen) {
		char msg[400];

		log_head(c, msg, sizeof(msg));
		if (msg[0])
			return hwt_err_set(err, ENOEXEC, "valgrind stopped "
					   "before %s ran: %s", c->prog, msg);
	}
	if (rc == 0)
		rc = vg_children_finish(c, err);
	if (c->rd.full) {
		/* The tool stops writing at its bound, END included. */
		snprintf(c->base.warning, sizeof(c->base.warning),
			 "recording stopped: the trace stream waiting to be "
			 "read reached the tool's bound of %llu bytes; later "
			 "instructions are not recorded",
			 (unsigned long long)c->rd.bound);
		rc = 0;
	} else if (c->rd.magic_seen && (rc < 0 || !c->rd.ended)) {
		char msg[400];

		log_head(c, msg, sizeof(msg));
		if (!msg[0] && stream_disk_full(c))
			snprintf(msg, sizeof(msg), "no space left on the file "
				 "system of %s (TMPDIR names another)", c->dir);
		snprintf(c->base.warning, sizeof(c->base.warning),
			 "the hwtrace Valgrind tool stopped before the "
			 "program ended (%.200s%s%.150s); the history ends "
			 "where it stopped", rc < 0 ? err->msg :
			 "its stream has no end", msg[0] ? ": " : "", msg);
		rc = 0;
	}
	if (rc == 0)
		rc = set_end(c, status, err);
	if (rc == 0)
		rc = vg_collect_threads(c, err);
	return rc;
}
