#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Intel PT: LLDB's intel-pt bundles from LLDB's own test suite, decoded by
hwtrace and compared with what LLDB decodes; LLDB's broken bundles; damaged
copies of the PT trace.

Corpus: ../shared/corpus/lldb-intelpt/intelpt-trace beside the repository
(see its README). Without it every case FAILs: the corpus is part of the
test, not an optional extra.

Item mapping: EXPECTED_insns.tsv numbers LLDB 16's items, events included
(ids 0-2 and 4-6 are events, 3 and 7-26 instructions). hwtrace has no event
items and continues without a gap where tracing was switched off and on
again at the same place (docs/intel-pt.md), so its item k is LLDB's
instruction id 3 for k = 1 and k + 5 for k >= 2.

Damaged traces run the sanitizer build when HWT_SAN_BUILD names one.
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

from hwt_testlib import exit_status, report, sanitizer_report, selected
from hwt_testlib import run_tool


def run(binary, *args):
    return run_tool(binary, *args, timeout=300)


TID = '3842849'





def items(out):
    """(tid, index, kind, addr or reason, columns) per TSV line."""
    rows = []
    for line in out.splitlines():
        f = line.split('\t')
        if len(f) >= 4 and f[2] == 'gap':
            rows.append((f[0], int(f[1]), 'gap', f[3], f))
        elif len(f) >= 3 and f[2].startswith('0x'):
            rows.append((f[0], int(f[1]), 'insn', int(f[2], 16), f))
    return rows


def expected(corpus):
    ids = {}
    with open(os.path.join(corpus, 'EXPECTED_insns.tsv')) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            f2 = line.split('\t')
            ids[int(f2[0])] = int(f2[1], 16)
    return ids


def lldb_id(k):
    return 3 if k == 1 else k + 5


def check_good(hwtrace, corpus):
    want = expected(corpus)
    want_ids = [3] + list(range(7, 27))
    if sorted(want) != want_ids:
        report('intelpt expected file', False, f'ids {sorted(want)}')
        return
    rc, out, err = run(hwtrace, 'dump', '--insn', '--tsv',
                       os.path.join(corpus, 'trace.json'))
    rows = items(out)
    if rc != 0:
        report('intelpt trace.json insn', False, f'exit {rc}: {err.strip()}')
        return
    got = [r[3] for r in rows if r[2] == 'insn']
    exp = [want[i] for i in want_ids]
    gaps = [r for r in rows if r[2] == 'gap']
    if got != exp:
        first = next((i for i in range(min(len(got), len(exp)))
                      if got[i] != exp[i]), min(len(got), len(exp)))
        report('intelpt trace.json insn', False,
               f'{len(got)} instructions, LLDB {len(exp)}; first difference '
               f'at instruction {first + 1}: '
               f'{hex(got[first]) if first < len(got) else "end"} vs '
               f'{hex(exp[first]) if first < len(exp) else "end"}')
    else:
        report('intelpt trace.json insn: 21 instructions equal LLDB ids 3, 7-26', True)
    bad_map = [(r[1], lldb_id(r[1])) for r in rows
               if r[2] == 'insn' and want.get(lldb_id(r[1])) != r[3]]
    report('intelpt item numbering maps to LLDB ids (k=1 -> 3, k -> k+5)',
           not gaps and not bad_map and all(r[0] == TID for r in rows),
           f'gaps {gaps[:3]}, mismatches {bad_map[:3]}')
    # No TSC in this trace: no timestamp column (the contract adds later
    # columns only when present).
    report('intelpt no timestamp column without TSC',
           all(len(r[4]) == 6 for r in rows if r[2] == 'insn'),
           f'columns: {[len(r[4]) for r in rows][:5]}')
    rc, out, err = run(hwtrace, 'info', os.path.join(corpus, 'trace.json'))
    report('intelpt info', rc == 0 and 'intel-pt' in out and
           f'thread {TID}: 21 items' in out and 'GenuineIntel' in out,
           f'exit {rc}: {out.strip()[-400:]} {err.strip()}')
    rc, out, err = run(hwtrace, 'dump', '--calls', '--tsv',
                       os.path.join(corpus, 'trace.json'))
    report('intelpt calls', rc == 0 and '\tmain\t1\t21' in out,
           f'exit {rc}: {out.strip()} {err.strip()}')


BAD = {
    'trace_bad.json': "field 'processes[0]' must be an object",
    'trace_bad2.json': "field 'cpuInfo.family' must be an integer",
    'trace_bad3.json': "field 'processes[1].pid' is missing",
    'trace_bad4.json': "field 'cpuInfo.family' is missing",
    'trace_bad5.json': "field 'processes[1].pid' is missing",
    # Vendor GenuineIntel, but family 2123123: no x86 cpu has it (LLDB
    # loads it and fails at decode with "unknown cpu").
    'trace_wrong_cpu.json': "field 'cpuInfo.family' is not an x86 cpu family",
}


def check_bad(hwtrace, corpus):
    for name, needle in BAD.items():
        path = os.path.join(corpus, name)
        for cmd in ('info', 'dump'):
            args = ['info', path] if cmd == 'info' else ['dump', '--insn', path]
            rc, out, err = run(hwtrace, *args)
            ok = (rc == 1 and err.startswith(f'hwtrace: {path}: ') and
                  needle in err and not sanitizer_report(err))
            report(f'intelpt {name} {cmd} fails clearly', ok,
                   f'exit {rc}, stderr {err.strip()!r}, want {needle!r}')
    # The module is placed where the trace never runs: as in LLDB, the
    # history is there but made of gaps that say where code was missing.
    rc, out, err = run(hwtrace, 'dump', '--insn', '--tsv',
                       os.path.join(corpus, 'trace_bad_image.json'))
    rows = items(out)
    report('intelpt trace_bad_image.json: gaps naming the missing code',
           rc == 0 and rows and all(r[2] == 'gap' for r in rows) and
           any('no code at 0x400511' in r[3] and 'loadAddress' in r[3]
               for r in rows),
           f'exit {rc}: {out.strip()[:300]} {err.strip()}')


def check_2threads(hwtrace, corpus):
    rc, out, err = run(hwtrace, 'dump', '--insn', '--tsv',
                       os.path.join(corpus, 'trace_2threads.json'))
    rows = items(out)
    by = {}
    for r in rows:
        by.setdefault(r[0], []).append(r[3] if r[2] == 'insn' else 'gap')
    want = expected(corpus)
    exp = [want[i] for i in [3] + list(range(7, 27))]
    report('intelpt trace_2threads.json: two threads, same trace',
           rc == 0 and sorted(by) == [TID, '3842850'] and
           all(v == exp for v in by.values()),
           f'exit {rc}, threads {sorted(by)}, {err.strip()}')


def write_bundle(d, doc):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'trace.json'), 'w') as f:
        json.dump(doc, f, indent=1)
    return os.path.join(d, 'trace.json')


def base_doc(corpus):
    with open(os.path.join(corpus, 'trace.json')) as f:
        return json.load(f)


def check_variants(hwtrace, corpus, tmp):
    ref = subprocess.run([hwtrace, 'dump', '--insn', '--tsv',
                          os.path.join(corpus, 'trace.json')],
                         capture_output=True, text=True).stdout
    # Absolute paths (LLDB allows them), loadAddress as a hex string.
    doc = base_doc(corpus)
    t = doc['processes'][0]['threads'][0]
    m = doc['processes'][0]['modules'][0]
    t['iptTrace'] = os.path.join(corpus, t['iptTrace'])
    m['file'] = os.path.join(corpus, m['file'])
    m['loadAddress'] = '0x400000'
    path = write_bundle(os.path.join(tmp, 'abs'), doc)
    rc, out, err = run(hwtrace, 'dump', '--insn', '--tsv', path)
    report('intelpt absolute paths and string loadAddress', rc == 0 and
           out == ref, f'exit {rc}: {err.strip()}')
    # LLDB's own trace save writes null for what a trace lacks.
    doc = base_doc(corpus)
    doc['processes'][0]['threads'][0]['iptTrace'] = os.path.join(corpus, '3842849.trace')
    doc['processes'][0]['modules'][0]['file'] = os.path.join(corpus, 'a.out')
    doc.update(cpus=None, kernel=None, tscPerfZeroConversion=None)
    path = write_bundle(os.path.join(tmp, 'nulls'), doc)
    rc, out, err = run(hwtrace, 'dump', '--insn', '--tsv', path)
    report('intelpt null fields (lldb trace save) read as absent',
           rc == 0 and out == ref, f'exit {rc}: {err.strip()}')
    # Relative paths that leave the bundle directory.
    rel = os.path.relpath(corpus, os.path.join(tmp, 'rel'))
    doc = base_doc(corpus)
    doc['processes'][0]['threads'][0]['iptTrace'] = os.path.join(rel, '3842849.trace')
    doc['processes'][0]['modules'][0]['file'] = os.path.join(rel, 'a.out')
    path = write_bundle(os.path.join(tmp, 'rel'), doc)
    rc, out, err = run(hwtrace, 'dump', '--insn', '--tsv', path)
    report('intelpt paths relative to the bundle', rc == 0 and out == ref,
           f'exit {rc}: {err.strip()}')
    # No 'file': a relative systemPath is found in the bundle directory.
    d = os.path.join(tmp, 'syspath')
    os.makedirs(d)
    shutil.copy(os.path.join(corpus, 'a.out'), d)
    doc = base_doc(corpus)
    doc['processes'][0]['threads'][0]['iptTrace'] = os.path.join(corpus, '3842849.trace')
    del doc['processes'][0]['modules'][0]['file']
    path = write_bundle(d, doc)
    rc, out, err = run(hwtrace, 'dump', '--insn', '--tsv', path)
    report('intelpt relative systemPath without file', rc == 0 and out == ref,
           f'exit {rc}: {err.strip()}')
    # Not an Intel cpu.
    doc = base_doc(corpus)
    doc['cpuInfo']['vendor'] = 'AuthenticAMD'
    path = os.path.join(corpus, 'trace.json')
    d = os.path.join(tmp, 'amd')
    shutil.copytree(corpus, d)
    os.chmod(d, 0o755)
    os.chmod(os.path.join(d, 'trace.json'), 0o644)
    path = write_bundle(d, doc)
    rc, out, err = run(hwtrace, 'info', path)
    report('intelpt non-Intel vendor refused', rc == 1 and
           "'cpuInfo.vendor'" in err and 'GenuineIntel' in err,
           f'exit {rc}: {err.strip()}')
    # Per-cpu bundle: tscPerfZeroConversion is required with cpus.
    doc = base_doc(corpus)
    del doc['processes'][0]['threads'][0]['iptTrace']
    doc['cpus'] = [{'id': 0, 'iptTrace': os.path.join(corpus, '3842849.trace'),
                    'contextSwitchTrace': os.path.join(corpus, '3842849.trace')}]
    doc['processes'][0]['modules'][0]['file'] = os.path.join(corpus, 'a.out')
    path = write_bundle(os.path.join(tmp, 'percpu-noconv'), doc)
    rc, out, err = run(hwtrace, 'info', path)
    report('intelpt per-cpu bundle needs tscPerfZeroConversion', rc == 1 and
           "'tscPerfZeroConversion' is missing" in err,
           f'exit {rc}: {err.strip()}')
    for what, conv, tsc0 in CONVERSIONS:
        check_per_cpu(hwtrace, corpus, tmp, what, conv, tsc0)


def switch(out, tid, ns):
    """One PERF_RECORD_SWITCH_CPU_WIDE as LLDB stores it (sample_id_all,
    PERF_SAMPLE_TID | PERF_SAMPLE_TIME)."""
    return struct.pack('<IHHIIIIQ', 15, 0x2000 if out else 0, 32, 0, 0,
                       tid, tid, ns)


def perf_ns(conv, tsc):
    """perf's clock at a TSC (perf_event_mmap_page's formula), modulo
    2^64 as on real machines, where timeZero is above 2^63."""
    mult, shift = conv['timeMult'], conv['timeShift']
    zero = int(conv['timeZero'], 0) if isinstance(conv['timeZero'], str) \
        else conv['timeZero']
    return (zero + (tsc >> shift) * mult +
            (((tsc & ((1 << shift) - 1)) * mult) >> shift)) % 2**64


# (name, tscPerfZeroConversion, TSC of the trace's start): a toy one, and
# a Skylake server's (LLDB's multi-core test bundle) with TSCs of a machine
# up for months, whose timeZero is above 2^63 and written as a number.
CONVERSIONS = [
    ('', {'timeMult': 1, 'timeShift': 0, 'timeZero': '0x10'}, 0),
    (' (timeZero above 2^63)', {'timeMult': 1076264588, 'timeShift': 31,
                                'timeZero': 18433473881008870804},
     29000000000000000),
]


def check_per_cpu(hwtrace, corpus, tmp, what, conv, tsc0):
    """One cpu runs pt_stream(): thread 3842849 until tsc 1500 (its first
    PSB segment, tsc 1000), then thread 77 from 1600 (the second, tsc
    2000), all times after tsc0; the switch records hold perf's times of
    those under conv."""
    d = os.path.join(tmp, 'percpu' + str(tsc0))
    os.makedirs(d)
    with open(os.path.join(d, 'cpu0.trace'), 'wb') as f:
        f.write(pt_stream(tsc0))
    good = (switch(False, 3842849, perf_ns(conv, tsc0 + 900)) +
            switch(True, 3842849, perf_ns(conv, tsc0 + 1500)) +
            switch(False, 77, perf_ns(conv, tsc0 + 1600)))
    doc = base_doc(corpus)
    doc['processes'][0]['threads'] = [{'tid': 3842849}, {'tid': 77}]
    doc['processes'][0]['modules'][0]['file'] = os.path.join(corpus, 'a.out')
    doc['cpus'] = [{'id': 0, 'iptTrace': 'cpu0.trace',
                    'contextSwitchTrace': 'cpu0.switch'}]
    doc['tscPerfZeroConversion'] = conv
    path = write_bundle(d, doc)
    loop = [0x400521, 0x400525, 0x400529, 0x40052d]
    cases = [('split into threads by context switches', good, 0, None),
             ('truncated context-switch record is a clear error',
              good[:-5], 1, 'at offset 64 has size 32'),
             ('context-switch record size 0 is a clear error',
              good[:32] + b'\0' * 32, 1, 'has size 0'),
             ('context-switch times going backwards are a clear error',
              switch(False, 77, perf_ns(conv, tsc0 + 900)) +
              switch(True, 77, perf_ns(conv, tsc0 + 800)), 1,
              'back in time')]
    for name, data, want_rc, msg in cases:
        with open(os.path.join(d, 'cpu0.switch'), 'wb') as f:
            f.write(data)
        rc, out, err = run(hwtrace, 'dump', '--insn', '--tsv', path)
        if want_rc:
            report(f'intelpt per-cpu{what}: {name}', rc == 1 and msg in err and
                   'cpus[0].contextSwitchTrace' in err and
                   'Sanitizer' not in err, f'exit {rc}: {err.strip()}')
            continue
        rows = items(out)
        by = {}
        for r in rows:
            by.setdefault(r[0], []).append(r)
        a = [r[3] for r in by.get('3842849', []) if r[2] == 'insn']
        b = [r[3] for r in by.get('77', []) if r[2] == 'insn']
        report(f'intelpt per-cpu{what}: {name}', rc == 0 and
               a == [0x400518, 0x40051f, 0x400529, 0x40052d] + loop and
               b == loop * 2 and len(rows) == 16,
               f'exit {rc}: {[hex(x) for x in a]} {[hex(x) for x in b]} '
               f'{err.strip()}')


def pt_stream(tsc0=0):
    """A PT stream over a.out's loop written by hand, two PSBs with TSC
    tsc0 + 1000 and tsc0 + 2000: 8 instructions each, the second PSB in
    mid-run."""
    psb = bytes([2, 0x82] * 8)

    def fup(ip):
        return bytes([0x7d]) + ip.to_bytes(6, 'little')

    def psbplus(tsc, ip):
        return (psb + bytes([0x19]) + tsc.to_bytes(7, 'little') +
                bytes([0x99, 0x01]) + fup(ip) + bytes([2, 0x23]))
    # TNT-8: the bits after the highest set (stop) bit, first branch first.
    return (psbplus(tsc0 + 1000, 0x400518) + bytes([0x0e]) +  # taken, taken
            psbplus(tsc0 + 2000, 0x400521) + bytes([0x0c]) +  # taken, not
            fup(0x40052f) + bytes([0x01]))                   # TIP.PGD


def check_tsc(hwtrace, corpus, tmp):
    d = os.path.join(tmp, 'tsc')
    doc = base_doc(corpus)
    doc['processes'][0]['threads'][0]['iptTrace'] = 'pt.trace'
    doc['processes'][0]['modules'][0]['file'] = os.path.join(corpus, 'a.out')
    path = write_bundle(d, doc)
    with open(os.path.join(d, 'pt.trace'), 'wb') as f:
        f.write(pt_stream())
    rc, out, err = run(hwtrace, 'dump', '--insn', '--tsv', path)
    rows = items(out)
    loop = [0x400521, 0x400525, 0x400529, 0x40052d]
    want = [0x400518, 0x40051f, 0x400529, 0x40052d] + loop * 3
    got = [r[3] for r in rows if r[2] == 'insn']
    ts = [r[4][6] if len(r[4]) > 6 else '' for r in rows]
    report('intelpt TSC: two PSB segments give the run once, in order',
           rc == 0 and got == want and len(rows) == 16,
           f'exit {rc}: {[hex(a) if isinstance(a, int) else a for a in got]} {err.strip()}')
    report('intelpt TSC: timestamp column after FILE:LINE',
           ts == ['1000'] * 8 + ['2000'] * 8, f'timestamps {ts}')

def check_damage(hwtrace, corpus, tmp):
    with open(os.path.join(corpus, '3842849.trace'), 'rb') as f:
        good = f.read()
    start = next(i for i, b in enumerate(good) if b)
    d = os.path.join(tmp, 'damage')
    doc = base_doc(corpus)
    doc['processes'][0]['threads'][0]['iptTrace'] = 'pt.trace'
    doc['processes'][0]['modules'][0]['file'] = os.path.join(corpus, 'a.out')
    path = write_bundle(d, doc)
    rng = random.Random(1234)
    cases = [('truncated at %d' % n, good[:n])
             for n in range(start, len(good), 7)]
    for i in range(120):
        b = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(start, len(b))
            b[pos] ^= 1 << rng.randrange(8)
        cases.append((f'bit flips #{i}', bytes(b)))
    for i in range(40):
        b = bytearray(good)
        pos = rng.randrange(start, len(b))
        b[pos:pos + 8] = bytes(rng.randrange(256) for _ in range(8))
        cases.append((f'random bytes #{i}', bytes(b[:len(good)])))
    cases.append(('no PSB at all', bytes(b if b not in (2, 0x82) else 0
                                         for b in good)))
    failures = []
    gaps = 0
    for name, data in cases:
        with open(os.path.join(d, 'pt.trace'), 'wb') as f:
            f.write(data)
        for args in (['dump', '--insn', '--tsv', path],
                     ['dump', '--calls', path], ['info', path]):
            rc, out, err = run(hwtrace, *args)
            if sanitizer_report(err) or rc not in (0, 1) or \
               (rc == 1 and not err.startswith('hwtrace:')):
                failures.append(f'{name} {args[0]}: exit {rc}: {err.strip()[-600:]}')
            elif args[1] == '--insn' and rc == 0 and '\tgap\t' in out:
                gaps += 1
    report(f'intelpt {len(cases)} damaged traces: exit 0 or a clean error, '
           f'never a crash ({gaps} decoded with gaps)', not failures and gaps > 0,
           '; '.join(failures[:3]) or 'no damaged trace produced a gap')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    args = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    corpus = os.path.join(repo, '..', 'shared', 'corpus', 'lldb-intelpt',
                          'intelpt-trace')
    hwtrace = os.path.join(os.path.abspath(args.build), 'hwtrace')
    san = os.environ.get('HWT_SAN_BUILD')
    hostile = os.path.join(san, 'hwtrace') if san else hwtrace
    if not os.path.isfile(os.path.join(corpus, 'trace.json')):
        report('intelpt corpus', False, f'{corpus} is missing; it holds '
               'the real traces this test needs (../shared/corpus)')
        return 1
    if not os.access(hwtrace, os.X_OK):
        report('intelpt hwtrace', False, f'{hwtrace} missing: run make')
        return 1
    if not os.access(hostile, os.X_OK):
        report('intelpt sanitizer build', False,
               f'{hostile} missing: run make SAN=1 binaries')
        hostile = hwtrace
    corpus = os.path.abspath(corpus)
    tmp = tempfile.mkdtemp(prefix='hwt-intelpt-')
    try:
        for name, check, args in (
                ('good', check_good, (hwtrace, corpus)),
                ('bad', check_bad, (hwtrace, corpus)),
                ('2threads', check_2threads, (hwtrace, corpus)),
                ('variants', check_variants, (hwtrace, corpus, tmp)),
                ('tsc', check_tsc, (hwtrace, corpus, tmp)),
                ('damage', check_damage, (hostile, corpus, tmp))):
            if selected(name):
                check(*args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
