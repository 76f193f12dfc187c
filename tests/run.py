#!/usr/bin/env python3
"""Run every hwtrace test suite and print one closing line.

Each suite is a program that prints `PASS name`, `FAIL name: why` and
`SKIP name: reason` lines. Unit test binaries run from the normal build and
again from the sanitizer build; integration tests are Python drivers that
run the real tools. A suite that exits non-zero without printing a FAIL line
counts as one failure, so a crash is never silent.
"""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LINE = re.compile(r'^(PASS|FAIL|SKIP) (.*)$')


def run_suite(name, cmd, timeout, env=None):
    counts = {'PASS': 0, 'FAIL': 0, 'SKIP': 0}
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
            elif line:
                print(f'  | {line}', flush=True)
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        print(f'  FAIL {name}: timed out after {timeout}s')
        counts['FAIL'] += 1
        return counts
    if rc != 0 and counts['FAIL'] == 0:
        print(f'  FAIL {name}: exited with status {rc} without reporting a failure')
        counts['FAIL'] += 1
    print(f'   ({time.monotonic() - start:.1f}s)')
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    ap.add_argument('--san-build')
    ap.add_argument('--only', choices=['unit', 'integration'])
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    suites = []
    if args.only in (None, 'unit'):
        for b, tag in ((build, ''), (args.san_build and os.path.abspath(args.san_build), ' [asan+ubsan]')):
            if not b:
                continue
            unit_dir = os.path.join(b, 'tests', 'unit')
            for t in sorted(os.listdir(unit_dir)) if os.path.isdir(unit_dir) else []:
                path = os.path.join(unit_dir, t)
                if t.startswith('test_') and os.access(path, os.X_OK) and not t.endswith(('.o', '.d')):
                    env = dict(os.environ, ASAN_OPTIONS='detect_leaks=1',
                               UBSAN_OPTIONS='print_stacktrace=1:halt_on_error=1')
                    suites.append((f'unit {t}{tag}', [path], 600, env))
    if args.only in (None, 'integration'):
        idir = os.path.join(HERE, 'integration')
        for t in sorted(os.listdir(idir)):
            if t.startswith('test_') and t.endswith('.py'):
                cmd = [sys.executable, os.path.join(idir, t), '--build', build]
                env = dict(os.environ)
                if args.san_build:
                    # Suites that feed hwtrace hostile input run this build.
                    env['HWT_SAN_BUILD'] = os.path.abspath(args.san_build)
                suites.append((f'integration {t}', cmd, 2400, env))
    total = {'PASS': 0, 'FAIL': 0, 'SKIP': 0}
    for name, cmd, timeout, env in suites:
        for k, v in run_suite(name, cmd, timeout, env).items():
            total[k] += v
    line = f"{total['PASS']} passed, {total['FAIL']} failed"
    if total['SKIP']:
        line += f", {total['SKIP']} skipped"
    print(line)
    return 1 if total['FAIL'] or not total['PASS'] else 0


if __name__ == '__main__':
    sys.exit(main())
