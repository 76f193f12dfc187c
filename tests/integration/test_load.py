#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Many threads: 10,000 over a program's life, 1,000 alive at once.

BUILD/programs/rawthreads WAVES ALIVE starts WAVES waves of ALIVE bare
clone() threads (a dozen instructions each), all alive until the wave's
go; BUILD/programs/manythreads does the same with pthreads. Checked, for
each software backend that records here (ptrace, valgrind):

- `hwtrace record` of 10 x 1000 threads ends with the program's exit
  status 0, keeps the newest 4096 threads (a bundle's most; the oldest
  exited ones make room) and loses no instruction of those it keeps;
- hwt-server recording the same program from launch, with GDB continuing
  to the end: the program exits normally, nothing hangs;
- beyond the limits, a clear error that names them: more than 4096
  threads alive at once (ptrace), more than Valgrind runs (valgrind).
"""
import os
import re
import subprocess
import sys
import tempfile

from hwt_testlib import (ServerProcess, exit_status, parse_args, report,
                         run_tool, selected)


def where_stuck(pid):
    """What a recorder that stopped making progress is doing: its stack
    (GDB attached for a moment) and the state of each of its children."""
    lines = []
    try:
        p = subprocess.run(['gdb', '-nx', '-batch', '-p', str(pid), '-ex',
                            'thread apply all bt 12'], capture_output=True,
                           text=True, timeout=60)
        lines += [l for l in p.stdout.splitlines() if l.startswith('#')]
    except (OSError, subprocess.TimeoutExpired) as e:
        lines.append(f'gdb: {e}')
    try:
        for child in open(f'/proc/{pid}/task/{pid}/children').read().split():
            for task in sorted(os.listdir(f'/proc/{child}/task'))[:20]:
                with open(f'/proc/{child}/task/{task}/stat') as f:
                    lines.append(f'tracee {child}/{task}: state '
                                 f'{f.read().split(")")[-1].split()[0]}')
    except OSError as e:
        lines.append(f'tracees: {e}')
    return '\n'.join(lines[-60:])


def record(build, tmp, backend, prog, *args):
    """(status, stderr, bundle) of hwtrace record; a run past 900 s is a
    hang, reported with where the recorder was stuck."""
    out = os.path.join(tmp, f'{backend}-{os.path.basename(prog)}-'
                       f'{"-".join(args)}')
    p = subprocess.Popen([os.path.join(build, 'hwtrace'), 'record',
                          '--backend', backend, '-o', out, '--', prog, *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, errors='replace')
    try:
        _, err = p.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        stuck = where_stuck(p.pid)
        p.kill()
        _, err = p.communicate()
        return -1, f'hung for 900 s; {err[-300:]}\n{stuck}', out
    return p.returncode, err, out


def test_record(build, tmp, backend):
    prog = os.path.join(build, 'programs', 'rawthreads')
    rc, err, out = record(build, tmp, backend, prog, '10', '1000')
    m = re.search(r'(\d+) threads, (\d+) instructions recorded(.*)', err)
    report(f'{backend}: 10,000 threads over the life, 1,000 alive at once: '
           'recorded to the exit, the newest 4096 kept, nothing of them lost',
           rc == 0 and 'exited with status 0' in err and m is not None and
           m.group(1) == '4096' and 'lost' not in m.group(3), err[-600:])
    if rc != 0:
        return
    rc, info, ierr = run_tool(os.path.join(build, 'hwtrace'), 'info', out)
    lost = re.findall(r' (\d+) lost \(', info)
    report(f'{backend}: hwtrace info reads the 4096 threads, none with '
           'instructions lost', rc == 0 and len(lost) == 4096 and
           all(n == '0' for n in lost), f'{len(lost)} threads; {ierr[-300:]}')


def test_limit(build, tmp, backend):
    if backend == 'ptrace':
        rc, err, _ = record(build, tmp, backend,
                            os.path.join(build, 'programs', 'rawthreads'),
                            '1', '4200')
        report('ptrace: more than 4096 threads alive at once: an error '
               'naming the limit', rc != 0 and 'more than 4096 live threads'
               in err, err[-400:])
    else:
        rc, err, _ = record(build, tmp, backend,
                            os.path.join(build, 'programs', 'manythreads'),
                            '1', '2100')
        report('valgrind: more threads alive at once than it runs: the '
               'limit is named', 'more than 2048 threads alive at once' in
               err, err[-400:])


def test_live(build, tmp, backend):
    prog = os.path.join(build, 'programs', 'rawthreads')
    srv = ServerProcess([os.path.join(build, 'hwt-server'), '--listen',
                         '127.0.0.1:0', '--once', '--record', '--backend',
                         backend, '--', prog, '10', '1000'], tmp,
                        f'live-{backend}')
    try:
        if not srv.address:
            report(f'{backend} live: hwt-server listens', False,
                   srv.log()[-600:])
            return
        try:
            out = subprocess.run(
                ['gdb', '-nx', '-batch', '-ex', f'target remote {srv.address}',
                 # With --record it stops as it starts to exit (as
                 # record full does), then exits.
                 '-ex', 'continue', '-ex', 'continue', prog],
                capture_output=True, text=True,
                timeout=900).stdout
        except subprocess.TimeoutExpired:
            out = 'timed out after 900 s'
        report(f'{backend} live: 10,000 threads served while recorded, GDB '
               'continues to the exit', 'exited normally' in out,
               out[-600:] + srv.log()[-400:])
    finally:
        srv.wait(30)
        srv.stop()


def main():
    args = parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for backend in ('ptrace', 'valgrind'):
            rc, out, err = run_tool(os.path.join(args.build, 'hwtrace'),
                                    'backends')
            if not re.search(rf'^{backend} +available', out, re.M):
                print(f'SKIP {backend}: not available here: '
                      f'{out.strip()[-200:]}')
                continue
            if selected(f'{backend}-record'):
                test_record(args.build, tmp, backend)
            if selected(f'{backend}-limit'):
                test_limit(args.build, tmp, backend)
            if selected(f'{backend}-live'):
                test_live(args.build, tmp, backend)
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
