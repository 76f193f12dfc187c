/* output.c - a whole output file written at once: into a temporary file
 * beside it, renamed over the name once complete, so an error or a ^C
 * leaves the old file or none, never a partial one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int cli_write_file(const char *path, const void *data, size_t len,
		   struct hwt_err *err)
{
	const char *p = data;
	char *tmp;
	int fd, e = 0;

	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		return hwt_err_set(err, ENOMEM, "out of memory");
	fd = mkstemp(tmp);
	if (fd < 0) {
		e = errno;
		free(tmp);
		return hwt_err_set(err, e, "cannot create %s: %s", path,
				   strerror(e));
	}
	while (len && !e) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno != EINTR)
			e = errno;
		else if (n > 0) {
			p += n;
			len -= (size_t)n;
		}
	}
	if (fchmod(fd, 0644) < 0 && !e)
		e = errno;
	if (close(fd) < 0 && !e)
		e = errno;
	if (!e && rename(tmp, path) < 0)
		e = errno;
	if (e)
		unlink(tmp);
	free(tmp);
	return e ? hwt_err_set(err, e, "cannot write %s: %s", path,
			       strerror(e)) : 0;
}
