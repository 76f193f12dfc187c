#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A bounded run of every libFuzzer target in build-fuzz/ (make fuzz).

Seeds come from real data, made at run time into build-fuzz/seeds/: a
program recorded by hwtrace record (its hwt-sw trace and trace.json), the
LLDB intel-pt trace, the OpenCSD trace buffers and snapshot directories
in ../shared/corpus, and
BTS walks the BTS target writes itself. New inputs a run finds stay in
build-fuzz/corpus/TARGET, so later runs start where earlier ones ended.
A target PASSes when it runs its time without a finding; a crash, leak,
timeout or out-of-memory is a FAIL naming the reproducer file, wherever
it crashed: OpenCSD runs in a child process of its own
(replay/etm_child.c), so even a crash inside that library is a gap in
the history and never a crash of the fuzzer. Before that, every target
runs once over its committed regression inputs, tests/fuzz/regress/TARGET/
(inputs that once crashed it), so they are checked on every run.
docs/fuzzing.md says how to run longer.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

from hwt_testlib import parse_args, selected, selection_error

SECONDS = int(os.environ.get('HWT_FUZZ_SECONDS', '20'))
PARALLEL = 2
HERE = os.path.dirname(os.path.abspath(__file__))
# Every target in tests/fuzz/; one without special seeds or environment
# below writes its own seeds when run with HWT_FUZZ_SEEDS.
TARGETS = sorted(os.path.basename(p)[:-2] for p in glob.glob(
    os.path.join(HERE, '..', 'fuzz', 'fuzz_*.c')))


COUNTS = {'passed': 0, 'failed': 0, 'skipped': 0}


def report(name, ok, why=''):
    print(f'PASS {name}' if ok else f'FAIL {name}: {why}', flush=True)
    COUNTS['passed' if ok else 'failed'] += 1
    return ok


def opencsd_buffers(corpus):
    """Trace buffers named by the snapshots' trace.ini files."""
    out = []
    for ini in sorted(glob.glob(os.path.join(corpus, 'opencsd', 'snapshots',
                                             '*', 'trace.ini'))):
        with open(ini) as f:
            for line in f:
                m = re.match(r'\s*file\s*=\s*(\S+)', line)
                if m:
                    path = os.path.join(os.path.dirname(ini), m.group(1))
                    if os.path.isfile(path):
                        out.append(path)
    return out


def prepare(root, build, fuzz, corpus):
    """Seeds and environments per target: {target: (env, seed_dir)}."""
    work = os.path.join(fuzz, 'work')
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rec = os.path.join(work, 'rec')
    p = subprocess.run([os.path.join(build, 'hwtrace'), 'record', '-q', '-o',
                        rec, '--', os.path.join(build, 'programs', 'signal')],
                       capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise RuntimeError(f'hwtrace record failed: {p.stderr.strip()}')
    with open(os.path.join(rec, 'trace.json')) as f:
        doc = json.load(f)
    sw_trace = os.path.join(rec, doc['processes'][0]['threads'][0]['swTrace'])

    # The bundle target's directory: the traces its seeds name.
    bdir = os.path.join(work, 'bundle-dir')
    os.makedirs(bdir)
    shutil.copy(sw_trace, os.path.join(bdir, 't.trace'))
    doc['processes'][0]['threads'][0]['swTrace'] = 't.trace'
    for m in doc['processes'][0].get('modules', []):
        m.pop('file', None)
    bundle_seeds = [os.path.join(work, 'sw-trace.json')]
    with open(bundle_seeds[0], 'w') as f:
        json.dump(doc, f, indent=1)
    lldb = os.path.join(corpus, 'lldb-intelpt', 'intelpt-trace')
    if os.path.isdir(lldb):
        for name in os.listdir(lldb):
            shutil.copy(os.path.join(lldb, name), bdir)
            os.chmod(os.path.join(bdir, name), 0o644)
        bundle_seeds += sorted(glob.glob(os.path.join(lldb, 'trace*.json')))

    decode_files = [f'hwtrace-sw={sw_trace}']
    image = [rec]
    if os.path.isdir(lldb):
        decode_files.append(f'intel-pt={os.path.join(lldb, "3842849.trace")}')
        image.append(f'{os.path.join(lldb, "a.out")}@0x400000')
    decode_files += [f'coresight={b}' for b in opencsd_buffers(corpus)]

    base = dict(os.environ)
    vg_tool = os.path.join(build, 'valgrind', 'hwtrace-amd64-linux')
    envs = {
        'fuzz_decode': dict(base, HWT_FUZZ_IMAGE=':'.join(image),
                            HWT_FUZZ_SEED_FILES=':'.join(decode_files)),
        'fuzz_bts': dict(base),
        'fuzz_swtrace': dict(base, HWT_FUZZ_IMAGE=rec),
        'fuzz_bundle': dict(base, HWT_FUZZ_BUNDLE_DIR=bdir,
                            HWT_FUZZ_SEED_FILES=':'.join(bundle_seeds)),
        'fuzz_snapshot': dict(base, HWT_FUZZ_SNAPSHOTS=os.path.join(
            corpus, 'opencsd', 'snapshots')),
    }
    out = {}
    for t in TARGETS:
        envs.setdefault(t, dict(base))
        seeds = os.path.join(fuzz, 'seeds', t)
        shutil.rmtree(seeds, ignore_errors=True)
        os.makedirs(seeds)
        if t == 'fuzz_vgstream' and os.access(vg_tool, os.X_OK):
            # The tool's own streams of real programs, cut to 64 KiB,
            # after the piece-size byte.
            for prog in ('signal', 'threads4'):
                out_file = os.path.join(work, f'{prog}.stream')
                subprocess.run(['valgrind', '--tool=hwtrace', '-q',
                                f'--hwt-out={out_file}',
                                os.path.join(build, 'programs', prog)],
                               env=dict(base, VALGRIND_LIB=os.path.dirname(
                                   vg_tool)), timeout=300, check=True,
                               capture_output=True)
                with open(out_file, 'rb') as f:
                    data = f.read()
                with open(os.path.join(seeds, f'seed-{prog}'), 'wb') as f:
                    f.write(b'\x3f' + data[:65536])
        elif t == 'fuzz_swtrace':
            with open(sw_trace, 'rb') as f:
                data = f.read()
            for i, n in enumerate((64, 1024, 8192)):
                with open(os.path.join(seeds, f'seed-sw-{i}'), 'wb') as f:
                    f.write(data[:n])
            # And a trace of a table and runs, which it writes itself.
            subprocess.run([os.path.join(fuzz, t)], timeout=120, check=True,
                           env=dict(envs[t], HWT_FUZZ_SEEDS=seeds),
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        else:
            subprocess.run([os.path.join(fuzz, t)], timeout=120, check=True,
                           env=dict(envs[t], HWT_FUZZ_SEEDS=seeds),
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        out[t] = (envs[t], seeds)
    return out


# Targets seeded from ../shared/corpus: what they find is made of other
# people's trace data, which stays out of the repository.
NOT_KEPT = {'fuzz_decode', 'fuzz_snapshot', 'fuzz_bundle'}


def kept(target):
    """The corpus kept in the repository for target (make fuzz-long)."""
    return os.path.join(HERE, '..', 'fuzz', 'corpus', target)


def start(fuzz, target, env, seeds):
    corpus = os.path.join(fuzz, 'corpus', target)
    arts = os.path.join(fuzz, 'artifacts')
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(arts, exist_ok=True)
    log = open(os.path.join(fuzz, f'{target}.log'), 'w+')
    # New inputs go to the first directory only: the kept corpus is read.
    cmd = [os.path.join(fuzz, target), f'-max_total_time={SECONDS}',
           '-timeout=25', '-rss_limit_mb=3072', '-max_len=16384',
           '-print_final_stats=1', f'-artifact_prefix={arts}/{target}-',
           corpus, seeds] + ([kept(target)] if os.path.isdir(kept(target))
                             else [])
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                            env=env, cwd=fuzz), log


def finish(target, proc, log, started):
    try:
        rc = proc.wait(timeout=SECONDS + 120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        rc = None
    log.seek(0)
    text = log.read()
    log.close()
    runs = re.findall(r'stat::number_of_executed_units: *(\d+)', text)
    cov = re.findall(r'cov: (\d+) ft: (\d+) corp: (\d+)', text)
    # A slow unit (libFuzzer writes one past -report_slow_units and goes
    # on, exit status 0) is not a finding: on a loaded machine any input
    # may be slow. Hangs past -timeout still fail.
    art = re.search(r'Test unit written to (?!\S*slow-unit-)(\S+)', text)
    err = re.search(r'^(==\d+==ERROR.*|SUMMARY: .*|.*runtime error: .*)$',
                    text, re.M)
    if rc == 0 and not art:
        stats = f'{runs[-1]} runs' if runs else 'ran'
        if cov:
            stats += f', coverage {cov[-1][0]} edges, corpus {cov[-1][2]}'
        print(f'  | {target}: {stats} in {time.monotonic() - started:.0f}s')
        return report(f'fuzz {target}', True)
    why = 'timed out' if rc is None else f'exit status {rc}'
    if err:
        why += f': {err.group(1).strip()}'
    if art:
        why += f'; reproduce with build-fuzz/{target} {art.group(1)}'
    else:
        why += f'; log in build-fuzz/{target}.log'
    return report(f'fuzz {target}', False, why)


def keep(fuzz, target, env):
    """HWT_FUZZ_KEEP (make fuzz-long): merge what this run found that
    covers new code into the kept corpus, which stays minimal."""
    dest = kept(target)
    os.makedirs(dest, exist_ok=True)
    p = subprocess.run([os.path.join(fuzz, target), '-merge=1',
                        '-max_len=16384', '-timeout=25', '-rss_limit_mb=3072',
                        dest, os.path.join(fuzz, 'corpus', target)],
                       capture_output=True, text=True, env=env, cwd=fuzz,
                       timeout=3600)
    added = re.findall(r'MERGE-OUTER: (\d+) new files', p.stderr)
    print(f'  | {target}: kept corpus {len(os.listdir(dest))} inputs'
          f' ({added[-1] if added else "?"} new)')
    return report(f'fuzz {target} corpus kept', p.returncode == 0,
                  p.stderr[-400:])


def regress(fuzz, target, env):
    """Run target once over each of its committed regression inputs."""
    inputs = sorted(glob.glob(os.path.join(HERE, '..', 'fuzz', 'regress',
                                           target, '*')))
    if not inputs:
        return True
    try:
        p = subprocess.run([os.path.join(fuzz, target), '-timeout=25',
                            '-rss_limit_mb=3072'] + inputs,
                           capture_output=True, text=True, env=env, cwd=fuzz,
                           timeout=300)
    except subprocess.TimeoutExpired:
        return report(f'fuzz {target} regression inputs', False,
                      'timed out after 300 s')
    if p.returncode == 0:
        print(f'  | {target}: {len(inputs)} regression inputs')
        return report(f'fuzz {target} regression inputs', True)
    err = re.search(r'^(==\d+==ERROR.*|SUMMARY: .*|.*runtime error: .*)$',
                    p.stderr, re.M)
    ran = re.findall(r'^Running: (\S+)$', p.stderr, re.M)
    return report(f'fuzz {target} regression inputs', False,
                  f'exit status {p.returncode}'
                  f'{": " + err.group(1).strip() if err else ""}'
                  f'{"; on " + ran[-1] if ran else ""}')


def closing(rc):
    line = f"{COUNTS['passed']} passed, {COUNTS['failed']} failed"
    if COUNTS['skipped']:
        line += f", {COUNTS['skipped']} skipped"
    print(line, flush=True)
    return rc


def main():
    args = parse_args()
    build = args.build
    root = os.path.dirname(build)
    fuzz = os.path.join(root, 'build-fuzz')
    corpus = os.path.abspath(os.path.join(root, '..', 'shared', 'corpus'))
    TARGETS[:] = [t for t in TARGETS if selected(t)]
    if selection_error():
        report('select', False, selection_error())
        return closing(1)
    missing = [t for t in TARGETS if not os.access(os.path.join(fuzz, t),
                                                     os.X_OK)]
    if missing:
        for t in missing:
            print(f'SKIP fuzz {t}: not built; run make fuzz (needs clang '
                  f'and libclang-rt-14-dev)')
            COUNTS['skipped'] += 1
        TARGETS[:] = [t for t in TARGETS if t not in missing]
        if not TARGETS:
            return closing(0)
    try:
        setup = prepare(root, build, fuzz, corpus)
    except (RuntimeError, subprocess.SubprocessError, OSError) as e:
        report('fuzz seeds', False, str(e))
        return closing(1)
    ok = True
    for t in TARGETS:
        ok &= regress(fuzz, t, setup[t][0])
    queue = list(TARGETS)
    while queue:
        batch, queue = queue[:PARALLEL], queue[PARALLEL:]
        running = [(t, *start(fuzz, t, *setup[t]), time.monotonic())
                   for t in batch]
        for t, proc, log, t0 in running:
            ok &= finish(t, proc, log, t0)
            if os.environ.get('HWT_FUZZ_KEEP') and t not in NOT_KEPT:
                ok &= keep(fuzz, t, setup[t][0])
    return closing(0 if ok else 1)


if __name__ == '__main__':
    sys.exit(main())
