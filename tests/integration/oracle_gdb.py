# SPDX-License-Identifier: BSD-2-Clause
# oracle_gdb.py - independent instruction-trace oracle: the addresses stock
# GDB sees when it single-steps a program with `stepi`.
#
# Inside GDB (what the tests run):
#   ORACLE_PROG=/abs/prog ORACLE_OUT=/abs/out.txt \
#     gdb -nx -batch -x tests/integration/oracle_gdb.py  </dev/null >log 2>&1
# As a launcher (same thing, spawns that gdb command):
#   python3 tests/integration/oracle_gdb.py [--threads FUNC] PROG OUT [-- ARGS...]
#
# Environment variables read inside GDB:
#   ORACLE_PROG         absolute path of the program (required)
#   ORACLE_OUT          output file (required)
#   ORACLE_ARGS         program arguments, a JSON list of strings (default [])
#   ORACLE_ENV          the program's environment, a JSON object (default {}:
#                       empty); e.g. GLIBC_TUNABLES, which picks other libc code
#   ORACLE_THREAD_FUNC  per-thread mode: record each thread from the first
#                       instruction of this function until it has returned
#   ORACLE_MAX_STEPS    safety limit on stepi commands (default 2000000)
#
# Output (see tests/integration/README.md for the exact contract):
#   main mode:    ORACLE_OUT            one "0x%x" address per line
#   thread mode:  ORACLE_OUT.thread<N>  one file per thread, N = GDB thread number
#   both:         ORACLE_OUT.json       metadata: end reason, signals, per-address
#                                       instruction class / symbol / object file
# Exit status: 0 on success, 3 on any oracle error (reason in the .json
# "error" field and on stderr).

import json
import os
import re
import subprocess
import sys
import time

try:
    import gdb  # noqa: F401  (only present inside GDB)
except ImportError:
    gdb = None


# ---------------------------------------------------------------- launcher
def launcher(argv):
    import argparse
    ap = argparse.ArgumentParser(description="run the GDB stepi oracle on a program")
    ap.add_argument("--threads", metavar="FUNC", help="per-thread mode from FUNC's entry")
    ap.add_argument("--gdb", default="gdb")
    ap.add_argument("prog")
    ap.add_argument("out")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args(argv)
    env = dict(os.environ)
    env["ORACLE_PROG"] = os.path.realpath(a.prog)
    env["ORACLE_OUT"] = os.path.abspath(a.out)
    env["ORACLE_ARGS"] = json.dumps(a.args)
    if a.threads:
        env["ORACLE_THREAD_FUNC"] = a.threads
    else:
        env.pop("ORACLE_THREAD_FUNC", None)
    cmd = [a.gdb, "-nx", "-batch", "-x", os.path.abspath(__file__)]
    with open(os.devnull, "rb") as devnull:
        return subprocess.call(cmd, env=env, stdin=devnull)


# ------------------------------------------------------------------ oracle
PREFIXES = {"rep", "repz", "repe", "repnz", "repne", "lock", "bnd", "notrack",
            "data16", "data32", "addr16", "addr32", "cs", "ds", "es", "ss",
            "fs", "gs", "rex", "rex.w", "rex.b", "rex.r", "rex.x", "xacquire",
            "xrelease"}


def classify(asm):
    """call | ret | jump | cjump | syscall | other, plus indirect flag."""
    toks = [t for t in re.split(r"[\s,]+", asm.strip()) if t]
    while toks and (toks[0].lower() in PREFIXES or toks[0].lower().startswith("rex.")):
        toks.pop(0)
    m = toks[0].lower() if toks else ""
    indirect = "*" in asm
    if m.startswith("call") or m == "lcall":
        return "call", indirect
    if m.startswith("ret") or m in ("lret", "lretq", "iret", "iretq", "sysret", "sysretq"):
        return "ret", indirect
    if m in ("jmp", "jmpq", "ljmp", "ljmpq"):
        return "jump", indirect
    if m.startswith("j") or m.startswith("loop"):
        return "cjump", indirect
    if m in ("syscall", "sysenter", "int", "int3", "into", "ud2", "hlt"):
        return "syscall" if m in ("syscall", "sysenter") else "other", False
    return "other", False


SYM_RE = re.compile(r"^(\S+)(?: \+ (\d+))? in section (\S+)(?: of (.+))?$")


class Oracle:
    def __init__(self):
        self.prog = os.environ["ORACLE_PROG"]
        self.out = os.environ["ORACLE_OUT"]
        self.args = json.loads(os.environ.get("ORACLE_ARGS", "[]") or "[]")
        self.env = json.loads(os.environ.get("ORACLE_ENV", "{}") or "{}")
        self.thread_func = os.environ.get("ORACLE_THREAD_FUNC") or None
        self.max_steps = int(os.environ.get("ORACLE_MAX_STEPS", "2000000"))
        self.meta = {"program": self.prog, "argv": [self.prog] + self.args,
                     "mode": "threads" if self.thread_func else "main",
                     "gdb": gdb.VERSION}
        self.insns = {}         # pc -> info dict
        self.maps = []          # (start, end, offset, path)
        self.objfiles = {}      # path -> load base
        self.last_stop = None   # last gdb stop event
        self.exited = None      # exit event info
        self.steps = 0
        self.pid = 0

    # -- events
    def on_stop(self, ev):
        self.last_stop = ev

    def on_exit(self, ev):
        info = {}
        if hasattr(ev, "exit_code"):
            info["exit_code"] = int(ev.exit_code)
        self.exited = info

    # -- helpers
    def pc(self):
        return int(gdb.parse_and_eval("$pc")) & 0xFFFFFFFFFFFFFFFF

    def sp(self):
        return int(gdb.parse_and_eval("$sp")) & 0xFFFFFFFFFFFFFFFF

    def read_maps(self):
        maps = []
        with open("/proc/%d/maps" % self.pid) as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) < 6:
                    continue
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                path = parts[5].strip()
                off = int(parts[2], 16)
                maps.append((lo, hi, off, path))
                if path and (path.startswith("/") or path == "[vdso]"):
                    base = lo - off
                    if path not in self.objfiles or base < self.objfiles[path]:
                        self.objfiles[path] = base
        self.maps = maps

    def file_of(self, pc):
        for refresh in (False, True):
            if refresh:
                self.read_maps()
            for lo, hi, _off, path in self.maps:
                if lo <= pc < hi:
                    return path
        return ""

    def note_insn(self, pc):
        if pc in self.insns:
            return
        info = {}
        try:
            d = gdb.selected_inferior().architecture().disassemble(pc)[0]
            info["len"] = int(d["length"])
            info["asm"] = d["asm"]
            info["class"], info["indirect"] = classify(d["asm"])
        except gdb.error as e:
            info["len"] = 0
            info["asm"] = "<%s>" % e
            info["class"], info["indirect"] = "other", False
        s = gdb.execute("info symbol %#x" % pc, to_string=True).strip()
        m = SYM_RE.match(s)
        if m:
            info["sym"] = m.group(1)
            info["off"] = int(m.group(2) or 0)
            info["section"] = m.group(3)
        info["file"] = self.file_of(pc)
        self.insns[pc] = info

    def stepi(self):
        if self.steps >= self.max_steps:
            raise RuntimeError("more than ORACLE_MAX_STEPS=%d stepi commands; "
                               "make the program smaller or raise the limit" % self.max_steps)
        self.last_stop = None
        self.steps += 1
        gdb.execute("stepi", to_string=True)

    def signal_of_last_stop(self):
        ev = self.last_stop
        if ev is not None and isinstance(ev, gdb.SignalEvent):
            return ev.stop_signal
        return None

    def symbol_address(self, lib_prefix, name):
        """Address of NAME in the mapped library whose basename starts with
        LIB_PREFIX, from the library's own dynamic symbol table."""
        self.read_maps()
        for path, base in self.objfiles.items():
            if os.path.basename(path).startswith(lib_prefix):
                out = subprocess.run(["nm", "-D", "--defined-only", path],
                                     capture_output=True, text=True, check=True).stdout
                for line in out.splitlines():
                    p = line.split()
                    if len(p) == 3 and p[2].split("@")[0] == name and p[1] in "TtWi":
                        return base + int(p[0], 16), path
        raise RuntimeError("cannot find %s in a mapped %s* library" % (name, lib_prefix))

    # -- setup
    def start(self, stop_spec):
        for cmd in ("set pagination off", "set confirm off", "set width 0",
                    "set height 0", "set startup-with-shell off",
                    "set disable-randomization on", "unset environment"):
            gdb.execute(cmd, to_string=True)
        env_left = gdb.execute("show environment", to_string=True).strip()
        if env_left:
            # LINES/COLUMNS or anything else: remove one by one
            for line in env_left.splitlines():
                var = line.split("=", 1)[0]
                gdb.execute("unset environment %s" % var, to_string=True)
        for var, value in sorted(self.env.items()):
            gdb.execute("set environment %s=%s" % (var, value), to_string=True)
        gdb.events.stop.connect(self.on_stop)
        gdb.events.exited.connect(self.on_exit)
        gdb.execute("file %s" % self.prog, to_string=True)
        if self.args:
            gdb.execute("set args %s" % " ".join(shell_quote(a) for a in self.args), to_string=True)
        else:
            gdb.execute("set args", to_string=True)
        bp = gdb.Breakpoint(stop_spec, internal=False)
        gdb.execute("run", to_string=True)
        if self.exited is not None:
            raise RuntimeError("program exited before reaching %s" % stop_spec)
        self.pid = gdb.selected_inferior().pid
        with open("/proc/%d/environ" % self.pid, "rb") as f:
            environ = [e.decode("utf-8", "replace") for e in f.read().split(b"\0") if e]
        with open("/proc/%d/cmdline" % self.pid, "rb") as f:
            cmdline = [e.decode("utf-8", "replace") for e in f.read().split(b"\0")[:-1]]
        self.meta["environment"] = environ
        self.meta["cmdline"] = cmdline
        want_env = ["%s=%s" % kv for kv in sorted(self.env.items())]
        if sorted(environ) != want_env:
            raise RuntimeError("inferior environment is %r, not %r" % (environ, want_env))
        if cmdline != self.meta["argv"]:
            raise RuntimeError("inferior argv %r != expected %r" % (cmdline, self.meta["argv"]))
        with open("/proc/%d/personality" % self.pid) as f:
            pers = int(f.read().strip(), 16)
        self.meta["personality"] = "%#x" % pers
        if not pers & 0x0040000:
            raise RuntimeError("ASLR is not disabled in the inferior (personality %#x)" % pers)
        self.read_maps()
        return bp

    # -- main mode
    def run_main(self):
        bp = self.start("*main")
        main_pc = self.pc()
        bp.delete()
        exit_pc, libc = self.symbol_address("libc.so", "exit")
        self.meta["start"] = {"symbol": "main", "address": "%#x" % main_pc}
        self.meta["end_address"] = {"symbol": "exit", "address": "%#x" % exit_pc, "file": libc}
        addrs = [main_pc]
        self.note_insn(main_pc)
        signals = []
        repeat_pcs = {}
        end = None
        t0 = time.time()
        while True:
            if addrs[-1] == exit_pc:
                end = {"reason": "exit-entry"}
                break
            self.stepi()
            if self.exited is not None:
                if "exit_code" in self.exited or not signals:
                    end = {"reason": "exited"}
                    end.update(self.exited)
                else:
                    # killed by the signal of the last stop; the faulting
                    # instruction (PC unchanged by that stop) is the last address
                    end = {"reason": "signal", "signal": signals[-1]["signal"]}
                break
            pc = self.pc()
            sig = self.signal_of_last_stop()
            if sig is not None:
                signals.append({"index": len(addrs) - 1 if pc == addrs[-1] else len(addrs),
                                "signal": sig, "pc_changed": pc != addrs[-1]})
            if sig is not None and pc == addrs[-1]:
                continue    # a signal stop executed nothing
            if pc == addrs[-1]:
                # one iteration of a rep-prefixed instruction: GDB's stepi
                # executes it once per step, and so does a recorder
                key = "%#x" % pc
                repeat_pcs[key] = repeat_pcs.get(key, 0) + 1
            addrs.append(pc)
            self.note_insn(pc)
        dt = time.time() - t0
        self.meta["end"] = end
        self.meta["signals"] = signals
        self.meta["repeat_pcs"] = repeat_pcs
        self.finish_stats(len(addrs), dt)
        write_lines(self.out, addrs)
        self.meta["files"] = {"main": self.out}
        if self.exited is None:
            gdb.execute("kill", to_string=True)

    # -- thread mode
    def run_threads(self):
        func = self.thread_func
        bp = self.start("*" + func)
        gdb.execute("set scheduler-locking step", to_string=True)
        threads = []
        total = 0
        t0 = time.time()
        while self.exited is None:
            th = gdb.selected_thread()
            entry = self.pc()
            if not (isinstance(self.last_stop, gdb.BreakpointEvent) and
                    bp in self.last_stop.breakpoints):
                raise RuntimeError("unexpected stop at %#x in thread %d" % (entry, th.num))
            sp0 = self.sp()
            addrs = [entry]
            self.note_insn(entry)
            while True:
                self.stepi()
                if self.exited is not None:
                    raise RuntimeError("process exited while stepping thread %d" % th.num)
                if gdb.selected_thread().num != th.num:
                    raise RuntimeError("stepping thread %d stopped in thread %d" %
                                       (th.num, gdb.selected_thread().num))
                pc = self.pc()
                if self.signal_of_last_stop() is not None and pc == addrs[-1]:
                    continue    # a signal stop executed nothing
                addrs.append(pc)
                self.note_insn(pc)
                if self.sp() > sp0:
                    break   # the function's ret has executed: PC is its return address
            path = "%s.thread%d" % (self.out, th.num)
            write_lines(path, addrs)
            threads.append({"num": th.num, "lwp": th.ptid[1], "entry": "%#x" % entry,
                            "count": len(addrs), "file": path,
                            "end": {"reason": "returned", "address": "%#x" % addrs[-1]}})
            total += len(addrs)
            self.last_stop = None
            gdb.execute("continue", to_string=True)
        dt = time.time() - t0
        self.meta["start"] = {"symbol": func}
        self.meta["threads"] = sorted(threads, key=lambda t: t["num"])
        self.meta["end"] = {"reason": "exited", **self.exited}
        self.meta["files"] = {"threads": [t["file"] for t in self.meta["threads"]]}
        self.finish_stats(total, dt)

    def finish_stats(self, count, dt):
        self.meta["count"] = count
        self.meta["stepi"] = self.steps
        self.meta["seconds"] = round(dt, 3)
        self.meta["stepi_per_second"] = round(self.steps / dt, 1) if dt > 0 else None
        self.meta["objfiles"] = {p: "%#x" % b for p, b in sorted(self.objfiles.items())}
        self.meta["insns"] = {"%#x" % pc: info for pc, info in sorted(self.insns.items())}


def shell_quote(s):
    if re.fullmatch(r"[A-Za-z0-9_./=:+-]+", s):
        return s
    return "'" + s.replace("'", "'\\''") + "'"


def write_lines(path, addrs):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for a in addrs:
            f.write("%#x\n" % a)
    os.replace(tmp, path)


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def oracle_main():
    o = None
    try:
        o = Oracle()
        if o.thread_func:
            o.run_threads()
        else:
            o.run_main()
        write_json(o.out + ".json", o.meta)
    except Exception as e:  # report, leave no partial outputs behind
        msg = "%s: %s" % (type(e).__name__, e)
        sys.stderr.write("oracle_gdb: error: %s\n" % msg)
        out = os.environ.get("ORACLE_OUT")
        if out:
            meta = dict(o.meta) if o is not None else {}
            meta.pop("insns", None)
            meta["error"] = msg
            try:
                write_json(out + ".json", meta)
                if os.path.exists(out) and "files" not in meta:
                    os.unlink(out)
            except OSError:
                pass
        try:
            gdb.execute("kill", to_string=True)
        except gdb.error:
            pass
        gdb.execute("quit 3")
    gdb.execute("quit 0")


if gdb is None:
    if __name__ == "__main__":
        sys.exit(launcher(sys.argv[1:]))
else:
    oracle_main()
