#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The top-level Makefile as a newcomer meets it: `make` with no target
builds what `make all` builds, and a machine without LLDB's headers still
builds everything else, saying once why the LLDB plugin is left out."""
import os
import subprocess

from hwt_testlib import exit_status, parse_args, report

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_dry(*args):
    """What `make -n ARGS` would run in a build tree of its own (so nothing
    is up to date), with the directory changes make reports dropped."""
    # As a user types it: not as a sub-make of the `make check` that may
    # be running this test.
    env = {k: v for k, v in os.environ.items()
           if k not in ('MAKELEVEL', 'MAKEFLAGS', 'MFLAGS', 'MAKEOVERRIDES')}
    p = subprocess.run(['make', '--no-print-directory', '-n', '-C', TOP,
                        'O=build-dry-run', *args],
                       capture_output=True, text=True, timeout=120, env=env)
    return p.returncode, p.stdout, p.stderr


def main():
    parse_args()
    rc_plain, plain, err = make_dry()
    rc_all, every, _ = make_dry('all')
    report('make with no target runs the same commands as make all',
           rc_plain == 0 and rc_all == 0 and plain == every and plain,
           f'exit {rc_plain}/{rc_all}; {len(plain.splitlines())} vs '
           f'{len(every.splitlines())} commands; {err.strip()[-300:]}')
    report('make all builds the tools',
           'build-dry-run/hwtrace' in every and
           'build-dry-run/hwt-server' in every,
           'hwtrace or hwt-server missing from make -n all')

    rc, out, err = make_dry('LLDB_PREFIX=/nonexistent-llvm')
    said = [l for l in (out + err).splitlines() if 'LLDB plugin not built' in l]
    report('without LLDB headers make still builds the tools',
           rc == 0 and 'build-dry-run/hwtrace' in out and
           'libhwt-lldb.so' not in out,
           f'exit {rc}: {err.strip()[-300:]}')
    report('the missing LLDB plugin is said once', len(said) == 1,
           f'said {len(said)} times')
    return exit_status()


if __name__ == '__main__':
    raise SystemExit(main())
