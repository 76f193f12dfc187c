// SPDX-License-Identifier: BSD-2-Clause
// args.cpp - command-line parsing shared by the `hwt` commands.
#include "args.h"

#include <cstring>

#include "hwt-common.h"
#include "util.h"

namespace hwt_lldb {

bool Fail(lldb::SBCommandReturnObject &result, const char *cmd,
	  const std::string &msg)
{
	std::string text = std::string("hwt ") + cmd + ": " + msg;

	result.SetError(text.c_str());
	return false;
}

static bool Usage(lldb::SBCommandReturnObject &result, const Command &cmd,
		  const std::string &what)
{
	return Fail(result, cmd.name,
		    what + "; usage: " + cmd.usage + " (see 'help hwt " +
		    cmd.name + "')");
}

static const OptSpec *FindLong(const Command &cmd, const std::string &name)
{
	for (const OptSpec &o : cmd.opts)
		if (name == o.name)
			return &o;
	return nullptr;
}

static const OptSpec *FindShort(const Command &cmd, char c)
{
	for (const OptSpec &o : cmd.opts)
		if (o.short_name && o.short_name == c)
			return &o;
	return nullptr;
}

bool ParseArgs(const Command &cmd, char **argv, Args &out,
	       lldb::SBCommandReturnObject &result)
{
	bool only_pos = false;

	for (size_t i = 0; argv && argv[i]; i++) {
		std::string a = argv[i];
		const OptSpec *o = nullptr;
		std::string value;
		bool has_value = false;

		if (only_pos || a.size() < 2 || a[0] != '-') {
			out.pos.push_back(a);
			continue;
		}
		if (a == "--") {
			only_pos = true;
			continue;
		}
		if (a[1] == '-') {
			size_t eq = a.find('=');
			std::string name = a.substr(2, eq == std::string::npos ?
						    std::string::npos : eq - 2);

			if (!(o = FindLong(cmd, name)))
				return Usage(result, cmd, "unknown option '" +
					     a.substr(0, eq) + "'");
			if (eq != std::string::npos) {
				value = a.substr(eq + 1);
				has_value = true;
			}
		} else {
			if (!(o = FindShort(cmd, a[1])))
				return Usage(result, cmd, "unknown option '-" +
					     std::string(1, a[1]) + "'");
			if (a.size() > 2) {
				if (!o->has_arg)
					return Usage(result, cmd, "option '-" +
						     std::string(1, a[1]) +
						     "' takes no value");
				value = a.substr(2);
				has_value = true;
			}
		}
		if (o->has_arg && !has_value) {
			if (!argv[i + 1])
				return Usage(result, cmd, std::string("option '--") +
					     o->name + "' needs a value");
			value = argv[++i];
		} else if (!o->has_arg && has_value) {
			return Usage(result, cmd, std::string("option '--") +
				     o->name + "' takes no value");
		}
		out.opts[o->name] = value;
	}
	if (out.pos.size() < cmd.min_pos)
		return Usage(result, cmd, out.pos.empty() ?
			     "missing argument" : "too few arguments");
	if (out.pos.size() > cmd.max_pos)
		return Usage(result, cmd, "unexpected argument '" +
			     out.pos[cmd.max_pos] + "'");
	return true;
}

bool ParseNumber(lldb::SBCommandReturnObject &result, const Command &cmd,
		 const char *what, const std::string &text, uint64_t max,
		 uint64_t *v)
{
	if (hwt_parse_u64(text.c_str(), v) || *v == 0 || *v > max)
		return Usage(result, cmd, std::string(what) +
			     " must be a positive number, not '" + text + "'");
	return true;
}

} // namespace hwt_lldb
