// SPDX-License-Identifier: BSD-2-Clause
/* nonstop.c - GDB's non-stop mode (QNonStop:1): threads run and stop one
 * by one, every stop reaches GDB as an asynchronous %Stop notification
 * that it drains with vStopped, and GDB reads and writes the stopped
 * threads, and sends any packet, while others run.
 *
 * The target's resume is all-stop (the collector stops every thread at
 * the first event, hwt-collect.h), so non-stop is built over it: the
 * threads GDB has resumed are resumed again and again, each resume
 * naming only them, and the connection is the resume's interrupt
 * descriptor. A packet arriving pauses every thread; it is served with
 * the program stopped, and the threads GDB considers running go on
 * after it. An event stops only its own thread from GDB's point of view:
 * its stop is queued, the others go on at the next resume. A pause is
 * invisible to GDB except as time: a running thread's registers are
 * not read (GDB does not ask for them), memory reads see the program as
 * it stood an instant ago, as they would on a running program.
 *
 * Threads GDB has not resumed stay stopped; vCont;t stops a running one
 * with a T00 stop (gdbserver's reply to t). A thread that appears while
 * others run without being reported (QThreadEvents off) is running, as
 * GDB assumes of a thread it discovers in non-stop mode. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-collect.h"
#include "server.h"

#define NS_REPLY_MAX 1024

/* The state of tid, added (stopped) when new; NULL without memory. */
static struct ns_thread *state_of(struct server *s, int64_t tid, bool add)
{
	struct nonstop *ns = &s->ns;

	for (size_t i = 0; i < ns->n; i++)
		if (ns->th[i].tid == tid)
			return &ns->th[i];
	if (!add)
		return NULL;
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? 2 * ns->cap : 16;
		struct ns_thread *v = realloc(ns->th, cap * sizeof(*v));

		if (!v)
			return NULL;
		ns->th = v;
		ns->cap = cap;
	}
	ns->th[ns->n] = (struct ns_thread){ .tid = tid };
	return &ns->th[ns->n++];
}

bool nonstop_running(const struct server *s)
{
	if (!s->non_stop || s->process_gone)
		return false;
	for (size_t i = 0; i < s->ns.n; i++)
		if (s->ns.th[i].running)
			return true;
	return false;
}

/* Add a stop to the queue GDB drains with vStopped. */
static int enqueue(struct server *s, const char *reply)
{
	struct nonstop *ns = &s->ns;
	char *copy = strdup(reply);

	if (!copy)
		return -ENOMEM;
	if (ns->nq == ns->qcap) {
		size_t cap = ns->qcap ? 2 * ns->qcap : 8;
		char **v = realloc(ns->queue, cap * sizeof(*v));

		if (!v) {
			free(copy);
			return -ENOMEM;
		}
		ns->queue = v;
		ns->qcap = cap;
	}
	ns->queue[ns->nq++] = copy;
	return 0;
}

/* A stop for GDB: sent now as a notification when none is waiting for
 * GDB's vStopped, else queued behind it. */
static int queue_stop(struct server *s, const char *reply)
{
	char note[NS_REPLY_MAX + 8];
	int rc = enqueue(s, reply);

	if (rc < 0 || s->ns.nq > 1)
		return rc;     /* GDB gets it in a vStopped reply */
	snprintf(note, sizeof(note), "Stop:%s", reply);
	return rsp_send_notification(&s->conn, note);
}

static void drop_queue(struct server *s)
{
	for (size_t i = 0; i < s->ns.nq; i++)
		free(s->ns.queue[i]);
	s->ns.nq = 0;
}

void nonstop_reset(struct server *s)
{
	drop_queue(s);
	free(s->ns.queue);
	free(s->ns.th);
	memset(&s->ns, 0, sizeof(s->ns));
	s->non_stop = false;
}

/* vStopped: GDB took the first queued stop; the reply is the next one,
 * or OK once there is none. */
static int handle_vstopped(struct server *s)
{
	struct nonstop *ns = &s->ns;

	if (ns->nq) {
		free(ns->queue[0]);
		memmove(ns->queue, ns->queue + 1, --ns->nq * sizeof(*ns->queue));
	}
	return rsp_send_str(&s->conn, ns->nq ? ns->queue[0] : "OK");
}

/* '?': every thread is stopped when GDB connects; the thread of the last
 * stop gets its reason, the others a T00 stop. The first is the reply,
 * the rest follow through vStopped. */
static int handle_status(struct server *s)
{
	char reply[NS_REPLY_MAX], tid[48];
	int rc;

	drop_queue(s);
	for (size_t i = 0; i < s->ns.n; i++)
		s->ns.th[i].running = false;
	if (s->process_gone || !s->nthreads)
		return rsp_send_str(&s->conn, "OK");
	s->ops->stop_reply(s, reply, sizeof(reply));
	if ((rc = enqueue(s, reply)) < 0)
		return rc;
	for (size_t i = 0; i < s->nthreads; i++) {
		if (i == s->stop_thread)
			continue;
		snprintf(reply, sizeof(reply), "T00thread:%s;",
			 srv_tid_str(s, s->threads[i].tid, tid, sizeof(tid)));
		if ((rc = enqueue(s, reply)) < 0)
			return rc;
	}
	return rsp_send_str(&s->conn, s->ns.queue[0]);
}

/* vCont in non-stop mode: the actions set which threads run (c, s) or
 * stop (t); the reply is OK at once, the stops come as notifications. */
int nonstop_vcont(struct server *s, const struct srv_action *a, size_t n)
{
	char reply[NS_REPLY_MAX], tid[48];
	int64_t *stop = calloc(s->nthreads + 1, sizeof(*stop));
	size_t nstop = 0;
	int rc;

	if (!stop)
		return rsp_send_str(&s->conn, "E.Out of memory.");
	if (s->process_gone) {
		free(stop);
		return rsp_send_str(&s->conn, "E.The process has ended.");
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct srv_action *act = NULL;
		struct ns_thread *t = state_of(s, s->threads[i].tid, true);

		if (!t) {
			free(stop);
			return rsp_send_str(&s->conn, "E.Out of memory.");
		}
		/* The first action naming the thread, else the default. */
		for (size_t j = 0; j < n && !act; j++)
			if (a[j].tid == t->tid)
				act = &a[j];
		for (size_t j = 0; j < n && !act; j++)
			if (a[j].tid <= 0)
				act = &a[j];
		if (!act)
			continue;
		if (act->kind == 't') {
			if (t->running)
				stop[nstop++] = t->tid;
			t->running = false;
			continue;
		}
		/* A default action resumes stopped threads only. */
		if (t->running)
			continue;
		t->running = true;
		t->kind = act->kind;
		t->signal = act->signal;
	}
	rc = rsp_send_str(&s->conn, "OK");
	for (size_t i = 0; rc == 0 && i < nstop; i++) {
		snprintf(reply, sizeof(reply), "T00thread:%s;",
			 srv_tid_str(s, stop[i], tid, sizeof(tid)));
		rc = queue_stop(s, reply);
	}
	free(stop);
	return rc;
}

/* After a resume: threads that appeared unreported are running (GDB
 * assumes so); threads gone are forgotten. */
static void update_threads(struct server *s)
{
	struct nonstop *ns = &s->ns;
	size_t keep = 0;

	for (size_t i = 0; i < ns->n; i++) {
		bool alive = false;

		for (size_t j = 0; j < s->nthreads && !alive; j++)
			alive = s->threads[j].tid == ns->th[i].tid;
		if (alive)
			ns->th[keep++] = ns->th[i];
	}
	ns->n = keep;
	for (size_t j = 0; j < s->nthreads; j++) {
		struct ns_thread *t;

		if (state_of(s, s->threads[j].tid, false))
			continue;
		t = state_of(s, s->threads[j].tid, true);
		if (t) {
			t->running = true;
			t->kind = 'c';
		}
	}
}

int nonstop_run(struct server *s, bool *packet)
{
	static struct srv_action acts[HWT_RESUME_MAX_ACTIONS];
	char reply[NS_REPLY_MAX];
	int64_t g = s->nthreads ? s->threads[s->gthread].tid : 0;
	int64_t c = s->nthreads ? s->threads[s->cthread].tid : 0;
	size_t n = 0;
	int64_t stopped;
	int rc;

	*packet = false;
	/* Each thread GDB knows: running with its action, or stopped ('t');
	 * a thread born meanwhile runs, as GDB assumes (the default). */
	for (size_t i = 0; i < s->ns.n && n + 1 < HWT_RESUME_MAX_ACTIONS; i++) {
		struct ns_thread *t = &s->ns.th[i];

		acts[n++] = (struct srv_action){ .tid = t->tid,
			.kind = t->running ? t->kind : 't',
			.signal = t->running ? t->signal : 0 };
		t->signal = 0;     /* delivered by this resume */
	}
	acts[n++] = (struct srv_action){ .tid = -1, .kind = 'c' };
	s->resume_interrupted = false;
	rc = s->ops->resume(s, acts, n, reply, sizeof(reply));
	if (rc < 0) {
		/* The resume failed: every thread stands where it is, as a
		 * stop of the thread GDB works with. */
		char tid[48], stop[96];

		fprintf(stderr, "hwt-server: non-stop resume failed: %s\n", reply);
		for (size_t i = 0; i < s->ns.n; i++)
			s->ns.th[i].running = false;
		snprintf(stop, sizeof(stop), "T00thread:%s;",
			 srv_tid_str(s, g ? g : s->pid, tid, sizeof(tid)));
		return queue_stop(s, stop);
	}
	/* GDB chose these threads with Hg/Hc: the pause changes nothing. */
	for (size_t i = 0; i < s->nthreads; i++) {
		if (s->threads[i].tid == g)
			s->gthread = i;
		if (s->threads[i].tid == c)
			s->cthread = i;
	}
	if (s->process_gone) {
		for (size_t i = 0; i < s->ns.n; i++)
			s->ns.th[i].running = false;
		return queue_stop(s, reply);
	}
	if (s->resume_interrupted) {
		*packet = true;
		update_threads(s);
		return 0;
	}
	/* The threads that ran have exited: nothing runs, nothing to
	 * report (GDB learns of exits from the thread list). */
	if (s->resume_nothing_left) {
		update_threads(s);
		for (size_t i = 0; i < s->ns.n; i++)
			s->ns.th[i].running = false;
		return 0;
	}
	stopped = s->resume_tid;
	update_threads(s);
	/* Only the event's thread stops for GDB; a thread that exited
	 * (QThreadEvents' w stop) is gone from the list and stays so. */
	{
		struct ns_thread *t = state_of(s, stopped, false);

		if (t)
			t->running = false;
	}
	return queue_stop(s, reply);
}

bool nonstop_handle(struct server *s, const char *pkt, int *rc)
{
	if (strcmp(pkt, "QNonStop:1") == 0 || strcmp(pkt, "QNonStop:0") == 0) {
		/* A recording's threads never run. */
		if (pkt[9] == '1' && !s->ops->non_stop) {
			*rc = rsp_send_str(&s->conn, "E.Non-stop mode needs a "
					   "live process.");
			return true;
		}
		if (pkt[9] == '0' && nonstop_running(s)) {
			*rc = rsp_send_str(&s->conn, "E.Threads are running.");
			return true;
		}
		drop_queue(s);
		s->ns.n = 0;
		s->non_stop = pkt[9] == '1';
		*rc = rsp_send_str(&s->conn, "OK");
		return true;
	}
	if (!s->non_stop)
		return false;
	if (strcmp(pkt, "vStopped") == 0) {
		*rc = handle_vstopped(s);
		return true;
	}
	if (strcmp(pkt, "?") == 0) {
		*rc = handle_status(s);
		return true;
	}
	return false;
}
