/* SPDX-License-Identifier: BSD-2-Clause */
// args.h - option parsing for the `hwt` commands: GNU-style long and short
// options, and an error naming the command and its usage for anything else.
#ifndef HWT_LLDB_ARGS_H
#define HWT_LLDB_ARGS_H

#include <lldb/API/LLDB.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hwt_lldb {

struct OptSpec {
	const char *name;   // long name without "--"
	char short_name;    // 0: none
	bool has_arg;
};

struct Command {
	const char *name;   // "instructions"
	const char *usage;  // "hwt instructions [-c N] [--tsv] [-t TID]"
	std::vector<OptSpec> opts;
	size_t min_pos, max_pos;  // positional arguments allowed
};

struct Args {
	std::map<std::string, std::string> opts;  // by long name
	std::vector<std::string> pos;

	bool Has(const char *name) const { return opts.count(name) != 0; }
	const std::string &Get(const char *name) const { return opts.at(name); }
};

// Parse argv (NULL-terminated, as LLDB hands it over). On a bad command
// line sets "hwt NAME: WHAT; usage: USAGE" as the error and returns false.
bool ParseArgs(const Command &cmd, char **argv, Args &out,
	       lldb::SBCommandReturnObject &result);
// Fail the command with "hwt NAME: MSG".
bool Fail(lldb::SBCommandReturnObject &result, const char *cmd,
	  const std::string &msg);
// A count or id (what: "-c N"): decimal or 0x hex, 1..max, else an error.
bool ParseNumber(lldb::SBCommandReturnObject &result, const Command &cmd,
		 const char *what, const std::string &text, uint64_t max,
		 uint64_t *v);

} // namespace hwt_lldb
#endif
