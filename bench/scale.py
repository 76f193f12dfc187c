#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The valgrind recorder at real scale, against `valgrind --tool=none` in
the same run (bench/scale.sh runs it; docs/valgrind.md keeps the latest
figures).

Workloads, each of a second or more of real work:
  pyjson    Debian's python3 encoding and decoding JSON, then SIGSEGV
  cc1       gcc's cc1 -O2 on one of this project's own files
  threads   four threads of arithmetic
  threads64 64 threads of arithmetic, about 120 M instructions each
  make      make -j2 of four small C files, --follow-fork
  whole     spin (BUILD/programs) for about 1.4 G instructions, --whole:
            a billion-instruction history kept whole and opened

For each: the time of `valgrind --tool=none` and of `hwtrace record`
(defaults: the flight-recorder window), their ratio, the recorder's own
peak RSS and the largest of all its processes' (Valgrind's), instructions
recorded and kept, bundle bytes per instruction (of all recorded), then
the time and RSS of opening the bundle (`hwtrace info`, `hwtrace dump
--calls --last 50` of every history, then of the largest alone with
--thread: one history, as a debugger asks) and, where there is a core, of GDB's `info record`,
`reverse-stepi` and `reverse-finish` through hwt-server --bundle.

Each workload runs SCALE_RUNS (3) pairs of `--tool=none` and `hwtrace
record`, one after the other; the table gives the pair of median ratio.

Usage: bench/scale.py BUILD [WORKLOAD...]; sizes through SCALE_PYJSON
(iterations, 5000: about 760 M instructions), SCALE_THREADS (iterations
per thread, 25000000), SCALE_THREADS64 (10000000), SCALE_MAKE_FILES (4),
SCALE_WHOLE_CALLS (spin's calls, 120000000).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# Pairs of runs (none, record) per workload; the median pair's figures.
RUNS = int(os.environ.get('SCALE_RUNS', '3'))


def timed(argv, cwd=None, env=None, timeout=3600):
    """(seconds, peak RSS in MiB, returncode, stderr) of argv."""
    t0 = time.monotonic()
    p = subprocess.run(['/usr/bin/time', '-f', 'RSS_KB %M', *argv],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, errors='replace', cwd=cwd, env=env,
                       timeout=timeout)
    secs = time.monotonic() - t0
    m = re.findall(r'RSS_KB (\d+)', p.stderr)
    return secs, int(m[-1]) / 1024 if m else 0.0, p.returncode, p.stderr


def recorder_timed(argv, cwd=None):
    """timed() for hwtrace record, with the recorder's own peak RSS in
    MiB too (its VmHWM, read every 20 ms until it exits): /usr/bin/time's
    is the largest of its processes', Valgrind's included."""
    t0 = time.monotonic()
    p = subprocess.Popen(['/usr/bin/time', '-f', 'RSS_KB %M', *argv],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, errors='replace', cwd=cwd)
    own_kb = 0
    recorder = None
    while p.poll() is None:
        if recorder is None:
            kids = subprocess.run(['pgrep', '-P', str(p.pid)],
                                  capture_output=True, text=True).stdout
            recorder = int(kids.split()[0]) if kids.split() else None
        try:
            with open(f'/proc/{recorder}/status') as f:
                m = re.search(r'VmHWM:\s+(\d+)', f.read())
            own_kb = max(own_kb, int(m.group(1))) if m else own_kb
        except (OSError, TypeError):
            pass
        time.sleep(0.02)
    err = p.stderr.read()
    secs = time.monotonic() - t0
    m = re.findall(r'RSS_KB (\d+)', err)
    return (secs, int(m[-1]) / 1024 if m else 0.0, own_kb / 1024,
            p.returncode, err)


def largest_history(bundle):
    """The tid of the thread that kept the most instructions (the
    program's before a child's, the newest of an exec'd one's)."""
    with open(os.path.join(bundle, 'trace.json')) as f:
        doc = json.load(f)
    best = None
    for proc in doc['processes']:
        for t in proc['threads']:
            kept = t.get('instructions', 0) - t.get('lostInstructions', 0)
            if best is None or kept > best[0]:
                best = (kept, t['tid'])
    return best[1]


def bundle_stats(bundle):
    """(instructions recorded, instructions kept, trace bytes on disk)."""
    with open(os.path.join(bundle, 'trace.json')) as f:
        doc = json.load(f)
    rec = kept = size = 0
    for proc in doc['processes']:
        for t in proc['threads']:
            rec += t.get('instructions', 0)
            kept += t.get('instructions', 0) - t.get('lostInstructions', 0)
            size += t.get('traceSize', 0)
    return rec, kept, size


def gdb_reverse(build, bundle, prog, work):
    """Seconds for GDB's info record, reverse-stepi and reverse-finish
    over hwt-server --bundle (connection included), or None."""
    if not os.path.exists(os.path.join(bundle, 'core')):
        return None
    srv = subprocess.Popen([os.path.join(build, 'hwt-server'), '--listen',
                            '127.0.0.1:0', '--bundle', bundle],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    try:
        line = srv.stderr.readline()
        m = re.search(r'listening on (\S+)', line)
        if not m:
            return None
        t0 = time.monotonic()
        subprocess.run(['gdb', '-nx', '-batch', '-ex', 'set confirm off',
                        '-ex', f'target remote {m.group(1)}',
                        '-ex', 'info record', '-ex', 'reverse-stepi',
                        '-ex', 'reverse-finish', '-ex', 'kill', prog],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=3600)
        return time.monotonic() - t0
    finally:
        srv.kill()
        srv.wait()


def workloads(build, work, only):
    """name -> (argv, cwd, extra record options)."""
    python = os.path.realpath('/usr/bin/python3')
    out = {}
    if 'pyjson' in only:
        out['pyjson'] = ([python, os.path.join(HERE, 'workloads',
                                               'pyjson.py'),
                          os.environ.get('SCALE_PYJSON', '5000')], work, [])
    if 'cc1' in only:
        cc1 = subprocess.run(['gcc', '-print-prog-name=cc1'],
                             capture_output=True, text=True).stdout.strip()
        src = os.path.join(work, 'decode_pt.i')
        subprocess.run(['gcc', '-E', '-D_GNU_SOURCE', '-I' + ROOT + '/common',
                        '-I' + ROOT + '/replay',
                        os.path.join(ROOT, 'replay', 'decode_pt.c'),
                        '-o', src], check=True)
        out['cc1'] = ([cc1, '-quiet', '-O2', src, '-o', os.devnull], work,
                      [])
    if 'threads' in only:
        exe = os.path.join(work, 'threads')
        subprocess.run(['gcc', '-O1', '-pthread', '-o', exe,
                        os.path.join(HERE, 'workloads', 'threads.c')],
                       check=True)
        out['threads'] = ([exe, os.environ.get('SCALE_THREADS', '25000000')],
                          work, [])
    if 'threads64' in only:
        exe = os.path.join(work, 'threads')
        subprocess.run(['gcc', '-O1', '-pthread', '-o', exe,
                        os.path.join(HERE, 'workloads', 'threads.c')],
                       check=True)
        out['threads64'] = ([exe, os.environ.get('SCALE_THREADS64',
                                                 '10000000'), '64'],
                            work, [])
    if 'make' in only:
        proj = os.path.join(work, 'proj')
        os.makedirs(proj, exist_ok=True)
        n = int(os.environ.get('SCALE_MAKE_FILES', '4'))
        for i in range(n):
            with open(os.path.join(proj, f'f{i}.c'), 'w') as f:
                f.write(f'int f{i}(int x) {{ return x * {i + 3} + 1; }}\n')
        with open(os.path.join(proj, 'Makefile'), 'w') as f:
            objs = ' '.join(f'f{i}.o' for i in range(n))
            f.write(f'all: {objs}\n%.o: %.c\n\tgcc -O2 -c $< -o $@\n')
        out['make'] = (['make', '-s', '-j2', '-B'], proj, ['--follow-fork'])
    if 'whole' in only:
        out['whole'] = ([os.path.join(build, 'programs', 'spin'),
                         os.environ.get('SCALE_WHOLE_CALLS', '120000000')],
                        work, ['--whole'])
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    only = sys.argv[2:] or ['pyjson', 'cc1', 'threads', 'threads64', 'make',
                            'whole']
    hwtrace = os.path.join(build, 'hwtrace')
    work = tempfile.mkdtemp(prefix='hwtrace-scale-')
    rows = []
    try:
        for name, (argv, cwd, extra) in workloads(build, work,
                                                  only).items():
            follow = (['--trace-children=yes'] if '--follow-fork' in extra
                      else [])
            bundle = os.path.join(work, name + '.bundle')
            # Pairs, one after the other: this machine's speed moves by a
            # third within minutes, and a pair sees the same machine.
            pairs = []
            for _ in range(RUNS):
                none_s = timed(['valgrind', '--tool=none', '-q', *follow,
                                *argv], cwd=cwd)[0]
                shutil.rmtree(bundle, ignore_errors=True)
                rec = recorder_timed([hwtrace, 'record', '-q', '--backend',
                                      'valgrind', *extra, '-o', bundle, '--',
                                      *argv], cwd=cwd)
                pairs.append((rec[0] / none_s, none_s, *rec))
            pairs.sort()
            ratio, none_s, rec_s, rec_mb, own_mb, rc, err = \
                pairs[len(pairs) // 2]
            if not os.path.isdir(bundle):
                print(f'{name}: hwtrace record failed ({rc}): '
                      f'{err.strip()[-300:]}')
                continue
            insns, kept, size = bundle_stats(bundle)
            info_s, info_mb, _, _ = timed([hwtrace, 'info', bundle])
            calls_s, calls_mb, _, _ = timed([hwtrace, 'dump', '--calls',
                                             '--last', '50', bundle])
            # What a debugger asks: one history's, the largest.
            one_s, one_mb, _, _ = timed([hwtrace, 'dump', '--calls',
                                         '--last', '50', '--thread',
                                         str(largest_history(bundle)),
                                         bundle])
            gdb_s = gdb_reverse(build, bundle, argv[0], work)
            rows.append((name, none_s, rec_s, ratio, own_mb, rec_mb, insns,
                         kept, size / insns if insns else 0, info_s,
                         info_mb, calls_s, calls_mb, one_s, one_mb, gdb_s))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print('| workload | valgrind none | hwtrace record | ratio | recorder '
          'peak RSS (largest process) | instructions (kept) | bytes/insn | '
          'info | dump --calls --last 50 (every history) | the same, '
          'largest history | GDB info record + reverse-stepi + '
          'reverse-finish |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    for (name, none_s, rec_s, ratio, own_mb, rec_mb, insns, kept, bpi,
         info_s, info_mb, calls_s, calls_mb, one_s, one_mb, gdb_s) in rows:
        print(f'| {name} | {none_s:.2f} s | {rec_s:.2f} s | '
              f'{ratio:.2f}x | {own_mb:.0f} MiB ({rec_mb:.0f} MiB) | '
              f'{insns / 1e6:.0f} M '
              f'({kept / 1e6:.0f} M) | {bpi:.4f} | {info_s:.2f} s, '
              f'{info_mb:.0f} MiB | {calls_s:.2f} s, {calls_mb:.0f} MiB | '
              f'{one_s:.2f} s, {one_mb:.0f} MiB | '
              f'{"%.2f s" % gdb_s if gdb_s is not None else "not run"} |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
