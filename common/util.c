// SPDX-License-Identifier: BSD-2-Clause
/* util.c - bounded file reading and number parsing for untrusted input,
 * and removing a directory tree (stale temporary ones too). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "hwt-common.h"
#include "util.h"

int hwt_read_file(const char *path, size_t max, uint8_t **data, size_t *size,
		  struct hwt_err *err)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hwt_err_set(err, errno, "cannot open %s: %s", path,
				   strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = hwt_err_set(err, S_ISDIR(st.st_mode) ? EISDIR : EINVAL,
				 "%s is not a regular file", path);
		goto out;
	}
	if ((uint64_t)st.st_size > max) {
		rc = hwt_err_set(err, EFBIG,
				 "%s is %lld bytes, more than the %zu allowed",
				 path, (long long)st.st_size, max);
		goto out;
	}
	/* +1 keeps a NUL after text files and makes empty files non-NULL. */
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = hwt_err_set(err, ENOMEM, "out of memory reading %s", path);
		goto out;
	}
	hwt_advise_huge(buf, (size_t)st.st_size);
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = hwt_err_set(err, n < 0 ? errno : EIO,
					 "short read of %s", path);
			free(buf);
			goto out;
		}
		got += (size_t)n;
	}
	buf[got] = '\0';
	*data = buf;
	*size = got;
	rc = 0;
out:
	close(fd);
	return rc;
}

int hwt_parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	/* strtoull would skip leading spaces and then take a sign, wrapping
	 * " -1" to UINT64_MAX: a number starts with its first digit. */
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	*v = x;
	return 0;
}

int hwt_parse_size(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;
	unsigned shift = 0;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: return -EINVAL;
	}
	if (*end == 'i')
		end++;
	if ((*end == 'B' || *end == 'b') && shift)
		end++;
	if (*end)
		return -EINVAL;
	if (shift && x > (ULLONG_MAX >> shift))
		return -ERANGE;
	*v = x << shift;
	return 0;
}

int hwt_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int remove_entry(const char *path, const struct stat *st, int type,
			struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

void hwt_remove_tree(const char *dir)
{
	/* FTW_PHYS: a symlink planted inside is removed, not followed. */
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

char *hwt_temp_template(const char *dir, const char *prefix)
{
	char *t;

	return asprintf(&t, "%s/%s%d-XXXXXX", dir, prefix, (int)getpid()) < 0 ?
	       NULL : t;
}

size_t hwt_remove_stale(const char *dir, const char *prefix)
{
	size_t plen = strlen(prefix), n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char *end, path[PATH_MAX];
		struct stat st;
		long pid;

		if (strncmp(e->d_name, prefix, plen) != 0)
			continue;
		errno = 0;
		pid = strtol(e->d_name + plen, &end, 10);
		/* PREFIX, a pid, '-' and mkdtemp's six characters. */
		if (errno || pid <= 0 || pid > INT_MAX || end[0] != '-' ||
		    strlen(end + 1) != 6)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >=
		    (int)sizeof(path) || lstat(path, &st) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		hwt_remove_tree(path);
		n++;
	}
	closedir(d);
	return n;
}

int hwt_map_file(const char *path, uint64_t expect, uint8_t **map,
		 size_t *size, struct hwt_err *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	*map = NULL;
	*size = 0;
	if (fd < 0)
		return hwt_err_set(err, errno, "cannot open %s: %s", path,
				   strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		rc = hwt_err_set(err, EINVAL, "%s is not a regular file", path);
	else if ((uint64_t)st.st_size != expect)
		rc = hwt_err_set(err, EINVAL, "%s changed size: %lld bytes, "
				 "trace.json says %llu", path,
				 (long long)st.st_size,
				 (unsigned long long)expect);
	else if (st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ,
			       MAP_PRIVATE, fd, 0);

		if (p == MAP_FAILED)
			rc = hwt_err_set(err, errno, "%s: %s", path,
					 strerror(errno));
		else {
			*map = p;
			*size = (size_t)st.st_size;
		}
	}
	close(fd);
	return rc;
}

void hwt_unmap_file(uint8_t *map, size_t size)
{
	if (map)
		munmap(map, size);
}
