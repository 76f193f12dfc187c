#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Killed in the middle: what is left, and the next run.

- hwt-server killed with SIGKILL while it serves a program it started
  (ptrace and valgrind backends): the program does not live on; the
  valgrind backend's temporary directory, which a killed process cannot
  remove, is removed by the next run that makes one.
- hwtrace record killed with SIGKILL: the program dies with it, and the
  next `hwtrace record -o` of the same bundle succeeds and removes the
  staging directory the killed one left.
- The traced program killed from outside mid-recording: the bundle holds
  what was recorded and says how the program ended.
- A client that disconnects in the middle of a packet: the server goes on
  and serves the next connection.
"""
import glob
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

from hwt_testlib import (ServerProcess, exit_status, parse_args, report,
                         run_tool, selected)


def alive(pid):
    """Whether pid runs (a zombie does not)."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def descendants(pid):
    """Every process below pid."""
    kids = {}
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open(f'/proc/{d}/stat') as f:
                    ppid = int(f.read().rsplit(')', 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def gone_within(pids, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return not any(alive(p) for p in pids)


def server_killed(build, tmp, backend):
    vgtmp = os.path.join(tmp, f'tmp-{backend}')
    os.makedirs(vgtmp, exist_ok=True)
    srv = ServerProcess([os.path.join(build, 'hwt-server'), '--listen',
                         '127.0.0.1:0', '--backend', backend, '--',
                         '/bin/sleep', '60'], tmp, f'killed-{backend}',
                        env=dict(os.environ, TMPDIR=vgtmp))
    try:
        if not srv.address:
            report(f'{backend}: hwt-server listens', False, srv.log()[-600:])
            return
        below = descendants(srv.proc.pid)
        srv.proc.kill()
        srv.proc.wait()
        report(f'hwt-server ({backend}) killed: the program it started '
               'does not live on', below and gone_within(below, 10),
               f'left running: {[p for p in below if alive(p)]}')
    finally:
        srv.stop()
    if backend != 'valgrind':
        return
    left = glob.glob(os.path.join(vgtmp, f'hwt-vg-{srv.proc.pid}-*'))
    env = dict(os.environ, TMPDIR=vgtmp)
    p = subprocess.run([os.path.join(build, 'hwtrace'), 'record', '--backend',
                        'valgrind', '-o', os.path.join(tmp, 'after-vg'), '--',
                        '/bin/true'], capture_output=True, text=True, env=env,
                       timeout=300)
    still = glob.glob(os.path.join(vgtmp, f'hwt-vg-{srv.proc.pid}-*'))
    report('valgrind: the next run removes the killed server\'s temporary '
           'directory', len(left) == 1 and not still and p.returncode == 0,
           f'before {left}, after {still}; {p.stderr[-400:]}')


def record_killed(build, tmp):
    hwtrace = os.path.join(build, 'hwtrace')
    out = os.path.join(tmp, 'killed.bundle')
    rec = subprocess.Popen([hwtrace, 'record', '--backend', 'ptrace', '-o', out,
                            '--', '/bin/sleep', '60'],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    below = []
    while time.monotonic() < deadline and not below:
        below = [p for p in descendants(rec.pid) if alive(p)]
        time.sleep(0.05)
    time.sleep(0.5)
    rec.kill()
    rec.wait()
    report('hwtrace record killed: the program dies with it',
           below and gone_within(below, 10), f'left running: {below}')
    staged = glob.glob(out + f'.tmp-{rec.pid}-*')
    rc, o, err = run_tool(hwtrace, 'record', '--backend', 'ptrace', '-o', out,
                          '--', '/bin/true')
    report('hwtrace record killed: the next run of the same bundle works '
           'and removes the staging directory left behind',
           rc == 0 and len(staged) == 1 and not os.path.exists(staged[0]) and
           os.path.isfile(os.path.join(out, 'trace.json')),
           f'rc {rc}, staged {staged}: {err[-400:]}')


def program_killed(build, tmp):
    hwtrace = os.path.join(build, 'hwtrace')
    spin = os.path.join(build, 'programs', 'spin')
    out = os.path.join(tmp, 'victim.bundle')
    rec = subprocess.Popen([hwtrace, 'record', '--backend', 'ptrace', '-o', out,
                            '--', spin, '100000000'],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    deadline = time.monotonic() + 30
    victim = []
    while time.monotonic() < deadline and not victim:
        victim = [p for p in descendants(rec.pid) if alive(p)]
        time.sleep(0.05)
    time.sleep(1)
    for p in victim:
        os.kill(p, signal.SIGKILL)
    try:
        _, err = rec.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        rec.kill()
        _, err = rec.communicate()
    rc, info, ierr = run_tool(hwtrace, 'info', out)
    m = re.search(r'(\d+) items in history', info)
    report('the traced program killed from outside: the bundle holds the '
           'history recorded and says how it ended',
           bool(victim) and rc == 0 and m and int(m.group(1)) > 1000 and
           re.search(r'stop:.*(SIGKILL|signal 9)', info) is not None,
           f'record: {err[-300:]} info: {info[:600]} {ierr[-300:]}')


def half_packet(build, tmp):
    prog = os.path.join(build, 'programs', 'cpuid')
    srv = ServerProcess([os.path.join(build, 'hwt-server'), '--listen',
                         '127.0.0.1:0', '--', prog], tmp, 'half-packet')
    try:
        if not srv.address:
            report('half packet: hwt-server listens', False, srv.log()[-600:])
            return
        host, port = srv.address.rsplit(':', 1)
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(b'+$qSupported:multiprocess+;swbrea')
        time.sleep(0.3)
        out = subprocess.run(
            ['gdb', '-nx', '-batch', '-ex', f'target remote {srv.address}',
             '-ex', 'break main', '-ex', 'continue', '-ex', 'info line *$pc',
             '-ex', 'kill', prog], capture_output=True, text=True,
            timeout=300).stdout
        report('a client gone in the middle of a packet: the next one is '
               'served', 'Breakpoint 1, main' in out,
               out[-800:] + srv.log()[-400:])
    finally:
        srv.wait(10)
        srv.stop()


def main():
    args = parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if selected('server'):
            server_killed(args.build, tmp, 'ptrace')
            server_killed(args.build, tmp, 'valgrind')
        if selected('record'):
            record_killed(args.build, tmp)
        if selected('program'):
            program_killed(args.build, tmp)
        if selected('half-packet'):
            half_packet(args.build, tmp)
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
