/* collect.c - the public collector API: backend registry, option checks,
 * call-order checks, dispatch to the chosen backend. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"

/* In order of preference: the first available one is the default. */
static const struct hwt_backend *const backends[] = {
	&hwt_backend_ptrace,
};
#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

size_t hwt_collect_backends(const char *const **names)
{
	/* Filled from the table on every call: the same pointers each time,
	 * so one list of backends stays the only source of names. */
	static const char *backend_names[NBACKENDS];

	for (size_t i = 0; i < NBACKENDS; i++)
		backend_names[i] = backends[i]->name;
	*names = backend_names;
	return NBACKENDS;
}

static void list_names(char *out, size_t outsz)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < NBACKENDS && used < outsz; i++)
		used += (size_t)snprintf(out + used, outsz - used, "%s%s",
					 i ? ", " : "", backends[i]->name);
}

static int pick_backend(const char *name, const struct hwt_backend **out,
			struct hwt_err *err)
{
	char names[256];
	int rc = -ENODEV;

	if (name) {
		for (size_t i = 0; i < NBACKENDS; i++) {
			if (strcmp(name, backends[i]->name) != 0)
				continue;
			rc = backends[i]->available(err);
			if (rc < 0)
				return hwt_err_prefix(err, "backend %s: ", name);
			*out = backends[i];
			return 0;
		}
		list_names(names, sizeof(names));
		return hwt_err_set(err, EINVAL,
				   "unknown trace backend \"%s\"; available "
				   "backends: %s", name, names);
	}
	for (size_t i = 0; i < NBACKENDS; i++) {
		rc = backends[i]->available(err);
		if (rc == 0) {
			*out = backends[i];
			return 0;
		}
	}
	/* err holds why the last (most portable) backend cannot work. */
	return hwt_err_prefix(err, "no trace backend works here: ");
}

/* Complete the caller's options: fields beyond its opts->sz keep their
 * defaults, so older callers keep working when the struct grows. */
static int normalize_opts(const struct hwt_collect_opts *in,
			  struct hwt_collect_opts *out, struct hwt_err *err)
{
	memset(out, 0, sizeof(*out));
	out->sz = sizeof(*out);
	out->cpu = -1;
	if (in) {
		size_t n = in->sz < sizeof(*out) ? in->sz : sizeof(*out);

		if (in->sz < offsetof(struct hwt_collect_opts, backend))
			return hwt_err_set(err, EINVAL,
					   "hwt_collect_opts.sz is %zu; set it "
					   "to sizeof(struct hwt_collect_opts)",
					   in->sz);
		memcpy(out, in, n);
		out->sz = sizeof(*out);
	}
	if (out->buffer_size == 0)
		out->buffer_size = HWT_COLLECT_DEFAULT_BUFFER;
	if (out->buffer_size < HWT_COLLECT_MIN_BUFFER ||
	    out->buffer_size > HWT_COLLECT_MAX_BUFFER)
		return hwt_err_set(err, EINVAL,
				   "per-thread buffer of %llu bytes is outside "
				   "[%u, %llu]; pick a size in that range",
				   (unsigned long long)out->buffer_size,
				   HWT_COLLECT_MIN_BUFFER,
				   (unsigned long long)HWT_COLLECT_MAX_BUFFER);
	if (out->cpu < -1)
		return hwt_err_set(err, EINVAL,
				   "cpu %d is not a cpu number (use -1 for the "
				   "current cpu)", out->cpu);
	return 0;
}

int hwt_collect_launch(const struct hwt_collect_opts *opts,
		       char *const argv[], struct hwt_collector **out,
		       struct hwt_err *err)
{
	struct hwt_collect_opts full;
	const struct hwt_backend *be;
	int rc;

	*out = NULL;
	if (!argv || !argv[0] || !argv[0][0])
		return hwt_err_set(err, EINVAL, "no program to run was given");
	if ((rc = normalize_opts(opts, &full, err)) < 0)
		return rc;
	if ((rc = pick_backend(full.backend, &be, err)) < 0)
		return rc;
	rc = be->launch(&full, argv, out, err);
	if (rc < 0)
		return rc;
	(*out)->backend = be;
	(*out)->state = HWT_COLLECTOR_LAUNCHED;
	return 0;
}

pid_t hwt_collect_pid(const struct hwt_collector *c)
{
	return c->pid;
}

/* ptrace only answers the thread that attached. */
static int check_tracer(const struct hwt_collector *c, const char *what,
			struct hwt_err *err)
{
	if (gettid() != c->tracer_tid)
		return hwt_err_set(err, EPERM,
				   "%s called from thread %d, but the program "
				   "was launched from thread %d; make every "
				   "call from the launching thread", what,
				   (int)gettid(), (int)c->tracer_tid);
	return 0;
}

int hwt_collect_run(struct hwt_collector *c, struct hwt_collect_end *end,
		    struct hwt_err *err)
{
	int rc;

	if (c->state != HWT_COLLECTOR_LAUNCHED)
		return hwt_err_set(err, EBUSY,
				   "the program was already run to its end; "
				   "hwt_collect_run records once per launch");
	if ((rc = check_tracer(c, "hwt_collect_run", err)) < 0)
		return rc;
	rc = c->backend->run(c, err);
	if (rc == 0 && end)
		*end = c->end;
	return rc;
}

int hwt_collect_write_core(struct hwt_collector *c, const char *path,
			   struct hwt_err *err)
{
	int rc;

	if (c->state != HWT_COLLECTOR_FAULTED)
		return hwt_err_set(err, EINVAL,
				   "a core can only be written while the "
				   "program is stopped on a fatal signal "
				   "(after hwt_collect_run ended with a fault)");
	if ((rc = check_tracer(c, "hwt_collect_write_core", err)) < 0)
		return rc;
	return c->backend->write_core(c, path, err);
}

int hwt_collect_finish(struct hwt_collector *c, struct hwt_collect_end *end,
		       struct hwt_err *err)
{
	int rc;

	if (c->state != HWT_COLLECTOR_FAULTED)
		return hwt_err_set(err, EINVAL,
				   "hwt_collect_finish only applies after "
				   "hwt_collect_run ended with a fault");
	if ((rc = check_tracer(c, "hwt_collect_finish", err)) < 0)
		return rc;
	rc = c->backend->finish(c, err);
	if (rc == 0 && end)
		*end = c->end;
	return rc;
}

size_t hwt_collect_threads(struct hwt_collector *c,
			   const struct hwt_collect_thread **threads)
{
	*threads = NULL;
	if (c->state == HWT_COLLECTOR_LAUNCHED)
		return 0;
	return c->backend->threads(c, threads);
}

size_t hwt_collect_modules(struct hwt_collector *c,
			   const struct hwt_collect_module **modules)
{
	return c->backend->modules(c, modules);
}

void hwt_collect_close(struct hwt_collector *c)
{
	if (c)
		c->backend->close(c);
}
