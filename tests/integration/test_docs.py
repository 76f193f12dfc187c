#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""docs/architecture.md matches the tree: every file and folder its
folder table names exists where the row says (a bare name in the row's
folder, a path from the top), so the map of the code cannot go stale
silently; and the layout is told there once (README.md points to it)."""
import os
import re

from hwt_testlib import exit_status, parse_args, report

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROW = re.compile(r'^\| `([^`]+)` \| (.*) \|$')
NAME = re.compile(r'`([A-Za-z0-9_.*<>/-]+(?:\.[ch]|/))`')
TOPS = ('common/', 'collect/', 'replay/', 'tools/', 'plugin/', 'kernel/',
        'tests/', 'bench/', 'scripts/', 'docs/')


def named(folder, text):
    """The paths a table row names, from the top."""
    out = []
    for name in NAME.findall(text):
        if '*' in name or '<' in name:
            continue             # patterns (backend_*.c), placeholders
        out.append(name if name.startswith(TOPS) else
                   os.path.join(folder, name))
    return out


def main():
    parse_args()
    with open(os.path.join(TOP, 'docs', 'architecture.md')) as f:
        rows = [ROW.match(x) for x in f.read().split('\n')]
    rows = [m for m in rows if m and not m.group(1).startswith('tests/unit/<')]
    missing, checked = [], 0
    for m in rows:
        folder = m.group(1)
        for path in [folder] + named(folder, m.group(2)):
            checked += 1
            if not os.path.exists(os.path.join(TOP, path)):
                missing.append(f'{path} (row {folder})')
    report(f'docs/architecture.md: the {checked} files and folders its '
           f'table names ({len(rows)} rows) exist where it says',
           rows and not missing, '; '.join(missing[:8]))
    with open(os.path.join(TOP, 'README.md')) as f:
        readme = f.read()
    report('README.md points to that table instead of keeping a copy',
           'docs/architecture.md' in readme and
           not re.search(r'^\| `collect/` \|', readme, re.M),
           'README.md has its own layout table')
    return exit_status()


if __name__ == '__main__':
    raise SystemExit(main())
