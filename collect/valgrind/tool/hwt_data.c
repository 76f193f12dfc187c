// SPDX-License-Identifier: GPL-2.0-or-later
/* hwt_data.c - the tool's data history (vgdata.h): before every guest
 * write that translated code makes (a register Put, a store, a helper's
 * effects) the bytes it overwrites go to a ring in the tool's memory,
 * and Valgrind's own writes (system calls' buffers, signal frames, the
 * registers a system call or a signal changes) are kept as events. The
 * valgrind backend walks it back from where the history ends.
 *
 * A superblock's slots are laid out when it is translated, so a run
 * costs one reservation of its block (a load, a compare, two stores), a
 * load and a store or two per write, and the store of its exit: no
 * helper call, no count.
 * Nothing goes through the stream while the program runs; the ring is
 * written out once, at the end.
 */
#include "pub_tool_basics.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_vki.h"
#include "libvex_guest_amd64.h"
#include "libvex_ir.h"

#include "../vgdata.h"
#include "hwt_data.h"
#include "hwt_guest.h"


#define OFF(f) ((Int)__builtin_offsetof(VexGuestAMD64State, f))

/* The reader's idea of the guest state (vgdata.h) is this Valgrind's. */
_Static_assert(sizeof(VexGuestAMD64State) == HWT_VGD_STATE_SIZE, "state");
_Static_assert(OFF(guest_RAX) == HWT_VGD_RAX, "RAX");
_Static_assert(OFF(guest_R15) == HWT_VGD_RAX + 15 * 8, "R15");
_Static_assert(OFF(guest_CC_OP) == HWT_VGD_CC_OP, "CC_OP");
_Static_assert(OFF(guest_CC_NDEP) == HWT_VGD_CC_OP + 24, "CC_NDEP");
_Static_assert(OFF(guest_DFLAG) == HWT_VGD_DFLAG, "DFLAG");
_Static_assert(OFF(guest_RIP) == HWT_VGD_RIP, "RIP");
_Static_assert(OFF(guest_ACFLAG) == HWT_VGD_ACFLAG, "ACFLAG");
_Static_assert(OFF(guest_IDFLAG) == HWT_VGD_IDFLAG, "IDFLAG");
_Static_assert(OFF(guest_FS_CONST) == HWT_VGD_FS_CONST, "FS_CONST");
_Static_assert(OFF(guest_SSEROUND) == HWT_VGD_SSEROUND, "SSEROUND");
_Static_assert(OFF(guest_YMM0) == HWT_VGD_YMM0, "YMM0");
_Static_assert(OFF(guest_YMM16) == HWT_VGD_YMM0 + 16 * 32, "YMM16");
_Static_assert(OFF(guest_FTOP) == HWT_VGD_FTOP, "FTOP");
_Static_assert(OFF(guest_FPREG) == HWT_VGD_FPREG, "FPREG");
_Static_assert(OFF(guest_FPTAG) == HWT_VGD_FPTAG, "FPTAG");
_Static_assert(OFF(guest_FPROUND) == HWT_VGD_FPROUND, "FPROUND");
_Static_assert(OFF(guest_FC3210) == HWT_VGD_FC3210, "FC3210");
_Static_assert(OFF(guest_GS_CONST) == HWT_VGD_GS_CONST, "GS_CONST");
#define ROUND8(n) (((n) + 7u) & ~7u)
/* The smallest ring: a block is a few KiB at most (Valgrind translates
 * at most a few dozen instructions a superblock). */
#define RING_MIN (1u << 20)
/* Where the layouts stop growing (they are kept for every translation
 * made): the file is then not written. */
#define LAYOUTS_MAX (512u << 20)
/* The bytes past a signal frame's announced part that Valgrind writes
 * too (its private copy of the thread's state). */
#define SIGFRAME_PRIVATE 4096u

static Long clo_bytes;                 /* --hwt-data-bytes=N */
static const HChar *clo_out;           /* --hwt-data-out=FILE */

static Bool on;
/* The ring: translated code reserves a block at dptr, wrapping to ring
 * (wrap_end then says where the lap ended). */
static UChar *ring, *ring_end, *dptr, *wrap_end;

/* While a snapshot is taken (hwt_data_snapshot_begin), events go here
 * instead: the ring stays as the program left it. */
static UChar *snap, *snap_ptr, *snap_end;
static UChar *lay;
static SizeT lay_len, lay_cap;
static Bool lay_failed;

/* The superblock being instrumented. */
struct slot {
	UInt kind;           /* HWT_VGD_SLOT_*, | HWT_VGD_AFTER_ACCESS */
	UInt insn;           /* its instruction's index */
	Int stmt;            /* the statement it is for */
	UInt a, b;           /* REG: offset, size; MEM, UNKNOWN: size */
	UInt off;            /* in the block */
};
static struct slot *slots;
static UInt nslots, slots_cap;
static UInt block_size, next_slot, exit_no;
static Int stmt_no;
static IRTemp base;
static ULong cur_id;

Bool hwt_data_option(const HChar *arg)
{
	if (VG_BINT_CLO(arg, "--hwt-data-bytes", clo_bytes, 0,
			(Long)(1ULL << 40)))
		return True;
	if (VG_STR_CLO(arg, "--hwt-data-out", clo_out))
		return True;
	return False;
}

void hwt_data_usage(void)
{
	VG_(printf)("    --hwt-data-bytes=N     keep what the newest N bytes "
		    "of writes overwrote [0: nothing]\n"
		    "    --hwt-data-out=FILE    where they go at the end\n");
}

Bool hwt_data_on(void)
{
	return on;
}

void hwt_data_off(void)
{
	on = False;
}

/* ---- layouts --------------------------------------------------------------- */

static void lay_u(ULong v)
{
	if (lay_len + 10 > lay_cap) {
		SizeT cap = lay_cap ? 2 * lay_cap : 1u << 20;

		if (cap > LAYOUTS_MAX) {
			lay_failed = True;
			return;
		}
		lay = VG_(realloc)("hwt.data.layouts", lay, cap);
		lay_cap = cap;
	}
	while (v >= 0x80) {
		lay[lay_len++] = (UChar)(v | 0x80);
		v >>= 7;
	}
	lay[lay_len++] = (UChar)v;
}

static void lay_s(Long v)
{
	lay_u(((ULong)v << 1) ^ (ULong)(v >> 63));
}

/* ---- planning a superblock's slots -------------------------------------- */

/* Whether a Put of size bytes at offset changes a register a debugger
 * shows: the pc is known from the history, Valgrind's own fields are
 * not the program's. */
static Bool tracked(Int offset, Int size)
{
	if (offset >= OFF(guest_RAX) && offset + size <= OFF(guest_RIP))
		return True;
	if (offset >= OFF(guest_RIP) + 8 && offset + size <= OFF(guest_EMNOTE))
		return True;
	return offset == OFF(guest_GS_CONST) && size == 8;
}

static void add_slot(UInt kind, UInt insn, Int stmt, UInt a, UInt b)
{
	struct slot *s;

	if (nslots == slots_cap) {
		slots_cap = slots_cap ? 2 * slots_cap : 64;
		slots = VG_(realloc)("hwt.data.slots", slots,
				     slots_cap * sizeof(*slots));
	}
	s = &slots[nslots++];
	s->kind = kind;
	s->insn = insn;
	s->stmt = stmt;
	s->a = a;
	s->b = b;
	s->off = block_size;
	switch (kind & HWT_VGD_SLOT_KIND_MASK) {
	case HWT_VGD_SLOT_REG:
		block_size += ROUND8(b);
		break;
	case HWT_VGD_SLOT_MEM:
		block_size += 8 + ROUND8(a);
		break;
	default:
		block_size += 8;
		break;
	}
}

static Bool is_access(const IRStmt *st)
{
	switch (st->tag) {
	case Ist_Store:
	case Ist_StoreG:
	case Ist_LoadG:
	case Ist_CAS:
	case Ist_LLSC:
		return True;
	case Ist_WrTmp:
		return st->Ist.WrTmp.data->tag == Iex_Load;
	case Ist_Dirty:
		return st->Ist.Dirty.details->mFx != Ifx_None;
	default:
		return False;
	}
}

/* The slots of statement i of in, whose instruction is insn. */
static void plan(const IRSB *in, Int i, UInt insn, UInt after)
{
	const IRStmt *st = in->stmts[i];

	switch (st->tag) {
	case Ist_Put: {
		Int size = sizeofIRType(typeOfIRExpr(in->tyenv,
						      st->Ist.Put.data));

		if (tracked(st->Ist.Put.offset, size))
			add_slot(HWT_VGD_SLOT_REG | after, insn, i,
				 (UInt)st->Ist.Put.offset, (UInt)size);
		break;
	}
	case Ist_PutI: {
		const IRRegArray *d = st->Ist.PutI.details->descr;
		Int size = d->nElems * sizeofIRType(d->elemTy);

		if (tracked(d->base, size))
			add_slot(HWT_VGD_SLOT_REG | after, insn, i,
				 (UInt)d->base, (UInt)size);
		break;
	}
	case Ist_Store:
		add_slot(HWT_VGD_SLOT_MEM | after, insn, i,
			 (UInt)sizeofIRType(typeOfIRExpr(in->tyenv,
							 st->Ist.Store.data)),
			 0);
		break;
	case Ist_StoreG:
		add_slot(HWT_VGD_SLOT_UNKNOWN | after, insn, i,
			 (UInt)sizeofIRType(typeOfIRExpr(
				 in->tyenv, st->Ist.StoreG.details->data)), 0);
		break;
	case Ist_LLSC:
		if (st->Ist.LLSC.storedata)
			add_slot(HWT_VGD_SLOT_UNKNOWN | after, insn, i,
				 (UInt)sizeofIRType(typeOfIRExpr(
					 in->tyenv, st->Ist.LLSC.storedata)), 0);
		break;
	case Ist_CAS: {
		const IRCAS *c = st->Ist.CAS.details;
		UInt size = (UInt)sizeofIRType(typeOfIRExpr(in->tyenv,
							    c->expdLo));

		add_slot(HWT_VGD_SLOT_MEM | after, insn, i,
			 c->oldHi != IRTemp_INVALID ? 2 * size : size, 0);
		break;
	}
	case Ist_Dirty: {
		const IRDirty *d = st->Ist.Dirty.details;

		for (Int f = 0; f < d->nFxState; f++) {
			if (d->fxState[f].fx == Ifx_Read ||
			    d->fxState[f].fx == Ifx_None)
				continue;
			for (Int r = 0; r <= d->fxState[f].nRepeats; r++) {
				Int o = d->fxState[f].offset +
					r * d->fxState[f].repeatLen;

				if (tracked(o, d->fxState[f].size))
					add_slot(HWT_VGD_SLOT_REG | after,
						 insn, i, (UInt)o,
						 (UInt)d->fxState[f].size);
			}
		}
		if ((d->mFx == Ifx_Write || d->mFx == Ifx_Modify) &&
		    d->mSize > 0)
			add_slot(HWT_VGD_SLOT_MEM | after, insn, i,
				 (UInt)d->mSize, 0);
		break;
	}
	default:
		break;
	}
}

/* The translation's layout into the layouts (vgdata.h). */
static void describe(const IRSB *in, ULong id)
{
	UInt ninsn = 0, nexit = 0, slot = 0;
	Addr prev_end = 0;

	for (Int i = 0; i < in->stmts_used; i++) {
		ninsn += in->stmts[i]->tag == Ist_IMark;
		nexit += in->stmts[i]->tag == Ist_Exit;
	}
	lay_u(id);
	lay_u(ninsn);
	ninsn = 0;
	for (Int i = 0; i < in->stmts_used; i++) {
		const IRStmt *st = in->stmts[i];
		UInt accesses = 0;
		Addr a;

		if (st->tag != Ist_IMark)
			continue;
		a = (Addr)st->Ist.IMark.addr + (Addr)st->Ist.IMark.delta;
		if (ninsn++ == 0)
			lay_u(a);
		else
			lay_s((Long)(a - prev_end));
		lay_u((ULong)st->Ist.IMark.len << 1 |
		      (hwt_is_rep_string(a, st->Ist.IMark.len) ? 1 : 0));
		prev_end = a + st->Ist.IMark.len;
		/* Where it may fault: a fault at its only access leaves
		 * what comes after unwritten. */
		for (Int k = i + 1; k < in->stmts_used &&
				    in->stmts[k]->tag != Ist_IMark; k++)
			accesses += is_access(in->stmts[k]);
		lay_u(accesses);
	}
	lay_u(nexit);
	ninsn = 0;
	for (Int i = 0; i < in->stmts_used; i++) {
		if (in->stmts[i]->tag == Ist_IMark)
			ninsn++;
		else if (in->stmts[i]->tag == Ist_Exit)
			lay_u(ninsn);
	}
	lay_u(nslots);
	for (UInt s = 0; s < nslots; s++) {
		lay_u(slots[s].kind);
		lay_u(slots[s].insn);
		lay_u(slots[s].a);
		if ((slots[s].kind & HWT_VGD_SLOT_KIND_MASK) ==
		    HWT_VGD_SLOT_REG)
			lay_u(slots[s].b);
	}
	for (Int i = 0; i < in->stmts_used; i++) {
		if (in->stmts[i]->tag != Ist_Exit)
			continue;
		while (slot < nslots && slots[slot].stmt < i)
			slot++;
		lay_u(slot);
	}
	lay_u(block_size);
}

/* ---- emitting -------------------------------------------------------------- */

static IRTemp assign(IRSB *sb, IRType ty, IRExpr *e)
{
	IRTemp t = newIRTemp(sb->tyenv, ty);

	addStmtToIRSB(sb, IRStmt_WrTmp(t, e));
	return t;
}

static IRExpr *at(IRSB *sb, UInt off)
{
	return IRExpr_RdTmp(assign(sb, Ity_I64,
				   IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(base),
						IRExpr_Const(IRConst_U64(off)))));
}

static void store(IRSB *sb, UInt off, IRExpr *atom)
{
	addStmtToIRSB(sb, IRStmt_Store(Iend_LE, at(sb, off), atom));
}

static IRType type_of_size(UInt size)
{
	switch (size) {
	case 1: return Ity_I8;
	case 2: return Ity_I16;
	case 4: return Ity_I32;
	case 8: return Ity_I64;
	case 16: return Ity_V128;
	case 32: return Ity_V256;
	default: return Ity_INVALID;
	}
}

/* The guest state's size bytes at offset into the slot at off. */
static void keep_state(IRSB *sb, UInt off, Int offset, UInt size)
{
	IRType ty = type_of_size(size);

	if (ty != Ity_INVALID) {
		store(sb, off, IRExpr_RdTmp(assign(sb, ty,
						   IRExpr_Get(offset, ty))));
		return;
	}
	for (UInt k = 0; k < size; k++)
		store(sb, off + k, IRExpr_RdTmp(assign(
			sb, Ity_I8, IRExpr_Get(offset + (Int)k, Ity_I8))));
}

static void wrap(void)
{
	wrap_end = dptr;
	dptr = ring;
}

/* Called by translated code for a helper that writes memory (fxsave,
 * xsave): the old bytes, where the program can read them. */
static VG_REGPARM(3) void copy_old(HWord slot, HWord addr, HWord size)
{
	ULong *w = (ULong *)slot;

	if (!VG_(am_is_valid_for_client)(addr, size, VKI_PROT_READ)) {
		w[0] = 0;
		return;
	}
	w[0] = addr;
	VG_(memcpy)(w + 1, (void *)addr, size);
}

static ULong run_word(ULong id, UInt exit)
{
	return id << 20 | (ULong)exit << 4 | HWT_VGD_TAG_RUN;
}

void hwt_data_begin(IRSB *out, const IRSB *in, ULong id)
{
	UInt seen = 0, after = 0;
	IRTemp b0, need, lim, over, b1, next;
	IRDirty *d;

	nslots = 0;
	block_size = 0;
	for (Int i = 0; i < in->stmts_used; i++) {
		const IRStmt *st = in->stmts[i];

		if (st->tag == Ist_IMark) {
			seen++;
			after = 0;
			continue;
		}
		plan(in, i, seen ? seen - 1 : 0, after);
		if (is_access(st))
			after = HWT_VGD_AFTER_ACCESS;
	}
	block_size += 8;     /* the run's word */
	describe(in, id);
	cur_id = id;
	next_slot = 0;
	exit_no = 0;
	stmt_no = 0;

	/* Reserve the block, wrapping first where it does not fit. */
	b0 = assign(out, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64,
					       mkIRExpr_HWord((HWord)&dptr)));
	need = assign(out, Ity_I64, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(b0),
				IRExpr_Const(IRConst_U64(block_size))));
	lim = assign(out, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64,
				mkIRExpr_HWord((HWord)&ring_end)));
	over = assign(out, Ity_I1, IRExpr_Binop(Iop_CmpLT64U, IRExpr_RdTmp(lim),
						IRExpr_RdTmp(need)));
	d = unsafeIRDirty_0_N(0, "hwt_data_wrap", VG_(fnptr_to_fnentry)(wrap),
			      mkIRExprVec_0());
	d->guard = IRExpr_RdTmp(over);
	d->mFx = Ifx_Modify;
	d->mAddr = mkIRExpr_HWord((HWord)&dptr);
	d->mSize = 8;
	addStmtToIRSB(out, IRStmt_Dirty(d));
	b1 = assign(out, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64,
					       mkIRExpr_HWord((HWord)&dptr)));
	base = b1;
	next = assign(out, Ity_I64, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(b1),
				IRExpr_Const(IRConst_U64(block_size))));
	addStmtToIRSB(out, IRStmt_Store(Iend_LE, mkIRExpr_HWord((HWord)&dptr),
					IRExpr_RdTmp(next)));
	store(out, block_size - 8,
	      IRExpr_Const(IRConst_U64(run_word(id, HWT_VGD_EXIT_OPEN))));
}

void hwt_data_end(IRSB *out)
{
	store(out, block_size - 8,
	      IRExpr_Const(IRConst_U64(run_word(cur_id, exit_no))));
}

void hwt_data_before(IRSB *out, IRStmt *st)
{
	for (; next_slot < nslots && slots[next_slot].stmt == stmt_no;
	     next_slot++) {
		const struct slot *s = &slots[next_slot];

		if ((s->kind & HWT_VGD_SLOT_KIND_MASK) == HWT_VGD_SLOT_REG &&
		    st->tag != Ist_PutI) {
			/* A Put, or a helper's guest state effects. */
			keep_state(out, s->off, (Int)s->a, s->b);
			continue;
		}
		switch (st->tag) {
		case Ist_Dirty: {
			const IRDirty *g = st->Ist.Dirty.details;
			IRDirty *d;

			/* Nothing written unless the helper runs. */
			store(out, s->off, IRExpr_Const(IRConst_U64(0)));
			d = unsafeIRDirty_0_N(3, "hwt_copy_old",
					      VG_(fnptr_to_fnentry)(copy_old),
					      mkIRExprVec_3(at(out, s->off),
						deepCopyIRExpr(g->mAddr),
						mkIRExpr_HWord(s->a)));
			d->guard = deepCopyIRExpr(g->guard);
			d->mFx = Ifx_Read;
			d->mAddr = deepCopyIRExpr(g->mAddr);
			d->mSize = (Int)s->a;
			addStmtToIRSB(out, IRStmt_Dirty(d));
			break;
		}
		case Ist_PutI: {
			const IRRegArray *r = st->Ist.PutI.details->descr;
			UInt esize = (UInt)sizeofIRType(r->elemTy);

			for (Int e = 0; e < r->nElems; e++)
				keep_state(out, s->off + (UInt)e * esize,
					   r->base + e * (Int)esize, esize);
			break;
		}
		case Ist_Store: {
			IRType ty = typeOfIRExpr(out->tyenv,
						 st->Ist.Store.data);
			IRTemp old = assign(out, ty, IRExpr_Load(
				st->Ist.Store.end, ty,
				deepCopyIRExpr(st->Ist.Store.addr)));

			store(out, s->off, deepCopyIRExpr(st->Ist.Store.addr));
			store(out, s->off + 8, IRExpr_RdTmp(old));
			break;
		}
		case Ist_StoreG: {
			const IRStoreG *g = st->Ist.StoreG.details;

			store(out, s->off, IRExpr_RdTmp(assign(
				out, Ity_I64, IRExpr_ITE(deepCopyIRExpr(g->guard),
						      deepCopyIRExpr(g->addr),
					IRExpr_Const(IRConst_U64(0))))));
			break;
		}
		case Ist_LLSC:
			store(out, s->off, deepCopyIRExpr(st->Ist.LLSC.addr));
			break;
		default:
			break;      /* CAS: after it */
		}
	}
	if (st->tag == Ist_Exit)
		addStmtToIRSB(out, IRStmt_StoreG(Iend_LE, at(out,
			block_size - 8), IRExpr_Const(IRConst_U64(
				run_word(cur_id, exit_no++))),
			deepCopyIRExpr(st->Ist.Exit.guard)));
}

void hwt_data_after(IRSB *out, IRStmt *st)
{
	/* A compare-and-swap gives the old bytes it read: kept after it,
	 * whether it wrote or not. */
	if (st->tag == Ist_CAS) {
		const IRCAS *c = st->Ist.CAS.details;
		UInt k;

		for (k = 0; k < nslots; k++)
			if (slots[k].stmt == stmt_no)
				break;
		if (k < nslots) {
			UInt size = (UInt)sizeofIRType(
				typeOfIRTemp(out->tyenv, c->oldLo));

			store(out, slots[k].off, deepCopyIRExpr(c->addr));
			store(out, slots[k].off + 8, IRExpr_RdTmp(c->oldLo));
			if (c->oldHi != IRTemp_INVALID)
				store(out, slots[k].off + 8 + size,
				      IRExpr_RdTmp(c->oldHi));
		}
	}
	stmt_no++;
}

/* ---- events ----------------------------------------------------------------- */

/* Room for an event of len payload bytes: its payload, the word after
 * it written. */
static UChar *event(UInt kind, SizeT len)
{
	SizeT padded = ROUND8(len);
	UChar *p;

	if (snap) {
		/* A snapshot's own events, after the ring's. */
		if (padded + 8 > (SizeT)(snap_end - snap_ptr))
			return NULL;
		p = snap_ptr;
		snap_ptr += padded + 8;
		*(ULong *)(p + padded) = (ULong)padded << 8 |
					 (ULong)kind << 4 | HWT_VGD_TAG_EVENT;
		return p;
	}
	if (padded + 8 > (SizeT)(ring_end - ring) / 4)
		return NULL;
	if (dptr + padded + 8 > ring_end)
		wrap();
	p = dptr;
	*(ULong *)(p + padded) = (ULong)padded << 8 | (ULong)kind << 4 |
				 HWT_VGD_TAG_EVENT;
	dptr = p + padded + 8;
	return p;
}

void hwt_data_switch(Int from, Int to)
{
	ULong *p;

	if (!on || !(p = (ULong *)event(HWT_VGD_EV_THREAD, 16)))
		return;
	p[0] = (ULong)(UInt)from;
	p[1] = (ULong)(UInt)to;
}

void hwt_data_stop(Int os_tid, Addr pc)
{
	ULong *p;

	if (!on || !(p = (ULong *)event(HWT_VGD_EV_STOP, 16)))
		return;
	p[0] = (ULong)(UInt)os_tid;
	p[1] = pc;
}

void hwt_data_regs(ThreadId tid, Int os_tid, Bool end, UInt cause)
{
	static VexGuestAMD64State st;
	UChar *p;

	if (!on || !(p = event(end ? HWT_VGD_EV_END : HWT_VGD_EV_REGS,
			       16 + sizeof(st))))
		return;
	VG_(get_shadow_regs_area)(tid, (UChar *)&st, 0, 0, sizeof(st));
	((ULong *)p)[0] = (ULong)(UInt)os_tid;
	((ULong *)p)[1] = LibVEX_GuestAMD64_get_rflags(&st) |
			  (ULong)cause << HWT_VGD_CAUSE_SHIFT;
	VG_(memcpy)(p + 16, &st, sizeof(st));
}

static Int os_tid_of(ThreadId tid)
{
	if (tid == VG_INVALID_THREADID)
		tid = VG_(get_running_tid)();
	return tid == VG_INVALID_THREADID ? 0 : hwt_lwp(tid);
}

static void unknown(ThreadId tid, Addr a, SizeT len)
{
	ULong *p;

	if (!on || !len || !(p = (ULong *)event(HWT_VGD_EV_UNKNOWN, 24)))
		return;
	p[0] = (ULong)(UInt)os_tid_of(tid);
	p[1] = a;
	p[2] = len;
}

static void old_bytes(ThreadId tid, Addr a, SizeT len)
{
	UChar *p;

	if (!on || !len)
		return;
	if (!VG_(am_is_valid_for_client)(a, len, VKI_PROT_READ) ||
	    !(p = event(HWT_VGD_EV_MEM, 24 + len))) {
		unknown(tid, a, len);
		return;
	}
	((ULong *)p)[0] = (ULong)(UInt)os_tid_of(tid);
	((ULong *)p)[1] = a;
	((ULong *)p)[2] = len;
	VG_(memcpy)(p + 24, (void *)a, len);
}

static void on_pre_mem_write(CorePart part, ThreadId tid, const HChar *s,
			     Addr a, SizeT len)
{
	old_bytes(tid, a, len);
	/* A signal frame: Valgrind's private part past the announced one
	 * is the program's stack too. */
	if (part == Vg_CoreSignal) {
		SizeT extra = SIGFRAME_PRIVATE;

		while (extra && !VG_(am_is_valid_for_client)(a + len, extra,
							     VKI_PROT_READ))
			extra /= 2;
		old_bytes(tid, a + len, extra);
	}
}

static void on_new_mmap(Addr a, SizeT len, Bool rr, Bool ww, Bool xx,
			ULong di)
{
	unknown(VG_INVALID_THREADID, a, len);
}

static void on_new_brk(Addr a, SizeT len, ThreadId tid)
{
	unknown(tid, a, len);
}

static void on_gone(Addr a, SizeT len)
{
	unknown(VG_INVALID_THREADID, a, len);
}

static void on_remap(Addr from, Addr to, SizeT len)
{
	unknown(VG_INVALID_THREADID, from, len);
	unknown(VG_INVALID_THREADID, to, len);
}

/* ---- start and end -------------------------------------------------------- */

void hwt_data_init(void)
{
	if (!clo_bytes)
		return;
	if (!clo_out)
		VG_(fmsg_bad_option)("--hwt-data-out", "the data history needs "
				     "a file\n");
	if (clo_bytes < RING_MIN)
		clo_bytes = RING_MIN;
	ring = VG_(malloc)("hwt.data.ring", (SizeT)clo_bytes);
	ring_end = ring + clo_bytes;
	dptr = ring;
	on = True;
	VG_(track_pre_mem_write)(on_pre_mem_write);
	VG_(track_new_mem_brk)(on_new_brk);
	VG_(track_die_mem_brk)(on_gone);
	VG_(track_copy_mem_remap)(on_remap);
}

/* mmap and munmap are hwt_tool.c's hooks too: it calls these. */
void hwt_data_mmap(Addr a, SizeT len)
{
	on_new_mmap(a, len, False, False, False, 0);
}

void hwt_data_munmap(Addr a, SizeT len)
{
	on_gone(a, len);
}

static Bool write_all(Int fd, const void *p, SizeT len)
{
	const UChar *b = p;

	while (len) {
		Int n = VG_(write)(fd, b, len > (1u << 30) ? (Int)(1u << 30)
							     : (Int)len);

		if (n <= 0)
			return False;
		b += n;
		len -= (SizeT)n;
	}
	return True;
}

/* The file: the layouts, the ring oldest first, then extra's events. */
static void write_file(const UChar *extra, SizeT extra_len)
{
	ULong lens[2];
	SysRes sr;
	Int fd;
	Bool ok;

	sr = VG_(open)(clo_out, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_TRUNC,
		       0600);
	if (sr_isError(sr))
		return;
	fd = (Int)sr_Res(sr);
	lens[0] = lay_len;
	lens[1] = (wrap_end ? (ULong)(wrap_end - dptr) + (ULong)(dptr - ring)
			    : (ULong)(dptr - ring)) + extra_len;
	ok = write_all(fd, HWT_VGD_MAGIC, HWT_VGD_MAGIC_LEN) &&
	     write_all(fd, lens, sizeof(lens)) &&
	     write_all(fd, lay, lay_len);
	if (ok && wrap_end)
		ok = write_all(fd, dptr, (SizeT)(wrap_end - dptr));
	if (ok)
		ok = write_all(fd, ring, (SizeT)(dptr - ring));
	if (ok && extra_len)
		ok = write_all(fd, extra, extra_len);
	VG_(close)(fd);
	/* Half a file would be read as damaged: none is clearer. */
	if (!ok)
		VG_(unlink)(clo_out);
}

void hwt_data_finish(Bool keep, Int cur)
{
	if (!on)
		return;
	/* Whose the newest runs are. */
	hwt_data_switch(cur, 0);
	on = False;
	if (keep && !lay_failed)
		write_file(NULL, 0);
}

Bool hwt_data_snapshot_begin(UInt nthreads)
{
	SizeT cap = (SizeT)nthreads * (16 + sizeof(VexGuestAMD64State) + 8) +
		    16 + 8;

	if (!on || lay_failed || snap)
		return False;
	snap = VG_(malloc)("hwt.data.snapshot", cap);
	snap_ptr = snap;
	snap_end = snap + cap;
	return True;
}

void hwt_data_snapshot_write(Int cur)
{
	if (!snap)
		return;
	hwt_data_switch(cur, 0);
	write_file(snap, (SizeT)(snap_ptr - snap));
	VG_(free)(snap);
	snap = snap_ptr = snap_end = NULL;
}

void hwt_data_debugger_writes(Addr a, SizeT len)
{
	old_bytes(VG_INVALID_THREADID, a, len);
}
