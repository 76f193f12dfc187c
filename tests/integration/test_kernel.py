#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""hwtrace.ko under qemu: runs scripts/check-kernel.sh, which builds the
module against linux-headers-amd64, boots the matching Debian kernel with
a busybox initramfs and runs the guest suite (tests/kernel/), and relays
the guest's PASS/FAIL lines. Skips only when qemu, the headers or the
kernel image cannot be had here (check-kernel.sh exits 77).
"""
import argparse
import os
import re
import subprocess
import sys

from hwt_testlib import RESULTS, exit_status, report

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LINE = re.compile(r'^(PASS|FAIL|SKIP) ([^:]*)(?:: (.*))?$')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    args = ap.parse_args()
    out_dir = os.path.join(os.path.abspath(args.build), 'kernel-check')
    script = os.path.join(ROOT, 'scripts', 'check-kernel.sh')
    try:
        p = subprocess.run([script, out_dir], capture_output=True, text=True,
                           errors='replace', timeout=900)
    except subprocess.TimeoutExpired:
        report('kernel module suite', False, 'check-kernel.sh timed out')
        print('0 passed, 1 failed')
        return 1
    skipped = 0
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            if line.startswith(('BENCH', '  |')):
                print(line)
            continue
        if m.group(1) == 'SKIP':
            print(line)
            skipped += 1
        else:
            report(m.group(2), m.group(1) == 'PASS', m.group(3) or '')
    if p.returncode == 77:
        print(f'0 passed, 0 failed, {skipped} skipped')
        return 0
    if p.returncode != 0 and all(RESULTS):
        report('kernel module suite', False,
               f'check-kernel.sh exited {p.returncode}: '
               f'{(p.stdout + p.stderr).strip()[-800:]}')
    passed = sum(RESULTS)
    print(f'{passed} passed, {len(RESULTS) - passed} failed')
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
