// SPDX-License-Identifier: BSD-2-Clause
/* modset.c - the executable file mappings a program had (modset.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "modset.h"
#include "proc.h"

#define DELETED_SUFFIX " (deleted)"

static bool known(const struct hwt_modset *s, const char *path,
		  size_t path_len, uint64_t load)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].load_address == load && s->v[i].exec == s->exec &&
		    strncmp(s->v[i].path, path, path_len) == 0 &&
		    s->v[i].path[path_len] == '\0')
			return true;
	return false;
}

/* Add path (its first path_len bytes) loaded at load. */
static int add(struct hwt_modset *s, const char *path, size_t path_len,
	       uint64_t load, struct hwt_err *err)
{
	struct hwt_collect_module *m;
	char id[129];

	if (path_len > strlen(DELETED_SUFFIX) &&
	    !strncmp(path + path_len - strlen(DELETED_SUFFIX), DELETED_SUFFIX,
		     strlen(DELETED_SUFFIX)))
		path_len -= strlen(DELETED_SUFFIX);
	/* A bundle holds no more; later ones go unrecorded. */
	if (known(s, path, path_len, load) || s->n == HWT_BUNDLE_MAX_MODULES)
		return 0;
	if (HWT_ARRAY_RESERVE(s->v, s->cap, s->n + 1, 16))
		return hwt_err_set(err, ENOMEM, "out of memory listing modules");
	m = &s->v[s->n];
	memset(m, 0, sizeof(*m));
	if (!(m->path = strndup(path, path_len)))
		return hwt_err_set(err, ENOMEM, "out of memory listing modules");
	m->load_address = load;
	m->exec = s->exec;
	/* A file without build-id (or gone since) still names the code. */
	if (hwt_elf_build_id(m->path, id, sizeof(id), NULL) == 0)
		m->build_id = strdup(id);
	s->n++;
	return 0;
}

int hwt_modset_add(struct hwt_modset *s, const char *path, uint64_t addr,
		   uint64_t pgoff, struct hwt_err *err)
{
	/* Only files: [vdso] and anonymous code live in memory only. */
	if (!path || path[0] != '/' || pgoff > addr)
		return 0;
	/* Where file offset 0 would be: the module's load address. */
	return add(s, path, strlen(path), addr - pgoff, err);
}

static bool same_file(const struct hwt_map *a, const struct hwt_map *b)
{
	return a->path && b->path && a->inode == b->inode &&
	       strcmp(a->path, b->path) == 0;
}

/* Where the file of mapping i has its offset 0 mapped: an earlier mapping
 * of the same file from offset 0 when there is one (segments need not be
 * as far apart in memory as in the file), else by arithmetic. */
static uint64_t load_address(const struct hwt_maps *maps, size_t i)
{
	for (size_t j = i + 1; j-- > 0 && same_file(&maps->v[j], &maps->v[i]);)
		if (maps->v[j].offset == 0)
			return maps->v[j].start;
	return maps->v[i].start - maps->v[i].offset;
}

int hwt_modset_add_maps(struct hwt_modset *s, pid_t pid, struct hwt_err *err)
{
	struct hwt_maps maps;
	int rc = 0;

	/* The process may be gone: then there is nothing new to learn. */
	if (hwt_maps_read(pid, &maps, NULL) < 0)
		return 0;
	for (size_t i = 0; i < maps.n && rc == 0; i++) {
		const struct hwt_map *m = &maps.v[i];

		if (m->executable && m->path && m->path[0] == '/')
			rc = add(s, m->path, strlen(m->path),
				 load_address(&maps, i), err);
	}
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
