#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Interrupting hwtrace record: ^C (SIGINT to the terminal's process
group) ends the program as it would end it, and the recording of that
end is written; SIGTERM to hwtrace alone is passed on to the program, with
the same result; a signal while the bundle is being written leaves either
the whole bundle or none. Interrupting hwtrace export of a large history
(seconds of work) ends it at once with nothing written. Never a partial
bundle or file, never a staging directory or temporary file left."""
import glob
import os
import signal
import subprocess
import tempfile
import time

from hwt_testlib import exit_status, parse_args, report

SPIN = 'int main(void) { volatile unsigned long i = 0; for (;;) i++; }\n'


def bundle_ok(hwtrace, bundle):
    p = subprocess.run([hwtrace, 'info', bundle], capture_output=True, text=True,
                       timeout=120)
    return p.returncode == 0, p.stdout + p.stderr


def record(hwtrace, prog, bundle, send, tmp):
    """Record prog in a session of its own; send(proc) after a second."""
    proc = subprocess.Popen([hwtrace, 'record', '-q', '--backend', 'ptrace', '-o',
                             bundle, '--', prog], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(1.0)
    send(proc)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    leftovers = glob.glob(os.path.join(tmp, '*.tmp-*'))
    return proc.returncode, err, leftovers


def main():
    args = parse_args()
    hwtrace = os.path.join(args.build, 'hwtrace')
    with tempfile.TemporaryDirectory(prefix='hwt-interrupt-') as tmp:
        src, prog = os.path.join(tmp, 'spin.c'), os.path.join(tmp, 'spin')
        with open(src, 'w') as f:
            f.write(SPIN)
        if subprocess.run(['cc', '-O0', '-o', prog, src]).returncode:
            print('SKIP interrupt: no C compiler')
            return exit_status()

        bundle = os.path.join(tmp, 'ctrl-c')
        rc, err, left = record(hwtrace, prog, bundle,
                               lambda p: os.killpg(p.pid, signal.SIGINT), tmp)
        ok, info = bundle_ok(hwtrace, bundle)
        report('^C to the process group: the program ends by SIGINT, its recording '
               'is written, hwtrace exits 130', rc == 130 and ok and
               ('SIGINT' in info or 'signal 2 ' in info),
               f'exit {rc}, {err[-300:]}, {info[-400:]}')
        report('^C: no staging directory is left', not left, f'{left}')

        bundle = os.path.join(tmp, 'term')
        rc, err, left = record(hwtrace, prog, bundle, lambda p: p.terminate(), tmp)
        ok, info = bundle_ok(hwtrace, bundle)
        report('SIGTERM to hwtrace alone is passed on: the program ends by it and '
               'the bundle is written (exit 143)', rc == 143 and ok,
               f'exit {rc}, {err[-300:]}, {info[-300:]}')

        # A second signal right after the first may land while the bundle
        # is written: then nothing is written.
        bundle = os.path.join(tmp, 'twice')

        def twice(p):
            os.killpg(p.pid, signal.SIGINT)
            time.sleep(0.05)
            try:
                p.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass
        rc, err, left = record(hwtrace, prog, bundle, twice, tmp)
        exists = os.path.exists(bundle)
        ok, info = bundle_ok(hwtrace, bundle) if exists else (True, '')
        report('a second ^C while writing: the whole bundle or none, and no staging '
               'directory', ok and not left and rc == 130 and
               (exists or 'none was written' in err),
               f'exit {rc}, exists {exists}, left {left}: {err[-300:]} {info[-300:]}')
        export_interrupts(hwtrace, tmp)
    return exit_status()


def export_interrupts(hwtrace, tmp):
    """python3 -c pass on Valgrind's cpu: tens of millions of instructions,
    seconds to export (about ten here); ^C half a second in, so a machine
    many times faster still interrupts it."""
    bundle = os.path.join(tmp, 'python.bundle')
    p = subprocess.run([hwtrace, 'record', '-q', '--backend', 'valgrind', '-o', bundle,
                        '--', 'python3', '-c', 'pass'], capture_output=True, text=True,
                       timeout=600)
    if not os.path.exists(bundle):
        print(f'SKIP export interrupts: no large recording here (valgrind backend: '
              f'{p.stderr.strip()[-200:]})')
        return
    for fmt, out in (('--svg', os.path.join(tmp, 'py.svg')),
                     ('--lldb', os.path.join(tmp, 'py.lldb'))):
        proc = subprocess.Popen([hwtrace, 'export', fmt, '-o', out, bundle],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.5)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=120)
        waited = time.monotonic() - t0
        left = glob.glob(out + '*')
        report(f'^C during export {fmt}: it ends at once (exit 130) and leaves '
               'nothing, temporary files included', rc == 130 and not left and
               waited < 2, f'exit {rc} after {waited:.1f} s, left {left}')


if __name__ == '__main__':
    raise SystemExit(main())
