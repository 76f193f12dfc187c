// SPDX-License-Identifier: BSD-2-Clause
/* target_core.c - the crashed process as its core (core.c) and bundle
 * recorded it, served as a target: registers and memory from the core,
 * threads' histories, the executable and the shared-library list from
 * the bundle's modules, values of the past from its data history. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

/* The program's modules: the core is its process's (a followed child's
 * threads are not in it). */
static int core_libraries(struct server *s, struct hwt_err *err)
{
	const struct hwt_bundle *b = s->bundle;
	struct srv_module *mods = calloc(b->nmodules + 1, sizeof(*mods));
	char **files = calloc(b->nmodules + 1, sizeof(*files));
	size_t n = 0;
	int rc;

	if (!mods || !files) {
		free(mods);
		free(files);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < b->nmodules; i++) {
		if (b->modules[i].process != 0)
			continue;
		files[n] = b->modules[i].file ?
			   hwt_bundle_path(b, b->modules[i].file) : NULL;
		mods[n] = (struct srv_module){ b->modules[i].system_path,
					       files[n],
					       b->modules[i].load_address };
		n++;
	}
	rc = libs_build(s, mods, n,
			libs_at_phdr(s->core->auxv, s->core->auxv_len), err);
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
	free(mods);
	return rc;
}

static struct hwt_history *core_history(struct server *s, struct srv_thread *t,
					struct hwt_err *err)
{
	if (t->hist)
		return t->hist;
	if (t->bundle_idx < 0) {
		hwt_err_set(err, ENOENT, "thread %lld has no trace in the bundle",
			    (long long)t->tid);
		return NULL;
	}
	if (hwt_history_open(s->bundle, (size_t)t->bundle_idx, s->img,
			     &t->hist, err))
		return NULL;
	return t->hist;
}

static size_t core_mem_read(struct server *s, uint64_t addr, void *buf,
			    size_t len)
{
	size_t done = 0;

	/* The core holds the memory at the crash; module files fill in what
	 * it left out. */
	while (done < len) {
		size_t n = hwt_image_read(s->core->mem, addr + done,
					  (uint8_t *)buf + done, len - done);

		if (n == 0)
			n = hwt_image_read(s->img, addr + done,
					   (uint8_t *)buf + done, len - done);
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

static bool core_reg_get(struct server *s, size_t ti, int regno, uint8_t *out)
{
	return tdesc_reg_value(s->threads[ti].core, regno, out);
}

/* Nothing runs: forward motion is through the history, up to the crash. */
static int core_resume(struct server *s, const struct srv_action *acts,
		       size_t nacts, char *reply, size_t cap)
{
	size_t ti = s->cthread;
	char id[24];

	/* All-stop, and GDB lists the thread-specific action first, so the
	 * first action says what moves. C and S would deliver a signal: a
	 * recorded past has none to give, so they move like c and s. */
	if (nacts && acts[0].tid > 0) {
		snprintf(id, sizeof(id), "%llx", (unsigned long long)acts[0].tid);
		if (!srv_thread_by_id(s, id, &ti)) {
			snprintf(reply, cap, "E.No such thread.");
			return -ESRCH;
		}
	}
	return reverse_resume(s, ti, HWT_FORWARD, nacts && acts[0].kind == 's',
			      reply, cap);
}

static void core_stop_reply(struct server *s, char *reply, size_t cap)
{
	reverse_stop_reply(s, s->stop_thread, "", reply, cap);
}

static int core_auxv(struct server *s, uint8_t **out, size_t *len,
		     struct hwt_err *err)
{
	if (!s->core->auxv)
		return hwt_err_set(err, ENOENT, "The core has no NT_AUXV.");
	*out = malloc(s->core->auxv_len ? s->core->auxv_len : 1);
	if (!*out)
		return hwt_err_set(err, ENOMEM, "out of memory");
	memcpy(*out, s->core->auxv, s->core->auxv_len);
	*len = s->core->auxv_len;
	return 0;
}

/* The fault's details, for the thread that took it (the core's first). */
static const uint8_t *core_siginfo(struct server *s, size_t ti)
{
	return s->core->have_siginfo && ti == 0 ? s->core->siginfo : NULL;
}

static uint64_t core_insn_now(struct server *s, struct srv_thread *t)
{
	struct hwt_history *h = core_history(s, t, NULL);

	return h ? hwt_history_count(h) : 0;
}

/* key=value pairs separated by ';', then one "thread=TID,RECORDED,
 * LOST_INSNS,LOST_BYTES,TRACE_BYTES" per thread while they fit ("more=1"
 * if not). */
static int core_status(struct server *s, char *buf, size_t cap)
{
	const struct hwt_bundle *b = s->bundle;
	static const char *const reasons[] = { "running", "exited", "signaled",
					       "fault" };
	size_t len;

	len = (size_t)snprintf(buf, cap, "mode=post-mortem;format=%s;"
			       "stop=%s;signal=%d;stop_tid=%lld;threads=%zu",
			       b->type, (unsigned)b->stop_reason <= HWT_STOP_FAULT ?
			       reasons[b->stop_reason] : "unknown", b->stop_signal,
			       (long long)b->stop_tid, b->nthreads);
	for (size_t i = 0; i < b->nthreads; i++) {
		const struct hwt_bundle_thread *t = &b->threads[i];
		char one[160];
		int n = snprintf(one, sizeof(one), ";thread=%lld,%llu,%llu,%llu,%llu",
				 (long long)t->tid,
				 (unsigned long long)t->insn_total,
				 (unsigned long long)t->lost_insns,
				 (unsigned long long)t->lost_bytes,
				 (unsigned long long)t->trace_size);

		if (len + (size_t)n + 8 >= cap) {
			len += (size_t)snprintf(buf + len, cap - len, ";more=1");
			break;
		}
		memcpy(buf + len, one, (size_t)n + 1);
		len += (size_t)n;
	}
	return 0;
}

static int core_save(struct server *s, const char *dir, struct hwt_err *err)
{
	return hwt_bundle_copy(s->bundle, dir, err);
}

/* A recording: nothing to kill or let go. */
static void core_end(struct server *s, enum srv_end how)
{
	(void)s;
	(void)how;
}

static void core_close(struct server *s)
{
	core_past_close(s);
	core_free(s->core);
	if (s->bundle)
		hwt_bundle_free(s->bundle);
}

const struct target_ops target_core_ops = {
	.mode = "post-mortem",
	.reg_get = core_reg_get,
	.past_reg = core_past_reg,
	.mem_read = core_mem_read,
	.past_mem = core_past_mem,
	.past_write = core_past_write,
	.past_place = core_past_place,
	.can_watch = true,
	.watch_writes_only = true,
	.resume = core_resume,
	.stop_reply = core_stop_reply,
	.auxv = core_auxv,
	.siginfo = core_siginfo,
	.history = core_history,
	.insn_now = core_insn_now,
	.save = core_save,
	.status = core_status,
	.end = core_end,
	.close = core_close,
};

int post_mortem_open(struct server *s, const char *bundle_dir,
		     const char *core_path, struct hwt_err *err)
{
	struct hwt_err werr = { 0 };
	char *core = NULL;
	int rc;

	memset(s, 0, sizeof(*s));
	s->ops = &target_core_ops;
	s->attached = true;
	rc = hwt_bundle_read(bundle_dir, &s->bundle, err);
	if (rc)
		return rc;
	if (core_path)
		core = strdup(core_path);
	else if (s->bundle->core)
		core = hwt_bundle_path(s->bundle, s->bundle->core);
	else
		return hwt_err_set(err, ENOENT, "bundle %s has no core (the "
				   "program did not die on a fatal signal, and "
				   "its backend keeps none of a normal exit: "
				   "record with --backend valgrind for one); "
				   "give one with --core CORE", bundle_dir);
	if (!core)
		return hwt_err_set(err, ENOMEM, "out of memory");
	rc = core_open(core, &s->core, err);
	if (!rc)
		rc = hwt_image_new(&s->img, err);
	/* A missing module file only makes its code unreadable. */
	if (!rc && hwt_image_add_bundle(s->img, s->bundle, &werr))
		snprintf(s->warning, sizeof(s->warning), "%s", werr.msg);
	/* The bundle's core is already in the image; a core given on its own
	 * only needs adding when the bundle has none. */
	if (!rc && core_path && !s->bundle->core)
		rc = hwt_image_add_core(s->img, core, err);
	free(core);
	if (rc)
		return rc;
	/* A damaged data history leaves the past's values unavailable; so
	 * does another core than the bundle's own, of where it ends. */
	if (core_path && s->bundle->data_history) {
		size_t used = strlen(s->warning);

		snprintf(s->warning + used, sizeof(s->warning) - used,
			 "%sthe data history is told back from the bundle's "
			 "own core, not from one given with --core: values of "
			 "the past are unavailable", used ? "; " : "");
	} else if (core_past_open(s, &werr) < 0) {
		size_t used = strlen(s->warning);

		core_past_close(s);
		snprintf(s->warning + used, sizeof(s->warning) - used,
			 "%s%s; values of the past are unavailable",
			 used ? "; " : "", werr.msg);
	}
	/* Watchpoints are answered from the history's stores only. */
	s->no_watch = !s->past;
	s->threads = calloc(s->core->nthreads, sizeof(*s->threads));
	if (!s->threads)
		return hwt_err_set(err, ENOMEM, "out of memory");
	s->nthreads = s->core->nthreads;
	/* The recorded process; a core without its pid: its first thread's
	 * id is the process's. */
	s->pid = s->bundle->pid > 0 ? s->bundle->pid :
		 s->nthreads ? s->core->threads[0].tid : 1;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct srv_thread *t = &s->threads[i];

		t->tid = s->core->threads[i].tid;
		t->core = &s->core->threads[i];
		t->bundle_idx = -1;
		/* The program's last: a history of the same tid before
		 * its exec ran other code. */
		for (size_t j = 0; j < s->bundle->nthreads; j++)
			if (s->bundle->threads[j].tid == t->tid &&
			    s->bundle->threads[j].process == 0)
				t->bundle_idx = (long)j;
		/* Recorded already: GDB's record btrace reopens on connect,
		 * and gets the whole recording whenever it enables. */
		t->btrace_on = t->bundle_idx >= 0;
		t->whole_life = true;
		if (t->bundle_idx >= 0 &&
		    s->bundle->threads[t->bundle_idx].trace_size > s->bts_size)
			s->bts_size = s->bundle->threads[t->bundle_idx].trace_size;
	}
	if (!s->bts_size)
		s->bts_size = 64 << 10;
	/* The encoded stream is not known before GDB asks for it; the
	 * raw trace size is as good a figure for a buffer as any. */
	s->pt_size = s->bts_size;
	return core_libraries(s, err);
}

