#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Stock LLDB 22 against hwt-server: `thread trace` through the jLLDBTrace*
packets and `process continue --reverse` through bc.

Post-mortem, for BUILD/programs/demo_crash and crash, each recorded with
`hwtrace record` and served with `hwt-server --bundle`:
  1. insn     lldb-22 `target create PROG`, `gdb-remote`, `process trace
              start` (the recorder traced the whole process: the server
              confirms it), `thread trace dump instructions --raw --forwards
              --all`: the addresses equal `hwtrace dump --insn --tsv BUNDLE`
              one for one. Offset rule: LLDB's instruction k (k = 0 ...) is
              the bundle's item k + 1, for every item but the last; the last
              item is the thread's stop pc, where the PT stream ends (FUP +
              TIP.PGD), so LLDB shows N - 1 instructions for N items (and
              prints newest first without --forwards).
  2. calls    `thread trace dump function-calls`: the executable's own
              functions are the same set as in `hwtrace dump --calls --tsv`,
              and from main's first segment on the call tree is the same:
              segment for segment the function, its instruction range
              (LLDB's instruction ids mapped to positions through the
              instruction dump) and its nesting. Compared are the
              executable's segments (its functions and NAME@plt), their
              level counted in the executable's functions among the callers.
              LLDB's TraceDumper tracks symbols, not the stack, and its
              representation is normalised: "symbol stub for: NAME" is
              NAME@plt; "F + OFF" (F after a return) and "F + OFF [inlined]
              G" (code inlined into F, a segment one level deeper) are F;
              ___lldb_unnamed_symbol_N (the PLT's resolver entry) is not
              the executable's function. hwtrace's tree is nested the way
              LLDB nests (lldb_view): a jump to another function (a PLT
              stub's, a tail call) is a call one level deeper, a return to
              the symbol that returns (recursion) goes on in the same
              segment, any other return goes up to the nearest caller of
              that symbol. Where a return finds no such caller (in ld.so's
              lazy binding, in libc) LLDB starts a new root that holds the
              tree so far as an untraced prefix, losing the callers above:
              levels are compared within each such section, relative to
              its first segment.
  3. save     `trace save DIR`, then a fresh lldb-22 `trace load
              DIR/trace.json` dumps the same instructions
  4. modules  the executable and its shared libraries are loaded at the
              addresses the bundle recorded, with no `target modules load`
Reverse, for BUILD/programs/hits3 (tick() runs three times, then a NULL
dereference): `process handle SIGSEGV -p false` (LLDB will not resume in
reverse with a signal to deliver), `b tick`, then `process continue
--reverse` four times must stop at the breakpoint three times and then at
the history boundary at the history's first instruction. The history holds
exactly three executions of the breakpoint address (checked with hwtrace
dump) and reverse motion only goes back, so the stops are the third, the
second and the first call, in that order.

Long, for BUILD/programs/spin 100000 (about a million instructions,
recorded by the valgrind backend): LLDB's trace is the newest 262144
instructions, as GDB's (SRV_WHOLE_LIFE_MAX_ITEMS), its oldest the history's
item count - 262143.

Live (`hwt-server -- PROG`, when the server offers it) for loops,
recursion, qsort and pie_lib: `b main`, `process launch`, `thread trace
start`, `b exit`, `continue`, `thread trace dump instructions`: the
addresses from main up to the stop at exit equal the single-step oracle's
(test_oracle.py, cached in BUILD/oracle-cache) from main, and the
instruction after LLDB's last is exit's first; the call tree of the same
instructions equals that of `hwtrace dump --calls` on the server's own
history at that stop (qHwtSave, sent with `process plugin packet send`),
as for the post-mortem bundles; `trace save` of the live trace and `trace
load` in a fresh lldb-22 dump the same instructions.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

from hwt_testlib import dump_items, exit_status, report, run_tool, selected

HERE = os.path.dirname(os.path.abspath(__file__))
LLDB = 'lldb-22'
LLDB_TIMEOUT = 300
INSN_RE = re.compile(r'^\s*(\d+): 0x([0-9a-f]+)$')
# A traced segment of `dump function-calls`: indentation (two spaces a
# level), module, function (with " + OFF" / " [inlined] G"), an optional
# source position, its last instruction and [first id, last id].
SEG_RE = re.compile(r'^( *)(\S+?)`(.*?)(?: at \S+)? to .*  \[(\d+), (\d+)\]$')
ERROR_RE = re.compile(r'^\s*(\d+): \(error\) (.*)$')
LISTEN_RE = re.compile(r'listening on 127\.0\.0\.1:(\d+)')
STOP_RE = re.compile(r'stop reason = (.*)$')
FRAME0_RE = re.compile(r'frame #0: 0x([0-9a-f]+)')
POSTMORTEM_PROGS = ('demo_crash', 'crash')
# Every single-threaded oracle program that runs to exit (crash and
# demo_crash fault first: they are the post-mortem subjects; threads4's
# per-thread histories are checked through GDB in test_gdb_live.py).
LIVE_PROGS = ('loops', 'loops_O0', 'recursion', 'fnptr', 'qsort', 'switch',
              'longjmp', 'signal', 'pie_lib', 'dlopen')
# Where a live run stops: exit, but dlopen's library is unmapped by then
# and LLDB decodes the whole trace against the live memory.
LIVE_STOP = {'dlopen': 'dlclose'}
# LLDB's call tree does not unwind a longjmp: it keeps main 4 levels deep
# where hwtrace (and GDB) pop back to level 0.
LIVE_TREE_UNLIKE = {'longjmp': 'LLDB does not unwind longjmp in its call '
                    'tree (main stays 4 levels deep)',
                    'signal': 'LLDB starts a new root at a signal '
                    "handler's entry; hwtrace nests the handler under the "
                    'interrupted frame, as GDB does',
                    'dlopen': "this comparison picks the executable's "
                    'functions by name, and the dlopened library has its '
                    'own _init and frame_dummy'}
SKIPPED = []


def skip(name, why):
    SKIPPED.append(name)
    print(f'SKIP {name}: {why}', flush=True)


class Server:
    """hwt-server on a free loopback port, for one debugger connection."""

    def __init__(self, binary, args, cwd=None, prefix=(), stdout=None):
        self.p = subprocess.Popen([*prefix, binary, '--listen', '127.0.0.1:0',
                                   *args],
                                  stdin=subprocess.DEVNULL,
                                  stdout=stdout or subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True,
                                  errors='replace', cwd=cwd)
        # Notes may come first (a machine whose debug registers do not
        # fire is named before the server listens).
        said = []
        m = None
        while not m and len(said) < 50:
            line = self.p.stderr.readline()
            if not line:
                break
            said.append(line.strip())
            m = LISTEN_RE.search(line)
        if not m:
            self.close()
            raise RuntimeError('hwt-server did not listen: ' +
                               ' '.join(said) +
                               self.p.stderr.read().strip())
        self.port = int(m.group(1))

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        return self.p.stderr.read()


def lldb(commands, timeout=LLDB_TIMEOUT):
    """stdout of lldb-22 -b running commands; RuntimeError on any error."""
    cmd = [LLDB, '-b', '--no-lldbinit']
    for c in commands:
        cmd += ['-o', c]
    p = subprocess.run(cmd, capture_output=True, text=True, errors='replace',
                       stdin=subprocess.DEVNULL, timeout=timeout)
    if p.returncode != 0 or 'error:' in p.stderr:
        raise RuntimeError(f'lldb-22 exit {p.returncode}: '
                           f'{p.stderr.strip()[:400]}')
    return p.stdout


def connect(prog, port):
    return [f'target create {prog}', f'gdb-remote 127.0.0.1:{port}']


def dump_addrs(text):
    """Instruction addresses of a `dump instructions --raw --forwards`,
    with any error item as a RuntimeError."""
    addrs = []
    for line in text.splitlines():
        if (m := INSN_RE.match(line)):
            addrs.append(int(m.group(2), 16))
        elif (m := ERROR_RE.match(line)):
            raise RuntimeError(f'LLDB decode error item: {m.group(2)}')
    return addrs


def dump_ids(text):
    """Instruction ids of a `dump instructions --raw --forwards`, in order."""
    return [int(m.group(1)) for m in map(INSN_RE.match, text.splitlines())
            if m]


def merge(segs):
    """Adjacent segments of one function at one level (and section) as one."""
    out = []
    for sg in segs:
        if out and (out[-1][0], out[-1][1], out[-1][4:]) == \
                (sg[0], sg[1], sg[4:]) and out[-1][3] + 1 == sg[2]:
            out[-1] = (*out[-1][:3], sg[3], *sg[4:])
        else:
            out.append(sg)
    return out


def from_main(segs):
    """The segments from main's first on."""
    start = next((i for i, sg in enumerate(segs) if sg[0] == 'main'), None)
    return [] if start is None else segs[start:]


def lldb_name(name):
    """LLDB's name of a function in hwtrace's terms; None for code LLDB has
    no symbol for. Inlined code ("F + OFF [inlined] G") counts as F's, and
    so does a part GCC moved out ("F - OFF": LLDB does not use F.cold)."""
    name = name.split(' [inlined] ')[0].split(' + ')[0].split(' - ')[0]
    if name.startswith('___lldb_unnamed_symbol'):
        return None
    if name.startswith('symbol stub for: '):
        return name[len('symbol stub for: '):].split()[0] + '@plt'
    return name


def lldb_tree(text, ids, exe):
    """The executable's traced segments of a `dump function-calls` as
    (function, level, first position, last position, section). The level
    counts the executable's functions among the segment's callers. When a
    return finds no caller of that symbol (LLDB loses track in ld.so and
    libc), LLDB makes a new root that holds the tree so far as an untraced
    prefix: the callers above it are lost, so levels compare only within
    a section, the segments below the same untraced prefixes."""
    pos = {i: p for p, i in enumerate(ids)}
    segs, chain = [], []
    for n, line in enumerate(text.splitlines()):
        if line.startswith('[call tree #'):
            chain = []
            continue
        m = SEG_RE.match(line) or re.match(r'^( *)(\S+?)`(.*)$', line)
        if not m:
            continue
        depth = len(m.group(1)) // 2
        traced = m.re is SEG_RE
        name = lldb_name(m.group(3)) if m.group(2) == exe else None
        inlined = ' [inlined] ' in m.group(3)
        # A line at the depth of the last one at or above it goes on with
        # that call (its next segment); below its parent, a new call.
        del chain[depth + 1:]
        if len(chain) <= depth:
            chain.append((bool(name) and not inlined,
                          None if traced else n))
        if not (traced and name):
            continue
        first, last = int(m.group(4)), int(m.group(5))
        if first not in pos or last not in pos:
            raise RuntimeError(f'segment [{first}, {last}] names an id the '
                               'instruction dump does not have')
        level = sum(1 for own, _ in chain if own) - (0 if inlined else 1)
        section = tuple(p for _, p in chain if p is not None)
        segs.append((name, level, pos[first], pos[last], section))
    return from_main(merge(segs))


def lldb_view(segs, own):
    """hwtrace's segments (function, level, first, last) nested as LLDB's
    TraceDumper nests them, which tracks symbols, not the stack: entering
    a function by a jump (a PLT stub's, a tail call) is a call one level
    deeper; a return to the symbol that returns (recursion) goes on in the
    same segment; any other return goes up to the nearest caller of that
    symbol. The level counts the executable's functions on that stack."""
    out, stack, prev_level = [], [], 0
    for name, level, first, last in segs:
        if not out:
            stack = [name]
        elif level > prev_level or name != out[-1][0] and \
                level == prev_level:
            stack.append(name)
        elif level < prev_level and name == stack[-1]:
            out[-1] = (*out[-1][:3], last)
            prev_level = level
            continue
        elif level < prev_level:
            up = next((i for i in range(len(stack) - 2, -1, -1)
                       if stack[i] == name), None)
            stack = stack[:up + 1] if up is not None else [name]
        out.append((name, sum(1 for n in stack if n in own) - 1, first,
                    last))
        prev_level = level
    return out


def cold_parent(name):
    """F for F.cold, the out-of-line part GCC splits off F."""
    return name[:-len('.cold')] if name.endswith('.cold') else name


def hwtrace_tree(calls_tsv, own, offset, limit):
    """The executable's segments of `hwtrace dump --calls --tsv` as LLDB
    nests them, item i at position i - offset, up to position limit."""
    segs = [(f[2], int(f[1]), int(f[3]) - offset, int(f[4]) - offset)
            for f in (line.split('\t') for line in calls_tsv.splitlines())
            if len(f) > 4]
    # LLDB nests the jump into F.cold as into another function, then
    # names it after F.
    segs = [(cold_parent(n), lv, a, min(b, limit))
            for n, lv, a, b in lldb_view(segs, own)
            if n in own and a <= limit]
    return from_main(merge(segs))


def relative_levels(segs, sections):
    """(function, level relative to its section's first segment, first,
    last) with the sections LLDB's segments are in."""
    out, base = [], 0
    for i, (name, level, first, last, *_) in enumerate(segs):
        if i == 0 or sections[i] != sections[i - 1]:
            base = level
        out.append((name, level - base, first, last))
    return out


def compare_trees(name, lldb_segs, hwt_segs):
    """Same functions over the same instructions, same nesting within each
    of LLDB's sections."""
    sections = [sg[4] for sg in lldb_segs]
    got = relative_levels(lldb_segs, sections)
    # Functions and ranges first: levels compare only segment for segment.
    if len(hwt_segs) != len(lldb_segs):
        got = [(n, a, b) for n, _, a, b, *_ in lldb_segs]
        want = [(n, a, b) for n, _, a, b, *_ in hwt_segs]
    else:
        want = relative_levels(hwt_segs, sections)
    if got and got == want:
        report(name, True)
        print(f'  {len(got)} segments from main, {len(set(sections))} '
              'section(s)', flush=True)
        return
    i = first_difference(got, want)
    report(name, False, f'{len(got)} segments, expected {len(want)}; first '
           f'difference at {i}: lldb {got[i] if i < len(got) else "end"}, '
           f'hwtrace {want[i] if i < len(want) else "end"}')


def record(hwtrace, prog, bundle):
    rc, _, err = run_tool(hwtrace, 'record', '--backend', 'ptrace', '-o',
                          bundle, '--', prog,
                          timeout=600)
    if not os.path.isdir(bundle):
        raise RuntimeError(f'hwtrace record {prog}: exit {rc}: {err.strip()}')


def first_difference(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
                min(len(a), len(b)))


def compare(name, got, want):
    if got == want:
        report(name, True)
        return True
    i = first_difference(got, want)
    report(name, False, f'{len(got)} instructions, expected {len(want)}; '
           f'first difference at {i}: lldb '
           f'{hex(got[i]) if i < len(got) else "end"}, expected '
           f'{hex(want[i]) if i < len(want) else "end"}')
    return False


def exe_functions(prog):
    """The executable's own function names (nm text symbols) and NAME@plt
    for its imports, as `hwtrace dump --calls` names them."""
    p = subprocess.run(['nm', '-P', prog], capture_output=True, text=True,
                       check=True)
    own = set()
    for f in (line.split() for line in p.stdout.splitlines()):
        if len(f) >= 2 and f[1] in 'tTwW':
            own.add(f[0])
        elif len(f) >= 2 and f[1] == 'U':
            own.add(f[0].split('@')[0] + '@plt')
    return own


def lldb_calls(text, exe):
    """Own function names in a `dump function-calls`, in hwtrace's terms:
    LLDB calls a PLT entry "symbol stub for: NAME"."""
    pat = re.compile(r'^\s*' + re.escape(exe) + r'`(.*)$')
    names = set()
    for line in text.splitlines():
        if not (m := pat.match(line)):
            continue
        n = m.group(1)
        if n.startswith('___lldb_unnamed_symbol'):
            continue
        if n.startswith('symbol stub for: '):
            n = n[len('symbol stub for: '):].split()[0] + '@plt'
        names.add(n.split()[0])
    return names


def check_postmortem(build, server, tmp, name):
    hwtrace = os.path.join(build, 'hwtrace')
    prog = os.path.join(build, 'programs', name)
    bundle = os.path.join(tmp, name + '.bundle')
    saved = os.path.join(tmp, name + '.saved')
    record(hwtrace, prog, bundle)
    items = dump_items(hwtrace, bundle)
    if len(items) != 1:
        report(f'{name} post-mortem threads', False,
               f'{len(items)} threads recorded, the test expects one')
        return
    tid, hist = next(iter(items.items()))
    if None in hist:
        report(f'{name} post-mortem history', False, 'the recording has a gap')
        return
    srv = Server(server, ['--bundle', bundle])
    try:
        out = lldb(connect(prog, srv.port) + [
            'image list -h -f',
            'process trace start',
            'thread trace dump instructions --raw --forwards --all',
            'thread trace dump function-calls',
            f'trace save {saved}'])
    finally:
        srv_err = srv.close()
    compare(f'{name} lldb insn = hwtrace dump (items 1..N-1)',
            dump_addrs(out), hist[:-1])
    print(f'  {name}: {len(hist)} items, {len(hist) - 1} instructions '
          'in LLDB', flush=True)

    rc, calls, err = run_tool(hwtrace, 'dump', '--calls', '--tsv', bundle)
    own = exe_functions(prog)
    want = {f[2] for f in (line.split('\t') for line in calls.splitlines())
            if len(f) > 2 and f[2] in own}
    got = lldb_calls(out, os.path.basename(prog))
    report(f'{name} lldb function-calls = hwtrace dump --calls', rc == 0 and
           want == got, f'only hwtrace: {sorted(want - got)}; only lldb: '
           f'{sorted(got - want)}; {err.strip()}')
    # LLDB's instruction k is item k + 1.
    compare_trees(f'{name} lldb function-calls tree = hwtrace dump --calls',
                  lldb_tree(out, dump_ids(out), os.path.basename(prog)),
                  hwtrace_tree(calls, own, 1, len(hist) - 2))

    # The bundle's modules at their recorded load addresses.
    with open(os.path.join(bundle, 'trace.json')) as f:
        mods = json.load(f)['processes'][0]['modules']
    want = {os.path.realpath(m['systemPath']): m['loadAddress'] for m in mods}
    got = {os.path.realpath(m.group(2)): int(m.group(1), 16) for m in
           re.finditer(r'^\[\s*\d+\] 0x([0-9a-f]+) (\S+)$', out, re.M)}
    report(f'{name} lldb modules at the recorded addresses', want == got,
           f'bundle {want}, lldb {got}')

    try:
        loaded = lldb([f'trace load {saved}/trace.json',
                       'thread trace dump instructions --raw --forwards --all'])
        compare(f'{name} trace save + trace load', dump_addrs(loaded),
                hist[:-1])
    except RuntimeError as e:
        report(f'{name} trace save + trace load', False, str(e))
    if 'error' in srv_err.lower():
        report(f'{name} server log', False, srv_err.strip()[:300])


def stops(text):
    """(stop reason, frame #0 pc) of each stop LLDB printed."""
    res, reason = [], None
    for line in text.splitlines():
        if (m := STOP_RE.search(line)):
            reason = m.group(1).strip()
        elif reason and (m := FRAME0_RE.search(line)):
            res.append((reason, int(m.group(1), 16)))
            reason = None
    return res


def check_reverse(build, server, tmp):
    hwtrace = os.path.join(build, 'hwtrace')
    prog = os.path.join(build, 'programs', 'hits3')
    bundle = os.path.join(tmp, 'hits3.bundle')
    record(hwtrace, prog, bundle)
    hist = next(iter(dump_items(hwtrace, bundle).values()))
    srv = Server(server, ['--bundle', bundle])
    try:
        out = lldb(connect(prog, srv.port) + [
            'process handle SIGSEGV -p false', 'breakpoint set -n tick',
            'process continue --reverse', 'process continue --reverse',
            'process continue --reverse', 'process continue --reverse'])
    finally:
        srv.close()
    m = re.search(r'Breakpoint 1: where = .*, address = 0x([0-9a-f]+)', out)
    if not m:
        report('reverse breakpoint set', False, 'no address for tick')
        return
    bp = int(m.group(1), 16)
    hits = hist.count(bp)
    report('reverse history has tick three times', hits == 3,
           f'{hits} executions of {bp:#x}')
    got = stops(out)
    want = [('signal SIGSEGV', hist[-1])] + \
        [('breakpoint 1.1', bp)] * 3 + \
        [('history boundary', hist[0])]
    report('reverse continue: hit 3, 2, 1, then the history boundary',
           got == want, f'stops {[(r, hex(a)) for r, a in got]}, expected '
           f'{[(r, hex(a)) for r, a in want]}')


def check_long(build, server, tmp):
    hwtrace = os.path.join(build, 'hwtrace')
    prog = os.path.join(build, 'programs', 'spin')
    bundle = os.path.join(tmp, 'long.bundle')
    rc, _, err = run_tool(hwtrace, 'record', '-q', '--backend', 'valgrind',
                          '-o', bundle, '--', prog, '100000', timeout=600)
    _, info, _ = run_tool(hwtrace, 'info', bundle)
    m = re.search(r'(\d+) items in history', info)
    count = int(m.group(1)) if m else 0
    if count < 4 * (256 << 10):
        report('long: record spin 100000', False,
               f'exit {rc}, {count} items: {err.strip()[-300:]}')
        return
    first = count - (256 << 10) + 1
    _, tsv, _ = run_tool(hwtrace, 'dump', '--insn', '--tsv', '--range',
                         f'{first},{first + 1}', bundle)
    want = [int(line.split('\t')[2], 16) for line in tsv.splitlines()]
    srv = Server(server, ['--bundle', bundle])
    try:
        out = lldb(connect(prog, srv.port) + [
            'process trace start',
            'thread trace dump instructions --raw --forwards -c 2'])
    finally:
        srv.close()
    got = [int(a, 16) for a in re.findall(r'^\s+\d+: (0x[0-9a-f]+)', out,
                                           re.M)]
    report('long: LLDB gets the newest 262144 instructions of a longer '
           'history', got == want and len(want) == 2,
           f'lldb {[hex(a) for a in got]}, hwtrace items {first}.. '
           f'{[hex(a) for a in want]}')


def lldb_error(commands):
    """stderr of lldb-22 -b running commands that must end in an error."""
    cmd = [LLDB, '-b', '--no-lldbinit']
    for c in commands:
        cmd += ['-o', c]
    p = subprocess.run(cmd, capture_output=True, text=True, errors='replace',
                       stdin=subprocess.DEVNULL, timeout=LLDB_TIMEOUT)
    return p.stderr


def check_requests(build, server, tmp):
    """What the software trace cannot do is refused with its reason, and
    post-mortem a stop hides the trace. LLDB asks for the trace state once
    per process stop, so the stop comes before its first question."""
    prog = os.path.join(build, 'programs', 'hits3')
    bundle = os.path.join(tmp, 'hits3.bundle')
    cases = (('tsc', 'process trace start --tsc', 'has no TSC'),
             ('per-cpu', 'process trace start --per-cpu-tracing',
              'Per-cpu tracing is not available'),
             ('buffer size', 'process trace start -s 1000',
              'must be a power of 2'))
    for what, cmd, msg in cases:
        srv = Server(server, ['--bundle', bundle])
        try:
            err = lldb_error(connect(prog, srv.port) + [cmd])
        finally:
            srv.close()
        report(f'trace start refuses {what}', msg in err,
               f'stderr {err.strip()[:300]!r}')
    srv = Server(server, ['--bundle', bundle])
    try:
        out = lldb(connect(prog, srv.port) + [
            'process trace start', 'process trace stop',
            'thread trace dump info'])
    finally:
        srv.close()
    report('trace stop hides the trace', ', not traced' in out,
           'dump info after the stop did not say "not traced"')


def rsp_escape(payload):
    out = bytearray()
    for b in payload:
        if b in b'$#}*':
            out += bytes((0x7d, b ^ 0x20))
        else:
            out.append(b)
    return bytes(out)


def rsp_unescape(payload):
    out, i = bytearray(), 0
    while i < len(payload):
        if payload[i] == 0x7d and i + 1 < len(payload):
            out.append(payload[i + 1] ^ 0x20)
            i += 2
        else:
            out.append(payload[i])
            i += 1
    return bytes(out)


class Raw:
    """A bare gdb-remote client in no-ack mode."""

    def __init__(self, port):
        self.s = socket.create_connection(('127.0.0.1', port), timeout=30)
        self.buf = b''
        self.ask('QStartNoAckMode')

    def ask(self, text):
        payload = rsp_escape(text.encode())
        self.s.sendall(b'$' + payload + b'#%02x' % (sum(payload) & 0xff))
        while True:
            self.buf = self.buf.lstrip(b'+')
            h = self.buf.find(b'#')
            if self.buf[:1] == b'$' and h >= 0 and len(self.buf) >= h + 3:
                reply, self.buf = self.buf[1:h], self.buf[h + 3:]
                return rsp_unescape(reply)
            chunk = self.s.recv(65536)
            if not chunk:
                raise RuntimeError(f'server closed the connection after {text!r}')
            self.buf += chunk


def check_bad_requests(build, server, tmp):
    """Malformed or impossible trace requests get LLDB's error reply (E
    then a code); the server survives them and still serves the trace."""
    bundle = os.path.join(tmp, 'hits3.bundle')
    srv = Server(server, ['--bundle', bundle])
    bad = ['jLLDBTraceStart:', 'jLLDBTraceStart:{', 'jLLDBTraceStart:[]',
           'jLLDBTraceStart:{"type":"bts"}',
           'jLLDBTraceStart:{"type":"intel-pt","tids":[1]}',
           'jLLDBTraceStart:{"type":"intel-pt","tids":"x"}',
           'jLLDBTraceStart:{"type":"intel-pt","iptTraceSize":"0x"}',
           'jLLDBTraceStart:{"type":"intel-pt","iptTraceSize":-4096}',
           'jLLDBTraceStart:{"type":"intel-pt","enableTsc":1}',
           'jLLDBTraceStop:{"type":"intel-pt","tids":[1]}',
           'jLLDBTraceGetState:{"type":"intel-pt","type":"intel-pt"}',
           'jLLDBTraceGetBinaryData:{"type":"intel-pt"}',
           'jLLDBTraceGetBinaryData:{"type":"intel-pt","kind":"nope"}',
           'jLLDBTraceGetBinaryData:{"type":"intel-pt","kind":"iptTrace",'
           '"tid":1}',
           'jLLDBTraceGetBinaryData:{"type":"intel-pt","kind":"procfsCpuInfo",'
           '"offset":1000000,"size":1}',
           'jLLDBTraceGetBinaryData:{"type":"intel-pt","kind":"procfsCpuInfo",'
           '"offset":0,"size":18446744073709551615}',
           'jLLDBTraceGetBinaryData:{"type":"intel-pt","kind":"iptTrace",'
           '"tid":1,"cpuId":0}']
    wrong = []
    try:
        c = Raw(srv.port)
        for p in bad:
            r = c.ask(p)
            if not re.match(rb'^E[0-9a-f]{2}', r):
                wrong.append(f'{p[:60]!r} -> {r[:60]!r}')
        state = c.ask('jLLDBTraceGetState:{"type":"intel-pt"}')
        tid = json.loads(state)['tracedThreads'][0]['tid']
        data = c.ask('jLLDBTraceGetBinaryData:{"type":"intel-pt",'
                     f'"kind":"iptTrace","tid":{tid}}}')
        size = json.loads(state)['tracedThreads'][0]['binaryData'][0]['size']
        if len(data) != size:
            wrong.append(f'trace {len(data)} bytes, state said {size}')
    finally:
        log = srv.close()
    report('bad trace requests get errors, the trace still served',
           not wrong, '; '.join(wrong)[:600] + log[-200:])


def live_available(server):
    p = subprocess.run([server, '--help'], capture_output=True, text=True)
    return '-- PROG' in p.stdout + p.stderr


def check_live(build, server, tmp, name):
    sys.path.insert(0, HERE)
    import test_oracle
    progs = {p.name: p for p in test_oracle.PROGRAMS}
    programs = os.path.realpath(os.path.join(build, 'programs'))
    prog = os.path.join(programs, name)
    cache = os.path.join(build, 'oracle-cache')
    os.makedirs(cache, exist_ok=True)
    runs, _, _ = test_oracle.run_oracle(progs[name], prog, cache, programs)
    oracle = runs[0].addrs
    # The oracle runs with ASLR off (GDB's default): so does the server's
    # inferior, through the personality setarch gives the server. Its
    # output goes to a regular file as the oracle's does: stdio takes
    # another path for a character device.
    out_path = os.path.join(tmp, name + '.out')
    with open(out_path, 'w') as prog_out:
        srv = Server(server, ['--', prog], cwd=programs,
                     prefix=('setarch', '-R'), stdout=prog_out)
    saved = os.path.join(tmp, name + '.live-saved')
    history = os.path.join(tmp, name + '.live-history')
    try:
        out = lldb(connect(prog, srv.port) + [
            # signal raises SIGUSR1 for its own handler: not a stop.
            'process handle SIGUSR1 -s false -n false -p true',
            'breakpoint set -n main -K false', 'process continue',
            'thread trace start',
            f'breakpoint set -n {LIVE_STOP.get(name, "exit")}',
            'process continue',
            'thread trace dump instructions --raw --forwards --all',
            'thread trace dump function-calls', f'trace save {saved}',
            'process plugin packet send qHwtSave:' +
            history.encode().hex(), 'process kill'])
    finally:
        srv.close()
    got = dump_addrs(out)
    pcs = [int(a, 16) for a in FRAME0_RE.findall(out)]
    # lldb-server answers k with the exit (X09); LLDB waits for it.
    report(f'{name} live process kill: the server answers with the exit',
           'exited with status = 9' in out,
           out[out.rfind('process kill'):][:300])
    if got and oracle and got[0] != oracle[0]:
        report(f'{name} live start at main', False,
               f'lldb starts at {got[0]:#x}, oracle at {oracle[0]:#x}')
        return
    if compare(f'{name} live lldb insn = oracle from main', got,
               oracle[:len(got)]):
        print(f'  {name}: {len(got)} instructions from main to exit',
              flush=True)
    # The stream ends at the stop pc: the oracle's next instruction.
    end = oracle[len(got)] if len(got) < len(oracle) else None
    report(f'{name} live trace ends at the stop', bool(pcs) and
           end == pcs[-1], f'stop pc {[hex(p) for p in pcs[-1:]]}, oracle '
           f'after the trace {hex(end) if end else "none"}')

    # The server's history ends at the stop pc, LLDB's trace just before
    # it: LLDB's position k is item N - L + k for N items, L instructions.
    hwtrace = os.path.join(build, 'hwtrace')
    hist = next(iter(dump_items(hwtrace, history).values()))
    offset = len(hist) - len(got)
    if hist[offset - 1:-1] != got:
        report(f'{name} live server history ends with the LLDB trace', False,
               f'{len(hist)} items, {len(got)} LLDB instructions')
        return
    rc, calls, err = run_tool(hwtrace, 'dump', '--calls', '--tsv', history)
    if rc != 0:
        raise RuntimeError(f'hwtrace dump --calls: exit {rc}: {err.strip()}')
    if name in LIVE_TREE_UNLIKE:
        skip(f'{name} live lldb function-calls tree', LIVE_TREE_UNLIKE[name])
    else:
        compare_trees(f'{name} live lldb function-calls tree = hwtrace '
                      'dump --calls', lldb_tree(out, dump_ids(out), name),
                      hwtrace_tree(calls, exe_functions(prog), offset,
                                   len(got) - 1))
    try:
        loaded = lldb([f'trace load {saved}/trace.json',
                       'thread trace dump instructions --raw --forwards --all'])
        compare(f'{name} live trace save + trace load', dump_addrs(loaded),
                got)
    except RuntimeError as e:
        report(f'{name} live trace save + trace load', False, str(e))
    # Bundles both ways: what lldb-22 saved, hwtrace reads.
    try:
        saved_items = list(dump_items(hwtrace, saved).values())
        compare(f'{name} hwtrace dump of lldb trace save = lldb',
                saved_items[0] if len(saved_items) == 1 else [], got)
    except RuntimeError as e:
        report(f'{name} hwtrace dump of lldb trace save = lldb', False,
               str(e))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--build', default='build')
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    server = os.path.join(build, 'hwt-server')
    if not shutil.which(LLDB):
        report('lldb-22', False, 'lldb-22 is not installed: install the '
               'Debian package lldb-22 (scripts/install-deps.sh does)')
        return exit_status()
    for path in (server, os.path.join(build, 'hwtrace'),
                 os.path.join(build, 'programs', 'hits3')):
        if not os.access(path, os.X_OK):
            report('binaries', False, f'{path} missing: run make')
            return exit_status()
    tmp = tempfile.mkdtemp(prefix='hwt-lldb-srv-')
    try:
        for name in POSTMORTEM_PROGS:
            if not selected(f'{name}-postmortem'):
                continue
            try:
                check_postmortem(build, server, tmp, name)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                report(f'{name} post-mortem', False, str(e))
        try:
            if selected('long'):
                check_long(build, server, tmp)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            report('long', False, str(e))
        try:
            if selected('reverse'):
                check_reverse(build, server, tmp)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            report('reverse', False, str(e))
        try:
            if selected('requests'):
                check_requests(build, server, tmp)
                check_bad_requests(build, server, tmp)
        except (RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            report('trace requests', False, str(e))
        if not live_available(server):
            for name in LIVE_PROGS:
                skip(f'{name} live', 'this hwt-server has no live mode '
                     '(`hwt-server --listen ADDR -- PROG`)')
        else:
            for name in LIVE_PROGS:
                if not selected(f'{name}-live'):
                    continue
                try:
                    check_live(build, server, tmp, name)
                except (RuntimeError, subprocess.TimeoutExpired) as e:
                    report(f'{name} live', False, str(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    from hwt_testlib import RESULTS
    print(f'{sum(RESULTS)} passed, {len(RESULTS) - sum(RESULTS)} failed'
          + (f', {len(SKIPPED)} skipped' if SKIPPED else ''))
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
