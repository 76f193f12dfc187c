/* maps.c - /proc/PID/maps, and the sideband built from it: every
 * executable file mapping the program had, with its load address and
 * build-id, so a decoder can find the code that ran. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer.h"

/* vm.max_map_count defaults to 65530; a line is at most PATH_MAX plus
 * about 80 bytes of fields. Refuse anything far beyond that. */
#define MAPS_MAX_BYTES (64u << 20)
#define MAPS_MAX_ENTRIES (1u << 20)
#define DELETED_SUFFIX " (deleted)"

static bool parse_hex(char **p, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(*p, &end, 16);
	if (errno || end == *p)
		return false;
	*p = end;
	return true;
}

/* "start-end perms offset major:minor inode   path" */
static bool parse_line(char *line, struct hwt_map *m)
{
	char *p = line;
	uint64_t dev_major, dev_minor, inode;

	memset(m, 0, sizeof(*m));
	if (!parse_hex(&p, &m->start) || *p++ != '-' ||
	    !parse_hex(&p, &m->end) || *p++ != ' ' || strlen(p) < 5)
		return false;
	m->readable = p[0] == 'r';
	m->writable = p[1] == 'w';
	m->executable = p[2] == 'x';
	p += 4;
	if (*p++ != ' ' || !parse_hex(&p, &m->offset) || *p++ != ' ' ||
	    !parse_hex(&p, &dev_major) || *p++ != ':' ||
	    !parse_hex(&p, &dev_minor) || *p++ != ' ')
		return false;
	errno = 0;
	inode = strtoull(p, &p, 10);
	if (errno)
		return false;
	m->inode = inode;
	while (*p == ' ')
		p++;
	m->path = *p ? p : NULL;
	return m->end > m->start;
}

int hwt_maps_read(pid_t tid, struct hwt_maps *maps, struct hwt_err *err)
{
	char path[64], *line, *next;
	size_t len, alloc = 0;
	int rc;

	memset(maps, 0, sizeof(*maps));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)tid);
	if ((rc = hwt_proc_read(path, MAPS_MAX_BYTES, &maps->text, &len, err)) < 0)
		return rc;
	for (line = maps->text; *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (!*line)
			continue;
		if (maps->n == alloc) {
			struct hwt_map *v;

			alloc = alloc ? alloc * 2 : 256;
			if (alloc > MAPS_MAX_ENTRIES) {
				hwt_maps_free(maps);
				return hwt_err_set(err, EFBIG,
						   "%s has more than %u mappings",
						   path, MAPS_MAX_ENTRIES);
			}
			v = realloc(maps->v, alloc * sizeof(*v));
			if (!v) {
				hwt_maps_free(maps);
				return hwt_err_set(err, ENOMEM,
						   "out of memory reading %s",
						   path);
			}
			maps->v = v;
		}
		if (!parse_line(line, &maps->v[maps->n])) {
			hwt_maps_free(maps);
			return hwt_err_set(err, EBADMSG,
					   "cannot parse a line of %s", path);
		}
		maps->n++;
	}
	return 0;
}

void hwt_maps_free(struct hwt_maps *maps)
{
	free(maps->v);
	free(maps->text);
	memset(maps, 0, sizeof(*maps));
}

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

static bool module_known(const struct pt_collector *c, const char *path,
			 size_t path_len, uint64_t load)
{
	for (size_t i = 0; i < c->nmodules; i++)
		if (c->modules[i].load_address == load &&
		    strncmp(c->modules[i].path, path, path_len) == 0 &&
		    c->modules[i].path[path_len] == '\0')
			return true;
	return false;
}

static int add_module(struct pt_collector *c, const char *path,
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

int hwt_pt_modules_refresh(struct pt_collector *c, pid_t tid,
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

size_t hwt_pt_modules_get(struct hwt_collector *base,
			  const struct hwt_collect_module **modules)
{
	struct pt_collector *c = pt_of(base);

	*modules = c->modules;
	return c->nmodules;
}

void hwt_pt_modules_free(struct pt_collector *c)
{
	for (size_t i = 0; i < c->nmodules; i++) {
		free((char *)c->modules[i].path);
		free((char *)c->modules[i].build_id);
	}
	free(c->modules);
	c->modules = NULL;
	c->nmodules = c->modules_alloc = 0;
}
