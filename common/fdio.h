/* SPDX-License-Identifier: BSD-2-Clause */
/* fdio.h - writing a whole buffer to a file descriptor, the one way the
 * libraries do it. Internal to the libraries (no public header includes
 * it). */
#ifndef HWT_FDIO_H
#define HWT_FDIO_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/* All len bytes of p to fd, through short writes and signals: 0, or a
 * negative errno (EIO when the file takes no more). */
static inline int hwt_write_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;

	while (len > 0) {
		ssize_t n = write(fd, b, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

#endif
