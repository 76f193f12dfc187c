// SPDX-License-Identifier: BSD-2-Clause
/* procfs.c - bounded reads of /proc files, signal dispositions, and a
 * traced process's memory. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

/* Longest /proc/PID/status we accept: it is about 1.5 KiB. */
#define STATUS_MAX (64u << 10)

int hwt_proc_read(const char *path, size_t max, char **text, size_t *len,
		  struct hwt_err *err)
{
	size_t alloc = 4096, used = 0;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hwt_err_set(err, errno, "cannot open %s: %s", path,
				   strerror(errno));
	buf = malloc(alloc);
	for (;;) {
		ssize_t n;

		if (!buf) {
			close(fd);
			return hwt_err_set(err, ENOMEM,
					   "out of memory reading %s", path);
		}
		if (used + 1 == alloc) {
			char *bigger;

			if (alloc > max) {
				free(buf);
				close(fd);
				return hwt_err_set(err, EFBIG,
						   "%s is longer than %zu bytes",
						   path, max);
			}
			bigger = realloc(buf, alloc * 2);
			if (!bigger)
				free(buf);
			buf = bigger;
			alloc *= 2;
			continue;
		}
		n = read(fd, buf + used, alloc - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			free(buf);
			close(fd);
			return hwt_err_set(err, e, "cannot read %s: %s", path,
					   strerror(e));
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	close(fd);
	if (used > max) {
		free(buf);
		return hwt_err_set(err, EFBIG, "%s is longer than %zu bytes",
				   path, max);
	}
	buf[used] = '\0';
	*text = buf;
	*len = used;
	return 0;
}

/* The mask after "name:\t" in /proc/PID/status, as 64 bits of signals. */
static int status_mask(const char *status, const char *name, uint64_t *mask)
{
	size_t nlen = strlen(name);
	const char *p = status;

	while (p && *p) {
		if (strncmp(p, name, nlen) == 0 && p[nlen] == ':') {
			char *end;

			errno = 0;
			*mask = strtoull(p + nlen + 1, &end, 16);
			return errno || end == p + nlen + 1 ? -EBADMSG : 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -ENOENT;
}

static enum hwt_sig_action default_action(int sig)
{
	switch (sig) {
	case SIGCHLD:
	case SIGCONT:
	case SIGURG:
	case SIGWINCH:
		return HWT_SIG_IGNORED;
	case SIGSTOP:
	case SIGTSTP:
	case SIGTTIN:
	case SIGTTOU:
		return HWT_SIG_STOPS;
	default:
		/* Everything else, real-time signals included, terminates. */
		return HWT_SIG_KILLS;
	}
}

int hwt_proc_sig_action(pid_t tid, int sig, enum hwt_sig_action *action,
			struct hwt_err *err)
{
	char path[64], *status;
	uint64_t ignored, caught, bit;
	size_t len;
	int rc;

	if (sig < 1 || sig > 64)
		return hwt_err_set(err, EINVAL, "signal %d out of range", sig);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if ((rc = hwt_proc_read(path, STATUS_MAX, &status, &len, err)) < 0)
		return rc;
	if (status_mask(status, "SigIgn", &ignored) < 0 ||
	    status_mask(status, "SigCgt", &caught) < 0) {
		free(status);
		return hwt_err_set(err, EBADMSG,
				   "%s has no readable SigIgn/SigCgt lines", path);
	}
	free(status);
	bit = (uint64_t)1 << (sig - 1);
	if (caught & bit)
		*action = HWT_SIG_CAUGHT;
	else if (ignored & bit)
		*action = HWT_SIG_IGNORED;
	else
		*action = default_action(sig);
	return 0;
}

int hwt_proc_sig_pending(pid_t tid, int sig, bool *pending,
			 struct hwt_err *err)
{
	char path[64], *status;
	uint64_t mask;
	size_t len;
	int rc;

	if (sig < 1 || sig > 64)
		return hwt_err_set(err, EINVAL, "signal %d out of range", sig);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	if ((rc = hwt_proc_read(path, STATUS_MAX, &status, &len, err)) < 0)
		return rc;
	rc = status_mask(status, "SigPnd", &mask);
	free(status);
	if (rc < 0)
		return hwt_err_set(err, EBADMSG, "%s has no readable SigPnd "
				   "line", path);
	*pending = mask & ((uint64_t)1 << (sig - 1));
	return 0;
}

int hwt_proc_yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int scope = 0;

	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	return scope;
}

ssize_t hwt_proc_mem_xfer(pid_t pid, uint64_t addr, void *buf, size_t len,
			  bool write)
{
	char path[64];
	size_t done = 0;
	int fd, e = 0;

	if (addr > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - addr)
		return -EFAULT;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t n = write ? pwrite(fd, (const char *)buf + done,
					   len - done, (off_t)(addr + done))
				  : pread(fd, (char *)buf + done, len - done,
					  (off_t)(addr + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n < 0 ? errno : 0;
			break;
		}
		done += (size_t)n;
	}
	close(fd);
	return done || !e ? (ssize_t)done : -e;
}
