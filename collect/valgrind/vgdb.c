// SPDX-License-Identifier: BSD-2-Clause
/* vgdb.c - the link to Valgrind's gdbserver through vgdb (vgdb.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vgdb.h"
#include "util.h"

/* A reply to a command that does not resume comes at once; this is for a
 * Valgrind busy translating. */
#define CALL_TIMEOUT_MS 60000

int vg_link_open(struct vg_link *l, const char *vgdb_path,
		 const char *prefix, pid_t pid, const char *log,
		 struct hwt_err *err)
{
	char prefix_opt[4200], pid_opt[32];
	int sv[2];

	l->vgdb = -1;
	l->fd = -1;
	l->nin = 0;
	l->no_ack = false;
	l->output = NULL;
	l->noutput = 0;
	if ((size_t)snprintf(prefix_opt, sizeof(prefix_opt), "--vgdb-prefix=%s",
			     prefix) >= sizeof(prefix_opt))
		return hwt_err_set(err, ENAMETOOLONG, "vgdb prefix too long");
	snprintf(pid_opt, sizeof(pid_opt), "--pid=%d", (int)pid);
	/* A socket, not pipes: a relay that dies fails our writes
	 * (MSG_NOSIGNAL) instead of raising SIGPIPE in the caller. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return hwt_err_set(err, errno, "socketpair: %s",
				   strerror(errno));
	l->vgdb = fork();
	if (l->vgdb == 0) {
		int logfd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0600);

		dup2(sv[1], 0);
		dup2(sv[1], 1);
		if (logfd >= 0)
			dup2(logfd, 2);
		execl(vgdb_path, "vgdb", prefix_opt, pid_opt, "--wait=60",
		      (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	if (l->vgdb < 0) {
		int e = errno;

		close(sv[0]);
		return hwt_err_set(err, e, "cannot start vgdb: %s",
				   strerror(e));
	}
	l->fd = sv[0];
	return 0;
}

static int write_all(struct vg_link *l, const char *p, size_t n,
		     struct hwt_err *err)
{
	while (n) {
		ssize_t w = send(l->fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return hwt_err_set(err, EPIPE, "Valgrind's gdbserver "
					   "link (vgdb) is gone");
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int vg_link_send(struct vg_link *l, const char *cmd, struct hwt_err *err)
{
	size_t n = strlen(cmd);
	unsigned sum = 0;
	char *pkt;
	int rc;

	if (n > VG_LINK_MAX_REPLY - 4)
		return hwt_err_set(err, E2BIG, "a command of %zu bytes for "
				   "Valgrind's gdbserver", n);
	if (!(pkt = malloc(n + 5)))
		return hwt_err_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		sum += (unsigned char)cmd[i];
	pkt[0] = '$';
	memcpy(pkt + 1, cmd, n);
	snprintf(pkt + 1 + n, 4, "#%02x", sum & 0xff);
	rc = write_all(l, pkt, n + 4, err);
	free(pkt);
	return rc;
}

/* Expand the payload's run lengths ("X*N": N - 29 more X) and escapes
 * into out: its length, or -1 if it does not fit or is malformed. */
static long expand(const unsigned char *p, size_t n, char *out, size_t cap)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];

		if (c == '*') {
			int rep;

			if (k == 0 || i + 1 >= n || p[i + 1] < 29 + 3)
				return -1;
			rep = p[++i] - 29;
			if (k + (size_t)rep >= cap)
				return -1;
			memset(out + k, out[k - 1], (size_t)rep);
			k += (size_t)rep;
			continue;
		}
		if (c == '}') {
			if (i + 1 >= n)
				return -1;
			c = p[++i] ^ 0x20;
		}
		if (k + 1 >= cap)
			return -1;
		out[k++] = (char)c;
	}
	out[k] = '\0';
	return (long)k;
}

/* Console output of a monitor command: 'O' and hex pairs. */
static bool is_output(const char *r, size_t n)
{
	if (n < 3 || r[0] != 'O' || (n - 1) % 2)
		return false;
	for (size_t i = 1; i < n; i++)
		if (hwt_hex_digit(r[i]) < 0)
			return false;
	return true;
}

static void keep_output(struct vg_link *l, const char *r, size_t n)
{
	size_t add = (n - 1) / 2;
	char *grown;

	if (l->noutput + add > VG_LINK_MAX_OUTPUT ||
	    !(grown = realloc(l->output, l->noutput + add + 1)))
		return;
	l->output = grown;
	for (size_t i = 0; i < add; i++)
		l->output[l->noutput++] = (char)(hwt_hex_digit(r[1 + 2 * i]) << 4 |
						 hwt_hex_digit(r[2 + 2 * i]));
	l->output[l->noutput] = '\0';
}

/* One whole packet from l->in into reply: 1, or 0 when more bytes are
 * needed, or -errno. */
static int take_packet(struct vg_link *l, char *reply, size_t cap,
		       struct hwt_err *err)
{
	unsigned char *start, *hash;
	unsigned sum = 0;
	size_t used;
	long n;
	int hi, lo;

	/* Acknowledgements and noise before a packet go. */
	start = memchr(l->in, '$', l->nin);
	if (!start) {
		l->nin = 0;
		return 0;
	}
	hash = memchr(start, '#', l->nin - (size_t)(start - l->in));
	if (!hash || (size_t)(hash - l->in) + 3 > l->nin) {
		if (l->nin == sizeof(l->in))
			return hwt_err_set(err, EMSGSIZE, "a reply from "
					   "Valgrind's gdbserver longer than "
					   "%zu bytes", sizeof(l->in));
		return 0;
	}
	for (unsigned char *p = start + 1; p < hash; p++)
		sum += *p;
	hi = hwt_hex_digit(hash[1]);
	lo = hwt_hex_digit(hash[2]);
	if (hi < 0 || lo < 0 || (unsigned)(hi << 4 | lo) != (sum & 0xff))
		return hwt_err_set(err, EBADMSG, "a reply from Valgrind's "
				   "gdbserver with a bad checksum");
	n = expand(start + 1, (size_t)(hash - start - 1), reply, cap);
	used = (size_t)(hash - l->in) + 3;
	memmove(l->in, l->in + used, l->nin - used);
	l->nin -= used;
	if (n < 0)
		return hwt_err_set(err, EBADMSG, "a malformed or too long "
				   "reply from Valgrind's gdbserver");
	if (!l->no_ack && write_all(l, "+", 1, err) < 0)
		return -EPIPE;
	return 1;
}

static int wait_reply(struct vg_link *l, char *reply, size_t cap,
		      int timeout_ms, int interrupt_fd, bool *interrupted,
		      struct hwt_err *err)
{
	for (;;) {
		struct pollfd pf[2] = { { l->fd, POLLIN, 0 },
					{ interrupt_fd, POLLIN, 0 } };
		bool watch = interrupt_fd >= 0 && !*interrupted;
		ssize_t r;
		int rc = take_packet(l, reply, cap, err);

		if (rc < 0)
			return rc;
		if (rc > 0) {
			size_t n = strlen(reply);

			if (!is_output(reply, n))
				return 0;
			keep_output(l, reply, n);
			continue;
		}
		rc = poll(pf, watch ? 2 : 1, timeout_ms);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc == 0)
			return hwt_err_set(err, ETIMEDOUT, "Valgrind's gdbserver "
					   "did not answer in %d s",
					   timeout_ms / 1000);
		if (watch && (pf[1].revents & (POLLIN | POLLHUP))) {
			*interrupted = true;
			if (write_all(l, "\x03", 1, err) < 0)
				return -EPIPE;
		}
		if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = read(l->fd, l->in + l->nin, sizeof(l->in) - l->nin);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return hwt_err_set(err, EPIPE, "Valgrind's gdbserver "
					   "link (vgdb) closed");
		l->nin += (size_t)r;
	}
}

int vg_link_wait(struct vg_link *l, char *reply, size_t cap,
		 int interrupt_fd, bool *interrupted, struct hwt_err *err)
{
	return wait_reply(l, reply, cap, -1, interrupt_fd, interrupted, err);
}

int vg_link_call(struct vg_link *l, const char *cmd, char *reply,
		 size_t cap, struct hwt_err *err)
{
	bool unused = false;
	int rc = vg_link_send(l, cmd, err);

	return rc ? rc : wait_reply(l, reply, cap, CALL_TIMEOUT_MS, -1,
				    &unused, err);
}

int vg_link_no_ack(struct vg_link *l, struct hwt_err *err)
{
	char reply[64];
	int rc = vg_link_call(l, "QStartNoAckMode", reply, sizeof(reply), err);

	if (rc == 0 && strcmp(reply, "OK"))
		return hwt_err_set(err, EPROTO, "Valgrind's gdbserver answered "
				   "QStartNoAckMode with %.40s", reply);
	if (rc == 0)
		l->no_ack = true;
	return rc;
}

int vg_link_monitor(struct vg_link *l, const char *command,
		    struct hwt_err *err)
{
	char cmd[512], reply[VG_LINK_MAX_REPLY + 1];
	size_t n = strlen(command), k;
	int rc;

	if (n > (sizeof(cmd) - 8) / 2)
		return hwt_err_set(err, E2BIG, "monitor command too long");
	k = (size_t)snprintf(cmd, sizeof(cmd), "qRcmd,");
	for (size_t i = 0; i < n; i++)
		k += (size_t)snprintf(cmd + k, sizeof(cmd) - k, "%02x",
				      (unsigned char)command[i]);
	l->noutput = 0;
	if (l->output)
		l->output[0] = '\0';
	rc = vg_link_call(l, cmd, reply, sizeof(reply), err);
	if (rc == 0 && strcmp(reply, "OK"))
		rc = hwt_err_set(err, EPROTO, "Valgrind's gdbserver answered "
				 "monitor %s with %.40s", command, reply);
	return rc;
}

void vg_link_close(struct vg_link *l)
{
	int status;

	if (l->fd >= 0)
		close(l->fd);
	if (l->vgdb > 0) {
		kill(l->vgdb, SIGKILL);
		while (waitpid(l->vgdb, &status, 0) < 0 && errno == EINTR)
			;
	}
	free(l->output);
	l->output = NULL;
	l->noutput = 0;
	l->vgdb = -1;
	l->fd = -1;
}
