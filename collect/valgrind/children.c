// SPDX-License-Identifier: BSD-2-Clause
/* children.c - forked children followed (hwt_collect_opts.follow_fork):
 * each writes a stream of its own beside the program's, FILE.PID, which
 * starts by sharing its parent's translations (vgstream.h, FORK). Each
 * gets a reader; their threads join the recording's, each a process of
 * the bundle with its own modules. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "array.h"
#include "vg.h"

#define STREAM_NAME "stream."

/* The reader of process pid's stream, for a child's FORK record. */
static struct hwt_vg_reader *reader_of(void *ctx, pid_t pid)
{
	struct vg_collector *c = ctx;

	if (pid == c->base.pid)
		return &c->rd;
	for (size_t i = 0; i < c->nchildren; i++)
		if (c->children[i].pid == pid)
			return &c->children[i].rd;
	return NULL;
}

static int add_child(struct vg_collector *c, pid_t pid, const char *path,
		     struct hwt_err *err)
{
	struct vg_child *ch;
	int fd = open(path, O_RDWR | O_CLOEXEC);   /* RDWR: vg_feed_fd frees */

	if (fd < 0)
		return 0;   /* gone again: a child that died at once */
	if (HWT_ARRAY_RESERVE(c->children, c->children_cap, c->nchildren + 1,
			      4)) {
		close(fd);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	ch = &c->children[c->nchildren];
	*ch = (struct vg_child){ .pid = pid, .fd = fd };
	hwt_vg_reader_init(&ch->rd, c->rd.ring_capacity, err);
	ch->rd.tool_path = c->rd.tool_path;
	ch->rd.tool_alias = c->rd.tool_alias;
	ch->rd.whole_dir = c->rd.whole_dir;
	ch->rd.pack_work = c->rd.pack_work;
	ch->rd.defer = c->rd.defer;
	ch->rd.budget = c->rd.budget;
	ch->rd.whole_bound = c->rd.whole_bound;
	ch->rd.parent_of = reader_of;
	ch->rd.parent_ctx = c;
	c->nchildren++;
	return 0;
}

int vg_children_find(struct vg_collector *c, struct hwt_err *err)
{
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (!c->follow_fork || !(d = opendir(c->dir)))
		return 0;
	while (rc == 0 && (e = readdir(d))) {
		char path[PATH_MAX], *end;
		unsigned long pid;

		if (strncmp(e->d_name, STREAM_NAME, strlen(STREAM_NAME)))
			continue;
		pid = strtoul(e->d_name + strlen(STREAM_NAME), &end, 10);
		if (*end || pid == 0 || pid > INT_MAX ||
		    reader_of(c, (pid_t)pid) ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", c->dir,
				     e->d_name) >= sizeof(path))
			continue;
		rc = add_child(c, (pid_t)pid, path, err);
	}
	closedir(d);
	return rc;
}

int vg_children_drain(struct vg_collector *c, bool *got, struct hwt_err *err)
{
	int rc;

	for (size_t i = 0; i < c->nchildren; i++) {
		struct vg_child *ch = &c->children[i];

		if (ch->failed)
			continue;
		rc = vg_feed_fd(c, ch->fd, &ch->rd, got, err);
		if (rc < 0) {
			/* A child's damaged stream costs its history only. */
			snprintf(ch->why, sizeof(ch->why), "%.290s", err->msg);
			ch->failed = true;
			*err = (struct hwt_err){ 0 };
		}
	}
	return 0;
}

/* Every process's modules, the program's first, each child's named by
 * its pid: Valgrind lays every process out alike, so a child that
 * exec's another program maps other files where the program has its
 * own, and each history decodes with its own process's (docs/
 * valgrind.md, Processes). */
static int list_modules(struct vg_collector *c, struct hwt_err *err)
{
	size_t n = c->rd.modules.n;

	for (size_t i = 0; i < c->nchildren; i++)
		n += c->children[i].rd.modules.n;
	free(c->modules);
	c->nmodules = 0;
	if (!(c->modules = calloc(n ? n : 1, sizeof(*c->modules))))
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t m = 0; m < c->rd.modules.n; m++)
		c->modules[c->nmodules++] = c->rd.modules.v[m];
	for (size_t i = 0; i < c->nchildren; i++)
		for (size_t m = 0; m < c->children[i].rd.modules.n; m++) {
			c->modules[c->nmodules] = c->children[i].rd.modules.v[m];
			c->modules[c->nmodules++].pid = c->children[i].pid;
		}
	return 0;
}

int vg_children_finish(struct vg_collector *c, struct hwt_err *err)
{
	bool got = true;

	/* A grandchild's stream may wait for its parent's: read until
	 * nothing moves. */
	while (got) {
		got = false;
		vg_children_find(c, err);
		vg_children_drain(c, &got, err);
	}
	for (size_t i = 0; i < c->nchildren; i++) {
		struct vg_child *ch = &c->children[i];
		struct hwt_err e = { 0 };

		if (hwt_vg_reader_finish(&ch->rd, &e) < 0 && !ch->failed) {
			snprintf(ch->why, sizeof(ch->why), "%.290s", e.msg);
			ch->failed = true;
		}
		if (ch->failed && !c->base.warning[0])
			snprintf(c->base.warning, sizeof(c->base.warning),
				 "the history of forked child %d is cut short: "
				 "%.400s", (int)ch->pid, ch->why);
	}
	return c->nchildren ? list_modules(c, err) : 0;
}

void vg_children_free(struct vg_collector *c)
{
	free(c->modules);
	c->modules = NULL;
	c->nmodules = 0;
	for (size_t i = 0; i < c->nchildren; i++) {
		close(c->children[i].fd);
		hwt_vg_reader_free(&c->children[i].rd);
	}
	free(c->children);
	c->children = NULL;
	c->nchildren = 0;
}
