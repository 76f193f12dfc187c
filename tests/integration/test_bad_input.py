#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Bad inputs to hwtrace: missing, truncated and corrupted bundles, broken
JSON, wrong field types and sizes, bad command lines.

Each case must end with a clear `hwtrace: ...` message and exit status 1
(2 for usage errors), or, for damage inside trace bytes, succeed with gaps
in the history. Never a crash: runs the sanitizer build when there is one,
and any sanitizer report fails the case.
"""
import json
import os
import random
import shutil
import sys
import tempfile

from hwt_testlib import exit_status, parse_args, report, sanitizer_report
from hwt_testlib import decompress_traces, run_tool


def run(binary, *args):
    return run_tool(binary, *args, timeout=300)






def expect_error(hwtrace, name, args, needle, status=1):
    rc, out, err = run(hwtrace, *args)
    if sanitizer_report(err):
        report(name, False, 'sanitizer report:\n' + err[-2000:])
    elif rc != status:
        report(name, False, f'exit status {rc}, expected {status}; stderr: {err.strip()[-500:]}')
    elif needle not in err or not err.startswith(('hwtrace', 'usage:')):
        report(name, False, f'message {err.strip()!r} lacks {needle!r}')
    else:
        report(name, True)


def expect_survives(hwtrace, name, args, want_gap):
    rc, out, err = run(hwtrace, *args)
    if sanitizer_report(err):
        report(name, False, 'sanitizer report:\n' + err[-2000:])
    elif rc not in (0, 1) or (rc == 1 and not err.startswith('hwtrace:')):
        report(name, False, f'exit status {rc}; stderr: {err.strip()[-500:]}')
    elif want_gap and rc == 0 and '\tgap\t' not in out:
        report(name, False, 'corruption produced no gap item')
    else:
        report(name, True)


def load(bundle):
    with open(os.path.join(bundle, 'trace.json')) as f:
        return json.load(f)


def save(bundle, doc, text=None):
    with open(os.path.join(bundle, 'trace.json'), 'w') as f:
        f.write(text if text is not None else json.dumps(doc, indent=1))


def variant(tmp, good, name):
    d = os.path.join(tmp, name)
    shutil.copytree(good, d, symlinks=True)
    return d


def main():
    args = parse_args()
    hwtrace = os.path.join(args.build, 'hwtrace')
    san = os.environ.get('HWT_SAN_BUILD')
    if san and os.access(os.path.join(san, 'hwtrace'), os.X_OK):
        hwtrace = os.path.join(san, 'hwtrace')
    prog = os.path.join(args.build, 'programs', 'loops')
    for f in (hwtrace, prog):
        if not os.access(f, os.X_OK):
            report('bad input setup', False, f'{f} is missing; run make')
            return 1

    tmp = tempfile.mkdtemp(prefix='hwt-bad-')
    try:
        good = os.path.join(tmp, 'good')
        rc, _, err = run(os.path.join(args.build, 'hwtrace'), 'record', '-q', '-o', good, '--', prog)
        report('record a good bundle', rc == 0 and os.path.isdir(good), f'rc {rc}: {err}')
        if rc != 0:
            return 1
        # The trace as recorded (zstd) for its own cases; the rest damage
        # the hwt-sw bytes themselves.
        packed = variant(tmp, good, 'packed')
        decompress_traces(good)
        doc = load(good)
        thread = doc['processes'][0]['threads'][0]
        trace = os.path.join(good, thread['swTrace'])
        size = os.path.getsize(trace)

        # --- command lines ---------------------------------------------------
        expect_error(hwtrace, 'no command', [], 'usage', status=2)
        expect_error(hwtrace, 'unknown command', ['frobnicate'], "unknown command", status=2)
        expect_error(hwtrace, 'dump without mode', ['dump', good], '--insn or --calls', status=2)
        expect_error(hwtrace, 'dump bad range', ['dump', '--insn', '--range', '5,2', good], '--range', status=2)
        expect_error(hwtrace, 'dump bad thread', ['dump', '--insn', '--thread', 'x', good], '--thread', status=2)
        expect_error(hwtrace, 'dump unknown thread', ['dump', '--insn', '--thread', '1', good], 'no thread 1')
        expect_error(hwtrace, 'record bad size', ['record', '--size', '12Q', '--', prog], '--size', status=2)
        expect_error(hwtrace, 'record no program', ['record', '-o', os.path.join(tmp, 'x')], 'no program', status=2)
        expect_error(hwtrace, 'record unknown backend', ['record', '-o', os.path.join(tmp, 'x'), '--backend', 'nope', '--', prog], 'nope')
        expect_error(hwtrace, 'record missing program', ['record', '-o', os.path.join(tmp, 'y'), '--', '/nonexistent/prog'], '/nonexistent/prog')
        expect_error(hwtrace, 'record existing output', ['record', '-o', good, '--', prog], 'already exists')
        report('failed record leaves no bundle', not os.path.exists(os.path.join(tmp, 'x')) and
               not any(n.startswith('x.tmp') or n.startswith('y') for n in os.listdir(tmp)),
               f'left: {os.listdir(tmp)}')

        # --- bundle structure -------------------------------------------------
        expect_error(hwtrace, 'missing bundle', ['info', os.path.join(tmp, 'none')], 'none')
        d = variant(tmp, good, 'nojson'); os.unlink(os.path.join(d, 'trace.json'))
        expect_error(hwtrace, 'missing trace.json', ['dump', '--insn', d], 'trace.json')
        d = variant(tmp, good, 'broken'); save(d, None, json.dumps(doc)[:-7])
        expect_error(hwtrace, 'broken JSON', ['dump', '--insn', d], 'invalid JSON')
        d = variant(tmp, good, 'empty'); save(d, None, '')
        expect_error(hwtrace, 'empty trace.json', ['info', d], 'invalid JSON')
        d = variant(tmp, good, 'notobj'); save(d, None, '[1,2]')
        expect_error(hwtrace, 'trace.json not an object', ['info', d], 'must be an object')
        for field, value, needle in (('tid', 'abc', 'threads[0].tid'),
                                     ('traceSize', -5, 'traceSize'),
                                     ('swTrace', 17, 'swTrace'),
                                     ('swTrace', '../../etc/passwd', 'inside the bundle'),
                                     ('swTrace', '/etc/passwd', 'inside the bundle')):
            d = variant(tmp, good, f'field-{field}-{abs(hash(str(value)))}')
            bad = json.loads(json.dumps(doc))
            bad['processes'][0]['threads'][0][field] = value
            save(d, bad)
            expect_error(hwtrace, f'bad field {field}={value!r}', ['dump', '--insn', d], needle)
        d = variant(tmp, good, 'nothreads')
        bad = json.loads(json.dumps(doc)); bad['processes'][0]['threads'] = []
        save(d, bad)
        expect_error(hwtrace, 'no threads', ['info', d], 'threads')
        d = variant(tmp, good, 'notype')
        bad = json.loads(json.dumps(doc)); del bad['type']
        save(d, bad)
        expect_error(hwtrace, 'missing type', ['info', d], "'type' is missing")
        d = variant(tmp, good, 'badcpu')
        bad = json.loads(json.dumps(doc)); bad['cpuInfo']['family'] = 'six'
        save(d, bad)
        expect_error(hwtrace, 'bad cpuInfo', ['info', d], 'cpuInfo.family')
        for note, needle in ((17, 'stop.note'), ('', 'stop.note'),
                             ('x' * 5000, 'stop.note')):
            d = variant(tmp, good, f'note-{abs(hash(str(note)))}')
            bad = json.loads(json.dumps(doc)); bad['stop']['note'] = note
            save(d, bad)
            expect_error(hwtrace, f'bad stop.note {str(note)[:10]!r}', ['info', d], needle)
        d = variant(tmp, good, 'badload')
        bad = json.loads(json.dumps(doc)); bad['processes'][0]['modules'][0]['loadAddress'] = 'zz'
        save(d, bad)
        expect_error(hwtrace, 'bad loadAddress', ['info', d], 'loadAddress')
        d = variant(tmp, good, 'missingtrace'); os.unlink(os.path.join(d, thread['swTrace']))
        expect_error(hwtrace, 'missing trace file', ['dump', '--insn', d], thread['swTrace'])
        d = variant(tmp, good, 'truncated')
        with open(os.path.join(d, thread['swTrace']), 'r+b') as f:
            f.truncate(size // 2)
        expect_error(hwtrace, 'truncated trace (size mismatch)', ['dump', '--insn', d], 'bytes but trace.json says')

        # --- a compressed trace (docs/bundle.md) ---------------------------------
        pdoc = load(packed)
        pthread = pdoc['processes'][0]['threads'][0]
        ptrace = pthread['swTrace']
        psize = pthread['traceSize']
        # Runs kept as the valgrind tool wrote them (docs/swtrace.md) are
        # dense already: they compress less than step records.
        report('a recorded hwt-sw trace is stored compressed',
               pthread.get('traceEncoding') == 'zstd' and ptrace.endswith('.zst') and
               pthread.get('traceDecodedSize') == size and psize * 2 < size,
               f'{pthread}')
        for field, value, needle in (('traceEncoding', 'gzip', 'traceEncoding'),
                                     ('traceDecodedSize', None, 'traceDecodedSize'),
                                     ('traceDecodedSize', 1 << 40, '16 GiB'),
                                     ('traceDecodedSize', size + 1, 'trace.json says')):
            d = variant(tmp, packed, f'zstd-{field}-{value}')
            bad = json.loads(json.dumps(pdoc))
            if value is None:
                del bad['processes'][0]['threads'][0][field]
            else:
                bad['processes'][0]['threads'][0][field] = value
            save(d, bad)
            expect_error(hwtrace, f'compressed trace: {field}={value!r}', ['dump', '--insn', d], needle)
        d = variant(tmp, packed, 'zstd-truncated')
        with open(os.path.join(d, ptrace), 'r+b') as f:
            f.truncate(psize // 2)
        bad = json.loads(json.dumps(pdoc)); bad['processes'][0]['threads'][0]['traceSize'] = psize // 2
        save(d, bad)
        expect_error(hwtrace, 'compressed trace cut short (size matching)', ['dump', '--insn', d],
                     'compressed trace is damaged')
        pdata = open(os.path.join(packed, ptrace), 'rb').read()
        prnd = random.Random(99)
        for i in range(6):
            d = variant(tmp, packed, f'zstd-flip{i}')
            buf = bytearray(pdata)
            for _ in range(1 + i):
                pos = prnd.randrange(len(buf))
                buf[pos] ^= 1 << prnd.randrange(8)
            with open(os.path.join(d, ptrace), 'wb') as f:
                f.write(buf)
            expect_survives(hwtrace, f'bit flips x{1 + i} in a compressed trace', ['dump', '--insn', '--tsv', d],
                            want_gap=False)

        # --- the compressed trace's index (docs/swtrace.md) --------------------
        # Never trusted: one that is missing, damaged or another trace's is
        # not used (info says why) and the trace is read whole, giving the
        # same history; damage it cannot see is an error naming the frame.
        pindex = pthread.get('traceIndex')
        report('a recorded hwt-sw trace has an index', bool(pindex) and
               os.path.getsize(os.path.join(packed, pindex)) == pthread.get('traceIndexSize'),
               f'{pthread}')
        if pindex:
            rc, whole, err = run(hwtrace, 'dump', '--insn', '--tsv', packed)
            rc_i, info, _ = run(hwtrace, 'info', packed)
            report('an index that holds is used', rc == 0 and rc_i == 0 and 'indexed' in info and
                   'index not used' not in info, f'rc {rc}/{rc_i}: {err.strip()[-300:]}')
            iraw = open(os.path.join(packed, pindex), 'rb').read()
            other = os.path.join(tmp, 'other')
            orc, _, _ = run(os.path.join(args.build, 'hwtrace'), 'record', '-q', '-o', other, '--',
                            os.path.join(args.build, 'programs', 'threads4'))
            othread = load(other)['processes'][0]['threads'][0] if orc == 0 else {}
            cases = [('missing', None, 'No such file'),
                     ('flipped', bytes(iraw[:len(iraw) // 2]) + bytes([iraw[len(iraw) // 2] ^ 4]) +
                      bytes(iraw[len(iraw) // 2 + 1:]), 'index')]
            if othread.get('traceIndex'):
                cases.append(('stale', open(os.path.join(other, othread['traceIndex']), 'rb').read(),
                              'index'))
            for name, content, needle in cases:
                d = variant(tmp, packed, f'index-{name}')
                path = os.path.join(d, pindex)
                os.unlink(path)
                if content is not None:
                    with open(path, 'wb') as f:
                        f.write(content)
                    bad = json.loads(json.dumps(pdoc))
                    bad['processes'][0]['threads'][0]['traceIndexSize'] = len(content)
                    save(d, bad)
                rc_i, info, err = run(hwtrace, 'info', d)
                rc, out, err2 = run(hwtrace, 'dump', '--insn', '--tsv', d)
                note = next((l for l in info.splitlines() if 'index not used' in l), '')
                report(f'index {name}: not used, said why, the same history',
                       rc_i == 0 and needle in note and rc == 0 and out == whole,
                       f'rc {rc_i}/{rc}, note {note!r}: {(err + err2).strip()[-300:]}')
            # A frame damaged past what its header shows: its items are an
            # error naming it, not a crash or a made-up history.
            d = variant(tmp, packed, 'index-frame-damaged')
            buf = bytearray(pdata)
            buf[len(buf) // 2] ^= 0x10
            with open(os.path.join(d, ptrace), 'wb') as f:
                f.write(buf)
            rc, out, err = run(hwtrace, 'dump', '--insn', '--tsv', d)
            report('index: a damaged frame is an error naming it',
                   rc == 1 and 'frame' in err and not sanitizer_report(err),
                   f'rc {rc}: {err.strip()[-300:]}')

        # --- damage inside the trace: gaps, not crashes -------------------------
        d = variant(tmp, good, 'truncfixed')
        with open(os.path.join(d, thread['swTrace']), 'r+b') as f:
            f.truncate(size * 2 // 3)
        bad = json.loads(json.dumps(doc)); bad['processes'][0]['threads'][0]['traceSize'] = size * 2 // 3
        save(d, bad)
        expect_survives(hwtrace, 'truncated trace with matching size', ['dump', '--insn', '--tsv', d], want_gap=True)
        rnd = random.Random(1234)
        data = open(trace, 'rb').read()
        for i in range(12):
            d = variant(tmp, good, f'flip{i}')
            buf = bytearray(data)
            for _ in range(1 + i):
                pos = rnd.randrange(len(buf))
                buf[pos] ^= 1 << rnd.randrange(8)
            with open(os.path.join(d, thread['swTrace']), 'wb') as f:
                f.write(buf)
            expect_survives(hwtrace, f'bit flips x{1 + i} in trace (dump --insn)', ['dump', '--insn', '--tsv', d], want_gap=False)
            expect_survives(hwtrace, f'bit flips x{1 + i} in trace (dump --calls)', ['dump', '--calls', '--tsv', d], want_gap=False)
        d = variant(tmp, good, 'garbage')
        with open(os.path.join(d, thread['swTrace']), 'wb') as f:
            f.write(bytes(rnd.randrange(256) for _ in range(size)))
        expect_survives(hwtrace, 'random bytes as trace', ['dump', '--insn', '--tsv', d], want_gap=True)
        d = variant(tmp, good, 'zeros')
        with open(os.path.join(d, thread['swTrace']), 'wb') as f:
            f.write(bytes(size))
        expect_survives(hwtrace, 'zeroed trace', ['dump', '--insn', '--tsv', d], want_gap=True)
        d = variant(tmp, good, 'badmodule')
        mod = doc['processes'][0]['modules'][0]
        if 'file' in mod:
            with open(os.path.join(d, mod['file']), 'wb') as f:
                f.write(b'\x7fELF' + bytes(100))
            expect_survives(hwtrace, 'corrupt module file', ['dump', '--insn', '--tsv', d], want_gap=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
