/* maps.c - the ptrace backend's sideband from /proc/PID/maps (procmaps.c):
 * every executable file mapping the program had, with its load address
 * and build-id, so a decoder can find the code that ran. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer.h"

#define DELETED_SUFFIX " (deleted)"

static bool same_file(const struct hwt_map *a, const struct hwt_map *b)
{
	return a->path && b->path && a->inode == b->inode &&
	       strcmp(a->path, b->path) == 0;
}

/* Where the file's offset 0 is mapped: the ELF image's first page, which
 * is what debuggers call the module's load address. */
static uint64_t load_address(const struct hwt_maps *maps, size_t i)
{
	for (size_t j = i + 1; j-- > 0 && same_file(&maps->v[j], &maps->v[i]);)
		if (maps->v[j].offset == 0)
			return maps->v[j].start;
	return maps->v[i].start - maps->v[i].offset;
}

static bool module_known(const struct step_collector *c, const char *path,
			 size_t path_len, uint64_t load)
{
	for (size_t i = 0; i < c->nmodules; i++)
		if (c->modules[i].load_address == load &&
		    strncmp(c->modules[i].path, path, path_len) == 0 &&
		    c->modules[i].path[path_len] == '\0')
			return true;
	return false;
}

static int add_module(struct step_collector *c, const char *path,
		      size_t path_len, uint64_t load, struct hwt_err *err)
{
	struct hwt_collect_module *m;
	char id[129];

	/* A bundle holds no more; later ones go unrecorded. */
	if (c->nmodules == HWT_BUNDLE_MAX_MODULES)
		return 0;
	if (c->nmodules == c->modules_alloc) {
		size_t n = c->modules_alloc ? c->modules_alloc * 2 : 16;

		m = realloc(c->modules, n * sizeof(*m));
		if (!m)
			return hwt_err_set(err, ENOMEM,
					   "out of memory listing modules");
		c->modules = m;
		c->modules_alloc = n;
	}
	m = &c->modules[c->nmodules];
	memset(m, 0, sizeof(*m));
	m->path = strndup(path, path_len);
	if (!m->path)
		return hwt_err_set(err, ENOMEM, "out of memory listing modules");
	m->load_address = load;
	/* A file without build-id (or gone since) still names the code. */
	if (hwt_elf_build_id(m->path, id, sizeof(id), NULL) == 0)
		m->build_id = strdup(id);
	c->nmodules++;
	return 0;
}

int hwt_step_modules_refresh(struct step_collector *c, pid_t tid,
			   struct hwt_err *err)
{
	struct hwt_maps maps;
	int rc = 0;

	/* The thread may be gone (its process exited meanwhile): then there
	 * is nothing new to learn. */
	if (hwt_maps_read(tid, &maps, NULL) < 0)
		return 0;
	for (size_t i = 0; i < maps.n && rc == 0; i++) {
		const struct hwt_map *m = &maps.v[i];
		size_t plen;
		uint64_t load;

		/* Only files: [vdso] is code too but lives in the core. */
		if (!m->executable || !m->path || m->path[0] != '/')
			continue;
		plen = strlen(m->path);
		if (plen > strlen(DELETED_SUFFIX) &&
		    strcmp(m->path + plen - strlen(DELETED_SUFFIX),
			   DELETED_SUFFIX) == 0)
			plen -= strlen(DELETED_SUFFIX);
		load = load_address(&maps, i);
		if (!module_known(c, m->path, plen, load))
			rc = add_module(c, m->path, plen, load, err);
	}
	hwt_maps_free(&maps);
	return rc;
}

size_t hwt_step_modules_get(struct hwt_collector *base,
			  const struct hwt_collect_module **modules)
{
	struct step_collector *c = pt_of(base);

	*modules = c->modules;
	return c->nmodules;
}

void hwt_step_modules_free(struct step_collector *c)
{
	for (size_t i = 0; i < c->nmodules; i++) {
		free((char *)c->modules[i].path);
		free((char *)c->modules[i].build_id);
	}
	free(c->modules);
	c->modules = NULL;
	c->nmodules = c->modules_alloc = 0;
}
