#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A flight recording of a long run: memory stays bounded, and the newest
history is exact.

BUILD/programs/spin N calls a 9-instruction function N times, then stores
through NULL. It is recorded by a software backend with a small window
(--size), N chosen so that the run lasts about FLIGHT_SECONDS (600 unless
given; an hour is FLIGHT_SECONDS=3600). While it runs the peak RSS of the
recorder and its children is sampled every second. Reported:

- the RSS over time: the largest between a tenth and three tenths of the
  run against the largest in its last half (a bounded recorder holds
  them close, within a quarter);
- the history kept: it must end at the faulting store in crash_here, the
  calls of step before it in order, and the bundle must say how many
  instructions were dropped to the window.

Usage: bench/flight.py BUILD [BACKEND] (valgrind unless given; ptrace
records about a hundred times slower, so N is calibrated per backend).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def tree_rss_kb(pid):
    """RSS of pid and its descendants, in KiB."""
    kids, rss = {}, {}
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open(f'/proc/{d}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
            kids.setdefault(int(fields[1]), []).append(int(d))
            rss[int(d)] = int(fields[21]) * os.sysconf('SC_PAGE_SIZE') // 1024
        except (OSError, IndexError, ValueError):
            pass
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo += kids.get(p, [])
    return total


def calls_per_second(build, backend, work):
    """spin's calls a second under the recorder, from a short run."""
    n = 20_000_000 if backend == 'valgrind' else 100_000
    bundle = os.path.join(work, 'calibrate')
    t0 = time.monotonic()
    subprocess.run([os.path.join(build, 'hwtrace'), 'record', '-q',
                    '--backend', backend, '--size', '8M', '-o', bundle, '--',
                    os.path.join(build, 'programs', 'spin'), str(n)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(bundle, ignore_errors=True)
    return n / max(time.monotonic() - t0, 0.1)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    backend = sys.argv[2] if len(sys.argv) > 2 else 'valgrind'
    seconds = float(os.environ.get('FLIGHT_SECONDS', '600'))
    work = tempfile.mkdtemp(prefix='hwtrace-flight-')
    try:
        n = int(calls_per_second(build, backend, work) * seconds)
        bundle = os.path.join(work, 'flight')
        t0 = time.monotonic()
        rec = subprocess.Popen([os.path.join(build, 'hwtrace'), 'record',
                                '--backend', backend, '--size', '8M', '-o',
                                bundle, '--',
                                os.path.join(build, 'programs', 'spin'),
                                str(n)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        samples = []
        while rec.poll() is None:
            samples.append((time.monotonic() - t0, tree_rss_kb(rec.pid)))
            time.sleep(1)
        err = rec.stderr.read()
        took = time.monotonic() - t0
        early = max((kb for t, kb in samples
                     if took * 0.1 <= t <= took * 0.3), default=0)
        late = max((kb for t, kb in samples if t >= took / 2), default=0)
        with open(os.path.join(bundle, 'trace.json')) as f:
            doc = json.load(f)
        t = doc['processes'][0]['threads'][0]
        out = subprocess.run([os.path.join(build, 'hwtrace'), 'dump',
                              '--insn', '--tsv', '--last', '2000', bundle],
                             capture_output=True, text=True).stdout
        rows = [l.split('\t') for l in out.splitlines()]
        last = rows[-1][4] if rows and len(rows[-1]) > 4 else '?'
        steps = sum(1 for r in rows if len(r) > 4 and r[4] == 'step+0')
        print(f'| backend | run | spin calls | RSS, 10-30% of the run | RSS, last '
              f'half | instructions (dropped to the window) | last '
              f'instruction | calls of step in the newest 2000 |')
        print('|---|---|---|---|---|---|---|---|')
        print(f'| {backend} | {took:.0f} s | {n} | {early / 1024:.0f} MiB | '
              f'{late / 1024:.0f} MiB | {t.get("instructions", 0) / 1e6:.0f} M '
              f'({t.get("lostInstructions", 0) / 1e6:.0f} M) | {last} | '
              f'{steps} |')
        ok = (late <= early * 1.25 + 8192 and last.startswith('crash_here')
              and steps > 100)
        print(f'flight {backend}: {"bounded and exact" if ok else "FAILED"}'
              f'{"" if ok else ": " + err.strip()[-300:]}')
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
