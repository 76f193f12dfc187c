// SPDX-License-Identifier: BSD-2-Clause
/* hwt-relay.c - joins a serial port to a TCP server inside the test
 * guest, so GDB on the host (connected to qemu's second serial port)
 * talks to hwt-server in the guest without a network device.
 *
 * usage: hwt-relay TTY PORT    (connects to 127.0.0.1:PORT)
 *
 * The tty is put in raw mode first: with the default line discipline it
 * would echo GDB's packets back and turn '\n' into "\r\n". Bytes are
 * copied both ways until the server closes its side, or until the host
 * sends END_MARK on the serial line: a serial port shows no hangup when
 * GDB goes away, so the host says so once GDB has exited. Closing the
 * socket then ends hwt-server (--once) as a GDB disconnect does. The mark cannot
 * be taken for GDB traffic: remote protocol packets start with '$' and
 * never carry a raw 0x04. */
#define _GNU_SOURCE   /* memmem */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#define END_MARK "\x04hwt-relay-end\x04"
#define END_LEN (sizeof(END_MARK) - 1)

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct termios tio;
	struct pollfd fds[2];
	/* The tail of what the tty sent before buf, so a mark split across
	 * two reads is still seen. */
	char seen[END_LEN - 1 + 4096];
	size_t kept = 0;
	char *buf = seen + END_LEN - 1;
	int tty, sock;

	if (argc != 3) {
		fprintf(stderr, "usage: hwt-relay TTY PORT\n");
		return 2;
	}
	tty = open(argv[1], O_RDWR | O_NOCTTY);
	if (tty < 0 || tcgetattr(tty, &tio) < 0) {
		perror(argv[1]);
		return 1;
	}
	cfmakeraw(&tio);
	if (tcsetattr(tty, TCSANOW, &tio) < 0) {
		perror("tcsetattr");
		return 1;
	}
	addr.sin_port = htons((unsigned short)atoi(argv[2]));
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sock = socket(AF_INET, SOCK_STREAM, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&addr,
				sizeof(addr)) < 0) {
		perror("connect");
		return 1;
	}
	/* The host may connect only once this line is out (see init). */
	printf("GDB READY\n");
	fflush(stdout);
	fds[0] = (struct pollfd){ .fd = tty, .events = POLLIN };
	fds[1] = (struct pollfd){ .fd = sock, .events = POLLIN };
	for (;;) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("poll");
			return 1;
		}
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(fds[i].fd, buf, 4096);
			if (n <= 0)
				return i == 1 ? 0 : 1;   /* server gone: done */
			if (i == 0) {
				size_t total = kept + (size_t)n;

				if (memmem(buf - kept, total, END_MARK, END_LEN))
					return 0;
				/* Keep the newest END_LEN - 1 bytes just
				 * before buf for the next read. */
				kept = total < END_LEN - 1 ? total : END_LEN - 1;
				memmove(buf - kept, buf + n - kept, kept);
			}
			if (write_all(fds[1 - i].fd, buf, (size_t)n) < 0)
				return 1;
		}
	}
}
