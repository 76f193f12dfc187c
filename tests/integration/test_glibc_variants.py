#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Every glibc string-function variant a CPU can run, through every
debugger path, against the single-step oracle.

glibc picks its string and memory functions at start-up from the CPU:
EVEX/AVX-512 code on AVX-512 machines (most x86 servers, AMD Zen 4), AVX2
on most others, SSE2 everywhere. GLIBC_TUNABLES=glibc.cpu.hwcaps=-...
takes features away, so one machine runs each variant its CPU allows.
For each, the program `strings` (tests/programs/strings.c) runs under:

  - the GDB stepi oracle (the truth), in the same environment;
  - GDB 13 `record btrace bts` and `record btrace pt` through a live
    hwt-server: the instruction history from main equals the oracle's;
  - lldb-22 live through hwt-server (`thread trace start`): the same;
  - `hwtrace record`, its `dump --insn` from main, and lldb-22 loading
    `hwtrace export --lldb` of it: the same.

The oracle's own history proves which variant ran (__strlen_evex,
__strlen_avx2, __strlen_sse2, ...), so a case cannot pass by running
other code. A variant the CPU cannot run is a SKIP with the reason.
"""
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import test_gdb_live  # noqa: E402
import test_lldb_bundle  # noqa: E402
import test_lldb_server  # noqa: E402
import test_oracle  # noqa: E402
from hwt_testlib import dump_items, exit_status, parse_args, report, selected  # noqa: E402

PROG = 'strings'
# (name, GLIBC_TUNABLES or None, cpuinfo flags glibc 2.36 needs for it)
VARIANTS = [
    ('evex', None, ('avx512vl', 'avx512bw', 'bmi2')),
    ('avx2', 'glibc.cpu.hwcaps=-AVX512F,-AVX512VL', ('avx2', 'bmi2')),
    ('sse2', 'glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX2,-AVX,-SSE4_2,'
     '-SSE4_1,-SSSE3,-AVX_Fast_Unaligned_Load', ()),
]


def cpu_flags():
    with open('/proc/cpuinfo') as f:
        for line in f:
            if line.startswith('flags'):
                return set(line.split(':', 1)[1].split())
    return set()


def first_difference(got, want):
    """None when got equals want, else where and how they differ."""
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return f'item {i + 1}: {a:#x}, oracle {b:#x}'
    if len(got) != len(want):
        return f'{len(got)} instructions, oracle {len(want)}'
    return None


def where(run, why):
    """why, with the oracle's function at the first differing address."""
    if why and 'oracle 0x' in why:
        pc = int(why.split('oracle ')[1].split()[0].rstrip(','), 16)
        return f'{why} ({run.desc(pc)})'
    return why


def gdb_paths(server, programs, tmp, variant, env, run):
    label = f' [{variant}]'
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(
            lambda fmt: (fmt, test_gdb_live.check_history(
                server, programs, tmp, PROG, fmt, env=env, label=label)),
            ('bts', 'pt')))
    for fmt, r in results:
        if not r:
            continue
        why = test_gdb_live.compare_insns(run, r[1])
        report(f'{variant}: gdb record btrace {fmt} through hwt-server equals the '
               'oracle from main', why is None, why or '')


def lldb_live(server, programs, tmp, variant, env, run):
    name = f'{variant}: lldb live thread trace through hwt-server equals the oracle'
    prog = os.path.join(programs, PROG)
    out_path = os.path.join(tmp, f'{variant}.lldb-live.out')
    extra = [f'{k}={v}' for k, v in sorted((env or {}).items())]
    try:
        with open(out_path, 'w') as prog_out:
            srv = test_lldb_server.Server(
                server, ['--', prog], cwd=programs, stdout=prog_out,
                prefix=('env', '-i', 'PATH=/usr/bin:/bin', *extra, 'setarch', '-R'))
        try:
            out = test_lldb_server.lldb(test_lldb_server.connect(prog, srv.port) + [
                'breakpoint set -n main -K false', 'process continue',
                'thread trace start', 'breakpoint set -n exit',
                'process continue',
                'thread trace dump instructions --raw --forwards --all',
                'process kill'])
        finally:
            srv.close()
        got = test_lldb_server.dump_addrs(out)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        report(name, False, str(e)[:600])
        return
    why = first_difference(got, run.addrs[:len(got)]) or \
        (None if len(got) >= len(run.addrs) - 1 else
         f'{len(got)} instructions, oracle {len(run.addrs)}')
    report(name, why is None, where(run, why) or '')


def recorded(build, programs, tmp, variant, env, run):
    """hwtrace record in ENV: its own dump from main, and lldb-22 on its
    export --lldb."""
    hwtrace = os.path.join(build, 'hwtrace')
    bundle = os.path.join(tmp, f'{variant}.bundle')
    out_dir = os.path.join(tmp, f'{variant}.lldb')
    extra = [f'{k}={v}' for k, v in sorted((env or {}).items())]
    p = subprocess.run(['env', '-i', *extra, 'setarch', '-R', hwtrace, 'record',
                        '-q', '--backend', 'ptrace', '-o', bundle, '--', os.path.join(programs, PROG)],
                       capture_output=True, text=True, timeout=900, cwd=programs)
    if not os.path.isfile(os.path.join(bundle, 'trace.json')):
        report(f'{variant}: hwtrace record', False,
               f'exit {p.returncode}: {p.stderr.strip()[:300]}')
        return
    items = next(iter(dump_items(hwtrace, bundle, gap='gap').values()))
    main = run.addrs[0]
    k = items.index(main) if main in items else None
    why = 'main is not in the recorded history' if k is None else \
        first_difference(items[k:k + len(run.addrs)], run.addrs)
    report(f'{variant}: hwtrace dump --insn of the recording equals the oracle from '
           'main', why is None, where(run, why) or '')
    name = f'{variant}: lldb-22 on hwtrace export --lldb equals the oracle from main'
    try:
        test_lldb_bundle.export(hwtrace, bundle, out_dir)
        got = test_lldb_bundle.lldb_insns(out_dir, 1)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        report(name, False, str(e)[:600])
        return
    addrs, _, errors = next(iter(got.values()))
    k = addrs.index(main) if main in addrs else None
    why = (f'{len(errors)} error items, first: {errors[0]}' if errors else
           'main is not in lldb\'s history' if k is None else
           first_difference(addrs[k:k + len(run.addrs)], run.addrs))
    report(name, why is None, where(run, why) or '')


def main():
    args = parse_args()
    build = args.build
    programs = os.path.realpath(os.path.join(build, 'programs'))
    server = os.path.join(build, 'hwt-server')
    flags = cpu_flags()
    with tempfile.TemporaryDirectory(prefix='hwt-variants-') as tmp:
        for variant, tunables, needs in VARIANTS:
            if not selected(variant):
                continue
            missing = [f for f in needs if f not in flags]
            if missing:
                print(f'SKIP {variant}: this CPU cannot run glibc\'s {variant} '
                      f'string functions ({", ".join(missing)} not in /proc/cpuinfo)',
                      flush=True)
                continue
            env = {'GLIBC_TUNABLES': tunables} if tunables else None
            try:
                run = test_gdb_live.oracle_of(PROG, programs, env)[0]
            except Exception as e:  # the oracle could not run: a failure
                report(f'{variant}: oracle', False, str(e))
                continue
            ran = test_oracle.libc_variants(run)
            # A family has members by cpu: __strcmp_sse2_unaligned where
            # unaligned loads are fast (Intel), __strcmp_sse2 elsewhere.
            report(f'{variant}: the oracle ran glibc\'s {variant} code',
                   all(impl == f'__{f}_{variant}' or
                       impl.startswith(f'__{f}_{variant}_')
                       for f, impl in ran.items()) and len(ran) == 3,
                   f'implementations seen: {ran}')
            gdb_paths(server, programs, tmp, variant, env, run)
            lldb_live(server, programs, tmp, variant, env, run)
            recorded(build, programs, tmp, variant, env, run)
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
