#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Every source file names its licence, the right one for where it is,
and the texts and debian/copyright say the same (README.md, Licences):
BSD-2-Clause, but GPL-2.0-only for the kernel module, GPL-2.0-only WITH
Linux-syscall-note for its user-space header and GPL-2.0-or-later for
the Valgrind tool. The tag is an SPDX-License-Identifier line among a
file's first three lines; a traced test program has it last instead,
since tests stop at its lines by number."""
import fnmatch
import os
import re
import subprocess

from hwt_testlib import exit_status, parse_args, report

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# What counts as source: code, build files, scripts, man pages. Data
# (fuzz inputs), documentation and packaging lists do not.
SOURCE = re.compile(r'\.(c|h|cpp|py|sh|mk|S|exp|gdb|in|bash|[145])$|'
                    r'(^|/)(Makefile|Kbuild)$|^debian/rules$|'
                    r'^tests/gdb/hwt-gdbserver$|^tests/kernel/init$|'
                    r'^\.ci/run$')
TAG = re.compile(r'SPDX-License-Identifier: ([A-Za-z0-9.+-]+(?: WITH '
                 r'[A-Za-z0-9.+-]+)?)')


def expected(path):
    if path.startswith('kernel/uapi/'):
        return 'GPL-2.0-only WITH Linux-syscall-note'
    if path.startswith('kernel/'):
        return 'GPL-2.0-only'
    if path.startswith('collect/valgrind/tool/'):
        return 'GPL-2.0-or-later'
    return 'BSD-2-Clause'


def sources():
    files = subprocess.run(['git', 'ls-files'], cwd=TOP, capture_output=True,
                           text=True, check=True).stdout.split()
    return [f for f in files if SOURCE.search(f) and
            not (f.startswith('tests/fuzz/') and not f.endswith(('.c', '.h')))]


def tag_of(path):
    """The licence a file names where it should, or why it does not."""
    with open(os.path.join(TOP, path), errors='replace') as f:
        lines = f.read().split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    found = [TAG.search(x).group(1) for x in lines if TAG.search(x)]
    if len(found) != 1:
        return None, f'{len(found)} SPDX-License-Identifier lines'
    last = path.startswith('tests/programs/') and path.endswith(('.c', '.h'))
    where = lines[-1:] if last else lines[:3]
    if not any(TAG.search(x) for x in where):
        return None, 'not ' + ('the last line' if last else
                                'among the first three lines')
    return found[0], ''


def copyright_stanzas():
    """debian/copyright's Files stanzas (patterns, licence) in order, and
    the licences it has a text for."""
    with open(os.path.join(TOP, 'debian', 'copyright')) as f:
        paras = f.read().split('\n\n')
    stanzas, texts = [], set()
    for p in paras:
        fields = dict(re.findall(r'^(\w[\w-]*): ?(.*)$', p, re.M))
        if 'Files' in fields:
            stanzas.append((fields['Files'].split(), fields.get('License')))
        elif 'License' in fields:
            texts.add(fields['License'])
    return stanzas, texts


def main():
    parse_args()
    files = sources()
    bad = []
    used = set()
    for path in files:
        tag, why = tag_of(path)
        if tag is None:
            bad.append(f'{path}: {why}')
        elif tag != expected(path):
            bad.append(f'{path}: {tag}, not {expected(path)}')
        else:
            used.add(tag)
    report(f'every source file ({len(files)}) names its licence where it '
           'should, the one for its place', not bad and len(files) > 300,
           '; '.join(bad[:8]) + (f' (and {len(bad) - 8} more)'
                                 if len(bad) > 8 else ''))

    missing = [name for tag in sorted(used) for name in tag.split(' WITH ')
               if not os.path.isfile(os.path.join(TOP, 'LICENSES',
                                                  name + '.txt'))]
    report('LICENSES/ holds the text of every licence and exception named',
           not missing and len(used) == 4, f'missing {missing}, used {used}')

    stanzas, texts = copyright_stanzas()
    wrong = []
    for path in files:
        # Machine-readable debian/copyright: the last matching stanza.
        lic = None
        for patterns, name in stanzas:
            if any(fnmatch.fnmatchcase(path, p) for p in patterns):
                lic = name
        if lic != expected(path):
            wrong.append(f'{path}: {lic}')
    report('debian/copyright gives every source file the licence it names, '
           'each with its text',
           not wrong and {s[1] for s in stanzas} <= texts,
           f'{wrong[:5]}, stanzas {stanzas}, texts {texts}')
    return exit_status()


if __name__ == '__main__':
    raise SystemExit(main())
