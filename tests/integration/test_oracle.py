#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""test_oracle.py - compare hwtrace's recorded history with the GDB oracle.

For every test subject in BUILD/programs:
  1. oracle   run tests/integration/oracle_gdb.py under GDB (cached in
              BUILD/oracle-cache, keyed by the hashes of the binary, its
              libraries and the oracle script) and sanity-check what it saw
  2. record   env -i setarch -R BUILD/hwtrace record --backend ptrace -o TMP/bundle -- /abs/prog
              exit status must mirror the program's (128+N on fatal signal N)
  3. insn     BUILD/hwtrace dump --insn --tsv TMP/bundle; from the first
              occurrence of main's address (the thread function's entry for
              threads4) the addresses must equal the oracle one for one
  4. calls    BUILD/hwtrace dump --calls --tsv TMP/bundle against the call
              structure computed from the oracle (function names and nesting
              of the executable's own functions; other objects loosely)

Prints PASS/FAIL/SKIP lines, exits 1 on any FAIL.
Python 3.11 standard library only.

Usage: test_oracle.py --build DIR [--only a,b] [--keep] [--oracle-only]
                      [--self-test] [--hwtrace PATH] [-v]
"""

import argparse
import bisect
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from hwt_testlib import selected, selection_error

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, "oracle_gdb.py")
ORACLE_TIMEOUT = 600
RECORD_TIMEOUT = 900
DUMP_TIMEOUT = 600
CONTEXT = 5


class Prog:
    def __init__(self, name, thread_func=None, libs=(), sanity=None):
        self.name = name
        self.thread_func = thread_func
        self.libs = libs          # extra files (in programs/) the run depends on
        self.sanity = sanity


# --------------------------------------------------------------- results
class Reporter:
    def __init__(self, verbose):
        self.failures = 0
        self.verbose = verbose

    def line(self, kind, name, msg=""):
        if kind == "FAIL":
            self.failures += 1
        text = "%s %s" % (kind, name)
        if msg:
            text += ": " + msg if kind != "PASS" else " (" + msg + ")"
        print(text, flush=True)

    def info(self, msg):
        if self.verbose:
            print("  " + msg.replace("\n", "\n  "), flush=True)


class CheckFailed(Exception):
    pass


# ------------------------------------------------------------ utilities
def sha256_file(path, h=None):
    h = h or hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h


def status_of(rc):
    """subprocess return code -> shell-style status (128+N for signals)."""
    return 128 - rc if rc < 0 else rc


def system_libs():
    libs = []
    for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"):
        if os.path.exists(p):
            libs.append(os.path.realpath(p))
    return libs


# ------------------------------------------------------- ELF symbols
_symcache = {}


def elf_type(path):
    with open(path, "rb") as f:
        hdr = f.read(18)
    if len(hdr) < 18 or hdr[:4] != b"\x7fELF":
        return None
    return int.from_bytes(hdr[16:18], "little")


def debug_file_for(path):
    try:
        out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    except OSError:
        return None
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    if not m:
        return None
    bid = m.group(1)
    p = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
    return p if os.path.exists(p) else None


class Symbols:
    """Symbol tables of one ELF file (.symtab, .dynsym and a separate debug
    file if installed): name -> values, value -> names, value -> size."""

    def __init__(self, path):
        self.path = path
        self.by_name = {}
        self.by_value = {}
        self.size = {}
        files = [path]
        dbg = debug_file_for(path)
        if dbg:
            files.append(dbg)
        for f in files:
            for extra in ([], ["-D"]):
                try:
                    out = subprocess.run(["nm", "-S", "--defined-only"] + extra + [f],
                                         capture_output=True, text=True).stdout
                except OSError:
                    continue
                for line in out.splitlines():
                    p = line.split()
                    if len(p) == 4:
                        val, size, typ, name = int(p[0], 16), int(p[1], 16), p[2], p[3]
                    elif len(p) == 3:
                        val, size, typ, name = int(p[0], 16), 0, p[1], p[2]
                    else:
                        continue
                    if typ not in "TtWwiI":
                        continue
                    name = name.split("@")[0]
                    self.by_name.setdefault(name, set()).add(val)
                    self.by_value.setdefault(val, set()).add(name)
                    if size:
                        self.size[val] = max(size, self.size.get(val, 0))
        self.exec_type = elf_type(path) == 2  # ET_EXEC: symbol values are absolute


def symbols(path):
    if path not in _symcache:
        _symcache[path] = Symbols(path) if path.startswith("/") and os.path.exists(path) else None
    return _symcache[path]


def strip_suffixes(name):
    """fib.part.0 -> fib, classify.cold -> classify, foo@plt stays."""
    name = re.sub(r"\[cold\]$", "", name)   # GDB shows foo.cold as foo[cold]
    return re.sub(r"(\.(part|isra|constprop|cold|lto_priv|localalias)(\.\d+)?)+$", "", name)


# --------------------------------------------------------------- oracle
class OracleRun:
    """Addresses and metadata of one oracle output (main or one thread)."""

    def __init__(self, addrs, meta, label):
        self.addrs = addrs
        self.meta = meta
        self.label = label
        self.insns = {int(k, 16): v for k, v in meta.get("insns", {}).items()}
        self.objbase = {p: int(b, 16) for p, b in meta.get("objfiles", {}).items()}
        self.program = meta["program"]

    def desc(self, pc):
        i = self.insns.get(pc, {})
        sym = i.get("sym")
        where = "%s+%d" % (sym, i.get("off", 0)) if sym else "??"
        f = os.path.basename(i.get("file", "")) or "?"
        return "%s %s [%s] %s" % ("%#x" % pc, where, f, i.get("asm", ""))

    def bias(self, path):
        s = symbols(path)
        if s is None:
            return None
        return 0 if s.exec_type else self.objbase.get(path)

    def func_start(self, pc):
        """(file, start) of the function GDB named for PC, or None when GDB
        had no symbol or its symbol provably does not cover PC."""
        i = self.insns.get(pc)
        if not i or "sym" not in i:
            return None
        start = pc - i.get("off", 0)
        path = i.get("file", "")
        s = symbols(path)
        b = self.bias(path)
        if s is not None and b is not None:
            size = s.size.get(start - b)
            if size and pc >= start + size:
                return None
        return (path, start)

    def name(self, pc):
        i = self.insns.get(pc)
        if not i or "sym" not in i or self.func_start(pc) is None:
            return None
        return i["sym"]

    def in_program(self, pc):
        return self.insns.get(pc, {}).get("file") == self.program

    def cls(self, pc):
        return self.insns.get(pc, {}).get("class", "other")

    def length(self, pc):
        return self.insns.get(pc, {}).get("len", 0)


def oracle_cache_key(prog_path, prog, programs_dir, env=None):
    h = hashlib.sha256()
    h.update(prog_path.encode() + b"\0")
    h.update((prog.thread_func or "").encode() + b"\0")
    for k, v in sorted((env or {}).items()):
        h.update(("%s=%s" % (k, v)).encode() + b"\0")
    for p in [ORACLE, prog_path] + [os.path.join(programs_dir, l) for l in prog.libs] + system_libs():
        h.update(p.encode() + b"\0")
        sha256_file(p, h)
    return h.hexdigest()[:20]


def run_oracle(prog, prog_path, cache_root, programs_dir, env=None):
    """Returns (list of OracleRun, cache dir, seconds or None if cached).
    ENV: variables the program runs with besides PATH and HOME (such as
    GLIBC_TUNABLES, which picks other library code)."""
    key = oracle_cache_key(prog_path, prog, programs_dir, env)
    cdir = os.path.join(cache_root, "%s-%s" % (prog.name, key))
    out = os.path.join(cdir, "oracle.txt")
    meta_path = out + ".json"
    took = None
    if not (os.path.exists(meta_path) and "error" not in load_json(meta_path)):
        tmp = cdir + ".tmp%d" % os.getpid()
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        extra_env = env or {}
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "HOME": os.environ.get("HOME", "/root"),
               "ORACLE_PROG": prog_path,
               "ORACLE_OUT": os.path.join(tmp, "oracle.txt"),
               "ORACLE_ARGS": "[]"}
        if extra_env:
            env["ORACLE_ENV"] = json.dumps(extra_env)
        if prog.thread_func:
            env["ORACLE_THREAD_FUNC"] = prog.thread_func
        t0 = time.time()
        with open(os.path.join(tmp, "gdb.log"), "wb") as log, open(os.devnull, "rb") as dn:
            try:
                rc = subprocess.call(["gdb", "-nx", "-batch", "-x", ORACLE], env=env,
                                     stdin=dn, stdout=log, stderr=subprocess.STDOUT,
                                     cwd=programs_dir, timeout=ORACLE_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise CheckFailed("oracle: gdb took more than %d s (log in %s)" % (ORACLE_TIMEOUT, tmp))
        took = time.time() - t0
        tmeta = os.path.join(tmp, "oracle.txt.json")
        if rc != 0 or not os.path.exists(tmeta) or "error" in load_json(tmeta):
            err = load_json(tmeta).get("error") if os.path.exists(tmeta) else None
            raise CheckFailed("oracle: gdb failed (status %d): %s; log: %s" %
                              (rc, err or "no metadata written", os.path.join(tmp, "gdb.log")))
        # paths inside metadata point at tmp; rewrite to the final location
        meta = load_json(tmeta)
        if "threads" in meta:
            for t in meta["threads"]:
                t["file"] = os.path.join(cdir, os.path.basename(t["file"]))
        meta["files"] = {}
        with open(tmeta, "w") as f:
            json.dump(meta, f, indent=1, sort_keys=True)
        shutil.rmtree(cdir, ignore_errors=True)
        os.replace(tmp, cdir)
    meta = load_json(meta_path)
    runs = []
    if prog.thread_func:
        for t in meta["threads"]:
            runs.append(OracleRun(read_addrs(t["file"]), meta, "thread%d" % t["num"]))
    else:
        runs.append(OracleRun(read_addrs(out), meta, "main"))
    return runs, cdir, took


def load_json(path):
    with open(path) as f:
        return json.load(f)


def read_addrs(path):
    with open(path) as f:
        return [int(l, 16) for l in f if l.strip()]


# ------------------------------------------------------ oracle sanity
def entries_of(run, name):
    """Indices where the oracle enters function NAME (its offset 0)."""
    return [i for i, pc in enumerate(run.addrs)
            if run.insns.get(pc, {}).get("sym") == name and run.insns[pc].get("off") == 0]


def funcs_seen(run):
    """Executable functions (not PLT stubs) the oracle saw, by GDB's name."""
    names = {run.insns[pc].get("sym") for pc in set(run.addrs) if run.in_program(pc)}
    return {n for n in names if n and not n.endswith("@plt")}


def libc_variants(run, functions=("strlen", "strcmp", "memchr")):
    """{function: implementation GDB named} of libc string functions the
    oracle ran: glibc's pick for this CPU and GLIBC_TUNABLES, e.g.
    {"strlen": "__strlen_evex"}."""
    seen = {}
    for pc in set(run.addrs):
        sym = run.insns[pc].get("sym") or ""
        for f in functions:
            if sym.startswith("__%s_" % f):
                seen[f] = sym
    return seen


def need(cond, msg):
    if not cond:
        raise CheckFailed("oracle sanity: " + msg)


def sanity_common(run):
    m = run.meta
    need(run.addrs, "no addresses")
    need(m.get("environment") == [], "inferior environment not empty: %r" % m.get("environment"))


def sanity_exit(run):
    need(run.meta["end"]["reason"] == "exit-entry",
         "expected to end at exit(), ended %r" % run.meta["end"])
    need(run.addrs[-1] == int(run.meta["end_address"]["address"], 16), "last address is not exit")


def sanity_called(run, name, count=None, indirect=False, from_other_file=False):
    ent = entries_of(run, name)
    need(ent, "%s never entered" % name)
    if count is not None:
        need(len(ent) == count, "%s entered %d times, expected %d" % (name, len(ent), count))
    for i in ent:
        prev = run.addrs[i - 1]
        need(run.cls(prev) == "call", "%s entered at index %d not by a call (%s)" % (name, i, run.desc(prev)))
        if indirect:
            need(run.insns[prev].get("indirect"), "%s called directly at %d, expected indirect" % (name, i))
        if from_other_file:
            need(run.insns[prev].get("file") != run.program,
                 "%s called from the executable at %d, expected from a library" % (name, i))
    return ent


def sanity_loops(run):
    sanity_exit(run)
    need(funcs_seen(run) == {"main"}, "functions seen %r" % funcs_seen(run))
    need(any(run.insns[pc].get("sym") == "printf@plt" for pc in run.addrs), "printf@plt not seen")


def sanity_recursion(run):
    sanity_exit(run)
    sanity_called(run, "fib", count=67)
    sanity_called(run, "ackermann", count=27)


def sanity_fnptr(run):
    sanity_exit(run)
    for f in ("op_add", "op_sub", "op_mul", "op_xor"):
        sanity_called(run, f, indirect=True)


def sanity_qsort(run):
    sanity_exit(run)
    need(any(run.insns[pc].get("sym") == "qsort@plt" for pc in run.addrs), "qsort@plt not seen")
    ent = sanity_called(run, "cmp_int", indirect=True, from_other_file=True)
    need(len(ent) >= 11, "cmp_int called only %d times" % len(ent))


def sanity_strings(run):
    sanity_exit(run)
    got = libc_variants(run)
    need(len(got) == 3, "libc string implementations seen: %r" % got)


def sanity_switch(run):
    sanity_exit(run)
    ent = sanity_called(run, "classify", count=14)
    jumps = [i for i, pc in enumerate(run.addrs)
             if run.insns[pc].get("sym") == "classify" and run.cls(pc) == "jump"
             and run.insns[pc].get("indirect")]
    need(len(jumps) >= 12, "table jump in classify executed %d times" % len(jumps))
    targets = {run.addrs[i + 1] for i in jumps}
    need(len(targets) >= 8, "table jump reached only %d distinct cases" % len(targets))
    need(funcs_seen(run) & {"classify.cold", "classify[cold]"},
         "default case (classify.cold) never reached")


def sanity_longjmp(run):
    sanity_exit(run)
    sanity_called(run, "level1", count=1)
    sanity_called(run, "level2", count=1)
    # after longjmp the executable is re-entered by an indirect jump, not a ret
    back = [i for i in range(1, len(run.addrs))
            if run.in_program(run.addrs[i]) and not run.in_program(run.addrs[i - 1])
            and run.cls(run.addrs[i - 1]) == "jump" and run.insns[run.addrs[i - 1]].get("indirect")]
    need(back, "no indirect jump from libc back into the executable (longjmp)")


def sanity_signal(run):
    sanity_exit(run)
    sig = [s for s in run.meta["signals"] if s["signal"] == "SIGUSR1"]
    need(len(sig) == 1, "SIGUSR1 stops: %r" % run.meta["signals"])
    s = sig[0]["index"]
    need(run.cls(run.addrs[s - 1]) == "syscall", "signal not right after a syscall")
    need(run.insns[run.addrs[s + 1]].get("sym") == "on_usr1" and run.insns[run.addrs[s + 1]]["off"] == 0,
         "handler entry does not follow the interrupted instruction: %s" % run.desc(run.addrs[s + 1]))
    sanity_called(run, "handler_work", count=1)
    rt = [i for i, pc in enumerate(run.addrs) if run.insns[pc].get("sym") == "__restore_rt"]
    need(rt, "__restore_rt never executed")
    after = rt[-1] + 1
    need(run.addrs[after] == run.addrs[s], "sigreturn does not resume at the interrupted instruction")


def sanity_crash(run, chain=("main", "a", "b"), last_in="b"):
    end = run.meta["end"]
    need(end == {"reason": "signal", "signal": "SIGSEGV"}, "end %r" % end)
    need(run.insns[run.addrs[-1]].get("sym") == last_in,
         "fault not in %s: %s" % (last_in, run.desc(run.addrs[-1])))
    for f in chain[1:]:
        sanity_called(run, f, count=None)


def sanity_demo_crash(run):
    sanity_crash(run, chain=("main", "parse_config", "lookup"), last_in="lookup")


def sanity_pie_lib(run):
    sanity_exit(run)
    lib = [pc for pc in set(run.addrs) if run.insns[pc].get("file", "").endswith("/libhwtdemo.so")]
    need(lib, "nothing executed in libhwtdemo.so")
    sanity_called(run, "triple", indirect=True, from_other_file=True)
    need(run.meta["objfiles"].get(run.program) == "0x555555554000", "PIE not at the usual no-ASLR base")


def sanity_dlopen(run):
    sanity_exit(run)
    need(any(run.insns[pc].get("file", "").endswith("/libhwtdemo.so") for pc in set(run.addrs)),
         "nothing executed in libhwtdemo.so")
    need(any(run.insns[pc].get("sym") == "hwt_demo_sum" for pc in run.addrs), "hwt_demo_sum not seen")


def sanity_threads4(runs):
    need(len(runs) == 4, "%d threads recorded, expected 4" % len(runs))
    lens = sorted(len(r.addrs) for r in runs)
    need(len(set(lens)) == 4, "threads not distinguishable by length: %r" % lens)
    for r in runs:
        need(r.insns[r.addrs[0]].get("sym") == "worker", "thread does not start at worker")
        need(not r.in_program(r.addrs[-1]), "thread does not end outside the executable")
        need(entries_of(r, "collatz_steps"), "collatz_steps not called")


PROGRAMS = [
    Prog("loops", sanity=sanity_loops),
    Prog("loops_O0", sanity=sanity_loops),
    Prog("recursion", sanity=sanity_recursion),
    Prog("fnptr", sanity=sanity_fnptr),
    Prog("qsort", sanity=sanity_qsort),
    Prog("switch", sanity=sanity_switch),
    Prog("longjmp", sanity=sanity_longjmp),
    Prog("signal", sanity=sanity_signal),
    Prog("crash", sanity=sanity_crash),
    Prog("threads4", thread_func="worker", sanity=sanity_threads4),
    Prog("pie_lib", libs=("libhwtdemo.so",), sanity=sanity_pie_lib),
    Prog("dlopen", libs=("libhwtdemo.so",), sanity=sanity_dlopen),
    Prog("demo_crash", sanity=sanity_demo_crash),
    Prog("strings", sanity=sanity_strings),
]


# ------------------------------------------------------ hwtrace dumps
class Item:
    __slots__ = ("index", "addr", "gap")

    def __init__(self, index, addr, gap):
        self.index, self.addr, self.gap = index, addr, gap


def parse_insn_tsv(text):
    """-> ordered dict tid -> [Item]; raises CheckFailed on malformed lines."""
    threads = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split("\t")
        try:
            if len(f) < 3:
                raise ValueError
            tid, idx = int(f[0]), int(f[1])
            if f[2] == "gap":
                item = Item(idx, None, f[3] if len(f) > 3 else "")
            else:
                item = Item(idx, int(f[2], 16), None)
        except ValueError:
            raise CheckFailed("dump --insn: malformed line %d: %r" % (n, line[:200]))
        threads.setdefault(tid, []).append(item)
    return threads


class CallSeg:
    __slots__ = ("level", "func", "first", "last")

    def __init__(self, level, func, first, last):
        self.level, self.func, self.first, self.last = level, func, first, last


def parse_calls_tsv(text):
    threads = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split("\t")
        try:
            if len(f) < 5:
                raise ValueError
            seg = CallSeg(int(f[1]), f[2].strip(), int(f[3]), int(f[4]))
            tid = int(f[0])
        except ValueError:
            raise CheckFailed("dump --calls: malformed line %d: %r" % (n, line[:200]))
        threads.setdefault(tid, []).append(seg)
    return threads


# ------------------------------------------------------- insn compare
class Alignment:
    """Result of comparing one oracle run with one hwtrace thread."""

    def __init__(self):
        self.ok = False
        self.pos = []          # oracle position -> hwtrace list position (or None if skipped)
        self.notes = []
        self.error = None
        self.match_len = 0     # oracle positions matched before the first mismatch


def align(run, items, start_pc, strict_end):
    """Compare run.addrs with items from the first occurrence of start_pc."""
    a = Alignment()
    a.items = items
    a.start_k = 0
    a.fail_k = None
    starts = [k for k, it in enumerate(items) if it.addr == start_pc]
    if not starts:
        a.error = "start address %s never appears in the thread's history (%d items)" % (
            run.desc(start_pc), len(items))
        return a
    k = starts[0]
    a.start_k = k
    o = 0
    pos = []
    n = len(run.addrs)
    while o < n:
        if k >= len(items):
            a.error = "hwtrace history ends after %d of %d oracle instructions" % (o, n)
            a.fail_k = k
            break
        it = items[k]
        if it.gap is not None:
            a.error = "gap (%s) at oracle index %d" % (it.gap, o)
            a.fail_k = k
            break
        if it.addr == run.addrs[o]:
            pos.append(k)
            o += 1
            k += 1
            continue
        a.error = "first mismatch at oracle index %d (hwtrace index %d)" % (o, it.index)
        a.fail_k = k
        break
    a.pos = pos
    a.match_len = o
    if a.error is None and strict_end:
        rest = [it for it in items[k:] if it.gap is None]
        if rest:
            a.fail_k = k
            a.error = ("oracle ends with a fatal signal at %s but hwtrace has %d more "
                       "instructions after it, first %#x" % (run.desc(run.addrs[-1]), len(rest), rest[0].addr))
    a.ok = a.error is None
    return a


def context_report(run, items, a):
    """~CONTEXT lines around the mismatch on both sides."""
    o = min(a.match_len, len(run.addrs) - 1)
    hk = a.fail_k if a.fail_k is not None else a.start_k
    lines = ["   oracle:"]
    for i in range(max(0, o - CONTEXT), min(len(run.addrs), o + CONTEXT + 1)):
        lines.append("   %s %6d  %s" % (">>" if i == o else "  ", i, run.desc(run.addrs[i])))
    lines.append("   hwtrace:")
    for j in range(max(0, hk - CONTEXT), min(len(items), hk + CONTEXT + 1)):
        it = items[j]
        txt = ("gap %s" % it.gap) if it.gap is not None else run.desc(it.addr)
        lines.append("   %s %6d  %s" % (">>" if j == hk else "  ", it.index, txt))
    return "\n".join(lines)


# ------------------------------------------------------- call structure
UP_TAILCALL, UP_RET = 1, 2


class OSeg:
    __slots__ = ("idx", "fkey", "name", "level", "up", "flags", "prev", "next",
                 "first", "last", "last_cls", "kind", "caller")

    def __init__(self, idx, fkey, name, level):
        self.idx, self.fkey, self.name, self.level = idx, fkey, name, level
        self.up = self.prev = self.next = self.caller = None
        self.flags = 0
        self.first = self.last = None
        self.last_cls = None
        self.kind = "first"


def oracle_calls(run, variant="gdb"):
    """Function segments of the oracle addresses the way GDB's btrace builds
    them (gdb/btrace.c ftrace_update_function and friends).  variant "flat"
    treats a jump into another function as a switch at the same level
    instead of GDB's tail call (+1).  Returns (segments, seg index per insn)."""
    segs = []
    seg_of = []

    def switched(b, fk):
        if b.fkey is not None and fk is not None:
            return b.fkey != fk
        return (b.fkey is None) != (fk is None)

    def new(fk, name):
        s = OSeg(len(segs), fk, name, segs[-1].level if segs else 0)
        segs.append(s)
        return s

    def up_of(b):
        return segs[b.up] if b is not None and b.up is not None else None

    def find_caller(b, fk):
        while b is not None and switched(b, fk):
            b = up_of(b)
        return b

    def find_call(b):
        while b is not None and b.last_cls != "call":
            b = up_of(b)
        return b

    def fixup_caller(b, caller, flags):
        def upd(x):
            x.up, x.flags = caller, flags
        upd(b)
        p = b.prev
        while p is not None:
            upd(segs[p])
            p = segs[p].prev
        q = b.next
        while q is not None:
            upd(segs[q])
            q = segs[q].next

    def new_call(fk, name, kind):
        prev = segs[-1]
        b = new(fk, name)
        b.up = prev.idx
        b.level += 1
        b.kind = kind
        if kind == "tailcall":
            b.flags = UP_TAILCALL
        return b

    def new_return(fk, name):
        prev = segs[-1]
        b = new(fk, name)
        caller = find_caller(up_of(prev), fk)
        if caller is not None:
            caller.next = b.idx
            b.prev = caller.idx
            b.level = caller.level
            b.up = caller.up
            b.flags = caller.flags
            b.kind = "return"
            b.caller = caller.idx
        else:
            c = find_call(up_of(prev))
            if c is None:
                p = prev
                while p.up is not None:
                    p = segs[p.up]
                b.level = p.level - 1
                fixup_caller(p, b.idx, UP_RET)
                b.kind = "return-nocaller"
            else:
                b.level = prev.level - 1
                prev.up = b.idx
                prev.flags = UP_RET
                b.kind = "return-unknown"
        return b

    def new_switch(fk, name):
        prev = segs[-1]
        b = new(fk, name)
        b.up, b.flags = prev.up, prev.flags
        b.kind = "switch"
        return b

    addrs = run.addrs
    for i, pc in enumerate(addrs):
        fk = run.func_start(pc)
        name = run.name(pc)
        if i == 0:
            b = new(fk, name)
        else:
            b = segs[-1]
            lpc = addrs[i - 1]
            lcls = run.cls(lpc)
            nb = None
            if lcls == "ret":
                if b.name == "_dl_runtime_resolve":
                    nb = new_call(fk, name, "tailcall")
                else:
                    nb = new_return(fk, name)
            elif lcls == "call":
                if lpc + run.length(lpc) != pc:
                    nb = new_call(fk, name, "call")
            elif lcls == "jump" and variant == "gdb":
                start = fk[1] if fk else None
                if start == pc:
                    nb = new_call(fk, name, "tailcall")
                elif start is None and switched(b, fk):
                    nb = new_call(fk, name, "tailcall")
            if nb is None and switched(b, fk):
                nb = new_switch(fk, name)
            if nb is not None:
                b = nb
        if b.first is None:
            b.first = i
        b.last = i
        b.last_cls = run.cls(pc)
        seg_of.append(b.idx)
    return segs, seg_of


def names_match(run, pc, hname):
    """True / False / None (cannot tell) whether hwtrace's function name
    HNAME names the function the oracle saw at PC."""
    if not hname or hname in ("??", "?", "-", "<unknown>"):
        return None
    oname = run.name(pc)
    if oname is None:
        return None
    hn = hname.split("@@")[0]
    if hn.endswith("@plt") or oname.endswith("@plt"):
        return None if not (hn.endswith("@plt") and oname.endswith("@plt")) else hn == oname
    hn = re.sub(r"@.*$", "", hn)
    hn = re.sub(r"\+0x[0-9a-f]+$|\+\d+$", "", hn)
    if hn == oname or strip_suffixes(hn) == strip_suffixes(oname):
        return True
    path, start = run.func_start(pc)
    s = symbols(path)
    b = run.bias(path)
    if s is None or b is None:
        return None
    vals = s.by_name.get(hn)
    if not vals:
        return None          # a name we cannot resolve: no verdict
    return (start - b) in vals


def exe_function_insn(run, pc):
    """PC is in one of the executable's own named functions (not a PLT stub,
    not PLT0)."""
    i = run.insns.get(pc, {})
    return (i.get("file") == run.program and i.get("sym") and not i["sym"].endswith("@plt")
            and not i.get("section", "").startswith(".plt") and run.func_start(pc) is not None)


def compare_calls(run, a, segs_h):
    """Compare hwtrace's call segments (one thread) with the oracle's.
    Strict for the executable's own functions: names, segment boundaries,
    nesting change between consecutive executable instructions, and that a
    return into an executable function restores the caller's level; the
    nesting checks pass if they hold under GDB's convention (a jump to a
    function start is a tail call, +1) or under the flat one (+0).  Loose
    for other objects: a name both sides know must be the same function.
    Returns (errors, notes)."""
    errors, notes = [], []
    n = len(run.addrs)
    segs_h = sorted(segs_h, key=lambda s: s.first)
    firsts = [s.first for s in segs_h]

    def hseg_at(index):
        j = bisect.bisect_right(firsts, index) - 1
        if j >= 0 and segs_h[j].first <= index <= segs_h[j].last:
            return j
        return None

    hidx = []
    for o in range(n):
        k = a.pos[o] if o < len(a.pos) else None
        hidx.append(a.items[k].index if k is not None else None)
    hs = [hseg_at(x) if x is not None else None for x in hidx]
    missing = [o for o in range(n) if hidx[o] is not None and hs[o] is None]
    if missing:
        o = missing[0]
        errors.append("%d instructions not covered by any call segment, first oracle index %d "
                      "(hwtrace index %d)" % (len(missing), o, hidx[o]))
        return errors, notes

    prog = [o for o in range(n) if hidx[o] is not None and exe_function_insn(run, run.addrs[o])]
    in_prog = set(prog)

    def hlevel(o):
        return segs_h[hs[o]].level

    def hname(o):
        return segs_h[hs[o]].func

    # (a) names of the executable's functions
    for o in prog:
        v = names_match(run, run.addrs[o], hname(o))
        if v is not True:
            errors.append("oracle index %d %s: hwtrace function %r" % (o, run.desc(run.addrs[o]), hname(o)))
            break

    def nesting_errors(variant):
        osegs, oseg_of = oracle_calls(run, variant)
        errs = []
        # (b) segment boundaries and (c) nesting change inside the executable
        for o in prog:
            if o == 0 or (o - 1) not in in_prog:
                continue
            onew = oseg_of[o] != oseg_of[o - 1]
            hnew = hs[o] != hs[o - 1]
            if onew != hnew:
                errs.append("oracle index %d %s: oracle %s a new function segment here, hwtrace %s" % (
                    o, run.desc(run.addrs[o]), "starts" if onew else "does not start",
                    "does" if hnew else "does not"))
                break
            od = osegs[oseg_of[o]].level - osegs[oseg_of[o - 1]].level
            hd = hlevel(o) - hlevel(o - 1)
            if od != hd:
                errs.append("oracle index %d %s: nesting changes by %+d, hwtrace by %+d" % (
                    o, run.desc(run.addrs[o]), od, hd))
                break
        # (d) returning into an executable function restores its level
        for o in prog:
            sg = osegs[oseg_of[o]]
            if sg.first != o or sg.kind != "return" or sg.caller is None:
                continue
            co = osegs[sg.caller].last
            if co not in in_prog:
                continue
            if hlevel(o) != hlevel(co):
                errs.append("oracle index %d %s: the return to %s should restore the level it had at "
                            "index %d (hwtrace %d), hwtrace has %d" % (
                                o, run.desc(run.addrs[o]), sg.name, co, hlevel(co), hlevel(o)))
                break
        # global nesting relative to the first executable instruction (informational)
        glob = bool(prog) and all(
            hlevel(o) - hlevel(prog[0]) == osegs[oseg_of[o]].level - osegs[oseg_of[prog[0]]].level
            for o in prog)
        return errs, glob

    gerrs, gglob = nesting_errors("gdb")
    if not gerrs:
        notes.append("nesting as gdb" + ("" if gglob else " (locally; global levels differ)"))
    else:
        ferrs, fglob = nesting_errors("flat")
        if not ferrs:
            notes.append("nesting as flat convention" + ("" if fglob else " (locally)"))
        else:
            errors += gerrs

    # (e) other objects: names where both sides know them
    bad = {}
    checked = 0
    for o in range(n):
        if hidx[o] is None or o in in_prog:
            continue
        v = names_match(run, run.addrs[o], hname(o))
        if v is None:
            continue
        checked += 1
        if v is False:
            bad.setdefault((run.name(run.addrs[o]), hname(o)), o)
    if bad:
        (_on, hn), o = sorted(bad.items(), key=lambda kv: kv[1])[0]
        errors.append("other objects' function names differ for %d name pair(s); first at oracle "
                      "index %d %s: hwtrace %r" % (len(bad), o, run.desc(run.addrs[o]), hn))
    notes.append(("checked", len(prog), checked))
    return errors, notes


# --------------------------------------------------------- one program
def run_cmd(cmd, cwd, out_path, err_path, timeout):
    with open(out_path, "wb") as out, open(err_path, "wb") as err, open(os.devnull, "rb") as dn:
        p = subprocess.Popen(cmd, cwd=cwd, stdin=dn, stdout=out, stderr=err, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise CheckFailed("%s timed out after %d s" % (" ".join(cmd[:4]), timeout))
    return rc


def tail(path, n=6):
    try:
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    return " | ".join(lines[-n:])


def expected_run(prog_path, cwd, tmp):
    """Run the program itself the same way: expected status and stdout."""
    out, err = os.path.join(tmp, "direct.out"), os.path.join(tmp, "direct.err")
    rc = run_cmd(["env", "-i", "setarch", "-R", prog_path], cwd, out, err, 60)
    with open(out, "rb") as f:
        return status_of(rc), f.read()


def check_program(prog, args, programs_dir, hwtrace, runs, rep):
    name = prog.name
    prog_path = os.path.realpath(os.path.join(programs_dir, name))
    if hwtrace is None:
        rep.line("FAIL", name, "hwtrace missing: %s does not exist or is not executable "
                 "(build it with `make`)" % (args.hwtrace or os.path.join(args.build, "hwtrace")))
        return
    tmp = tempfile.mkdtemp(prefix="hwt-oracle-%s-" % name)
    keep = args.keep
    try:
        want_status, want_out = expected_run(prog_path, programs_dir, tmp)
        bundle = os.path.join(tmp, "bundle")
        rec_out, rec_err = os.path.join(tmp, "record.out"), os.path.join(tmp, "record.err")
        cmd = ["env", "-i", "setarch", "-R", hwtrace, "record", "--backend", "ptrace", "-o", bundle, "--", prog_path]
        t0 = time.time()
        rc = run_cmd(cmd, programs_dir, rec_out, rec_err, RECORD_TIMEOUT)
        rec_time = time.time() - t0
        status = status_of(rc)
        with open(rec_out, "rb") as f:
            got_out = f.read()
        if status != want_status:
            raise CheckFailed("record: exit status %d, the program's is %d; stderr: %s" % (
                status, want_status, tail(rec_err)))
        if want_out and want_out not in got_out:
            raise CheckFailed("record: program output %r missing from hwtrace's stdout" % want_out[:80])
        if not os.path.exists(bundle):
            raise CheckFailed("record: no bundle written at %s; stderr: %s" % (bundle, tail(rec_err)))
        dump_out, dump_err = os.path.join(tmp, "insn.tsv"), os.path.join(tmp, "insn.err")
        rc = run_cmd([hwtrace, "dump", "--insn", "--tsv", bundle], programs_dir, dump_out, dump_err,
                     DUMP_TIMEOUT)
        if rc != 0:
            raise CheckFailed("dump --insn failed (status %d): %s" % (status_of(rc), tail(dump_err)))
        with open(dump_out, errors="replace") as f:
            threads = parse_insn_tsv(f.read())
        if not threads:
            raise CheckFailed("dump --insn printed no history")
        tids = list(threads)
        aligns = []   # (run, tid, alignment)
        if not prog.thread_func:
            run = runs[0]
            a = align(run, threads[tids[0]], run.addrs[0],
                      strict_end=run.meta["end"]["reason"] == "signal")
            if not a.ok:
                keep = True
                raise CheckFailed("insn: %s\n%s\n   (bundle kept in %s)" % (
                    a.error, context_report(run, a.items, a), tmp))
            aligns.append((run, tids[0], a))
        else:
            others = tids[1:]
            if len(others) < len(runs):
                raise CheckFailed("insn: hwtrace has %d threads besides main, oracle %d" % (
                    len(others), len(runs)))
            used = set()
            for run in runs:
                best = None
                for tid in others:
                    if tid in used:
                        continue
                    a = align(run, threads[tid], run.addrs[0], strict_end=False)
                    if a.ok:
                        best = (tid, a)
                        break
                    if best is None or a.match_len > best[1].match_len:
                        best = (tid, a)
                tid, a = best
                if not a.ok:
                    keep = True
                    raise CheckFailed("insn: oracle %s has no matching hwtrace thread; closest "
                                      "tid %d: %s\n%s\n   (bundle kept in %s)" % (
                                          run.label, tid, a.error,
                                          context_report(run, a.items, a), tmp))
                used.add(tid)
                aligns.append((run, tid, a))
        notes = []
        for _r, _t, a in aligns:
            notes += a.notes
        total = sum(len(r.addrs) for r, _t, _a in aligns)
        rep.line("PASS", name + "/insn", "%d insns, record %.1fs%s" % (
            total, rec_time, "; " + "; ".join(sorted(set(notes))) if notes else ""))

        # calls
        cout, cerr = os.path.join(tmp, "calls.tsv"), os.path.join(tmp, "calls.err")
        rc = run_cmd([hwtrace, "dump", "--calls", "--tsv", bundle], programs_dir, cout, cerr,
                     DUMP_TIMEOUT)
        if rc != 0:
            raise CheckFailed("calls: dump --calls failed (status %d): %s" % (status_of(rc), tail(cerr)))
        with open(cout, errors="replace") as f:
            calls = parse_calls_tsv(f.read())
        cnotes = []
        n_exe = n_other = 0
        for run, tid, a in aligns:
            if tid not in calls:
                raise CheckFailed("calls: no call segments for thread %d" % tid)
            errs, ns = compare_calls(run, a, calls[tid])
            if errs:
                keep = True
                raise CheckFailed("calls (%s, tid %d): %s   (bundle kept in %s)" % (
                    run.label, tid, "; ".join(errs), tmp))
            for x in ns:
                if isinstance(x, tuple):
                    n_exe += x[1]
                    n_other += x[2]
                elif x not in cnotes:
                    cnotes.append(x)
        rep.line("PASS", name + "/calls", "; ".join(
            ["names checked on %d executable + %d other insns" % (n_exe, n_other)] + cnotes))
    except CheckFailed as e:
        keep = True
        rep.line("FAIL", name, "%s (files in %s)" % (e, tmp) if str(tmp) not in str(e) else str(e))
    except Exception as e:  # a bug here must not hide the other programs' results
        keep = True
        rep.line("FAIL", name, "test error %s: %s (files in %s)" % (type(e).__name__, e, tmp))
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------ self-test
def fake_dump(run, tid, prefix=3, base_index=100):
    """hwtrace-like items for the oracle addresses, with some history before."""
    items = [Item(base_index + i, 0x1000 + i, None) for i in range(prefix)]
    for i, pc in enumerate(run.addrs):
        items.append(Item(base_index + prefix + i, pc, None))
    return items


def segs_from_oracle(run, items, variant="gdb", level_shift=7):
    segs, seg_of = oracle_calls(run, variant)
    out = []
    off = items[0].index + (len(items) - len(run.addrs))
    for s in segs:
        out.append(CallSeg(s.level + level_shift, s.name or "", s.first + off, s.last + off))
    out.insert(0, CallSeg(level_shift, "_start", items[0].index, off - 1))
    return out


def self_test(runs_by_prog, rep):
    """Compare every oracle against perturbed copies of itself."""
    for name, runs in runs_by_prog.items():
        run = runs[0]
        n = len(run.addrs)
        strict = run.meta["end"]["reason"] == "signal" and run.label == "main"
        errs = []

        def expect(label, items, ok, at=None):
            a = align(run, items, run.addrs[0], strict_end=strict)
            if a.ok != ok or (at is not None and a.match_len != at):
                errs.append("%s: ok=%s match_len=%d error=%s" % (label, a.ok, a.match_len, a.error))
            return a

        base = fake_dump(run, 1)
        a = expect("identical", base, True)
        if a.ok:
            e, notes = compare_calls(run, a, segs_from_oracle(run, base))
            if e:
                errs.append("calls identical: %s" % e)
            e, notes = compare_calls(run, a, segs_from_oracle(run, base, "flat"))
            if e:
                errs.append("calls flat: %s" % e)
            # perturb: shift the level of one executable segment
            segs = segs_from_oracle(run, base)
            off0 = base[0].index + 3
            prog_segs = [s for s in segs[1:] if 0 <= s.first - off0 < n and
                         exe_function_insn(run, run.addrs[s.first - off0])]
            if len(prog_segs) > 1:
                prog_segs[-1].level += 1
                e, _ = compare_calls(run, a, segs)
                if not e:
                    errs.append("calls: level perturbation not detected")
                prog_segs[-1].level -= 1
                old = prog_segs[-1].func
                prog_segs[-1].func = "not_" + (old or "x")
                e, _ = compare_calls(run, a, segs)
                if not e:
                    errs.append("calls: name perturbation not detected")
                prog_segs[-1].func = old
            # merge two executable segments: boundary perturbation
            for j in range(2, len(segs)):
                s0, s1 = segs[j - 1], segs[j]
                o1 = s1.first - (base[0].index + 3)
                if 0 < o1 < n and run.in_program(run.addrs[o1]) and run.in_program(run.addrs[o1 - 1]) \
                        and s0.level == s1.level and s0.func == s1.func:
                    merged = segs[:j - 1] + [CallSeg(s0.level, s0.func, s0.first, s1.last)] + segs[j + 1:]
                    e, _ = compare_calls(run, a, merged)
                    if not e:
                        errs.append("calls: merged segments not detected")
                    break
        for at in (0, n // 2, n - 1):
            items = fake_dump(run, 1)
            items[3 + at] = Item(items[3 + at].index, run.addrs[at] ^ 0x10, None)
            expect("changed@%d" % at, items, False, at)
        if n > 4:
            items = fake_dump(run, 1)
            del items[3 + n // 2]
            expect("dropped", items, False, n // 2)
            items = fake_dump(run, 1)
            items.insert(3 + n // 2, Item(0, 0xdead0, None))
            expect("inserted", items, False, n // 2)
            items = fake_dump(run, 1)
            items.insert(3 + n // 2, Item(0, None, "overflow"))
            expect("gap", items, False, n // 2)
            items = fake_dump(run, 1)[:3 + n - 1]
            expect("truncated", items, False, n - 1)
        if strict:
            items = fake_dump(run, 1) + [Item(0, 0x4242, None)]
            expect("extra-after-fatal", items, False)
        # one rep iteration too many, or any instruction twice -> mismatch
        reps = [i for i, pc in enumerate(run.addrs) if run.insns[pc].get("asm", "").startswith("rep")]
        if reps:
            items = fake_dump(run, 1)
            items.insert(3 + reps[0], Item(0, run.addrs[reps[0]], None))
            # surfaces where the run of iterations ends, not where inserted
            expect("rep-extra-iteration", items, False)
        plain = next((i for i in range(n // 2, n) if not run.insns[run.addrs[i]].get("asm", "").startswith("rep")), None)
        if plain is not None:
            items = fake_dump(run, 1)
            items.insert(3 + plain, Item(0, run.addrs[plain], None))
            expect("duplicate", items, False, plain + 1)
        # signal delivery must keep the interrupted address
        for s in run.meta.get("signals", []):
            if not s.get("pc_changed", True) and s["index"] + 1 < n and run.label == "main":
                items = fake_dump(run, 1)
                del items[3 + s["index"]]
                expect("signal-short-form", items, False, s["index"])
        if errs:
            rep.line("FAIL", name + "/self-test", "; ".join(errs))
        else:
            rep.line("PASS", name + "/self-test", "%d insns" % n)


# ------------------------------------------------------------------ main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build dir with hwtrace and programs/")
    ap.add_argument("--hwtrace", help="hwtrace binary (default BUILD/hwtrace)")
    ap.add_argument("--only", help="comma-separated program names")
    ap.add_argument("--keep", action="store_true", help="keep temporary bundles")
    ap.add_argument("--oracle-only", action="store_true", help="only run and sanity-check the oracle")
    ap.add_argument("--self-test", action="store_true",
                    help="check the comparison logic against perturbed oracle copies")
    ap.add_argument("--no-cache", action="store_true", help="recompute oracle outputs")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="parallel oracle runs")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    rep = Reporter(args.verbose)

    programs_dir = os.path.join(args.build, "programs")
    progs = PROGRAMS
    if args.only:
        want = set(args.only.split(","))
        unknown = want - {p.name for p in PROGRAMS}
        if unknown:
            print("unknown program(s): %s" % ", ".join(sorted(unknown)), file=sys.stderr)
            return 2
        progs = [p for p in PROGRAMS if p.name in want]
    progs = [p for p in progs if selected(p.name)]
    if selection_error():
        rep.line("FAIL", "select", selection_error())
        return 1

    hwtrace = os.path.abspath(args.hwtrace) if args.hwtrace else os.path.join(args.build, "hwtrace")
    if not (os.path.isfile(hwtrace) and os.access(hwtrace, os.X_OK)):
        hwtrace = None
    for tool in ("gdb", "setarch", "nm", "readelf"):
        if shutil.which(tool) is None:
            for p in progs:
                rep.line("FAIL", p.name, "%s is not installed (apt-get install gdb util-linux binutils)" % tool)
            return 1

    cache_root = os.path.join(args.build, "oracle-cache")
    os.makedirs(cache_root, exist_ok=True)
    if args.no_cache:
        shutil.rmtree(cache_root, ignore_errors=True)
        os.makedirs(cache_root)

    # phase 1: oracles (parallel)
    present = []
    for p in progs:
        path = os.path.join(programs_dir, p.name)
        missing = [f for f in [path] + [os.path.join(programs_dir, l) for l in p.libs]
                   if not os.path.exists(f)]
        if missing:
            rep.line("FAIL", p.name, "test program not built: %s missing (run `make programs`)" % missing[0])
        else:
            present.append(p)
    oracle = {}

    def job(p):
        try:
            return p, run_oracle(p, os.path.realpath(os.path.join(programs_dir, p.name)),
                                 cache_root, programs_dir), None
        except CheckFailed as e:
            return p, None, str(e)
        except Exception as e:  # report, keep going
            return p, None, "oracle: %s: %s" % (type(e).__name__, e)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        results = list(ex.map(job, present))
    for p, res, err in results:
        if err:
            rep.line("FAIL", p.name + "/oracle", err)
            continue
        runs, cdir, took = res
        try:
            for r in runs:
                sanity_common(r)
            if p.sanity:
                p.sanity(runs if p.thread_func else runs[0])
        except CheckFailed as e:
            rep.line("FAIL", p.name + "/oracle", "%s (oracle output in %s)" % (e, cdir))
            continue
        m = runs[0].meta
        rep.line("PASS", p.name + "/oracle", "%d insns%s, %s" % (
            sum(len(r.addrs) for r in runs),
            " in %d threads" % len(runs) if p.thread_func else "",
            "%.1fs, %.0f stepi/s" % (took, m["stepi"] / took) if took else "cached"))
        oracle[p.name] = runs

    if args.self_test:
        self_test(oracle, rep)
        return 1 if rep.failures else 0
    if args.oracle_only:
        return 1 if rep.failures else 0

    # phase 2: hwtrace against the oracle
    for p in present:
        if p.name not in oracle:
            rep.line("SKIP", p.name, "no usable oracle output")
            continue
        check_program(p, args, programs_dir, hwtrace, oracle[p.name], rep)
    return 1 if rep.failures else 0


if __name__ == "__main__":
    sys.exit(main())
