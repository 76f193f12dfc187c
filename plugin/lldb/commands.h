/* SPDX-License-Identifier: BSD-2-Clause */
// commands.h - the `hwt` subcommands: each is a Command (name, usage,
// options) with help text and a handler; plugin.cpp registers them.
#ifndef HWT_LLDB_COMMANDS_H
#define HWT_LLDB_COMMANDS_H

#include <lldb/API/LLDB.h>

#include <string>
#include <vector>

#include "args.h"
#include "session.h"

namespace hwt_lldb {

using Handler = bool (*)(lldb::SBDebugger &dbg, const Command &cmd,
			 const Args &args, lldb::SBCommandReturnObject &result);

struct CommandDef {
	Command cmd;
	const char *help;     // one line, for `help hwt`
	const char *details;  // options and behaviour, for `help hwt NAME`
	Handler run;
	bool repeats;         // Enter repeats it (navigation, like `next`)
};

// Each command file's table.
const std::vector<CommandDef> &BundleCommands();    // load, info, save
const std::vector<CommandDef> &HistoryCommands();   // instructions, calls
const std::vector<CommandDef> &NavigateCommands();  // reverse-step, goto, ...
const std::vector<CommandDef> &LiveCommands();      // start, stop, status

// Run an LLDB command line; its output and error text.
bool RunCommand(lldb::SBDebugger &dbg, const std::string &line,
		std::string *out, std::string *err);
// Whether the current process is hwt-server (its qHwtStatus reply, the
// "k=v;..." text, in *status); false for any other process or none.
bool HwtServer(lldb::SBDebugger &dbg, std::string *status);
// Under a live hwt-server, the process's history at its current stop as
// a session of the current target: cur when it is that stop's, else one
// fetched with qHwtSave (which replaces cur). 1 with *out set, 0 when the
// process is no live hwt-server, -1 with *why when fetching failed.
int LiveHistory(lldb::SBDebugger &dbg, Session *cur, Session **out,
		std::string *why);
// The session of the current target: the trace `hwt load` opened, else
// the live history under hwt-server, else a "no trace loaded" error.
Session *RequireSession(lldb::SBDebugger &dbg, const Command &cmd,
			lldb::SBCommandReturnObject &result);
// Append text to the command's output as it is (no newline added).
void Output(lldb::SBCommandReturnObject &result, const std::string &text);
// Thread index chosen by -t/--thread (tid or CoreSight trace ID): false
// with an error when the bundle has no such thread.
bool ThreadOption(const Command &cmd, const Args &args, Session &s,
		  long *idx, lldb::SBCommandReturnObject &result);

} // namespace hwt_lldb
#endif
