#!/usr/bin/env python3
"""Values of the past are never today's values.

BUILD/programs/values stores x = 1, 2, 3 (a local) and g = 10, 20, 30 (a
global), prints them and, given an argument, stores through NULL. Standing
at the line `x = 2` in the past (a breakpoint there, then reverse-continue),
a debugger over hwt-server must not print x = 3 or g = 30, the values of
the present: no recording here holds memory yet, so GDB must say `Cannot
access memory` or `<unavailable>`, and LLDB must fail to read them. What
never changes stays readable there: the code at the pc (the read-only
segments of the program's files, as GDB's own btrace replay reads) and the
pc itself. Writing in the past is refused with its reason. Continuing
forward to the end of the history brings the present back, and with it
x = 3, g = 30.

Live (`hwt-server --record`), for each backend that records here: ptrace
and valgrind, in GDB, and the ptrace one in LLDB.
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


def check_past(what, out, present_check=True):
    """The checks every GDB session at `x = 2` shares."""
    past = section(out, 'past')
    report(f'{what}: x at `x = 2` is unavailable, not today\'s 3',
           UNKNOWN_RE.search(past) and '= 3' not in past, past.strip())
    past_g = section(out, 'past-g')
    report(f'{what}: g at `x = 2` is unavailable, not today\'s 30',
           UNKNOWN_RE.search(past_g) and '= 30' not in past_g,
           past_g.strip())
    pc = section(out, 'past-pc')
    report(f'{what}: the code at the past pc still reads', '<main+' in pc,
           pc.strip())
    wr = section(out, 'past-write')
    report(f'{what}: a write in the past is refused with its reason',
           'cannot be changed' in wr, wr.strip())
    if present_check:
        now = section(out, 'now') + section(out, 'now-g')
        report(f'{what}: forward to the end of the history, x and g are '
               'today\'s 3 and 30 again', '= 3\n' in now and '= 30' in now,
               now.strip())


def live_gdb(build, tmp, backend, line_x2, line_print):
    server = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'values')
    srv = ServerProcess([server, '--listen', '127.0.0.1:0', '--once',
                         '--record', '--backend', backend, '--', prog],
                        tmp, f'live-{backend}')
    try:
        if not srv.address:
            report(f'live {backend}: hwt-server listens', False, srv.log())
            return
        out = gdb(prog, srv.address,
                  [f'break values.c:{line_print}', 'continue',
                   mark('start'), 'print x', mark('start-g'), 'print g',
                   *past_cmds(line_x2), 'kill'])
    finally:
        srv.stop()
    start = section(out, 'start') + section(out, 'start-g')
    report(f'live {backend}: at the printf, x and g are 3 and 30',
           '= 3\n' in start and '= 30' in start, out[-1500:])
    check_past(f'live {backend}', out)


def live_lldb(build, tmp, line_x2, line_print):
    server = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'values')
    srv = ServerProcess([server, '--listen', '127.0.0.1:0', '--once',
                         '--record', '--backend', 'ptrace', '--', prog],
                        tmp, 'live-lldb')
    try:
        if not srv.address:
            report('lldb live: hwt-server listens', False, srv.log())
            return
        out = lldb([f'target create {prog}', f'gdb-remote {srv.address}',
                    f'breakpoint set -f values.c -l {line_print}',
                    'process continue', 'script print("<<start>>")',
                    'frame variable x', 'print g',
                    f'breakpoint set -f values.c -l {line_x2}',
                    'script print("<<back>>")', 'process continue --reverse',
                    'script print("<<past>>")', 'frame variable x',
                    'script print("<<past-g>>")', 'print g',
                    'script print("<<end>>")', 'process kill'])
    finally:
        srv.stop()
    check_lldb('lldb live', out, line_x2)


def check_lldb(what, out, line_x2):
    past = section(out, 'past')
    past_g = section(out, 'past-g')
    back = section(out, 'back')
    report(f'{what}: reverse-continue stops at `x = 2`',
           'stop reason = breakpoint' in back and
           f'values.c:{line_x2}' in back, out[-1500:])
    report(f'{what}: x at `x = 2` is not today\'s 3',
           'x = 3' not in past and re.search('error|failed|unavailable',
                                             past),
           past.strip())
    report(f'{what}: g at `x = 2` is not today\'s 30',
           '= 30' not in past_g and re.search('error|failed|unavailable',
                                              past_g),
           past_g.strip())


def record(build, tmp, backend):
    hwtrace = os.path.join(build, 'hwtrace')
    prog = os.path.join(build, 'programs', 'values')
    bundle = os.path.join(tmp, f'{backend}.bundle')
    rc, _, err = run_tool(hwtrace, 'record', '--backend', backend, '-o',
                          bundle, '--', prog, 'crash', timeout=600)
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
    proc = doc['processes'][0]
    t = proc['threads'][0]
    proc['threads'] = [{'tid': t['tid'], 'btsTrace': 'threads/t.bts',
                        'traceSize': len(recs)}]
    shutil.copytree(os.path.join(sw_bundle, 'modules'),
                    os.path.join(out, 'modules'))
    with open(os.path.join(out, 'trace.json'), 'w') as f:
        json.dump(doc, f, indent=2)
    return out


def postmortem_gdb(build, tmp, what, bundle, core, line_x2):
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
    check_past(what, out)


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
                    'script print("<<end>>")', 'process kill'])
    finally:
        srv.stop()
    report('lldb post-mortem: at the crash, the core\'s x = 3',
           'x = 3' in section(out, 'start'), out[-1500:])
    check_lldb('lldb post-mortem', out, line_x2)


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
        if selected('live-lldb'):
            live_lldb(build, tmp, line_x2, line_print)
        if selected('bundles'):
            sw = record(build, tmp, 'ptrace')
            postmortem_gdb(build, tmp, 'bundle hwt-sw (ptrace)', sw, None,
                           line_x2)
            vg = record(build, tmp, 'valgrind')
            postmortem_gdb(build, tmp, 'bundle hwt-sw (valgrind)', vg, None,
                           line_x2)
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
