#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""GDB 13.1's own testsuite, the sets with no unexpected failure left:
gdb.btrace and gdb.python's record-btrace tests against hwt-server,
gdb.reverse on the server's own reverse execution (values of the past
included; the tests of GDB's record save/restore are skips that say so),
and gdb.reverse and py-record-full.exp with GDB's record full driving it;
gdb.btrace also against Debian's gdbserver as the reference (its tests
are unsupported where the machine has no BTS or PT). The record-full
reference over Debian's gdbserver runs in `make check-gdb` only: it
tests GDB and gdbserver, not hwt-server, and on some machines it runs
for an hour of timeouts (GDB's record full single-stepping a vDSO clock
read in a KVM guest, gdb.reverse/time-reverse.exp). scripts/check-gdb.sh
fetches the testsuite (gdb-source), runs dejagnu and turns gdb.sum into
PASS/FAIL/SKIP lines, passed through here. HWT_TEST narrows the run to
testsuite files (dejagnu's TESTS, e.g. gdb.btrace/step.exp)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hwt_testlib import parse_args  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SETS = os.environ.get('HWT_GDB_CHECK_SETS',
                      'btrace gdbserver-btrace reverse full').split()


def main():
    args = parse_args()
    env = dict(os.environ)
    if os.environ.get('HWT_TEST'):
        env['HWT_GDB_TESTS'] = os.environ['HWT_TEST']
    script = os.path.join(HERE, '..', '..', 'scripts', 'check-gdb.sh')
    p = subprocess.run(['sh', script, args.build, *SETS], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       errors='replace')
    # check-gdb.sh's own closing line is not this suite's: tests/run.py
    # counts the lines.
    for line in p.stdout.splitlines():
        if not line.endswith('skipped') or ' passed, ' not in line or line.startswith(' '):
            print(line, flush=True)
    return p.returncode


if __name__ == '__main__':
    sys.exit(main())
