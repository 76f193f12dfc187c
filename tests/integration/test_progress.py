#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Progress of long steps: a line on stderr, rewritten in place and
erased at the end, when stderr is a terminal: hwtrace dump when the
history goes to a file or a pipe (never a byte of it in the output,
--tsv included; nothing when stderr is not a terminal), hwtrace export
--lldb while it encodes, hwtrace record while it writes the bundle, and
hwt-server while it encodes a history as Intel PT for GDB."""
import os
import pty
import select
import socket
import subprocess
import tempfile

from hwt_testlib import exit_status, parse_args, report


def read_terminal(master, timeout):
    """What a pseudo-terminal's programs wrote until it closed or stayed
    quiet for timeout seconds."""
    data = b''
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:       # the terminal closed with the program
            break
        if not chunk:
            break
        data += chunk
    return data


def run_with_tty_stderr(cmd, stdout):
    """Run cmd with stderr on a pseudo-terminal; (exit status, stderr)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdout=stdout, stderr=slave)
    os.close(slave)
    data = read_terminal(master, 60)
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
        rc, err = run_with_tty_stderr([hwtrace, 'export', '--lldb', '-o',
                                       os.path.join(tmp, 'lldb'), bundle],
                                      subprocess.DEVNULL)
        report('export --lldb, stderr a terminal: encoding progress, erased',
               rc == 0 and b'\rhwtrace export: encoding:' in err and
               err.endswith(b'\r\x1b[K'), repr(err[-200:]))
        server_progress(os.path.join(args.build, 'hwt-server'), bundle)
        for quiet in ([], ['-q']):
            rc, err = run_with_tty_stderr(
                [hwtrace, 'record', *quiet, '--backend', 'ptrace', '-o',
                 os.path.join(tmp, 'r' + ''.join(quiet)), '--',
                 os.path.join(args.build, 'programs', 'loops')], subprocess.DEVNULL)
            line = b'\rhwtrace record: writing the bundle...\r\x1b[K'
            report('record' + (' -q: no progress' if quiet else ': "writing the '
                   'bundle" on its terminal once the program ended, erased before '
                   'the summary'), rc == 0 and ((line not in err and not err)
                                                if quiet else err.startswith(line)),
                   repr(err[-200:]))
    return exit_status()


def frame(pkt):
    pkt = pkt.encode()
    return b'$' + pkt + b'#%02x' % (sum(pkt) & 255)


def server_progress(server, bundle):
    """GDB's record btrace pt on a crashed process: the server encodes
    the whole history, with a progress line on its terminal."""
    master, slave = pty.openpty()
    p = subprocess.Popen([server, '--listen', '127.0.0.1:0', '--once', '--bundle',
                          bundle], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    err, replies = b'', []
    try:
        while b'Listening on port' not in err:
            ready, _, _ = select.select([master], [], [], 30)
            if not ready:
                raise TimeoutError('the server did not listen')
            err += os.read(master, 4096)
        port = int(err.split(b'Listening on port ')[1].split()[0])
        with socket.create_connection(('127.0.0.1', port), timeout=60) as c:
            for pkt in ('Qbtrace-conf:pt:size=0x40000000', 'Qbtrace:off',
                        'Qbtrace:pt', 'qXfer:btrace:read:all:0,100'):
                c.sendall(frame(pkt))
                data = b''
                while not (data.lstrip(b'+').startswith(b'$') and b'#' in data and
                           len(data) >= data.index(b'#') + 3):
                    data += c.recv(65536)
                c.sendall(b'+')
                replies.append(data.lstrip(b'+')[1:data.lstrip(b'+').index(b'#')])
        p.wait(timeout=30)
        err += read_terminal(master, 1)
    except (OSError, TimeoutError) as e:
        err += str(e).encode()
    finally:
        p.kill()
        os.close(master)
    report('hwt-server encoding a history as Intel PT for GDB: a progress line '
           'on its terminal, erased', len(replies) == 4 and
           replies[3].startswith(b'm<btrace version="1.0"><pt>') and
           b'\rhwt-server: encoding the history for GDB:' in err and
           b'%\r\x1b[K' in err, f'{[r[:40] for r in replies]} {err[-300:]!r}')


if __name__ == '__main__':
    raise SystemExit(main())
