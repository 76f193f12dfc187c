// SPDX-License-Identifier: BSD-2-Clause
/* stepcheck.c - every single step checked against the code it stepped.
 *
 * A straight-line instruction at X of length L must stop at X+L (a
 * rep-prefixed string instruction may also stop at X again, one stop per
 * iteration); signals arrive as signal stops, not here. Some hypervisors
 * lose the single-step trap of an instruction they emulate (cpuid is the
 * one seen): the thread stops one instruction late, silently. So:
 *
 * - Repair. A step from a straight-line instruction that lands anywhere
 *   but X+L is re-read from fresh code bytes (the code may have been
 *   rewritten), then walked: when the instructions from X+L on are
 *   straight-line ones that reach the landing pc, they were run without
 *   a stop and are recorded as such. Otherwise the history gets a gap
 *   there (a jump in first_seq, docs/swtrace.md) rather than a step that
 *   did not happen (one lost instruction stands for what is unknown).
 *   Either way the kind of instruction is learnt (see below). Registers
 *   and memory of the repaired instructions
 *   were never seen: the memory log forgets before them and the register
 *   log restarts after them.
 * - Prevention. An instruction whose trap this machine loses (cpuid,
 *   when the probe found so: os/machine.c; any other kind once a repair
 *   has named it) is stepped by a breakpoint after it instead: an int3
 *   written at X+L and the thread continued. The breakpoint exists only
 *   while its thread runs; any stop of that thread takes it out again. A
 *   thread that meets another's breakpoint executed nothing and steps
 *   again.
 *
 * Decoded instructions are cached by address; the cache is dropped when
 * the mappings change, and a mismatch always decodes afresh.
 */
#include <Zydis/Zydis.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "os/machine.h"
#include "tracer.h"

/* Instructions a lost trap may hide, at most: a repair further than this
 * is not believed. */
#define MAX_SKIPPED 8u
#define INT3 0xccu

static enum step_flow classify(const ZydisDecodedInstruction *insn)
{
	switch (insn->meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_CALL:
	case ZYDIS_CATEGORY_RET:
	case ZYDIS_CATEGORY_SYSCALL:
	case ZYDIS_CATEGORY_SYSRET:
	case ZYDIS_CATEGORY_INTERRUPT:
	case ZYDIS_CATEGORY_SYSTEM:
		return STEP_FLOW_OTHER;
	default:
		break;
	}
	switch (insn->mnemonic) {
	case ZYDIS_MNEMONIC_XBEGIN:   /* aborts land at the fallback */
	case ZYDIS_MNEMONIC_XABORT:
	case ZYDIS_MNEMONIC_XEND:
	case ZYDIS_MNEMONIC_UD0:
	case ZYDIS_MNEMONIC_UD1:
	case ZYDIS_MNEMONIC_UD2:
		return STEP_FLOW_OTHER;
	default:
		break;
	}
	if (insn->meta.category == ZYDIS_CATEGORY_STRINGOP &&
	    (insn->attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE |
				 ZYDIS_ATTRIB_HAS_REPNE)))
		return STEP_FLOW_REP;
	return STEP_FLOW_STRAIGHT;
}

static bool decode(pid_t tid, uint64_t pc, struct step_code_entry *e)
{
	static ZydisDecoder dec;
	static bool ready;
	ZydisDecodedInstruction insn;
	uint8_t code[HWT_X86_CODE_MAX];
	size_t n = hwt_x86_code_read(tid, pc, code);

	if (!ready) {
		ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64,
				 ZYDIS_STACK_WIDTH_64);
		ready = true;
	}
	if (!n || !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&dec, NULL, code, n,
							&insn)))
		return false;
	e->pc = pc;
	e->len = insn.length;
	e->flow = (uint8_t)classify(&insn);
	e->mnemonic = (uint16_t)insn.mnemonic;
	return true;
}

static struct step_code_entry *slot(struct step_collector *c, uint64_t pc)
{
	return &c->code[(pc ^ pc >> 12) % STEP_CODE_SLOTS];
}

/* The instruction at pc as decoded earlier, or now; NULL when its code
 * cannot be read or decoded. */
static const struct step_code_entry *code_at(struct step_collector *c,
					     pid_t tid, uint64_t pc,
					     bool fresh)
{
	struct step_code_entry *e = slot(c, pc);

	if (e->len && e->pc == pc && !fresh)
		return e;
	e->len = 0;
	return decode(tid, pc, e) ? e : NULL;
}

void hwt_step_code_forget(struct step_collector *c)
{
	memset(c->code, 0, sizeof(c->code));
}

static bool lands_right(const struct step_code_entry *e, uint64_t pc)
{
	return e->flow == STEP_FLOW_OTHER || pc == e->pc + e->len ||
	       (e->flow == STEP_FLOW_REP && pc == e->pc);
}

static bool trap_lost_on(const struct step_collector *c, uint16_t mnemonic)
{
	for (size_t i = 0; i < c->nlost_kinds; i++)
		if (c->lost_kinds[i] == mnemonic)
			return true;
	return false;
}

static void learn_lost(struct step_collector *c, uint16_t mnemonic)
{
	if (!trap_lost_on(c, mnemonic) && c->nlost_kinds < STEP_LOST_KINDS)
		c->lost_kinds[c->nlost_kinds++] = mnemonic;
}

void hwt_step_check_init(struct step_collector *c)
{
	if (hwt_machine()->cpuid_trap_lost)
		learn_lost(c, ZYDIS_MNEMONIC_CPUID);
}

enum step_check hwt_step_check(struct step_collector *c,
			       struct step_thread *t, uint64_t pc)
{
	const struct step_code_entry *e;
	uint64_t from, skipped[MAX_SKIPPED], at;
	uint16_t mnemonic;
	size_t n = 0;

	if (!t->ring.started || t->handler_entry_next)
		return STEP_OK;
	from = hwt_sw_ring_last_pc(&t->ring);
	e = code_at(c, t->tid, from, false);
	if (!e || lands_right(e, pc))
		return STEP_OK;
	e = code_at(c, t->tid, from, true);
	if (!e || lands_right(e, pc))
		return STEP_OK;
	mnemonic = e->mnemonic;
	at = from + e->len;
	while (at != pc && n < MAX_SKIPPED) {
		const struct step_code_entry *f = code_at(c, t->tid, at, true);

		if (!f || f->flow != STEP_FLOW_STRAIGHT)
			break;
		skipped[n++] = at;
		at += f->len;
	}
	/* Nothing is known of what the unseen instructions stored. */
	if (t->memlog)
		hwt_step_memlog_forget(t->memlog);
	learn_lost(c, mnemonic);
	if (at != pc) {
		hwt_sw_ring_gap(&t->ring, pc, 1);
		t->step_gaps++;
		return STEP_GAP;
	}
	for (size_t i = 0; i < n; i++)
		hwt_sw_ring_step(&t->ring, skipped[i], false);
	t->step_repairs++;
	return STEP_OK;
}

static struct step_tmp_bp *tmp_bp_at(struct step_collector *c, uint64_t addr)
{
	for (size_t i = 0; i < c->ntmp_bps; i++)
		if (c->tmp_bps[i].addr == addr)
			return &c->tmp_bps[i];
	return NULL;
}

static bool poke_byte(pid_t tid, uint64_t addr, uint8_t byte, uint8_t *old)
{
	long word;

	errno = 0;
	word = ptrace(PTRACE_PEEKDATA, tid, (void *)(uintptr_t)addr, 0);
	if (errno)
		return false;
	if (old)
		*old = (uint8_t)word;
	word = (long)(((unsigned long)word & ~0xfful) | byte);
	return ptrace(PTRACE_POKEDATA, tid, (void *)(uintptr_t)addr,
		      (void *)word) == 0;
}

/* Take t's breakpoint out (the byte goes back once no thread uses it). */
static void tmp_bp_drop(struct step_collector *c, struct step_thread *t,
			bool restore)
{
	struct step_tmp_bp *b = t->tmp_bp ? tmp_bp_at(c, t->tmp_bp) : NULL;

	t->tmp_bp = 0;
	if (!b || --b->users)
		return;
	if (restore)
		poke_byte(t->tid, b->addr, b->orig, NULL);
	*b = c->tmp_bps[--c->ntmp_bps];
}

void hwt_step_tmp_bp_forget(struct step_collector *c, struct step_thread *t)
{
	tmp_bp_drop(c, t, false);
}

int hwt_step_single(struct step_collector *c, struct step_thread *t, int sig)
{
	const struct step_code_entry *e;
	struct step_tmp_bp *b;
	uint64_t pc;

	if (sig || !c->nlost_kinds || c->ntmp_bps == STEP_TMP_BPS ||
	    hwt_step_read_pc(t->tid, &pc) < 0 ||
	    !(e = code_at(c, t->tid, pc, false)) ||
	    e->flow != STEP_FLOW_STRAIGHT || !trap_lost_on(c, e->mnemonic))
		return hwt_os_singlestep(t->tid, sig);
	pc += e->len;
	if (!(b = tmp_bp_at(c, pc))) {
		b = &c->tmp_bps[c->ntmp_bps];
		if (!poke_byte(t->tid, pc, INT3, &b->orig))
			return hwt_os_singlestep(t->tid, sig);
		b->addr = pc;
		b->users = 0;
		c->ntmp_bps++;
	}
	b->users++;
	t->tmp_bp = pc;
	if (ptrace(PTRACE_CONT, t->tid, 0, 0) < 0) {
		int rc = -errno;

		tmp_bp_drop(c, t, true);
		return rc;
	}
	return 0;
}

enum step_bp_stop hwt_step_tmp_bp_stop(struct step_collector *c,
				       struct step_thread *t, bool trap,
				       uint64_t *pc)
{
	uint64_t own = t->tmp_bp;
	bool at_bp;

	if (!c->ntmp_bps)
		return STEP_BP_NONE;
	at_bp = trap && hwt_step_read_pc(t->tid, pc) == 0 &&
		tmp_bp_at(c, *pc - 1);
	tmp_bp_drop(c, t, true);
	if (!at_bp)
		return STEP_BP_NONE;
	/* The int3 ran: the thread is at the breakpoint's address. */
	*pc -= 1;
	ptrace(PTRACE_POKEUSER, t->tid, offsetof(struct user_regs_struct, rip),
	       (void *)(uintptr_t)*pc);
	t->now_valid = false;
	return *pc == own ? STEP_BP_STEPPED : STEP_BP_NOTHING_RAN;
}
