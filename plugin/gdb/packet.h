/* SPDX-License-Identifier: BSD-2-Clause */
/* packet.h - what every packet handler of hwt-server shares (packet.c):
 * strict hex arguments, thread ids and qXfer's partial replies. */
#ifndef HWT_PACKET_H
#define HWT_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* Strict hex number up to the terminator end; rest (if not NULL) points
 * after it. */
bool srv_parse_hex(const char *s, char end, uint64_t *v, const char **rest);
/* A thread id as the remote protocol writes it: "pPID.TID" once the
 * multiprocess extension is on, else "TID" (hex). */
const char *srv_tid_str(const struct server *s, int64_t tid, char *buf,
			size_t cap);
/* A thread id read: *tid is the thread, -1 for all, 0 for any; false
 * when malformed or naming another process. */
bool srv_parse_tid(const struct server *s, const char *id, int64_t *tid);
/* Thread index for a thread id ("-1" all, "0" any: the stop thread). */
bool srv_thread_by_id(struct server *s, const char *id, size_t *idx);

/* Parse the "OFF,LEN" (hex) of a qXfer read; false if malformed. */
bool srv_parse_offlen(const char *s, uint64_t *off, uint64_t *len);
/* Reply to a qXfer read with the slice [off, off+len) of doc: 'm' when
 * more follows, 'l' at the end. */
int srv_xfer_reply(struct server *s, const void *doc, size_t doclen,
		   uint64_t off, uint64_t len);

#endif
