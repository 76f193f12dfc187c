#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Exact on machines whose debug facilities are broken.

Some hypervisors lose the single-step trap of an instruction they emulate
(cpuid: the stop comes one instruction late) and accept debug registers
that never fire. HWT_SIMULATE makes both happen on purpose (collect/os/
machine.h), so what hwtrace does about them is tested on every machine,
sound or not:

- `hwtrace backends` names each fault and the way around it.
- Recording: BUILD/programs/cpuid (cpuid, then straight-line code; cpuid,
  then a jump) is recorded by the ptrace backend with the lost trap
  simulated; with the probe (the stepper steps cpuid by a breakpoint) and
  without it (the step found late is repaired from the code), the history
  is the one recorded with no fault, and `hwtrace info` counts the repair.
  BUILD/programs/cpuid_bare meets a lost trap first after a cpuid followed
  by a jump, which cannot be repaired: the history says so with a gap and
  `hwtrace info` counts it; with the probe it is exact.
- Live: GDB's stepi over hwt-server stops at the instruction after cpuid,
  where native GDB on such a machine does not.
- Watchpoints with dead debug registers: watch, rwatch and awatch over
  hwt-server stop at the write and at the read of `watched`.

Recordings compare histories from one run to another, so each run gets the
same environment size (HWT_SIMULATE values of one length) and no address
randomization.
"""
import os
import re
import subprocess
import sys
import tempfile

from hwt_testlib import (ServerProcess, dump_items, exit_status, parse_args,
                         report, run_tool, selected)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, '..', 'programs', 'cpuid.c')

# Values of one length: the traced program's stack starts alike.
SOUND = 'xxxxxxxxxxxxxxx,xxxxxxxx'
LOST_TRAP = 'lost-cpuid-trap,xxxxxxxx'
LOST_TRAP_NO_PROBE = 'lost-cpuid-trap,no-probe'


def record(build, tmp, prog, sim, name):
    """(bundle, hwtrace info's text) of PROG recorded by ptrace under
    HWT_SIMULATE=SIM; None when recording failed (reported)."""
    hwtrace = os.path.join(build, 'hwtrace')
    bundle = os.path.join(tmp, name)
    env = dict(os.environ, HWT_SIMULATE=sim)
    p = subprocess.run(['setarch', '-R', hwtrace, 'record', '--backend',
                        'ptrace', '-o', bundle, '--', prog],
                       capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        report(f'{name}: recorded', False, p.stderr[-800:])
        return None
    rc, info, err = run_tool(hwtrace, 'info', bundle)
    return bundle, info + err


def history(build, bundle):
    items = dump_items(os.path.join(build, 'hwtrace'), bundle, gap='GAP')
    return next(iter(items.values()))


def cpuid_steps(build, bundle):
    """[(address of a cpuid, the address recorded after it)] in a bundle's
    history, from hwtrace dump's disassembly."""
    rc, out, err = run_tool(os.path.join(build, 'hwtrace'), 'dump', '--insn',
                            '--tsv', bundle)
    rows = [l.split('\t') for l in out.splitlines()]
    return [(int(a[2], 16), int(b[2], 16) if b[2] != 'gap' else None)
            for a, b in zip(rows, rows[1:]) if a[3].strip() == 'cpuid']


def symbol(prog, name):
    """Address of NAME in a program linked at a fixed address."""
    out = subprocess.run(['nm', prog], capture_output=True, text=True).stdout
    m = re.search(r'^([0-9a-f]+) \w ' + re.escape(name) + '$', out, re.M)
    return int(m.group(1), 16) if m else None


def test_backends(build):
    rc, out, err = run_tool(os.path.join(build, 'hwtrace'), 'backends')
    env = dict(os.environ, HWT_SIMULATE='lost-cpuid-trap,dead-dr')
    p = subprocess.run([os.path.join(build, 'hwtrace'), 'backends'],
                       capture_output=True, text=True, env=env, timeout=120)
    lines = [l for l in p.stdout.splitlines() if l.startswith('machine:')]
    report('backends: dead debug registers are named, with the way around',
           any('debug registers do not work' in l and 'watchpoints are served'
               in l for l in lines), p.stdout[-1000:])
    report('backends: the lost cpuid trap is named, with the way around',
           any('cpuid' in l and 'breakpoint' in l for l in lines),
           p.stdout[-1000:])


def loses_cpuid_trap(build):
    """Whether this machine itself loses cpuid's trap (the probe says so
    in hwtrace backends): then the simulated fault, which stacks on the
    real one, no longer says how many instructions a step skips, and the
    runs that rely on that (no-probe) are skipped."""
    env = {k: v for k, v in os.environ.items() if k != 'HWT_SIMULATE'}
    out = subprocess.run([os.path.join(build, 'hwtrace'), 'backends'],
                         capture_output=True, text=True, env=env,
                         timeout=120).stdout
    return re.search(r'^machine:.*cpuid', out, re.M) is not None


def test_recording(build, tmp, real_fault):
    prog = os.path.join(build, 'programs', 'cpuid')
    runs = {}
    for sim, name in ((SOUND, 'sound'), (LOST_TRAP, 'probed'),
                      (LOST_TRAP_NO_PROBE, 'repaired')):
        if real_fault and name == 'repaired':
            print('SKIP cpuid, lost trap, repaired: this machine loses '
                  'cpuid\'s trap itself, the simulation would stack on it '
                  '(the sound and probed runs cover the real fault)')
            continue
        r = record(build, tmp, prog, sim, name)
        if r is None:
            return
        runs[name] = (history(build, r[0]), r[1], r[0])
    sound = runs['sound'][0]
    steps = cpuid_steps(build, runs['sound'][2])
    # The loader's cpuids and the program's two.
    report('cpuid: in the sound history every cpuid goes on to the next '
           'instruction', len(steps) > 2 and
           all(after == at + 2 for at, after in steps), steps)
    for name in [n for n in ('probed', 'repaired') if n in runs]:
        h = runs[name][0]
        first = next((i for i, (a, b) in enumerate(zip(h, sound)) if a != b),
                     None)
        report(f'cpuid, lost trap, {name}: the history is the sound one',
               h == sound, f'{len(h)} vs {len(sound)} items, first '
               f'difference at {first}')
    if 'repaired' in runs:
        report('cpuid, lost trap, repaired: hwtrace info counts the repair',
               re.search(r'[1-9]\d* lost step traps repaired, 0 left as gaps',
                         runs['repaired'][1]) is not None,
               runs['repaired'][1])
    report('cpuid, lost trap, probed: nothing needed repair',
           'repaired' not in runs['probed'][1], runs['probed'][1])


def test_gap(build, tmp, real_fault):
    prog = os.path.join(build, 'programs', 'cpuid_bare')
    runs = {}
    for sim, name in ((SOUND, 'bare-sound'), (LOST_TRAP, 'bare-probed'),
                      (LOST_TRAP_NO_PROBE, 'bare-gap')):
        if real_fault and name == 'bare-gap':
            print('SKIP bare, lost trap before a jump: this machine loses '
                  'cpuid\'s trap itself, the simulation would stack on it')
            continue
        r = record(build, tmp, prog, sim, name)
        if r is None:
            return
        runs[name] = (history(build, r[0]), r[1], r[0])
    sound = runs['bare-sound'][0]
    jump = symbol(prog, 'bare_after_jump')
    report('bare: the sound history holds the jump after cpuid',
           len(sound) == 13 and jump in sound, f'{len(sound)} items')
    report('bare, lost trap, probed: the history is the sound one',
           runs['bare-probed'][0] == sound,
           f'{runs["bare-probed"][0]} vs {sound}')
    if 'bare-gap' not in runs:
        return
    gapped = runs['bare-gap'][0]
    # The jump and its skipped target: unseen; a gap stands for them.
    k = gapped.index('GAP') if 'GAP' in gapped else -1
    report('bare, lost trap before a jump: a gap, never a made-up step',
           k > 0 and jump not in gapped and sound[k] == jump and
           gapped[:k] == sound[:k] and gapped[k + 1:] == sound[k + 1:],
           f'{gapped} vs {sound}')
    report('bare, lost trap before a jump: hwtrace info counts the gap',
           '0 lost step traps repaired, 1 left as gaps' in runs['bare-gap'][1],
           runs['bare-gap'][1])


def served_gdb(build, tmp, name, sim, cmds, backend='ptrace'):
    """GDB's output for CMDS against hwt-server running BUILD/programs/cpuid
    under HWT_SIMULATE=SIM, and the server's log."""
    prog = os.path.join(build, 'programs', 'cpuid')
    srv = ServerProcess([os.path.join(build, 'hwt-server'), '--listen',
                         '127.0.0.1:0', '--once', '--backend', backend,
                         '--', prog], tmp, name,
                        env=dict(os.environ, HWT_SIMULATE=sim))
    try:
        if not srv.address:
            return None, srv.log()
        args = ['gdb', '-nx', '-batch', '-ex', 'set pagination off',
                '-ex', 'set confirm off', '-ex', f'target remote {srv.address}']
        for c in cmds:
            args += ['-ex', c]
        out = subprocess.run(args + [prog], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             text=True, errors='replace', timeout=300).stdout
        srv.wait(10)
        return out, srv.log()
    finally:
        srv.stop()


def test_live_stepi(build, tmp):
    out, log = served_gdb(build, tmp, 'stepi', 'lost-cpuid-trap', [
        'break *(after_cpuid - 2)', 'continue', 'stepi',
        'printf "<<at %d>>\\n", $pc == (long)after_cpuid',
        'stepi', 'printf "<<next %d>>\\n", $pc == (long)after_cpuid + 1',
        'kill'])
    if out is None:
        report('live stepi: hwt-server listens', False, log[-800:])
        return
    report('live stepi over cpuid stops at the instruction after it',
           '<<at 1>>' in out and '<<next 1>>' in out, out[-1200:])
    report('live: the server log names the lost trap',
           'this machine:' in log and 'cpuid' in log, log[-800:])


def watch_line(pattern):
    with open(SOURCE) as f:
        for n, line in enumerate(f, 1):
            if pattern in line:
                return n
    raise RuntimeError(f'{SOURCE} has no line with {pattern}')


def test_live_watch(build, tmp):
    write_line, read_line = watch_line('/* write */'), watch_line('/* read */')
    # Each stops after the accessing instruction, on the read's line: the
    # write's store ends its line, the read's load begins its own.
    for kind, value in (('watch', 'New value = 2'), ('rwatch', 'Value = 2'),
                        ('awatch', 'New value = 2')):
        out, log = served_gdb(build, tmp, f'watch-{kind}', 'dead-dr', [
            'break main', 'continue', f'{kind} watched', 'continue',
            'info line *$pc', 'kill'])
        if out is None:
            report(f'dead debug registers, {kind}: hwt-server listens',
                   False, log[-800:])
            continue
        m = re.search(r'Line (\d+) of', out)
        line = int(m.group(1)) if m else None
        report(f'dead debug registers: {kind} stops at the access',
               value in out and line == read_line and
               write_line + 1 == read_line, f'line {line}: {out[-1200:]}')
    report('dead debug registers: the server log says so',
           'debug registers do not work' in log, log[-800:])


def main():
    args = parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if selected('backends'):
            test_backends(args.build)
        real_fault = loses_cpuid_trap(args.build)
        if selected('recording'):
            test_recording(args.build, tmp, real_fault)
        if selected('gap'):
            test_gap(args.build, tmp, real_fault)
        if selected('stepi'):
            test_live_stepi(args.build, tmp)
        if selected('watch'):
            test_live_watch(args.build, tmp)
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
