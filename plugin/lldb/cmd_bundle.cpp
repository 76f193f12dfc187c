// SPDX-License-Identifier: BSD-2-Clause
// cmd_bundle.cpp - `hwt load`, `hwt info`, `hwt save`: open a trace for
// the selected target, describe it as `hwtrace info` does
// (hwt_bundle_describe), write it out (hwt_bundle_copy).
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "commands.h"

namespace hwt_lldb {

namespace {

std::string Format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Format(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return buf;
}

bool Load(lldb::SBDebugger &dbg, const Command &cmd, const Args &args,
	  lldb::SBCommandReturnObject &result)
{
	auto s = std::make_unique<Session>();
	hwt_err err = {};
	const hwt_bundle *b;

	if (s->Open(args.pos[0].c_str(), &err))
		return Fail(result, cmd.name, err.msg);
	b = s->Bundle();
	std::string text = Format("hwt: loaded %s (%s): %zu thread%s", b->dir,
				  b->type, b->nthreads,
				  b->nthreads == 1 ? "" : "s");
	if (b->stop_reason == HWT_STOP_FAULT)
		text += Format(", signal %d in thread %" PRId64 " at 0x%" PRIx64,
			       b->stop_signal, b->stop_tid, b->stop_pc);
	text += "\n";
	Output(result, text);
	SetSession(CurrentTarget(dbg), std::move(s));
	return true;
}

bool Info(lldb::SBDebugger &dbg, const Command &cmd, const Args &,
	  lldb::SBCommandReturnObject &result)
{
	Session *s = RequireSession(dbg, cmd, result);
	hwt_err err = {};
	char *text;

	if (!s)
		return false;
	if (hwt_bundle_describe(s->Bundle(), s->Images(), &text, &err))
		return Fail(result, cmd.name, err.msg);
	Output(result, text);
	free(text);
	return true;
}

bool Save(lldb::SBDebugger &dbg, const Command &cmd, const Args &args,
	  lldb::SBCommandReturnObject &result)
{
	Session *s = RequireSession(dbg, cmd, result);
	hwt_err err = {};

	if (!s)
		return false;
	if (hwt_bundle_copy(s->Bundle(), args.pos[0].c_str(), &err))
		return Fail(result, cmd.name, err.msg);
	Output(result, "hwt: saved " + s->Path() + " to " + args.pos[0] + "\n");
	return true;
}

} // namespace

const std::vector<CommandDef> &BundleCommands()
{
	static const std::vector<CommandDef> defs = {
		{ { "load", "hwt load DIR|trace.json", {}, 1, 1 },
		  "Open a trace for the selected target.",
		  "DIR is a bundle directory (hwtrace-sw, hwtrace-bts, intel-pt "
		  "including LLDB's own `trace save` output), its trace.json, "
		  "or an OpenCSD CoreSight snapshot directory. The trace "
		  "replaces any loaded before for this target. Post-mortem: "
		  "`target create PROG --core DIR/core`, then `hwt load DIR`; "
		  "the end of the history is the crash.", Load, false },
		{ { "info", "hwt info", {}, 0, 0 },
		  "Show what the loaded trace holds, as `hwtrace info`.",
		  "Format, cpu, how the program ended, each thread's recorded "
		  "and lost instructions, trace sources and memory dumps of a "
		  "CoreSight snapshot, modules and core.", Info, false },
		{ { "save", "hwt save DIR", {}, 1, 1 },
		  "Write the loaded trace as a bundle in DIR.",
		  "DIR must not exist. Traces, module copies and the core are "
		  "copied in, so the bundle stands alone (an intel-pt bundle "
		  "stays one that `trace load` opens). CoreSight snapshots "
		  "and per-cpu Intel PT traces cannot be saved this way: copy "
		  "their directory.", Save, false },
	};
	return defs;
}

} // namespace hwt_lldb
