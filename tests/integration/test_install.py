#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""`make install` into a DESTDIR and `make uninstall` from it, as a user
and a package build do: the tools run from the installed tree (the
Valgrind tool found in its libexec), the shared libraries carry their
sonames and export the functions of their public headers only, a program built with pkg-config against the installed headers
and libraries links and runs, and uninstall leaves nothing behind."""
import os
import subprocess
import tempfile

from hwt_testlib import exit_status, parse_args, report

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = '/usr'

PROGRAM = r'''
#include <stdio.h>
#include "hwt-collect.h"
#include "hwt-replay.h"

int main(void)
{
	const char *const *names;
	size_t n = hwt_collect_backends(&names);

	for (size_t i = 0; i < n; i++)
		puts(names[i]);
	return n == 0;
}
'''


def make(build, *args):
    # As a user types it: not as a sub-make of a running `make check`.
    env = {k: v for k, v in os.environ.items()
           if k not in ('MAKELEVEL', 'MAKEFLAGS', 'MFLAGS', 'MAKEOVERRIDES')}
    return subprocess.run(['make', '--no-print-directory', '-C', TOP, f'O={build}',
                           f'PREFIX={PREFIX}', *args],
                          capture_output=True, text=True, timeout=1800, env=env)


def soname(path):
    out = subprocess.run(['readelf', '-d', path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if '(SONAME)' in line:
            return line.split('[', 1)[1].rstrip(']')
    return None


# Each shared library and the public headers that say what it offers.
LIB_HEADERS = {'common': ['hwt-common.h', 'hwt-past.h'],
               'collect': ['hwt-collect.h'], 'replay': ['hwt-replay.h']}


def declared_functions(include, headers, tmp):
    """The functions the headers declare (not their static inlines), as
    the compiler reads them: gcc's -aux-info names each prototype's
    file."""
    src, aux = os.path.join(tmp, 'decl.c'), os.path.join(tmp, 'decl.aux')
    with open(src, 'w') as f:
        f.writelines(f'#include "{h}"\n' for h in headers)
    subprocess.run(['cc', '-std=c11', '-D_GNU_SOURCE', '-I' + include,
                    '-fsyntax-only', '-aux-info', aux, src], check=True)
    names = set()
    for line in open(aux):
        where = line.split('*/', 1)[0]
        if any(f'/{h}:' in where for h in headers) and \
                ' static ' not in line and 'extern' in line:
            names.add(line.split('(', 1)[0].split()[-1].lstrip('*'))
    return names


def exported(path, demangle=False):
    """Names the shared object exports (its version nodes left out)."""
    out = subprocess.run(['nm', '-D', '--defined-only'] +
                         (['-C'] if demangle else []) + [path],
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        kind, name = line.split(' ', 2)[1:]
        if kind != 'A':
            names.add(name.split('@')[0])
    return names


def installed_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, files in os.walk(root) for f in files)


def main():
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix='hwt-install-') as tmp:
        dest = os.path.join(tmp, 'root')
        p = make(args.build, 'install', f'DESTDIR={dest}')
        report('make install into DESTDIR', p.returncode == 0,
               (p.stdout + p.stderr)[-800:])
        if p.returncode:
            return exit_status()
        root = dest + PREFIX
        want = ['bin/hwtrace', 'bin/hwt-server', 'include/hwtrace/hwt-common.h',
                'include/hwtrace/hwt-collect.h', 'include/hwtrace/hwt-replay.h',
                'share/hwtrace/gdb/hwtrace.py', 'share/man/man1/hwtrace.1',
                'share/man/man1/hwt-server.1', 'share/man/man5/hwtrace-bundle.5',
                'share/man/man4/hwtrace.4',
                'share/bash-completion/completions/hwtrace',
                'share/bash-completion/completions/hwt-server']
        for lib in ('common', 'collect', 'replay'):
            want += [f'lib/libhwt-{lib}.a', f'lib/libhwt-{lib}.so',
                     f'lib/libhwt-{lib}.so.0', f'lib/pkgconfig/hwt-{lib}.pc']
        missing = [w for w in want if not os.path.exists(os.path.join(root, w))]
        report('the tools, libraries, headers, pkg-config files, GDB extras, man '
               'pages and bash completion are installed under PREFIX', not missing,
               f'missing {missing}')
        man = subprocess.run(['man', '-w', 'hwtrace-bundle'], capture_output=True,
                             text=True, env=dict(os.environ, MANPATH=os.path.join(
                                 root, 'share', 'man')))
        report('man finds the installed pages through MANPATH',
               man.returncode == 0 and man.stdout.startswith(root), man.stdout + man.stderr)
        version = open(os.path.join(TOP, 'VERSION')).read().strip()
        dkms = os.path.join(dest, 'usr', 'src', f'hwtrace-{version}')
        conf = open(os.path.join(dkms, 'dkms.conf')).read() \
            if os.path.exists(os.path.join(dkms, 'dkms.conf')) else ''
        report('the module\'s source and its dkms.conf are in /usr/src/hwtrace-VERSION '
               '(the qemu suite builds the module from that tree)',
               f'PACKAGE_VERSION="{version}"' in conf and
               os.path.exists(os.path.join(dkms, 'Kbuild')) and
               os.path.exists(os.path.join(dkms, 'uapi', 'hwtrace.h')) and
               os.path.exists(os.path.join(dkms, 'hwt_dev.c')), conf[:300])
        names = {lib: soname(os.path.realpath(os.path.join(root, f'lib/libhwt-{lib}.so')))
                 for lib in ('common', 'collect', 'replay')}
        report('each shared library carries its soname',
               all(names[l] == f'libhwt-{l}.so.0' for l in names), f'{names}')

        # Only the public headers' functions leave a library.
        include = os.path.join(root, 'include', 'hwtrace')
        for lib, headers in LIB_HEADERS.items():
            declared = declared_functions(include, headers, tmp)
            out = exported(os.path.join(root, f'lib/libhwt-{lib}.so'))
            report(f'libhwt-{lib}.so exports the {len(declared)} functions '
                   f'of {", ".join(headers)} and nothing else',
                   declared and out == declared,
                   f'exported, not declared: {sorted(out - declared)[:20]}; '
                   f'declared, not exported: {sorted(declared - out)[:20]}')
        plugin = os.path.join(root, 'lib', 'hwtrace', 'libhwt-lldb.so')
        if os.path.exists(plugin):
            out = exported(plugin, demangle=True)
            report('the LLDB plugin exports its entry point only',
                   out == {'lldb::PluginInitialize(lldb::SBDebugger)'},
                   f'{sorted(out)[:20]}')
        else:
            print('SKIP the LLDB plugin\'s exports: the plugin is not built '
                  'here (liblldb-22-dev)')

        # The installed hwtrace finds the Valgrind tool in its libexec.
        p = subprocess.run([os.path.join(root, 'bin', 'hwtrace'), 'backends'],
                           capture_output=True, text=True, timeout=60)
        built_tool = os.path.exists(os.path.join(args.build, 'valgrind',
                                                 'hwtrace-amd64-linux'))
        valgrind = [l for l in p.stdout.splitlines() if l.startswith('valgrind')]
        report('the installed hwtrace runs and lists its backends',
               p.returncode == 0 and 'ptrace' in p.stdout, p.stdout + p.stderr)
        if built_tool and subprocess.run(['which', 'valgrind'],
                                         capture_output=True).returncode == 0:
            report('the installed hwtrace finds the Valgrind tool in '
                   'libexec/hwtrace/valgrind', valgrind and 'available' in valgrind[0],
                   f'{valgrind}')
        else:
            print('SKIP installed Valgrind tool: valgrind or its tool is not built here')

        # A program built against the installed tree, through pkg-config.
        src = os.path.join(tmp, 'prog.c')
        with open(src, 'w') as f:
            f.write(PROGRAM)
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(root, 'lib', 'pkgconfig'),
                   PKG_CONFIG_SYSROOT_DIR=dest)
        flags = subprocess.run(['pkg-config', '--cflags', '--libs', 'hwt-collect',
                                'hwt-replay'], capture_output=True, text=True, env=env)
        exe = os.path.join(tmp, 'prog')
        cc = subprocess.run(['cc', '-std=c11', '-Wall', '-Werror', src, '-o', exe,
                             *flags.stdout.split()], capture_output=True, text=True)
        report('pkg-config gives what a program needs to build against the '
               'installed libraries', flags.returncode == 0 and cc.returncode == 0,
               flags.stderr + cc.stderr[-600:])
        if cc.returncode == 0:
            run = subprocess.run([exe], capture_output=True, text=True, timeout=60,
                                 env=dict(os.environ,
                                          LD_LIBRARY_PATH=os.path.join(root, 'lib')))
            needed = subprocess.run(['readelf', '-d', exe], capture_output=True,
                                    text=True).stdout
            report('it runs on the installed shared libraries',
                   run.returncode == 0 and 'ptrace' in run.stdout.split() and
                   '[libhwt-collect.so.0]' in needed,
                   run.stdout + run.stderr + needed[-300:])

        p = make(args.build, 'uninstall', f'DESTDIR={dest}')
        left = installed_files(dest) if os.path.isdir(dest) else []
        report('make uninstall removes every installed file', p.returncode == 0 and
               not left, f'left: {left[:10]} {p.stderr[-300:]}')
    return exit_status()


if __name__ == '__main__':
    raise SystemExit(main())
