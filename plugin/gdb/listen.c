// SPDX-License-Identifier: BSD-2-Clause
/* listen.c - where GDB connects: a TCP port on loopback (anything else
 * only with --allow-remote, since the protocol has no authentication and
 * reads any memory of the target) or a Unix socket. One client at a time:
 * the server keeps listening while it serves so that a second client gets
 * a clear refusal instead of hanging in the backlog. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "server.h"

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return false;
}

static int open_unix(struct listener *l, const char *path, struct hwt_err *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;

	if (strlen(path) == 0 || strlen(path) >= sizeof(sun.sun_path))
		return hwt_err_set(err, ENAMETOOLONG, "unix socket path '%s' is "
				   "empty or longer than %zu bytes", path,
				   sizeof(sun.sun_path) - 1);
	/* Never unlink something that is not a stale socket. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return hwt_err_set(err, EEXIST, "%s exists and is not a "
					   "socket; choose another path", path);
		unlink(path);
	}
	strcpy(sun.sun_path, path);
	l->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0)
		return hwt_err_set(err, errno, "socket: %s", strerror(errno));
	if (bind(l->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    listen(l->fd, 4) < 0)
		return hwt_err_set(err, errno, "cannot listen on unix:%s: %s",
				   path, strerror(errno));
	l->is_unix = true;
	l->unix_path = strdup(path);
	snprintf(l->desc, sizeof(l->desc), "unix:%s", path);
	return 0;
}

static int open_tcp(struct listener *l, const char *spec, bool allow_remote,
		    struct hwt_err *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	const char *colon = strrchr(spec, ':');
	char host[128], hbuf[NI_MAXHOST], pbuf[NI_MAXSERV];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *ai;
	size_t hlen;
	int one = 1, rc;

	if (!colon || colon[1] == '\0')
		return hwt_err_set(err, EINVAL, "--listen %s: expected HOST:PORT "
				   "or unix:PATH", spec);
	hlen = (size_t)(colon - spec);
	if (hlen >= sizeof(host))
		return hwt_err_set(err, EINVAL, "--listen %s: host too long", spec);
	memcpy(host, spec, hlen);
	host[hlen] = '\0';
	/* [::1]:PORT */
	if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
		memmove(host, host + 1, hlen - 2);
		host[hlen - 2] = '\0';
	}
	rc = getaddrinfo(host[0] ? host : "127.0.0.1", colon + 1, &hints, &ai);
	if (rc)
		return hwt_err_set(err, EINVAL, "--listen %s: %s", spec,
				   gai_strerror(rc));
	l->remote = !is_loopback(ai->ai_addr);
	if (l->remote && !allow_remote) {
		freeaddrinfo(ai);
		return hwt_err_set(err, EPERM, "--listen %s is not a loopback "
				   "address; anyone who can reach it can read the "
				   "target's memory. Add --allow-remote to do "
				   "this anyway", spec);
	}
	l->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		freeaddrinfo(ai);
		return hwt_err_set(err, errno, "socket: %s", strerror(errno));
	}
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l->fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(l->fd, 4) < 0) {
		rc = errno;
		freeaddrinfo(ai);
		return hwt_err_set(err, rc, "cannot listen on %s: %s", spec,
				   strerror(rc));
	}
	freeaddrinfo(ai);
	/* Port 0 picks a free port: say which one. */
	if (getsockname(l->fd, (struct sockaddr *)&ss, &sl) == 0 &&
	    getnameinfo((struct sockaddr *)&ss, sl, hbuf, sizeof(hbuf), pbuf,
			sizeof(pbuf), NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		snprintf(l->desc, sizeof(l->desc), ss.ss_family == AF_INET6 ?
			 "[%s]:%s" : "%s:%s", hbuf, pbuf);
	else
		snprintf(l->desc, sizeof(l->desc), "%s", spec);
	return 0;
}

int listener_open(struct listener *l, const char *spec, bool allow_remote,
		  struct hwt_err *err)
{
	int rc;

	memset(l, 0, sizeof(*l));
	l->fd = -1;
	if (strncmp(spec, "unix:", 5) == 0)
		rc = open_unix(l, spec + 5, err);
	else
		rc = open_tcp(l, spec, allow_remote, err);
	if (rc)
		listener_close(l);
	return rc;
}

void listener_close(struct listener *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	if (l->unix_path) {
		unlink(l->unix_path);
		free(l->unix_path);
		l->unix_path = NULL;
	}
}

int listener_accept(struct listener *l, struct hwt_err *err)
{
	int fd, one = 1;

	do
		fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return hwt_err_set(err, errno, "accept on %s: %s", l->desc,
				   strerror(errno));
	/* Every reply is one small write; Nagle would hold each back for
	 * the peer's delayed ACK. */
	if (!l->is_unix)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

bool listener_refuse_pending(struct listener *l)
{
	static const char msg[] = "E.hwt-server is already serving a debugger; "
				  "only one client at a time.";
	struct pollfd p = { .fd = l->fd, .events = POLLIN };
	char frame[sizeof(msg) + 8];
	unsigned sum = 0;
	int fd, n;

	if (poll(&p, 1, 0) <= 0)
		return false;
	fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return false;
	for (size_t i = 0; i < sizeof(msg) - 1; i++)
		sum += (unsigned char)msg[i];
	n = snprintf(frame, sizeof(frame), "$%s#%02x", msg, sum & 0xff);
	/* Best effort: the refused client may already be gone. */
	(void)!write(fd, frame, (size_t)n);
	close(fd);
	return true;
}
