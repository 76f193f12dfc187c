// SPDX-License-Identifier: BSD-2-Clause
/* children.c - forked children followed (hwt_collect_opts.follow_fork):
 * each writes a stream of its own beside the program's, FILE.PID, which
 * starts by sharing its parent's translations (vgstream.h, FORK). Each
 * gets a reader; their threads join the recording's, their modules the
 * program's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

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

/* Module m into s, its recorder flag kept. */
static int add_module(struct hwt_modset *s, const struct hwt_collect_module *m,
		      struct hwt_err *err)
{
	int rc = hwt_modset_add(s, m->path, m->load_address, 0, err);

	for (size_t i = 0; rc == 0 && m->recorder && i < s->n; i++)
		if (s->v[i].load_address == m->load_address &&
		    !strcmp(s->v[i].path, m->path))
			s->v[i].recorder = true;
	return rc;
}

/* Bytes from path's load address that its loaded segments (PT_LOAD)
 * span; 1 when that cannot be read. */
static uint64_t extent(const char *path)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = NULL;
	size_t n;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE ||
	    !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)) ||
	    elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &n))
		n = 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if ((ph.p_vaddr & ~(uint64_t)4095) < lo)
			lo = ph.p_vaddr & ~(uint64_t)4095;
		if (ph.p_vaddr + ph.p_memsz > hi)
			hi = ph.p_vaddr + ph.p_memsz;
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return hi > lo ? hi - lo : 1;
}

/* Whether child module m overlaps another file of the program's, whose
 * extents are ext[]. */
static bool overlaps(const struct vg_collector *c, const uint64_t *ext,
		     const struct hwt_collect_module *m)
{
	uint64_t lo = m->load_address, hi = lo + extent(m->path);

	for (size_t i = 0; i < c->rd.modules.n; i++) {
		const struct hwt_collect_module *p = &c->rd.modules.v[i];

		if (strcmp(p->path, m->path) && p->load_address < hi &&
		    lo < p->load_address + ext[i])
			return true;
	}
	return false;
}

/* The children's modules, then the program's: Valgrind lays every
 * process out alike, so a child maps other files where the program has
 * its own, and the one module list a bundle has must let the program's
 * win (the image takes the later of two at an address): its history is
 * the one with the core, the one debuggers serve. A child's history
 * decodes with the program's modules where they overlap (docs/
 * valgrind.md, Processes). */
static int merge_modules(struct vg_collector *c, struct hwt_err *err)
{
	struct hwt_modset all = { 0 };
	const struct hwt_collect_module *clash = NULL;
	uint64_t *ext = calloc(c->rd.modules.n + 1, sizeof(*ext));
	int rc = ext ? 0 : hwt_err_set(err, ENOMEM, "out of memory");

	for (size_t m = 0; ext && m < c->rd.modules.n; m++)
		ext[m] = extent(c->rd.modules.v[m].path);
	for (size_t i = 0; rc == 0 && i < c->nchildren; i++)
		for (size_t m = 0; rc == 0 && m < c->children[i].rd.modules.n;
		     m++) {
			const struct hwt_collect_module *mod =
				&c->children[i].rd.modules.v[m];

			if (!clash && overlaps(c, ext, mod))
				clash = mod;
			rc = add_module(&all, mod, err);
		}
	free(ext);
	/* Said where the recording is read, since it costs the children's
	 * histories their function names there. */
	if (clash && !c->base.warning[0])
		snprintf(c->base.warning, sizeof(c->base.warning),
			 "forked children mapped other files where the "
			 "program has its own (%.200s at 0x%" PRIx64 "): "
			 "their histories are decoded with the program's "
			 "modules there and may name the wrong functions",
			 clash->path, clash->load_address);
	for (size_t m = 0; rc == 0 && m < c->rd.modules.n; m++)
		rc = add_module(&all, &c->rd.modules.v[m], err);
	if (rc < 0) {
		hwt_modset_free(&all);
		return rc;
	}
	hwt_modset_free(&c->rd.modules);
	c->rd.modules = all;
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
	return c->nchildren ? merge_modules(c, err) : 0;
}

void vg_children_free(struct vg_collector *c)
{
	for (size_t i = 0; i < c->nchildren; i++) {
		close(c->children[i].fd);
		hwt_vg_reader_free(&c->children[i].rd);
	}
	free(c->children);
	c->children = NULL;
	c->nchildren = 0;
}
