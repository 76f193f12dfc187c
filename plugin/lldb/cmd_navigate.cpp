// SPDX-License-Identifier: BSD-2-Clause
// cmd_navigate.cpp - reverse and forward navigation in a loaded history:
// `hwt reverse-step|reverse-next|reverse-finish|reverse-stepi|
// reverse-continue`, their forward forms and `hwt goto N`. The cursor
// (hwt_cursor_*) moves; the position is shown in LLDB's stop format, a
// frame line and the source around it.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#include "commands.h"

namespace hwt_lldb {

namespace {

enum class Move { Step, Next, Finish, StepI, Continue, Goto };

// The thread navigation works on: -t, else the target process's selected
// thread when the trace has it, else the thread that stopped the
// recording (a crash), else the first.
bool PickThread(lldb::SBDebugger &dbg, const Command &cmd, const Args &args,
		Session &s, long *idx, lldb::SBCommandReturnObject &result)
{
	if (!ThreadOption(cmd, args, s, idx, result))
		return false;
	if (*idx >= 0)
		return true;
	lldb::SBThread th = CurrentTarget(dbg).GetProcess().GetSelectedThread();
	if (th.IsValid())
		*idx = s.FindThread((int64_t)th.GetThreadID());
	if (*idx < 0 && s.Bundle()->stop_reason == HWT_STOP_FAULT)
		*idx = s.FindThread(s.Bundle()->stop_tid);
	if (*idx < 0 && s.Bundle()->nthreads)
		*idx = 0;
	if (*idx < 0)
		return Fail(result, cmd.name, "the trace has no instruction "
			    "history to move in");
	return true;
}

const char *BaseName(const char *path)
{
	const char *p = strrchr(path, '/');

	return p ? p + 1 : path;
}

// "frame #0: 0xADDR prog`func at file.c:LINE" and the source around it.
std::string ShowPosition(lldb::SBDebugger &dbg, Session &s, size_t t,
			 hwt_cursor *c)
{
	hwt_history *h = nullptr;
	hwt_item it;
	hwt_symbol sym = {};
	hwt_err err = {};
	char line[1024];
	std::string text;
	uint64_t pos = hwt_cursor_pos(c);

	if (s.History(t, &h, &err) || hwt_history_get(h, pos, &it, &err))
		return std::string("hwt: ") + err.msg + "\n";
	snprintf(line, sizeof(line), "hwt: thread %s, item %" PRIu64 " of %"
		 PRIu64 "\n", s.ThreadName(t).c_str(), pos,
		 hwt_history_count(h));
	text += line;
	bool known = hwt_image_symbolize(s.Image(t), it.addr, &sym) == 0;
	snprintf(line, sizeof(line), "frame #0: 0x%016" PRIx64 " %s`%s",
		 it.addr, known && sym.module ? BaseName(sym.module) : "???",
		 known && sym.function ? sym.function : "???");
	text += line;
	// Without a line, the offset is what places the instruction.
	if (known && sym.function && !sym.file && it.addr != sym.func_addr) {
		snprintf(line, sizeof(line), " + %" PRIu64,
			 it.addr - sym.func_addr);
		text += line;
	}
	if (known && sym.file) {
		snprintf(line, sizeof(line), " at %s:%d", BaseName(sym.file),
			 sym.line);
		text += line;
	}
	text += "\n";
	if (known && sym.file && sym.line > 0) {
		lldb::SBStream src;

		dbg.GetSourceManager().DisplaySourceLinesWithLineNumbers(
			lldb::SBFileSpec(sym.file, false), (uint32_t)sym.line,
			3, 3, "->", src);
		if (src.GetSize())
			text.append(src.GetData(), src.GetSize());
	}
	return text;
}

// Enabled breakpoint locations of the target: where `continue` stops.
std::vector<uint64_t> BreakpointAddresses(lldb::SBTarget target)
{
	std::vector<uint64_t> addrs;

	for (uint32_t i = 0; i < target.GetNumBreakpoints(); i++) {
		lldb::SBBreakpoint bp = target.GetBreakpointAtIndex(i);

		if (!bp.IsEnabled())
			continue;
		for (size_t j = 0; j < bp.GetNumLocations(); j++) {
			lldb::SBBreakpointLocation loc = bp.GetLocationAtIndex(j);
			lldb::addr_t a = loc.GetLoadAddress();

			if (loc.IsEnabled() && a != LLDB_INVALID_ADDRESS)
				addrs.push_back(a);
		}
	}
	return addrs;
}

// Under hwt-server the server's own reverse execution moves the process,
// so that LLDB's frames and variables follow the cursor: a one-shot
// breakpoint on the cursor's thread at the instruction it reached, then
// `process continue [--reverse]` (the server's bc / c). The server stops
// at the nearest hit of that address, which is the cursor's item unless
// the address runs again in between (recursion): then the positions part
// and this says so.
bool DriveServer(lldb::SBDebugger &dbg, Session &s, size_t t, hwt_cursor *c,
		 uint64_t from, std::string *text, std::string *why)
{
	lldb::SBTarget target = CurrentTarget(dbg);
	lldb::SBProcess proc = target.GetProcess();
	uint64_t pos = hwt_cursor_pos(c);
	hwt_history *h;
	hwt_item it;
	hwt_err err = {};
	std::string out, cmd_err;
	bool async = dbg.GetAsync();

	if (pos == from)
		return true;
	if (s.History(t, &h, &err) || hwt_history_get(h, pos, &it, &err)) {
		*why = err.msg;
		return false;
	}
	lldb::SBBreakpoint bp = target.BreakpointCreateByAddress(it.addr);
	bp.SetOneShot(true);
	bp.SetThreadID((lldb::tid_t)s.Bundle()->threads[t].tid);
	// A recorded past takes no signal: the one the thread stopped with
	// (the crash) is held back for this resume, else LLDB refuses to run
	// in reverse ("can't deliver signals").
	lldb::SBThread th = proc.GetSelectedThread();
	lldb::SBUnixSignals sigs = proc.GetUnixSignals();
	int signo = th.GetStopReason() == lldb::eStopReasonSignal ?
		(int)th.GetStopReasonDataAtIndex(0) : 0;
	bool suppressed = signo && sigs.GetShouldSuppress(signo);
	if (signo)
		sigs.SetShouldSuppress(signo, true);
	// Synchronous, so that the stop is known before the check below.
	dbg.SetAsync(false);
	bool ok = RunCommand(dbg, pos < from ? "process continue --reverse" :
			     "process continue", &out, &cmd_err);
	dbg.SetAsync(async);
	if (signo)
		sigs.SetShouldSuppress(signo, suppressed);
	target.BreakpointDelete(bp.GetID());
	if (!ok) {
		*why = "hwt-server did not move: " + cmd_err;
		return false;
	}
	*text += out;
	uint64_t pc = proc.GetSelectedThread().GetFrameAtIndex(0).GetPC();
	if (pc != it.addr) {
		char buf[160];

		snprintf(buf, sizeof(buf), "hwt-server stopped at 0x%" PRIx64
			 ", not at 0x%" PRIx64 " where the history position is",
			 pc, it.addr);
		*why = buf;
		return false;
	}
	return true;
}

bool Navigate(lldb::SBDebugger &dbg, const Command &cmd, const Args &args,
	      lldb::SBCommandReturnObject &result, Move move, hwt_dir dir)
{
	Session *s = RequireSession(dbg, cmd, result);
	hwt_cursor *c;
	hwt_err err = {};
	long t;
	int rc = 0;

	if (!s || !PickThread(dbg, cmd, args, *s, &t, result))
		return false;
	if (s->Cursor((size_t)t, &c, &err))
		return Fail(result, cmd.name, err.msg);
	uint64_t from = hwt_cursor_pos(c);
	switch (move) {
	case Move::Step:
		rc = hwt_cursor_step(c, dir, &err);
		break;
	case Move::Next:
		rc = hwt_cursor_next(c, dir, &err);
		break;
	case Move::Finish:
		rc = hwt_cursor_finish(c, dir, &err);
		break;
	case Move::StepI:
		rc = hwt_cursor_stepi(c, dir, &err);
		break;
	case Move::Continue: {
		std::vector<uint64_t> addrs =
			BreakpointAddresses(CurrentTarget(dbg));

		rc = hwt_cursor_continue(c, dir, addrs.data(), addrs.size(),
					 &err);
		break;
	}
	case Move::Goto: {
		uint64_t n;

		if (!ParseNumber(result, cmd, "N", args.pos[0], UINT64_MAX, &n))
			return false;
		rc = hwt_cursor_goto(c, n, &err);
		break;
	}
	}
	if (rc < 0)
		return Fail(result, cmd.name, err.msg);
	std::string text;
	if (rc == HWT_BOUNDARY)
		text = dir == HWT_BACKWARD ?
			"hwt: reached the beginning of the recorded history "
			"(or a gap in it)\n" :
			"hwt: reached the end of the recorded history "
			"(or a gap in it)\n";
	else if (rc == HWT_HIT)
		text = "hwt: stopped at a breakpoint\n";
	text += ShowPosition(dbg, *s, (size_t)t, c);
	std::string status, why;
	if (HwtServer(dbg, &status)) {
		bool moved = DriveServer(dbg, *s, (size_t)t, c, from, &text,
					 &why);

		// The process stopped where the cursor is: a live history
		// fetched before stays the one to move in.
		if (s->Live())
			s->SetStopId(CurrentTarget(dbg).GetProcess().GetStopID());
		if (!moved) {
			Output(result, text);
			return Fail(result, cmd.name, why);
		}
	}
	Output(result, text);
	return true;
}

#define NAV(fn, move, dir)                                                  \
	bool fn(lldb::SBDebugger &dbg, const Command &cmd, const Args &args,  \
		lldb::SBCommandReturnObject &result)                         \
	{                                                                    \
		return Navigate(dbg, cmd, args, result, move, dir);          \
	}
NAV(ReverseStep, Move::Step, HWT_BACKWARD)
NAV(ReverseNext, Move::Next, HWT_BACKWARD)
NAV(ReverseFinish, Move::Finish, HWT_BACKWARD)
NAV(ReverseStepI, Move::StepI, HWT_BACKWARD)
NAV(ReverseContinue, Move::Continue, HWT_BACKWARD)
NAV(Step, Move::Step, HWT_FORWARD)
NAV(Next, Move::Next, HWT_FORWARD)
NAV(Finish, Move::Finish, HWT_FORWARD)
NAV(StepI, Move::StepI, HWT_FORWARD)
NAV(Continue, Move::Continue, HWT_FORWARD)
NAV(Goto, Move::Goto, HWT_FORWARD)
#undef NAV

#define THREAD_OPT { { "thread", 't', true } }
#define THREAD_HELP "-t, --thread TID move in this thread's history (default: " \
	"the selected thread, else the one that crashed, else the first)\n"

} // namespace

const std::vector<CommandDef> &NavigateCommands()
{
	static const std::vector<CommandDef> defs = {
		{ { "reverse-step", "hwt reverse-step [-t TID]", THREAD_OPT, 0, 0 },
		  "Go back to the previous source line, into calls.",
		  THREAD_HELP "Moves a position in the recorded history (it starts "
		  "at the newest instruction: the crash, post-mortem) and shows "
		  "it as a frame line and its source.", ReverseStep, true },
		{ { "reverse-next", "hwt reverse-next [-t TID]", THREAD_OPT, 0, 0 },
		  "Go back to the previous source line, over calls.",
		  THREAD_HELP, ReverseNext, true },
		{ { "reverse-finish", "hwt reverse-finish [-t TID]", THREAD_OPT, 0, 0 },
		  "Go back to the call of the current function, in its caller.",
		  THREAD_HELP, ReverseFinish, true },
		{ { "reverse-stepi", "hwt reverse-stepi [-t TID]", THREAD_OPT, 0, 0 },
		  "Go back one instruction.", THREAD_HELP, ReverseStepI, true },
		{ { "reverse-continue", "hwt reverse-continue [-t TID]", THREAD_OPT,
		    0, 0 },
		  "Go back to the nearest earlier breakpoint hit.",
		  THREAD_HELP "Stops at any enabled breakpoint location of the "
		  "target ('breakpoint set' as usual), else at the beginning of "
		  "the history.", ReverseContinue, true },
		{ { "step", "hwt step [-t TID]", THREAD_OPT, 0, 0 },
		  "Go forward to the next source line in the history, into calls.",
		  THREAD_HELP, Step, true },
		{ { "next", "hwt next [-t TID]", THREAD_OPT, 0, 0 },
		  "Go forward to the next source line in the history, over calls.",
		  THREAD_HELP, Next, true },
		{ { "finish", "hwt finish [-t TID]", THREAD_OPT, 0, 0 },
		  "Go forward out of the current function in the history.",
		  THREAD_HELP, Finish, true },
		{ { "stepi", "hwt stepi [-t TID]", THREAD_OPT, 0, 0 },
		  "Go forward one instruction in the history.", THREAD_HELP,
		  StepI, true },
		{ { "continue", "hwt continue [-t TID]", THREAD_OPT, 0, 0 },
		  "Go forward to the next breakpoint hit in the history.",
		  THREAD_HELP "Stops at any enabled breakpoint location of the "
		  "target, else at the end of the history.", Continue, true },
		{ { "goto", "hwt goto N [-t TID]", THREAD_OPT, 1, 1 },
		  "Go to item N of the history (1 = oldest, as 'hwt "
		  "instructions' numbers them).", THREAD_HELP, Goto, false },
	};
	return defs;
}

} // namespace hwt_lldb
