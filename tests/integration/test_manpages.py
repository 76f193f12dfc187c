#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The man pages (man/) and bash completion (completion/) against the
tools they describe: each page renders with `man --warnings` without a
warning and names the version in VERSION; hwtrace(1) documents every
command and every long option the commands' --help lists, hwt-server(1)
every option of its usage; the completion offers the commands and, for
each, the options its --help lists."""
import os
import re
import subprocess

from hwt_testlib import exit_status, parse_args, report

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMANDS = ('record', 'dump', 'info', 'export', 'writes', 'backends')


def long_options(text):
    """The long options a --help text lists (its examples left out: they
    show the program's own arguments too)."""
    text = re.split(r'\nExamples?:', text)[0]
    return set(re.findall(r'(?<![\w-])--[a-z][a-z-]+', text))


def roff_text(page):
    """A page's words as man shows them (escapes resolved)."""
    return subprocess.run(['man', '-E', 'UTF-8', '-l', page], capture_output=True,
                          text=True, env=dict(os.environ, MANWIDTH='200')).stdout


def complete(words, cword):
    script = (f'source {TOP}/completion/hwtrace.bash; '
              f'COMP_WORDS=({" ".join(words)}); COMP_CWORD={cword}; '
              f'{"_hwt_server" if words[0] == "hwt-server" else "_hwtrace"}; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    return set(subprocess.run(['bash', '-c', script], capture_output=True,
                              text=True).stdout.split())


def main():
    args = parse_args()
    hwtrace = os.path.join(args.build, 'hwtrace')
    server = os.path.join(args.build, 'hwt-server')
    version = open(os.path.join(TOP, 'VERSION')).read().strip()
    pages = sorted(os.path.join(TOP, 'man', p) for p in os.listdir(os.path.join(TOP, 'man')))
    for page in pages:
        name = os.path.basename(page)
        p = subprocess.run(['man', '--warnings', '-E', 'UTF-8', '-l', page],
                           capture_output=True, text=True,
                           env=dict(os.environ, MANWIDTH='80'))
        report(f'{name}: renders without a warning', p.returncode == 0 and not
               p.stderr.strip() and p.stdout, p.stderr[-500:])
        th = next((x for x in open(page).read().split('\n')
                   if x.startswith('.TH ')), '')
        report(f'{name}: names version {version}', f'hwtrace {version}' in th, th)

    helps = {c: subprocess.run([hwtrace, c, '--help'], capture_output=True,
                               text=True).stdout for c in COMMANDS}
    text = roff_text(os.path.join(TOP, 'man', 'hwtrace.1'))
    missing = [c for c in COMMANDS if c not in text]
    opts = set().union(*(long_options(h) for h in helps.values())) - {'--help'}
    missing += sorted(o for o in opts if o not in text)
    report('hwtrace(1) documents every command and every option their --help lists',
           helps['record'] and not missing, f'missing {missing}')
    usage = subprocess.run([server, '--help'], capture_output=True, text=True).stdout
    text = roff_text(os.path.join(TOP, 'man', 'hwt-server.1'))
    missing = sorted(o for o in long_options(usage.split('\n\n', 1)[0]) | {'--version'}
                     if o not in text)
    report('hwt-server(1) documents every option of its usage', usage and not missing,
           f'missing {missing}')

    got = complete(['hwtrace', "''"], 1)
    report('completion offers every hwtrace command', set(COMMANDS) <= got, f'{got}')
    for c in COMMANDS:
        want = long_options(helps[c]) - {'--help'}
        if not want:
            continue
        got = complete(['hwtrace', c, '--'], 2)
        report(f'completion offers every option of hwtrace {c}', want <= got,
               f'missing {sorted(want - got)}')
    want = long_options(usage.split('\n\n', 1)[0])
    got = complete(['hwt-server', '--'], 1)
    report('completion offers every option of hwt-server', want <= got,
           f'missing {sorted(want - got)}')
    return exit_status()


if __name__ == '__main__':
    raise SystemExit(main())
