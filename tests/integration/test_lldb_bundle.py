#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""LLDB bundles both ways: `hwtrace export --lldb` against stock LLDB 22.

For build/programs/qsort and threads4, recorded by `hwtrace record`
(env -i setarch -R, as test_oracle.py):
  1. export   hwtrace export --lldb -o OUT BUNDLE
  2. insn     lldb-22 `thread trace dump instructions --raw --forwards --all
              --events K` for every thread K: the instruction addresses equal
              `hwtrace dump --insn --tsv BUNDLE` one for one, except the last
              item, which the encoder makes the stop pc (FUP + TIP.PGD there,
              docs/lldb.md). Events: synchronization points and one
              "software disabled tracing" per source gap plus the final one;
              any error item or other event fails.
  3. calls    lldb-22 `thread trace dump function-calls K`: the executable's
              own functions (its `nm` text symbols) are the same set as in
              `hwtrace dump --calls --tsv BUNDLE`
  4. back     `hwtrace dump --insn --tsv OUT` (our intel-pt reader) gives
              the same addresses, the last item again excepted
Per-cpu (`export --lldb --per-cpu --cpus 3 --slice 300`, threads4): the
bundle has cpus[] and tscPerfZeroConversion (timeZero a JSON number above
2^63) and no per-thread traces; LLDB's instructions of every thread equal
`hwtrace dump --insn` of the recording, with no error item, every thread
longer than a slice ran on more than one cpu, and `hwtrace dump --insn` of
the per-cpu bundle equals that of the per-thread export item for item. Instructions hwtrace cannot decode in the recording ("(no
code)": AVX-512 where glibc uses it, with Capstone 4) are left out of the
streams as gaps by both exports, so they are left out of the comparison.
A copy of the qsort bundle with a damaged chunk checks a gap: one
"software disabled tracing" in LLDB, a gap in the same place read back.
LLDB's own corpus bundle (../shared/corpus/lldb-intelpt) goes through the
same round trip; bad inputs (missing bundle, existing OUT, a CoreSight
snapshot, usage errors) must fail clearly and leave nothing behind.
`trace save` cannot be tested: it needs a live PT trace, and there is no PT
hardware here.

lldb-22 missing is a FAIL naming the package (scripts/install-deps.sh
installs it). Export runs the sanitizer build when HWT_SAN_BUILD names one.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from hwt_testlib import (CHOSEN, decompress_traces, dump_items, exit_status,
                         report, run_tool, sanitizer_report, selected)

LLDB = 'lldb-22'
LLDB_TIMEOUT = 600
INSN_RE = re.compile(r'^\s*(\d+): 0x([0-9a-f]+)$')
EVENT_RE = re.compile(r'^\s*(\d+): \(event\) (.*)$')
ERROR_RE = re.compile(r'^\s*(\d+): \(error\) (.*)$')
THREAD_RE = re.compile(r'^thread #(\d+): tid = (\d+)')
# Events hwt_pt_encode's streams produce (docs/bts.md): PSB+ and the
# TIP.PGD at each gap and at the end. The PGE after a gap is not an event
# of its own in LLDB 22.
KNOWN_EVENTS = ('trace synchronization point', 'software disabled tracing',
                'software enabled tracing')


def lldb(out_dir, commands):
    cmd = [LLDB, '-b', '-o', f'trace load {out_dir}/trace.json']
    for c in commands:
        cmd += ['-o', c]
    p = subprocess.run(cmd, capture_output=True, text=True, errors='replace',
                       timeout=LLDB_TIMEOUT)
    if p.returncode != 0 or 'error:' in p.stderr:
        raise RuntimeError(f'lldb-22 exit {p.returncode}: {p.stderr.strip()[:300]}')
    return p.stdout


def split_threads(text):
    """{tid: [lines]} of LLDB output, split at 'thread #K: tid = T'."""
    threads, cur = {}, None
    for line in text.splitlines():
        m = THREAD_RE.match(line)
        if m:
            cur = threads.setdefault(m.group(2), [])
        elif cur is not None:
            cur.append(line)
    return threads


# A per-cpu trace's own events: the time of each execution and the cpu.
PER_CPU_EVENTS = KNOWN_EVENTS + ('HW clock tick', 'CPU core changed')
CPU_RE = re.compile(r'CPU core changed \[new CPU=(\d+)\]')


def lldb_insns(out_dir, nthreads):
    """{tid: (addresses, events, errors)} from dump instructions."""
    text = lldb(out_dir, [f'thread trace dump instructions --raw --forwards '
                          f'--all --events {k}' for k in range(1, nthreads + 1)])
    res = {}
    for tid, lines in split_threads(text).items():
        addrs, events, errors = [], [], []
        for line in lines:
            if (m := INSN_RE.match(line)):
                addrs.append(int(m.group(2), 16))
            elif (m := EVENT_RE.match(line)):
                events.append(m.group(2))
            elif (m := ERROR_RE.match(line)):
                errors.append(m.group(2))
            elif line.strip() not in ('', 'no more data') and \
                    not line.startswith('(lldb)'):
                errors.append(f'unexpected line {line.strip()!r}')
        res[tid] = (addrs, events, errors)
    return res


def check_insns(name, src, got):
    """LLDB's items of each thread against the source history."""
    if set(src) != set(got):
        report(f'{name} lldb threads', False,
               f'source threads {sorted(src)}, lldb {sorted(got)}')
        return
    total = 0
    for tid, items in src.items():
        addrs, events, errors = got[tid]
        want = [a for a in items[:-1] if a != 'gap']
        gaps = items.count('gap')
        bad_ev = [e for e in events if not e.startswith(KNOWN_EVENTS)]
        disabled = sum(e.startswith('software disabled') for e in events)
        why = ''
        if errors:
            why = f'{len(errors)} error items, first: {errors[0]}'
        elif bad_ev:
            why = f'unexpected event {bad_ev[0]!r}'
        elif disabled != gaps + 1:
            why = f'{disabled} "disabled tracing" events for {gaps} gaps'
        elif addrs != want:
            i = next((i for i, (a, b) in enumerate(zip(addrs, want)) if a != b),
                     min(len(addrs), len(want)))
            why = (f'{len(addrs)} instructions, source {len(want)}; first '
                   f'difference at instruction {i}')
        if why:
            report(f'{name} lldb insn thread {tid}', False, why)
            return
        total += len(addrs)
    report(f'{name} lldb insn', True)
    print(f'  {name}: {len(src)} threads, {total} instructions equal '
          'one for one', flush=True)


def exe_functions(prog):
    """The executable's own function names: its text symbols, and NAME@plt
    for each function it imports (hwtrace's name for the PLT entry)."""
    p = subprocess.run(['nm', '-P', prog], capture_output=True, text=True,
                       check=True)
    own = set()
    for f in (line.split() for line in p.stdout.splitlines()):
        if len(f) >= 2 and f[1] in 'tTwW':
            own.add(f[0])
        elif len(f) >= 2 and f[1] == 'U':
            own.add(f[0].split('@')[0] + '@plt')
    return own


def lldb_function(name):
    """LLDB's name of a function-call segment in hwtrace's terms, or None.
    LLDB calls a PLT entry "symbol stub for: NAME" (hwtrace: NAME@plt) and
    code without a symbol "___lldb_unnamed_symbol_N" (the PLT header
    here; hwtrace: ??, not a function of the program's own)."""
    if name.startswith('___lldb_unnamed_symbol'):
        return None
    if name.startswith('symbol stub for: '):
        return name[len('symbol stub for: '):].split()[0] + '@plt'
    return name.split()[0]


def check_calls(name, hwtrace, bundle, out_dir, prog, nthreads):
    own = exe_functions(prog)
    exe = os.path.basename(prog)
    rc, out, err = run_tool(hwtrace, 'dump', '--calls', '--tsv', bundle)
    if rc != 0:
        report(f'{name} calls', False, f'hwtrace dump --calls: {err.strip()}')
        return
    want = {}
    for line in out.splitlines():
        f = line.split('\t')
        if f[2] in own:
            want.setdefault(f[0], set()).add(f[2])
    text = lldb(out_dir, [f'thread trace dump function-calls {k}'
                          for k in range(1, nthreads + 1)])
    got = {}
    pat = re.compile(r'^\s*' + re.escape(exe) + r'`(.*)$')
    for tid, lines in split_threads(text).items():
        names = (lldb_function(m.group(1)) for line in lines
                 if (m := pat.match(line)))
        got[tid] = {n for n in names if n}
    for tid in set(want) | set(got):
        w, g = want.get(tid, set()), got.get(tid, set())
        if w != g:
            report(f'{name} lldb calls thread {tid}', False,
                   f'only hwtrace: {sorted(w - g)}; only lldb: {sorted(g - w)}')
            return
    report(f'{name} lldb calls', True)
    print(f'  {name}: own functions {sorted(set().union(*want.values()))}',
          flush=True)


def check_round_trip(name, hwtrace, src, out_dir):
    try:
        back = dump_items(hwtrace, out_dir, gap='gap')
    except RuntimeError as e:
        report(f'{name} round trip', False, str(e))
        return
    # Gaps come back as gaps in the same places ("tracing was off").
    for tid, items in src.items():
        want = items[:-1]
        got = back.get(tid, [])
        if got != want:
            report(f'{name} round trip', False, f'thread {tid}: {len(got)} '
                   f'instructions back, {len(want)} expected')
            return
    report(f'{name} round trip', True)


def export(exporter, bundle, out_dir):
    rc, _, err = run_tool(exporter, 'export', '--lldb', '-o', out_dir, bundle)
    if rc != 0 or sanitizer_report(err):
        raise RuntimeError(f'hwtrace export: exit {rc}: {err.strip()[:300]}')


def check_program(hwtrace, exporter, build, tmp, prog_name):
    prog = os.path.join(build, 'programs', prog_name)
    bundle = os.path.join(tmp, prog_name + '.bundle')
    out_dir = os.path.join(tmp, prog_name + '.lldb')
    p = subprocess.run(['env', '-i', 'setarch', '-R', hwtrace, 'record',
                        '--backend', 'ptrace', '-o', bundle, '--', prog], capture_output=True,
                       text=True, timeout=900)
    if not os.path.isfile(os.path.join(bundle, 'trace.json')):
        report(f'{prog_name} record', False, f'exit {p.returncode}: '
               f'{p.stderr.strip()[:300]}')
        return
    try:
        export(exporter, bundle, out_dir)
        report(f'{prog_name} export', True)
        src = dump_items(hwtrace, bundle, gap='gap')
        check_insns(prog_name, src, lldb_insns(out_dir, len(src)))
        check_calls(prog_name, hwtrace, bundle, out_dir, prog, len(src))
        check_round_trip(prog_name, hwtrace, src, out_dir)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        report(f'{prog_name} lldb', False, str(e))
    # Self-contained: every module is a copy inside the bundle.
    mods = glob.glob(os.path.join(out_dir, 'modules', '**', '*'),
                     recursive=True)
    report(f'{prog_name} modules copied', any(os.path.isfile(m) for m in mods),
           f'no module files under {out_dir}/modules')


def check_per_cpu(hwtrace, exporter, tmp, prog_name):
    """The recording of prog_name (check_program's) as a per-cpu bundle."""
    bundle = os.path.join(tmp, prog_name + '.bundle')
    per_thread = os.path.join(tmp, prog_name + '.lldb')
    out_dir = os.path.join(tmp, prog_name + '.cpus')
    name = f'{prog_name} per-cpu'
    if not os.path.isdir(per_thread):
        report(name, False, 'no recording and per-thread export to start '
               'from')
        return
    rc, _, err = run_tool(exporter, 'export', '--lldb', '--per-cpu',
                          '--cpus', '3', '--slice', '300', '-o', out_dir,
                          bundle)
    if rc != 0 or sanitizer_report(err):
        report(f'{name} export', False, f'exit {rc}: {err.strip()[:300]}')
        return
    with open(os.path.join(out_dir, 'trace.json')) as f:
        doc = json.load(f)
    zero = doc.get('tscPerfZeroConversion', {}).get('timeZero')
    report(f'{name} bundle shape',
           len(doc.get('cpus', [])) == 3 and isinstance(zero, int) and
           zero >= 2**63 and all('iptTrace' not in t for t in
                                 doc['processes'][0]['threads']),
           f'cpus {doc.get("cpus")}, timeZero {zero!r}')
    try:
        src = dump_items(hwtrace, bundle, gap='gap')
        got = lldb_insns(out_dir, len(src))
        back = dump_items(hwtrace, out_dir, gap='gap')
        back_thread = dump_items(hwtrace, per_thread, gap='gap')
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        report(f'{name} lldb', False, str(e))
        return
    if set(got) != set(src):
        report(f'{name} lldb threads', False,
               f'source threads {sorted(src)}, lldb {sorted(got)}')
        return
    total = 0
    for tid, items in src.items():
        want = [a for a in items[:-1] if a != 'gap']
        addrs, events, errors = got[tid]
        bad_ev = [e for e in events if not e.startswith(PER_CPU_EVENTS)]
        cpus = {m.group(1) for e in events if (m := CPU_RE.match(e))}
        why = ''
        if errors:
            why = f'{len(errors)} error items, first: {errors[0]}'
        elif bad_ev:
            why = f'unexpected event {bad_ev[0]!r}'
        elif addrs != want:
            i = next((i for i, (a, b) in enumerate(zip(addrs, want))
                      if a != b), min(len(addrs), len(want)))
            why = (f'{len(addrs)} instructions, source {len(want)}; first '
                   f'difference at instruction {i}')
        elif len(want) > 300 and len(cpus) < 2:
            why = f'{len(want)} instructions all on cpu {cpus}'
        if why:
            report(f'{name} lldb insn thread {tid}', False, why)
            return
        total += len(addrs)
    report(f'{name} lldb insn', True)
    print(f'  {name}: {len(src)} threads, {total} instructions equal one '
          'for one', flush=True)
    diff = [tid for tid in src if back.get(tid) != back_thread.get(tid) or
            [a for a in back.get(tid, []) if a != 'gap'] !=
            [a for a in src[tid][:-1] if a != 'gap']]
    report(f'{name} round trip', not diff,
           f'threads {diff}: hwtrace reads back other histories than '
           'from the per-thread export')


def check_gap(hwtrace, exporter, tmp):
    """A history with a gap: a copy of the qsort bundle with a bad record
    tag in its second chunk (docs/swtrace.md: a gap to the chunk's end)."""
    good = os.path.join(tmp, 'qsort.bundle')
    bundle = os.path.join(tmp, 'gap.bundle')
    out_dir = os.path.join(tmp, 'gap.lldb')
    if not os.path.isdir(good):
        report('gap export', False, 'no qsort bundle to damage')
        return
    shutil.copytree(good, bundle)
    decompress_traces(bundle)
    trace = glob.glob(os.path.join(bundle, 'threads', '*.hwtsw'))[0]
    with open(trace, 'r+b') as f:
        data = f.read()
        second = data.find(b'HWTC', 40)
        f.seek(second + 45)     # a record tag in its payload
        f.write(b'\xff')
    try:
        export(exporter, bundle, out_dir)
        src = dump_items(hwtrace, bundle, gap='gap')
        gaps = sum(v.count('gap') for v in src.values())
        if not gaps:
            report('gap source', False, 'the damaged copy has no gap')
            return
        check_insns('gap', src, lldb_insns(out_dir, len(src)))
        check_round_trip('gap', hwtrace, src, out_dir)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        report('gap export', False, str(e))


def check_corpus(hwtrace, exporter, repo, tmp):
    corpus = os.path.join(repo, '..', 'shared', 'corpus', 'lldb-intelpt',
                          'intelpt-trace', 'trace.json')
    if not os.path.isfile(corpus):
        report('corpus round trip', False, f'{corpus} is missing (../shared/corpus)')
        return
    out_dir = os.path.join(tmp, 'corpus.lldb')
    try:
        export(exporter, corpus, out_dir)
        src = dump_items(hwtrace, corpus, gap='gap')
        check_insns('corpus', src, lldb_insns(out_dir, len(src)))
        check_round_trip('corpus', hwtrace, src, out_dir)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        report('corpus export', False, str(e))


def check_bad(exporter, repo, tmp, good):
    def case(name, args, want_rc, want_msg):
        rc, _, err = run_tool(exporter, 'export', *args)
        ok = rc == want_rc and want_msg in err and not sanitizer_report(err)
        report(f'bad input {name}', ok, f'exit {rc}, stderr {err.strip()!r}')

    out = os.path.join(tmp, 'bad.out')
    case('missing bundle', ['--lldb', '-o', out, os.path.join(tmp, 'nope')],
         1, 'No such file or directory')
    os.mkdir(out)
    case('existing outdir', ['--lldb', '-o', out, good], 1, 'already exists')
    report('bad input existing outdir untouched', os.listdir(out) == [],
           f'{out} changed: {os.listdir(out)}')
    os.rmdir(out)
    snap = os.path.join(repo, '..', 'shared', 'corpus', 'opencsd',
                        'snapshots', 'Snowball')
    case('coresight snapshot', ['--lldb', '-o', out, snap], 1, 'not x86-64')
    leftovers = glob.glob(out + '*')
    report('bad input leaves nothing', not leftovers, f'left {leftovers}')
    case('no format', ['-o', out, good], 2, 'give the format: --lldb')
    case('no outdir', ['--lldb', good], 2, '-o OUTDIR')
    case('--cpus without --per-cpu', ['--lldb', '--cpus', '2', '-o', out,
                                      good], 2, 'are for --per-cpu')
    case('--cpus 0', ['--lldb', '--per-cpu', '--cpus', '0', '-o', out, good],
         2, '--cpus takes 1 to 4096')
    case('--slice not a number', ['--lldb', '--per-cpu', '--slice', 'x',
                                  '-o', out, good], 2, "not 'x'")
    report('bad input per-cpu leaves nothing', not glob.glob(out + '*'),
           f'left {glob.glob(out + "*")}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    args = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    build = os.path.abspath(args.build)
    hwtrace = os.path.join(build, 'hwtrace')
    san = os.environ.get('HWT_SAN_BUILD')
    exporter = os.path.join(san, 'hwtrace') if san else hwtrace
    if not shutil.which(LLDB):
        report('lldb-22', False, 'lldb-22 is not installed: install the '
               'Debian package lldb-22 (scripts/install-deps.sh does)')
        return exit_status()
    for path in (hwtrace, exporter):
        if not os.access(path, os.X_OK):
            report('hwtrace binaries', False, f'{path} missing: run make '
                   '(and make SAN=1 binaries)')
            return exit_status()
    tmp = tempfile.mkdtemp(prefix='hwt-lldb-')
    try:
        # The gap and bad-input checks damage copies of qsort's bundle.
        needs_qsort = selected('gap') | selected('bad')
        for prog in ('qsort', 'threads4'):
            if selected(prog) or (prog == 'qsort' and needs_qsort):
                check_program(hwtrace, exporter, build, tmp, prog)
        if selected('per-cpu'):
            check_per_cpu(hwtrace, exporter, tmp, 'threads4')
        if 'gap' in CHOSEN:
            check_gap(hwtrace, exporter, tmp)
        if selected('corpus'):
            check_corpus(hwtrace, exporter, repo, tmp)
        if 'bad' in CHOSEN:
            check_bad(exporter, repo, tmp,
                      os.path.join(tmp, 'qsort.bundle'))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
