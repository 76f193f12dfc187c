#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""hwtrace record's contract: exit status, core files GDB can open, ring
wrap accounting, atomic bundles, threads and modules, cpu pinning."""
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from hwt_testlib import RESULTS, exit_status, parse_args, report



def run(cmd, timeout=300, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, errors='replace',
                          timeout=timeout, **kw)


def tsv_items(hwtrace, bundle, tid=None):
    args = [hwtrace, 'dump', '--insn', '--tsv', bundle]
    if tid:
        args[3:3] = ['--thread', str(tid)]
    p = run(args)
    if p.returncode:
        raise RuntimeError(p.stderr)
    return [line.split('\t') for line in p.stdout.splitlines()]


def bundle_json(bundle):
    with open(os.path.join(bundle, 'trace.json')) as f:
        return json.load(f)


LOOP_SRC = r'''
static volatile unsigned long acc;
__attribute__((noinline)) static void f(int i) { acc += (unsigned long)i; }
int main(void)
{
    for (int i = 0; i < 200; i++)
        f(i);
    for (unsigned long i = 0; i < 400000; i++)   /* no call */
        acc ^= i + (acc >> 3);
    return (int)(acc & 1) * 0;
}
'''


def check_calls_stop(hwtrace, tmp):
    """dump --calls --last N where the newest N calls lie behind a long
    loop without calls: the search stops (it would decode the whole
    history) and says where, and the calls it shows are the newest of
    the whole list, the oldest of them cut short."""
    avail = run([hwtrace, 'backends']).stdout
    if not re.search(r'^valgrind\s+available', avail, re.M):
        print('SKIP dump --calls --last N past a loop without calls: the '
              'valgrind backend is not available here', flush=True)
        return
    src, prog = os.path.join(tmp, 'loop.c'), os.path.join(tmp, 'loop')
    with open(src, 'w') as f:
        f.write(LOOP_SRC)
    subprocess.run(['cc', '-O1', '-o', prog, src], check=True)
    b = os.path.join(tmp, 'loop.bundle')
    p = run([hwtrace, 'record', '-q', '--backend', 'valgrind', '-o', b, '--',
             prog])
    whole = run([hwtrace, 'dump', '--calls', '--tsv', b]).stdout
    q = run([hwtrace, 'dump', '--calls', '--tsv', '--last', '150', b])
    names = [tuple(l.split('\t')[2:3]) for l in whole.splitlines()]
    shown = [tuple(l.split('\t')[2:3]) for l in q.stdout.splitlines()]
    m = re.search(r'of the newest 150 calls: the search stopped at item '
                  r'(\d+)', q.stderr)
    report('dump --calls --last N past a loop without calls: the search '
           'stops, says where, and shows the newest calls',
           p.returncode == 0 and q.returncode == 0 and m and
           1 < len(shown) < 150 and len(names) > 200 and
           shown[1:] == names[len(names) - len(shown) + 1:] and
           shown[0] == ('main',),
           f'record {p.returncode}, dump {q.returncode}: {len(shown)} shown '
           f'of {len(names)}, first {shown[:2]}; {q.stderr.strip()[-300:]}')


def main():
    args = parse_args()
    build = args.build
    hwtrace = os.path.join(build, 'hwtrace')
    progs = os.path.join(build, 'programs')
    tmp = tempfile.mkdtemp(prefix='hwt-record-')
    # The ptrace recorder's behaviours; test_valgrind.py has valgrind's.
    rec = [hwtrace, 'record', '-q', '--backend', 'ptrace']
    try:
        # --- exit status mirrors the program ---------------------------------
        b = os.path.join(tmp, 'exit3')
        p = run(rec + ['-o', b, '--', '/bin/sh', '-c', 'exit 3'])
        doc = bundle_json(b) if os.path.isdir(b) else {}
        report('exit status mirrored', p.returncode == 3 and
               doc.get('stop') == {'reason': 'exited', 'status': 3},
               f'rc {p.returncode}, stop {doc.get("stop")}, {p.stderr}')
        b = os.path.join(tmp, 'term')
        p = run(rec + ['-o', b, '--', '/bin/sh', '-c', 'kill -TERM $$'])
        doc = bundle_json(b) if os.path.isdir(b) else {}
        report('killed by signal -> 128+N', p.returncode == 128 + signal.SIGTERM and
               doc.get('stop', {}).get('signal') == signal.SIGTERM,
               f'rc {p.returncode}, stop {doc.get("stop")}')
        b = os.path.join(tmp, 'abrt')
        p = run(rec + ['-o', b, '--', '/bin/sh', '-c', 'kill -ABRT $$'])
        doc = bundle_json(b) if os.path.isdir(b) else {}
        report('SIGABRT gives a core', p.returncode == 128 + signal.SIGABRT and
               doc.get('core') == 'core' and os.path.getsize(os.path.join(b, 'core')) > 0,
               f'rc {p.returncode}, trace.json {doc.get("stop")} core {doc.get("core")}')

        # --- a fault: core at the faulting instruction, GDB opens it ----------
        prog = os.path.join(progs, 'demo_crash')
        b = os.path.join(tmp, 'crash')
        p = run(rec + ['-o', b, '--', prog])
        doc = bundle_json(b) if os.path.isdir(b) else {}
        stop = doc.get('stop', {})
        report('fault: exit 139 and stop record', p.returncode == 139 and
               stop.get('reason') == 'fault' and stop.get('signal') == 11 and
               doc.get('core') == 'core', f'rc {p.returncode}, {doc.get("stop")}, {p.stderr}')
        items = tsv_items(hwtrace, b)
        report('fault: last history item is the faulting pc',
               items and int(items[-1][2], 16) == stop.get('pc'),
               f'last {items[-1][:3] if items else None}, stop pc {stop.get("pc")}')
        g = run(['gdb', '-nx', '-batch', '-ex', 'bt', '-ex', 'info registers rip',
                 prog, os.path.join(b, 'core')])
        # GDB prints frame #0 once when it loads the core and again in bt.
        frames = list(dict.fromkeys(line for line in g.stdout.splitlines() if line.startswith('#')))
        names = [f.split(' in ')[1].split(' ')[0] if ' in ' in f else f.split()[1] for f in frames]
        rip = [line for line in g.stdout.splitlines() if line.startswith('rip')]
        report('core: gdb bt shows lookup <- parse_config <- main',
               names[:3] == ['lookup', 'parse_config', 'main'] and 'SIGSEGV' in g.stdout,
               f'frames {frames}\n{g.stdout[-800:]}{g.stderr[-800:]}')
        report('core: gdb rip is the faulting pc',
               rip and int(rip[0].split()[1], 16) == stop.get('pc'), f'{rip} vs {stop.get("pc")}')

        # --- the newest N calls, as GDB's function-call history counts -----
        def calls(*extra):
            out = run([hwtrace, 'dump', '--calls', '--tsv', *extra, b]).stdout
            # LEVEL is relative to the part shown: function and range.
            return [tuple(l.split('\t')[2:5]) for l in out.splitlines()]
        whole = calls()
        last5, most = calls('--last', '5'), calls('--last', str(len(whole) - 1))
        report('dump --calls --last N: the newest N calls of the history',
               len(whole) > 100 and last5 == whole[-5:] and
               most == whole[1:] and calls('--last', '100000') == whole,
               f'{len(whole)} calls; last 5 {last5} vs {whole[-5:]}; '
               f'{len(most)} of {len(whole) - 1}')

        # --- a long loop without calls: the search for them stops, says so -
        check_calls_stop(hwtrace, tmp)

        # --- ring wrap: oldest chunks dropped and accounted -------------------
        prog = os.path.join(progs, 'dlopen')
        full, small = os.path.join(tmp, 'full'), os.path.join(tmp, 'small')
        base = ['env', '-i', 'setarch', '-R']
        p1 = run(base + rec + ['-o', full, '--', prog], cwd=progs)
        p2 = run(base + rec + ['-o', small, '--size', '64K', '--', prog], cwd=progs)
        th_full = bundle_json(full)['processes'][0]['threads'][0]
        th_small = bundle_json(small)['processes'][0]['threads'][0]
        report('wrap: lost instructions accounted',
               p1.returncode == 0 and p2.returncode == 0 and th_full['lostInstructions'] == 0 and
               th_small['lostInstructions'] > 0 and th_small['lostBytes'] > 0 and
               th_small['traceSize'] <= 64 * 1024 and
               th_small['instructions'] == th_full['instructions'],
               f'full {th_full}, small {th_small}')
        it_full, it_small = tsv_items(hwtrace, full), tsv_items(hwtrace, small)
        kept = th_small['instructions'] - th_small['lostInstructions']
        report('wrap: history starts with a gap saying what was lost',
               it_small and it_small[0][2] == 'gap' and 'lost' in it_small[0][3] and
               str(th_small['lostInstructions']) in it_small[0][3],
               f'first item {it_small[:1]}')
        report('wrap: retained history equals the newest part of a full recording',
               [i[2] for i in it_small[1:]] == [i[2] for i in it_full[-kept:]] and kept > 1000,
               f'kept {kept}, small has {len(it_small) - 1} instructions')

        # --- atomic bundle: killing the recorder leaves no bundle -------------
        b = os.path.join(tmp, 'killed')
        proc = subprocess.Popen(rec + ['-o', b, '--', os.path.join(progs, 'loops')],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        children = run(['pgrep', '-P', str(proc.pid)]).stdout.split()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(0.3)
        alive = [c for c in children if os.path.exists(f'/proc/{c}') and
                 open(f'/proc/{c}/stat').read().split()[2] != 'Z']
        report('killed recorder leaves no bundle under the final name',
               not os.path.exists(b), f'{b} exists')
        report('killed recorder leaves no traced orphan', not alive and children,
               f'children {children}, alive {alive}')

        # --- threads and modules ----------------------------------------------
        b = os.path.join(tmp, 'threads')
        p = run(rec + ['-o', b, '--', os.path.join(progs, 'threads4')])
        doc = bundle_json(b)
        threads = doc['processes'][0]['threads']
        counts = [t['instructions'] for t in threads]
        report('threads created later are traced', p.returncode == 0 and len(threads) == 5 and
               all(c > 100 for c in counts), f'rc {p.returncode}, counts {counts}')
        b = os.path.join(tmp, 'dl')
        p = run(rec + ['-o', b, '--', os.path.join(progs, 'dlopen')], cwd=progs)
        mods = bundle_json(b)['processes'][0]['modules']
        lib = [m for m in mods if m['systemPath'].endswith('/libhwtdemo.so')]
        ids = run(['readelf', '-n', os.path.join(progs, 'libhwtdemo.so')]).stdout
        report('dlopen: library in the sideband with its build-id',
               lib and lib[0].get('uuid') and lib[0]['uuid'] in ids and 'file' in lib[0] and
               os.path.isfile(os.path.join(b, lib[0]['file'])),
               f'modules {[m["systemPath"] for m in mods]}')

        # --- cpu pinning --------------------------------------------------------
        ncpu = os.cpu_count() or 1
        want = str(ncpu - 1)
        show = ['/bin/sh', '-c', 'grep Cpus_allowed_list /proc/self/status']
        p = run(rec + ['-o', os.path.join(tmp, 'cpu'), '--cpu', want, '--'] + show)
        report('--cpu pins the program', p.stdout.split() == ['Cpus_allowed_list:', want],
               f'{p.stdout!r} {p.stderr}')
        p = run(rec + ['-o', os.path.join(tmp, 'pin'), '--'] + show)
        report('pinned to one cpu by default', p.returncode == 0 and
               '-' not in p.stdout.split()[-1] and ',' not in p.stdout.split()[-1],
               f'{p.stdout!r}')
        p = run(rec + ['-o', os.path.join(tmp, 'nopin'), '--no-pin', '--'] + show)
        allowed = open('/proc/self/status').read().split('Cpus_allowed_list:')[1].split()[0]
        report('--no-pin leaves affinity alone', p.stdout.split()[-1:] == [allowed],
               f'{p.stdout!r} vs {allowed}')

        # --- the automatic choice says why it passed a backend over ----------
        # A Valgrind tool that is not where hwtrace looks (a copy of the
        # binary elsewhere, say): the ptrace backend records, far slower,
        # and the note says why valgrind was not used; -q keeps it quiet.
        env = dict(os.environ, HWT_VALGRIND_LIB=os.path.join(tmp, 'no-tool'))
        b = os.path.join(tmp, 'passed-over')
        p = run([hwtrace, 'record', '-o', b, '--', '/bin/true'], env=env)
        report('automatic choice: a note names the backend passed over and why',
               p.returncode == 0 and os.path.isdir(b) and
               'note: the valgrind backend is not used: the hwtrace Valgrind '
               'tool is not built' in p.stderr and 'recording with ptrace' in p.stderr,
               f'rc {p.returncode}: {p.stderr}')
        b = os.path.join(tmp, 'passed-over-q')
        p = run([hwtrace, 'record', '-q', '-o', b, '--', '/bin/true'], env=env)
        report('automatic choice: -q keeps the note quiet',
               p.returncode == 0 and 'note:' not in p.stderr, p.stderr)
        b = os.path.join(tmp, 'named')
        p = run([hwtrace, 'record', '--backend', 'ptrace', '-o', b, '--',
                 '/bin/true'], env=env)
        report('a named backend: no note', p.returncode == 0 and
               'note:' not in p.stderr, p.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
