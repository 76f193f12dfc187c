/* sideband.c - the set of executable file mappings a program had, for
 * backends that learn about mappings from perf MMAP2 records or from
 * /proc/PID/maps at a drain: one entry per path and load address, with the
 * file's build-id, at most HWT_BUNDLE_MAX_MODULES. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"
#include "os/proc.h"

#define DELETED_SUFFIX " (deleted)"

static bool known(const struct hwt_modset *s, const char *path,
		  size_t path_len, uint64_t load)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].load_address == load &&
		    strncmp(s->v[i].path, path, path_len) == 0 &&
		    s->v[i].path[path_len] == '\0')
			return true;
	return false;
}

int hwt_modset_add(struct hwt_modset *s, const char *path, uint64_t addr,
		   uint64_t pgoff, struct hwt_err *err)
{
	struct hwt_collect_module *m;
	size_t plen;
	uint64_t load;
	char id[129];

	/* Only files: [vdso] and anonymous code live in memory only. */
	if (!path || path[0] != '/' || pgoff > addr)
		return 0;
	plen = strlen(path);
	if (plen > strlen(DELETED_SUFFIX) &&
	    strcmp(path + plen - strlen(DELETED_SUFFIX), DELETED_SUFFIX) == 0)
		plen -= strlen(DELETED_SUFFIX);
	/* Where file offset 0 would be: the module's load address. */
	load = addr - pgoff;
	if (known(s, path, plen, load) || s->n == HWT_BUNDLE_MAX_MODULES)
		return 0;
	if (s->n == s->alloc) {
		size_t n = s->alloc ? s->alloc * 2 : 16;

		m = realloc(s->v, n * sizeof(*m));
		if (!m)
			return hwt_err_set(err, ENOMEM,
					   "out of memory listing modules");
		s->v = m;
		s->alloc = n;
	}
	m = &s->v[s->n];
	memset(m, 0, sizeof(*m));
	if (!(m->path = strndup(path, plen)))
		return hwt_err_set(err, ENOMEM, "out of memory listing modules");
	m->load_address = load;
	/* A file without build-id (or gone since) still names the code. */
	if (hwt_elf_build_id(m->path, id, sizeof(id), NULL) == 0)
		m->build_id = strdup(id);
	s->n++;
	return 0;
}

int hwt_modset_add_maps(struct hwt_modset *s, pid_t pid, struct hwt_err *err)
{
	struct hwt_maps maps;
	int rc = 0;

	/* The process may be gone: then there is nothing new to learn. */
	if (hwt_maps_read(pid, &maps, NULL) < 0)
		return 0;
	for (size_t i = 0; i < maps.n && rc == 0; i++)
		if (maps.v[i].executable)
			rc = hwt_modset_add(s, maps.v[i].path, maps.v[i].start,
					    maps.v[i].offset, err);
	hwt_maps_free(&maps);
	return rc;
}

void hwt_modset_free(struct hwt_modset *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free((char *)s->v[i].path);
		free((char *)s->v[i].build_id);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}
