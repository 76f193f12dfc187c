// SPDX-License-Identifier: BSD-2-Clause
// plugin.cpp - entry point of libhwt-lldb.so: `plugin load` calls
// lldb::PluginInitialize, which adds the `hwt` multiword command and its
// subcommands, and the helpers every command shares.
#include <lldb/API/LLDB.h>

#include <cinttypes>
#include <cstdio>

#include "commands.h"

namespace hwt_lldb {

namespace {

// LLDB keeps the pointer for the life of the command; the definitions are
// static tables, so these adaptors live as long as the process.
class Adaptor : public lldb::SBCommandPluginInterface {
public:
	explicit Adaptor(const CommandDef &def) : def_(def) {}

	bool DoExecute(lldb::SBDebugger dbg, char **argv,
		       lldb::SBCommandReturnObject &result) override
	{
		Args args;

		if (!ParseArgs(def_.cmd, argv, args, result))
			return false;
		if (!def_.run(dbg, def_.cmd, args, result))
			return false;
		result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
		return true;
	}

private:
	const CommandDef &def_;
};

} // namespace

Session *RequireSession(lldb::SBDebugger &dbg, const Command &cmd,
			lldb::SBCommandReturnObject &result)
{
	Session *s = FindSession(CurrentTarget(dbg)), *live;
	std::string why;

	// A loaded trace stays what the commands show; a live history is
	// fetched again once the process has stopped somewhere else.
	if (!s || s->Live()) {
		int rc = LiveHistory(dbg, s, &live, &why);

		if (rc < 0) {
			Fail(result, cmd.name, why);
			return nullptr;
		}
		if (rc > 0)
			return live;
	}
	if (!s)
		Fail(result, cmd.name, "no trace loaded for this target; "
		     "use 'hwt load DIR' first (or run the program under "
		     "hwt-server and 'gdb-remote HOST:PORT')");
	return s;
}

void Output(lldb::SBCommandReturnObject &result, const std::string &text)
{
	if (!text.empty())
		result.Printf("%s", text.c_str());
}

bool ThreadOption(const Command &cmd, const Args &args, Session &s,
		  long *idx, lldb::SBCommandReturnObject &result)
{
	uint64_t tid;

	*idx = -1;
	if (!args.Has("thread"))
		return true;
	if (!ParseNumber(result, cmd, "-t TID", args.Get("thread"), INT64_MAX,
			 &tid))
		return false;
	*idx = s.FindThread((int64_t)tid);
	if (*idx < 0)
		return Fail(result, cmd.name, "the trace has no thread " +
			    args.Get("thread") + " (see 'hwt info')");
	return true;
}

} // namespace hwt_lldb

namespace lldb {
bool PluginInitialize(lldb::SBDebugger debugger);
}

bool lldb::PluginInitialize(lldb::SBDebugger debugger)
{
	using namespace hwt_lldb;
	lldb::SBCommandInterpreter ci = debugger.GetCommandInterpreter();
	lldb::SBCommand hwt = ci.AddMultiwordCommand(
		"hwt", "hwtrace: instruction and call history, reverse "
		"navigation and post-mortem from branch traces "
		"(bundles, Intel PT, BTS, CoreSight).");

	if (!hwt.IsValid())
		return false;
	for (const auto *table : { &BundleCommands(), &HistoryCommands(),
				   &NavigateCommands(), &LiveCommands() })
		for (const CommandDef &def : *table) {
			std::string syntax = std::string(def.cmd.usage) +
				"\n\n" + def.details;
			// Navigation repeats on Enter like `next`; a
			// listing would print the same again, so it does not.
			lldb::SBCommand c = hwt.AddCommand(
				def.cmd.name, new Adaptor(def), def.help,
				syntax.c_str(), def.repeats ? nullptr : "");

			if (!c.IsValid())
				return false;
		}
	return true;
}
