/* server.h - hwt-server's internal interfaces, one section per file. */
#ifndef HWT_SERVER_H
#define HWT_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hwt-common.h"
#include "hwt-replay.h"
#include "rsp.h"

/* ---- target_core.c: the core's threads, registers and memory -------- */

#define CORE_GREGS_SIZE 216u     /* struct user_regs_struct */
#define CORE_FXSAVE_SIZE 512u    /* struct user_fpregs_struct (FXSAVE) */
#define CORE_MAX_AUXV (64u << 10)

struct core_thread {
	int64_t tid;
	uint8_t gregs[CORE_GREGS_SIZE];
	bool have_fp;
	uint8_t fxsave[CORE_FXSAVE_SIZE];
};

struct hwt_core {
	struct core_thread *threads;  /* faulting thread first, as written */
	size_t nthreads;
	uint8_t *auxv;
	size_t auxv_len;
	int signo;                    /* Linux signal that dumped, 0: none */
	uint8_t siginfo[128];         /* NT_SIGINFO: the kernel's siginfo_t */
	bool have_siginfo;
	struct hwt_image *mem;        /* the core's PT_LOAD segments */
};

int core_open(const char *path, struct hwt_core **out, struct hwt_err *err);
void core_free(struct hwt_core *core);
uint64_t core_thread_pc(const struct core_thread *t);

/* ---- tdesc.c: x86-64 GNU/Linux target description ------------------- */

#define TDESC_NREGS 60
#define TDESC_PC_REGNUM 16
#define TDESC_MAX_REG_SIZE 16

extern const char tdesc_amd64_linux_xml[];
/* Size of register regno in bytes, 0 if there is no such register. */
size_t tdesc_reg_size(int regno);
/* Value of regno from a core thread's register notes, in GDB's layout
 * (little-endian); returns false when the core did not record it. */
bool tdesc_reg_value(const struct core_thread *t, int regno, uint8_t *out);

/* ---- the session state every file shares ------------------------------ */

#define SRV_MAX_BREAKPOINTS 4096u

struct srv_thread {
	int64_t tid;
	const struct core_thread *core;   /* registers at the history's end */
	long bundle_idx;                  /* its trace in the bundle, or -1 */
	struct hwt_history *hist;         /* opened on first use */
	struct hwt_cursor *cursor;        /* created on first reverse move */
	bool btrace_on;                   /* as GDB sees it (Qbtrace) */
	bool btrace_pt;                   /* format GDB asked for: PT, else
					   * BTS (what it reopens with) */
	bool btrace_served;               /* GDB has the whole history */
	char *btrace_xml;                 /* cached qXfer:btrace document */
	bool btrace_xml_pt;               /* ... in PT format, else BTS */
	size_t btrace_len;
	bool btrace_reading_empty;        /* the read in progress is of the
					   * empty "nothing new" document */
};

struct server {
	struct hwt_bundle *bundle;
	struct hwt_core *core;
	struct hwt_image *img;            /* modules + core, for decoding */
	struct srv_thread *threads;
	size_t nthreads;
	size_t gthread, cthread;          /* Hg and Hc threads (indices) */
	size_t stop_thread;               /* thread of the last stop reply */
	uint64_t bps[SRV_MAX_BREAKPOINTS];
	size_t nbps;
	uint64_t bts_size;                /* Qbtrace-conf:bts:size */
	uint64_t pt_size;                 /* Qbtrace-conf:pt:size */
	char *exec_path;                  /* the executable's system path */
	char *libs_xml;                   /* qXfer:libraries-svr4 document */
	size_t libs_len;
	char warning[600];                /* non-fatal problem opening */
	struct rsp_conn conn;
};

/* ---- target_core.c: the session's target ------------------------------ */

/* The thread's history, opened on first use; NULL with err set when the
 * thread has no trace or it cannot be read. */
struct hwt_history *srv_history(struct server *s, struct srv_thread *t,
				struct hwt_err *err);
/* Memory of the crashed process: core first, then module files. */
size_t srv_read_memory(struct server *s, uint64_t addr, void *buf,
		       size_t len);

/* ---- server.c: reply helpers for every handler ------------------------- */

/* Parse the "OFF,LEN" (hex) of a qXfer read; false if malformed. */
bool srv_parse_offlen(const char *s, uint64_t *off, uint64_t *len);
/* Reply to a qXfer read with the slice [off, off+len) of doc: 'm' when
 * more follows, 'l' at the end. */
int srv_xfer_reply(struct server *s, const void *doc, size_t doclen,
		   uint64_t off, uint64_t len);

/* ---- btrace.c: GDB's branch-trace packets ----------------------------- */

/* Handle Qbtrace:*, Qbtrace-conf:*, qXfer:btrace:read and
 * qXfer:btrace-conf:read for the general thread. Returns false if pkt is
 * none of those; otherwise the reply was sent (or *rc holds a send
 * error). */
bool btrace_handle(struct server *s, const char *pkt, int *rc);

/* ---- reverse.c: moving through the history ----------------------------- */

/* Resume thread t: backward or forward, one instruction (step) or to the
 * next breakpoint (continue). Writes the stop reply into reply. */
int reverse_resume(struct server *s, size_t t, enum hwt_dir dir, bool step,
		   char *reply, size_t cap);
/* Whether thread t sits inside its history (not at the crash), and the
 * pc there. */
bool reverse_replaying(struct server *s, size_t t, uint64_t *pc);
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

/* ---- target_core.c: opening; server.c: serving ------------------------- */

/* Open the bundle and its core (core_path overrides the bundle's). A
 * problem that only makes some code unreadable lands in s->warning. */
int server_open(struct server *s, const char *bundle_dir,
		const char *core_path, struct hwt_err *err);
void server_close(struct server *s);
/* Serve one GDB connection until it detaches or disconnects. */
int server_run(struct server *s, struct listener *l, int client_fd,
	       struct hwt_err *err);

#endif
