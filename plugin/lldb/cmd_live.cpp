// SPDX-License-Identifier: BSD-2-Clause
// cmd_live.cpp - `hwt start`, `hwt stop`, `hwt status` on a live debug
// session, the live history under hwt-server and what navigation needs to
// drive hwt-server. hwt-server is recognised by its qHwtStatus packet
// (docs/gdb-server.md); tracing is started and stopped through LLDB's own
// trace commands, which speak the documented jLLDBTraceSupported/Start/
// Stop packets to the stub. The live history comes as a bundle the server
// writes (qHwtSave), so the plugin decodes it as any loaded trace and
// needs no decoder of its own for the server's stream.
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "commands.h"
#include "util.h"

namespace hwt_lldb {

namespace {

// The process a live command talks to, or an error saying why there is
// none: no process, or a core file (nothing runs, nothing to trace).
bool LiveProcess(lldb::SBDebugger &dbg, const Command &cmd,
		 lldb::SBProcess *out, lldb::SBCommandReturnObject &result)
{
	lldb::SBProcess p = CurrentTarget(dbg).GetProcess();
	const char *plugin = p.IsValid() ? p.GetPluginName() : nullptr;

	if (!p.IsValid() || !lldb::SBDebugger::StateIsStoppedState(p.GetState()))
		return Fail(result, cmd.name, "no stopped live process; launch "
			    "or attach first (or run the program under "
			    "hwt-server and 'gdb-remote HOST:PORT')");
	if (!plugin || strcmp(plugin, "gdb-remote") != 0)
		return Fail(result, cmd.name, std::string("the process is a ") +
			    (plugin ? plugin : "?") + " process, not a remote "
			    "stub: there is nothing to trace; for a recorded "
			    "crash use 'hwt load DIR'");
	*out = p;
	return true;
}

// The stub's answer to packet (sent as it is through `process plugin
// packet send`); false when the command itself failed.
bool SendPacket(lldb::SBDebugger &dbg, const std::string &packet,
		std::string *response)
{
	std::string out, err;
	size_t at;

	// Single quotes keep JSON's double quotes; a packet with a single
	// quote cannot be passed this way and is not one we send.
	if (packet.find('\'') != std::string::npos ||
	    !RunCommand(dbg, "process plugin packet send '" + packet + "'",
			&out, &err))
		return false;
	at = out.find("response: ");
	if (at == std::string::npos)
		return false;
	// The reply is one line; an empty one is followed by LLDB's reading
	// of it ("error: UNIMPLEMENTED"), which says more.
	std::string rest = out.substr(at + 10);
	size_t nl = rest.find('\n');
	*response = rest.substr(0, nl);
	if (response->empty() && nl != std::string::npos)
		*response = rest.substr(nl + 1, rest.find('\n', nl + 1) - nl - 1);
	while (!response->empty() && response->back() == '\r')
		response->pop_back();
	return true;
}

// Value of key in a "k=v;k=v" reply, "" when absent.
std::string Field(const std::string &reply, const std::string &key)
{
	size_t pos = 0;

	while (pos <= reply.size()) {
		size_t end = reply.find(';', pos);
		std::string kv = reply.substr(pos, end == std::string::npos ?
					      std::string::npos : end - pos);

		if (kv.compare(0, key.size() + 1, key + "=") == 0)
			return kv.substr(key.size() + 1);
		if (end == std::string::npos)
			break;
		pos = end + 1;
	}
	return "";
}

// The trace type the stub offers in its jLLDBTraceSupported reply
// ({"name":"intel-pt",...}), "" when it offers none.
std::string SupportedTrace(lldb::SBDebugger &dbg, std::string *reply)
{
	const std::string key = "\"name\":\"";
	size_t at, end;

	if (!SendPacket(dbg, "jLLDBTraceSupported", reply) ||
	    (at = reply->find(key)) == std::string::npos ||
	    (end = reply->find('"', at + key.size())) == std::string::npos)
		return "";
	return reply->substr(at + key.size(), end - at - key.size());
}

std::string NoTraceText(const std::string &reply)
{
	return "no hwtrace server and no hardware trace here: the stub "
		"answers jLLDBTraceSupported with '" + reply + "'; run the "
		"program under hwt-server (docs/gdb-server.md), or record it "
		"with 'hwtrace record' and use 'hwt load'";
}

bool Status(lldb::SBDebugger &dbg, const Command &cmd, const Args &,
	    lldb::SBCommandReturnObject &result)
{
	lldb::SBProcess p;
	std::string st, reply, type;

	if (!LiveProcess(dbg, cmd, &p, result))
		return false;
	if (HwtServer(dbg, &st)) {
		std::string text = "hwt-server: " + Field(st, "mode") +
			", format " + Field(st, "format") + ", stopped: " +
			Field(st, "stop");
		if (Field(st, "stop") == "fault")
			text += ", signal " + Field(st, "signal") +
				" in thread " + Field(st, "stop_tid");
		text += "\n";
		// One "thread=TID,RECORDED,LOST_INSNS,LOST_BYTES,TRACE" each.
		for (size_t at = st.find("thread="); at != std::string::npos;
		     at = st.find(";thread=", at + 1)) {
			unsigned long long tid, rec, lost, lostb, bytes;
			const char *s = st.c_str() + st.find('=', at) + 1;

			if (sscanf(s, "%llu,%llu,%llu,%llu,%llu", &tid, &rec,
				   &lost, &lostb, &bytes) != 5)
				continue;
			char line[256];
			snprintf(line, sizeof(line), "thread %llu: %llu "
				 "instructions recorded, %llu lost (%llu bytes "
				 "dropped), trace %llu bytes\n", tid, rec, lost,
				 lostb, bytes);
			text += line;
		}
		if (Field(st, "more") == "1")
			text += "(more threads than one reply holds)\n";
		Output(result, text);
		return true;
	}
	type = SupportedTrace(dbg, &reply);
	if (type.empty())
		return Fail(result, cmd.name, NoTraceText(reply));
	Output(result, "the stub offers " + type + " tracing (not "
	       "hwt-server); 'process trace start' starts it, 'thread trace "
	       "dump info' shows it\n");
	return true;
}

bool Start(lldb::SBDebugger &dbg, const Command &cmd, const Args &args,
	   lldb::SBCommandReturnObject &result)
{
	lldb::SBProcess p;
	std::string reply, type, out, err, line = "process trace start";
	uint64_t size;

	if (!LiveProcess(dbg, cmd, &p, result))
		return false;
	type = SupportedTrace(dbg, &reply);
	if (type.empty())
		return Fail(result, cmd.name, NoTraceText(reply));
	// The stub names the one trace type it serves; a backend that is
	// not it cannot be started through LLDB's packets.
	if (args.Has("backend") && args.Get("backend") != type)
		return Fail(result, cmd.name, "the stub serves " + type +
			    " tracing, not '" + args.Get("backend") + "'; "
			    "choose the backend where the stub starts "
			    "(hwt-server, docs/gdb-server.md)");
	if (args.Has("size")) {
		if (hwt_parse_size(args.Get("size").c_str(), &size) || !size)
			return Fail(result, cmd.name, "--size '" +
				    args.Get("size") + "' is not a size "
				    "(e.g. 4096, 64K, 4M)");
		line += " --buffer-size " + std::to_string(size);
	}
	if (!RunCommand(dbg, line, &out, &err))
		return Fail(result, cmd.name, "'" + line + "' failed: " + err);
	Output(result, out + "hwt: " + type + " tracing started\n");
	return true;
}

bool Stop(lldb::SBDebugger &dbg, const Command &cmd, const Args &,
	  lldb::SBCommandReturnObject &result)
{
	lldb::SBProcess p;
	std::string out, err, reply;

	if (!LiveProcess(dbg, cmd, &p, result))
		return false;
	if (SupportedTrace(dbg, &reply).empty())
		return Fail(result, cmd.name, NoTraceText(reply));
	if (!RunCommand(dbg, "process trace stop", &out, &err))
		return Fail(result, cmd.name, "'process trace stop' failed: " +
			    err);
	Output(result, out + "hwt: tracing stopped\n");
	return true;
}

} // namespace

bool RunCommand(lldb::SBDebugger &dbg, const std::string &line,
		std::string *out, std::string *err)
{
	lldb::SBCommandReturnObject r;

	dbg.GetCommandInterpreter().HandleCommand(line.c_str(), r);
	*out = r.GetOutput() ? r.GetOutput() : "";
	*err = r.GetError() ? r.GetError() : "";
	return r.Succeeded();
}

bool HwtServer(lldb::SBDebugger &dbg, std::string *status)
{
	lldb::SBProcess p = CurrentTarget(dbg).GetProcess();
	const char *plugin = p.IsValid() ? p.GetPluginName() : nullptr;

	if (!plugin || strcmp(plugin, "gdb-remote") != 0 ||
	    !lldb::SBDebugger::StateIsStoppedState(p.GetState()))
		return false;
	return SendPacket(dbg, "qHwtStatus", status) &&
		!Field(*status, "mode").empty();
}

int LiveHistory(lldb::SBDebugger &dbg, Session *cur, Session **out,
		std::string *why)
{
	lldb::SBTarget target = CurrentTarget(dbg);
	std::string st, reply, hex;
	const char *tmp = getenv("TMPDIR");
	hwt_err err = {};

	if (!HwtServer(dbg, &st) || Field(st, "mode") != "live")
		return 0;
	uint32_t stop = target.GetProcess().GetStopID();
	if (cur && cur->Live() && cur->StopId() == stop) {
		*out = cur;
		return 1;
	}
	std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") +
		"/hwt-lldb-XXXXXX";
	if (!mkdtemp(&tmpl[0])) {
		*why = "cannot make a temporary directory for the live history "
			"in " + tmpl.substr(0, tmpl.rfind('/')) + ": " +
			strerror(errno) + "; set TMPDIR to a writable directory";
		return -1;
	}
	auto s = std::make_unique<Session>();
	// Owned from here on: a failure below removes it with the session.
	s->SetLive(tmpl, stop);
	std::string dir = tmpl + "/trace";
	for (unsigned char ch : dir) {
		char b[3];

		snprintf(b, sizeof(b), "%02x", ch);
		hex += b;
	}
	if (!SendPacket(dbg, "qHwtSave:" + hex, &reply) || reply != "OK") {
		*why = "hwt-server did not save the live history (qHwtSave): '" +
			reply + "'";
		return -1;
	}
	if (s->Open(dir.c_str(), &err)) {
		*why = std::string("the live history hwt-server saved cannot be "
				   "read: ") + err.msg;
		return -1;
	}
	SetSession(target, std::move(s));
	*out = FindSession(target);
	return 1;
}

const std::vector<CommandDef> &LiveCommands()
{
	static const std::vector<CommandDef> defs = {
		{ { "status", "hwt status", {}, 0, 0 },
		  "Show the trace state of the live process.",
		  "Under hwt-server: its mode, format, stop and each thread's "
		  "recorded and lost instructions (the qHwtStatus packet). "
		  "Under another stub: the trace type it offers, if any.",
		  Status, false },
		{ { "start", "hwt start [--backend NAME] [--size BYTES]",
		    { { "backend", 'b', true }, { "size", 's', true } }, 0, 0 },
		  "Start tracing the live process.",
		  "-b, --backend NAME  the trace type to start; must be the one "
		  "the stub offers (jLLDBTraceSupported: intel-pt for "
		  "hwt-server and lldb-server)\n"
		  "-s, --size BYTES    per-thread trace buffer (4096, 64K, 4M)\n"
		  "Runs LLDB's 'process trace start', so 'thread trace dump "
		  "instructions' works as well. Without a stub that can trace "
		  "the error says which part is missing.", Start, false },
		{ { "stop", "hwt stop", {}, 0, 0 },
		  "Stop tracing the live process ('process trace stop').",
		  "", Stop, false },
	};
	return defs;
}

} // namespace hwt_lldb
