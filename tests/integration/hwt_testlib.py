"""Helpers the integration suites share: PASS/FAIL reporting in the form
tests/run.py counts, and running an hwtrace tool with sanitizer options so
that a memory error or undefined behaviour fails the case."""
import os
import subprocess

RESULTS = []


def report(name, ok, why=''):
    RESULTS.append(ok)
    print(f'PASS {name}' if ok else f'FAIL {name}: {why}', flush=True)


def exit_status():
    return 0 if all(RESULTS) else 1


def run_tool(binary, *args, timeout=300):
    """(returncode, stdout, stderr) of BINARY ARGS..., sanitizers armed."""
    env = dict(os.environ, ASAN_OPTIONS='detect_leaks=1',
               UBSAN_OPTIONS='halt_on_error=1:print_stacktrace=1')
    p = subprocess.run([binary, *args], capture_output=True, text=True,
                       errors='replace', env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def sanitizer_report(err):
    return ('AddressSanitizer' in err or 'runtime error:' in err or
            'LeakSanitizer' in err)


def dump_items(hwtrace, path, gap=None):
    """{tid: [address, ...]} from `hwtrace dump --insn --tsv PATH`, a gap
    item as GAP."""
    rc, out, err = run_tool(hwtrace, 'dump', '--insn', '--tsv', path,
                            timeout=600)
    if rc != 0:
        raise RuntimeError(f'hwtrace dump --insn {path}: exit {rc}: '
                           f'{err.strip()}')
    items = {}
    for line in out.splitlines():
        f = line.split('\t')
        items.setdefault(f[0], []).append(gap if f[2] == 'gap'
                                          else int(f[2], 16))
    return items
