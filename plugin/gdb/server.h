/* SPDX-License-Identifier: BSD-2-Clause */
/* server.h - hwt-server's files to one another: each section the entry
 * points of one file (the session they share is session.h, the packet
 * helpers packet.h). */
#ifndef HWT_SERVER_H
#define HWT_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "packet.h"
#include "session.h"
#include "tdesc.h"

/* ---- target.c: what every handler asks of the target ------------------- */

/* The thread's history up to where it stands now (live: rebuilt after
 * every resume); NULL with err set when the thread has no trace. */
struct hwt_history *srv_history(struct server *s, struct srv_thread *t,
				struct hwt_err *err);
/* A debugger asked for history (record btrace, thread trace start):
 * the process is recorded from here on if it was not already. */
int srv_record_start(struct server *s, struct hwt_err *err);
/* Whether thread t sits inside its history (not at the crash), and the
 * pc there. */
bool srv_replaying(struct server *s, size_t t, uint64_t *pc);
/* Whether any thread stands inside its recorded past (reverse.c). */
bool srv_in_past(struct server *s);
/* Memory as it is at the session's point in time: today's, or in the
 * past what is known of that moment. Returns the bytes read from addr
 * on (0: none). */
size_t srv_read_memory(struct server *s, uint64_t addr, void *buf,
		       size_t len);
/* Forget what a resume changes: histories, cursors, served traces,
 * cached registers. */
void srv_invalidate(struct server *s);

/* ---- libs.c: the shared-library list GDB loads symbols from ------------ */

struct srv_module {
	const char *system_path;          /* where the process has it */
	const char *file;                 /* a readable copy, or NULL: the
					   * system path */
	uint64_t load_address;            /* its first PT_LOAD page */
};

/* Build s->libs_xml and s->exec_path; the executable is the module
 * holding at_phdr (AT_PHDR), else the first. */
int libs_build(struct server *s, const struct srv_module *mods, size_t n,
	       uint64_t at_phdr, struct hwt_err *err);
/* AT_PHDR from an auxiliary vector, 0 if absent. */
uint64_t libs_at_phdr(const uint8_t *auxv, size_t len);

/* ---- vcont.c, breakpoints.c, writes.c: packet families ----------------- */

/* Each returns false if pkt is not theirs; otherwise the reply was sent
 * (or *rc holds a send error). */
bool vcont_handle(struct server *s, const char *pkt, int *rc);
bool breakpoints_handle(struct server *s, const char *pkt, int *rc);
/* Whether the breakpoint at pc was inserted as a hardware one (Z1). */
bool breakpoints_hw_at(const struct server *s, uint64_t pc);
/* G, P, M and X (len: X's payload carries NUL bytes). */
bool writes_handle(struct server *s, const char *pkt, size_t len, int *rc);

/* ---- save.c: qHwtSave -------------------------------------------------- */

struct hwt_collector;
struct hwt_collect_thread;

bool save_handle(struct server *s, const char *pkt, int *rc);
/* monitor.c: qRcmd, gdbserver's monitor commands. */
bool monitor_handle(struct server *s, const char *pkt, int *rc);
/* A bundle of a live collector's threads (a snapshot) and modules. */
int save_collected(struct hwt_collector *c,
		   const struct hwt_collect_thread *threads, size_t nthreads,
		   const char *dir, struct hwt_err *err);

/* ---- target_live.c: a running process under the collector --------------- */

struct live_opts {
	const char *backend;              /* NULL: the collector's choice */
	bool record;                      /* from launch, not when asked */
	uint64_t values;                  /* valgrind: data_bytes */
	char *const *argv;                /* launch this, or */
	int attach_pid;                   /* attach to this (argv NULL) */
};

int live_open(struct server *s, const struct live_opts *o,
	      struct hwt_err *err);

/* ---- target_core.c: a crashed process from its bundle ------------------ */

/* Open the bundle and its core (core_path overrides the bundle's). A
 * problem that only makes some code unreadable lands in s->warning. */
int post_mortem_open(struct server *s, const char *bundle_dir,
		     const char *core_path, struct hwt_err *err);

/* ---- btrace.c: GDB's branch-trace packets ----------------------------- */

/* Handle Qbtrace:*, Qbtrace-conf:*, qXfer:btrace:read and
 * qXfer:btrace-conf:read for the general thread. Returns false if pkt is
 * none of those; otherwise the reply was sent (or *rc holds a send
 * error). */
bool btrace_handle(struct server *s, const char *pkt, int *rc);

/* ---- nonstop.c: GDB's non-stop mode ---------------------------------------- */

/* QNonStop, and in non-stop mode vStopped and '?'; false if pkt is none
 * of those (vCont goes to nonstop_vcont through vcont.c). */
bool nonstop_handle(struct server *s, const char *pkt, int *rc);
int nonstop_vcont(struct server *s, const struct srv_action *a, size_t n);
/* Whether GDB has threads running. */
bool nonstop_running(const struct server *s);
/* Resume the running threads until an event (its stop is queued or sent)
 * or a packet arrives (*packet set: serve it, then call again). */
int nonstop_run(struct server *s, bool *packet);
/* Leave non-stop mode and free its state (a session ended). */
void nonstop_reset(struct server *s);

/* ---- hostio.c: vFile (read-only host I/O) --------------------------------- */

/* Handle vFile:*; false if pkt is not one. */
bool hostio_handle(struct server *s, const char *pkt, int *rc);
/* Close what GDB left open (its session ended). */
void hostio_close_all(struct server *s);

/* ---- core_past.c: the bundle's data history, post-mortem ---------------- */

/* Read the bundle's data history, if it has one, into s->past. */
int core_past_open(struct server *s, struct hwt_err *err);
void core_past_close(struct server *s);
/* The target_ops past_reg, past_mem and past_write of a bundle. */
bool core_past_reg(struct server *s, size_t ti, uint64_t pc, int regno,
		   uint8_t *out);
size_t core_past_mem(struct server *s, size_t ti, uint64_t addr, void *buf,
		     size_t len);
bool core_past_place(struct server *s, size_t ti, uint64_t step,
		     uint64_t *pos);
bool core_past_write(struct server *s, size_t ti, uint64_t pos,
		     uint64_t from_step, uint64_t until, enum hwt_dir dir,
		     uint64_t addr, uint64_t len, size_t *wti, uint64_t *wpos,
		     uint64_t *step);

/* ---- reverse.c: moving through the history ----------------------------- */

/* Resume thread t: backward or forward, one instruction (step) or to the
 * next breakpoint (continue). Writes the stop reply into reply; returns
 * enum hwt_move or a negative errno. */
int reverse_resume(struct server *s, size_t t, enum hwt_dir dir, bool step,
		   char *reply, size_t cap);
/* The stop reply for thread t where it is now. */
void reverse_stop_reply(struct server *s, size_t t, const char *extra,
			char *reply, size_t cap);

/* ---- listen.c: the one-client socket ----------------------------------- */

struct listener {
	int fd;
	bool is_unix;
	char *unix_path;                  /* removed at close */
	char desc[160];                   /* "127.0.0.1:1234", "unix:/p" */
	bool remote;                      /* bound to a non-loopback address */
};

/* spec: HOST:PORT, [V6]:PORT or unix:PATH. Non-loopback addresses fail
 * with -EPERM unless allow_remote. */
int listener_open(struct listener *l, const char *spec, bool allow_remote,
		  struct hwt_err *err);
void listener_close(struct listener *l);
/* Wait for the first client. */
int listener_accept(struct listener *l, struct hwt_err *err);
/* Refuse a client that connects while one is being served: tell it why
 * in a protocol error reply and close it. Returns true if one was. */
bool listener_refuse_pending(struct listener *l);

/* ---- server.c: serving a session, closing it ---------------------------- */

/* Free what the session holds, whichever target opened it. */
void server_close(struct server *s);
/* Serve one GDB connection until it detaches or disconnects. A client
 * that goes away without D, k or monitor exit leaves s->hung_up set;
 * unless keep, the program is then killed (or let go, if attached), as
 * nothing may stay stopped for a debugger that is gone. */
int server_run(struct server *s, struct listener *l, int client_fd,
	       bool keep, struct hwt_err *err);

/* ---- lldb_proto.c, lldb_trace.c: the packets only LLDB sends ---------- */

struct lldb_trace;
/* Handle qHostInfo, qProcessInfo and the jLLDBTrace* packets. Returns
 * false if pkt is none of those; otherwise the reply was sent (or *rc
 * holds a send error). */
bool lldb_proto_handle(struct server *s, const char *pkt, int *rc);
/* The jLLDBTrace* half of lldb_proto_handle. */
bool lldb_trace_handle(struct server *s, const char *pkt, int *rc);
void lldb_trace_free(struct lldb_trace *lt);

#endif
