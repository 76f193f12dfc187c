#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The valgrind backend (docs/valgrind.md) against the GDB stepi oracle.

Each test program is recorded with `hwtrace record --backend valgrind`.
Valgrind's synthetic cpu makes glibc pick other library code than a
native run (no AVX-512), and it loads the dynamic linker and libraries at
other addresses, so the comparison is the program's own code: the
sequence of its instructions, as offsets in its executable, of every
thread must equal the oracle's exactly. The exit status, the stop record
and the module list are checked too, and bad input gets a clear error.
"""
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_gdb_live  # noqa: E402
import test_oracle  # noqa: E402
from hwt_testlib import (ServerProcess, dump_items, exit_status,  # noqa: E402
                         parse_args, report, run_tool, selected)

PROGS = ['loops', 'loops_O0', 'recursion', 'fnptr', 'qsort', 'switch',
         'longjmp', 'signal', 'crash', 'demo_crash', 'pie_lib', 'dlopen',
         'strings', 'threads4']

# Library code too, where both runs pick the same glibc code: glibc's AVX2
# variants natively (Valgrind has no AVX-512) and every symbol bound at
# startup (Valgrind preloads a library, which changes lazy lookups).
SAME_LIBC = {'GLIBC_TUNABLES': 'glibc.cpu.hwcaps=-AVX512F,-AVX512VL',
             'LD_BIND_NOW': '1'}
# Programs whose library code depends on what differs under Valgrind:
# data addresses (strcmp takes its page-crossing path on other stack and
# heap addresses), the link map (dlopen walks Valgrind's preloaded
# library too), the sigaction a signal handler is installed with.
DIFFERENT_LIBC = {
    'strings': 'strcmp takes its page-crossing path on Valgrind\'s addresses',
    'demo_crash': 'strcmp takes its page-crossing path on Valgrind\'s addresses',
    'dlopen': 'dlopen walks a link map that holds Valgrind\'s preloaded library',
    'signal': '__libc_sigaction takes another branch after its system '
              'call under Valgrind',
    'threads4': 'the oracle follows each thread from its function only',
}


def load_segments(path):
    """[(start, end, executable)] of the PT_LOAD segments of an ELF64 file,
    as link-time addresses."""
    with open(path, 'rb') as f:
        data = f.read()
    phoff, = struct.unpack_from('<Q', data, 0x20)
    phentsize, phnum = struct.unpack_from('<HH', data, 0x36)
    out = []
    for i in range(phnum):
        p_type, p_flags, _, p_vaddr, _, _, p_memsz, _ = struct.unpack_from(
            '<IIQQQQQQ', data, phoff + i * phentsize)
        if p_type == 1:
            out.append((p_vaddr, p_vaddr + p_memsz, bool(p_flags & 1)))
    return out


def exec_ranges(path):
    """[(start, end)] of the executable PT_LOAD segments of an ELF64 file,
    as link-time addresses."""
    return [(lo, hi) for lo, hi, x in load_segments(path) if x]


def own_offsets(addrs, bias, ranges):
    """The program's own instructions among ADDRS, as link-time addresses."""
    out = []
    for a in addrs:
        v = a - bias
        if any(s <= v < e for s, e in ranges):
            out.append(v)
    return out


def bundle_threads(hwtrace, bundle, prog_path):
    """{tid: own-code offsets} of a bundle's threads."""
    with open(os.path.join(bundle, 'trace.json')) as f:
        doc = json.load(f)
    mods = doc['processes'][0]['modules']
    real = os.path.realpath(prog_path)
    load = next((m['loadAddress'] for m in mods
                 if os.path.realpath(m['systemPath']) == real), None)
    if load is None:
        raise RuntimeError(f'{prog_path} is not among the bundle\'s modules')
    bias = 0 if test_oracle.elf_type(prog_path) == 2 else load
    rc, out, err = run_tool(hwtrace, 'dump', '--insn', '--tsv', bundle,
                            timeout=600)
    if rc != 0:
        raise RuntimeError(f'hwtrace dump: exit {rc}: {err.strip()}')
    seqs = {}
    for line in out.splitlines():
        f = line.split('\t')
        if len(f) < 5 or f[2] == 'gap':
            continue
        seq = seqs.setdefault(f[0], [])
        # The oracle ends at libc's exit, before stepping into it.
        if seq and seq[-1] is None:
            continue
        seq.append(None if f[4] == 'exit+0' else int(f[2], 16))
    ranges = exec_ranges(prog_path)
    return {tid: own_offsets([a for a in seq if a is not None], bias, ranges)
            for tid, seq in seqs.items()}


def load_ranges(bundle):
    """[(start, end, module name, bias)] of every loadable segment of the
    bundle's modules, as mapped."""
    with open(os.path.join(bundle, 'trace.json')) as f:
        mods = json.load(f)['processes'][0]['modules']
    out = []
    for m in mods:
        path = m['systemPath']
        bias = 0 if test_oracle.elf_type(path) == 2 else m['loadAddress']
        name = os.path.basename(os.path.realpath(path))
        out += [(lo + bias, hi + bias, name, bias)
                for lo, hi, _ in load_segments(path)]
    return out


def check_library(hwtrace, programs, tmp, prog):
    """The whole history from main to exit, library code included, as
    (module, offset) pairs: equal to the oracle's when both pick the same
    glibc code."""
    path = os.path.realpath(os.path.join(programs, prog))
    runs = test_gdb_live.oracle_of(prog, programs, SAME_LIBC)
    r = runs[0]

    def oracle_loc(pc):
        f = r.insns.get(pc, {}).get('file')
        b = r.bias(f) if f else None
        return (os.path.basename(os.path.realpath(f)), pc - b) \
            if b is not None else ('?', pc)

    want = [oracle_loc(pc) for pc in r.addrs]
    bundle = os.path.join(tmp, prog + '-libc')
    subprocess.run([hwtrace, 'record', '-q', '--backend', 'valgrind', '-o',
                    bundle, '--', path], capture_output=True, timeout=600,
                   env=dict(os.environ, **SAME_LIBC))
    ranges = load_ranges(bundle)

    def loc(pc):
        for lo, hi, name, bias in ranges:
            if lo <= pc < hi:
                return (name, pc - bias)
        return ('?', pc)

    rc, out, err = run_tool(hwtrace, 'dump', '--insn', '--tsv', bundle,
                            timeout=600)
    seq, names = [], []
    for line in out.splitlines():
        f = line.split('\t')
        if len(f) < 5 or f[2] == 'gap':
            continue
        seq.append(loc(int(f[2], 16)))
        names.append(f[4].split('+')[0])
        if f[4] == 'exit+0':
            break
    start = seq.index(want[0]) if want and want[0] in seq else 0
    have, names = seq[start:], names[start:]
    d = first_difference(have, want)
    if d is not None and d < len(have) and d < len(want):
        # Valgrind's cpu may offer other features than this one (ERMS,
        # say): glibc then picks another variant of a string function.
        # That is the cpu's doing, not the recorder's.
        ours = names[d]
        theirs = r.insns.get(r.addrs[d], {}).get('sym', '')
        vo, vt = (re.match(r'(__\w+?)_(?:avx|evex|sse|erms|ssse3|'
                           r'unaligned)', n) for n in (ours, theirs))
        if vo and vt and vo.group(1) == vt.group(1) and ours != theirs:
            print(f'SKIP {prog}: library code: glibc picked {theirs} '
                  f'natively and {ours} on Valgrind\'s cpu')
            return
    report(f'{prog}: library code too equals the oracle\'s with glibc\'s '
           'AVX2 code and symbols bound at startup', rc == 0 and d is None,
           f'{len(have)} vs {len(want)} instructions, first difference at '
           f'{d}: {have[d] if d is not None and d < len(have) else "-"} vs '
           f'{want[d] if d is not None and d < len(want) else "-"} '
           f'{err.strip()[-200:]}')


def first_difference(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n if len(a) != len(b) else None


def check_program(hwtrace, programs, tmp, prog):
    path = os.path.realpath(os.path.join(programs, prog))
    try:
        runs = test_gdb_live.oracle_of(prog, programs)
    except Exception as e:  # the oracle could not run: a failure
        report(f'{prog}: oracle', False, str(e))
        return
    bundle = os.path.join(tmp, prog)
    native = subprocess.run([path], cwd=tmp, capture_output=True)
    rc, _, err = run_tool(hwtrace, 'record', '-q', '--backend', 'valgrind',
                          '-o', bundle, '--', path, timeout=600)
    want_rc = 128 - native.returncode if native.returncode < 0 \
        else native.returncode
    report(f'{prog}: exit status as natively', rc == want_rc,
           f'valgrind record {rc}, native {native.returncode}: {err.strip()}')
    if not os.path.isdir(bundle):
        return
    try:
        got = bundle_threads(hwtrace, bundle, path)
    except (RuntimeError, OSError, KeyError) as e:
        report(f'{prog}: history', False, str(e))
        return
    ranges = exec_ranges(path)
    want = [own_offsets(r.addrs, r.bias(r.program) or 0, ranges)
            for r in runs]
    want = [w for w in want if w]
    have = [g for g in got.values() if g]
    # The oracle starts where the program's main (or a thread's
    # function) does: each of its runs is a recorded thread from there.
    unmatched = list(have)
    for w in want:
        match = None
        for h in unmatched:
            start = h.index(w[0]) if w[0] in h else None
            if start is not None and h[start:] == w:
                match = h
                break
        if match is not None:
            unmatched.remove(match)
            continue
        h = max(unmatched, key=lambda x: len(x)) if unmatched else []
        start = h.index(w[0]) if w and w[0] in h else 0
        d = first_difference(h[start:], w)
        report(f'{prog}: own code equals the oracle\'s', False,
               f'{len(h) - start} vs {len(w)} instructions from '
               f'{hex(w[0])}, first difference at {d}')
        return
    report(f'{prog}: own code equals the oracle\'s'
           + (f' in {len(want)} threads' if len(want) > 1 else ''), True)


def frames(out):
    """Function names of the last GDB backtrace in OUT, innermost first
    (loading a core prints frame #0 once before)."""
    at = out.rfind('\n#0 ')
    return re.findall(r'^#\d+\s+(?:0x[0-9a-f]+ in )?(\w+) \(',
                      out[at + 1:] if at >= 0 else out, re.M)


def check_crash(build, programs, tmp):
    bundle = os.path.join(tmp, 'crash')
    prog = os.path.realpath(os.path.join(programs, 'crash'))
    if not os.path.isdir(bundle):
        return
    with open(os.path.join(bundle, 'trace.json')) as f:
        stop = json.load(f)['stop']
    core = os.path.join(bundle, 'core')
    report('crash: stop is a fault with a core',
           stop.get('reason') == 'fault' and stop.get('signal') == 11 and
           os.path.isfile(core),
           f'stop {stop}, files {sorted(os.listdir(bundle))}')
    if not os.path.isfile(core):
        return
    p = subprocess.run(['gdb', '-nx', '-batch', '-ex', 'bt', prog, core],
                       capture_output=True, text=True, timeout=120)
    got = frames(p.stdout)
    report('crash: GDB reads the core: bt is b, a, main',
           got[:3] == ['b', 'a', 'main'], f'frames {got}: {p.stdout[-400:]}'
           f'{p.stderr[-300:]}')
    if shutil.which('lldb-22'):
        p = subprocess.run(['lldb-22', '-b', '--no-lldbinit', '-o',
                            f'target create {prog} --core {core}', '-o',
                            'bt'], capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL)
        got = re.findall(r'frame #\d+: 0x[0-9a-f]+ crash`(\w+)', p.stdout)
        report('crash: LLDB reads the core: bt is b, a, main, stopped by '
               'SIGSEGV', got[:3] == ['b', 'a', 'main'] and
               'stop reason = signal SIGSEGV' in p.stdout,
               f'frames {got}: {p.stdout[-400:]}{p.stderr[-300:]}')
    else:
        print('SKIP crash: LLDB reads the core: lldb-22 is not installed')
    server = ServerProcess([os.path.join(build, 'hwt-server'), '--listen',
                            f'unix:{tmp}/crash.sock', '--bundle', bundle],
                           tmp, 'crash-server')
    try:
        if not server.address:
            report('crash: hwt-server serves the bundle', False,
                   server.log()[-400:])
            return
        p = subprocess.run(['gdb', '-nx', '-batch', '-ex',
                            f'target remote {server.address}', '-ex', 'bt',
                            '-ex', 'record instruction-history', prog],
                           capture_output=True, text=True, timeout=120)
        got = frames(p.stdout)
        history = re.findall(r'^\d+\t\s+0x[0-9a-f]+ <([\w+]+)>:', p.stdout,
                             re.M)
        # The faulting instruction is where the thread stands, not
        # executed: GDB's history ends before it.
        report('crash: GDB over hwt-server --bundle: bt and the history',
               got[:3] == ['b', 'a', 'main'] and
               history[-3:] == ['a+14', 'a+16', 'b+0'] and
               re.search(r'#0\s+0x[0-9a-f]*130 in b', p.stdout),
               f'frames {got}: {p.stdout[-600:]}{p.stderr[-300:]}')
    finally:
        server.stop()


FORK_EXEC_SRC = r'''
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int child_work(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += i;
	return s;
}

__attribute__((noinline)) int after_exec(void)
{
	return 7;
}

int main(int argc, char **argv)
{
	pid_t p;
	int st;

	if (argc > 1 && !strcmp(argv[1], "second"))
		return after_exec();
	p = fork();
	if (p == 0)
		_exit(child_work(1000) & 1);
	waitpid(p, &st, 0);
	execl(argv[0], argv[0], "second", (char *)0);
	return 99;
}
'''


def check_exit_bundle(build, programs, tmp):
    """A program that exits normally leaves a core of its state as exit
    began: hwt-server serves the bundle, GDB shows the history (info
    record), the stack at exit, steps back (reverse-stepi lands on the
    history's second-to-last instruction) and reverse-continues to a
    breakpoint in main; LLDB reverse-continues to it too."""
    hwtrace = os.path.join(build, 'hwtrace')
    prog = os.path.join(programs, 'values')
    bundle = os.path.join(tmp, 'exit-bundle')
    p = subprocess.run([hwtrace, 'record', '-q', '--backend', 'valgrind',
                        '-o', bundle, '--', prog], capture_output=True,
                       text=True, timeout=300)
    try:
        with open(os.path.join(bundle, 'trace.json')) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        report('exit bundle: recorded', False, f'{e}: {p.stderr[-300:]}')
        return
    report('exit bundle: a normal exit is recorded with a core',
           p.returncode == 0 and doc['stop'].get('reason') == 'exited' and
           doc.get('core') == 'core' and
           os.path.isfile(os.path.join(bundle, 'core')),
           f'exit {p.returncode}, stop {doc.get("stop")}, core '
           f'{doc.get("core")}')
    items = next(iter(dump_items(hwtrace, bundle).values()))
    with open(os.path.join(os.path.dirname(__file__), '..', 'programs',
                           'values.c')) as f:
        line = next(i for i, s in enumerate(f, 1) if 'LINE_PRINT' in s)
    server = ServerProcess([os.path.join(build, 'hwt-server'), '--listen',
                            '127.0.0.1:0', '--bundle', bundle], tmp,
                           'exit-server')
    try:
        if not server.address:
            report('exit bundle: hwt-server serves it', False,
                   server.log()[-400:])
            return
        out = subprocess.run(
            ['gdb', '-nx', '-batch', '-ex', 'set confirm off', '-ex',
             f'target remote {server.address}', '-ex', 'info record',
             '-ex', 'bt', '-ex', 'echo <<rsi>>\\n', '-ex', 'reverse-stepi',
             '-ex', 'p/x $pc', '-ex', f'break values.c:{line}', '-ex',
             'reverse-continue', '-ex', 'kill', prog],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=300).stdout
    finally:
        server.stop()
    m = re.search(r'Recorded (\d+) instructions', out)
    report('exit bundle: GDB shows the history and the stack at exit',
           m and int(m.group(1)) == len(items) - 1 and
           re.search(r'in __GI_exit|in exit', out),
           f'{len(items)} items: {out[-800:]}')
    pcs = re.findall(r'^\$\d+ = (0x[0-9a-f]+)$', out.split('<<rsi>>')[-1],
                     re.M)
    report('exit bundle: reverse-stepi goes to the previous instruction',
           pcs and int(pcs[0], 16) == items[-2],
           f'pc {pcs}, history ends {[hex(a) for a in items[-2:]]}')
    report('exit bundle: reverse-continue stops at a breakpoint in main',
           re.search(rf'Breakpoint 1, main .* at .*values.c:{line}', out),
           out[-600:])
    if not shutil.which('lldb-22'):
        print('SKIP exit bundle: LLDB: lldb-22 is not installed')
        return
    server = ServerProcess([os.path.join(build, 'hwt-server'), '--listen',
                            '127.0.0.1:0', '--bundle', bundle], tmp,
                           'exit-server-lldb')
    try:
        out = subprocess.run(
            ['lldb-22', '-b', '--no-lldbinit', '-o', f'target create {prog}',
             '-o', f'gdb-remote {server.address}', '-o',
             f'breakpoint set -f values.c -l {line}', '-o',
             'process continue --reverse', '-o', 'process kill'],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=300, stdin=subprocess.DEVNULL).stdout
    finally:
        server.stop()
    report('exit bundle: LLDB reverse-continues to a breakpoint in main',
           re.search(rf'stop reason = breakpoint 1\.1.*\n.*values.c:{line}',
                     out), out[-800:])


FAULT_KINDS = {'load': 'walk_load', 'store': 'walk_store', 'div': 'walk_div',
               'call': 'walk_call'}
FAULT_VALUES = {'load': ['$pc', 's', 'n'], 'store': ['$pc', 's', 'i'],
                'div': ['$pc', 's', 'i'], 'call': ['$pc', 's', 'i']}


def fault_view(hwtrace, bundle, prog, kind):
    """(the loop function's instructions in the history, symbolically,
    and what GDB prints of the pc and the loop's values from the core)."""
    rc, out, err = run_tool(hwtrace, 'dump', '--insn', '--tsv', bundle)
    fn = FAULT_KINDS[kind]
    insns = [f[4] for f in (line.split('\t') for line in out.splitlines())
             if len(f) > 4 and (f[4].startswith(fn + '+') or
                                f[4].startswith('twice+'))]
    cmds = []
    for v in FAULT_VALUES[kind]:
        cmds += ['-ex', f'p {v}']
    p = subprocess.run(['gdb', '-nx', '-batch', *cmds, prog,
                        os.path.join(bundle, 'core')], capture_output=True,
                       text=True, timeout=120)
    vals = [re.sub(r'^\$\d+ = ', '', line).split(' <')[-1].rstrip('>')
            if line.startswith('$1 ') else re.sub(r'^\$\d+ = ', '', line)
            for line in p.stdout.splitlines() if line.startswith('$')]
    return insns, vals


def check_faults(hwtrace, programs, tmp):
    """A loop that faults in its first, middle or last iteration, by a
    load, a store, a divide or a call through a bad pointer: the history
    ends at the faulting instruction after exactly the iterations the cpu
    ran, and the core holds the cpu's registers there (the pc, and the
    loop's values as GDB reads them), as with the ptrace recorder."""
    prog = os.path.join(programs, 'faults')
    for kind in FAULT_KINDS:
        for at in (0, 3, 7):
            got = {}
            for be in ('ptrace', 'valgrind'):
                bundle = os.path.join(tmp, f'faults-{kind}{at}-{be}')
                rc, _, err = run_tool(hwtrace, 'record', '-q', '--backend',
                                      be, '-o', bundle, '--', prog, kind,
                                      str(at), timeout=300)
                if not os.path.isfile(os.path.join(bundle, 'core')):
                    got[be] = (f'exit {rc}: {err.strip()[-200:]}', [])
                    continue
                got[be] = fault_view(hwtrace, bundle, prog, kind)
            pt, vg = got['ptrace'], got['valgrind']
            report(f'fault {kind} in iteration {at}: the history ends at '
                   'the faulting instruction after the same iterations as '
                   'the ptrace recorder\'s', pt[0] and vg[0] == pt[0],
                   f'valgrind ends {vg[0][-4:]} ({len(vg[0])}), ptrace '
                   f'{pt[0][-4:]} ({len(pt[0])})')
            report(f'fault {kind} in iteration {at}: the core holds the '
                   'cpu\'s pc and values there', pt[1] and vg[1] == pt[1],
                   f'valgrind {vg[1]}, ptrace {pt[1]}')


def build_program(tmp, name, source):
    """tmp/name, compiled from source (once: a second call reuses it)."""
    src, prog = os.path.join(tmp, name + '.c'), os.path.join(tmp, name)
    if not os.path.exists(prog):
        with open(src, 'w') as f:
            f.write(source)
        subprocess.run(['cc', '-O1', '-g', '-o', prog, src], check=True)
    return prog


def check_fork_exec(hwtrace, tmp):
    """A program that forks a child and then execs itself: the child is
    not followed, the exec is: the thread's history before it is the
    first program's, a process of its own in the bundle, and the one
    after it the program's, with the same exit."""
    prog = build_program(tmp, 'fe', FORK_EXEC_SRC)
    bundle = os.path.join(tmp, 'fe.bundle')
    rc, _, err = run_tool(hwtrace, 'record', '-q', '--backend', 'valgrind',
                          '-o', bundle, '--', prog, timeout=300)
    rc2, out, err2 = run_tool(hwtrace, 'dump', '--insn', '--tsv', bundle,
                              timeout=300)
    entries = {}
    for line in out.splitlines():
        f = line.split('\t')
        if len(f) >= 5:
            seq = entries.setdefault(f[0], [])
            if f[4] in ('main+0', 'child_work+0', 'after_exec+0'):
                seq.append(f[4][:-2])
    try:
        with open(os.path.join(bundle, 'trace.json')) as f:
            procs = [(p['pid'], p.get('exec', 0))
                     for p in json.load(f)['processes']]
    except (OSError, ValueError, KeyError) as e:
        procs = str(e)
    pid = procs[0][0] if isinstance(procs, list) else 0
    report('fork and exec: the exec is followed, each program its own '
           'history of the thread, the forked child is not',
           rc == 7 and rc2 == 0 and procs == [(pid, 1), (pid, 0)] and
           entries == {str(pid): ['main', 'after_exec'],
                       f'{pid} (before exec 1)': ['main']},
           f'record {rc} ({err.strip()[-200:]}), dump {rc2}, processes '
           f'{procs}, functions entered {entries}')
    # Perfetto draws a thread's track once: the first program's calls,
    # then the last's, one after the other, under the last's name.
    out_json = os.path.join(tmp, 'fe.json')
    rc3, _, err3 = run_tool(hwtrace, 'export', '--chrome', '-o', out_json,
                            bundle, timeout=300)
    try:
        with open(out_json) as f:
            events = json.load(f)['traceEvents']
    except (OSError, ValueError, KeyError) as e:
        events = []
        err3 += str(e)
    names = [e['args']['name'] for e in events
             if e.get('ph') == 'M' and e.get('name') == 'thread_name']
    mains = sorted((e['ts'], e['ts'] + e['dur']) for e in events
                   if e.get('ph') == 'X' and e.get('name') == 'main')
    report('fork and exec: the Trace Event JSON shows the thread\'s two '
           'programs one after the other on one track',
           rc3 == 0 and names == [f'thread {pid}'] and len(mains) == 2 and
           mains[0][1] <= mains[1][0],
           f'export {rc3} ({err3.strip()[-200:]}): thread names {names}, '
           f'main at {mains}')


FOLLOW_SRC = r'''
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int child_work(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += i;
	return s;
}

__attribute__((noinline)) int grandchild_work(int n)
{
	return child_work(n) + 1;
}

__attribute__((noinline)) int after_exec(void)
{
	return 3;
}

int main(int argc, char **argv)
{
	pid_t p, g;
	int st;

	if (argc > 1 && !strcmp(argv[1], "exec"))
		return after_exec();
	p = fork();
	if (p == 0) {
		if (child_work(100) == 1)
			_exit(98);
		g = fork();
		if (g == 0)
			_exit(grandchild_work(50) & 1);
		waitpid(g, &st, 0);
		execl(argv[0], argv[0], "exec", (char *)0);
		_exit(99);
	}
	waitpid(p, &st, 0);
	return WEXITSTATUS(st) + 2;
}
'''


def entries_by_thread(out, names):
    """{tid: [function entered, ...]} of a `dump --insn --tsv`, for the
    functions named."""
    seqs = {}
    for line in out.splitlines():
        f = line.split('\t')
        if len(f) >= 5:
            seq = seqs.setdefault(f[0], [])
            if f[4].endswith('+0') and f[4][:-2] in names:
                seq.append(f[4][:-2])
    return seqs


CLASH_SRC = r'''
#include <sys/wait.h>
#include <unistd.h>
#include "hwtdemo.h"

static int twice(int x) { return 2 * x; }

int main(void)
{
	pid_t p = fork();

	if (p == 0) {
		execl("/bin/true", "true", (char *)0);
		_exit(127);
	}
	waitpid(p, 0, 0);
	return hwt_demo_apply(twice, 3) > 0 ? 0 : 1;
}
'''


def load_extent(path):
    """Bytes an ELF file's PT_LOAD segments span from its lowest page;
    1 when it is no 64-bit ELF."""
    with open(path, 'rb') as f:
        eh = f.read(64)
        if eh[:4] != b'\x7fELF' or eh[4] != 2:
            return 1
        phoff, = struct.unpack_from('<Q', eh, 32)
        phentsize, phnum = struct.unpack_from('<HH', eh, 54)
        f.seek(phoff)
        ph = f.read(phentsize * phnum)
    lo, hi = None, 0
    for i in range(phnum):
        p_type, = struct.unpack_from('<I', ph, i * phentsize)
        vaddr, = struct.unpack_from('<Q', ph, i * phentsize + 16)
        memsz, = struct.unpack_from('<Q', ph, i * phentsize + 40)
        if p_type == 1:
            lo = min(lo, vaddr & ~4095) if lo is not None else vaddr & ~4095
            hi = max(hi, vaddr + memsz)
    return hi - lo if lo is not None and hi > lo else 1


def check_follow_fork_modules(hwtrace, programs, tmp):
    """--follow-fork where a child exec's a program that maps other files
    where the program has its own (Valgrind lays every process out alike:
    /bin/true's libc where the program has libhwtdemo.so and its libc a
    few pages higher): each process is a process of the bundle with its
    own modules, and each history names its own functions."""
    src, prog = os.path.join(tmp, 'clash.c'), os.path.join(tmp, 'clash')
    with open(src, 'w') as f:
        f.write(CLASH_SRC)
    top = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    subprocess.run(['cc', '-O1', '-g', '-I', os.path.join(top, 'tests',
                                                        'programs'),
                    '-o', prog, src, '-L', programs, '-lhwtdemo',
                    f'-Wl,-rpath,{programs}'], check=True)
    bundle = os.path.join(tmp, 'clash.bundle')
    rc, _, err = run_tool(hwtrace, 'record', '-q', '--backend', 'valgrind',
                          '--follow-fork', '-o', bundle, '--', prog,
                          timeout=300)
    rc2, out, err2 = run_tool(hwtrace, 'dump', '--insn', '--tsv', bundle,
                              timeout=300)
    rc3, calls, err3 = run_tool(hwtrace, 'dump', '--calls', '--tsv', bundle,
                                timeout=300)
    with open(os.path.join(bundle, 'trace.json')) as f:
        procs = json.load(f)['processes']
    pid = str(procs[0]['pid'])
    seqs = entries_by_thread(out, ('main', 'hwt_demo_apply', 'twice'))
    # hwt_demo_apply(twice, 3) calls twice three times.
    report('--follow-fork, a child\'s file where the program has a library: '
           'the program\'s history names its own functions',
           rc == 0 and rc2 == 0 and
           seqs.get(pid, [])[-4:] == ['hwt_demo_apply', 'twice', 'twice',
                                      'twice'],
           f'record {rc}, dump {rc2}, {seqs.get(pid)}; '
           f'{(err + err2).strip()[-300:]}')
    paths = [sorted({m['systemPath'] for m in p.get('modules', [])})
             for p in procs]
    # One file per address in each process: where the exec'd program's
    # files lie over the parent's, the parent's are left out.
    spans = [[(m['loadAddress'], m['loadAddress'] +
               load_extent(m['systemPath']), m['systemPath'])
              for m in p.get('modules', [])
              if os.path.isfile(m.get('systemPath', ''))] for p in procs]
    overlaps = [[(a[2], b[2]) for i, a in enumerate(sp) for b in sp[i + 1:]
                 if a[0] < b[1] and b[0] < a[1]] for sp in spans]
    child = str(procs[-1]['pid'])
    # The child is there once per program it ran: the program's code up
    # to its exec, with the program's modules, then /bin/true.
    report('--follow-fork: the program and its child\'s two programs are '
           'three processes of the bundle, each with the modules it mapped',
           len(procs) == 3 and
           [(p['pid'], p.get('exec', 0)) for p in procs] ==
           [(int(pid), 0), (int(child), 0), (int(child), 1)] and
           [[t['tid'] for t in p['threads']] for p in procs] ==
           [[int(pid)], [int(child)], [int(child)]] and
           '/usr/bin/true' in paths[2] and '/usr/bin/true' not in paths[0]
           and paths[1] == paths[0] and
           any(p.endswith('libhwtdemo.so') for p in paths[0]) and
           overlaps == [[], [], []],
           f'{[(p["pid"], p["threads"], q) for p, q in zip(procs, paths)]}'
           f', overlapping {overlaps}')
    # /bin/true ends through libc's exit, decoded with its own libc
    # (where the program's libc lies a few pages off, every name would
    # be another function's).
    ended = [f[2] for f in (line.split('\t') for line in calls.splitlines())
             if len(f) >= 5 and f[0] == child]
    report('--follow-fork: the exec\'d child\'s history names its own '
           'functions (libc\'s exit path, none of the program\'s '
           'library)',
           rc3 == 0 and ended[-2:] == ['__run_exit_handlers', '_exit'] and
           not any(n.startswith('hwt_demo') for n in ended),
           f'dump {rc3}: {ended[-6:]}; {err3.strip()[-300:]}')
    # Before its exec the child ran the program's code: back from fork in
    # main, into execl, ending in the execve system call; read with the
    # program's libc, never /bin/true's a few pages off.
    before = [f[2] for f in (line.split('\t')
                             for line in calls.splitlines())
              if len(f) >= 5 and f[0] == child + ' (before exec 1)']
    report('--follow-fork: the child\'s history before its exec names the '
           'program\'s functions, up to execve',
           rc3 == 0 and 'main' in before and 'execl' in before and
           before[-1:] == ['execve'],
           f'dump {rc3}: {before[:4]} ... {before[-4:]}')


def check_follow_fork(hwtrace, tmp):
    """--follow-fork: a child that forks a grandchild and execs, each
    process's history a thread of the bundle from its first instruction
    after the fork, the child's in two: the program it ran up to its
    exec, and the one it ran after; without the option the parent alone;
    a backend that cannot follow says so."""
    prog = build_program(tmp, 'ff', FOLLOW_SRC)
    names = ('main', 'child_work', 'grandchild_work', 'after_exec')
    got = {}
    for follow in (True, False):
        bundle = os.path.join(tmp, f'ff-{follow}.bundle')
        rc, _, err = run_tool(hwtrace, 'record', '-q', '--backend',
                              'valgrind', *(['--follow-fork'] if follow
                                            else []),
                              '-o', bundle, '--', prog, timeout=300)
        rc2, out, err2 = run_tool(hwtrace, 'dump', '--insn', '--tsv',
                                  bundle, timeout=300)
        firsts = {}
        for line in out.splitlines():
            f = line.split('\t')
            if len(f) >= 5:
                firsts.setdefault(f[0], f[4].split('+')[0])
        entered = entries_by_thread(out, names)
        got[follow] = (rc, rc2, sorted(entered.values()), err + err2,
                       sorted(firsts.values()),
                       [v for k, v in entered.items()
                        if k.endswith(' (before exec 1)')])
    want = sorted([['main'], ['child_work'], ['main', 'after_exec'],
                   ['grandchild_work', 'child_work']])
    rc, rc2, seqs, err, firsts, before = got[True]
    # The parent starts in the dynamic loader, each child after the
    # system call in glibc's _Fork, where a cpu resumes it; the child's
    # program after its exec in the dynamic loader again.
    report('--follow-fork: the child (before and after its exec) and the '
           'grandchild are threads of the bundle, each from its first '
           'instruction',
           rc == 5 and rc2 == 0 and seqs == want and
           firsts.count('_Fork') == 2 and before == [['child_work']],
           f'record {rc}, dump {rc2}, functions entered by thread {seqs}, '
           f'first functions {firsts}, before the exec {before}; '
           f'{err.strip()[-300:]}')
    rc, rc2, seqs, err, _, _ = got[False]
    report('without --follow-fork the program\'s own thread alone',
           rc == 5 and rc2 == 0 and seqs == [['main']],
           f'record {rc}, dump {rc2}, {seqs}; {err.strip()[-300:]}')
    rc, _, err = run_tool(hwtrace, 'record', '-q', '--backend', 'ptrace',
                          '--follow-fork', '-o',
                          os.path.join(tmp, 'ff-ptrace'), '--', prog)
    report('--follow-fork with a backend that cannot: a clear error',
           rc != 0 and 'does not follow forked children' in err,
           f'{rc}: {err.strip()}')


FORKS_SRC = r'''
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void child_work(long n)
{
    for (long i = 0; i < n; i++)
        sink += i ^ (sink >> 3);
}
int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 300000;
    for (int k = 0; k < 12; k++) {
        pid_t p = fork();
        if (p == 0) {
            child_work(n);
            _exit(0);
        }
        waitpid(p, 0, 0);
    }
    return 0;
}
'''


def all_threads(doc):
    """Every thread of a bundle's trace.json, each process's in turn."""
    return [t for p in doc['processes'] for t in p['threads']]


def check_follow_fork_window(hwtrace, tmp):
    """--follow-fork keeps the window for all processes together: twelve
    children one after the other, each running more than the window, in
    --size 1M (2 MiB for all, about 1.7 M instructions). The histories
    of ended children stay in what the running ones leave, newest ended
    first: the last child keeps a part of its window, the first ones are
    dropped, and every child is in the bundle with its instructions
    counted, kept or lost."""
    prog = build_program(tmp, 'forks', FORKS_SRC)
    bundle = os.path.join(tmp, 'forks.bundle')
    rc, _, err = run_tool(hwtrace, 'record', '-q', '--backend', 'valgrind',
                          '--follow-fork', '--size', '1M', '-o', bundle,
                          '--', prog, timeout=300)
    try:
        with open(os.path.join(bundle, 'trace.json')) as f:
            doc = json.load(f)
        threads = sorted(all_threads(doc), key=lambda t: t['tid'])
    except (OSError, ValueError, KeyError, IndexError) as e:
        report('--follow-fork window: twelve children in one window', False,
               f'record {rc}: {e}; {err.strip()[-300:]}')
        return
    main_pid = doc['processes'][0]['pid']
    children = [t for t in threads if t['tid'] != main_pid]
    kept = [t['instructions'] - t.get('lostInstructions', 0)
            for t in children]
    total = sum(t['instructions'] - t.get('lostInstructions', 0)
                for t in threads)
    report('--follow-fork window: all processes together keep twice the '
           'window, not a window each',
           rc == 0 and len(children) == 12 and total < 2_400_000,
           f'record {rc}, {len(children)} children, kept {kept}, '
           f'{total} in all; {err.strip()[-300:]}')
    report('--follow-fork window: the newest ended children are kept, '
           'the oldest dropped, every instruction counted',
           len(kept) == 12 and kept[-1] > 300_000 and kept[0] < 100_000 and
           all(t['instructions'] > 1_800_000 for t in children),
           f'kept {kept}, instructions '
           f'{[t["instructions"] for t in children]}')
    rc2, out, err2 = run_tool(hwtrace, 'dump', '--insn', '--tsv', bundle,
                              timeout=300)
    last = str(children[-1]['tid']) if children else '?'
    seen = {l.split('\t')[0] for l in out.splitlines() if '\t' in l}
    report('--follow-fork window: the bundle reads, the newest child\'s '
           'history in child_work',
           rc2 == 0 and last in seen and
           any(l.startswith(last + '\t') and 'child_work' in l
               for l in out.splitlines()),
           f'dump {rc2}: {err2.strip()[-300:]}')



def peak_rss_mib(argv):
    """(returncode, stderr, the peak RSS in MiB of argv's own process,
    read from its VmHWM every 20 ms until it exits)."""
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, errors='replace')
    peak = 0
    while p.poll() is None:
        try:
            with open(f'/proc/{p.pid}/status') as f:
                m = re.search(r'VmHWM:\s+(\d+)', f.read())
            peak = max(peak, int(m.group(1))) if m else peak
        except OSError:
            pass
        time.sleep(0.02)
    return p.returncode, p.stderr.read(), peak / 1024


def check_follow_fork_whole(hwtrace, tmp):
    """--whole --follow-fork: twelve children of 27 M instructions each,
    one after the other, each kept whole; an ended child's history goes
    to its spill file when it ends, and its spill gives its buffers back,
    so the recorder does not hold every ended child's window to the end
    (153 MiB before, about 36 here)."""
    prog = build_program(tmp, 'forks', FORKS_SRC)
    bundle = os.path.join(tmp, 'forks-whole.bundle')
    rc, err, peak = peak_rss_mib([hwtrace, 'record', '-q', '--backend',
                                  'valgrind', '--follow-fork', '--whole',
                                  '-o', bundle, '--', prog, '3000000'])
    try:
        with open(os.path.join(bundle, 'trace.json')) as f:
            doc = json.load(f)
        main_pid = doc['processes'][0]['pid']
        children = [t for t in all_threads(doc)
                    if t['tid'] != main_pid]
    except (OSError, ValueError, KeyError, IndexError) as e:
        report('--whole --follow-fork: every child whole', False,
               f'record {rc}: {e}; {err.strip()[-300:]}')
        return
    counts = {t['instructions'] for t in children}
    report('--whole --follow-fork: every child whole, none of it lost',
           rc == 0 and len(children) == 12 and len(counts) == 1 and
           min(counts) > 27_000_000 and
           all(t.get('lostInstructions', 0) == 0 for t in children),
           f'record {rc}, {len(children)} children, instructions '
           f'{sorted(counts)}, lost '
           f'{[t.get("lostInstructions", 0) for t in children]}; '
           f'{err.strip()[-300:]}')
    report('--whole --follow-fork: ended children do not stay in the '
           'recorder\'s memory',
           rc == 0 and 0 < peak < 80, f'peak {peak:.0f} MiB')


JIT_SRC = r'''
#include <string.h>
#include <sys/mman.h>

typedef int (*fn)(int);

int main(void)
{
	/* lea 0x1(%rdi),%eax; ret */
	static const unsigned char add1[] = { 0x8d, 0x47, 0x01, 0xc3 };
	/* lea (%rdi,%rdi),%eax; nop; ret */
	static const unsigned char twice[] = { 0x8d, 0x04, 0x3f, 0x90, 0xc3 };
	unsigned char *p = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int a, b;

	if (p == MAP_FAILED)
		return 2;
	memcpy(p, add1, sizeof(add1));
	a = ((fn)p)(41);
	memcpy(p, twice, sizeof(twice));
	b = ((fn)p)(21);
	return a == 42 && b == 42 ? 0 : 1;
}
'''


def jit_offsets(hwtrace, bundle):
    """Offsets in their page of the instructions no module holds: the
    generated code (a core, taken at a normal exit too, gives it bytes)."""
    rc, out, _ = run_tool(hwtrace, 'dump', '--insn', '--tsv', bundle)
    ranges = load_ranges(bundle)
    addrs = [a for a in (int(f[2], 16) for f in
                         (line.split('\t') for line in out.splitlines())
                         if len(f) > 3 and f[2] != 'gap')
             if not any(lo <= a < hi for lo, hi, _, _ in ranges)]
    base = min(addrs) & ~0xfff if addrs else 0
    return [a - base for a in addrs]


def check_jit(hwtrace, tmp):
    """Code generated into anonymous memory, then rewritten and run again:
    Valgrind translates it anew and the history follows the code that ran,
    as the ptrace recorder's does."""
    prog = build_program(tmp, 'jit', JIT_SRC)
    got = {}
    for be in ('valgrind', 'ptrace'):
        bundle = os.path.join(tmp, f'jit-{be}')
        rc, _, err = run_tool(hwtrace, 'record', '-q', '--backend', be, '-o',
                              bundle, '--', prog, timeout=300)
        got[be] = (rc, jit_offsets(hwtrace, bundle) if rc == 0 else err)
    report('self-modifying code: the history follows the code that ran, as '
           'the ptrace recorder\'s', got['valgrind'][0] == 0 and
           got['valgrind'] == got['ptrace'] and
           got['ptrace'][1] == [0, 3, 0, 3, 4], f'{got}')


def check_tool_killed(hwtrace, tmp):
    """The recording of a long run, flight-recorded with --size 1M, whose
    Valgrind process dies: the bundle keeps the newest megabyte, counts
    what it lost, and hwtrace says why the history ends there."""
    loop = os.path.join(tmp, 'loop')
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run(['cc', '-O1', '-o', loop,
                    os.path.join(here, '..', '..', 'bench', 'loop.c')],
                   check=True)
    bundle = os.path.join(tmp, 'killed')
    rec = subprocess.Popen([hwtrace, 'record', '-q', '--backend', 'valgrind',
                            '--size', '1M', '-o', bundle, '--', loop,
                            '2000000000'], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    kids = subprocess.run(['pgrep', '-P', str(rec.pid)], capture_output=True,
                          text=True).stdout.split()
    for k in kids:
        os.kill(int(k), signal.SIGKILL)
    _, err = rec.communicate(timeout=120)
    try:
        with open(os.path.join(bundle, 'trace.json')) as f:
            doc = json.load(f)
        t = doc['processes'][0]['threads'][0]
        note = doc['stop'].get('note', '')
    except (OSError, ValueError, KeyError, IndexError) as e:
        t, note = {'error': str(e)}, ''
    info = subprocess.run([hwtrace, 'info', bundle], capture_output=True,
                          text=True).stdout
    report('the tool killed: the bundle keeps the newest history and says '
           'why it ends', rec.returncode == 128 + signal.SIGKILL and
           'stopped before the program ended' in err and
           'stopped before the program ended' in note and
           'note:    the hwtrace Valgrind tool stopped' in info and
           t.get('traceSize', 0) <= (1 << 20) and
           t.get('lostInstructions', 0) > 0 and
           t.get('instructions', 0) > t.get('lostInstructions', 0),
           f'rc {rec.returncode}, {len(kids)} killed, thread {t}, '
           f'stderr {err.strip()[-300:]}')


def check_bound(hwtrace, programs, tmp):
    """The tool's stream bound (set here through Valgrind's own
    VALGRIND_OPTS): recording stops there, the program runs to its end,
    and the bundle says why its history is short."""
    bundle = os.path.join(tmp, 'bound')
    p = subprocess.run([hwtrace, 'record', '-q', '--backend', 'valgrind',
                        '-o', bundle, '--',
                        os.path.join(programs, 'loops')],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ,
                                VALGRIND_OPTS='--hwt-max-bytes=65536'))
    try:
        with open(os.path.join(bundle, 'trace.json')) as f:
            doc = json.load(f)
        note = doc['stop'].get('note', '')
        insns = doc['processes'][0]['threads'][0]['instructions']
    except (OSError, ValueError, KeyError, IndexError) as e:
        note, insns = str(e), 0
    report('the stream bound: recording stops there and the bundle says so',
           p.returncode == 0 and 'bound of 65536 bytes' in p.stderr and
           'bound of 65536 bytes' in note and 10000 < insns < 200000,
           f'rc {p.returncode}, {insns} instructions, note {note!r}, '
           f'stderr {p.stderr.strip()[-300:]}')


def record_spin(hwtrace, programs, tmp, name, calls, extra=(), env=None):
    """`spin CALLS` recorded by the valgrind backend: (returncode, stderr,
    the bundle's trace.json, its thread) or raises with what went wrong."""
    bundle = os.path.join(tmp, name)
    p = subprocess.run([hwtrace, 'record', '--backend', 'valgrind', *extra,
                        '-o', bundle, '--', os.path.join(programs, 'spin'),
                        str(calls)],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, **(env or {})))
    with open(os.path.join(bundle, 'trace.json')) as f:
        doc = json.load(f)
    return p.returncode, p.stderr, doc, doc['processes'][0]['threads'][0]


def last_function(hwtrace, bundle):
    rc, out, err = run_tool(hwtrace, 'dump', '--insn', '--tsv', '--last', '1',
                            bundle)
    f = out.strip().split('\t')
    return f[4].split('+')[0] if rc == 0 and len(f) > 4 else err.strip()


def check_window(hwtrace, programs, tmp):
    """Without --size the recorder is a flight recorder: a run of about
    120 M instructions (more than the default 64 MiB window holds) keeps
    the newest history, ends with the faulting instruction beside its
    core, and counts what it dropped: kept + lost is everything."""
    try:
        rc, err, doc, t = record_spin(hwtrace, programs, tmp, 'window',
                                      10_000_000)
        got = (rc, t['instructions'], t.get('lostInstructions', 0),
               last_function(hwtrace, os.path.join(tmp, 'window')))
        kept = t['instructions'] - t.get('lostInstructions', 0)
        core = os.path.exists(os.path.join(tmp, 'window', 'core'))
        _, info, _ = run_tool(hwtrace, 'info', os.path.join(tmp, 'window'))
    except (OSError, ValueError, KeyError, IndexError) as e:
        report('default window: the newest history and the crash', False,
               str(e))
        return
    # The window is stored as the tool's runs, not expanded
    # (docs/swtrace.md): indexed, and a few bytes a run.
    report('default window: kept as runs, indexed, under 0.05 byte an '
           'instruction kept',
           'indexed, runs kept' in info and
           t.get('traceSize', 1 << 40) < kept // 20,
           f'info {info.strip()[-400:]!r}, trace json {t}')
    report('default window: the newest history and the crash are kept, '
           'the oldest counted as lost',
           rc == 139 and core and got[1] > 100_000_000 and
           got[2] > 0 and 40_000_000 < kept < 70_000_000 and
           got[3] == 'crash_here',
           f'exit {rc}, core {core}, instructions/lost/last function {got}, '
           f'stderr {err.strip()[-300:]}')


def check_long_stream(hwtrace, programs, tmp):
    """A run whose stream is many times the tool's bound (set low here,
    16 MiB, through VALGRIND_OPTS): the recorder frees what it has read
    and the program waits for it, so nothing reaches the bound and the
    end, fault and core included, is kept."""
    try:
        rc, err, doc, t = record_spin(
            hwtrace, programs, tmp, 'long', 10_000_000, ('--size', '1M'),
            {'VALGRIND_OPTS': '--hwt-max-bytes=16777216'})
        note = doc.get('stop', {}).get('note', '')
        last = last_function(hwtrace, os.path.join(tmp, 'long'))
        core = os.path.exists(os.path.join(tmp, 'long', 'core'))
    except (OSError, ValueError, KeyError, IndexError) as e:
        report('a stream past the tool\'s bound', False, str(e))
        return
    report('a stream many times the tool\'s bound is read whole: the end '
           'and the core are kept',
           rc == 139 and core and 'bound' not in note and
           t['instructions'] > 100_000_000 and last == 'crash_here',
           f'exit {rc}, core {core}, {t["instructions"]} instructions, last '
           f'function {last}, note {note!r}, stderr {err.strip()[-300:]}')


def check_whole(hwtrace, programs, tmp):
    """--whole keeps every instruction with a window that holds a
    fraction of them (the rest on disk, in frames with the index), from
    the program's first to the fault, and opens in GDB's terms: the
    newest item is the faulting store. A backend that keeps a window only
    refuses the option by name."""
    try:
        rc, err, doc, t = record_spin(hwtrace, programs, tmp, 'whole',
                                      2_000_000, ('--size', '64K', '--whole'))
        bundle = os.path.join(tmp, 'whole')
        last = last_function(hwtrace, bundle)
        rc2, out, err2 = run_tool(hwtrace, 'dump', '--insn', '--tsv', '--last',
                                  '1', bundle)
        items = int(out.split('\t')[1]) if rc2 == 0 else -1
        rc3, info, _ = run_tool(hwtrace, 'info', bundle)
    except (OSError, ValueError, KeyError, IndexError) as e:
        report('--whole: every instruction kept', False, str(e))
        return
    report('--whole: every instruction kept with a window of a fraction of '
           'them, to the fault, indexed',
           rc == 139 and t['instructions'] > 10_000_000 and
           t.get('lostInstructions', 0) == 0 and
           items == t['instructions'] and last == 'crash_here' and
           'indexed' in info and 'traceIndex' in t,
           f'exit {rc}, {t.get("instructions")} instructions, '
           f'{t.get("lostInstructions")} lost, {items} items, last {last}, '
           f'stderr {err.strip()[-300:]}')
    # Spilled as runs, through an exec: the same history, instruction
    # for instruction, as a window large enough to hold it all.
    dumps = []
    for name, opts in (('whole-exec', ('--size', '1M', '--whole')),
                       ('window-exec', ('--size', '512M'))):
        b = os.path.join(tmp, name)
        p = subprocess.run([hwtrace, 'record', '-q', '--backend', 'valgrind',
                            *opts, '-o', b, '--', '/bin/sh', '-c',
                            f'exec {os.path.join(programs, "spin")} 150000'],
                           capture_output=True, text=True, timeout=600)
        rc2, out, _ = run_tool(hwtrace, 'dump', '--insn', '--tsv', b)
        _, info, _ = run_tool(hwtrace, 'info', b)
        dumps.append((p.returncode, rc2, 'runs kept' in info,
                      [line.split('\t', 1)[-1] for line in
                       out.splitlines()]))
    (rca, da, ka, a), (rcb, db, kb, b2) = dumps
    report('--whole spills runs through an exec: the history of a window '
           'that holds it all',
           rca == rcb == 139 and da == db == 0 and ka and kb and
           len(a) > 1_500_000 and a == b2,
           f'exits {rca}/{rcb}, dumps {da}/{db}, runs kept {ka}/{kb}, '
           f'{len(a)} and {len(b2)} instructions, first difference at '
           f'{next((i for i, (x, y) in enumerate(zip(a, b2)) if x != y), None)}')
    rc, _, err = run_tool(hwtrace, 'record', '-q', '--backend', 'ptrace',
                          '--whole', '-o', os.path.join(tmp, 'nowhole'), '--',
                          '/bin/true')
    report('--whole with a backend that keeps a window: a clear error',
           rc != 0 and 'keeps a window' in err and
           not os.path.exists(os.path.join(tmp, 'nowhole')), f'{rc}: {err}')


def check_whole_threads(hwtrace, tmp):
    """--whole with 32 threads: every spill compresses with the
    recording's one compressor and gives back its frame buffer and the
    translations it read after each group, so the recorder's peak stays
    near a window-only recording's of the same program (it was 55 MiB
    above it: a compressor, a frame buffer and a table a thread)."""
    top = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    exe = os.path.join(tmp, 'threads32')
    subprocess.run(['cc', '-O1', '-pthread', '-o', exe,
                    os.path.join(top, 'bench', 'workloads', 'threads.c')],
                   check=True)
    got = {}
    for name, opts in (('window', ()), ('whole', ('--whole',))):
        b = os.path.join(tmp, f'threads32-{name}')
        rc, err, peak = peak_rss_mib([hwtrace, 'record', '-q', '--backend',
                                      'valgrind', *opts, '-o', b, '--', exe,
                                      '1000000', '32'])
        rc2, info, _ = run_tool(hwtrace, 'info', b)
        threads = re.findall(r'(\d+) instructions recorded, (\d+) lost',
                             info)
        got[name] = (rc, rc2, peak, threads, err.strip()[-300:])
    (rca, ia, pa, ta, ea), (rcb, ib, pb, tb, eb) = got['window'], got['whole']
    report('--whole with 32 threads: every instruction kept, the '
           'recorder\'s peak within 40 MiB of a window-only recording\'s',
           rca == rcb == 0 and ia == ib == 0 and len(tb) == 33 and
           all(lost == '0' for _, lost in tb) and pb < pa + 40,
           f'exits {rca}/{rcb}, info {ia}/{ib}, peaks {pa:.0f}/{pb:.0f} '
           f'MiB, {len(tb)} threads, lost '
           f'{sorted({lost for _, lost in tb})}; {ea} {eb}')


def on_small_disk(tmp, size, cmd):
    """Run cmd with a size-byte tmpfs mounted at tmp/small in a mount
    namespace of its own (as root, or through a user namespace): the
    command, then what the small disk holds afterwards, one name a line
    after a line '--'. None when no namespace can be made here."""
    small = os.path.join(tmp, 'small')
    os.makedirs(small, exist_ok=True)
    script = ('mount -t tmpfs -o size="$1" tmpfs "$2" || exit 99; '
              'shift 2; "$@"; rc=$?; echo --; ls -A "$(dirname "$0")"; '
              'exit $rc')
    p = subprocess.run(['unshare', '-rm', 'sh', '-c', script,
                        os.path.join(small, 'x'), str(size), small] + cmd,
                       capture_output=True, text=True, timeout=300)
    if p.returncode == 99 or 'unshare' in p.stderr.split(':')[0]:
        return None
    return p


def check_full_disk(hwtrace, programs, tmp):
    """A full disk under the tool's stream and under the bundle: the
    history recorded so far is kept and the reason said, or the bundle
    is not written and no partial one is left."""
    small = os.path.join(tmp, 'small')
    bundle = os.path.join(tmp, 'full-stream')
    p = on_small_disk(tmp, 65536,
                      ['env', f'TMPDIR={small}', hwtrace, 'record', '-q',
                       '--backend', 'valgrind', '-o', bundle, '--',
                       os.path.join(programs, 'strings')])
    if p is None:
        print('SKIP full disk: no mount namespace can be made here '
              '(unshare -rm fails)')
        return
    try:
        with open(os.path.join(bundle, 'trace.json')) as f:
            doc = json.load(f)
        note = doc['stop'].get('note', '')
        insns = doc['processes'][0]['threads'][0]['instructions']
    except (OSError, ValueError, KeyError, IndexError) as e:
        note, insns = str(e), 0
    report('a full disk under the stream: the history so far is kept and '
           'the full disk named',
           p.returncode == 0 and 'no space left on the file system of '
           f'{small}' in p.stderr and 'no space left' in note and
           insns > 10000, f'rc {p.returncode}, {insns} instructions, '
           f'note {note!r}, stderr {p.stderr.strip()[-300:]}')
    p = on_small_disk(tmp, 65536,
                      [hwtrace, 'record', '-q', '--backend', 'valgrind',
                       '-o', os.path.join(small, 'b'), '--',
                       '/usr/bin/python3', '-c', 'pass'])
    left = p.stdout.split('--\n', 1)[-1].split()
    report('a full disk under the bundle: a clear error, no partial bundle',
           p.returncode != 0 and 'No space left on device' in p.stderr and
           left == [], f'rc {p.returncode}, left {left}, '
           f'stderr {p.stderr.strip()[-300:]}')


def check_bad_input(hwtrace, tmp):
    rc, _, err = run_tool(hwtrace, 'record', '-q', '--backend', 'valgrind',
                          '-o', os.path.join(tmp, 'nope'), '--',
                          '/nonexistent/program')
    report('a missing program is a clear error',
           rc != 0 and 'cannot run /nonexistent/program' in err and
           not os.path.exists(os.path.join(tmp, 'nope')), f'{rc}: {err}')
    plain = os.path.join(tmp, 'not-executable')
    with open(plain, 'w') as f:
        f.write('just text\n')
    rc, _, err = run_tool(hwtrace, 'record', '-q', '--backend', 'valgrind',
                          '-o', os.path.join(tmp, 'nope2'), '--', plain)
    report('a file that is not executable is a clear error',
           rc != 0 and 'Permission denied' in err, f'{rc}: {err}')
    env_lib = os.path.join(tmp, 'no-tool-here')
    os.makedirs(env_lib, exist_ok=True)
    p = subprocess.run([hwtrace, 'record', '-q', '--backend', 'valgrind',
                        '-o', os.path.join(tmp, 'nope3'), '--', '/bin/true'],
                       capture_output=True, text=True,
                       env=dict(os.environ, HWT_VALGRIND_LIB=env_lib))
    report('a missing tool names where it was looked for',
           p.returncode != 0 and 'hwtrace Valgrind tool is not built' in
           p.stderr and env_lib in p.stderr, f'{p.returncode}: {p.stderr}')
    p = subprocess.run([hwtrace, 'record', '-q', '--backend', 'valgrind',
                        '-o', os.path.join(tmp, 'nope4'), '--', '/bin/true'],
                       capture_output=True, text=True,
                       env=dict(os.environ, PATH='/nonexistent'))
    report('valgrind missing names the Debian package',
           p.returncode != 0 and 'Debian package valgrind' in p.stderr,
           f'{p.returncode}: {p.stderr}')


def main():
    args = parse_args()
    hwtrace = os.path.join(args.build, 'hwtrace')
    programs = os.path.join(args.build, 'programs')
    p = subprocess.run([hwtrace, 'backends'], capture_output=True, text=True)
    line = next((l for l in p.stdout.splitlines()
                 if l.split() and l.split()[0] == 'valgrind'), '')
    if 'available' not in line or 'unavailable' in line:
        print(f'SKIP valgrind backend: {line.strip() or "not listed"}')
        return 0
    tmp = tempfile.mkdtemp(prefix='hwt-valgrind-')
    try:
        for prog in PROGS:
            if selected(prog):
                check_program(hwtrace, programs, tmp, prog)
        avx2 = 'avx2' in open('/proc/cpuinfo').read()
        for prog in PROGS:
            if not selected(prog + '-libc'):
                continue
            if prog in DIFFERENT_LIBC:
                print(f'SKIP {prog}: library code: {DIFFERENT_LIBC[prog]}')
            elif not avx2:
                print(f'SKIP {prog}: library code: this CPU has no AVX2, '
                      'whose glibc code both runs would pick')
            else:
                check_library(hwtrace, programs, tmp, prog)
        if selected('crash'):
            check_crash(args.build, programs, tmp)
        if selected('jit'):
            check_jit(hwtrace, tmp)
        if selected('fork-exec'):
            check_fork_exec(hwtrace, tmp)
        if selected('follow-fork'):
            check_follow_fork(hwtrace, tmp)
            check_follow_fork_modules(hwtrace, programs, tmp)
            check_follow_fork_window(hwtrace, tmp)
            check_follow_fork_whole(hwtrace, tmp)
        if selected('bound'):
            check_bound(hwtrace, programs, tmp)
        if selected('faults'):
            check_faults(hwtrace, programs, tmp)
        if selected('exit-bundle'):
            check_exit_bundle(args.build, programs, tmp)
        if selected('window'):
            check_window(hwtrace, programs, tmp)
        if selected('long-stream'):
            check_long_stream(hwtrace, programs, tmp)
        if selected('whole'):
            check_whole(hwtrace, programs, tmp)
            check_whole_threads(hwtrace, tmp)
        if selected('tool-killed'):
            check_tool_killed(hwtrace, tmp)
        if selected('full-disk'):
            check_full_disk(hwtrace, programs, tmp)
        if selected('bad-input'):
            check_bad_input(hwtrace, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
