#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Run hwtrace's test suites and print one closing line.

Each suite is a program that prints `PASS name`, `FAIL name: why` and
`SKIP name: reason` lines. Unit test binaries (BUILD/tests/unit/<folder>/,
mirroring the source tree) run from the normal build and again from the
sanitizer build; integration tests are Python drivers that run the real
tools. A suite that exits non-zero without printing a FAIL line counts as
one failure, so a crash is never silent.

With arguments, only the named suites run: `SUITE` is a shell pattern
matched against a suite's name (`test_collect_live`), its folder and name
(`collect/test_collect_live`, `collect/*`) or `integration/test_gdb_live`.
`SUITE:TEST` also runs only the tests whose name matches TEST: the suite
gets it as HWT_TEST, and RUN() (tests/unit/check.h) or selected()
(tests/integration/hwt_testlib.py) skip the others. `--list` prints the
suites' names.
"""
import argparse
import fnmatch
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LINE = re.compile(r'^(PASS|FAIL|SKIP) (.*)$')


def run_suite(name, cmd, timeout, env=None, failures=None):
    """Run one suite, print its lines; the FAIL lines are also added to
    FAILURES so the run can end by naming them."""
    counts = {'PASS': 0, 'FAIL': 0, 'SKIP': 0}
    failures = [] if failures is None else failures
    start = time.monotonic()
    print(f'== {name}', flush=True)
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                errors='replace', env=env)
        for line in proc.stdout:
            line = line.rstrip('\n')
            m = LINE.match(line)
            if m:
                counts[m.group(1)] += 1
                print(f'  {line}', flush=True)
                if m.group(1) == 'FAIL':
                    failures.append(f'{name}: {m.group(2)}')
            elif line:
                print(f'  | {line}', flush=True)
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        print(f'  FAIL {name}: timed out after {timeout}s')
        failures.append(f'{name}: timed out after {timeout}s')
        counts['FAIL'] += 1
        return counts
    if rc != 0 and counts['FAIL'] == 0:
        print(f'  FAIL {name}: exited with status {rc} without reporting a failure')
        failures.append(f'{name}: exited with status {rc}')
        counts['FAIL'] += 1
    print(f'   ({time.monotonic() - start:.1f}s)')
    return counts


def unit_binaries(build):
    """(folder/test_x, path) of every unit test binary under BUILD."""
    unit_dir = os.path.join(build, 'tests', 'unit')
    found = []
    for root, _, files in os.walk(unit_dir):
        for t in files:
            path = os.path.join(root, t)
            if t.startswith('test_') and '.' not in t and os.access(path, os.X_OK):
                found.append((os.path.relpath(path, unit_dir), path))
    return sorted(found)


# Live-control suites run a second time on a simulated faulty machine
# (collect/os/machine.h: debug registers that never fire, a single step
# over cpuid that stops late), so the ways around those faults are tested
# on every machine.
FAULTY_MACHINE = 'lost-cpuid-trap,dead-dr'
FAULTY_MACHINE_SUITES = ('collect/test_collect_live', 'collect/test_seize_live')
# Integration suites run again so too: what such a machine adds to the
# tools' output (notes before hwt-server listens, `machine:` lines) must
# not upset their readers.
FAULTY_MACHINE_INTEGRATION = ('test_backends', 'test_lldb_server')


def wanted(selectors, names):
    """The TEST pattern for a suite known by NAMES, '' to run it whole, or
    None when SELECTORS (SUITE[:TEST] patterns) do not name it."""
    if not selectors:
        return ''
    for sel in selectors:
        suite, _, test = sel.partition(':')
        if any(fnmatch.fnmatchcase(n, suite) for n in names):
            return test
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    ap.add_argument('--san-build')
    ap.add_argument('--only', choices=['unit', 'integration'])
    ap.add_argument('--list', action='store_true', help='print the suites\' names')
    ap.add_argument('select', nargs='*', metavar='SUITE[:TEST]')
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    # Decompressed DWARF copies (replay/debug_cache.c) go with the build,
    # not into the home of whoever runs the tests.
    os.environ.setdefault('HWT_CACHE_DIR', os.path.join(build, 'cache'))
    suites = []
    if args.only in (None, 'unit'):
        for b, tag in ((build, ''), (args.san_build and os.path.abspath(args.san_build), ' [asan+ubsan]')):
            if not b:
                continue
            for rel, path in unit_binaries(b):
                test = wanted(args.select, (rel, os.path.basename(rel), f'unit/{rel}'))
                if test is None:
                    continue
                env = dict(os.environ, ASAN_OPTIONS='detect_leaks=1',
                           UBSAN_OPTIONS='print_stacktrace=1:halt_on_error=1',
                           HWT_TEST=test)
                suites.append((f'unit {rel}{tag}', [path], 600, env))
                if not tag and rel in FAULTY_MACHINE_SUITES:
                    suites.append((f'unit {rel} [simulated faulty machine]',
                                   [path], 600,
                                   dict(env, HWT_SIMULATE=FAULTY_MACHINE)))
    if args.only in (None, 'integration'):
        idir = os.path.join(HERE, 'integration')
        for t in sorted(os.listdir(idir)):
            if t.startswith('test_') and t.endswith('.py'):
                test = wanted(args.select, (t[:-3], f'integration/{t[:-3]}'))
                if test is None:
                    continue
                cmd = [sys.executable, os.path.join(idir, t), '--build', build]
                env = dict(os.environ, HWT_TEST=test)
                if args.san_build:
                    # Suites that feed hwtrace hostile input run this build.
                    env['HWT_SAN_BUILD'] = os.path.abspath(args.san_build)
                suites.append((f'integration {t}', cmd, 2400, env))
                if t[:-3] in FAULTY_MACHINE_INTEGRATION:
                    suites.append((f'integration {t} [simulated faulty machine]',
                                   cmd, 2400,
                                   dict(env, HWT_SIMULATE=FAULTY_MACHINE)))
    if args.list:
        for name, *_ in suites:
            print(name)
        return 0
    if not suites:
        print(f'no suite matches {" ".join(args.select)} (tests/run.py --list names them)')
        print('0 passed, 1 failed')
        return 1
    total = {'PASS': 0, 'FAIL': 0, 'SKIP': 0}
    failures = []
    for name, cmd, timeout, env in suites:
        for k, v in run_suite(name, cmd, timeout, env, failures).items():
            total[k] += v
    # A long run's failures are far above its end: name them again here,
    # where a log's tail shows them.
    if failures:
        print(f'failed ({len(failures)}):')
        for f in failures[:40]:
            print(f'  {f[:160]}')
        if len(failures) > 40:
            print(f'  ... and {len(failures) - 40} more above')
    line = f"{total['PASS']} passed, {total['FAIL']} failed"
    if total['SKIP']:
        line += f", {total['SKIP']} skipped"
    print(line)
    return 1 if total['FAIL'] or not total['PASS'] else 0


if __name__ == '__main__':
    sys.exit(main())
