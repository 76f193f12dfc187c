#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Values of the past from the valgrind recorder (`hwtrace record
--values`), against the same recording without them and against
`valgrind --tool=none`, in the same run (bench/values.sh runs it;
docs/valgrind.md keeps the latest figures).

Workloads: pyjson and cc1 of bench/scale.py (seconds of real work), and
bench/loop.c, whose rate with values is set against GDB's own `record
full` on the same loop.

For each: the time of `valgrind --tool=none`, of `hwtrace record` and of
`hwtrace record --values` (SCALE_RUNS triples, one after the other; the
triple of median ratio), the ratios, the recorder's peak RSS with
values, the instructions the data history reaches back over, the bundle's
bytes per instruction recorded and the data history's per instruction it
holds; then, through hwt-server --bundle and GDB, the time of a reverse
watch that crosses the whole of it (a word nothing writes), less GDB's
own start; bench_past's (make bench builds it) time of reading
memory at 1000 random points of it; and `hwtrace info` on the bundle
(its data history opened, its counts told), time and peak RSS.

Usage: bench/values.py BUILD [WORKLOAD...]; SCALE_PYJSON (5000),
VALUES_BYTES (the --values ring, 64M), VALUES_WINDOW (--size of both
recordings, the recorder's default of 64M if unset: about 50 M
instructions of pyjson), VALUES_LOOP (loop iterations for the rate
against record full, 20000000; record full runs 200000), VALUES_REACH
(the ring of `reach`, 1600M: about 107 M instructions of pyjson).

Workload `reach`: pyjson recorded once with values over about 100 M
instructions, for the goals on a history that long: a reverse watch
across it through GDB, memory at a random point (and the first read,
which loads and indexes the stores).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scale  # noqa: E402  (its workloads and timers)

RUNS = scale.RUNS


def data_stats(hwtrace, bundle):
    """(instructions the data history holds, its file's bytes)."""
    out = subprocess.run([hwtrace, 'info', bundle], capture_output=True,
                         text=True).stdout
    m = re.search(r'^data: +data\.past: registers before (\d+) '
                  r'instructions', out, re.M)
    path = os.path.join(bundle, 'data.past')
    return (int(m.group(1)) if m else 0,
            os.path.getsize(path) if os.path.exists(path) else 0)


def gdb_timed(build, bundle, prog, cmds):
    """Seconds GDB takes over hwt-server --bundle for cmds, or None."""
    srv = subprocess.Popen([os.path.join(build, 'hwt-server'), '--listen',
                            '127.0.0.1:0', '--bundle', bundle],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    try:
        m = re.search(r'listening on (\S+)', srv.stderr.readline())
        if not m:
            return None, ''
        argv = ['gdb', '-nx', '-batch', '-ex', 'set confirm off',
                '-ex', f'target remote {m.group(1)}', '-ex', 'record stop']
        for c in cmds:
            argv += ['-ex', c]
        t0 = time.monotonic()
        p = subprocess.run(argv + ['-ex', 'kill', prog], capture_output=True,
                           text=True, timeout=3600)
        return time.monotonic() - t0, p.stdout + p.stderr
    finally:
        srv.kill()
        srv.wait()


def reverse_watch(build, bundle, prog):
    """Seconds of a reverse watch on a word nothing writes (below the
    stack), which crosses the whole data history to its start, GDB's own
    start taken off; None when it did not get there."""
    base, _ = gdb_timed(build, bundle, prog, [])
    watch, out = gdb_timed(build, bundle, prog, [
        'watch -l *(long *)($sp - 65536)', 'reverse-continue'])
    if base is None or watch is None or \
            'No more reverse-execution history' not in out:
        return None
    return watch - base


def past_questions(build, bundle):
    """bench/bench_past on the bundle: (median and slowest read of memory
    at a random point, ms; seconds the first read took to load and index
    the stores), or None when it is not built or failed."""
    tool = os.path.join(build, 'bench', 'bench_past')
    if not os.path.exists(tool):
        return None
    out = subprocess.run([tool, bundle, '1000'], capture_output=True,
                         text=True).stdout
    m = re.search(r'median ([\d.]+) ms, slowest ([\d.]+) ms', out)
    first = re.search(r'stores read and indexed by address in ([\d.]+) s',
                      out)
    if not m or not first:
        return None
    return float(m.group(1)), float(m.group(2)), float(first.group(1))


def reach(build, work):
    """pyjson recorded once with a ring that holds about 100 M
    instructions of values (VALUES_REACH, 1600M) and a window as long:
    what the goals for a 100 M-instruction history are measured on."""
    argv, cwd, _ = scale.workloads(build, work, ['pyjson'])['pyjson']
    bundle = os.path.join(work, 'reach.bundle')
    none_s = scale.timed(['valgrind', '--tool=none', '-q', *argv],
                         cwd=cwd)[0]
    val = scale.recorder_timed([os.path.join(build, 'hwtrace'), 'record',
                                '-q', '--backend', 'valgrind', '--size',
                                '128M', '--values=' +
                                os.environ.get('VALUES_REACH', '1600M'),
                                '-o', bundle, '--', *argv], cwd=cwd)
    if not os.path.isdir(bundle):
        print(f'reach: hwtrace record --values failed ({val[3]}): '
              f'{val[4].strip()[-300:]}')
        return None
    held, past = data_stats(os.path.join(build, 'hwtrace'), bundle)
    return (none_s, val[0], val[2], held, past / held if held else 0,
            reverse_watch(build, bundle, argv[0]),
            past_questions(build, bundle))


def record_full_rate(build, work):
    """(recorder with values, GDB record full) instructions per second
    on bench/loop.c."""
    loop = os.path.join(work, 'loop')
    subprocess.run(['cc', '-O1', '-g', '-o', loop,
                    os.path.join(HERE, 'loop.c')], check=True)
    n = os.environ.get('VALUES_LOOP', '20000000')
    bundle = os.path.join(work, 'loop.bundle')
    t0 = time.monotonic()
    subprocess.run([os.path.join(build, 'hwtrace'), 'record', '-q',
                    '--backend', 'valgrind', '--values', '-o', bundle, '--',
                    loop, n], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    secs = time.monotonic() - t0
    insns = scale.bundle_stats(bundle)[0]
    out = subprocess.run(['gdb', '-nx', '-batch', '-x',
                          os.path.join(HERE, 'gdb_record_full.py'),
                          '--args', loop, '200000'], capture_output=True,
                         text=True).stdout
    m = re.search(r'GDB_RECORD_FULL insns=(\d+) seconds=([\d.]+)', out)
    full = int(m.group(1)) / float(m.group(2)) if m else 0
    return insns / secs if secs else 0, full


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    only = sys.argv[2:] or ['pyjson', 'cc1', 'loop', 'reach']
    hwtrace = os.path.join(build, 'hwtrace')
    size = os.environ.get('VALUES_BYTES', '64M')
    work = tempfile.mkdtemp(prefix='hwtrace-values-')
    rows = []
    rates = None
    try:
        for name, (argv, cwd, _) in scale.workloads(build, work,
                                                    only).items():
            plain = os.path.join(work, name + '.bundle')
            vals = os.path.join(work, name + '-values.bundle')
            triples = []
            window = (['--size', os.environ['VALUES_WINDOW']]
                      if os.environ.get('VALUES_WINDOW') else [])
            for _ in range(RUNS):
                none_s = scale.timed(['valgrind', '--tool=none', '-q',
                                      *argv], cwd=cwd)[0]
                shutil.rmtree(plain, ignore_errors=True)
                shutil.rmtree(vals, ignore_errors=True)
                rec = scale.recorder_timed([hwtrace, 'record', '-q',
                                            '--backend', 'valgrind',
                                            *window, '-o', plain, '--',
                                            *argv], cwd=cwd)
                val = scale.recorder_timed([hwtrace, 'record', '-q',
                                            '--backend', 'valgrind',
                                            *window, f'--values={size}',
                                            '-o', vals, '--', *argv],
                                           cwd=cwd)
                triples.append((val[0] / rec[0], none_s, rec[0], val))
            triples.sort(key=lambda t: t[0])
            ratio, none_s, rec_s, val = triples[len(triples) // 2]
            val_s, _, own_mb = val[0], val[1], val[2]
            if not os.path.isdir(vals):
                print(f'{name}: hwtrace record --values failed ({val[3]}): '
                      f'{val[4].strip()[-300:]}')
                continue
            insns, _, trace = scale.bundle_stats(vals)
            held, past = data_stats(hwtrace, vals)
            watch_s = reverse_watch(build, vals, argv[0])
            info_s, info_mb, _, _ = scale.timed([hwtrace, 'info', vals])
            rows.append((name, none_s, rec_s, val_s, ratio, own_mb, insns,
                         held, (trace + past) / insns if insns else 0,
                         past / held if held else 0, watch_s,
                         past_questions(build, vals), info_s, info_mb))
        if 'loop' in only:
            rates = record_full_rate(build, work)
        far = reach(build, work) if 'reach' in only else None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f'--values={size}')
    print('| workload | valgrind none | record | record --values | '
          'values ÷ without | values ÷ none | recorder peak RSS | '
          'instructions (with values) | bundle bytes/insn | data history '
          'bytes/insn held | reverse watch across it | memory at a random '
          'point (median / slowest) | info |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    for (name, none_s, rec_s, val_s, ratio, own_mb, insns, held, bpi, dpi,
         watch_s, reads, info_s, info_mb) in rows:
        print(f'| {name} | {none_s:.2f} s | {rec_s:.2f} s | {val_s:.2f} s | '
              f'{ratio:.2f}x | {val_s / none_s:.2f}x | {own_mb:.0f} MiB | '
              f'{insns / 1e6:.0f} M ({held / 1e6:.1f} M) | {bpi:.3f} | '
              f'{dpi:.2f} | '
              f'{"%.2f s" % watch_s if watch_s is not None else "failed"} | '
              f'{"%.3f / %.3f ms" % reads[:2] if reads else "not built"} | '
              f'{info_s:.2f} s, {info_mb:.0f} MiB |')
    if far:
        none_s, val_s, own_mb, held, dpi, watch_s, reads = far
        print(f'reach: pyjson with --values={os.environ.get("VALUES_REACH", "1600M")}: '
              f'{val_s:.2f} s ({val_s / none_s:.2f}x none), recorder '
              f'{own_mb:.0f} MiB, values over {held / 1e6:.1f} M '
              f'instructions, {dpi:.2f} bytes/insn held; reverse watch '
              f'across them through GDB '
              f'{"%.2f s" % watch_s if watch_s is not None else "failed"} '
              f'(goal <= 1 s); memory at a random point '
              + (f'{reads[0]:.3f} / {reads[1]:.3f} ms (goal <= 10 ms), '
                 f'the first read loading the stores {reads[2]:.2f} s'
                 if reads else 'not measured'))
    if rates:
        mine, full = rates
        print(f'loop: record --values {mine:,.0f} insns/s, GDB record full '
              f'{full:,.0f} insns/s: '
              f'{mine / full if full else 0:,.0f}x')
    return 0


if __name__ == '__main__':
    sys.exit(main())
