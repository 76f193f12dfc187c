#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""hwt-server --backend valgrind: GDB drives a program on Valgrind's
synthetic cpu (docs/valgrind.md, "Live control").

GDB records each test program through the server from main to exit with
record btrace (bts and pt) and its history of the program's own code must
equal the GDB single-step oracle's; library code is left out, as in
test_valgrind.py (Valgrind's cpu makes glibc pick other code). Reverse
execution must land where GDB's own record full lands; a fault stops with
its signal and a backtrace; registers, the thread pointer, an interrupt,
LLDB's thread trace and --attach are checked too.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_gdb_live  # noqa: E402
import test_lldb_server  # noqa: E402
import test_valgrind  # noqa: E402
from hwt_testlib import exit_status, parse_args, report, selected  # noqa: E402

PROGS = ['loops', 'recursion', 'fnptr', 'qsort', 'switch', 'longjmp',
         'signal', 'strings', 'pie_lib']

# The history script of test_gdb_live, plus where main is (a PIE's load
# bias) and how many threads GDB saw.
HISTORY_SCRIPT = test_gdb_live.HISTORY_SCRIPT.replace(
    '"pc": int(gdb.parse_and_eval("$pc"))}',
    '"pc": int(gdb.parse_and_eval("$pc")), '
    '"main": int(gdb.parse_and_eval("(long)&main"))}')


def link_address(path, sym):
    out = subprocess.run(['nm', path], capture_output=True, text=True).stdout
    m = re.search(rf'^([0-9a-f]+) T {sym}$', out, re.M)
    return int(m.group(1), 16) if m else None


def server(server_exe, tail, tmp, name, programs):
    return test_gdb_live.Server(server_exe, ['--backend', 'valgrind'] + tail,
                                tmp, name, programs)


def session(server_exe, programs, tmp, name, path, script):
    """GDB runs SCRIPT on PATH through hwt-server --backend valgrind:
    (GDB's output, the JSON the script wrote)."""
    srv = server(server_exe, ['--', path], tmp, name, programs)
    try:
        return test_gdb_live.gdb(path, srv.address, script, tmp, name)
    finally:
        srv.wait(10)
        srv.stop()


def check_history(server_exe, programs, tmp, prog, fmt):
    path = os.path.realpath(os.path.join(programs, prog))
    name = f'{fmt} {prog}'
    try:
        runs = test_gdb_live.oracle_of(prog, programs)
    except Exception as e:  # the oracle could not run: a failure
        report(name, False, f'oracle: {e}')
        return
    ranges = test_valgrind.exec_ranges(path)
    main_at = link_address(path, 'main')
    # The main thread's run (a threaded program has one per thread).
    want = next((w for w in (test_valgrind.own_offsets(
        r.addrs, r.bias(r.program) or 0, ranges) for r in runs)
        if w and w[0] == main_at), [])
    # Libraries load elsewhere under Valgrind: exit by its name.
    end = 'exit'
    srv = server(server_exe, ['--', path], tmp, f'vg-{fmt}-{prog}', programs)
    try:
        if not srv.address:
            report(name, False, f'server did not start: {srv.log()}')
            return
        script = (f'FORMAT = {fmt!r}\nBTS_SIZE = "unlimited"\n'
                  f'PT_SIZE = "unlimited"\nEND = {end!r}\n' + HISTORY_SCRIPT)
        out, d = test_gdb_live.gdb(path, srv.address, script, tmp,
                                   f'vg-{fmt}-{prog}')
    finally:
        srv.wait(10)
        srv.stop()
    if not d:
        report(f'{name}: GDB records through the valgrind backend', False,
               out[-1500:])
        return
    bias = d['main'] - main_at
    have = test_valgrind.own_offsets(d['insns'], bias, ranges)
    diff = test_valgrind.first_difference(have, want)
    report(f'{name}: the history of its own code equals the oracle\'s from '
           'main to exit', diff is None and bool(want),
           f'{len(have)} vs {len(want)} instructions, first difference at '
           f'{diff}: {hex(have[diff]) if diff is not None and diff < len(have) else "-"}'
           f' vs {hex(want[diff]) if diff is not None and diff < len(want) else "-"}')
    m = re.search(r'Recorded (\d+) instructions', d['info'])
    report(f'{name}: info record counts the history',
           bool(m) and int(m.group(1)) == len(d['insns']),
           f'info record: {d["info"].strip()!r}, history {len(d["insns"])}')


THREADS_SCRIPT = r'''
import gdb, json
gdb.execute("break main")
gdb.execute("continue")
gdb.execute("record btrace")
gdb.execute("break threads4.c:33")
res = []
for _ in range(4):
    gdb.execute("continue")
    r = gdb.current_recording()
    res.append({"tid": gdb.selected_thread().ptid[1],
                "insns": [i.pc for i in r.instruction_history],
                "threads": len(gdb.selected_inferior().threads()),
                "main": int(gdb.parse_and_eval("(long)&main"))})
json.dump(res, open(OUT, "w"))
gdb.execute("kill")
'''


def check_threads(server_exe, programs, tmp):
    """threads4's workers, each stopped after its loop: four threads, and
    each one's history of its own code, from its start, is the beginning
    of one of the oracle's worker runs."""
    path = os.path.realpath(os.path.join(programs, 'threads4'))
    ranges = test_valgrind.exec_ranges(path)
    try:
        runs = test_gdb_live.oracle_of('threads4', programs)
    except Exception as e:  # the oracle could not run: a failure
        report('threads4: oracle', False, str(e))
        return
    want = [test_valgrind.own_offsets(r.addrs, r.bias(r.program) or 0,
                                      ranges) for r in runs]
    out, d = session(server_exe, programs, tmp, 'vg-threads', path,
                     THREADS_SCRIPT)
    why = out[-800:] if not d else ''
    ok = bool(d) and len({x['tid'] for x in d}) == 4
    for x in d or []:
        bias = x['main'] - link_address(path, 'main')
        have = test_valgrind.own_offsets(x['insns'], bias, ranges)
        if len(have) < 10 or not any(w[:len(have)] == have for w in want):
            ok = False
            why += f'thread {x["tid"]}: {len(have)} own instructions, ' \
                   f'from {hex(have[0]) if have else "-"}, none of the ' \
                   f'oracle\'s runs begins so; '
    report('threads4: four workers, each one\'s history a beginning of an '
           'oracle run', ok, why or str([x['tid'] for x in d]))


def check_reverse(server_exe, programs, tmp):
    """The reverse steps of test_gdb_live on recursion: where they land
    equals GDB's own record full."""
    path = os.path.realpath(os.path.join(programs, 'recursion'))
    native_script = ('import gdb\ngdb.execute("break main")\n'
                     'gdb.execute("run")\ngdb.execute("record full")\n'
                     + test_gdb_live.REVERSE_STEPS)
    npath = os.path.join(tmp, 'native.py')
    nout = os.path.join(tmp, 'native.json')
    with open(npath, 'w') as f:
        f.write(f'OUT = {nout!r}\n' + native_script)
    p = subprocess.run(['gdb', '-nx', '-batch', '-x', npath, path],
                       capture_output=True, text=True, timeout=240,
                       cwd=programs)
    native = test_gdb_live.json.load(open(nout)) \
        if os.path.exists(nout) else None
    if not native:
        report('reverse: GDB record full reference', False, p.stdout[-1500:])
        return
    script = ('import gdb\ngdb.execute("break main")\ngdb.execute("continue")\n'
              'gdb.execute("record btrace")\n' + test_gdb_live.REVERSE_STEPS)
    out, d = session(server_exe, programs, tmp, 'vg-rev', path, script)
    report('reverse: step, next, finish, continue and goto begin land where '
           'record full does', d == native,
           f'valgrind {d}, record full {native}; ' + ('' if d else out[-800:]))


FAULT_SCRIPT = r'''
import gdb, json
gdb.execute("continue")
stop = gdb.execute("info program", to_string=True)
bt = gdb.execute("bt", to_string=True)
regs = gdb.execute("info registers rip rsp fs_base", to_string=True)
gdb.execute("record btrace")
gdb.execute("continue")
json.dump({"stop": stop, "bt": bt, "regs": regs}, open(OUT, "w"))
'''


def check_fault(server_exe, programs, tmp):
    """The crash program: its SIGSEGV stops it where it faults; GDB shows
    the backtrace, and continuing lets the signal kill it."""
    path = os.path.realpath(os.path.join(programs, 'crash'))
    out, d = session(server_exe, programs, tmp, 'vg-crash', path,
                     FAULT_SCRIPT)
    frames = test_valgrind.frames(d['bt']) if d else []
    report('a fault stops with SIGSEGV, backtrace through the program\'s '
           'frames, then kills the program',
           bool(d) and 'SIGSEGV' in out and frames[-1:] == ['main'] and
           'Program terminated with signal SIGSEGV' in out,
           f'frames {frames}; {out[-800:]}')


REGS_SCRIPT = r'''
import gdb, json
gdb.execute("break main")
gdb.execute("continue")
res = {}
res["rip"] = int(gdb.parse_and_eval("$pc"))
res["main"] = int(gdb.parse_and_eval("(long)&main"))
res["fs_base"] = int(gdb.parse_and_eval("$fs_base"))
# glibc's thread control block starts with a pointer to itself.
res["tcb"] = int(gdb.parse_and_eval("*(long *)$fs_base"))
gdb.execute("set var $rax = 0x1234567")
res["rax"] = int(gdb.parse_and_eval("$rax"))
gdb.execute("stepi")
gdb.execute("set var $xmm1.v4_int32[0] = 0x11223344")
res["xmm1"] = int(gdb.parse_and_eval("$xmm1.v4_int32[0]"))
res["argc"] = int(gdb.parse_and_eval("argc"))
json.dump(res, open(OUT, "w"))
gdb.execute("kill")
'''


def check_registers(server_exe, programs, tmp):
    path = os.path.realpath(os.path.join(programs, 'loops'))
    out, d = session(server_exe, programs, tmp, 'vg-regs', path,
                     REGS_SCRIPT)
    report('registers: pc at the breakpoint, fs_base (the thread control '
           'block points to itself), general and vector registers written',
           bool(d) and d['rip'] == d['main'] and d['fs_base'] != 0 and
           d['tcb'] == d['fs_base'] and d['rax'] == 0x1234567 and
           d['xmm1'] == 0x11223344 and d['argc'] == 1,
           f'{d} {out[-800:] if not d else ""}')


def check_interrupt(server_exe, programs, tmp):
    """^C while the program runs: it stops, goes on when continued, stops
    again, and is killed."""
    loop = os.path.join(tmp, 'loop')
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run(['cc', '-O1', '-o', loop,
                    os.path.join(here, '..', '..', 'bench', 'loop.c')],
                   check=True)
    srv = server(server_exe, ['--', loop, '2000000000'], tmp, 'vg-intr',
                 programs)
    replies = []
    try:
        s = test_gdb_live.connect(srv.address)
        test_gdb_live.ask(s, 'qSupported:swbreak+')
        buf = b''
        for _ in range(2):
            s.sendall(test_gdb_live.frame('vCont;c'))
            time.sleep(1.5)
            s.sendall(b'\x03')
            p, buf = test_gdb_live.read_packet(s, buf)
            s.sendall(b'+')
            replies.append(p.decode())
        test_gdb_live.ask(s, 'vKill;1')
        s.close()
    except (OSError, EOFError) as e:
        replies.append(f'{e}: {srv.log()}')
    finally:
        srv.wait(10)
        srv.stop()
    report('^C stops a running program (T02), twice',
           len(replies) == 2 and all(r.startswith('T02') for r in replies),
           str(replies))


def check_lldb(server_exe, programs, tmp, prog):
    """LLDB through the server: thread trace from main to exit, the
    program's own instructions equal to the oracle's (LLDB keeps the
    program it was given: /proc/PID/exe names the tool's copy, gone)."""
    path = os.path.realpath(os.path.join(programs, prog))
    name = f'lldb {prog}'
    try:
        run = test_gdb_live.oracle_of(prog, programs)[0]
        srv = test_lldb_server.Server(server_exe, ['--backend', 'valgrind',
                                                   '--', path], cwd=programs)
    except Exception as e:  # the oracle or the server failed: a failure
        report(name, False, str(e))
        return
    try:
        out = test_lldb_server.lldb(
            test_lldb_server.connect(path, srv.port) +
            ['breakpoint set -n main -K false', 'process continue',
             'thread trace start', 'breakpoint set -n exit',
             'process continue',
             'thread trace dump instructions --raw --forwards --all',
             'process kill'])
        got = test_lldb_server.dump_addrs(out)
    except RuntimeError as e:
        report(name, False, str(e))
        return
    finally:
        srv.close()
    ranges = test_valgrind.exec_ranges(path)
    have = test_valgrind.own_offsets(got, 0, ranges)
    want = test_valgrind.own_offsets(run.addrs, 0, ranges)
    diff = test_valgrind.first_difference(have, want)
    report(f'{name}: thread trace of its own code equals the oracle\'s from '
           'main to exit', diff is None and bool(want),
           f'{len(have)} vs {len(want)} instructions, first difference at '
           f'{diff}')


def check_attach(server_exe, programs, tmp):
    p = subprocess.run([server_exe, '--listen', '127.0.0.1:0', '--backend',
                        'valgrind', '--attach', str(os.getpid())],
                       capture_output=True, text=True, timeout=30)
    report('--attach is refused: Valgrind must start the program',
           p.returncode != 0 and 'Valgrind must start the program' in
           p.stderr, f'{p.returncode}: {p.stderr.strip()}')


def main():
    args = parse_args()
    server_exe = os.path.join(args.build, 'hwt-server')
    programs = os.path.join(args.build, 'programs')
    p = subprocess.run([os.path.join(args.build, 'hwtrace'), 'backends'],
                       capture_output=True, text=True)
    line = next((l for l in p.stdout.splitlines()
                 if l.split() and l.split()[0] == 'valgrind'), '')
    if 'available' not in line or 'unavailable' in line:
        print(f'SKIP valgrind live: {line.strip() or "not listed"}')
        return 0
    with tempfile.TemporaryDirectory(prefix='hwt-vglive-') as tmp:
        for fmt in ('bts', 'pt'):
            for prog in PROGS:
                if selected(f'{fmt}-{prog}'):
                    check_history(server_exe, programs, tmp, prog, fmt)
        if selected('threads'):
            check_threads(server_exe, programs, tmp)
        if selected('reverse'):
            check_reverse(server_exe, programs, tmp)
        if selected('fault'):
            check_fault(server_exe, programs, tmp)
        if selected('registers'):
            check_registers(server_exe, programs, tmp)
        if selected('interrupt'):
            check_interrupt(server_exe, programs, tmp)
        for prog in ('recursion', 'fnptr'):
            if not selected(f'lldb-{prog}'):
                continue
            if shutil.which(test_lldb_server.LLDB):
                check_lldb(server_exe, programs, tmp, prog)
            else:
                print(f'SKIP lldb {prog}: {test_lldb_server.LLDB} is not '
                      'installed')
        if selected('attach'):
            check_attach(server_exe, programs, tmp)
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
