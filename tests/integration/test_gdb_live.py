#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""hwt-server live: stock GDB 13 over `target remote` runs a program that
hwt-server launched (`hwt-server --listen ... -- PROG`) and records.

What must hold, per oracle program (tests/integration/oracle_gdb.py, cached
by test_oracle.py): after `break main`, `continue`, `record btrace bts`
(and, in a separate run, `record btrace pt`), `break exit`, `continue`,
GDB's instruction history is the oracle's addresses from main up to the
stop, the stop pc is the oracle's next address, `info record` counts them,
and the function-call history names the program's functions in the
oracle's order. threads4, in both formats: every worker thread, stopped at
the worker's `ret`, has an oracle worker's sequence and calls, counted by
`info record`. A BTS or PT buffer size keeps only the newest part.
QThreadEvents: a `create` stop per thread born, a `w` per thread gone.
AVX: ymm registers GDB writes read back from the live process.
Reverse: reverse-step/next/finish/continue and `record goto begin` land on
the lines GDB's own `record full` lands on; bs (reverse-stepi without a
record target) goes to the previous oracle address. Robustness: a GDB
killed mid-session leaves no stopped inferior; ^C stops a sleeping
program with SIGINT; a second client is refused; detach lets an attached
process run on."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True   # no __pycache__ in the source tree
import test_oracle  # noqa: E402  (oracle cache and program list)
from hwt_testlib import ServerProcess, exit_status, parse_args, report, selected  # noqa: E402

PROGS = ['loops', 'loops_O0', 'recursion', 'fnptr', 'qsort', 'switch', 'longjmp',
         'signal', 'crash', 'pie_lib', 'dlopen', 'demo_crash']
# GDB sessions of different programs run two at a time: each one mostly
# waits on the other process (GDB on the server, the server on GDB).
PARALLEL = 2


class Server(ServerProcess):
    """hwt-server launching ARGV (or attaching), listening on a free port."""

    def __init__(self, exe, tail, tmp, name, cwd, env=None):
        # The program's output goes to a file, as in the oracle's run (libc
        # sizes stdout's buffer by what stdout is: a different path).
        self.out = open(os.path.join(tmp, f'{name}.stdout'), 'w')
        # No address randomisation and an empty environment (but ENV), as
        # the oracle's and `hwtrace record`'s runs: the same code.
        extra = [f'{k}={v}' for k, v in sorted((env or {}).items())]
        super().__init__(['env', '-i', 'PATH=/usr/bin:/bin', *extra,
                          'setarch', '-R', exe, '--listen', '127.0.0.1:0'] + tail,
                         tmp, name, stdout=self.out, cwd=cwd)

    def stop(self):
        super().stop()
        self.out.close()


def children(pid):
    """Process ids whose parent is pid."""
    out = []
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open(f'/proc/{d}/stat') as f:
                    if int(f.read().rsplit(')', 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return out


def proc_state(pid):
    """The State letter of /proc/PID/status, None when it is gone."""
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('State:'):
                    return line.split()[1]
    except OSError:
        return None
    return None


def gdb(prog, address, script, tmp, name, timeout=240):
    """Run GDB in batch mode on a Python script; returns (output, json
    the script wrote to $OUT)."""
    path = os.path.join(tmp, f'{name}.py')
    out = os.path.join(tmp, f'{name}.json')
    with open(path, 'w') as f:
        f.write(f'OUT = {out!r}\n' + script)
    p = subprocess.run(['gdb', '-nx', '-batch', '-ex', 'set pagination off',
                        '-ex', 'set confirm off', '-ex', f'target remote {address}',
                        '-x', path, prog], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, errors='replace', timeout=timeout)
    data = None
    if os.path.exists(out):
        with open(out) as f:
            data = json.load(f)
    return p.stdout, data


# Run to exit (or to a fatal signal) recording from main; dump what GDB
# has: instruction and function-call history, `info record`, stop pc.
HISTORY_SCRIPT = r'''
import gdb, json
gdb.execute("handle all nostop noprint pass")
gdb.execute("handle SIGSEGV stop print nopass")
gdb.execute("break *main")
gdb.execute("continue")
gdb.execute("set record instruction-history-size unlimited")
gdb.execute("set record function-call-history-size unlimited")
gdb.execute("set record btrace bts buffer-size " + BTS_SIZE)
gdb.execute("set record btrace pt buffer-size " + PT_SIZE)
gdb.execute("record btrace " + FORMAT)
gdb.execute("break *" + END)
gdb.execute("continue")
r = gdb.current_recording()
insns = [i.pc for i in r.instruction_history if hasattr(i, "pc")]
calls = [(s.symbol.name if s.symbol else None, s.level) for s in r.function_call_history]
info = gdb.execute("info record", to_string=True)
json.dump({"insns": insns, "calls": calls, "info": info, "format": r.format,
           "pc": int(gdb.parse_and_eval("$pc"))}, open(OUT, "w"))
gdb.execute("kill")
'''


def served_gdb(server_exe, tail, prog, script, tmp, name, programs, timeout=240):
    """GDB's session (gdb()) against a server started with TAIL for it,
    which is then waited for and stopped."""
    srv = Server(server_exe, tail, tmp, name, programs)
    try:
        return gdb(prog, srv.address, script, tmp, name, timeout=timeout)
    finally:
        srv.wait(10)
        srv.stop()


def oracle_of(prog, programs, env=None):
    """The oracle runs for prog (in ENV) from the cache next to the programs."""
    cache = os.path.join(os.path.dirname(os.path.realpath(programs)), 'oracle-cache')
    os.makedirs(cache, exist_ok=True)
    p = next(x for x in test_oracle.PROGRAMS if x.name == prog)
    runs, _, _ = test_oracle.run_oracle(p, os.path.realpath(os.path.join(programs, prog)),
                                        cache, programs, env)
    return runs


def own_calls(names, own):
    """The program's own functions in call-history order, runs collapsed
    (a function's cold part counts as the function, as GDB names it)."""
    own = {test_oracle.strip_suffixes(n) for n in own}
    seq = []
    for n in names:
        n = test_oracle.strip_suffixes(n) if n else n
        if n in own and (not seq or seq[-1] != n):
            seq.append(n)
    return seq


def check_history(server_exe, programs, tmp, prog, fmt, bts_size='unlimited',
                  pt_size='unlimited', env=None, label=''):
    """GDB's history of prog recorded in FMT through a live hwt-server,
    the program run in ENV; LABEL names the run in reports and files."""
    name = f'{fmt} {prog}{label}'
    path = os.path.realpath(os.path.join(programs, prog))
    try:
        run = oracle_of(prog, programs, env)[0]
    except Exception as e:  # the oracle could not run: that is a failure
        report(name, False, f'oracle: {e}')
        return None
    tag = f'{fmt}-{prog}{label.replace(" ", "-")}-{bts_size}-{pt_size}'
    srv = Server(server_exe, ['--', path], tmp, tag, programs, env)
    try:
        if not srv.address:
            report(name, False, f'server did not start: {srv.log()}')
            return None
        # The oracle's end: exit's entry; dlopen's library is unmapped by
        # then, so GDB could not disassemble its part of the history.
        end = 'dlclose' if prog == 'dlopen' else run.meta.get('end_address', {}).get('address', 'exit')
        script = (f'FORMAT = {fmt!r}\nBTS_SIZE = {bts_size!r}\nPT_SIZE = {pt_size!r}\n'
                  f'END = {end!r}\n' + HISTORY_SCRIPT)
        out, d = gdb(path, srv.address, script, tmp, tag)
    finally:
        srv.wait(10)
        srv.stop()
    if not d:
        report(name, False, 'GDB wrote no history: ' + out[-1500:])
        return None
    return run, d


def compare_insns(run, d, full=True):
    """None if GDB's history equals the oracle from main, else why not."""
    o, g = run.addrs, d['insns']
    if not g:
        return 'GDB has no instruction history'
    if full and g[0] != o[0]:
        return f'GDB starts at {g[0]:#x}, the oracle at {o[0]:#x}'
    if full:
        k = 0
    else:
        # The newest part: it ends where the oracle first reaches the stop
        # (the end breakpoint's first hit); its start may repeat earlier.
        if d['pc'] not in o or o.index(d['pc']) < len(g):
            return f'stopped at {d["pc"]:#x}, which the oracle does not reach after {len(g)}'
        k = o.index(d['pc']) - len(g)
    if k + len(g) >= len(o):
        return f'GDB has {len(g)} instructions from oracle item {k}, the oracle {len(o)}'
    for i, (a, b) in enumerate(zip(g, o[k:])):
        if a != b:
            return f'instruction {i + 1}: GDB {a:#x}, oracle {b:#x} ({run.desc(b)})'
    if d['pc'] != o[k + len(g)]:
        return f'stopped at {d["pc"]:#x}, the oracle goes on at {o[k + len(g)]:#x}'
    return None


def history_suite(server_exe, programs, tmp, progs, fmt):
    with ThreadPoolExecutor(PARALLEL) as pool:
        runs = list(pool.map(lambda p: check_history(server_exe, programs, tmp, p, fmt), progs))
    for prog, r in zip(progs, runs):
        if not r:
            continue
        run, d = r
        why = compare_insns(run, d)
        report(f'{fmt} {prog}: instruction-history equals the oracle from main', why is None,
               why or '')
        m = re.search(r'Recorded (\d+) instructions', d['info'])
        report(f'{fmt} {prog}: info record counts the history',
               bool(m) and int(m.group(1)) == len(d['insns']),
               f'info record: {d["info"].strip()!r}, history {len(d["insns"])}')
        own = test_oracle.funcs_seen(run)
        want = own_calls([run.name(pc) for pc in run.addrs[:len(d['insns']) + 1]], own)
        got = own_calls([c[0] for c in d['calls']], own)
        report(f'{fmt} {prog}: function-call-history follows the oracle\'s calls', want == got,
               f'GDB {got[:12]}..., oracle {want[:12]}...')


def buffer_sizes(server_exe, programs, tmp):
    """A buffer of 1 byte asked for is one page, as GDB's own btrace and
    gdbserver make it (`info record`: 4kB): 170 BTS records of qsort, a
    part of strings' PT stream. GDB gets the newest part, `info record`
    counts it, and it ends where the oracle's history does."""
    sizes = [('qsort', 'bts', '1', 'unlimited'), ('strings', 'pt', 'unlimited', '1')]
    with ThreadPoolExecutor(PARALLEL) as pool:
        runs = list(pool.map(lambda a: check_history(server_exe, programs, tmp, a[0], *a[1:]),
                             sizes))
    for (prog, fmt, bts, pt), r in zip(sizes, runs):
        if not r:
            continue
        run, d = r
        why = compare_insns(run, d, full=False)
        if why is None and d['insns'][0] == run.addrs[0]:
            why = 'the whole history came back'
        m = re.search(r'Recorded (\d+) instructions', d['info'])
        if why is None and not (m and int(m.group(1)) == len(d['insns'])):
            why = f'info record: {d["info"].strip()!r}, history {len(d["insns"])}'
        if why is None and 'Buffer size: 4kB.' not in d['info']:
            why = f'info record: {d["info"].strip()!r}'
        report(f'{fmt} buffer-size {bts if fmt == "bts" else pt} ({prog}): a page, the '
               'newest part of the history only', why is None,
               f'{why}; {len(d["insns"])} instructions of {len(run.addrs)}')


THREADS_SCRIPT = r'''
import gdb, json
gdb.execute("break main")
gdb.execute("continue")
gdb.execute("set record instruction-history-size unlimited")
gdb.execute("set record function-call-history-size unlimited")
gdb.execute("set record btrace bts buffer-size unlimited")
gdb.execute("set record btrace pt buffer-size unlimited")
gdb.execute("record btrace " + FORMAT)
start = int(gdb.parse_and_eval("(long)&worker"))
dis = gdb.selected_inferior().architecture().disassemble(start, count=400)
ret = [x["addr"] for x in dis if x["asm"].startswith("ret")][0]
gdb.execute("break *%#x" % ret)
got = {}
for _ in range(12):
    gdb.execute("continue")
    if int(gdb.parse_and_eval("$pc")) != ret:
        break
    th = gdb.selected_thread()
    r = gdb.current_recording()
    h = [i.pc for i in r.instruction_history if hasattr(i, "pc")]
    calls = [s.symbol.name if s.symbol else None for s in r.function_call_history]
    info = gdb.execute("info record", to_string=True)
    got[str(th.ptid[1])] = {"insns": h + [ret], "calls": calls, "info": info,
                            "format": r.format}
    if len(got) == 4:
        break
json.dump({"worker": start, "threads": got}, open(OUT, "w"))
gdb.execute("kill")
'''


def threads_run(server_exe, programs, tmp, fmt):
    path = os.path.realpath(os.path.join(programs, 'threads4'))
    srv = Server(server_exe, ['--', path], tmp, f'threads4-{fmt}', programs)
    try:
        return gdb(path, srv.address, f'FORMAT = {fmt!r}\n' + THREADS_SCRIPT, tmp,
                   f'threads4-{fmt}')
    finally:
        srv.wait(10)
        srv.stop()


def threads_suite(server_exe, programs, tmp, fmts):
    runs = oracle_of('threads4', programs)
    with ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(lambda f: threads_run(server_exe, programs, tmp, f), fmts))
    for fmt, (out, d) in zip(fmts, results):
        name = f'{fmt} threads4'
        if not d:
            report(f'{name}: every worker thread stops at the worker\'s ret', False, out[-1500:])
            continue
        ths = d['threads'].values()
        report(f'{name}: GDB sees all 4 worker threads', len(d['threads']) == 4,
               f'{len(d["threads"])} seen')
        report(f'{name}: the recording is in the format asked for',
               all(t['format'] == fmt for t in ths), str([t['format'] for t in ths]))
        # The oracle's thread sequences run from worker's entry through its
        # ret to the return address; GDB's end at the ret.
        want = [r.addrs[:-1] for r in runs]
        matched, counted, called = 0, 0, 0
        for t in ths:
            h = t['insns']
            if d['worker'] in h and h[h.index(d['worker']):] in want:
                matched += 1
                r = runs[want.index(h[h.index(d['worker']):])]
                own = test_oracle.funcs_seen(r)
                k = r.addrs.index(d['worker'])
                wanted = own_calls([r.name(pc) for pc in r.addrs[k:-1]], own)
                got = own_calls(t['calls'], own)
                called += got[-len(wanted):] == wanted if wanted else 0
            m = re.search(r'Recorded (\d+) instructions', t['info'])
            counted += bool(m) and int(m.group(1)) == len(h) - 1
        report(f'{name}: each worker\'s instruction-history equals an oracle thread from '
               'worker', matched == 4, f'{matched} of {len(d["threads"])} match')
        report(f'{name}: each worker\'s function-call-history follows its oracle thread',
               called == 4, f'{called} of {len(d["threads"])} match')
        report(f'{name}: info record counts each worker\'s history', counted == 4,
               f'{counted} of {len(d["threads"])} match')


# QThreadEvents: GDB 13 asks for thread events only in non-stop mode, so
# the script asks with `maint packet`. With events on, GDB adds the first
# worker ("[New Thread ...]") when the server reports its creation and
# resumes, before the worker stops at `worker`; with them off, only at that
# stop. The remote log and GDB's messages go to one file, in order. GDB
# 13's all-stop mode cannot parse the `w` thread-exit reply, so the events
# are off again before the worker ends; all four creations and exits are
# tested below over RSP.
EVENTS_SCRIPT = r'''
import gdb, json
gdb.execute("set print thread-events on")
gdb.execute("break main")
gdb.execute("continue")
gdb.execute("maint packet QThreadEvents:" + EVENTS)
gdb.execute("break worker")
for c in ("file " + LOG, "overwrite on", "redirect on", "debugredirect on", "enabled on"):
    gdb.execute("set logging " + c)
gdb.execute("set debug remote 1")
gdb.execute("continue")
gdb.execute("set debug remote 0")
gdb.execute("set logging enabled off")
tid = gdb.selected_thread().ptid[1]
gdb.execute("maint packet QThreadEvents:0")
gdb.execute("delete")
gdb.execute("continue")
json.dump({"tid": tid}, open(OUT, "w"))
'''


def events_suite(server_exe, programs, tmp):
    path = os.path.realpath(os.path.join(programs, 'threads4'))
    for on in ('1', '0'):
        log = os.path.join(tmp, f'events{on}.log')
        srv = Server(server_exe, ['--', path], tmp, f'events{on}', programs)
        try:
            out, d = gdb(path, srv.address, f'EVENTS = {on!r}\nLOG = {log!r}\n' + EVENTS_SCRIPT,
                         tmp, f'events{on}', timeout=60)
        finally:
            srv.wait(10)
            srv.stop()
        text = open(log, errors='replace').read() if os.path.exists(log) else ''
        ok, why = False, out[-800:]
        if d:
            tid = d['tid']
            lines = text.splitlines()
            def first(pred, start=0):
                return next((i for i in range(start, len(lines)) if pred(lines[i])), None)
            # Thread ids are pPID.TID under the multiprocess extension,
            # and GDB names the thread PID.TID.
            new = first(lambda x: re.search(rf'\[New Thread (\d+\.)?{tid}\]', x))
            stop = first(lambda x: re.search(
                rf'Packet received: T05thread:(p[0-9a-f]+\.)?{tid:x};', x))
            created = first(lambda x: re.search(
                rf'Packet received: T05create:;thread:(p[0-9a-f]+\.)?{tid:x};', x))
            if on == '1':
                resumed = first(lambda x: 'Sending packet: $vCont' in x, (new or 0) + 1)
                ok = None not in (created, new, resumed, stop) and created < new < resumed < stop
            else:
                ok = created is None and None not in (new, stop) and stop < new
            why = f'tid {tid}: create at line {created}, [New Thread] at {new}, stop at {stop}'
        report(f'QThreadEvents:{on}: GDB adds the first worker '
               + ('at its creation, before it runs' if on == '1' else 'only when it stops'),
               ok, why)

    # Over RSP: with events on, 4 `create` stops and 4 `w` exits of the same
    # threads, then the process exit; with them off, only the exit.
    for on in ('1', '0'):
        srv = Server(server_exe, ['--', path], tmp, f'rsp-events{on}', programs)
        replies = []
        try:
            s = connect(srv.address)
            ask(s, 'qSupported:swbreak+')
            p, _ = ask(s, f'QThreadEvents:{on}')
            replies.append(p.decode())
            for _ in range(20):
                p, _ = ask(s, 'vCont;c')
                replies.append(p.decode())
                if p[:1] in (b'W', b'X', b'E'):
                    break
            ask(s, 'vKill;1')
            s.close()
        except (OSError, EOFError) as e:
            replies.append(f'{e}: {srv.log()}')
        finally:
            srv.wait(10)
            srv.stop()
        created = [m.group(1) for r in replies for m in [re.match(r'T05create:;thread:([0-9a-f]+);$', r)] if m]
        exited = [m.group(1) for r in replies for m in [re.match(r'w00;([0-9a-f]+)$', r)] if m]
        if on == '1':
            ok = (replies[0] == 'OK' and len(created) == 4 and sorted(created) == sorted(exited)
                  and replies[-1] == 'W00' and len(replies) == 10)
            report('QThreadEvents:1 over RSP: 4 create stops, 4 w exits of those threads, W00',
                   ok, str(replies))
        else:
            report('QThreadEvents:0 over RSP: only the process exit',
                   replies == ['OK', 'W00'], str(replies))


# Reverse commands, the (function, line) after each; the same list from
# hwt-server with record btrace and from GDB's native record full.
REVERSE_STEPS = r'''
import gdb, json
def where():
    f = gdb.selected_frame()
    return [f.name(), f.find_sal().line]
res = []
gdb.execute("break ackermann")
gdb.execute("continue")
res.append(where())
# Back into main, into fib's last return, up a line, out to the caller,
# then to fib's previous entries by breakpoint and to the beginning.
for cmd in ["reverse-step", "reverse-step", "reverse-next", "reverse-finish",
            "break fib", "reverse-continue", "reverse-continue", "reverse-next",
            "record goto begin"]:
    try:
        gdb.execute(cmd)
        res.append([cmd] + where())
    except gdb.error as e:
        res.append([cmd, str(e)])
json.dump(res, open(OUT, "w"))
gdb.execute("kill")
'''


def reverse_suite(server_exe, programs, tmp):
    path = os.path.realpath(os.path.join(programs, 'recursion'))
    native_script = ('import gdb\ngdb.execute("break main")\ngdb.execute("run")\n'
                     'gdb.execute("record full")\n' + REVERSE_STEPS)
    npath = os.path.join(tmp, 'native.py')
    nout = os.path.join(tmp, 'native.json')
    with open(npath, 'w') as f:
        f.write(f'OUT = {nout!r}\n' + native_script)
    p = subprocess.run(['env', '-i', 'PATH=/usr/bin:/bin', 'HOME=' + os.environ.get('HOME', '/root'),
                        'setarch', '-R', 'gdb', '-nx',
                        '-batch', '-x', npath, path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, errors='replace', timeout=240,
                       cwd=programs)
    native = json.load(open(nout)) if os.path.exists(nout) else None
    if not native:
        report('reverse: GDB record full reference', False, p.stdout[-1500:])
        return
    for fmt in ('bts', 'pt'):
        script = ('import gdb\ngdb.execute("break main")\ngdb.execute("continue")\n'
                  f'gdb.execute("record btrace {fmt}")\n' + REVERSE_STEPS)
        out, d = served_gdb(server_exe, ['--', path], path, script,
                            tmp, f'rev-{fmt}', programs)
        report(f'reverse ({fmt}): step/next/finish/continue and goto begin land where '
               'record full does', d == native, f'btrace {d}, record full {native}; '
               + ('' if d else out[-800:]))

    # Forward from the past stops at the end of the history, as GDB's
    # record targets do; only the next continue runs the program.
    script = ('import gdb, json\ngdb.execute("break ackermann")\ngdb.execute("continue")\n'
              'gdb.execute("delete")\na = int(gdb.parse_and_eval("$pc"))\n'
              'gdb.execute("reverse-stepi")\ngdb.execute("reverse-stepi")\n'
              'end = gdb.execute("continue", to_string=True)\n'
              'b = int(gdb.parse_and_eval("$pc"))\n'
              'live = gdb.execute("continue", to_string=True)\n'
              'gdb.execute("continue")\n'
              'json.dump([a, end, b, live], open(OUT, "w"))\n')
    out, d = served_gdb(server_exe, ['--record', '--', path], path, script,
                        tmp, 'replay-end', programs)
    # GDB prints stops itself, not into to_string: its output has them.
    tail = out.split('No more reverse-execution history', 1)
    report('replay: continue in the past stops at the end of the history, the next '
           'one runs the program', bool(d) and len(tail) == 2 and d[2] == d[0] and
           'exited normally' in tail[1], f'{d} {out[-600:]}')
    # --record: the program stops as it starts to exit (in _exit), its
    # whole history reachable; the continue after that lets it end.
    report('--record: the run stops as the program exits, before it is gone',
           len(tail) == 2 and 'Program stopped.' in tail[1] and '_exit' in tail[1] and
           tail[1].find('Program stopped.') < tail[1].find('exited normally'),
           tail[1][-600:] if len(tail) == 2 else out[-600:])

    script = ('import gdb, json\ngdb.execute("break ackermann")\n'
              'gdb.execute("continue")\ngdb.execute("delete")\n'
              'gdb.execute("continue")\nat_exit = gdb.selected_frame().name()\n'
              'gdb.execute("break ackermann")\ngdb.execute("reverse-continue")\n'
              'back = gdb.selected_frame().name()\n'
              'args = gdb.execute("info args", to_string=True)\n'
              'json.dump([at_exit, back, args], open(OUT, "w"))\n'
              'gdb.execute("kill")\n')
    out, d = served_gdb(server_exe, ['--record', '--', path], path, script,
                        tmp, 'exit-stop', programs)
    # ackermann's last call is A(0, 6), made at the end of the recursion.
    report('--record: from the exit stop, reverse-continue reaches the last call '
           'of ackermann', bool(d) and d[0] and '_exit' in d[0] and d[1] == 'ackermann',
           f'{d} {out[-600:] if not d else ""}')

    # bs without a record target: the server's replay cursor, with the
    # registers of the past (the stepper logs them at every instruction).
    run = oracle_of('recursion', programs)[0]
    script = ('import gdb, json\ngdb.execute("break ackermann")\ngdb.execute("continue")\n'
              'a = int(gdb.parse_and_eval("$pc"))\n'
              'sp0 = int(gdb.parse_and_eval("$sp"))\ngdb.execute("reverse-stepi")\n'
              'b = int(gdb.parse_and_eval("$pc"))\n'
              'sp = int(gdb.parse_and_eval("$sp"))\n'
              'gdb.execute("stepi")\nc = int(gdb.parse_and_eval("$pc"))\n'
              'gdb.execute("reverse-stepi")\n'
              'gdb.execute("reverse-next")\ngdb.execute("reverse-next")\n'
              'frame = gdb.execute("frame", to_string=True)\n'
              'gdb.execute("continue")\n'
              'json.dump([a, b, c, sp0, sp, frame], open(OUT, "w"))\n')
    out, d = served_gdb(server_exe, ['--record', '--', path], path, script,
                        tmp, 'bs', programs)
    ok = False
    if d:
        a, b, c, sp0, sp, frame = d
        i = run.addrs.index(a)
        ok = run.addrs[i - 1] == b and c == a
    report('bs: reverse-stepi without record goes to the previous oracle address, then '
           'forward again', ok, f'{d} {out[-600:] if not d else ""}')
    report('bs: the stack pointer of the past is the one before the call (entry + 8)',
           bool(d) and d[4] == d[3] + 8, f'{d}')
    # From the call of ackermann, reverse-next goes to the start of line 24,
    # then back over fib's call to line 23: GDB tells the frames apart by
    # the past registers.
    report('bs: reverse-next steps back over a call to the line before',
           bool(d) and 'recursion.c:23' in d[5] and 'main' in d[5],
           f'{d[5] if d else out[-600:]}')


SAVE_SCRIPT = r'''
import gdb, json
gdb.execute("source " + HWTRACE_PY)
gdb.execute("break ackermann")
gdb.execute("continue")
gdb.execute("hwt save " + DIR)
try:
    gdb.execute("hwt save " + DIR)
    again = "saved twice"
except gdb.error as e:
    again = str(e)
json.dump({"pc": int(gdb.parse_and_eval("$pc")), "again": again}, open(OUT, "w"))
gdb.execute("kill")
'''


def save_suite(server_exe, programs, tmp, build):
    """hwt save: the bundle ends at the stop and holds what the oracle ran."""
    path = os.path.realpath(os.path.join(programs, 'recursion'))
    run = oracle_of('recursion', programs)[0]
    bundle = os.path.join(tmp, 'saved')
    script = (f'HWTRACE_PY = {os.path.join(HERE, "..", "..", "plugin", "gdb", "hwtrace.py")!r}\n'
              f'DIR = {bundle!r}\n' + SAVE_SCRIPT)
    out, d = served_gdb(server_exe, ['--record', '--', path], path, script,
                        tmp, 'save', programs)
    if not d:
        report('hwt save: a bundle of the live trace', False, out[-1000:])
        return
    p = subprocess.run([os.path.join(build, 'hwtrace'), 'dump', '--insn', '--tsv', bundle],
                       capture_output=True, text=True, timeout=120)
    addrs = [int(l.split('\t')[2], 16) for l in p.stdout.splitlines() if l.count('\t') >= 2]
    ok = bool(addrs) and addrs[-1] == d['pc'] and run.addrs[0] in addrs
    if ok:
        k = addrs.index(run.addrs[0])
        ok = addrs[k:] == run.addrs[:len(addrs) - k]
    report('hwt save: the bundle holds the history up to the stop', ok,
           f'{len(addrs)} items, last {addrs[-1] if addrs else None}, stop {d["pc"]:#x}; '
           f'{p.stderr[-300:]}')
    report('hwt save: an existing directory is refused', 'already exists' in d['again'],
           d['again'])
    deferred_save(server_exe, programs, tmp, build, path, run)


DEFERRED_SCRIPT = r'''
import gdb, json
gdb.execute("source " + HWTRACE_PY)
gdb.execute("break main")
gdb.execute("continue")
try:
    gdb.execute("hwt save " + DIR)
    early = "saved"
except gdb.error as e:
    early = str(e)
main = int(gdb.parse_and_eval("$pc"))
gdb.execute("record btrace")
gdb.execute("break ackermann")
gdb.execute("continue")
gdb.execute("hwt save " + DIR)
json.dump({"pc": int(gdb.parse_and_eval("$pc")), "main": main, "early": early},
          open(OUT, "w"))
gdb.execute("kill")
'''


def deferred_save(server_exe, programs, tmp, build, path, run):
    """Without --record the program runs untraced to main: nothing to save
    there, and what record btrace starts is the history from main on."""
    bundle = os.path.join(tmp, 'saved-deferred')
    script = (f'HWTRACE_PY = {os.path.join(HERE, "..", "..", "plugin", "gdb", "hwtrace.py")!r}\n'
              f'DIR = {bundle!r}\n' + DEFERRED_SCRIPT)
    out, d = served_gdb(server_exe, ['--', path], path, script,
                        tmp, 'save-deferred', programs)
    if not d:
        report('deferred recording: the history starts at record btrace', False,
               out[-1000:])
        return
    report('deferred recording: nothing to save before record btrace',
           'nothing is recorded yet' in d['early'], d['early'])
    p = subprocess.run([os.path.join(build, 'hwtrace'), 'dump', '--insn', '--tsv', bundle],
                       capture_output=True, text=True, timeout=120)
    addrs = [int(l.split('\t')[2], 16) for l in p.stdout.splitlines() if l.count('\t') >= 2]
    # The oracle ran the same code from the loader's entry: from main on,
    # the saved history is that run's instructions, and nothing before.
    k = run.addrs.index(d['main']) if d['main'] in run.addrs else -1
    ok = bool(addrs) and k >= 0 and addrs[0] == d['main'] and addrs[-1] == d['pc'] \
        and addrs == run.addrs[k:k + len(addrs)]
    report('deferred recording: the history starts at record btrace (main), not at '
           'launch, and is the oracle\'s from there', ok,
           f'{len(addrs)} items, first {addrs[0] if addrs else None:#x} main '
           f'{d["main"]:#x}, last {addrs[-1] if addrs else 0:#x} stop {d["pc"]:#x}; '
           f'{p.stderr[-300:]}' if addrs else p.stderr[-300:])


def watch_suite(server_exe, programs, tmp):
    """Z2/Z3 through the collector: loops writes grid[1][1] = 2 in its first
    loop nest and reads it in the second."""
    path = os.path.realpath(os.path.join(programs, 'loops_O0'))
    srv = Server(server_exe, ['--', path], tmp, 'watch', programs)
    script = ('import gdb, json\ngdb.execute("break main")\ngdb.execute("continue")\n'
              'gdb.execute("watch grid[1][1]")\ngdb.execute("continue")\n'
              'gdb.execute("echo <<read>>\\\\n")\n'
              'gdb.execute("delete")\ngdb.execute("rwatch grid[1][1]")\n'
              'gdb.execute("continue")\n'
              'json.dump(gdb.selected_frame().find_sal().line, open(OUT, "w"))\n'
              'gdb.execute("kill")\n')
    try:
        out, line = gdb(path, srv.address, script, tmp, 'watch')
    finally:
        srv.wait(10)
        srv.stop()
    # The stop printing goes to GDB's output, not to gdb.execute's string.
    w, _, r = out.partition('<<read>>')
    report('watch: a write watchpoint stops at the write with the new value',
           'Hardware watchpoint' in w and 'New value = 2' in w, out[-600:])
    report('watch: a read watchpoint stops in the reading loop',
           'read watchpoint' in r and 'Value = 2' in r and line in (20, 21, 22),
           f'line {line}: {r[-400:]}')


AVX_SCRIPT = r'''
import gdb, json
gdb.execute("break main")
gdb.execute("continue")
before = str(gdb.parse_and_eval("$ymm0.v8_int32"))
gdb.execute("set $ymm0.v8_int32 = {1, 2, 3, 4, 5, 6, 7, 8}")
gdb.execute("set $ymm15.v8_int32 = {-1, -2, -3, -4, -5, -6, -7, -8}")
gdb.execute("stepi")
gdb.execute("maint flush register-cache")
info = gdb.execute("info registers ymm0", to_string=True)
json.dump({"before": before, "info": info,
           "ymm0": [int(x) for x in gdb.parse_and_eval("$ymm0.v8_int32").format_string(
               repeat_threshold=0)[1:-1].split(",")],
           "ymm15": [int(x) for x in gdb.parse_and_eval("$ymm15.v8_int32").format_string(
               repeat_threshold=0)[1:-1].split(",")]}, open(OUT, "w"))
gdb.execute("kill")
'''


def avx_suite(server_exe, programs, tmp):
    name = 'avx: ymm0/ymm15 written by GDB read back live after a stepi'
    with open('/proc/cpuinfo') as f:
        if ' avx' not in f.read():
            print(f'SKIP {name}: the cpu has no AVX')
            return
    path = os.path.realpath(os.path.join(programs, 'loops'))
    out, d = served_gdb(server_exe, ['--', path], path, AVX_SCRIPT,
                        tmp, 'avx', programs, timeout=60)
    report(name, bool(d) and d['ymm0'] == [1, 2, 3, 4, 5, 6, 7, 8] and
           d['ymm15'] == [-1, -2, -3, -4, -5, -6, -7, -8] and 'v8_int32' in d['info'] and
           'v8_int32 = {0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8}' in d['info'],
           f'{d}; {out[-800:]}')


# ---- robustness -----------------------------------------------------------

def frame(payload):
    payload = payload.encode() if isinstance(payload, str) else payload
    return b'$' + payload + b'#%02x' % (sum(payload) & 0xff)


def connect(address):
    host, port = address.rsplit(':', 1)
    return socket.create_connection((host, int(port)), timeout=20)


def read_packet(s, buf=b''):
    """The next packet's payload (acks skipped); returns (payload, rest)."""
    while True:
        buf = buf.lstrip(b'+')
        h = buf.find(b'#')
        if buf.startswith(b'$') and h >= 0 and len(buf) >= h + 3:
            return buf[1:h], buf[h + 3:]
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError('server closed the connection')
        buf += chunk


def ask(s, pkt, buf=b''):
    s.sendall(frame(pkt))
    p, buf = read_packet(s, buf)
    s.sendall(b'+')
    return p, buf


def read_any(s, buf=b''):
    """The next packet or notification: (b'$' or b'%', payload, rest)."""
    while True:
        buf = buf.lstrip(b'+')
        h = buf.find(b'#')
        if buf[:1] in (b'$', b'%') and h >= 0 and len(buf) >= h + 3:
            return buf[:1], buf[1:h], buf[h + 3:]
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError('server closed the connection')
        buf += chunk


class NonStopLink:
    """A bare non-stop client: replies, and the stops the server reports
    (notifications and the vStopped replies that drain them)."""

    def __init__(self, address):
        self.s = connect(address)
        self.buf = b''
        self.stops = []

    def _next(self):
        kind, p, self.buf = read_any(self.s, self.buf)
        return kind, p

    def _drain(self, note):
        """A notification came: take it and everything queued behind it."""
        self.stops.append(note[len(b'Stop:'):])
        while True:
            self.s.sendall(frame('vStopped'))
            kind, p = self._next()
            while kind == b'%':    # cannot come before OK; kept if it does
                self.stops.append(p[len(b'Stop:'):])
                kind, p = self._next()
            if p == b'OK':
                return
            self.stops.append(p)

    def ask(self, pkt):
        """The reply to pkt; a notification arriving first is drained
        after it, as GDB does (vStopped is not sent mid-request)."""
        self.s.sendall(frame(pkt))
        notes = []
        while True:
            kind, p = self._next()
            if kind == b'$':
                break
            notes.append(p)
        for note in notes:
            self._drain(note)
        return p

    def wait_stop(self, timeout):
        """Wait for the next notification; False after timeout seconds."""
        self.s.settimeout(timeout)
        try:
            kind, p = self._next()
        except socket.timeout:
            return False
        finally:
            self.s.settimeout(20)
        if kind == b'%':
            self._drain(p)
        return True


def stop_tid(stop):
    m = re.search(rb'thread:(?:p[0-9a-f]+\.)?([0-9a-f]+);', stop)
    return int(m.group(1), 16) if m else None


def nonstop_suite(server_exe, programs, tmp):
    """GDB's non-stop mode over the wire: a resume is answered OK, each
    stop comes as a %Stop notification drained with vStopped, the other
    threads run on; vCont;t stops the running ones with T00 stops."""
    path = os.path.realpath(os.path.join(programs, 'threads4'))
    syms = subprocess.run(['nm', path], capture_output=True, text=True).stdout
    offset = int(re.search(r'^([0-9a-f]+) T collatz_steps$', syms, re.M).group(1), 16)
    bp = 0x555555554000 + offset   # a PIE, address randomisation off
    srv = Server(server_exe, ['--', path], tmp, 'nonstop', programs)
    try:
        c = NonStopLink(srv.address)
        c.ask('QStartNoAckMode')
        ok = c.ask('QNonStop:1')
        first = c.ask('?')
        drained = c.ask('vStopped')
        report('non-stop: QNonStop:1, and ? reports the stopped thread then OK',
               ok == b'OK' and first.startswith(b'T05thread:') and drained == b'OK',
               f'{ok!r} {first!r} {drained!r}')
        c.ask(f'Z0,{bp:x},1')
        ok = c.ask('vCont;c')
        got = c.wait_stop(30)
        report('non-stop: vCont;c is answered OK, the breakpoint stop comes as '
               'a %Stop notification', ok == b'OK' and got and
               c.stops[0].startswith(b'T05') and b'swbreak' in c.stops[0],
               f'{ok!r} {c.stops[:1]!r}')
        ok = c.ask('vCont;t')
        while c.wait_stop(1):
            pass
        threads = c.ask('qfThreadInfo')
        tids = [int(t.split(b'.')[-1], 16) for t in threads[1:].split(b',')]
        stopped = [stop_tid(x) for x in c.stops]
        report('non-stop: vCont;t stops every running thread: each thread '
               'reported stopped once', ok == b'OK' and len(tids) > 1 and
               sorted(set(stopped) & set(tids)) == sorted(tids) and
               len(stopped) == len(set(stopped)),
               f'{ok!r}: threads {tids}, stops {c.stops}')
        c.ask(f'z0,{bp:x},1')
        # A worker resumed alone runs to its exit while the others stay
        # stopped: it leaves the thread list, no stop is reported for it,
        # and nothing else moves (the resume must not fail).
        worker = max(tids)
        c.stops = []
        ok = c.ask(f'vCont;c:{worker:x}')
        quiet = not c.wait_stop(3)
        threads = c.ask('qfThreadInfo')
        left = [int(t.split(b'.')[-1], 16) for t in threads[1:].split(b',')]
        report('non-stop: a thread resumed alone exits quietly, the others stay',
               ok == b'OK' and quiet and worker not in left and
               set(left) <= set(tids) and len(left) == len(tids) - 1,
               f'{ok!r} stops {c.stops}, threads {tids} then {left}')
        c.stops = []
        ok = c.ask('vCont;c')
        got = c.wait_stop(30)
        report('non-stop: continuing every thread runs the program to its exit',
               ok == b'OK' and got and c.stops and c.stops[-1].startswith(b'W00'),
               f'{ok!r} {c.stops}')
        c.s.close()
    except (OSError, EOFError, AttributeError) as e:
        report('non-stop: the exchange', False, f'{e}: {srv.log()}')
    finally:
        srv.wait(10)
        srv.stop()


RECONNECT_FIRST = r'''
import gdb, json
gdb.execute("break main")
gdb.execute("continue")
gdb.execute("record btrace")
for _ in range(5):
    gdb.execute("stepi")
r = gdb.current_recording()
json.dump({"pc": int(gdb.parse_and_eval("$pc")),
           "insns": [i.pc for i in r.instruction_history]}, open(OUT, "w"))
gdb.execute("disconnect")
'''

RECONNECT_SECOND = r'''
import gdb, json
res = {"pc": int(gdb.parse_and_eval("$pc")),
       "info": gdb.execute("info record", to_string=True)}
r = gdb.current_recording()
res["insns"] = [i.pc for i in r.instruction_history] if r else []
gdb.execute("stepi")
res["after"] = int(gdb.parse_and_eval("$pc"))
gdb.execute("kill")
json.dump(res, open(OUT, "w"))
'''


def reconnect_suite(server_exe, programs, tmp):
    """GDB disconnects and a second GDB connects (GDB's btrace
    reconnect.exp): the program is where the first left it, recording
    still on with the same history, and it goes on; then the kill ends
    the server."""
    path = os.path.realpath(os.path.join(programs, 'loops'))
    srv = Server(server_exe, ['--', path], tmp, 'reconnect', programs)
    try:
        out1, first = gdb(path, srv.address, RECONNECT_FIRST, tmp, 'reconnect1',
                          timeout=60)
        alive = srv.proc.poll() is None
        out2, second = gdb(path, srv.address, RECONNECT_SECOND, tmp, 'reconnect2',
                           timeout=60)
        status = srv.wait(10)
    finally:
        srv.stop()
    ok = bool(first and second) and alive and second['pc'] == first['pc'] and \
        'Active record target: record-btrace' in second['info'] and \
        second['insns'] == first['insns'] and second['after'] != second['pc'] and \
        status == 0 and 'waiting for the next' in srv.log()
    report('reconnect: a second GDB finds the program stopped where the first '
           'left it, btrace on with the same history', ok,
           f'first {first}, second {second}, alive {alive}, status {status}; '
           f'{srv.log()[-300:]} {out1[-300:] if not first else ""}'
           f'{out2[-300:] if not second else ""}')


MONITOR_SCRIPT = r'''
import gdb, json
res = {"help": gdb.execute("monitor help", to_string=True),
       "debug": gdb.execute("monitor set debug 1", to_string=True)}
gdb.execute("x/2x $sp", to_string=True)
res["quiet"] = gdb.execute("monitor set debug 0", to_string=True)
res["unknown"] = gdb.execute("monitor frobnicate", to_string=True)
gdb.execute("monitor exit")
try:
    gdb.execute("maintenance flush register-cache")
    res["after"] = gdb.execute("x/x $pc", to_string=True)
except gdb.error as e:
    res["after"] = "error: " + str(e)
json.dump(res, open(OUT, "w"))
'''


GCORE_SCRIPT = r'''
import gdb, json
gdb.execute("break main")
gdb.execute("continue")
gdb.execute("record btrace")
gdb.execute("next")
gdb.execute("record goto begin")
saved = gdb.execute("generate-core-file " + CORE, to_string=True)
maps = gdb.execute("info proc mappings", to_string=True)
json.dump({"saved": saved, "maps": maps}, open(OUT, "w"))
gdb.execute("kill")
'''


def gcore_suite(server_exe, programs, tmp):
    """generate-core-file while GDB replays its btrace: the memory map
    comes from /proc/PID/smaps over vFile, as over gdbserver (without it
    GDB calls sbrk in the program, which a replay cannot run)."""
    path = os.path.realpath(os.path.join(programs, 'recursion'))
    core = os.path.join(tmp, 'replay.core')
    srv = Server(server_exe, ['--', path], tmp, 'gcore', programs)
    try:
        out, d = gdb(path, srv.address, f'CORE = {core!r}\n' + GCORE_SCRIPT, tmp,
                     'gcore', timeout=60)
    except subprocess.TimeoutExpired:
        out, d = 'timed out after 60 s', None
    finally:
        srv.wait(10)
        srv.stop()
    report("gcore in replay: the core is saved from the process's memory map",
           bool(d) and 'Saved corefile' in d['saved'] and os.path.getsize(core) > 0,
           (d['saved'] if d else out[-800:]))
    report('info proc mappings reads /proc/PID/maps through vFile',
           bool(d) and '[stack]' in d['maps'] and path in d['maps'],
           (d['maps'][-400:] if d else ''))
    if not d:
        return
    p = subprocess.run(['gdb', '-nx', '-batch', '-ex', 'info registers rip', path, core],
                       capture_output=True, text=True, timeout=60)
    report('the core loads in GDB', p.returncode == 0 and 'rip' in p.stdout,
           p.stdout[-300:] + p.stderr[-300:])


def monitor_suite(server_exe, programs, tmp):
    """gdbserver's monitor commands: help lists them, set debug logs the
    packets received on the server's stderr while on, an unknown one is
    named, and exit ends the server and the program it started (GDB's
    testsuite ends every test with `monitor exit`)."""
    path = os.path.realpath(os.path.join(programs, 'loops'))
    srv = Server(server_exe, ['--', path], tmp, 'monitor', programs)
    try:
        out, d = gdb(path, srv.address, MONITOR_SCRIPT, tmp, 'monitor',
                     timeout=60)
        status = srv.wait(10)
        log = srv.log()
    finally:
        srv.stop()
    kids = [c for c in children(srv.proc.pid)]
    report('monitor help, set debug 0|1, an unknown command',
           bool(d) and 'set debug <0|1>' in d['help'] and
           'exit' in d['help'] and 'enabled' in d['debug'] and
           'disabled' in d['quiet'] and
           'Unknown monitor command: frobnicate' in d['unknown'] and
           re.search(r"received packet m[0-9a-f]+,", log) and
           log.count('received packet') < 40,
           f'{d}; server log {log[-600:]}; {out[-400:] if not d else ""}')
    report('monitor exit ends the server and its program while GDB is '
           'still connected', status == 0 and not kids and bool(d) and
           d['after'].startswith('error:'), f'server status {status}, '
           f'children {kids}, after: {d and d["after"]}; {log[-300:]}')


def robustness(server_exe, programs, tmp):
    sleeper = '/bin/sleep'
    # ^C: the program sleeps, the interrupt stops it with SIGINT.
    srv = Server(server_exe, ['--', sleeper, '30'], tmp, 'ctrlc', programs)
    try:
        s = connect(srv.address)
        ask(s, 'qSupported:swbreak+')
        s.sendall(frame('vCont;c'))
        time.sleep(1.0)
        t0 = time.monotonic()
        s.sendall(b'\x03')
        p, _ = read_packet(s)
        s.sendall(b'+')
        report('^C stops a sleeping program with SIGINT', p.startswith(b'T02thread:'),
               f'reply {p[:60]!r} after {time.monotonic() - t0:.1f} s')
        # While one client is served, a second one is refused.
        s2 = connect(srv.address)
        p2, _ = read_packet(s2)
        report('second client is refused', p2.startswith(b'E'), repr(p2[:80]))
        s2.close()
        ask(s, 'vKill;1')
        s.close()
        report('server exits after vKill', srv.wait(10) is not None, srv.log())
    except (OSError, EOFError) as e:
        report('^C stops a sleeping program with SIGINT', False, f'{e}: {srv.log()}')
    finally:
        srv.stop()

    # GDB killed mid-session with --once: the launched program must not
    # stay stopped.
    path = os.path.realpath(os.path.join(programs, 'loops'))
    srv = Server(server_exe, ['--once', '--', sleeper, '30'], tmp, 'gdbkill', programs)
    try:
        g = subprocess.Popen(['gdb', '-nx', '-batch', '-ex', f'target remote {srv.address}',
                              '-ex', 'break nanosleep', '-ex', 'continue', '-ex', 'shell sleep 60',
                              sleeper], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        inferior = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and inferior is None:
            kids = [k for k in children(srv.proc.pid)]
            # The server runs under env/setarch: its own pid is the exec'd one.
            inferior = kids[0] if kids else None
            time.sleep(0.1)
        time.sleep(2.0)   # GDB is connected and waiting in its shell command
        state_before = proc_state(inferior) if inferior else None
        g.send_signal(signal.SIGKILL)
        g.wait()
        code = srv.wait(15)
        time.sleep(0.5)
        state = proc_state(inferior) if inferior else None
        report('--once, GDB killed mid-session: server exits, no stopped orphan',
               inferior is not None and code is not None and state in (None, 'R', 'S', 'D'),
               f'inferior {inferior} was {state_before}, now {state}; server {code}; {srv.log()}')
    finally:
        srv.stop()
        del path

    # --attach, then detach: the process runs on.
    victim = subprocess.Popen(['setarch', '-R', sleeper, '30'])
    try:
        srv = Server(server_exe, ['--attach', str(victim.pid)], tmp, 'attach', programs)
        try:
            out, _ = gdb(sleeper, srv.address, 'import gdb\ngdb.execute("info threads")\n'
                         'gdb.execute("detach")\n', tmp, 'attach')
            code = srv.wait(10)
        finally:
            srv.stop()
        state = proc_state(victim.pid)
        report('attach and detach: the process runs on', code == 0 and state in ('S', 'R'),
               f'state {state}, server {code}: {out[-600:]}')
    finally:
        victim.kill()
        victim.wait()


def main():
    args = parse_args(('--only', 'comma-separated parts: bts,pt,threads,'
                                 'events,reverse,avx,watch,save,robust,'
                                 'monitor,reconnect,gcore,nonstop'))
    build = args.build
    server_exe = os.path.join(build, 'hwt-server')
    programs = os.path.join(build, 'programs')
    only = set(args.only.split(',')) if args.only else None

    def part(name, *also):
        """NAME runs when --only and HWT_TEST both allow it."""
        return (not only or name in only or any(a in only for a in also)) \
            and selected(name)
    for tool in ('gdb', 'setarch'):
        if subprocess.run(['which', tool], capture_output=True).returncode:
            print(f'SKIP gdb live: {tool} is not installed')
            print('0 passed, 0 failed, 1 skipped')
            return 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix='hwt-live-') as tmp:
        if part('bts'):
            history_suite(server_exe, programs, tmp, PROGS, 'bts')
        if part('pt'):
            history_suite(server_exe, programs, tmp, PROGS, 'pt')
        if part('buffer-size', 'bts', 'pt'):
            buffer_sizes(server_exe, programs, tmp)
        if part('threads'):
            threads_suite(server_exe, programs, tmp, ['bts', 'pt'])
        if part('events'):
            events_suite(server_exe, programs, tmp)
        if part('reverse'):
            reverse_suite(server_exe, programs, tmp)
        if part('avx'):
            avx_suite(server_exe, programs, tmp)
        if part('watch'):
            watch_suite(server_exe, programs, tmp)
        if part('save'):
            save_suite(server_exe, programs, tmp, build)
        if part('robust'):
            robustness(server_exe, programs, tmp)
        if part('monitor'):
            monitor_suite(server_exe, programs, tmp)
        if part('gcore'):
            gcore_suite(server_exe, programs, tmp)
        if part('nonstop'):
            nonstop_suite(server_exe, programs, tmp)
        if part('reconnect'):
            reconnect_suite(server_exe, programs, tmp)
    from hwt_testlib import RESULTS
    passed = sum(RESULTS)
    print(f'# {time.monotonic() - t0:.0f} s')
    print(f'{passed} passed, {len(RESULTS) - passed} failed')
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
