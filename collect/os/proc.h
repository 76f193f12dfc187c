/* SPDX-License-Identifier: BSD-2-Clause */
/* proc.h - what the backends read from /proc and the ELF core writer:
 * the ptrace, module and perf backends share them.
 *
 * procmaps.c  /proc/PID/maps
 * procfs.c    bounded reads of /proc files, signal dispositions
 * coredump.c  ELF core of a process held in ptrace-stops
 */
#ifndef HWT_PROC_H
#define HWT_PROC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hwt-common.h"

/* ---- procmaps.c ---- */
struct hwt_map {
	uint64_t start, end, offset, inode;
	bool readable, writable, executable;
	const char *path;         /* NULL when anonymous; "[stack]" etc. */
};

struct hwt_maps {
	struct hwt_map *v;
	size_t n;
	char *text;               /* the file; paths point into it */
};

int hwt_maps_read(pid_t tid, struct hwt_maps *maps, struct hwt_err *err);
void hwt_maps_free(struct hwt_maps *maps);

/* ---- procfs.c ---- */
/* Read a /proc file (their sizes are not known up front) refusing more
 * than max bytes; NUL-terminated. Caller frees *text. */
int hwt_proc_read(const char *path, size_t max, char **text, size_t *len,
		  struct hwt_err *err);

enum hwt_sig_action {
	HWT_SIG_CAUGHT,          /* a handler runs */
	HWT_SIG_IGNORED,         /* explicitly, or by default */
	HWT_SIG_STOPS,           /* default action stops the process */
	HWT_SIG_KILLS,           /* default action terminates (maybe core) */
};
/* What delivering sig to tid would do now. */
int hwt_proc_sig_action(pid_t tid, int sig, enum hwt_sig_action *action,
			struct hwt_err *err);
/* Whether sig is pending for thread tid itself (SigPnd). */
int hwt_proc_sig_pending(pid_t tid, int sig, bool *pending,
			 struct hwt_err *err);
/* Yama's kernel.yama.ptrace_scope: 0 (classic ptrace) to 3 (none at
 * all); 0 where Yama is not built in. */
int hwt_proc_yama_scope(void);
/* Read or write len bytes of a traced, stopped process's memory through
 * /proc/PID/mem, which reaches read-only (code) pages for the tracer.
 * Short counts at unmapped addresses; a negative errno only when nothing
 * at all could be transferred. */
ssize_t hwt_proc_mem_xfer(pid_t pid, uint64_t addr, void *buf, size_t len,
			  bool write);

/* ---- coredump.c ---- */
/* A process to dump as an ELF core, every thread listed in a ptrace-stop
 * of the caller (collect/seize/seize.c holds its faults that way too). */
struct hwt_core_desc {
	pid_t pid;
	pid_t fault_tid;          /* its notes come first */
	const pid_t *tids;        /* live threads; fault_tid may be among them */
	size_t ntids;
	const siginfo_t *siginfo; /* of the signal that dumps */
	int signal;
};
int hwt_core_write(const struct hwt_core_desc *d, const char *path,
		   struct hwt_err *err);
#endif
