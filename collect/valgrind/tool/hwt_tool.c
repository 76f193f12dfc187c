// SPDX-License-Identifier: GPL-2.0-or-later
/* hwt_tool.c - the hwtrace Valgrind tool: records which superblocks each
 * thread ran and where each left, so the valgrind backend can rebuild
 * every executed instruction in order (vgstream.h, docs/valgrind.md).
 *
 * Built out of tree against Debian's valgrind package: no libc, only
 * Valgrind's pub_tool_* API, linked with libcoregrind and libvex.
 *
 * A superblock is a straight sequence of guest instructions (IMarks) that
 * Valgrind translates as one; it is left at the first side exit whose
 * guard holds, or at its end. So a superblock's run is known from its
 * translation and the exit taken: the tool describes each translation
 * once (SB record: its instruction addresses and lengths, and after which
 * instruction each side exit leaves) and writes per run the translation's
 * number, plus the exit's number when a side exit was taken. Threads run
 * one at a time under Valgrind's lock, so one stream in execution order
 * with thread switch records holds every thread.
 */
#include "pub_tool_basics.h"
#include "pub_tool_clreq.h"
#include "pub_tool_gdbserver.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_vkiscnums.h"
#include "libvex_guest_amd64.h"
#include "libvex_ir.h"

#include "../vgdata.h"
#include "../vgstream.h"
#include "hwt_data.h"
#include "hwt_guest.h"

/* Valgrind's own (pub_core_libcfile.h and pub_core_clientstate.h, in
 * libcoregrind): moving a descriptor into the range the client cannot see
 * or close, and the client's auxiliary vector. */
extern Int VG_(safe_fd)(Int oldfd);
extern UWord *VG_(client_auxv);
/* Valgrind's own core writer (coregrind's m_coredump), as it writes one
 * for a fatal signal: LOG.core.PID beside the --log-file. */
extern void VG_(make_coredump)(ThreadId tid, const vki_siginfo_t *si,
			       ULong max_size);

static const HChar *clo_out;              /* --hwt-out=FILE */
static Long clo_max = 4LL << 30;           /* --hwt-max-bytes=N */
static Long clo_parent;                    /* --hwt-parent=PID */
static Bool clo_follow_fork;               /* --hwt-follow-fork=yes */
static Long clo_pace;                      /* --hwt-pace-bytes=N, 0: off */
static Bool clo_exit_core;                 /* --hwt-exit-core=yes */
static Bool clo_implied;                   /* --hwt-implied-exits=yes */

static Int out_fd = -1;
static UChar buf[1 << 20];
/* Translated code writes a superblock's run and its exits at cursor
 * itself (emit_record), one word at a time, and calls drain() when
 * cursor has passed CHECK_AT as the superblock starts: so CHECK_AT leaves
 * room for all a superblock writes (a word for its run and one per exit).
 * CHECK_AT is a constant, so that check is one compare with no load;
 * where fewer bytes may be written before the bound, they start later
 * in buf (unflushed). */
#define INLINE_SLACK 4096u
#define CHECK_AT (buf + sizeof(buf) - INLINE_SLACK)
static UChar *unflushed = buf;             /* the bytes not written yet */
static UChar *cursor = buf;                /* where the next byte goes */
static ULong written;                      /* bytes flushed so far */
static ULong held;                         /* of those, what the file still
					    * holds: the reader frees what
					    * it has read */
static Bool recording = True;
static Bool stopping;                      /* at the bound (stop_full) */
static ULong next_sb;                      /* translation numbers */
static Int cur_lwp;                        /* thread of the items now */
static Bool auxv_written;

/* ---- the writer -------------------------------------------------------- */

/* The reader punches out what it has read (hwtrace's valgrind backend),
 * so the file's blocks are what waits to be read; where it cannot, they
 * are everything written. */
static ULong held_now(void)
{
	struct vg_stat st;

	if (out_fd < 0)
		return 0;
	return VG_(fstat)(out_fd, &st) == 0 ? st.blocks * 512 : written;
}

/* The program waits while more than clo_pace bytes wait to be read, until
 * half of them are: a recording as long as the program's life, in the
 * disk space of a window, and nothing lost at the end (the recorder reads
 * as fast as it can while the program runs; backend.c says when to pace).
 * A reader that frees nothing for PACE_GIVE_UP_MS is not waited for: the
 * bound (clo_max) then decides. */
#define PACE_GIVE_UP_MS 10000u

static void pace(void)
{
	UInt start = VG_(read_millisecond_timer)();
	ULong last = held;

	while (held > (ULong)clo_pace / 2) {
		UInt now = VG_(read_millisecond_timer)();

		VG_(poll)(NULL, 0, 1);
		held = held_now();
		if (held < last) {
			last = held;
			start = now;
		} else if (now - start > PACE_GIVE_UP_MS) {
			break;
		}
	}
}

static UInt used(void)
{
	return (UInt)(cursor - unflushed);
}

/* An empty buffer, its check placed where the bound says. */
static void restart(void)
{
	ULong room_left = sizeof(buf) - INLINE_SLACK;

	if (recording && (ULong)clo_max - held < room_left + INLINE_SLACK)
		room_left = held + INLINE_SLACK < (ULong)clo_max ?
			    (ULong)clo_max - held - INLINE_SLACK : 0;
	unflushed = cursor = CHECK_AT - room_left;
}

static void flush(void)
{
	UInt at = 0;

	/* What translated code wrote after recording stopped is dropped. */
	if (!recording) {
		restart();
		return;
	}
	while (out_fd >= 0 && at < used()) {
		Int n = VG_(write)(out_fd, unflushed + at, (Int)(used() - at));

		if (n <= 0) {
			/* Nothing more can be kept: say so once (in the log,
			 * whatever the verbosity) and stop. */
			VG_(printf)("hwtrace: cannot write %s (a full disk?); "
				    "recording stops here\n", clo_out);
			VG_(close)(out_fd);
			out_fd = -1;
			recording = False;
			break;
		}
		at += (UInt)n;
	}
	written += used();
	cursor = unflushed;
	/* The reader punches out what it has read (hwtrace's valgrind
	 * backend), so the file's blocks are what waits to be read; where
	 * it cannot, they are everything written. */
	held = held_now();
	if (clo_pace && held > (ULong)clo_pace)
		pace();
	restart();
}

static void stop_full(void);

/* Room for one item of up to n bytes; False once recording stopped. */
static Bool room(UInt n)
{
	if (!recording)
		return False;
	if (cursor + n > buf + sizeof(buf))
		flush();
	/* Near the bound, the buffer's bytes start late (restart). */
	if ((held + used() + n > (ULong)clo_max ||
	     cursor + n > buf + sizeof(buf)) && !stopping) {
		stop_full();
		return False;
	}
	return recording;
}

static inline void put_u(ULong v)
{
	while (v >= 0x80) {
		*cursor++ = (UChar)(v | 0x80);
		v >>= 7;
	}
	*cursor++ = (UChar)v;
}

static void put_s(Long v)
{
	put_u(((ULong)v << 1) ^ (ULong)(v >> 63));
}

static void put_rec(UInt kind)
{
	put_u((ULong)kind << 2 | HWT_VG_RECORD);
}

static void threads_next(void);

static void stop_full(void)
{
	/* Past the bound by this last word, and a NEXT per thread: where
	 * each stopped. */
	stopping = True;
	threads_next();
	if (cursor + 32 > buf + sizeof(buf))
		flush();
	put_rec(HWT_VG_REC_FULL);
	put_u((ULong)clo_max);
	flush();
	recording = False;
	restart();
}

/* ---- threads ------------------------------------------------------------ */

static void switch_to(Int os_tid)
{
	if (os_tid == cur_lwp || !room(16))
		return;
	put_rec(HWT_VG_REC_THREAD);
	put_u((ULong)os_tid);
	hwt_data_switch(cur_lwp, os_tid);
	cur_lwp = os_tid;
}

/* The client's auxiliary vector, once its first code runs. */
static void write_auxv(void)
{
	UInt n = 0;

	auxv_written = True;
	if (!VG_(client_auxv))
		return;
	while (n < HWT_VG_MAX_AUXV && VG_(client_auxv)[2 * n] != 0)
		n++;
	if (!room(16 + 20 * n))
		return;
	put_rec(HWT_VG_REC_AUXV);
	put_u(n);
	for (UInt i = 0; i < 2 * n; i++)
		put_u(VG_(client_auxv)[i]);
}

static void on_start_client_code(ThreadId tid, ULong blocks)
{
	if (!auxv_written)
		write_auxv();
	if (!hwt_lwp_known(tid))
		hwt_lwp_set(tid, VG_(gettid)());
	switch_to(hwt_lwp(tid));
}

static void on_first_insn(ThreadId tid)
{
	Int os_tid = VG_(gettid)();

	hwt_lwp_set(tid, os_tid);
	if (!room(16))
		return;
	put_rec(HWT_VG_REC_BORN);
	put_u((ULong)os_tid);
	switch_to(os_tid);
}

static void thread_at(ThreadId tid);

static void on_thread_exit(ThreadId tid)
{
	/* Where it stopped: mid-superblock when a fatal signal ends it. */
	thread_at(tid);
	hwt_data_regs(tid, hwt_lwp(tid), True, 0);
	if (room(16)) {
		put_rec(HWT_VG_REC_GONE);
		put_u((ULong)hwt_lwp(tid));
	}
	hwt_lwp_set(tid, 0);
}

/* ---- signals ------------------------------------------------------------ */

static void thread_at(ThreadId tid)
{
	if (!room(32))
		return;
	put_rec(HWT_VG_REC_AT);
	put_u((ULong)hwt_lwp(tid));
	put_u((ULong)VG_(get_IP)(tid));
}

/* Where thread tid goes on, for an implied superblock it ran last
 * (vgstream.h) when no run of its own may come next to tell. */
static void thread_next(ThreadId tid)
{
	if (!clo_implied || !room(32))
		return;
	put_rec(HWT_VG_REC_NEXT);
	put_u((ULong)hwt_lwp(tid));
	put_u((ULong)VG_(get_IP)(tid));
}

/* The same for every thread that has run. */
static void threads_next(void)
{
	ThreadId tid;
	Addr lo, hi;

	VG_(thread_stack_reset_iter)(&tid);
	while (VG_(thread_stack_next)(&tid, &lo, &hi))
		if (hwt_lwp_known(tid))
			thread_next(tid);
}

static void on_deliver_signal(ThreadId tid, Int sig, Bool alt_stack)
{
	/* A fault stops its superblock at the faulting instruction; any
	 * other signal arrives between superblocks. */
	if (sig == VKI_SIGSEGV || sig == VKI_SIGBUS || sig == VKI_SIGFPE ||
	    sig == VKI_SIGILL || sig == VKI_SIGTRAP)
		thread_at(tid);
	else
		thread_next(tid);
	/* The registers the handler's entry replaces. */
	hwt_data_regs(tid, hwt_lwp(tid), False, HWT_VGD_CAUSE_SIGNAL);
	if (!room(24))
		return;
	put_rec(HWT_VG_REC_SIGNAL);
	put_u((ULong)hwt_lwp(tid));
	put_u((ULong)sig);
}

/* ---- memory ------------------------------------------------------------- */

static void map(Addr a, SizeT len, Bool rr, Bool ww, Bool xx)
{
	NSegment const *seg = VG_(am_find_nsegment)(a);
	const HChar *path = seg ? VG_(am_get_filename)(seg) : NULL;
	ULong off = 0;
	SizeT plen;

	/* Valgrind's own mappings are not the program's (its trampoline
	 * page is: a signal handler returns through it). */
	if (!xx || (seg && seg->kind != SkFileC && seg->kind != SkAnonC &&
		    seg->kind != SkShmC))
		return;
	if (!path)
		path = "";
	if (seg && path[0])
		off = (ULong)seg->offset + (a - seg->start);
	plen = VG_(strlen)(path);
	if (plen > 4096)
		plen = 4096;
	if (!room((UInt)plen + 64))
		return;
	put_rec(HWT_VG_REC_MAP);
	put_u(a);
	put_u(len);
	put_u(off);
	put_u((rr ? HWT_VG_MAP_R : 0) | (ww ? HWT_VG_MAP_W : 0) |
	      HWT_VG_MAP_X);
	put_u(plen);
	VG_(memcpy)(cursor, path, plen);
	cursor += plen;
}

static void on_map_startup(Addr a, SizeT len, Bool rr, Bool ww, Bool xx,
			   ULong di)
{
	map(a, len, rr, ww, xx);
}

static void on_mmap(Addr a, SizeT len, Bool rr, Bool ww, Bool xx, ULong di)
{
	hwt_data_mmap(a, len);
	map(a, len, rr, ww, xx);
}

static void on_mprotect(Addr a, SizeT len, Bool rr, Bool ww, Bool xx)
{
	map(a, len, rr, ww, xx);
}

static void on_munmap(Addr a, SizeT len)
{
	hwt_data_munmap(a, len);
	if (!room(32))
		return;
	put_rec(HWT_VG_REC_UNMAP);
	put_u(a);
	put_u(len);
}

/* ---- instrumentation ------------------------------------------------------ */

/* Called by translated code once cursor has passed CHECK_AT. */
static VG_REGPARM(0) void drain(void)
{
	if (!room(INLINE_SLACK))
		restart();
}

static IRTemp assign(IRSB *sb, IRType ty, IRExpr *e)
{
	IRTemp t = newIRTemp(sb->tyenv, ty);

	addStmtToIRSB(sb, IRStmt_WrTmp(t, e));
	return t;
}

/* Code that calls drain() when c, what cursor is, has passed CHECK_AT. */
static void emit_drain_past_check(IRSB *sb, IRTemp c)
{
	IRTemp over;
	IRDirty *d;

	over = assign(sb, Ity_I1, IRExpr_Binop(Iop_CmpLT64U,
					       mkIRExpr_HWord((HWord)CHECK_AT),
					       IRExpr_RdTmp(c)));
	d = unsafeIRDirty_0_N(0, "hwt_drain", VG_(fnptr_to_fnentry)(drain),
			      mkIRExprVec_0());
	d->guard = IRExpr_RdTmp(over);
	addStmtToIRSB(sb, IRStmt_Dirty(d));
}

/* Code that appends the LEB128 number v at cursor, when guard holds
 * (NULL: always): the bytes are known when translating, so they are
 * stored as one little-endian word and cursor moves by their count.
 * Room is checked after it (check): after the run's record, at the
 * superblock's start where no guest value is live in a register yet (a
 * check after every record, with values live around it, tripled the time
 * spent in translated code), and after every record only in a superblock
 * with more of them than INLINE_SLACK holds. A helper call per
 * superblock and per exit taken cost about as much as Valgrind's own
 * translation; this costs a few instructions. */
static void emit_record(IRSB *sb, ULong v, IRExpr *guard, Bool check)
{
	ULong word = 0;
	UInt n = 0;
	IRTemp c, nc;

	do {
		ULong b = v & 0x7f;

		v >>= 7;
		word |= (b | (v ? 0x80 : 0)) << (8 * n++);
	} while (v && n < 8);
	if (v)          /* more than 8 bytes: no translation numbers this big */
		return;
	c = assign(sb, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64,
					    mkIRExpr_HWord((HWord)&cursor)));
	/* Flat IR: every operand an atom. */
	nc = assign(sb, Ity_I64, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(c),
					      IRExpr_Const(IRConst_U64(n))));
	if (guard) {
		addStmtToIRSB(sb, IRStmt_StoreG(Iend_LE, IRExpr_RdTmp(c),
						IRExpr_Const(IRConst_U64(word)),
						guard));
		nc = assign(sb, Ity_I64, IRExpr_ITE(guard, IRExpr_RdTmp(nc),
						    IRExpr_RdTmp(c)));
	} else {
		addStmtToIRSB(sb, IRStmt_Store(Iend_LE, IRExpr_RdTmp(c),
					       IRExpr_Const(IRConst_U64(word))));
	}
	addStmtToIRSB(sb, IRStmt_Store(Iend_LE,
				       mkIRExpr_HWord((HWord)&cursor),
				       IRExpr_RdTmp(nc)));
	if (check)
		emit_drain_past_check(sb, nc);
}

/* Whether a is the address of one of in's instructions. */
static Bool is_insn_of(const IRSB *in, Addr a)
{
	for (Int i = 0; i < in->stmts_used; i++) {
		const IRStmt *st = in->stmts[i];

		if (st->tag == Ist_IMark &&
		    (Addr)st->Ist.IMark.addr + (Addr)st->Ist.IMark.delta == a)
			return True;
	}
	return False;
}

/* Whether a run that goes on at a could have been anywhere else than
 * past one exit of in (entered at entry): a is its entry or one of its
 * instructions, or the target of one of its first nexit side exits. */
static Bool is_ambiguous_target(const IRSB *in, Addr entry, Addr a,
				Int nexit)
{
	if (a == entry || is_insn_of(in, a))
		return True;
	for (Int i = 0; i < in->stmts_used && nexit > 0; i++) {
		const IRStmt *st = in->stmts[i];

		if (st->tag != Ist_Exit)
			continue;
		if (st->Ist.Exit.dst->tag == Ico_U64 &&
		    (Addr)st->Ist.Exit.dst->Ico.U64 == a)
			return True;
		nexit--;
	}
	return False;
}

/* How the reader learns which exit a run of in left by (vgstream.h):
 * HWT_VG_SB_IMPLIED where the thread's next pc says it exactly, plus
 * HWT_VG_SB_FINAL where the end has to say itself; 0: an EXIT item for
 * every side exit taken. */
static UInt exit_flags(const IRSB *in, Addr entry)
{
	Int nexit = 0;

	if (!clo_implied)
		return 0;
	for (Int i = 0; i < in->stmts_used; i++) {
		const IRStmt *st = in->stmts[i];

		if (st->tag != Ist_Exit)
			continue;
		if (st->Ist.Exit.jk != Ijk_Boring ||
		    st->Ist.Exit.dst->tag != Ico_U64 ||
		    is_ambiguous_target(in, entry,
					(Addr)st->Ist.Exit.dst->Ico.U64,
					nexit))
			return 0;
		nexit++;
	}
	if (!nexit)
		return 0;
	if ((in->jumpkind == Ijk_Boring || in->jumpkind == Ijk_Call) &&
	    in->next->tag == Iex_Const &&
	    in->next->Iex.Const.con->tag == Ico_U64) {
		Addr to = (Addr)in->next->Iex.Const.con->Ico.U64;

		/* A loop back into itself: runs end there far more often
		 * than by a side exit, so writing the side exits taken costs
		 * less than writing every end. */
		if (to == entry || is_insn_of(in, to))
			return 0;
		if (!is_ambiguous_target(in, entry, to, nexit))
			return HWT_VG_SB_IMPLIED;
	}
	return HWT_VG_SB_IMPLIED | HWT_VG_SB_FINAL;
}

/* Describe the translation: its instructions and its exits, each exit
 * with the number of instructions run when it is taken, then how its
 * exits are told (flags), its entry and, implied, its exits' targets. */
static void describe(ULong id, const IRSB *in, Addr entry, UInt flags)
{
	UInt ninsn = 0, nexit = 0;
	Addr prev_end = 0, first = 0;

	for (Int i = 0; i < in->stmts_used; i++) {
		if (in->stmts[i]->tag == Ist_IMark)
			ninsn++;
		else if (in->stmts[i]->tag == Ist_Exit)
			nexit++;
	}
	if (!room(48 + 24 * ninsn + 16 * nexit))
		return;
	put_rec(HWT_VG_REC_SB);
	put_u(id);
	put_u(ninsn);
	ninsn = 0;
	for (Int i = 0; i < in->stmts_used; i++) {
		const IRStmt *st = in->stmts[i];
		UInt len;
		Addr a;

		if (st->tag != Ist_IMark)
			continue;
		a = (Addr)st->Ist.IMark.addr + (Addr)st->Ist.IMark.delta;
		len = st->Ist.IMark.len;
		if (ninsn++ == 0) {
			put_u(a);
			first = a;
		} else
			put_s((Long)(a - prev_end));
		put_u((ULong)len << 1 | (hwt_is_rep_string(a, len) ? 1 : 0));
		prev_end = a + len;
	}
	put_u(nexit);
	ninsn = 0;
	for (Int i = 0; i < in->stmts_used; i++) {
		if (in->stmts[i]->tag == Ist_IMark)
			ninsn++;
		else if (in->stmts[i]->tag == Ist_Exit)
			put_u(ninsn);
	}
	put_u(flags);
	put_s((Long)(entry - first));
	for (Int i = 0; i < in->stmts_used && (flags & HWT_VG_SB_IMPLIED); i++)
		if (in->stmts[i]->tag == Ist_Exit)
			put_s((Long)((Addr)in->stmts[i]->Ist.Exit.dst->Ico.U64 -
				     entry));
}

static IRSB *instrument(VgCallbackClosure *closure, IRSB *in,
			const VexGuestLayout *layout,
			const VexGuestExtents *vge,
			const VexArchInfo *archinfo_host,
			IRType gWordTy, IRType hWordTy)
{
	IRSB *out = deepCopyIRSBExceptStmts(in);
	ULong id = next_sb++;
	Addr entry = (Addr)closure->nraddr;
	UInt nexit = 0, exits = 0, records, flags = exit_flags(in, entry);
	Bool each;

	describe(id, in, entry, flags);
	if (hwt_data_on())
		hwt_data_begin(out, in, id);
	for (Int i = 0; i < in->stmts_used; i++)
		exits += in->stmts[i]->tag == Ist_Exit;
	records = 1 + (flags & HWT_VG_SB_IMPLIED ?
		       (flags & HWT_VG_SB_FINAL ? 1 : 0) : exits);
	/* The run is written first, so every exit has one to belong to,
	 * and room is checked right after it, still at the superblock's
	 * start: past CHECK_AT, drain() leaves INLINE_SLACK bytes for the
	 * records after it (the superblock before left at most its own
	 * slack's worth past CHECK_AT, so the run's word fits). One with more
	 * records than that checks after each. */
	each = 8u * records > INLINE_SLACK;
	emit_record(out, id << 2 | HWT_VG_EXEC, NULL, True);
	for (Int i = 0; i < in->stmts_used; i++) {
		IRStmt *st = in->stmts[i];

		if (st->tag == Ist_Exit && !(flags & HWT_VG_SB_IMPLIED))
			emit_record(out, (ULong)nexit << 2 | HWT_VG_EXIT,
				    st->Ist.Exit.guard, each);
		nexit += st->tag == Ist_Exit;
		if (hwt_data_on())
			hwt_data_before(out, st);
		addStmtToIRSB(out, st);
		if (hwt_data_on())
			hwt_data_after(out, st);
	}
	/* Reached only when no side exit was taken. */
	if (hwt_data_on())
		hwt_data_end(out);
	if (flags & HWT_VG_SB_FINAL)
		emit_record(out, (ULong)nexit << 2 | HWT_VG_EXIT, NULL, each);
	return out;
}

/* ---- live control -------------------------------------------------------- */

/* The valgrind backend drives the program through Valgrind's gdbserver
 * and asks, at every stop, through monitor commands (qRcmd):
 *   hwt.sync  everything recorded so far is flushed, then one line per
 *             thread that has run: "hwt LWP PC FS_BASE GS_BASE" (hex;
 *             the base registers are not in Valgrind's register packet)
 *   hwt.data  the data history file as things stand (when the values
 *             of the past are asked for)
 *   hwt.regs LWP [jump], hwt.write ADDR LEN
 *             the debugger is about to write registers (jump: the pc
 *             among them, elsewhere) or memory: what they hold goes into
 *             the data history first
 *   hwt.off   recording stops (the debugger detached)
 */
static ULong guest_word(ThreadId tid, PtrdiffT offset)
{
	ULong v = 0;

	VG_(get_shadow_regs_area)(tid, (UChar *)&v, 0, offset, sizeof(v));
	return v;
}

static void sync_threads(void)
{
	ThreadId tid;
	Addr lo, hi;

	/* Stopped before the first instruction: the debugger needs the
	 * vector already. */
	if (!auxv_written)
		write_auxv();
	flush();
	VG_(thread_stack_reset_iter)(&tid);
	while (VG_(thread_stack_next)(&tid, &lo, &hi)) {
		Int os_tid = hwt_lwp_known(tid);

		/* Before the first instruction only the main thread exists,
		 * not yet named; other threads count once they run. */
		if (!os_tid && tid == 1)
			os_tid = VG_(getpid)();
		if (!os_tid)
			continue;
		hwt_data_stop(os_tid, VG_(get_IP)(tid));
		VG_(gdb_printf)("hwt %x %lx %llx %llx\n", (UInt)os_tid,
				VG_(get_IP)(tid),
				guest_word(tid, __builtin_offsetof(
					VexGuestAMD64State, guest_FS_CONST)),
				guest_word(tid, __builtin_offsetof(
					VexGuestAMD64State, guest_GS_CONST)));
	}
}

/* The data history as it stands, every live thread's state where its
 * history ends now. */
static void data_snapshot(void)
{
	ThreadId t;
	Addr lo, hi;
	UInt n = 0;

	VG_(thread_stack_reset_iter)(&t);
	while (VG_(thread_stack_next)(&t, &lo, &hi))
		n++;
	if (!hwt_data_snapshot_begin(n))
		return;
	VG_(thread_stack_reset_iter)(&t);
	while (VG_(thread_stack_next)(&t, &lo, &hi))
		if (hwt_lwp_known(t))
			hwt_data_regs(t, hwt_lwp_known(t), True, 0);
	hwt_data_snapshot_write(cur_lwp);
}

/* "hwt.regs LWP [jump]": the debugger is about to write registers of
 * thread LWP (hex), its pc elsewhere with jump; "hwt.write ADDR LEN":
 * memory (hex). */
static void debugger_writes(const HChar *cmd)
{
	HChar *end;
	ULong a = VG_(strtoull16)(cmd + 9, &end);

	if (VG_(strncmp)(cmd, "hwt.regs ", 9) == 0) {
		UInt cause = VG_(strstr)(end, "jump") ? HWT_VGD_CAUSE_JUMP
						      : HWT_VGD_CAUSE_DEBUGGER;

		for (ThreadId t = 1; t < VG_N_THREADS; t++)
			if (hwt_lwp_known(t) == (Int)a)
				hwt_data_regs(t, (Int)a, False, cause);
	} else {
		ULong len = VG_(strtoull16)(end, &end);

		if (len && len <= (1u << 20))
			hwt_data_debugger_writes((Addr)a, (SizeT)len);
	}
}

static Bool on_client_request(ThreadId tid, UWord *arg, UWord *ret)
{
	const HChar *cmd = (const HChar *)arg[1];

	if (arg[0] != VG_USERREQ__GDB_MONITOR_COMMAND)
		return False;
	*ret = 1;
	if (VG_(strcmp)(cmd, "hwt.sync") == 0) {
		sync_threads();
	} else if (VG_(strcmp)(cmd, "hwt.data") == 0) {
		data_snapshot();
	} else if (VG_(strncmp)(cmd, "hwt.regs ", 9) == 0 ||
		   VG_(strncmp)(cmd, "hwt.write ", 10) == 0) {
		debugger_writes(cmd);
	} else if (VG_(strcmp)(cmd, "hwt.off") == 0) {
		flush();
		recording = False;
		restart();
	} else {
		*ret = 0;
	}
	return *ret != 0;
}

/* ---- start and end -------------------------------------------------------- */

static Bool process_cmd_line_option(const HChar *arg)
{
	if (VG_STR_CLO(arg, "--hwt-out", clo_out))
		return True;
	if (VG_BINT_CLO(arg, "--hwt-max-bytes", clo_max, 4096,
			(Long)(1ULL << 62)))
		return True;
	if (VG_BINT_CLO(arg, "--hwt-parent", clo_parent, 1, 0x7fffffff))
		return True;
	if (VG_BOOL_CLO(arg, "--hwt-follow-fork", clo_follow_fork))
		return True;
	if (VG_BINT_CLO(arg, "--hwt-pace-bytes", clo_pace, 0,
			(Long)(1ULL << 62)))
		return True;
	if (VG_BOOL_CLO(arg, "--hwt-exit-core", clo_exit_core))
		return True;
	if (VG_BOOL_CLO(arg, "--hwt-implied-exits", clo_implied))
		return True;
	return hwt_data_option(arg);
}

static void print_usage(void)
{
	VG_(printf)("    --hwt-out=FILE         write the trace stream to FILE\n"
		    "    --hwt-max-bytes=N      stop recording when N bytes "
		    "wait to be read [4 GiB]\n"
		    "    --hwt-parent=PID       record only a process whose "
		    "parent is PID\n"
		    "    --hwt-follow-fork=no|yes  record forked children too, "
		    "each into FILE.PID [no]\n"
		    "    --hwt-pace-bytes=N     wait while more than N bytes "
		    "wait to be read [0: never]\n"
		    "    --hwt-exit-core=no|yes  write a core as the program "
		    "starts to exit [no]\n"
		    "    --hwt-implied-exits=no|yes  leave out side exits "
		    "where the next run tells them [no]\n");
	hwt_data_usage();
}

static void print_debug_usage(void)
{
}

/* A forked child runs on under Valgrind with this tool and the parent's
 * descriptor: it must not write into the parent's stream. What the parent
 * wrote before the fork was flushed in on_fork, so the child's stream can
 * refer to the translations described there; FORKS tells the reader to
 * keep them for it. */
static void on_fork(ThreadId tid)
{
	if (clo_follow_fork && room(8))
		put_rec(HWT_VG_REC_FORKS);
	flush();
}

/* FILE.PID: a followed process's own stream. */
static void child_stream_path(HChar *path, SizeT size, Int pid)
{
	VG_(snprintf)(path, (Int)size, "%s.%d", clo_out, pid);
}

/* An execve replaces this tool with the new program's: what is buffered
 * goes out first. */
static void pre_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs)
{
	/* The registers the call's result (and a sigreturn) replaces. */
	hwt_data_regs(tid, hwt_lwp(tid), False, HWT_VGD_CAUSE_SYSCALL);
	if (sysno == __NR_execve || sysno == __NR_execveat) {
		threads_next();
		flush();
	}
	/* The program's state as it starts to exit, so that a recording of
	 * a program that did not crash opens in a debugger too. Not in a
	 * forked child that is not recorded. */
	if (sysno == __NR_exit_group && clo_exit_core && recording) {
		vki_siginfo_t si;

		/* The history first: a disk the core fills keeps it. */
		flush();
		VG_(memset)(&si, 0, sizeof(si));
		VG_(make_coredump)(tid, &si, ~0ULL);
	}
}

static void post_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs,
			 SysRes res)
{
}

/* Followed (--hwt-follow-fork=yes), the child writes a stream of its
 * own: the magic, then FORK (its parent's pid and how many translations
 * the parent had described, which the child shares until it makes its
 * own), then its thread. Otherwise it records nothing. */
static void on_fork_child(ThreadId tid)
{
	Bool follow = clo_follow_fork && recording && out_fd >= 0;
	Int parent = VG_(getppid)(), self = VG_(getpid)();
	HChar path[4200];
	SysRes sr;

	written = 0;
	held = 0;
	recording = False;
	hwt_data_off();
	if (out_fd >= 0)
		VG_(close)(out_fd);
	out_fd = -1;
	if (!follow)
		return;
	child_stream_path(path, sizeof(path), self);
	sr = VG_(open)(path, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_TRUNC |
		       VKI_O_APPEND, 0600);
	if (sr_isError(sr))
		return;
	out_fd = VG_(safe_fd)((Int)sr_Res(sr));
	recording = True;
	hwt_lwp_forget_all();
	hwt_lwp_set(tid, self);
	cur_lwp = 0;
	restart();
	VG_(memcpy)(cursor, HWT_VG_MAGIC, HWT_VG_MAGIC_LEN);
	cursor += HWT_VG_MAGIC_LEN;
	put_rec(HWT_VG_REC_FORK);
	put_u((ULong)parent);
	put_u(next_sb);
	switch_to(self);
}

static void post_clo_init(void)
{
	Bool child = clo_parent && VG_(getppid)() != clo_parent;
	SysRes sr;

	hwt_lwp_init();
	if (!clo_out)
		VG_(fmsg_bad_option)("--hwt-out", "hwtrace needs an output "
				     "file\n");
	/* With --trace-children=yes, a child the program forks runs its own
	 * programs under this tool too: only the launched process (its
	 * parent the recorder), through its execs, is recorded, and the
	 * children followed, whose streams exist already. */
	if (child) {
		HChar path[4200];

		child_stream_path(path, sizeof(path), VG_(getpid)());
		sr = VG_(open)(path, VKI_O_WRONLY | VKI_O_APPEND, 0);
		if (!clo_follow_fork || sr_isError(sr)) {
			recording = False;
			return;
		}
	} else {
		/* Appended to, never truncated: a program this process
		 * exec's under Valgrind continues the same stream. */
		sr = VG_(open)(clo_out, VKI_O_WRONLY | VKI_O_CREAT |
			       VKI_O_APPEND, 0600);
	}
	if (sr_isError(sr))
		VG_(fmsg_bad_option)("--hwt-out", "cannot open %s\n",
				     clo_out);
	out_fd = VG_(safe_fd)((Int)sr_Res(sr));
	/* The values of the past are the launched process's (a followed
	 * child's program would write over them). */
	if (!child)
		hwt_data_init();
	VG_(atfork)(on_fork, NULL, on_fork_child);
	if (VG_(lseek)(out_fd, 0, VKI_SEEK_END) > 0) {
		put_rec(HWT_VG_REC_EXEC);
		return;
	}
	VG_(memcpy)(cursor, HWT_VG_MAGIC, HWT_VG_MAGIC_LEN);
	cursor += HWT_VG_MAGIC_LEN;
}

static void fini(Int exitcode)
{
	ThreadId tid = VG_(get_running_tid)();

	/* The thread that ends the program, maybe in the middle of a
	 * superblock (a fatal fault). */
	if (tid != VG_INVALID_THREADID)
		thread_at(tid);
	if (room(24)) {
		put_rec(HWT_VG_REC_EXIT);
		put_u((ULong)(UInt)exitcode);
	}
	if (hwt_data_on()) {
		ThreadId t;
		Addr lo, hi;

		VG_(thread_stack_reset_iter)(&t);
		while (VG_(thread_stack_next)(&t, &lo, &hi))
			if (hwt_lwp_known(t))
				hwt_data_regs(t, hwt_lwp_known(t), True, 0);
		hwt_data_finish(recording, cur_lwp);
	}
	if (recording) {
		put_rec(HWT_VG_REC_END);
		flush();
	}
	if (out_fd >= 0)
		VG_(close)(out_fd);
}

static void pre_clo_init(void)
{
	VG_(details_name)("hwtrace");
	VG_(details_version)(NULL);
	VG_(details_description)("records every executed instruction for "
				 "hwtrace");
	VG_(details_copyright_author)("hwtrace");
	VG_(details_bug_reports_to)(VG_BUGS_TO);
	VG_(details_avg_translation_sizeB)(275);

	VG_(basic_tool_funcs)(post_clo_init, instrument, fini);
	VG_(needs_command_line_options)(process_cmd_line_option, print_usage,
					print_debug_usage);
	VG_(needs_syscall_wrapper)(pre_syscall, post_syscall);
	VG_(needs_client_requests)(on_client_request);
	VG_(track_start_client_code)(on_start_client_code);
	VG_(track_pre_thread_first_insn)(on_first_insn);
	VG_(track_pre_thread_ll_exit)(on_thread_exit);
	VG_(track_pre_deliver_signal)(on_deliver_signal);
	VG_(track_new_mem_startup)(on_map_startup);
	VG_(track_new_mem_mmap)(on_mmap);
	VG_(track_change_mem_mprotect)(on_mprotect);
	VG_(track_die_mem_munmap)(on_munmap);
}

VG_DETERMINE_INTERFACE_VERSION(pre_clo_init)
