// SPDX-License-Identifier: BSD-2-Clause
/* procmaps.c - /proc/PID/maps, parsed with bounds: every backend learns
 * the program's executable mappings from it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "proc.h"

/* vm.max_map_count defaults to 65530; a line is at most PATH_MAX plus
 * about 80 bytes of fields. Refuse anything far beyond that. */
#define MAPS_MAX_BYTES (64u << 20)
#define MAPS_MAX_ENTRIES (1u << 20)

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
		if (maps->n == MAPS_MAX_ENTRIES) {
			hwt_maps_free(maps);
			return hwt_err_set(err, EFBIG, "%s has more than %u "
					   "mappings", path, MAPS_MAX_ENTRIES);
		}
		if (HWT_ARRAY_RESERVE(maps->v, alloc, maps->n + 1, 256)) {
			hwt_maps_free(maps);
			return hwt_err_set(err, ENOMEM, "out of memory reading "
					   "%s", path);
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

