# SPDX-License-Identifier: BSD-2-Clause
"""Helpers the integration suites share: PASS/FAIL reporting in the form
tests/run.py counts, and running an hwtrace tool with sanitizer options so
that a memory error or undefined behaviour fails the case."""
import argparse
import fnmatch
import os
import re
import subprocess
import time

RESULTS = []
OFFERED, CHOSEN = [], []


def report(name, ok, why=''):
    RESULTS.append(ok)
    print(f'PASS {name}' if ok else f'FAIL {name}: {why}', flush=True)


def selected(name):
    """Whether the test group NAME runs: tests/run.py SUITE:TEST sets
    HWT_TEST to a shell pattern of the groups to run; unset runs all."""
    want = os.environ.get('HWT_TEST', '')
    OFFERED.append(name)
    if want and not fnmatch.fnmatchcase(name, want):
        return False
    CHOSEN.append(name)
    return True


def selection_error():
    """Why HWT_TEST picked nothing, or None. A selection that picked
    nothing is a mistyped name, not a pass."""
    want = os.environ.get('HWT_TEST', '')
    if not want or CHOSEN:
        return None
    names = sorted(set(OFFERED))
    return (f"no test of this suite matches '{want}'" +
            (f" (its tests: {', '.join(names)})" if names else
             '; its checks run as one, run it without :TEST'))


def exit_status():
    """0 when every check passed and a selection picked something."""
    why = selection_error()
    if why:
        report('select', False, why)
    return 0 if all(RESULTS) else 1


def parse_args(*extra):
    """The suite's arguments: --build DIR (made absolute) and any EXTRA
    (flags, help) options tests/run.py never passes."""
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', required=True)
    for flag, help_text in extra:
        ap.add_argument(flag, help=help_text)
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    return args


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


class ServerProcess:
    """An hwt-server started with ARGV (in ENV, or this environment), its
    stderr in TMP/NAME.stderr, and the address it says it listens on (a
    unix socket's path without 'unix:'); None when it never says so
    within 30 s."""

    def __init__(self, argv, tmp, name, stdout=subprocess.DEVNULL, cwd=None,
                 env=None):
        self.err_path = os.path.join(tmp, f'{name}.stderr')
        self.err = open(self.err_path, 'w')
        self.proc = subprocess.Popen(argv, stdout=stdout, stderr=self.err,
                                     cwd=cwd, env=env)
        self.address = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = re.search(r'listening on (\S+)', self.log())
            if m:
                a = m.group(1)
                self.address = a[5:] if a.startswith('unix:') else a
                break
            time.sleep(0.02)

    def log(self):
        with open(self.err_path) as f:
            return f.read()

    def wait(self, timeout=10):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.err.close()


def decompress_traces(bundle):
    """Turn a bundle's zstd-compressed thread traces (docs/bundle.md) into
    the traces themselves, in place, for tests that edit trace bytes."""
    import ctypes
    import json
    zstd = ctypes.CDLL('libzstd.so.1')
    zstd.ZSTD_decompress.restype = ctypes.c_size_t
    zstd.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t,
                                     ctypes.c_char_p, ctypes.c_size_t]
    zstd.ZSTD_isError.argtypes = [ctypes.c_size_t]
    path = os.path.join(bundle, 'trace.json')
    with open(path) as f:
        doc = json.load(f)
    for t in doc['processes'][0]['threads']:
        if t.get('traceEncoding') != 'zstd':
            continue
        key = next(k for k in ('swTrace', 'btsTrace', 'iptTrace') if k in t)
        old = os.path.join(bundle, t[key])
        with open(old, 'rb') as f:
            packed = f.read()
        out = ctypes.create_string_buffer(t['traceDecodedSize'])
        n = zstd.ZSTD_decompress(out, len(out), packed, len(packed))
        if zstd.ZSTD_isError(n) or n != len(out):
            raise RuntimeError(f'{old}: not a zstd frame of the size given')
        os.unlink(old)
        t[key] = t[key][:-4] if t[key].endswith('.zst') else t[key]
        with open(os.path.join(bundle, t[key]), 'wb') as f:
            f.write(out.raw)
        t['traceSize'] = n
        del t['traceEncoding'], t['traceDecodedSize']
        if 'traceIndex' in t:
            os.unlink(os.path.join(bundle, t['traceIndex']))
            del t['traceIndex'], t['traceIndexSize']
    with open(path, 'w') as f:
        json.dump(doc, f, indent=2)
