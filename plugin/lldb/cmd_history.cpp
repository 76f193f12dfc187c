// SPDX-License-Identifier: BSD-2-Clause
// cmd_history.cpp - `hwt instructions` and `hwt calls`: the same lines as
// `hwtrace dump --insn` / `--calls` (hwt_format_item / hwt_format_call), so
// --tsv output is byte for byte that of the CLI on the same trace.
#include <cinttypes>
#include <cstdio>

#include "commands.h"

namespace hwt_lldb {

namespace {

// The longest line a history item makes: an instruction's text, a symbol
// and a source path; longer ones are cut by the formatter's bound.
constexpr size_t kLineMax = 8192;

// Threads a listing covers: the one -t names, or all.
bool Threads(const Command &cmd, const Args &args, Session &s,
	     size_t *first, size_t *end, lldb::SBCommandReturnObject &result)
{
	long idx;

	if (!ThreadOption(cmd, args, s, &idx, result))
		return false;
	*first = idx < 0 ? 0 : (size_t)idx;
	*end = idx < 0 ? s.Bundle()->nthreads : (size_t)idx + 1;
	// A CoreSight snapshot of software messages only (STM) has no
	// thread: say so rather than print nothing.
	if (!s.Bundle()->nthreads && s.Bundle()->nsources)
		result.AppendWarning("the trace has no instruction trace: its "
				     "trace sources carry no program flow");
	return true;
}

bool Instructions(lldb::SBDebugger &dbg, const Command &cmd,
		  const Args &args, lldb::SBCommandReturnObject &result)
{
	Session *s = RequireSession(dbg, cmd, result);
	bool tsv = args.Has("tsv");
	uint64_t newest = 0;
	size_t first_t, end_t;
	hwt_err err = {};
	std::string text;
	char line[kLineMax];

	if (!s || !Threads(cmd, args, *s, &first_t, &end_t, result))
		return false;
	if (args.Has("count") &&
	    !ParseNumber(result, cmd, "-c N", args.Get("count"), UINT64_MAX,
			 &newest))
		return false;
	for (size_t t = first_t; t < end_t; t++) {
		std::string tid = s->ThreadName(t);
		hwt_history *h;
		uint64_t count, first = 1;

		if (s->History(t, &h, &err))
			break;
		count = hwt_history_count(h);
		if (newest && newest < count)
			first = count - newest + 1;
		if (!tsv) {
			snprintf(line, sizeof(line), "Thread %s (%" PRIu64
				 " items):\n", tid.c_str(), count);
			text += line;
		}
		for (uint64_t i = first; i <= count; i++) {
			hwt_item it;
			int n;

			if (hwt_history_get(h, i, &it, &err))
				break;
			n = hwt_format_item(s->Image(t), tid.c_str(), &it, tsv,
					    line, sizeof(line));
			text.append(line, n < 0 ? sizeof(line) - 1 : (size_t)n);
			text += '\n';
		}
		if (err.code)
			break;
	}
	Output(result, text);
	return err.code ? Fail(result, cmd.name, err.msg) : true;
}

bool Calls(lldb::SBDebugger &dbg, const Command &cmd, const Args &args,
	   lldb::SBCommandReturnObject &result)
{
	Session *s = RequireSession(dbg, cmd, result);
	bool tsv = args.Has("tsv");
	size_t first_t, end_t;
	hwt_err err = {};
	std::string text;
	char line[kLineMax];

	if (!s || !Threads(cmd, args, *s, &first_t, &end_t, result))
		return false;
	for (size_t t = first_t; t < end_t; t++) {
		std::string tid = s->ThreadName(t);
		hwt_history *h;
		hwt_calls *calls;

		if (s->History(t, &h, &err))
			break;
		if (!tsv)
			text += "Thread " + tid + ":\n";
		// An empty history (nothing decodable) has no calls.
		if (!hwt_history_count(h))
			continue;
		if (hwt_calls_build(h, s->Image(t), 0, 0, &calls, &err))
			break;
		for (size_t i = 0; i < hwt_calls_count(calls); i++) {
			int n = hwt_format_call(tid.c_str(), i + 1,
						hwt_calls_get(calls, i), tsv,
						line, sizeof(line));

			text.append(line, n < 0 ? sizeof(line) - 1 : (size_t)n);
			text += '\n';
		}
		hwt_calls_free(calls);
	}
	Output(result, text);
	return err.code ? Fail(result, cmd.name, err.msg) : true;
}

} // namespace

const std::vector<CommandDef> &HistoryCommands()
{
	static const std::vector<CommandDef> defs = {
		{ { "instructions", "hwt instructions [-c N] [--tsv] [-t TID]",
		    { { "count", 'c', true }, { "tsv", 0, false },
		      { "thread", 't', true } }, 0, 0 },
		  "Show the instruction history, oldest first.",
		  "-c, --count N    only the newest N items of each thread\n"
		  "    --tsv        tab-separated lines, as `hwtrace dump "
		  "--insn --tsv` (docs/cli.md)\n"
		  "-t, --thread TID only this thread (CoreSight: the trace ID, "
		  "e.g. 0x10)\n"
		  "Items are numbered from 1, the oldest; gaps in the trace are "
		  "items of their own.", Instructions, false },
		{ { "calls", "hwt calls [--tsv] [-t TID]",
		    { { "tsv", 0, false }, { "thread", 't', true } }, 0, 0 },
		  "Show the function-call history with nesting levels.",
		  "    --tsv        tab-separated lines, as `hwtrace dump "
		  "--calls --tsv` (docs/cli.md)\n"
		  "-t, --thread TID only this thread\n"
		  "One line per stay in a function: its level, name, item range "
		  "and source lines.", Calls, false },
	};
	return defs;
}

} // namespace hwt_lldb
