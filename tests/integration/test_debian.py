#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Debian packages from debian/: `dpkg-buildpackage -us -uc -b` on a copy
of the source tree makes hwtrace, libhwt-dev and hwtrace-dkms; they
install on this machine (apt resolves their dependencies), the installed
hwtrace records the demo's crash and shows its history, a program builds
against libhwt-dev with pkg-config, and hwtrace-dkms carries the module's
source for DKMS. The packages are removed again at the end. Needs root
(to install) and dpkg-buildpackage; skipped, saying so, without them."""
import glob
import os
import shutil
import subprocess
import tempfile

from hwt_testlib import exit_status, parse_args, report

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ('hwtrace', 'libhwt-dev', 'hwtrace-dkms')


def run(cmd, timeout=600, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def source_copy(dest):
    """The source tree as a clean checkout has it: git's files (tracked,
    and new ones not ignored), no build directories."""
    p = run(['git', '-C', TOP, 'ls-files', '-co', '--exclude-standard', '-z'])
    if p.returncode:
        return False
    for rel in filter(None, p.stdout.split('\0')):
        src = os.path.join(TOP, rel)
        if not os.path.isfile(src) and not os.path.islink(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, rel), follow_symlinks=False)
    return True


def main():
    parse_args()
    if os.geteuid() != 0:
        print('SKIP debian packages: installing them needs root')
        return exit_status()
    for tool in ('dpkg-buildpackage', 'dh', 'dh_dkms', 'git'):
        if not shutil.which(tool):
            print(f'SKIP debian packages: {tool} is not installed '
                  '(scripts/install-deps.sh: dpkg-dev, debhelper, dh-dkms)')
            return exit_status()
    version = open(os.path.join(TOP, 'VERSION')).read().strip()
    with tempfile.TemporaryDirectory(prefix='hwt-deb-') as tmp:
        src = os.path.join(tmp, f'hwtrace-{version}')
        if not source_copy(src):
            print('SKIP debian packages: the source tree is not a git checkout')
            return exit_status()
        env = {k: v for k, v in os.environ.items()
               if k not in ('MAKELEVEL', 'MAKEFLAGS', 'MFLAGS', 'MAKEOVERRIDES')}
        env['DEB_BUILD_OPTIONS'] = f'parallel={os.cpu_count() or 2}'
        p = run(['dpkg-buildpackage', '-us', '-uc', '-b'], timeout=2400, cwd=src, env=env)
        debs = {os.path.basename(d).split('_')[0]: d
                for d in glob.glob(os.path.join(tmp, '*.deb'))}
        report('dpkg-buildpackage -us -uc -b makes hwtrace, libhwt-dev and '
               'hwtrace-dkms', p.returncode == 0 and set(PACKAGES) <= set(debs),
               f'exit {p.returncode}, {sorted(debs)}: {(p.stdout + p.stderr)[-1500:]}')
        if not set(PACKAGES) <= set(debs):
            return exit_status()
        contents = {n: run(['dpkg-deb', '-c', debs[n]]).stdout for n in PACKAGES}
        report('hwtrace holds the tools, the LLDB plugin, the man pages and the '
               'completion; libhwt-dev the headers, .pc files and libraries; '
               'hwtrace-dkms the module source and dkms.conf',
               './usr/bin/hwtrace' in contents['hwtrace'] and
               './usr/lib/hwtrace/libhwt-lldb.so' in contents['hwtrace'] and
               './usr/share/man/man1/hwtrace.1' in contents['hwtrace'] and
               './usr/share/bash-completion/completions/hwtrace' in contents['hwtrace'] and
               './usr/include/hwtrace/hwt-replay.h' in contents['libhwt-dev'] and
               './usr/lib/pkgconfig/hwt-collect.pc' in contents['libhwt-dev'] and
               'libhwt-replay.so.0' in contents['libhwt-dev'] and
               f'./usr/src/hwtrace-{version}/dkms.conf' in contents['hwtrace-dkms'],
               '\n'.join(c[-400:] for c in contents.values()))
        try:
            # apt installs local .debs with their dependencies; the
            # module's DKMS build is skipped where this kernel has no
            # headers, which does not fail the install.
            p = run(['apt-get', 'install', '-y', '-q', *[debs[n] for n in PACKAGES]],
                    timeout=1200, env=dict(env, DEBIAN_FRONTEND='noninteractive'))
            report('the packages install', p.returncode == 0, (p.stdout + p.stderr)[-1500:])
            if p.returncode:
                return exit_status()
            # The demo program, built in the package build's tree.
            bundle = os.path.join(tmp, 'demo.bundle')
            rec = run(['/usr/bin/hwtrace', 'record', '-q', '--backend', 'ptrace', '-o',
                       bundle, '--', os.path.join(src, 'build', 'programs', 'demo_crash')])
            dump = run(['/usr/bin/hwtrace', 'dump', '--calls', '--since', 'main', bundle])
            report('the installed hwtrace records the demo\'s crash and shows its calls '
                   'from main', rec.returncode == 128 + 11 and 'parse_config' in dump.stdout,
                   f'exit {rec.returncode} {rec.stderr[-300:]} {dump.stdout[-300:]}'
                   f'{dump.stderr[-300:]}')
            prog = os.path.join(tmp, 'prog.c')
            with open(prog, 'w') as f:
                f.write('#include "hwt-collect.h"\nint main(void){const char *const *n;'
                        'return hwt_collect_backends(&n) == 0;}\n')
            flags = run(['pkg-config', '--cflags', '--libs', 'hwt-collect']).stdout.split()
            cc = run(['cc', prog, '-o', prog[:-2], *flags])
            ok = cc.returncode == 0 and run([prog[:-2]]).returncode == 0
            report('a program builds with pkg-config against libhwt-dev and runs',
                   ok, cc.stderr[-500:])
            man = run(['man', '-w', 'hwtrace'])
            report('man hwtrace finds the installed page', man.returncode == 0 and
                   man.stdout.startswith('/usr/share/man/man1/hwtrace.1'), man.stdout)
        finally:
            run(['dpkg', '--purge', *PACKAGES], timeout=600)
    return exit_status()


if __name__ == '__main__':
    raise SystemExit(main())
