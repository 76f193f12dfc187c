// SPDX-License-Identifier: BSD-2-Clause
/* feed.c - the tool's stream read as the tool writes it: a file read a
 * few pieces at a time into a reader (stream.c), the disk blocks of what
 * was read given back where the file system can. The program's stream
 * and every followed child's (children.c) are read so. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vg.h"

/* Give back the disk blocks of what has been read, every FREE_STEP
 * bytes: the stream of a long run then takes only what waits to be read,
 * and the tool's bound (--hwt-max-bytes, on the file's blocks) is a bound
 * on that, not on the program's length. Where the file system cannot
 * punch holes the stream keeps its blocks and the bound is on all of it. */
#define FREE_STEP (256u << 10)

/* Whether the file system of dir gives back the blocks free_read_part
 * punches out: only then may the tool wait for the reader to catch up. */
bool vg_can_free_read_part(const char *dir)
{
	char path[PATH_MAX];
	static const char block[8192];
	struct stat st;
	bool ok = false;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/punch-probe", dir) >=
	    sizeof(path))
		return false;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	ok = write(fd, block, sizeof(block)) == (ssize_t)sizeof(block) &&
	     fsync(fd) == 0 &&
	     fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
		       sizeof(block)) == 0 &&
	     fstat(fd, &st) == 0 && st.st_blocks * 512 < (off_t)sizeof(block);
	close(fd);
	unlink(path);
	return ok;
}

static void free_read_part(int fd, uint64_t before, uint64_t after)
{
	uint64_t from = before / FREE_STEP * FREE_STEP;
	uint64_t to = after / FREE_STEP * FREE_STEP;

	/* Only the steps read since: punching from 0 each time had the
	 * file system walk the whole stream so far, again and again. */
	if (from != to)
		(void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				(off_t)from, (off_t)(to - from));
}

/* Pieces one feed reads at most: a stream the tool writes as fast as it
 * is read would keep one feed going, and between feeds the threads'
 * windows are shared anew (share_window). */
#define FEED_PIECES 16

/* Feed what the tool has written since the last look, up to FEED_PIECES
 * pieces; *got set if any. */
int vg_feed_fd(struct vg_collector *c, int fd, struct hwt_vg_reader *rd,
	       bool *got, struct hwt_err *err)
{
	off_t start = lseek(fd, 0, SEEK_CUR);
	uint64_t done = 0;
	ssize_t n = 0;

	if (!c->piece && !(c->piece = malloc(VG_READ_PIECE)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (int k = 0; k < FEED_PIECES &&
	     (n = read(fd, c->piece, VG_READ_PIECE)) > 0; k++) {
		int rc = hwt_vg_reader_feed(rd, c->piece, (size_t)n, err);

		if (rc < 0)
			return rc;
		*got = true;
		done += (uint64_t)n;
	}
	if (start >= 0 && done)
		free_read_part(fd, (uint64_t)start, (uint64_t)start + done);
	if (n < 0 && errno != EINTR)
		return hwt_err_set(err, errno, "reading the trace stream: %s",
				   strerror(errno));
	/* A stream waiting for its parent's goes on with what it holds. */
	return rd->npending ? hwt_vg_reader_feed(rd, NULL, 0, err) : 0;
}
