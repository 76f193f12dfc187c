#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Values of the past are never today's values.

BUILD/programs/values stores x = 1, 2, 3 (a local) and g = 10, 20, 30 (a
global), prints them and, given an argument, stores through NULL. Standing
at the line `x = 2` in the past (a breakpoint there, then reverse-continue),
a debugger over hwt-server must not print x = 3 or g = 30, the values of
the present. The ptrace recorder under live control keeps the old bytes
of every store, so there GDB and LLDB must print x = 1 and g = 10, their
values then; every other recording holds no memory yet, so GDB must say
`Cannot access memory` or `<unavailable>`, and LLDB must fail to read
them. What
never changes stays readable there: the code at the pc (the read-only
segments of the program's files, as GDB's own btrace replay reads) and the
pc itself. A bundle the ptrace recorder wrote carries what it kept (its
data history), so there too x = 1 and g = 10 are shown; with two threads
storing to one variable, a reverse watch stops at each store in turn, in
the thread that made it. Writing in the past is refused with its reason. Continuing
forward to the end of the history brings the present back, and with it
x = 3, g = 30.

Live (`hwt-server --record`), for each backend that records here: ptrace
and valgrind, in GDB, and the ptrace one in LLDB.
The walk of walk.c (every kind of value, line by line) forward with
`next` and back with `reverse-next`, live with ptrace, and through the
ptrace recorder's crash bundle against the live walk's values.
Post-mortem (`hwt-server --bundle`), for a bundle of each x86 format: the
software trace recorded by ptrace and by valgrind, Intel PT (`hwtrace
export --lldb` of the ptrace recording, with its core) and Intel BTS (the
same history written as BTS records, with its core), in GDB, and the
ptrace bundle in LLDB. GDB's own record btrace, which it opens on a
bundle by itself, is stopped first, so that the reverse execution is the
server's. At the crash (the present of a crashed process)
the core's x = 3 and g = 30 are shown.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

from hwt_testlib import (ServerProcess, exit_status, parse_args, report,
                         run_tool, selected)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, '..', 'programs', 'values.c')
UNKNOWN_RE = re.compile(r'Cannot access memory|<unavailable>')
DIRECT_RE = re.compile(r'^(j\w+|call)\s+(0x[0-9a-f]+)')


def marker_line(name):
    with open(SOURCE) as f:
        for n, line in enumerate(f, 1):
            if name in line:
                return n
    raise RuntimeError(f'{SOURCE} has no {name} marker')


def mark(name):
    return f'echo <<{name}>>\\n'


def section(out, name):
    """What the debugger printed after marker NAME (a line of its own:
    GDB's echo, LLDB's script print) up to the next marker."""
    m = re.search(rf'^<<{name}>>$', out, re.M)
    if not m:
        return ''
    b = out.find('<<', m.end())
    return out[m.end():b if b >= 0 else len(out)]


def gdb(prog, address, cmds, timeout=300):
    args = ['gdb', '-nx', '-batch', '-ex', 'set pagination off',
            '-ex', 'set confirm off', '-ex', f'target remote {address}']
    for c in cmds:
        args += ['-ex', c]
    return subprocess.run(args + [prog], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          text=True, errors='replace', timeout=timeout).stdout


def lldb(cmds, timeout=300):
    args = ['lldb-22', '-b', '--no-lldbinit']
    for c in cmds:
        args += ['-o', c]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       stdin=subprocess.DEVNULL, text=True, errors='replace',
                       timeout=timeout)
    return p.stdout


def past_cmds(line_x2):
    """Go back to `x = 2` and look around; then forward to the present."""
    return [f'break values.c:{line_x2}', 'reverse-continue',
            mark('past'), 'print x', mark('past-g'), 'print g',
            mark('past-pc'), 'x/i $pc',
            mark('past-write'), 'eval "maint packet M%lx,4:05000000", &g',
            mark('forward'), 'delete', 'continue',
            mark('now'), 'print x', mark('now-g'), 'print g', mark('end')]


def check_past(what, out, known=False):
    """The checks every GDB session at `x = 2` shares. Where the history
    holds memory (known), x and g are what they were there, 1 and 10;
    elsewhere they are unavailable."""
    past = section(out, 'past')
    past_g = section(out, 'past-g')
    if known:
        report(f'{what}: x at `x = 2` is its value then, 1',
               re.search(r'= 1$', past, re.M), past.strip())
        report(f'{what}: g at `x = 2` is its value then, 10',
               re.search(r'= 10$', past_g, re.M), past_g.strip())
    else:
        report(f'{what}: x at `x = 2` is unavailable, not today\'s 3',
               UNKNOWN_RE.search(past) and '= 3' not in past, past.strip())
        report(f'{what}: g at `x = 2` is unavailable, not today\'s 30',
               UNKNOWN_RE.search(past_g) and '= 30' not in past_g,
               past_g.strip())
    pc = section(out, 'past-pc')
    report(f'{what}: the code at the past pc still reads', '<main+' in pc,
           pc.strip())
    wr = section(out, 'past-write')
    report(f'{what}: a write in the past is refused with its reason',
           'cannot be changed' in wr, wr.strip())
    now = section(out, 'now') + section(out, 'now-g')
    report(f'{what}: forward to the end of the history, x and g are '
           'today\'s 3 and 30 again', '= 3\n' in now and '= 30' in now,
           now.strip())


def live_gdb(build, tmp, backend, line_x2, line_print):
    server = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'values')
    out = served_gdb(server, prog, backend, tmp, 'live',
                     [f'break values.c:{line_print}', 'continue',
                      mark('start'), 'print x', mark('start-g'), 'print g',
                      *past_cmds(line_x2)])
    if out is None:
        return
    start = section(out, 'start') + section(out, 'start-g')
    report(f'live {backend}: at the printf, x and g are 3 and 30',
           '= 3\n' in start and '= 30' in start, out[-1500:])
    # Both recorders keep the old bytes of every store under live
    # control (Valgrind's in the tool's ring, hwt-server's --values).
    check_past(f'live {backend}', out, known=True)


def served_lldb(server, prog, tmp, name, cmds, backend='ptrace'):
    """LLDB's output for cmds against `hwt-server --record --backend
    BACKEND PROG`; None (reported) when the server does not listen."""
    srv = ServerProcess([server, '--listen', '127.0.0.1:0', '--once',
                         '--record', '--backend', backend, '--', prog],
                        tmp, name)
    try:
        if not srv.address:
            report(f'{name}: hwt-server listens', False, srv.log())
            return None
        return lldb([f'target create {prog}', f'gdb-remote {srv.address}',
                     *cmds, 'process kill'])
    finally:
        srv.stop()


def live_lldb(build, tmp, line_x2, line_print, backend='ptrace'):
    out = served_lldb(
        os.path.join(build, 'hwt-server'),
        os.path.join(build, 'programs', 'values'), tmp,
        f'live-lldb-{backend}',
        [f'breakpoint set -f values.c -l {line_print}', 'process continue',
         'script print("<<start>>")', 'frame variable x', 'print g',
         f'breakpoint set -f values.c -l {line_x2}',
         'script print("<<back>>")', 'process continue --reverse',
         'script print("<<past>>")', 'frame variable x',
         'script print("<<past-g>>")', 'print g', 'script print("<<end>>")'],
        backend)
    if out is not None:
        check_lldb('lldb live' + ('' if backend == 'ptrace' else
                                  f' ({backend})'), out, line_x2, known=True)


def check_lldb(what, out, line_x2, known=False):
    past = section(out, 'past')
    past_g = section(out, 'past-g')
    back = section(out, 'back')
    report(f'{what}: reverse-continue stops at `x = 2`',
           'stop reason = breakpoint' in back and
           f'values.c:{line_x2}' in back, out[-1500:])
    if known:
        report(f'{what}: x at `x = 2` is its value then, 1',
               re.search(r'x = 1$', past, re.M), past.strip())
        report(f'{what}: g at `x = 2` is its value then, 10',
               re.search(r'\) 10$', past_g, re.M), past_g.strip())
        return
    report(f'{what}: x at `x = 2` is not today\'s 3',
           'x = 3' not in past and re.search('error|failed|unavailable',
                                             past),
           past.strip())
    report(f'{what}: g at `x = 2` is not today\'s 30',
           '= 30' not in past_g and re.search('error|failed|unavailable',
                                              past_g),
           past_g.strip())


def record(build, tmp, backend, program='values', values=False):
    """A crash bundle of BUILD/programs/PROGRAM (given an argument, each
    crashes) recorded by BACKEND, keeping the values of the past where
    asked (valgrind's --values; ptrace keeps them always)."""
    hwtrace = os.path.join(build, 'hwtrace')
    prog = os.path.join(build, 'programs', program)
    name = f'{program}-{backend}{"-values" if values else ""}'
    bundle = os.path.join(tmp, f'{name}.bundle')
    opts = ['--values'] if values else []
    rc, _, err = run_tool(hwtrace, 'record', '--backend', backend, *opts,
                          '-o', bundle, '--', prog, 'crash', timeout=600)
    if not os.path.exists(os.path.join(bundle, 'core')):
        raise RuntimeError(f'hwtrace record --backend {backend}: exit {rc}: '
                           f'{err.strip()}')
    return bundle


def bts_records(hwtrace, bundle):
    """The bundle's one thread as Intel BTS records: a taken branch is a
    branch instruction whose successor is not its fall-through, read off
    `hwtrace dump --insn --tsv` (direct branches name their target)."""
    rc, out, err = run_tool(hwtrace, 'dump', '--insn', '--tsv', bundle,
                            timeout=600)
    if rc:
        raise RuntimeError(f'hwtrace dump: {err.strip()}')
    items = [(int(f[2], 16), f[3]) for f in
             (line.split('\t') for line in out.splitlines())]
    recs = [(0, items[0][0])]
    for (addr, text), (nxt, _) in zip(items, items[1:]):
        words = [w for w in text.split() if w not in ('bnd', 'notrack')]
        op = words[0] if words else ''
        if op.startswith('j') and op != 'jmp':
            m = DIRECT_RE.match(' '.join(words))
            taken = bool(m) and nxt == int(m.group(2), 16)
        else:
            taken = op in ('jmp', 'call') or op.startswith('ret')
        if taken:
            recs.append((addr, nxt))
    return b''.join(struct.pack('<QQQ', f, t, 0) for f, t in recs)


def bts_bundle(build, sw_bundle, tmp):
    """sw_bundle's history and modules as an hwtrace-bts bundle."""
    hwtrace = os.path.join(build, 'hwtrace')
    out = os.path.join(tmp, 'bts.bundle')
    os.makedirs(os.path.join(out, 'threads'))
    with open(os.path.join(sw_bundle, 'trace.json')) as f:
        doc = json.load(f)
    recs = bts_records(hwtrace, sw_bundle)
    with open(os.path.join(out, 'threads', 't.bts'), 'wb') as f:
        f.write(recs)
    doc['type'] = 'hwtrace-bts'
    doc.pop('core', None)             # the server is given it
    doc.pop('dataHistory', None)      # a BTS recording sees no data
    proc = doc['processes'][0]
    t = proc['threads'][0]
    proc['threads'] = [{'tid': t['tid'], 'btsTrace': 'threads/t.bts',
                        'traceSize': len(recs)}]
    shutil.copytree(os.path.join(sw_bundle, 'modules'),
                    os.path.join(out, 'modules'))
    with open(os.path.join(out, 'trace.json'), 'w') as f:
        json.dump(doc, f, indent=2)
    return out


def postmortem_gdb(build, tmp, what, bundle, core, line_x2, known=False):
    server = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'values')
    argv = [server, '--listen', '127.0.0.1:0', '--bundle', bundle]
    if core:
        argv += ['--core', core]
    srv = ServerProcess(argv, tmp, what.replace(' ', '-'))
    try:
        if not srv.address:
            report(f'{what}: hwt-server listens', False, srv.log())
            return
        # GDB opens a bundle's history with its own record btrace, whose
        # replay never asks the server for the past; without it, reverse
        # execution is the server's.
        out = gdb(prog, srv.address,
                  ['record stop', mark('start'), 'print x', mark('start-g'),
                   'print g', *past_cmds(line_x2), 'kill'])
    finally:
        srv.stop()
    start = section(out, 'start') + section(out, 'start-g')
    report(f'{what}: at the crash, the core\'s x = 3 and g = 30',
           '= 3\n' in start and '= 30' in start, out[-1500:])
    check_past(what, out, known)


def postmortem_lldb(build, tmp, bundle, line_x2):
    server = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'values')
    srv = ServerProcess([server, '--listen', '127.0.0.1:0', '--bundle',
                         bundle], tmp, 'pm-lldb')
    try:
        if not srv.address:
            report('lldb post-mortem: hwt-server listens', False, srv.log())
            return
        out = lldb([f'target create {prog}', f'gdb-remote {srv.address}',
                    'process handle SIGSEGV -p false',
                    'script print("<<start>>")', 'frame variable x',
                    f'breakpoint set -f values.c -l {line_x2}',
                    'script print("<<back>>")', 'process continue --reverse',
                    'script print("<<past>>")', 'frame variable x',
                    'script print("<<past-g>>")', 'print g',
                    'script print("<<past-regs>>")',
                    'register read rip rsp rbp mxcsr',
                    'memory read -s4 -fd -c1 &g',
                    'script print("<<end>>")', 'process kill'])
    finally:
        srv.stop()
    report('lldb post-mortem: at the crash, the core\'s x = 3',
           'x = 3' in section(out, 'start'), out[-1500:])
    # The ptrace bundle's data history: the values then.
    check_lldb('lldb post-mortem', out, line_x2, known=True)
    regs = section(out, 'past-regs')
    report('lldb post-mortem: register read and memory read at `x = 2` '
           'give that moment\'s (g still 10 there)',
           all(re.search(rf'^\s*{r} = 0x[0-9a-f]+', regs, re.M)
               for r in ('rip', 'rsp', 'rbp', 'mxcsr')) and
           re.search(r'^0x[0-9a-f]+: 10$', regs, re.M), regs)


WALK_VALUES = ['local', 'g_count', 'g_ratio', 'g_text', 'heap', 'got',
               '/x $xmm0.v2_int64', '$mxcsr']
WALK_STEP_RE = re.compile(r'^(\d+)\t', re.M)


def walk_states(out, prefix, n):
    """(line, values) after each of n steps marked PREFIX0 .. PREFIXn-1:
    the source line GDB printed for the step and what each print gave
    (GDB's value history numbers dropped)."""
    states = []
    for i in range(n):
        text = section(out, f'{prefix}{i}')
        step = section(out, f'{prefix}{i}s')
        m = WALK_STEP_RE.search(step)
        vals = [re.sub(r'^\$\d+ = ', '', v.strip())
                for v in text.strip().splitlines()]
        states.append((int(m.group(1)) if m else None, vals))
    return states


def served_gdb(server, prog, backend, tmp, name, cmds, args=()):
    """GDB's output for cmds against `hwt-server --record --backend
    BACKEND PROG ARGS`, kept in TMP/NAME.gdb.out; None (reported) when
    the server does not listen."""
    srv = ServerProcess([server, '--listen', '127.0.0.1:0', '--once',
                         '--record', '--backend', backend, '--', prog,
                         *args], tmp, f'{name}-{backend}')
    try:
        if not srv.address:
            report(f'{name} {backend}: hwt-server listens', False, srv.log())
            return None
        out = gdb(prog, srv.address, cmds + ['kill'], timeout=600)
    finally:
        srv.stop()
    with open(os.path.join(tmp, f'{name}-{backend}.gdb.out'), 'w') as f:
        f.write(out)
    return out


def walk_forward(build, tmp, backend, args=()):
    """Forward with `next` from LINE_FIRST to LINE_LAST under BACKEND's
    live recording of walk ARGS, printing every value at each line:
    (LINE_FIRST, the states up to LINE_LAST), or None (reported)."""
    server = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'walk')
    src = os.path.join(HERE, '..', 'programs', 'walk.c')
    with open(src) as f:
        lines = f.read().splitlines()
    first = next(i for i, s in enumerate(lines, 1) if 'LINE_FIRST' in s)
    last = next(i for i, s in enumerate(lines, 1) if 'LINE_LAST' in s)
    prints = [f'print {v}' for v in WALK_VALUES]
    # More steps than the lines between; the walk is cut at LINE_LAST.
    steps = last - first
    cmds = [*walk_start(first), mark('f0s'), mark('f0'), *prints]
    for i in range(1, steps + 1):
        cmds += [mark(f'f{i}s'), 'next', mark(f'f{i}'), *prints]
    out = served_gdb(server, prog, backend, tmp, 'walk-fwd', cmds, args)
    if out is None:
        return None
    fwd = walk_states(out, 'f', steps + 1)
    fwd[0] = (first, fwd[0][1])
    # Steps past LINE_LAST leave main: the walk ends at LINE_LAST.
    end = next((i for i, (ln, _) in enumerate(fwd) if ln == last), None)
    if end is None:
        report(f'walk {backend}: next reaches LINE_LAST', False,
               out[-2000:])
        return None
    return first, fwd[:end + 1]


def walk_start(first):
    return ['handle SIGUSR1 nostop noprint pass', f'break walk.c:{first}',
            'continue']


def walk(build, tmp, backend, bundle=()):
    """The forward walk, then, the same program again, back with
    `reverse-next` from LINE_LAST to LINE_FIRST: the same lines in
    reverse, the same values at each, and main never left."""
    server = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'walk')
    prints = [f'print {v}' for v in WALK_VALUES]
    fw = walk_forward(build, tmp, backend)
    if fw is None:
        return
    first, fwd = fw
    end = len(fwd) - 1
    # The second run (the same program, the same values) steps to
    # LINE_LAST and walks back from there.
    cmds = [*walk_start(first), *['next'] * end]
    nback = 2 * end        # room for the second stops on a line
    for i in range(1, nback + 1):
        cmds += [mark(f'b{i}s'), 'reverse-next', mark(f'b{i}'), *prints]
    out = served_gdb(server, prog, backend, tmp, 'walk-back',
                     cmds + [mark('end')])
    if out is None:
        return
    # GDB 13 stops a second time on a line with two line-table entries
    # (after a call's return, then at the line's start), over its own
    # record full too: of each run of stops on one line, the last is the
    # line's start, where the forward walk stood.
    stops = walk_states(out, 'b', nback + 1)[1:]
    starts = back_starts(stops, first)
    want = list(reversed(fwd[:end]))
    got_lines = [ln for ln, _ in starts]
    report(f'walk {backend}: reverse-next goes back through the lines '
           'next came through, never leaving main',
           got_lines == [ln for ln, _ in want],
           f'forward {[ln for ln, _ in fwd]}, backward '
           f'{[ln for ln, _ in stops]}')
    # The two runs place the heap apart (no ASLR switch for hwt-server).
    want, back = addresses_out(want), addresses_out(starts)
    bad = [(ln, w, g) for (ln, w), (_, g) in zip(want, back) if w != g]
    report(f'walk {backend}: every value at every line is the one the '
           'forward walk printed there (locals, globals, heap, libc\'s '
           'copies, a pipe read, a signal handler\'s store)',
           not bad and len(back) == len(want),
           '; '.join(f'line {ln}: forward {w} backward {g}'
                     for ln, w, g in bad[:3]) or f'{len(back)} steps')
    if bundle:
        walk_bundle(build, tmp, first, fwd, 'ptrace')


def back_starts(states, first):
    """Of each run of stops on one line going back, the last (the line's
    start), up to LINE_FIRST."""
    starts = [st for i, st in enumerate(states)
              if i + 1 == len(states) or states[i + 1][0] != st[0]]
    if any(ln == first for ln, _ in starts):
        starts = starts[:[ln for ln, _ in starts].index(first) + 1]
    return starts


def addresses_out(states):
    """States with addresses (heap, stack, libraries: 0x55..., 0x56...,
    0x7e... or 0x7f... of 12 digits: the kernel places mappings as low as
    0x7ef0... under ASLR) as 0x_: runs place them apart. Other numbers,
    in hex too (an SSE register's words), stay as they are."""
    return [(ln, [re.sub(r'0x(?:5[56]|7[ef])[0-9a-f]{10}\b', '0x_', v)
                  for v in vals]) for ln, vals in states]


def xmm0_low(states):
    """States with the upper half of /x $xmm0.v2_int64 left out."""
    return [(ln, [re.sub(r'^\{(0x[0-9a-f_]+), 0x[0-9a-f_]+\}$', r'{\1, _}',
                         v) for v in vals]) for ln, vals in states]


def walk_bundle(build, tmp, first, live, backend='ptrace'):
    """The same walk through a crash bundle of BACKEND's recorder (walk,
    given an argument, crashes after LINE_LAST): from the crash back to
    LINE_FIRST, forward with `next` in the recorded past to LINE_LAST,
    then back with `reverse-next`. Every line shows the values the live
    walk printed there, from the bundle's data history over its core."""
    server = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'walk')
    bundle = record(build, tmp, backend, 'walk', values=True)
    what = 'walk bundle' + ('' if backend == 'ptrace' else f' ({backend})')
    prints = [f'print {v}' for v in WALK_VALUES]
    steps = len(live) - 1
    cmds = ['record stop', f'break walk.c:{first}', 'reverse-continue',
            'delete', mark('f0s'), mark('f0'), *prints]
    for i in range(1, steps + 1):
        cmds += [mark(f'f{i}s'), 'next', mark(f'f{i}'), *prints]
    for i in range(1, 2 * steps + 1):
        cmds += [mark(f'b{i}s'), 'reverse-next', mark(f'b{i}'), *prints]
    srv = ServerProcess([server, '--listen', '127.0.0.1:0', '--bundle',
                         bundle], tmp, f'walk-bundle-{backend}')
    try:
        if not srv.address:
            report(f'{what}: hwt-server listens', False, srv.log())
            return
        out = gdb(prog, srv.address, cmds + [mark('end'), 'kill'])
    finally:
        srv.stop()
    fwd = walk_states(out, 'f', steps + 1)
    fwd[0] = (first, fwd[0][1])
    back = back_starts(walk_states(out, 'b', 2 * steps + 1)[1:], first)
    if backend == 'valgrind':
        # After signal(), xmm0's upper half is 8 bytes of stack the
        # kernel did not write (libc's sigaction copies 16 of them):
        # what an earlier call left there, which differs between a run
        # under Valgrind's gdbserver and a recording (their environment
        # strings differ). The reader checks every register it takes
        # back against Valgrind's own at each system call instead.
        live, fwd, back = (xmm0_low(w) for w in (live, fwd, back))
    same_walk(f'{what}: forward in the recorded past, every line and '
              'value is the live walk\'s', live, fwd)
    same_walk(f'{what}: back with reverse-next, the same lines and '
              'values, never leaving main', list(reversed(live[:-1])), back)


def same_walk(what, want, got):
    """Report whether two walks stop on the same lines with the same
    values there (addresses aside)."""
    bad = [(ln, w, g) for (ln, w), (_, g) in zip(addresses_out(want),
                                                 addresses_out(got))
           if w != g]
    report(what, [ln for ln, _ in got] == [ln for ln, _ in want] and not bad,
           '; '.join(f'line {ln}: live {w} bundle {g}'
                     for ln, w, g in bad[:3]) or
           f'want {[ln for ln, _ in want]}, got {[ln for ln, _ in got]}')


def who_wrote(build, tmp, backend='ptrace'):
    """"Who wrote this pointer?": at a breakpoint after a stray strcpy,
    `watch -l table[2].label` and `reverse-continue` stop in the strcpy
    called from overflow(), GDB printing the pointer's old and new value;
    again, at the store that first set it (fill(2), the thousand stores
    of the same value between changed nothing); `continue` forward from
    there executes that store (a stop right after it), then stops at the
    strcpy again."""
    server = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'overwrite')
    src = os.path.join(HERE, '..', 'programs', 'overwrite.c')
    with open(src) as f:
        line = next(i for i, s in enumerate(f, 1) if 'LINE_PRINT' in s)
    what = 'who wrote' + ('' if backend == 'ptrace' else f' ({backend})')
    out = served_gdb(server, prog, backend, tmp, 'who-wrote', [
        f'break overwrite.c:{line}', 'continue', 'delete',
        'watch -l table[2].label', mark('w1'), 'reverse-continue', 'bt 3',
        mark('w2'), 'reverse-continue', 'bt 2', mark('w3'), 'continue',
        'bt 2', mark('w4'), 'continue', 'bt 3', mark('end')])
    if out is None:
        return
    w1, w2, w3 = section(out, 'w1'), section(out, 'w2'), section(out, 'w3')
    w4 = section(out, 'w4')
    report(f'{what}: reverse-continue to a watched pointer stops in the '
           'strcpy that overran into it, called from overflow()',
           re.search(r'Old value = .*\nNew value = .*"two"', w1) and
           re.search(r'#0 .*strcpy', w1) and ' in overflow ' in w1, w1)
    report(f'{what}: again, at the store that set it a thousand calls '
           'before (fill(2))', re.search(r'New value = 0x0\b', w2) and
           re.search(r'in fill \(i=2\)', w2), w2)
    lout = served_lldb(server, prog, tmp, f'who-wrote-lldb-{backend}', [
        f'breakpoint set -f overwrite.c -l {line}', 'process continue',
        'breakpoint delete -f',
        'watchpoint set expression -w write -s 8 -- &table[2].label',
        'script print("<<back>>")', 'process continue --reverse', 'bt 3',
        'script print("<<end>>")'], backend) or ''
    back = section(lout, 'back')
    report(f'{what}: LLDB\'s watchpoint set + process continue --reverse '
           'stops in the strcpy called from overflow() (LLDB runs code in '
           'the program to evaluate the expression: those writes are kept '
           'in the history too)',
           'stop reason = watchpoint 1' in back and 'strcpy' in back and
           'overwrite`overflow' in back, back[-800:])
    report(f'{what}: continue forward in the past stops after that '
           'store, then at the strcpy again',
           re.search(r'New value = .*"two"', w3) and ' fill (i=2)' in w3 and
           re.search(r'#0 .*strcpy', w4) and ' in overflow ' in w4,
           w3 + w4)


def who_wrote_postmortem(build, tmp, backend='ptrace'):
    """The same question of a crash recording: overwrite, given an
    argument, crashes on the pointer the strcpy overran. From BACKEND's
    bundle (its data history, the core as the present), `watch -l` and
    `reverse-continue` stop in that strcpy, GDB printing the pointer's
    old and new value, then at fill(2), which set it; a read watchpoint
    is refused (a recording keeps stores, not reads; GDB shows no
    reason of a Z packet's error)."""
    hwtrace = os.path.join(build, 'hwtrace')
    server = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'overwrite')
    bundle = record(build, tmp, backend, 'overwrite', values=True)
    pm = 'who wrote post-mortem' + ('' if backend == 'ptrace' else
                                    f' ({backend})')
    srv = ServerProcess([server, '--listen', '127.0.0.1:0', '--bundle',
                         bundle], tmp, f'who-wrote-pm-{backend}')
    try:
        if not srv.address:
            report(f'{pm}: hwt-server listens', False, srv.log())
            return
        out = gdb(prog, srv.address, [
            'record stop', 'watch -l table[2].label', mark('w1'),
            'reverse-continue', 'bt 3', mark('w2'), 'reverse-continue',
            'bt 2', mark('r'), 'rwatch table[0].label', 'reverse-continue',
            mark('end'), 'kill'])
    finally:
        srv.stop()
    w1, w2, r = section(out, 'w1'), section(out, 'w2'), section(out, 'r')
    report(f'{pm}: from the crash bundle, reverse-continue '
           'to the pointer stops in the strcpy that overran it, called '
           'from overflow()',
           re.search(r'Old value = .*\nNew value = .*"two"', w1) and
           re.search(r'#0 .*strcpy', w1) and ' in overflow ' in w1, w1)
    report(f'{pm}: again, at fill(2), which set it',
           re.search(r'New value = 0x0\b', w2) and
           re.search(r'in fill \(i=2\)', w2), w2)
    report(f'{pm}: a read watchpoint is refused, not '
           'silently never hit', 'Could not insert hardware watchpoint' in r,
           r)
    srv = ServerProcess([server, '--listen', '127.0.0.1:0', '--bundle',
                         bundle], tmp, f'who-wrote-pm-lldb-{backend}')
    try:
        lout = lldb([f'target create {prog}', f'gdb-remote {srv.address}',
                     'process handle SIGSEGV -p false',
                     'watchpoint set expression -w write -s 8 -- '
                     '&table[2].label', 'script print("<<back>>")',
                     'process continue --reverse', 'bt 3',
                     'script print("<<again>>")',
                     'process continue --reverse', 'bt 2',
                     'script print("<<end>>")', 'process kill']) \
            if srv.address else srv.log()
    finally:
        srv.stop()
    back, again = section(lout, 'back'), section(lout, 'again')
    report(f'{pm}: LLDB\'s watchpoint set + process '
           'continue --reverse from the crash bundle stops in the strcpy '
           'called from overflow(), then at fill(2)',
           'stop reason = watchpoint 1' in back and 'strcpy' in back and
           'overwrite`overflow' in back and 'overwrite`fill(i=2)' in again,
           lout[-1500:])
    writes_cli(hwtrace, prog, bundle, backend)


def two_threads(build, tmp, backend='ptrace'):
    """Two threads store to one variable in turns (twostores: worker 1
    stores 11, worker 2 21, worker 1 12), then main crashes. From the
    crash bundle of BACKEND, each reverse-continue to a watch on it stops at
    the store before, in the order the threads took their steps, in the
    thread that made it: worker 1's 12, worker 2's 21, worker 1's 11."""
    server = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'twostores')
    bundle = record(build, tmp, backend, 'twostores', values=True)
    srv = ServerProcess([server, '--listen', '127.0.0.1:0', '--bundle',
                         bundle], tmp, f'two-threads-{backend}')
    cmds = ['record stop', 'watch -l shared']
    for i in range(3):
        cmds += [mark(f's{i}'), 'reverse-continue', 'print id',
                 'print value']
    try:
        out = gdb(prog, srv.address, cmds + [mark('end'), 'kill']) \
            if srv.address else srv.log()
    finally:
        srv.stop()
    for i, (ident, value) in enumerate(((1, 12), (2, 21), (1, 11))):
        stop = section(out, f's{i}')
        vals = re.findall(r'^\$\d+ = (\d+)$', stop, re.M)
        report(f'two threads ({backend}): reverse watch {i + 1} stops at '
               f'worker '
               f'{ident}\'s store of {value}, in that thread',
               'hit Hardware watchpoint 1' in stop and
               vals == [str(ident), str(value)] and
               f'in store_as (id={ident}, value={value})' in stop, stop)


def values_horizon(build, tmp):
    """A valgrind recording whose values reach back over part of its
    history (--values=1M: about half of values' instructions): a reverse
    watch on bytes nothing writes stops where the values begin, the
    registers known there; one instruction further back they are
    unavailable, never today's."""
    hwtrace = os.path.join(build, 'hwtrace')
    server = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'values')
    bundle = os.path.join(tmp, 'values-1m.bundle')
    run_tool(hwtrace, 'record', '--backend', 'valgrind', '--values=1M',
             '-o', bundle, '--', prog, 'crash', timeout=600)
    _, info, _ = run_tool(hwtrace, 'info', bundle)
    held = re.search(r'^data: +data\.past: registers before (\d+) '
                     r'instructions', info, re.M)
    total = re.search(r'(\d+) instructions recorded', info)
    report('values horizon: --values=1M keeps values for part of the '
           'history', held and total and
           0 < int(held.group(1)) < int(total.group(1)), info)
    srv = ServerProcess([server, '--listen', '127.0.0.1:0', '--bundle',
                         bundle], tmp, 'values-horizon')
    try:
        out = gdb(prog, srv.address, [
            'record stop', 'watch -l *(long *)($sp - 65536)',
            mark('w'), 'reverse-continue', 'print $sp', mark('b'),
            'reverse-stepi', 'print $sp', mark('end'), 'kill']) \
            if srv.address else srv.log()
    finally:
        srv.stop()
    w, b = section(out, 'w'), section(out, 'b')
    report('values horizon: a reverse watch that finds no store stops '
           'where the values begin, its registers known',
           'No more reverse-execution history' in w and
           re.search(r'^\$\d+ = \(void \*\) 0x[0-9a-f]+$', w, re.M), w)
    report('values horizon: one instruction further back the registers '
           'are unavailable', re.search(r'^\$\d+ = <unavailable>$', b,
                                         re.M), b)


def writes_cli(hwtrace, prog, bundle, backend):
    """`hwtrace writes` asks the bundle the same at once: the strcpy's
    store, then fill(2)'s, each with its bytes before and after, at the
    items dump --insn gives them."""
    off = subprocess.run(['gdb', '-nx', '-batch', '-ex',
                          'print/x (long)&table[2].label', prog],
                         capture_output=True, text=True).stdout
    with open(os.path.join(bundle, 'trace.json')) as f:
        mods = json.load(f)['processes'][0]['modules']
    base = [int(str(m['loadAddress']), 0) for m in mods
            if m['systemPath'].endswith('/overwrite')]
    m = re.search(r'= (0x[0-9a-f]+)', off)
    if not m or not base:
        report('hwtrace writes: the pointer\'s address', False, off)
        return
    addr = base[0] + int(m.group(1), 16)
    rc, out, err = run_tool(hwtrace, 'writes', '--tsv', hex(addr), bundle)
    rows = [ln.split('\t') for ln in out.splitlines()]
    report(f'hwtrace writes ({backend}): the strcpy\'s store, newest, then '
           'fill(2)\'s that set the pointer, with their bytes before and '
           'after',
           rc == 0 and len(rows) == 2 and 'strcpy' in rows[0][3] and
           rows[0][6] == '797a303132333435' and rows[1][3] == 'fill' and
           rows[1][5] == '0' * 16 and rows[1][6] == rows[0][5],
           out + err)
    if rc == 0 and rows and rows[0][1].isdigit():
        _, ins, _ = run_tool(hwtrace, 'dump', '--insn', '--range',
                             f'{rows[0][1]},{rows[0][1]}', bundle)
        pcs = [int(x, 16) for x in re.findall(r'0x[0-9a-f]{16}', ins)]
        report('hwtrace writes: the item it names is the storing '
               'instruction in dump --insn', pcs == [int(rows[0][2], 16)]
               and 'strcpy' in ins, ins)
    rc, out, err = run_tool(hwtrace, 'writes', '0x10,65', bundle)
    report('hwtrace writes: a range of more than 64 bytes is a usage error',
           rc == 2 and 'LEN 1 to 64' in err, err)


def data_history_info(build, tmp, sw, vg):
    """hwtrace info says what a data history holds, that a bundle has
    none, and why a damaged one is not used; hwt-server opens a bundle
    whose data history is damaged, saying why its values of the past are
    unavailable."""
    hwtrace = os.path.join(build, 'hwtrace')
    _, out, _ = run_tool(hwtrace, 'info', sw)
    report('hwtrace info: the ptrace bundle\'s data history',
           re.search(r'^data: +data\.past: registers before \d+ '
                     r'instructions, \d+ stores', out, re.M), out)
    _, out, _ = run_tool(hwtrace, 'info', vg)
    report('hwtrace info: a bundle without one says so',
           re.search(r'^data: +\(none', out, re.M), out)
    bad = os.path.join(tmp, 'damaged.bundle')
    shutil.copytree(sw, bad)
    with open(os.path.join(bad, 'data.past'), 'r+b') as f:
        f.truncate(100)
    _, out, _ = run_tool(hwtrace, 'info', bad)
    report('hwtrace info: a damaged data history is not used, with why',
           re.search(r'^data: +data\.past not used: .*data history: ', out,
                     re.M), out)
    log = server_start_log(build, tmp, 'damaged', ['--bundle', bad])
    report('hwt-server: a bundle with a damaged data history opens, '
           'saying its values of the past are unavailable',
           'values of the past are unavailable' in log, log)
    log = server_start_log(build, tmp, 'other-core',
                           ['--bundle', sw, '--core', os.path.join(sw, 'core')])
    report('hwt-server: with a core given by --core, the data history is '
           'not told back from it, and it says so',
           'not from one given with --core' in log, log)


def server_start_log(build, tmp, name, args):
    """What hwt-server says as it opens with args and listens ('' when it
    does not listen)."""
    srv = ServerProcess([os.path.join(build, 'hwt-server'), '--listen',
                         '127.0.0.1:0', *args], tmp, name)
    try:
        return srv.log() if srv.address else ''
    finally:
        srv.stop()


def main():
    args = parse_args()
    build = args.build
    line_x2 = marker_line('LINE_X2')
    line_print = marker_line('LINE_PRINT')
    tmp = tempfile.mkdtemp(prefix='hwt-past-')
    try:
        for backend in ('ptrace', 'valgrind'):
            if selected(f'live-{backend}'):
                live_gdb(build, tmp, backend, line_x2, line_print)
        # The bundle's walk is checked against the live one.
        live_walk, bundle_walk = selected('walk-ptrace'), selected(
            'walk-bundle')
        if live_walk or bundle_walk:
            walk(build, tmp, 'ptrace', bundle_walk)
        if selected('walk-valgrind'):
            walk(build, tmp, 'valgrind')
        # Valgrind's cpu runs libc's baseline code (its memset leaves
        # other bytes in xmm0): its bundle is checked against its own
        # live walk forward, whose values are the present's, of the
        # same command line (what libc's string code leaves in xmm0
        # depends on it).
        if selected('walk-bundle-valgrind'):
            fw = walk_forward(build, tmp, 'valgrind', ['crash'])
            if fw:
                walk_bundle(build, tmp, fw[0], fw[1], 'valgrind')
        if selected('who-wrote'):
            who_wrote(build, tmp)
        if selected('who-wrote-valgrind'):
            who_wrote(build, tmp, 'valgrind')
        if selected('who-wrote-postmortem'):
            who_wrote_postmortem(build, tmp)
        if selected('who-wrote-postmortem-valgrind'):
            who_wrote_postmortem(build, tmp, 'valgrind')
        if selected('two-threads'):
            two_threads(build, tmp)
        if selected('two-threads-valgrind'):
            two_threads(build, tmp, 'valgrind')
        if selected('values-horizon'):
            values_horizon(build, tmp)
        if selected('live-lldb'):
            live_lldb(build, tmp, line_x2, line_print)
        if selected('live-lldb-valgrind'):
            live_lldb(build, tmp, line_x2, line_print, 'valgrind')
        if selected('bundles'):
            sw = record(build, tmp, 'ptrace')
            postmortem_gdb(build, tmp, 'bundle hwt-sw (ptrace)', sw, None,
                           line_x2, known=True)
            vg = record(build, tmp, 'valgrind')
            data_history_info(build, tmp, sw, vg)
            rc, _, err = run_tool(os.path.join(build, 'hwtrace'), 'writes',
                                  '0x1000', vg)
            report('hwtrace writes: a bundle without a data history is '
                   'refused with the reason', rc == 1 and
                   'no data history' in err, err)
            postmortem_gdb(build, tmp, 'bundle hwt-sw (valgrind)', vg, None,
                           line_x2)
            vgv = record(build, tmp, 'valgrind', values=True)
            postmortem_gdb(build, tmp, 'bundle hwt-sw (valgrind --values)',
                           vgv, None, line_x2, known=True)
            pt = os.path.join(tmp, 'pt.bundle')
            rc, _, err = run_tool(os.path.join(build, 'hwtrace'), 'export',
                                  '--lldb', '-o', pt, sw)
            report('hwtrace export --lldb of the ptrace bundle', rc == 0,
                   err.strip())
            postmortem_gdb(build, tmp, 'bundle Intel PT', pt,
                           os.path.join(sw, 'core'), line_x2)
            bts = bts_bundle(build, sw, tmp)
            postmortem_gdb(build, tmp, 'bundle Intel BTS', bts,
                           os.path.join(sw, 'core'), line_x2)
            postmortem_lldb(build, tmp, sw, line_x2)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        report('past values', False, str(e))
    status = exit_status()
    if status == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f'  |   (files kept in {tmp})')
    return status


if __name__ == '__main__':
    sys.exit(main())
