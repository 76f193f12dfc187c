#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The LLDB plugin (plugin/lldb, BUILD/libhwt-lldb.so) in stock lldb-22.

  1. load      `lldb-22 -b -o 'plugin load ...'` exits 0 with no error text;
               `help hwt` names every subcommand, `help hwt instructions`
               its options
  2. tsv       through LLDB's Python API (synchronous, as in batch mode):
               `hwt instructions --tsv` and `hwt calls --tsv` equal
               `hwtrace dump --insn --tsv` / `--calls --tsv` byte for byte,
               on BUILD/programs/recursion recorded by `hwtrace record`,
               on LLDB's own Intel PT corpus bundle and on a CoreSight
               snapshot; `-c N` gives the newest N lines of the same;
               `hwt info` equals `hwtrace info` on each
  3. crash     BUILD/programs/demo_crash recorded (core + bundle), then
               `target create PROG --core DIR/core` + `hwt load DIR`: the
               newest call path in `hwt calls --tsv` is main -> parse_config
               -> lookup; `hwt reverse-step` from the crash lands on the
               start of the faulting line, once more on the line before it
               (`s = s->next;`), `hwt reverse-finish` on the call of lookup
               in parse_config, `hwt goto LAST` back on the crash; lines are
               found in demo_crash.c by their text, not by number
  4. save      `hwt save OUT` of the crash bundle and of LLDB's intel-pt
               bundle gives bundles `hwtrace dump --insn --tsv` reads to
               the same lines; an existing OUT is refused
  5. errors    unknown option, missing bundle dir, garbage trace.json, no
               bundle loaded, `hwt start` on a core and on a process under
               lldb-server (no trace here): one clear error line
               each, LLDB goes on (a following command works) and, fed on
               stdin, exits 0
  6. server    under hwt-server (post-mortem, the same bundle): `hwt status`
               shows its qHwtStatus, `hwt reverse-step` twice moves the
               server's process (LLDB's own frame) to `s = s->next;`
  7. live      demo_crash live under `hwt-server -- PROG` (ASLR off, as the
               oracle): break at main, `hwt start`, break at `s = s->next;`,
               continue; `hwt status` shows the live trace; `hwt
               instructions -c 20 --tsv` (no `hwt load`: the plugin fetches
               the server's history) equals the single-step oracle's 20
               addresses ending at the stop pc (the oracle's first arrival
               there); unknown options, a bad backend or size and a missing
               bundle are one error line each and the live history still
               answers; `hwt stop`; `hwt reverse-step` lands on the while
               line before it, in the plugin's frame and in LLDB's own stop
               (the server ran backwards to a one-shot breakpoint)

lldb-22 or python3-lldb-22 missing is a FAIL naming the package
(scripts/install-deps.sh installs them).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from hwt_testlib import (RESULTS, ServerProcess, exit_status, parse_args,
                         report, run_tool)

LLDB = 'lldb-22'
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(REPO), 'shared', 'corpus')
PT_BUNDLE = os.path.join(SHARED, 'lldb-intelpt', 'intelpt-trace', 'trace.json')
CS_SNAPSHOT = os.path.join(SHARED, 'opencsd', 'snapshots', 'ete_ip')
CRASH_SRC = os.path.join(REPO, 'tests', 'programs', 'demo_crash.c')
SUBCOMMANDS = ('load', 'info', 'instructions', 'calls', 'reverse-step',
               'reverse-next', 'reverse-finish', 'reverse-stepi',
               'reverse-continue', 'step', 'next', 'finish', 'stepi',
               'continue', 'goto', 'save', 'start', 'stop', 'status')
FRAME_RE = re.compile(r'^frame #0: 0x([0-9a-f]+) (\S+)`(\S+) at (\S+):(\d+)$',
                      re.M)


def import_lldb():
    """LLDB's Python module, from where lldb-22 says it is."""
    path = subprocess.run([LLDB, '-P'], capture_output=True, text=True,
                          timeout=60).stdout.strip()
    # Launching from Python, liblldb looks for lldb-server on PATH only.
    prefix = os.path.dirname(os.path.dirname(os.path.dirname(path)))
    server = os.path.join(prefix, 'bin', 'lldb-server')
    if os.path.exists(server):
        os.environ.setdefault('LLDB_DEBUGSERVER_PATH', server)
    sys.path.insert(0, path)
    import lldb  # noqa: E402  (found only through lldb-22 -P)
    return lldb


class Lldb:
    """One debugger, synchronous like batch mode; run() -> (ok, out, err)."""

    def __init__(self, lldb, plugin):
        self.lldb = lldb
        self.dbg = lldb.SBDebugger.Create(False)
        self.dbg.SetAsync(False)
        self.ci = self.dbg.GetCommandInterpreter()
        ok, _, err = self.run(f'plugin load {plugin}')
        if not ok:
            raise RuntimeError(f'plugin load failed: {err.strip()}')

    def run(self, command):
        r = self.lldb.SBCommandReturnObject()
        self.ci.HandleCommand(command, r)
        return r.Succeeded(), r.GetOutput() or '', r.GetError() or ''

    def close(self):
        self.lldb.SBDebugger.Destroy(self.dbg)


def line_of(text):
    """1-based line of demo_crash.c holding text (exactly once)."""
    with open(CRASH_SRC) as f:
        hits = [i + 1 for i, l in enumerate(f) if text in l]
    if len(hits) != 1:
        raise RuntimeError(f'{CRASH_SRC}: {len(hits)} lines hold {text!r}')
    return hits[0]


def record(hwtrace, out, prog):
    rc, _, err = run_tool(hwtrace, 'record', '--backend', 'ptrace', '-o', out,
                          '--', prog,
                          timeout=300)
    if not os.path.exists(os.path.join(out, 'trace.json')):
        raise RuntimeError(f'hwtrace record {prog}: exit {rc}: {err.strip()[-300:]}')
    return rc


def check_load(plugin):
    p = subprocess.run([LLDB, '-b', '-o', f'plugin load {plugin}', '-o',
                        'help hwt', '-o', 'help hwt instructions'],
                       capture_output=True, text=True, errors='replace',
                       timeout=120)
    report('load: plugin load is clean',
           p.returncode == 0 and 'error' not in p.stderr.lower() and
           'error:' not in p.stdout,
           f'exit {p.returncode}: {p.stderr.strip()[:300]}')
    missing = [c for c in SUBCOMMANDS
               if not re.search(rf'^\s+{re.escape(c)}\s+--', p.stdout, re.M)]
    report('load: help hwt names every subcommand', not missing,
           f'missing {missing}')
    report('load: help hwt instructions shows its options',
           all(o in p.stdout for o in ('--count', '--tsv', '--thread')),
           p.stdout[-400:])


def check_tsv(dbg, hwtrace, name, path):
    ok, out, err = dbg.run(f'hwt load {path}')
    if not ok:
        report(f'tsv {name}: hwt load', False, err.strip())
        return
    rc, want, derr = run_tool(hwtrace, 'info', path, timeout=600)
    ok, got, err = dbg.run('hwt info')
    report(f'tsv {name}: hwt info == hwtrace info', rc == 0 and ok and
           want and got == want, f'{err.strip()[:200]} {got[:300]!r} vs '
           f'{want[:300]!r}')
    for what, opt in (('instructions', '--insn'), ('calls', '--calls')):
        rc, want, derr = run_tool(hwtrace, 'dump', opt, '--tsv', path,
                                  timeout=600)
        ok, got, err = dbg.run(f'hwt {what} --tsv')
        report(f'tsv {name}: hwt {what} --tsv == hwtrace dump {opt} --tsv',
               rc == 0 and ok and want and got == want,
               f'dump exit {rc} {derr.strip()[:200]}; lldb ok={ok} '
               f'{err.strip()[:200]}; {len(got)} vs {len(want)} bytes')
    rc, want, _ = run_tool(hwtrace, 'dump', '--insn', '--tsv', '--last', '7',
                           path, timeout=600)
    ok, got, err = dbg.run('hwt instructions -c 7 --tsv')
    report(f'tsv {name}: -c 7 == dump --last 7', rc == 0 and ok and
           got == want and got, f'{got[:300]!r} vs {want[:300]!r}')


def frame(out):
    """(function, file basename, line) of the frame line in out."""
    m = FRAME_RE.search(out)
    return (m.group(3), m.group(4), int(m.group(5))) if m else None


def check_crash(dbg, build, hwtrace, work):
    bundle = os.path.join(work, 'crash')
    prog = os.path.join(build, 'programs', 'demo_crash')
    record(hwtrace, bundle, prog)
    crash_line = line_of('while (strcmp(s->key, key) != 0)')
    prev_line = line_of('s = s->next;')
    call_line = line_of('total += lookup(&s_name, keys[i]);')
    ok, out, err = dbg.run(f'target create {prog} --core {bundle}/core')
    report('crash: target create --core', ok, err.strip())
    ok, out, err = dbg.run(f'hwt load {bundle}')
    report('crash: hwt load', ok and 'signal 11' in out, err.strip() or out)
    ok, out, err = dbg.run('hwt info')
    report('crash: hwt info names the fault', ok and
           re.search(r'in lookup at \S*demo_crash\.c:%d' % crash_line, out),
           err.strip() or out[:400])

    ok, out, err = dbg.run('hwt calls --tsv')
    path = []
    level = None
    for line in reversed(out.splitlines()):
        f = line.split('\t')
        if len(f) == 5 and (level is None or int(f[1]) < level):
            level = int(f[1])
            path.append(f[2])
    report('crash: call path into the fault is main -> parse_config -> lookup',
           ok and path[:3] == ['lookup', 'parse_config', 'main'],
           f'newest path {path[:6]} {err.strip()}')

    want = [('reverse-step', 'lookup', crash_line),
            ('reverse-step', 'lookup', prev_line),
            ('reverse-finish', 'parse_config', call_line)]
    for cmd, fn, line in want:
        ok, out, err = dbg.run(f'hwt {cmd}')
        got = frame(out)
        report(f'crash: hwt {cmd} -> {fn} at demo_crash.c:{line}',
               ok and got == (fn, 'demo_crash.c', line) and
               re.search(rf'^-> {line}\s', out, re.M),
               f'got {got} {err.strip()} {out[:300]!r}')
    rc, lines, _ = run_tool(hwtrace, 'dump', '--insn', '--tsv', '--last', '1',
                            bundle)
    last = lines.split('\t')[1] if rc == 0 and lines else '0'
    ok, out, err = dbg.run(f'hwt goto {last}')
    report('crash: hwt goto LAST is the crash again',
           ok and frame(out) == ('lookup', 'demo_crash.c', crash_line) and
           f'item {last} of {last}' in out, f'{out[:300]!r} {err.strip()}')
    return bundle, prog, crash_line, prev_line


def check_save(dbg, hwtrace, bundle, work):
    for name, src in (('hwtrace-sw', bundle), ('intel-pt', PT_BUNDLE)):
        out_dir = os.path.join(work, 'saved-' + name)
        ok, out, err = dbg.run(f'hwt load {src}')
        ok, out, err = dbg.run(f'hwt save {out_dir}')
        _, want, _ = run_tool(hwtrace, 'dump', '--insn', '--tsv', src)
        rc, got, derr = run_tool(hwtrace, 'dump', '--insn', '--tsv', out_dir)
        report(f'save: hwt save OUT of {name} reads back to the same history',
               ok and rc == 0 and got == want and want,
               f'{err.strip()} dump exit {rc} {derr.strip()[:200]}')
    ok, out, err = dbg.run(f'hwt save {out_dir}')
    report('save: an existing OUT is refused', not ok and
           'already exists' in err, err.strip() or out)


def check_errors(plugin, dbg, prog, work):
    garbage = os.path.join(work, 'garbage')
    os.makedirs(garbage)
    with open(os.path.join(garbage, 'trace.json'), 'w') as f:
        f.write('{"type": "hwtrace-sw", "processes": [garbage')
    cases = [
        ('unknown option', 'hwt instructions --foo',
         "error: hwt instructions: unknown option '--foo'; usage: hwt instructions"),
        ('unknown short option', 'hwt calls -x',
         "error: hwt calls: unknown option '-x'; usage: hwt calls"),
        ('bad count', 'hwt instructions -c zero',
         "error: hwt instructions: -c N must be a positive number"),
        ('missing bundle dir', f'hwt load {work}/nonexistent',
         f'error: hwt load: {work}/nonexistent'),
        ('garbage trace.json', f'hwt load {garbage}', 'error: hwt load: '),
        ('goto outside', 'hwt goto 999999999999', 'error: hwt goto: '),
        ('start on a core', 'hwt start', 'error: hwt start: the process is a'),
    ]
    for name, cmd, want in cases:
        ok, out, err = dbg.run(cmd)
        lines = err.strip().splitlines()
        report(f'errors: {name}', not ok and len(lines) == 1 and
               lines[0].startswith(want), f'{err.strip()!r} {out[:200]!r}')
        ok, out, err = dbg.run('hwt instructions -c 1 --tsv')
        report(f'errors: {name}: the loaded trace still answers',
               ok and out.count('\n') == 1, err.strip())
    fresh = Lldb(dbg.lldb, plugin)
    ok, out, err = fresh.run('hwt calls')
    report('errors: no bundle loaded', not ok and
           'no trace loaded' in err, err.strip())
    ok, out, err = fresh.run('hwt status')
    report('errors: hwt status without a process', not ok and
           'no stopped live process' in err, err.strip())
    # A live process under lldb-server, which has no trace here.
    fresh.run(f'target create {prog}')
    ok, out, err = fresh.run('process launch --stop-at-entry')
    if ok:
        ok, out, err = fresh.run('hwt start --size 4K')
        report('errors: hwt start without trace support says what is missing',
               not ok and 'no hwtrace server and no hardware trace here' in err,
               err.strip() or out)
        fresh.run('process kill')
    else:
        report('errors: process launch for hwt start', False, err.strip())
    fresh.close()

    script = (f'plugin load {plugin}\nhwt load {work}/nonexistent\n'
              f'hwt instructions --foo\nhwt load {garbage}\n'
              'script print("still-" + "running")\nquit\n')
    p = subprocess.run([LLDB, '--no-use-colors'], input=script,
                       capture_output=True, text=True, errors='replace',
                       timeout=120)
    report('errors: lldb on stdin goes on and exits 0',
           p.returncode == 0 and 'still-running' in p.stdout and
           p.stderr.count('error: hwt ') == 3,
           f'exit {p.returncode}: {p.stderr.strip()[:300]}')


def end_session(dbg, srv):
    """Kill the debuggee, close lldb and give the server 10 s to exit."""
    dbg.run('process kill')
    dbg.close()
    srv.wait(timeout=10)
    srv.stop()


def check_server(lldb, plugin, build, bundle, prog, crash_line, prev_line,
                 work):
    server = os.path.join(build, 'hwt-server')
    srv = ServerProcess([server, '--listen', '127.0.0.1:0', '--bundle',
                         bundle], work, 'server')
    if not srv.address:
        srv.stop()
        report('server: hwt-server starts', False, srv.log())
        return
    dbg = Lldb(lldb, plugin)
    try:
        dbg.run(f'target create {prog}')
        ok, out, err = dbg.run(f'gdb-remote {srv.address}')
        report('server: gdb-remote to hwt-server', ok, err.strip())
        ok, out, err = dbg.run('hwt status')
        report('server: hwt status', ok and
               out.startswith('hwt-server: post-mortem, format hwtrace-sw, '
                              'stopped: fault, signal 11'),
               err.strip() or out)
        dbg.run(f'hwt load {bundle}')
        for line in (crash_line, prev_line):
            ok, out, err = dbg.run('hwt reverse-step')
            report(f'server: hwt reverse-step -> demo_crash.c:{line} '
                   'in the server too',
                   ok and frame(out) == ('lookup', 'demo_crash.c', line)
                   and re.search(rf'stop reason = one-shot breakpoint.*\n'
                                 rf'\s+frame #0: .*demo_crash`lookup.* at '
                                 rf'demo_crash\.c:{line}', out) is not None,
                   f'{err.strip()} {out[-500:]!r}')
    finally:
        end_session(dbg, srv)


def oracle_addrs(build, name):
    """The single-step oracle's addresses of BUILD/programs/name from
    main (test_oracle.py, cached in BUILD/oracle-cache)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import test_oracle
    progs = {p.name: p for p in test_oracle.PROGRAMS}
    programs = os.path.realpath(os.path.join(build, 'programs'))
    cache = os.path.join(build, 'oracle-cache')
    os.makedirs(cache, exist_ok=True)
    runs, _, _ = test_oracle.run_oracle(progs[name], os.path.join(programs, name),
                                        cache, programs)
    return runs[0].addrs


def live_server(server, prog, work):
    """hwt-server running prog live with ASLR off (the oracle's layout),
    its output in a regular file as the oracle's is."""
    with open(os.path.join(work, 'live.out'), 'w') as out:
        return ServerProcess(['setarch', '-R', server, '--listen',
                              '127.0.0.1:0', '--', prog], work, 'live',
                             stdout=out, cwd=os.path.dirname(prog))


def tsv_addrs(text):
    return [int(f[2], 16) for f in (line.split('\t') for line in
                                    text.splitlines()) if len(f) > 2]


def check_live(lldb, plugin, build, work, crash_line, prev_line):
    server = os.path.join(build, 'hwt-server')
    prog = os.path.realpath(os.path.join(build, 'programs', 'demo_crash'))
    oracle = oracle_addrs(build, 'demo_crash')
    srv = live_server(server, prog, work)
    if not srv.address:
        srv.stop()
        report('live: hwt-server -- PROG starts', False, srv.log())
        return
    dbg = Lldb(lldb, plugin)
    try:
        dbg.run(f'target create {prog}')
        ok, out, err = dbg.run(f'gdb-remote {srv.address}')
        report('live: gdb-remote to hwt-server -- PROG', ok, err.strip())
        dbg.run('breakpoint set -n main -K false')
        ok, out, err = dbg.run('process continue')
        report('live: stop at main', ok, err.strip())
        ok, out, err = dbg.run('hwt start')
        report('live: hwt start', ok and 'intel-pt tracing started' in out,
               err.strip() or out)
        ok, out, err = dbg.run(f'breakpoint set -f demo_crash.c -l {prev_line}')
        ok, out, err = dbg.run('process continue')
        pc = dbg.dbg.GetSelectedTarget().GetProcess().GetSelectedThread() \
            .GetFrameAtIndex(0).GetPC()
        report(f'live: continue to the breakpoint at demo_crash.c:{prev_line}',
               ok and 'stop reason = breakpoint 2.1' in out,
               err.strip() or out[-300:])
        ok, out, err = dbg.run('hwt status')
        m = re.search(r'^thread \d+: (\d+) instructions recorded', out, re.M)
        report('live: hwt status shows the live trace', ok and
               out.startswith('hwt-server: live, format hwt-sw') and m and
               int(m.group(1)) > 20, err.strip() or out)
        ok, out, err = dbg.run('hwt instructions -c 20 --tsv')
        got = tsv_addrs(out)
        stop = oracle.index(pc, 1) if pc in oracle[1:] else -1
        want = oracle[stop - 19:stop + 1] if stop >= 19 else []
        report('live: hwt instructions -c 20 == the oracle\'s 20 addresses '
               'up to the stop', ok and want and got == want,
               f'{err.strip()} stop pc {pc:#x} at oracle index {stop}; got '
               f'{[hex(a) for a in got]}, want {[hex(a) for a in want]}')
        for name, cmd, msg in (
                ('unknown option', 'hwt start --foo',
                 "error: hwt start: unknown option '--foo'; usage: hwt start"),
                ('bad backend', 'hwt start --backend bts',
                 'error: hwt start: the stub serves intel-pt tracing, not'),
                ('bad size', 'hwt start --size 4x',
                 "error: hwt start: --size '4x' is not a size"),
                ('missing bundle', f'hwt load {work}/nonexistent',
                 f'error: hwt load: {work}/nonexistent')):
            ok, out, err = dbg.run(cmd)
            lines = err.strip().splitlines()
            report(f'live errors: {name}', not ok and len(lines) == 1 and
                   lines[0].startswith(msg), f'{err.strip()!r} {out[:200]!r}')
            ok, out, err = dbg.run('hwt instructions -c 1 --tsv')
            report(f'live errors: {name}: the live history still answers',
                   ok and tsv_addrs(out) == [pc], err.strip() or out)
        ok, out, err = dbg.run('hwt stop')
        report('live: hwt stop', ok and 'tracing stopped' in out,
               err.strip() or out)
        ok, out, err = dbg.run('hwt reverse-step')
        report(f'live: hwt reverse-step -> demo_crash.c:{crash_line}, the '
               'server ran backwards there',
               ok and frame(out) == ('lookup', 'demo_crash.c', crash_line)
               and re.search(rf'stop reason = one-shot breakpoint.*\n'
                             rf'\s+frame #0: .*demo_crash`lookup.* at '
                             rf'demo_crash\.c:{crash_line}', out) is not None,
               f'{err.strip()} {out[-500:]!r}')
    finally:
        end_session(dbg, srv)


def main():
    args = parse_args()
    build = args.build
    hwtrace = os.path.join(build, 'hwtrace')
    plugin = os.path.join(build, 'libhwt-lldb.so')

    if not shutil.which(LLDB):
        report('lldb-22', False, 'lldb-22 not installed (apt-get install '
               'lldb-22 python3-lldb-22 liblldb-22-dev)')
        return exit_status()
    if not os.path.exists(plugin):
        report('plugin', False, f'{plugin} missing: build with make O={args.build}')
        return exit_status()
    try:
        lldb = import_lldb()
    except ImportError as e:
        report('python3-lldb-22', False, f'{e}: apt-get install python3-lldb-22')
        return exit_status()

    check_load(plugin)
    lldb.SBDebugger.Initialize()
    work = tempfile.mkdtemp(prefix='hwt-lldb-plugin-')
    try:
        rec = os.path.join(work, 'recursion')
        record(hwtrace, rec, os.path.join(build, 'programs', 'recursion'))
        dbg = Lldb(lldb, plugin)
        check_tsv(dbg, hwtrace, 'recursion (hwtrace-sw)', rec)
        if os.path.exists(PT_BUNDLE):
            check_tsv(dbg, hwtrace, 'LLDB intel-pt corpus', PT_BUNDLE)
        else:
            report('tsv intel-pt corpus', False, f'{PT_BUNDLE} missing')
        if os.path.isdir(CS_SNAPSHOT):
            check_tsv(dbg, hwtrace, 'CoreSight ete_ip', CS_SNAPSHOT)
        else:
            report('tsv CoreSight', False, f'{CS_SNAPSHOT} missing')
        dbg.close()

        dbg = Lldb(lldb, plugin)
        bundle, prog, crash_line, prev_line = check_crash(dbg, build, hwtrace,
                                                           work)
        check_errors(plugin, dbg, prog, work)
        check_save(dbg, hwtrace, bundle, work)
        dbg.close()
        check_server(lldb, plugin, build, bundle, prog, crash_line,
                     prev_line, work)
        check_live(lldb, plugin, build, work, crash_line, prev_line)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
        report('setup', False, str(e))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lldb.SBDebugger.Terminate()
    passed = sum(1 for r in RESULTS if r)
    failed = len(RESULTS) - passed
    print(f'{passed} passed, {failed} failed')
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
