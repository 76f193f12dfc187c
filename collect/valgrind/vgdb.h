/* SPDX-License-Identifier: BSD-2-Clause */
/* vgdb.h - a GDB remote protocol link to Valgrind's embedded gdbserver,
 * through the vgdb relay Valgrind ships (vgdb --pid=PID on a pipe).
 *
 * All-stop, one request at a time: a command, then its reply. Replies are
 * untrusted: each is bounded (VG_LINK_MAX_REPLY), checksummed, run-length
 * decoded, and a malformed one is an error. The text a monitor command
 * prints ('O' packets) is collected apart.
 */
#ifndef HWT_VG_VGDB_H
#define HWT_VG_VGDB_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "hwt-common.h"

#define VG_LINK_MAX_REPLY 16384u      /* Valgrind's PacketSize is 0x3fff */
#define VG_LINK_MAX_OUTPUT (256u << 10)

struct vg_link {
	pid_t vgdb;               /* the relay process, -1 when none */
	int fd;                   /* its stdin and stdout */
	bool no_ack;              /* QStartNoAckMode is on */
	unsigned char in[2 * VG_LINK_MAX_REPLY];
	size_t nin;
	char *output;             /* a monitor command's text, '\0'-ended */
	size_t noutput;
};

/* Start vgdb for Valgrind process pid whose FIFOs are at prefix; its
 * messages go to log. */
int vg_link_open(struct vg_link *l, const char *vgdb_path,
		 const char *prefix, pid_t pid, const char *log,
		 struct hwt_err *err);
/* Stop acknowledging packets (QStartNoAckMode): a reply that waits for
 * its acknowledgement is sent again, and a stop reply twice is one stop
 * too many. */
int vg_link_no_ack(struct vg_link *l, struct hwt_err *err);
/* Send one command and read its reply into reply (cap bytes, '\0'
 * ended): 0 or -errno. */
int vg_link_call(struct vg_link *l, const char *cmd, char *reply,
		 size_t cap, struct hwt_err *err);
/* Send a resume command; vg_link_wait then reads its stop reply. */
int vg_link_send(struct vg_link *l, const char *cmd, struct hwt_err *err);
/* Wait for the reply: while waiting, a readable interrupt_fd (>= 0)
 * sends Valgrind an interrupt (once) and sets *interrupted. */
int vg_link_wait(struct vg_link *l, char *reply, size_t cap,
		 int interrupt_fd, bool *interrupted, struct hwt_err *err);
/* A monitor command (qRcmd): its printed text is l->output. */
int vg_link_monitor(struct vg_link *l, const char *command,
		    struct hwt_err *err);
void vg_link_close(struct vg_link *l);

#endif
