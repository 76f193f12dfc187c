#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Arm CoreSight snapshots (ETMv3, PTM, ETMv4, ETE) against OpenCSD's own
trc_pkt_lister output.

For every snapshot in ../shared/corpus/opencsd/snapshots, per trace ID,
the executed address ranges hwtrace reports (`dump --ranges --tsv`: the
decoded blocks as the history expands them into Capstone-decoded
instructions, so END is the last instruction's address plus its length)
must equal the INSTR_RANGE lines of expected/*_NAME.ppl.xz: the same
sequence of (start, end exclusive, instruction count) and the same
instruction set. `dump --insn --tsv` must list exactly that many
instructions, all decodable. ETE snapshots with decode/fulldecode.txt (from
the OpenCSD authors) must also match its ranges. A snapshot of software
messages only (STM) must say it has no instruction trace. Sources hwtrace
does not decode (ITM, unknown device types) added to real snapshots leave
the decoded ones as they were and are listed by `info` as skipped.

Damaged copies (truncated or bit-flipped trace buffers, broken ini lines)
must give gaps or a clear error, never a crash; the sanitizer build runs
them when $HWT_SAN_BUILD is set.
"""
import argparse
import glob
import lzma
import os
import random
import re
import shutil
import sys
import tempfile

from hwt_testlib import exit_status, report, sanitizer_report
from hwt_testlib import run_tool


def run(binary, *args):
    return run_tool(binary, *args, timeout=600)


RANGE = re.compile(r'ID:([0-9a-fA-F]+);.*OCSD_GEN_TRC_ELEM_INSTR_RANGE\(exec '
                   r'range=0x([0-9a-fA-F]+):\[0x([0-9a-fA-F]+)\] num_i\((\d+)\)'
                   r'.*?\(ISA=(\w+)\)')





def lister_ranges(text):
    """{trace id: [(start, end, n, isa)]} from trc_pkt_lister output."""
    out = {}
    for line in text.splitlines():
        m = RANGE.search(line)
        if m:
            out.setdefault(int(m.group(1), 16), []).append(
                (int(m.group(2), 16), int(m.group(3), 16), int(m.group(4)),
                 m.group(5)))
    return out


def hwtrace_ranges(text):
    """{trace id: [(start, end, n, isa)]} and gap count from dump --ranges."""
    out, gaps = {}, 0
    for line in text.splitlines():
        f = line.split('\t')
        if len(f) >= 2 and f[1] == 'gap':
            gaps += 1
            continue
        if len(f) != 5:
            raise ValueError(f'bad --ranges line {line!r}')
        out.setdefault(int(f[0], 16), []).append(
            (int(f[1], 16), int(f[2], 16), int(f[3]), f[4]))
    return out, gaps


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return (f'range {i}: hwtrace {tuple(map(hex, x[:2])) + x[2:]} '
                    f'lister {tuple(map(hex, y[:2])) + y[2:]}')
    return f'hwtrace has {len(a)} ranges, the lister {len(b)}'


def check_snapshot(hwtrace, corpus, name):
    snap = os.path.join(corpus, 'snapshots', name)
    exp = glob.glob(os.path.join(corpus, 'expected', f'*_{name}.ppl.xz'))
    if len(exp) != 1:
        report(f'{name} expected output', False,
               f'{len(exp)} files match expected/*_{name}.ppl.xz')
        return
    with lzma.open(exp[0], 'rt', errors='replace') as f:
        want = lister_ranges(f.read())
    rc, out, err = run(hwtrace, 'dump', '--ranges', '--tsv', snap)
    if rc != 0 or sanitizer_report(err):
        report(f'{name} ranges', False, f'exit {rc}: {err.strip()[-800:]}')
        return
    got, gaps = hwtrace_ranges(out)
    if not want:
        # No instruction trace (STM) or no code reachable (all ADDR_NACC).
        ok = not got
        if ok and 'stm' in name:
            ok = 'no instruction trace' in err
        report(f'{name} ranges (none expected)', ok,
               f'hwtrace reports {sum(map(len, got.values()))} ranges; '
               f'stderr {err.strip()!r}')
        return
    for tid in sorted(set(want) | set(got)):
        w = [r[:3] for r in want.get(tid, [])]
        g = [r[:3] for r in got.get(tid, [])]
        isa_ok = [r[3] for r in want.get(tid, [])] == \
            [r[3] for r in got.get(tid, [])]
        report(f'{name} ID 0x{tid:x}: {len(w)} ranges match the lister',
               w == g and isa_ok,
               first_diff(g, w) if w != g else 'instruction sets differ')
    # The instruction history expands every range into decoded
    # instructions: as many as the ranges count, none without code.
    rc, out, err = run(hwtrace, 'dump', '--insn', '--tsv', snap)
    insns = [l for l in out.splitlines() if '\tgap\t' not in l]
    want_n = sum(r[2] for rs in want.values() for r in rs)
    bad = [l for l in insns if '(no code)' in l]
    report(f'{name} instruction history ({want_n} instructions)',
           rc == 0 and len(insns) == want_n and not bad,
           f'exit {rc}, {len(insns)} instructions, {len(bad)} without code; '
           f'{err.strip()[-300:]}')
    return got


def check_fulldecode(corpus, name, got):
    """ETE snapshots: the OpenCSD authors' decode/fulldecode.txt."""
    path = os.path.join(corpus, 'snapshots', name, 'decode', 'fulldecode.txt')
    if not os.path.exists(path) or got is None:
        return
    with open(path, errors='replace') as f:
        want = lister_ranges(f.read())
    # That lister printed this single source under ID 0: compare streams.
    w = [r[:3] for rs in want.values() for r in rs]
    g = [r[:3] for rs in got.values() for r in rs]
    report(f'{name} matches decode/fulldecode.txt ({len(w)} ranges)', w == g,
           first_diff(g, w))


def damaged_copies(hwtrace, corpus, tmp):
    rng = random.Random(1234)
    for name in ('Snowball', 'juno-uname-001', 'trace_cov_a15', 'ete_mem',
                 'a57_single_step', 'trace_file_vmid'):
        src = os.path.join(corpus, 'snapshots', name)
        for kind in ('truncated', 'bitflips', 'zeroed-head'):
            d = os.path.join(tmp, f'{name}-{kind}')
            shutil.copytree(src, d)
            for root, _, files in os.walk(d):
                os.chmod(root, 0o755)
                for fn in files:
                    os.chmod(os.path.join(root, fn), 0o644)
            for tb in glob.glob(os.path.join(d, '*.bin')):
                data = bytearray(open(tb, 'rb').read())
                if 'mem' in os.path.basename(tb) or len(data) > 200000:
                    continue   # memory dumps, not trace
                if kind == 'truncated':
                    data = data[:len(data) * 2 // 3 + 1]
                elif kind == 'bitflips':
                    for _ in range(max(1, len(data) // 64)):
                        i = rng.randrange(len(data))
                        data[i] ^= 1 << rng.randrange(8)
                else:
                    data[:min(64, len(data))] = bytes(min(64, len(data)))
                open(tb, 'wb').write(data)
            for what in ('--ranges', '--insn', '--calls'):
                rc, out, err = run(hwtrace, 'dump', what, '--tsv', d)
                ok = (not sanitizer_report(err) and
                      (rc == 0 or (rc == 1 and err.startswith('hwtrace:'))))
                report(f'{name} {kind} {what}: gaps or a clear error', ok,
                       f'exit {rc}: {err.strip()[-800:]}')


def broken_ini(hwtrace, corpus, tmp):
    src = os.path.join(corpus, 'snapshots', 'Snowball')
    cases = [
        ('device_2.ini', lambda t: t.replace('[regs]', '[regs', 1),
         'device_2.ini:'),
        ('trace.ini', lambda t: t.replace('format=coresight', 'formatcoresight'),
         'trace.ini:'),
        ('device_2.ini', lambda t: t.replace('ETMTRACEIDR(0x080)=0x00000010',
                                             'ETMTRACEIDR(0x080)=0xzz'),
         'device_2.ini:'),
        ('snapshot.ini', lambda t: t + 'x' * 5000 + '\n', 'snapshot.ini:'),
        ('snapshot.ini', lambda t: t.replace('device3=device_3.ini',
                                             'device3=../../etc/passwd'),
         'inside the snapshot directory'),
        ('trace.ini', lambda t: t.replace('file=cstrace.bin', 'file=nope.bin'),
         'nope.bin'),
    ]
    for i, (fn, edit, needle) in enumerate(cases):
        d = os.path.join(tmp, f'ini-{i}')
        shutil.copytree(src, d)
        for f in os.listdir(d):
            os.chmod(os.path.join(d, f), 0o644)
        os.chmod(d, 0o755)
        p = os.path.join(d, fn)
        with open(p) as f:
            text = edit(f.read())
        with open(p, 'w') as f:
            f.write(text)
        rc, out, err = run(hwtrace, 'dump', '--ranges', '--tsv', d)
        report(f'broken {fn} case {i}: clear error',
               rc == 1 and err.startswith('hwtrace:') and needle in err and
               not sanitizer_report(err),
               f'exit {rc}: {err.strip()[-500:]!r} (want {needle!r})')


def copy_snapshot(src, dst):
    shutil.copytree(src, dst)
    for root, _, files in os.walk(dst):
        os.chmod(root, 0o755)
        for fn in files:
            os.chmod(os.path.join(root, fn), 0o644)


def add_device(snap, name, dev_type, regs):
    """A source device NAME of type DEV_TYPE sharing the snapshot's first
    trace buffer, written the way OpenCSD's own snapshots write one (its
    itm_only_csformat: [device] name, class, type; [regs])."""
    ini = os.path.join(snap, f'{name}.ini')
    with open(ini, 'w') as f:
        f.write(f'[device]\nname={name}\nclass=trace_source\ntype={dev_type}\n\n'
                f'[regs]\n{regs}\n')
    with open(os.path.join(snap, 'snapshot.ini')) as f:
        text = f.read()
    text = text.replace('[device_list]\n', f'[device_list]\n{name}={name}.ini\n', 1)
    with open(os.path.join(snap, 'snapshot.ini'), 'w') as f:
        f.write(text)
    with open(os.path.join(snap, 'trace.ini')) as f:
        text = f.read()
    buf = re.search(r'^name=(\S+)', text, re.M).group(1)
    text = text.replace('[source_buffers]\n', f'[source_buffers]\n{name}={buf}\n', 1)
    with open(os.path.join(snap, 'trace.ini'), 'w') as f:
        f.write(text)


def mixed_sources(hwtrace, corpus, tmp):
    """Real snapshots with sources hwtrace does not decode among the ones
    it does (an ITM, a device type nobody knows): the decodable sources
    give exactly what they give alone, and info lists the others as
    skipped with the reason. A snapshot with nothing decodable says so."""
    for name in ('Snowball', 'juno-uname-001'):
        src = os.path.join(corpus, 'snapshots', name)
        d = os.path.join(tmp, f'{name}-mixed')
        copy_snapshot(src, d)
        add_device(d, 'ITM_0', 'ITM', 'ITMTCR(0xE80)=0x00140000')
        add_device(d, 'XYZ_0', 'XYZ9.9', 'XYZCR(0x000)=0x1')
        for what in ('--ranges', '--insn'):
            rc0, want, err0 = run(hwtrace, 'dump', what, '--tsv', src)
            rc, got, err = run(hwtrace, 'dump', what, '--tsv', d)
            report(f'{name} with ITM and unknown sources: dump {what} is the '
                   'decodable sources\' alone', rc == rc0 == 0 and got == want
                   and want and not sanitizer_report(err),
                   f'exit {rc} (alone {rc0}), {len(got.splitlines())} lines, '
                   f'alone {len(want.splitlines())}: {err.strip()[-300:]}')
        rc, out, err = run(hwtrace, 'info', d)
        skipped = [l.strip() for l in out.splitlines() if ': skipped: ' in l]
        report(f'{name} with ITM and unknown sources: info lists both as '
               'skipped with the reason', rc == 0 and len(skipped) == 2 and
               any(l.startswith('ITM_0: skipped:') and 'no instruction trace'
                   in l for l in skipped) and
               any(l.startswith('XYZ_0: skipped:') and "'XYZ9.9'" in l
                   for l in skipped), f'exit {rc}: {skipped} {err.strip()}')
    d = os.path.join(tmp, 'itm-only')
    copy_snapshot(os.path.join(corpus, 'snapshots', 'stm_only-juno'), d)
    add_device(d, 'ITM_0', 'ITM', 'ITMTCR(0xE80)=0x00140000')
    rc, out, err = run(hwtrace, 'dump', '--insn', d)
    report('STM and ITM only: dump says no instruction trace and why',
           rc == 0 and not out and 'no instruction trace' in err and
           'STM' in err, f'exit {rc}: {err.strip()!r}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    corpus = os.path.join(repo, '..', 'shared', 'corpus', 'opencsd')
    hwtrace = os.path.join(os.path.abspath(args.build), 'hwtrace')
    san = os.environ.get('HWT_SAN_BUILD')
    hostile = os.path.join(san, 'hwtrace') if san and \
        os.access(os.path.join(san, 'hwtrace'), os.X_OK) else hwtrace
    snaps = os.path.join(corpus, 'snapshots')
    if not os.path.isdir(snaps):
        report('corpus', False, f'{snaps} is missing; the CoreSight corpus '
               'belongs in ../shared/corpus/opencsd')
        return 1
    for name in sorted(os.listdir(snaps)):
        got = check_snapshot(hwtrace, corpus, name)
        check_fulldecode(corpus, name, got)
    # Thread filtering by trace ID, written as the TID column shows it.
    rc, out, err = run(hwtrace, 'dump', '--ranges', '--tsv', '--thread',
                       '0x11', os.path.join(snaps, 'Snowball'))
    tids = {l.split('\t')[0] for l in out.splitlines()}
    report('--thread 0x11 picks one trace ID', rc == 0 and tids == {'0x11'},
           f'exit {rc}, TIDs {sorted(tids)}; {err.strip()}')
    # Instruction classes drive the call history: in trace_cov_a15 (A32)
    # main calls a function three times with bl, which returns with
    # pop {r4, pc}; main itself returns with pop {pc}.
    rc, out, err = run(hwtrace, 'dump', '--calls', '--tsv',
                       os.path.join(snaps, 'trace_cov_a15'))
    levels = [int(l.split('\t')[1]) for l in out.splitlines()
              if l.split('\t')[2:3] != ['[gap]']]
    report('A32 calls and returns nest in the call history',
           rc == 0 and levels == [0, 0, 1, 0, 1, 0, 1, 0, 1, 0],
           f'exit {rc}, levels {levels}; {err.strip()}')
    # OpenCSD reports ranges in ete_ip that run straight through about
    # 2100 A32 'bx lr': returns that did not transfer. Counted as returns
    # they would start the call history some 2170 levels deep.
    rc, out, err = run(hwtrace, 'dump', '--calls', '--tsv',
                       os.path.join(snaps, 'ete_ip'))
    levels = [int(l.split('\t')[1]) for l in out.splitlines()]
    report('returns inside a straight range open no call segment',
           rc == 0 and levels and min(levels) == 0 and max(levels) <= 32,
           f'exit {rc}, levels {min(levels, default=None)}..'
           f'{max(levels, default=None)}; {err.strip()}')
    rc, out, err = run(hwtrace, 'info', os.path.join(snaps, 'Snowball'))
    report('info lists both PTM sources', rc == 0 and 'thread 0x10' in out and
           'thread 0x11' in out and 'PTM' in out, f'exit {rc}: {err.strip()}')
    tmp = tempfile.mkdtemp(prefix='hwt-cs-')
    try:
        damaged_copies(hostile, corpus, tmp)
        broken_ini(hostile, corpus, tmp)
        mixed_sources(hostile, corpus, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
