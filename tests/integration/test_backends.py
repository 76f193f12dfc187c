#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Recording backends from the command line: `hwtrace backends`, and
`hwtrace record --backend NAME` for each backend.

Where a backend's hardware or device is missing (no intel_pt, intel_bts or
cs_etm PMU; no /dev/hwtrace) the record must fail before running anything,
with a message that names what is missing, and leave no bundle. Where it
is present the record must work (perf-etm: refuse clearly, hwtrace cannot
write CoreSight bundles yet). Runs the sanitizer build ($HWT_SAN_BUILD)
when there is one.
"""
import json
import os
import shutil
import sys
import tempfile

from hwt_testlib import (exit_status, parse_args, report, run_tool,
                         sanitizer_report, selected)

PMU_ROOT = '/sys/bus/event_source/devices'
ORDER = ['perf-pt', 'perf-bts', 'valgrind', 'module', 'ptrace', 'perf-etm']
# backend -> (what must exist, the name an error must give, bundle type)
NEEDS = {
    'perf-pt': (os.path.join(PMU_ROOT, 'intel_pt'), 'intel_pt', 'intel-pt'),
    'perf-bts': (os.path.join(PMU_ROOT, 'intel_bts'), 'intel_bts', 'hwtrace-bts'),
    'perf-etm': (os.path.join(PMU_ROOT, 'cs_etm'), 'cs_etm', None),
    'module': ('/dev/hwtrace', '/dev/hwtrace', 'hwtrace-sw'),
}


def check(name, ok, why, err):
    if sanitizer_report(err):
        report(name, False, 'sanitizer report:\n' + err[-2000:])
    else:
        report(name, ok, why)


def test_listing(hwtrace):
    rc, out, err = run_tool(hwtrace, 'backends')
    # A machine whose debug facilities are broken adds `machine:` notes
    # after the backends (test_machine_faults.py checks them).
    lines = [ln for ln in out.splitlines() if not ln.startswith('machine:')]
    names = [ln.split()[0] for ln in lines if ln.strip()]
    check('backends lists every backend in order', rc == 0 and names == ORDER,
          f'rc {rc}, names {names}, stderr {err.strip()}', err)
    for be, (path, needle, _) in NEEDS.items():
        line = next((ln for ln in lines if ln.split()[0] == be), '')
        if os.path.exists(path):
            ok = line.split()[1:2] == ['available']
        else:
            ok = 'unavailable:' in line and needle in line
        check(f'backends: {be} says why', ok, f'line {line!r}', err)
    line = next((ln for ln in lines if ln.startswith('ptrace')), '')
    check('backends: ptrace available', line.split()[1:2] == ['available'],
          f'line {line!r}', err)
    rc, out, err = run_tool(hwtrace, 'backends', 'extra')
    check('backends: extra argument is a usage error', rc == 2,
          f'rc {rc}', err)


def test_record(hwtrace, tmp):
    for be, (path, needle, btype) in NEEDS.items():
        out_dir = os.path.join(tmp, be)
        rc, out, err = run_tool(hwtrace, 'record', '-q', '-o', out_dir,
                                '--backend', be, '--', 'true')
        name = f'record --backend {be}'
        if not os.path.exists(path):
            check(name + ': clear error without the hardware',
                  rc == 1 and needle in err and
                  err.startswith(f'hwtrace: backend {be}: ') and
                  not os.path.exists(out_dir),
                  f'rc {rc}, stderr {err.strip()!r}', err)
        elif btype is None:
            check(name + ': refused as not written into bundles yet',
                  rc == 1 and 'cannot be written into a bundle yet' in err and
                  not os.path.exists(out_dir),
                  f'rc {rc}, stderr {err.strip()!r}', err)
        else:
            try:
                with open(os.path.join(out_dir, 'trace.json')) as f:
                    doc = json.load(f)
            except (OSError, ValueError) as e:
                doc = {'error': str(e)}
            check(name + ': records a bundle', rc == 0 and
                  doc.get('type') == btype, f'rc {rc}, trace.json {doc}, '
                  f'stderr {err.strip()!r}', err)

    rc, out, err = run_tool(hwtrace, 'record', '-q', '-o',
                            os.path.join(tmp, 'nosuch'), '--backend',
                            'nosuch', '--', 'true')
    check('record --backend nosuch lists the backends',
          rc == 1 and 'unknown trace backend "nosuch"' in err and
          all(b in err for b in ORDER), f'rc {rc}, stderr {err.strip()!r}',
          err)
    rc, out, err = run_tool(hwtrace, 'record', '--help')
    check('record --help lists the backends', rc == 0 and
          all(b in out for b in ORDER), f'rc {rc}, stdout tail '
          f'{out[-300:]!r}', err)


def main():
    args = parse_args()
    # The sanitizer build when tests/run.py names one.
    san = os.environ.get('HWT_SAN_BUILD')
    build = os.path.abspath(san if san and os.path.exists(
        os.path.join(san, 'hwtrace')) else args.build)
    hwtrace = os.path.join(build, 'hwtrace')
    tmp = tempfile.mkdtemp(prefix='hwt-backends-')
    try:
        if selected('listing'):
            test_listing(hwtrace)
        if selected('record'):
            test_record(hwtrace, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
