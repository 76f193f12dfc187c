// SPDX-License-Identifier: BSD-2-Clause
/* run.c - record by single-stepping every thread.
 *
 * Each thread's history is every pc seen at its single-step stops, in
 * order, from its first stop on (what GDB's stepi shows). The per-step
 * path is PTRACE_SINGLESTEP, waitpid and one PTRACE_PEEKUSER of rip, plus
 * a few bytes appended to the thread's ring; everything else happens only
 * when the pc moved by one or two bytes (see on_step) or on rarer stops.
 *
 * Signals: a signal-delivery stop executes nothing. A caught signal is
 * injected with PTRACE_SINGLESTEP(sig) and the next stop is the handler's
 * first instruction, recorded as an asynchronous transfer. A signal whose
 * action is to terminate ends the recording as a fault: the thread stays
 * at the faulting instruction (the last of its history), every other
 * thread is stopped, and a core can be written before hwt_step_finish lets
 * the signal take effect.
 *
 * The same loop serves live control: while c->hooks is set, the handlers
 * ask it at each decision point (after a step, at a signal, at a
 * thread's death, before letting a thread go on) instead of deciding for
 * a run to the end. live.c provides the hooks and queues what they find
 * with the rules of collect/live.c, which drive the loop through
 * hwt_step_live_ops.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracer.h"

/* At a stop right after a syscall instruction, the syscall's number;
 * -1 after any other instruction. */
static long syscall_nr(pid_t tid)
{
	errno = 0;
	return ptrace(PTRACE_PEEKUSER, tid,
		      offsetof(struct user_regs_struct, orig_rax), 0);
}

/* At a stop two bytes past the last recorded pc: a system call that a
 * signal interrupted returns there with one of the kernel's restart codes
 * (ERESTARTSYS .. ERESTART_RESTARTBLOCK, never seen by the program) and is
 * re-executed from its syscall instruction unless a handler makes it fail
 * with EINTR. Either way it has not completed: not a step. */
static bool syscall_interrupted(const struct step_thread *t, uint64_t pc)
{
	long rax;

	if (!t->ring.started || pc - hwt_sw_ring_last_pc(&t->ring) != 2)
		return false;
	errno = 0;
	rax = ptrace(PTRACE_PEEKUSER, t->tid,
		     offsetof(struct user_regs_struct, rax), 0);
	return !errno && rax <= -512 && rax >= -516;
}

static bool changes_mappings(long nr)
{
	switch (nr) {
	case SYS_mmap:
	case SYS_mprotect:
	case SYS_munmap:
	case SYS_mremap:
	case SYS_remap_file_pages:
	case SYS_pkey_mprotect:
		return true;
	default:
		return false;
	}
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN ||
	       sig == SIGTTOU;
}

/* A failure (ESRCH) means the thread was killed meanwhile; waitpid
 * reports its death next, so there is nothing to do about it here. */
static void resume(struct step_collector *c, struct step_thread *t,
		   enum __ptrace_request request, int sig)
{
	if (request == PTRACE_SINGLESTEP)
		hwt_step_single(c, t, sig);
	else
		ptrace(request, t->tid, 0, sig);
	t->state = PT_RUNNING;
}

/* Let t go on, unless live control holds it (an event is queued on it,
 * its action is to stay stopped, or the process is being stopped). */
void hwt_step_go_on(struct step_collector *c, struct step_thread *t,
		  enum __ptrace_request request, int sig)
{
	if (c->hooks && !c->hooks->may_go(c, t)) {
		t->state = PT_STOPPED;
		return;
	}
	/* New threads get the watch setup; others have it already. */
	if (c->hooks) {
		hwt_step_dr_apply(c, t, NULL);
		if (request == PTRACE_SINGLESTEP)
			hwt_step_watch_arm(c, t);
	}
	resume(c, t, request, sig);
}

void hwt_step_set_wait_flags(struct step_collector *c)
{
	c->wait_flags = __WALL |
			(gettid() == c->base.tracer_tid ? __WNOTHREAD : 0);
}

static pid_t wait_any(const struct step_collector *c, int *status)
{
	pid_t tid;

	do
		tid = waitpid(-1, status, c->wait_flags);
	while (tid < 0 && errno == EINTR);
	return tid;
}

void hwt_step_record_pc(struct step_thread *t, uint64_t pc)
{
	if (!t->ring.started) {
		hwt_sw_ring_start(&t->ring, pc);
	} else {
		hwt_sw_ring_step(&t->ring, pc, t->handler_entry_next);
		t->handler_entry_next = false;
	}
	hwt_step_log_regs(t);
}

void hwt_step_log_regs(struct step_thread *t)
{
	if (!t->log_regs)
		return;
	if (t->now_valid ||
	    ptrace(PTRACE_GETREGS, t->tid, 0, &t->now) == 0) {
		struct user_fpregs_struct fp;

		hwt_reglog_append(&t->reglog, t->ring.insn_total - 1,
				  &t->now);
		/* The x87/SSE state too (within a few per cent of a step):
		 * p $xmm0 in the past. A thread whose state cannot be read starts
		 * that log again later, never misplaced. */
		if (ptrace(PTRACE_GETFPREGS, t->tid, 0, &fp) == 0)
			hwt_reglog_append(&t->fplog, t->ring.insn_total - 1,
					  &fp);
		hwt_step_memlog_step(t, t->ring.insn_total - 1, &t->now);
	} else {
		hwt_step_memlog_forget(t->memlog);
	}
	t->now_valid = false;
}

int hwt_step_read_stop(struct step_thread *t, uint64_t *pc)
{
	if (!t->log_regs)
		return hwt_step_read_pc(t->tid, pc);
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->now) < 0)
		return -errno;
	t->now_valid = true;
	*pc = t->now.rip;
	return 0;
}

static void set_end_from_status(struct step_collector *c, int status)
{
	memset(&c->base.end, 0, sizeof(c->base.end));
	if (WIFEXITED(status)) {
		c->base.end.reason = HWT_STOP_EXITED;
		c->base.end.status = WEXITSTATUS(status);
	} else {
		c->base.end.reason = HWT_STOP_SIGNALED;
		c->base.end.signal = WTERMSIG(status);
	}
}

/* A thread died. The leader's death is reported last, once the whole
 * thread group is gone, and ends the process. */
static int on_death(struct step_collector *c, pid_t tid, int status)
{
	struct step_thread *t = hwt_step_thread_find(c, tid);

	if (t) {
		hwt_step_tmp_bp_forget(c, t);
		hwt_step_thread_gone(c, t);
	}
	if (tid != c->base.pid)
		return t && c->hooks ? c->hooks->thread_died(c, t, status)
				    : PT_KEEP_GOING;
	set_end_from_status(c, status);
	hwt_step_threads_all_gone(c);
	return PT_PROCESS_ENDED;
}

/* A signal is about to be delivered to t at pc. */
static int on_signal_at(struct step_collector *c, struct step_thread *t, int sig,
			uint64_t pc)
{
	enum hwt_sig_action action;

	/* Live control's own wake-up signal executed nothing. */
	if (c->hooks && c->hooks->swallow(c, t, sig))
		return PT_KEEP_GOING;
	/* Traps (int3, a syscall that signalled itself) report after their
	 * instruction completed: the pc moved, and that is a step. */
	if (!t->ring.started ||
	    (pc != hwt_sw_ring_last_pc(&t->ring) && !syscall_interrupted(t, pc)))
		hwt_step_record_pc(t, pc);
	if (c->hooks)
		return c->hooks->signal(c, t, sig);
	/* Unreadable status: the thread is being killed; let it go. */
	if (hwt_proc_sig_action(t->tid, sig, &action, NULL) < 0)
		action = HWT_SIG_IGNORED;
	if (action == HWT_SIG_KILLS) {
		c->fault_thread = t;
		t->state = PT_STOPPED;
		t->pending_signal = sig;
		memset(&c->fault_siginfo, 0, sizeof(c->fault_siginfo));
		ptrace(PTRACE_GETSIGINFO, t->tid, 0, &c->fault_siginfo);
		memset(&c->base.end, 0, sizeof(c->base.end));
		c->base.end.reason = HWT_STOP_FAULT;
		c->base.end.signal = sig;
		c->base.end.tid = t->tid;
		c->base.end.pc = pc;
		return PT_PROCESS_FAULTED;
	}
	if (action == HWT_SIG_CAUGHT) {
		t->handler_entry_next = true;
		hwt_step_memlog_signal(t);
	}
	resume(c, t, PTRACE_SINGLESTEP, sig);
	return PT_KEEP_GOING;
}

static int on_signal(struct step_collector *c, struct step_thread *t, int sig)
{
	uint64_t pc;

	if (hwt_step_read_stop(t, &pc) < 0) {
		t->state = PT_RUNNING;   /* killed: wait reports it */
		return PT_KEEP_GOING;
	}
	return on_signal_at(c, t, sig, pc);
}

/* A SIGTRAP stop: normally the single-step trap after one instruction;
 * by_bp: the trap of our breakpoint after it (stepcheck.c). */
static int on_step(struct step_collector *c, struct step_thread *t,
		   bool by_bp, struct hwt_err *err)
{
	bool remap = false;
	uint64_t pc, delta;

	if (hwt_step_read_stop(t, &pc) < 0) {
		t->state = PT_RUNNING;
		return PT_KEEP_GOING;
	}
	delta = t->ring.started && !by_bp ?
		pc - hwt_sw_ring_last_pc(&t->ring) : 0;
	/* Only a move of one or two bytes can hide something other than a
	 * plain step: int3 (1 byte) or int $3 (2) raising the program's own
	 * SIGTRAP, or a syscall instruction (2 bytes) that may change the
	 * mappings or have sent SIGTRAP (which then merged with our trap).
	 * Asking the kernel only then keeps other steps at one extra
	 * syscall. The handler-entry stop is our own report. */
	if ((delta == 1 || delta == 2) && !t->handler_entry_next) {
		siginfo_t si;

		if (ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) == 0) {
			if (si.si_code == SI_KERNEL || si.si_code <= 0)
				return on_signal_at(c, t, SIGTRAP, pc);
			if (si.si_code == TRAP_BRKPT &&
			    syscall_interrupted(t, pc)) {
				hwt_step_go_on(c, t, PTRACE_SINGLESTEP, 0);
				return PT_KEEP_GOING;
			}
			remap = si.si_code == TRAP_BRKPT &&
				changes_mappings(syscall_nr(t->tid));
		}
	}
	if (hwt_step_check(c, t, pc) == STEP_GAP)
		hwt_step_log_regs(t);
	else
		hwt_step_record_pc(t, pc);
	if (remap) {
		int rc = hwt_step_modules_refresh(c, t->tid, err);

		if (rc < 0)
			return rc;
	}
	if (c->hooks)
		return c->hooks->after_step(c, t, pc);
	resume(c, t, PTRACE_SINGLESTEP, 0);
	return PT_KEEP_GOING;
}

/* The exec stop is reported under the leader's tid; when another thread
 * called execve, it takes over that tid. The old leader's history is
 * dropped then: one tid, one history, for everything downstream. */
static int on_exec(struct step_collector *c, pid_t tid, struct hwt_err *err)
{
	struct step_thread *t = hwt_step_thread_find(c, tid), *execer;
	unsigned long former = (unsigned long)tid;
	int rc;

	ptrace(PTRACE_GETEVENTMSG, tid, 0, &former);
	execer = hwt_step_thread_find(c, (pid_t)former);
	if (execer && execer != t) {
		if (t)
			hwt_step_thread_forget(c, t);
		hwt_step_thread_retid(c, execer, tid);
		t = execer;
	}
	if (!t && (rc = hwt_step_thread_add(c, tid, &t, err)) < 0)
		return rc;
	if ((rc = hwt_step_modules_refresh(c, tid, err)) < 0)
		return rc;
	/* The next stop is execve's return at the new entry point: recorded
	 * as the step from the syscall instruction into the new image. */
	hwt_step_go_on(c, t, PTRACE_SINGLESTEP, 0);
	return PT_KEEP_GOING;
}

static int on_event(struct step_collector *c, struct step_thread *t, int event,
		    int sig, struct hwt_err *err)
{
	unsigned long msg = 0;
	struct step_thread *child;
	uint64_t pc;
	int rc;

	switch (event) {
	case PTRACE_EVENT_CLONE:
		/* The new thread may have reported its first stop already. */
		if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) == 0 &&
		    !hwt_step_thread_find(c, (pid_t)msg) &&
		    (rc = hwt_step_thread_add(c, (pid_t)msg, &child, err)) < 0)
			return rc;
		break;
	case PTRACE_EVENT_EXIT: {
		bool ends = syscall_nr(t->tid) == SYS_exit_group ||
			    hwt_step_threads_live(c) == 1;

		t->exiting = true;
		/* Last look at the mappings, once per process exit. */
		if (ends && (rc = hwt_step_modules_refresh(c, t->tid, err)) < 0)
			return rc;
		if (ends && c->hooks)
			return c->hooks->exiting(c, t);
		hwt_step_go_on(c, t, PTRACE_CONT, 0);
		return PT_KEEP_GOING;
	}
	case PTRACE_EVENT_STOP:
		if (c->hooks && t->interrupt_pending)
			return c->hooks->interrupt_stop(c, t);
		/* A new thread's first stop starts its history; the first pc
		 * is the instruction after the clone syscall. */
		if (!t->ring.started && hwt_step_read_pc(t->tid, &pc) == 0) {
			hwt_sw_ring_start(&t->ring, pc);
			hwt_step_log_regs(t);
			if (c->hooks && t->announce)
				return c->hooks->born(c, t);
		}
		if (is_stop_signal(sig)) {
			/* Group-stop: stay stopped until SIGCONT. */
			ptrace(PTRACE_LISTEN, t->tid, 0, 0);
			t->state = PT_LISTENING;
			return PT_KEEP_GOING;
		}
		break;
	default:
		break;
	}
	hwt_step_go_on(c, t, PTRACE_SINGLESTEP, 0);
	return PT_KEEP_GOING;
}

static int on_wait_status(struct step_collector *c, pid_t tid, int status,
			  struct hwt_err *err)
{
	struct step_thread *t;
	int sig, event, rc;

	if (WIFEXITED(status) || WIFSIGNALED(status))
		return on_death(c, tid, status);
	if (!WIFSTOPPED(status))
		return PT_KEEP_GOING;
	sig = WSTOPSIG(status);
	event = status >> 16;
	if (event == PTRACE_EVENT_EXEC) {
		/* The old image, breakpoints and all, is gone. */
		for (size_t i = 0; i < c->nthreads; i++)
			hwt_step_tmp_bp_forget(c, c->threads[i]);
		return on_exec(c, tid, err);
	}
	t = hwt_step_thread_find(c, tid);
	/* An unknown tracee is a new thread reporting before its parent's
	 * clone event. */
	if (!t && (rc = hwt_step_thread_add(c, tid, &t, err)) < 0)
		return rc;
	t->state = PT_STOPPED;
	t->event_stop = event != 0;
	if (c->ntmp_bps) {
		uint64_t pc;

		switch (hwt_step_tmp_bp_stop(c, t, !event && sig == SIGTRAP,
					     &pc)) {
		case STEP_BP_NOTHING_RAN:
			hwt_step_go_on(c, t, PTRACE_SINGLESTEP, 0);
			return PT_KEEP_GOING;
		case STEP_BP_STEPPED:
			return on_step(c, t, true, err);
		case STEP_BP_NONE:
			break;
		}
	}
	if (event)
		return on_event(c, t, event, sig, err);
	if (sig == SIGTRAP)
		return on_step(c, t, false, err);
	return on_signal(c, t, sig);
}

static bool any_unstopped(const struct step_collector *c)
{
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i]->state == PT_RUNNING ||
		    c->threads[i]->state == PT_LISTENING)
			return true;
	return false;
}

/* After a fault: bring every other thread to a stop so the process can be
 * examined and its core written. Steps completed meanwhile are recorded;
 * signals that arrive are held. */
static int quiesce(struct step_collector *c, struct hwt_err *err)
{
	for (size_t i = 0; i < c->nthreads; i++) {
		struct step_thread *t = c->threads[i];

		if (t->state == PT_RUNNING || t->state == PT_LISTENING)
			ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
	}
	while (any_unstopped(c)) {
		struct step_thread *t, *child;
		unsigned long msg = 0;
		int status, sig, event, rc;
		uint64_t pc;
		pid_t tid = wait_any(c, &status);

		if (tid < 0)
			return hwt_err_set(err, errno,
					   "waiting for threads to stop: %s",
					   strerror(errno));
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (on_death(c, tid, status) == PT_PROCESS_ENDED)
				return PT_PROCESS_ENDED;   /* killed from outside */
			continue;
		}
		t = hwt_step_thread_find(c, tid);
		if (!t && (rc = hwt_step_thread_add(c, tid, &t, err)) < 0)
			return rc;
		t->state = PT_STOPPED;
		sig = WSTOPSIG(status);
		event = status >> 16;
		if (event == PTRACE_EVENT_CLONE) {
			if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) == 0 &&
			    !hwt_step_thread_find(c, (pid_t)msg) &&
			    (rc = hwt_step_thread_add(c, (pid_t)msg, &child,
						    err)) < 0)
				return rc;
			continue;
		}
		t->exiting |= event == PTRACE_EVENT_EXIT;
		if (hwt_step_read_pc(tid, &pc) < 0)
			continue;
		/* Event stops execute nothing; a step stop executed one
		 * instruction; a signal stop may follow a trap's step. */
		if (!t->ring.started) {
			hwt_sw_ring_start(&t->ring, pc);
			hwt_step_log_regs(t);
		} else if (!event && (sig == SIGTRAP ||
				    pc != hwt_sw_ring_last_pc(&t->ring)))
			hwt_step_record_pc(t, pc);
		if (!event && sig != SIGTRAP)
			t->pending_signal = sig;
	}
	return PT_PROCESS_FAULTED;
}

/* Recording cannot go on: kill the program, keep what was recorded. */
static int abandon(struct step_collector *c, int rc)
{
	hwt_step_kill_and_reap(c);
	hwt_step_threads_seal(c, NULL);
	return rc;
}

int hwt_step_loop(struct step_collector *c, struct hwt_err *err)
{
	for (;;) {
		int status, rc;
		pid_t tid;

		if (c->hooks && c->rules.stopping && !any_unstopped(c))
			return PT_ALL_STOPPED;
		/* One relaxed load per stop: the helper thread sets it. */
		if (c->hooks && !c->rules.stopping &&
		    atomic_load_explicit(&c->interrupt_fired,
					 memory_order_relaxed))
			return PT_LIVE_EVENT;
		tid = wait_any(c, &status);
		if (tid < 0)
			return hwt_err_set(err, errno,
					   "waiting for the traced program: %s",
					   strerror(errno));
		rc = on_wait_status(c, tid, status, err);
		if (rc == PT_KEEP_GOING ||
		    (rc == PT_LIVE_EVENT && c->rules.stopping))
			continue;
		return rc;
	}
}

int hwt_step_run(struct hwt_collector *base, struct hwt_err *err)
{
	struct step_collector *c = step_of(base);
	int rc;

	hwt_step_set_wait_flags(c);
	resume(c, c->threads[0], PTRACE_SINGLESTEP, 0);
	rc = hwt_step_loop(c, err);
	if (rc == PT_PROCESS_FAULTED)
		rc = quiesce(c, err);
	if (rc < 0)
		return abandon(c, rc);
	base->state = rc == PT_PROCESS_FAULTED ? HWT_COLLECTOR_FAULTED
					       : HWT_COLLECTOR_ENDED;
	if ((rc = hwt_step_threads_seal(c, err)) < 0)
		return abandon(c, rc);
	return 0;
}

int hwt_step_finish(struct hwt_collector *base, struct hwt_err *err)
{
	struct step_collector *c = step_of(base);
	struct step_thread *f = c->fault_thread;

	hwt_step_set_wait_flags(c);
	/* The faulting thread takes its signal; the others are released
	 * too, with any signal held for them, as they would be running in a
	 * crash without a tracer. */
	resume(c, f, PTRACE_CONT, f->pending_signal);
	for (size_t i = 0; i < c->nthreads; i++)
		if (c->threads[i]->state == PT_STOPPED)
			resume(c, c->threads[i], PTRACE_CONT,
			       c->threads[i]->pending_signal);
	for (;;) {
		int status;
		pid_t tid = wait_any(c, &status);

		if (tid < 0) {
			base->state = HWT_COLLECTOR_ENDED;
			return hwt_err_set(err, errno,
					   "waiting for the program to end: %s",
					   strerror(errno));
		}
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (on_death(c, tid, status) == PT_PROCESS_ENDED) {
				base->state = HWT_COLLECTOR_ENDED;
				return 0;
			}
		} else if (WIFSTOPPED(status)) {
			ptrace(PTRACE_CONT, tid, 0, 0);
		}
	}
}

void hwt_step_kill_and_reap(struct step_collector *c)
{
	if (c->base.state == HWT_COLLECTOR_ENDED)
		return;
	hwt_step_set_wait_flags(c);
	kill(c->base.pid, SIGKILL);
	/* Tracees outside the thread group (clone without CLONE_THREAD). A
	 * thread held at its exit stop (stop_before_exit) is not woken by
	 * SIGKILL: it is let go to finish. */
	for (size_t i = 0; i < c->nthreads; i++) {
		if (c->threads[i]->state == PT_GONE)
			continue;
		kill(c->threads[i]->tid, SIGKILL);
		if (c->threads[i]->exiting)
			ptrace(PTRACE_CONT, c->threads[i]->tid, 0, 0);
	}
	for (;;) {
		int status;
		pid_t tid = wait_any(c, &status);

		if (tid < 0)
			break;
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (on_death(c, tid, status) == PT_PROCESS_ENDED)
				break;
		} else if (WIFSTOPPED(status)) {
			ptrace(PTRACE_CONT, tid, 0, 0);
		}
	}
	c->base.state = HWT_COLLECTOR_ENDED;
}
