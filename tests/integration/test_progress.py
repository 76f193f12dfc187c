#!/usr/bin/env python3
"""Progress of a long hwtrace dump: a line on stderr, rewritten in place
and erased at the end, when stderr is a terminal and the history goes to
a file or a pipe; nothing when stderr is not a terminal, and never a
byte of it in the output itself (--tsv included)."""
import os
import pty
import select
import subprocess
import tempfile

from hwt_testlib import exit_status, parse_args, report


def run_with_tty_stderr(cmd, stdout):
    """Run cmd with stderr on a pseudo-terminal; (exit status, stderr)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=slave)
    os.close(slave)
    data = b''
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:       # the terminal closed with the program
            break
        if not chunk:
            break
        data += chunk
    os.close(master)
    return p.wait(timeout=120), data


def main():
    args = parse_args()
    hwtrace = os.path.join(args.build, 'hwtrace')
    prog = os.path.join(args.build, 'programs', 'demo_crash')
    with tempfile.TemporaryDirectory(prefix='hwt-progress-') as tmp:
        bundle = os.path.join(tmp, 'b')
        subprocess.run([hwtrace, 'record', '-q', '--backend', 'ptrace', '-o', bundle,
                        '--', prog], capture_output=True, timeout=600)
        if not os.path.exists(bundle):
            report('record the demo', False, 'no bundle')
            return exit_status()
        for tsv in ([], ['--tsv']):
            out_path = os.path.join(tmp, 'out' + ''.join(tsv))
            with open(out_path, 'w') as out:
                rc, err = run_with_tty_stderr([hwtrace, 'dump', '--insn', *tsv, bundle],
                                              out)
            output = open(out_path, 'rb').read()
            name = 'dump --insn' + (' --tsv' if tsv else '')
            report(f'{name} to a file, stderr a terminal: a progress line, erased '
                   'at the end', rc == 0 and b'\rhwtrace dump: decoding:' in err and
                   b'%' in err and err.endswith(b'\r\x1b[K'), repr(err[-200:]))
            report(f'{name}: the output has no byte of it', b'\r' not in output and
                   b'decoding' not in output and len(output) > 100000,
                   f'{len(output)} bytes')
        p = subprocess.run([hwtrace, 'dump', '--insn', bundle], capture_output=True,
                           timeout=600)
        report('dump with stderr not a terminal: no progress', p.returncode == 0 and
               not p.stderr, repr(p.stderr[-200:]))
    return exit_status()


if __name__ == '__main__':
    raise SystemExit(main())
