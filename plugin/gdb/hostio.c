// SPDX-License-Identifier: BSD-2-Clause
/* hostio.c - GDB's host I/O packets (vFile:*), read-only, for a live
 * process: the files GDB reads through the target (the program and its
 * libraries with the default `sysroot target:`, /proc/PID/smaps for
 * `gcore`, /proc/PID/maps for `info proc mappings`) are this machine's,
 * where the process runs, as gdbserver serves them. Without them GDB
 * falls back to the local filesystem, and `gcore` to calling sbrk in the
 * program, which cannot be done while GDB replays its trace.
 *
 * Only opening for reading is offered: pwrite and unlink are refused
 * (EACCES), other requests are unsupported (an empty reply), and so is any
 * other filesystem than the server's own
 * (vFile:setfs with another process's pid). Post-mortem there is no
 * machine of the process: the files of a bundle are its copies, read by
 * GDB from the local filesystem, and vFile is not offered. Replies carry
 * GDB's File-I/O errno numbers, which are not the host's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server.h"
#include "util.h"

#define HOSTIO_MAX_PATH 4096
/* GDB reads 16 kB at a time; the reply must fit a packet escaped. */
#define HOSTIO_MAX_READ (RSP_MAX_PAYLOAD / 2 - 32)

/* File-I/O errno values (GDB manual, "Errno Values"). */
static int fileio_errno(int e)
{
	switch (e) {
	case EPERM: return 1;
	case ENOENT: return 2;
	case EINTR: return 4;
	case EBADF: return 9;
	case EACCES: return 13;
	case EFAULT: return 14;
	case EBUSY: return 16;
	case EEXIST: return 17;
	case ENODEV: return 19;
	case ENOTDIR: return 20;
	case EISDIR: return 21;
	case EINVAL: return 22;
	case ENFILE: return 23;
	case EMFILE: return 24;
	case EFBIG: return 27;
	case ENOSPC: return 28;
	case ESPIPE: return 29;
	case EROFS: return 30;
	case ENAMETOOLONG: return 91;
	default: return 9999;
	}
}

static int reply_errno(struct server *s, int e)
{
	char reply[32];

	snprintf(reply, sizeof(reply), "F-1,%x", fileio_errno(e));
	return rsp_send_str(&s->conn, reply);
}

/* A hex-encoded path, NUL-free, into out. */
static bool parse_path(const char *hex, char end, char *out, const char **rest)
{
	size_t n = 0;

	while (*hex && *hex != end) {
		int hi = hwt_hex_digit(hex[0]), lo;

		if (hi < 0 || (lo = hwt_hex_digit(hex[1])) < 0 ||
		    n == HOSTIO_MAX_PATH || (hi == 0 && lo == 0))
			return false;
		out[n++] = (char)(hi << 4 | lo);
		hex += 2;
	}
	out[n] = '\0';
	*rest = hex;
	return n > 0;
}

/* The server's descriptor for GDB's number, or -1. */
static int fd_of(struct server *s, uint64_t gfd)
{
	return gfd < SRV_HOSTIO_FILES && s->hostio_fd[gfd] ?
		s->hostio_fd[gfd] - 1 : -1;
}

static int do_open(struct server *s, const char *arg)
{
	char path[HOSTIO_MAX_PATH + 1], reply[32];
	uint64_t flags, mode;
	const char *p;
	int fd;

	if (!parse_path(arg, ',', path, &p) || *p++ != ',' ||
	    !srv_parse_hex(p, ',', &flags, &p) ||
	    !srv_parse_hex(p, '\0', &mode, &p))
		return reply_errno(s, EINVAL);
	if (flags != 0)   /* FILEIO_O_RDONLY */
		return reply_errno(s, EACCES);
	for (size_t i = 0; i < SRV_HOSTIO_FILES; i++) {
		if (s->hostio_fd[i])
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			return reply_errno(s, errno);
		s->hostio_fd[i] = fd + 1;
		snprintf(reply, sizeof(reply), "F%zx", i);
		return rsp_send_str(&s->conn, reply);
	}
	return reply_errno(s, EMFILE);
}

/* A reply of n bytes read into buf + HOSTIO_HEAD: "Fn;" and the bytes. */
#define HOSTIO_HEAD 32

static int send_counted(struct server *s, uint8_t *buf, size_t n)
{
	int head = snprintf((char *)buf, HOSTIO_HEAD, "F%zx;", n);

	memmove(buf + head, buf + HOSTIO_HEAD, n);
	return rsp_send(&s->conn, buf, (size_t)head + n, true);
}

static int do_pread(struct server *s, const char *arg)
{
	static uint8_t reply[HOSTIO_HEAD + HOSTIO_MAX_READ];
	uint64_t gfd, count, off;
	const char *p;
	ssize_t got;
	int fd;

	if (!srv_parse_hex(arg, ',', &gfd, &p) ||
	    !srv_parse_hex(p, ',', &count, &p) ||
	    !srv_parse_hex(p, '\0', &off, &p) || off > INT64_MAX)
		return reply_errno(s, EINVAL);
	if ((fd = fd_of(s, gfd)) < 0)
		return reply_errno(s, EBADF);
	if (count > HOSTIO_MAX_READ)
		count = HOSTIO_MAX_READ;
	/* The count is known once read: the data goes after room for it. */
	got = pread(fd, reply + HOSTIO_HEAD, count, (off_t)off);
	if (got < 0)
		return reply_errno(s, errno);
	return send_counted(s, reply, (size_t)got);
}

static int do_close(struct server *s, const char *arg)
{
	uint64_t gfd;
	const char *p;
	int fd;

	if (!srv_parse_hex(arg, '\0', &gfd, &p))
		return reply_errno(s, EINVAL);
	if ((fd = fd_of(s, gfd)) < 0)
		return reply_errno(s, EBADF);
	close(fd);
	s->hostio_fd[gfd] = 0;
	return rsp_send_str(&s->conn, "F0");
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* struct stat in File-I/O's layout: big-endian, 64 bytes. */
static int do_fstat(struct server *s, const char *arg)
{
	uint8_t reply[8 + 64];
	struct stat st;
	uint64_t gfd;
	const char *p;
	uint8_t *b = reply + 4;
	int fd;

	if (!srv_parse_hex(arg, '\0', &gfd, &p))
		return reply_errno(s, EINVAL);
	if ((fd = fd_of(s, gfd)) < 0)
		return reply_errno(s, EBADF);
	if (fstat(fd, &st) < 0)
		return reply_errno(s, errno);
	memcpy(reply, "F40;", 4);
	put_be(b, st.st_dev, 4);
	put_be(b + 4, st.st_ino, 4);
	put_be(b + 8, st.st_mode, 4);
	put_be(b + 12, st.st_nlink, 4);
	put_be(b + 16, st.st_uid, 4);
	put_be(b + 20, st.st_gid, 4);
	put_be(b + 24, st.st_rdev, 4);
	put_be(b + 28, (uint64_t)st.st_size, 8);
	put_be(b + 36, (uint64_t)st.st_blksize, 8);
	put_be(b + 44, (uint64_t)st.st_blocks, 8);
	put_be(b + 52, (uint64_t)st.st_atime, 4);
	put_be(b + 56, (uint64_t)st.st_mtime, 4);
	put_be(b + 60, (uint64_t)st.st_ctime, 4);
	return rsp_send(&s->conn, reply, 4 + 64, true);
}

static int do_readlink(struct server *s, const char *arg)
{
	char path[HOSTIO_MAX_PATH + 1];
	uint8_t reply[HOSTIO_HEAD + HOSTIO_MAX_PATH];
	const char *p;
	ssize_t n;

	if (!parse_path(arg, '\0', path, &p))
		return reply_errno(s, EINVAL);
	n = readlink(path, (char *)reply + HOSTIO_HEAD, HOSTIO_MAX_PATH);
	if (n < 0)
		return reply_errno(s, errno);
	return send_counted(s, reply, (size_t)n);
}

/* The filesystem of pid 0 (the server's) or of the process served, which
 * is the same one. */
static int do_setfs(struct server *s, const char *arg)
{
	uint64_t pid;
	const char *p;

	if (!srv_parse_hex(arg, '\0', &pid, &p))
		return reply_errno(s, EINVAL);
	return pid == 0 || pid == (uint64_t)s->pid ?
		rsp_send_str(&s->conn, "F0") : reply_errno(s, EACCES);
}

bool hostio_handle(struct server *s, const char *pkt, int *rc)
{
	static const struct {
		const char *name;
		int (*fn)(struct server *s, const char *arg);
	} ops[] = {
		{ "vFile:open:", do_open },
		{ "vFile:pread:", do_pread },
		{ "vFile:close:", do_close },
		{ "vFile:fstat:", do_fstat },
		{ "vFile:readlink:", do_readlink },
		{ "vFile:setfs:", do_setfs },
	};

	if (strncmp(pkt, "vFile:", 6) != 0)
		return false;
	if (!s->ops->host_files) {
		*rc = rsp_send_str(&s->conn, "");
		return true;
	}
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i].name);

		if (strncmp(pkt, ops[i].name, n) == 0) {
			*rc = ops[i].fn(s, pkt + n);
			return true;
		}
	}
	/* This server does not change the machine's files; other requests
	 * (LLDB's size, exists, MD5) are unsupported. */
	if (strncmp(pkt, "vFile:pwrite:", 13) == 0 ||
	    strncmp(pkt, "vFile:unlink:", 13) == 0)
		*rc = reply_errno(s, EACCES);
	else
		*rc = rsp_send_str(&s->conn, "");
	return true;
}

void hostio_close_all(struct server *s)
{
	for (size_t i = 0; i < SRV_HOSTIO_FILES; i++) {
		if (s->hostio_fd[i])
			close(s->hostio_fd[i] - 1);
		s->hostio_fd[i] = 0;
	}
}
