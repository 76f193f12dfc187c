#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`hwtrace index`: a bundle's Intel PT traces get their segment index kept
beside them (TRACE.hwtidx, replay/seg_store.c), and opening the bundle
then reads it instead of decoding the whole trace. The history must be the
same item for item; an index that no longer matches its trace (the trace
changed) or is damaged is not used, and `info` says why.

Traces: a program recorded here, written as an LLDB intel-pt bundle
(`hwtrace export --lldb`, per thread and per cpu), LLDB's own bundle
from ../shared/corpus/lldb-intelpt/intelpt-trace, and OpenCSD's snapshots
of an ETMv3 and an ETE trace from ../shared/corpus/opencsd/snapshots: a
CoreSight index keeps the blocks OpenCSD decoded, one file per trace
source (TRACE.ID.hwtidx), and opening then runs no decoder.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from hwt_testlib import report, run_tool

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, '..', '..', '..', 'shared', 'corpus',
                      'lldb-intelpt', 'intelpt-trace')
SNAPSHOTS = os.path.join(HERE, '..', '..', '..', 'shared', 'corpus',
                         'opencsd', 'snapshots')


def dump(hwtrace, bundle):
    rc, out, err = run_tool(hwtrace, 'dump', '--insn', '--tsv', bundle)
    return out if rc == 0 else f'error {rc}: {err}'


def note(hwtrace, bundle):
    rc, out, _ = run_tool(hwtrace, 'info', bundle)
    return next((l.strip() for l in out.splitlines()
                 if 'index not used' in l), '' if rc == 0 else f'rc {rc}')


def kept_files(bundle):
    return sorted(os.path.join(r, f) for r, _, fs in os.walk(bundle)
                  for f in fs if f.endswith('.hwtidx'))


def check_bundle(hwtrace, name, bundle, work):
    """Index a copy of bundle; the same items; stale and damaged copies."""
    plain = dump(hwtrace, bundle)
    copy = os.path.join(work, name)
    shutil.copytree(bundle, copy)
    # The corpus is read-only; its copy is indexed.
    for root, dirs, files in os.walk(copy):
        for d in [root] + [os.path.join(root, f) for f in files]:
            os.chmod(d, os.stat(d).st_mode | 0o200)
    rc, out, err = run_tool(hwtrace, 'index', copy)
    kept = kept_files(copy)
    report(f'{name}: index keeps a file beside each trace',
           rc == 0 and kept and plain.count('\n') > 10,
           f'rc {rc}: {out.strip()} {err.strip()}')
    if not kept:
        return
    report(f'{name}: the kept index gives the same history, item for item',
           dump(hwtrace, copy) == plain and note(hwtrace, copy) == '',
           note(hwtrace, copy))
    trace = re.sub(r'(\.[0-9a-f]{2})?\.hwtidx$', '', kept[0])
    stale = os.path.join(work, name + '-stale')
    shutil.copytree(copy, stale)
    with open(os.path.join(stale, os.path.relpath(trace, copy)), 'r+b') as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0x01]))
    fresh = os.path.join(work, name + '-fresh')
    shutil.copytree(stale, fresh)
    for k in kept_files(fresh):
        os.unlink(k)
    n = note(hwtrace, stale)
    report(f'{name}: a trace changed since it was indexed: the index is '
           'not used, and info says why',
           'not the one it indexed' in n and
           dump(hwtrace, stale) == dump(hwtrace, fresh), n)
    damaged = os.path.join(work, name + '-damaged')
    shutil.copytree(copy, damaged)
    k = os.path.join(damaged, os.path.relpath(kept[0], copy))
    with open(k, 'r+b') as f:
        data = bytearray(f.read())
        data[len(data) // 2] ^= 0x40
        f.seek(0)
        f.write(data)
    n = note(hwtrace, damaged)
    report(f'{name}: a damaged index is not used, and info says why',
           'index' in n and dump(hwtrace, damaged) == plain, n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    args = ap.parse_args()
    hwtrace = os.path.join(args.build, 'hwtrace')
    work = tempfile.mkdtemp(prefix='hwt-kept-index-')
    try:
        rec = os.path.join(work, 'rec')
        p = subprocess.run([hwtrace, 'record', '-q', '-o', rec, '--',
                            os.path.join(args.build, 'programs', 'qsort')],
                           capture_output=True, text=True, timeout=600)
        if not os.path.isdir(rec):
            report('record qsort', False, p.stderr[-300:])
            return 1
        rc, out, err = run_tool(hwtrace, 'index', rec)
        report('an hwt-sw bundle: indexed when recorded, nothing kept',
               rc == 0 and 'indexed when it is recorded' in out and
               not kept_files(rec), f'rc {rc}: {out} {err}')
        pt = os.path.join(work, 'pt')
        rc, _, err = run_tool(hwtrace, 'export', '--lldb', '-o', pt, rec)
        if rc == 0:
            check_bundle(hwtrace, 'exported intel-pt', pt, work)
        else:
            report('export --lldb', False, err)
        cpu = os.path.join(work, 'cpu')
        rc, _, err = run_tool(hwtrace, 'export', '--lldb', '--per-cpu', '-o',
                              cpu, rec)
        rc2, out, err2 = run_tool(hwtrace, 'index', cpu)
        report('a per-cpu bundle: nothing kept, said so',
               rc == 0 and rc2 == 0 and 'per-cpu' in out and
               not kept_files(cpu), f'{rc}/{rc2}: {out} {err} {err2}')
        if os.path.isdir(CORPUS):
            lldb = os.path.join(work, 'lldb')
            os.makedirs(lldb)
            for f in ('trace.json', '3842849.trace', 'a.out'):
                shutil.copy(os.path.join(CORPUS, f), lldb)
            check_bundle(hwtrace, "LLDB's intel-pt bundle", lldb, work)
        else:
            report("LLDB's intel-pt bundle", False, f'{CORPUS} is missing')
        # OpenCSD's Snowball (ETMv3, two sources in one buffer, gaps with
        # their reasons) and an ETE trace.
        for snap in ('Snowball', 'ete_ip'):
            path = os.path.join(SNAPSHOTS, snap)
            if not os.path.isdir(path):
                report(f'CoreSight {snap}', False, f'{path} is missing')
                continue
            check_bundle(hwtrace, f'CoreSight {snap}', path, work)
            kept = kept_files(os.path.join(work, f'CoreSight {snap}'))
            report(f'CoreSight {snap}: one kept index per trace source',
                   len(kept) >= 1 and all(re.search(r'\.[0-9a-f]{2}\.hwtidx$',
                                                    k) for k in kept), kept)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
