#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""hwtrace export --chrome and --svg on recordings of the test programs:
the Trace Event JSON has the structure Perfetto and chrome://tracing read
(complete events nested per thread as the calls were, thread names, the
clock said, gaps, signals and the fault as instant events) and names the
functions `hwtrace dump --calls` names; the SVG is well-formed XML whose
boxes carry their source and instruction range, and rsvg-convert renders
it to a picture that is not blank."""
import json
import os
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zlib

from hwt_testlib import exit_status, parse_args, report, selected

SVG_NS = '{http://www.w3.org/2000/svg}'


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def png_colours(path):
    """Distinct RGB colours of an 8-bit RGB or RGBA PNG (a small decoder:
    zlib and the five row filters)."""
    data = open(path, 'rb').read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    pos, idat, width = 8, b'', 0
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            width, height, depth, ctype = struct.unpack('>IIBB', body[:10])
            assert depth == 8 and ctype in (2, 6)
            bpp = 4 if ctype == 6 else 3
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    raw, stride = zlib.decompress(idat), width * bpp
    prev, colours, i = bytearray(stride), set(), 0
    for _ in range(height):
        f, row = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = row[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if f == 1:
                row[x] = (row[x] + a) & 255
            elif f == 2:
                row[x] = (row[x] + b) & 255
            elif f == 3:
                row[x] = (row[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[x] = (row[x] + (a if pa <= pb and pa <= pc else
                                    b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp * 7):
            colours.add(bytes(row[x:x + 3]))
        prev = row
    return colours


def nested(events):
    """True when complete events of a thread, sorted by start, never cross
    (each one is inside the one open around it, or after it)."""
    stack = []
    for e in sorted(events, key=lambda e: (e['ts'], -e['dur'])):
        while stack and e['ts'] >= stack[-1]['ts'] + stack[-1]['dur']:
            stack.pop()
        if stack and e['ts'] + e['dur'] > stack[-1]['ts'] + stack[-1]['dur']:
            return False
        stack.append(e)
    return True


def chrome_checks(hwtrace, bundle, tmp, name):
    out = os.path.join(tmp, f'{name}.json')
    p = run([hwtrace, 'export', '--chrome', '-o', out, bundle])
    if p.returncode:
        report(f'{name}: export --chrome', False, p.stderr)
        return None
    doc = json.load(open(out))
    ev = doc.get('traceEvents', [])
    xs = [e for e in ev if e.get('ph') == 'X']
    well = bool(xs) and all(isinstance(e.get('name'), str) and
                            isinstance(e.get('ts'), (int, float)) and
                            isinstance(e.get('dur'), (int, float)) and e['dur'] >= 0 and
                            isinstance(e.get('pid'), int) and isinstance(e.get('tid'), int)
                            for e in xs)
    tids = {e['tid'] for e in xs}
    names = {e['tid'] for e in ev if e.get('ph') == 'M' and e.get('name') == 'thread_name'}
    report(f'{name}: --chrome writes complete events with name, ts, dur, pid, tid, '
           'a thread_name for each thread and the clock', well and tids <= names and
           'instruction' in doc.get('otherData', {}).get('clock', ''),
           f'{len(xs)} events, threads {tids}, named {names}, {doc.get("otherData")}')
    report(f'{name}: each thread\'s events nest as the calls did',
           all(nested([e for e in xs if e['tid'] == t]) for t in tids), '')
    calls = run([hwtrace, 'dump', '--calls', '--tsv', bundle]).stdout
    # tid, level, function, first, last (docs/cli.md)
    dumped = {line.split('\t')[2] for line in calls.splitlines()
              if line.count('\t') >= 4 and line.split('\t')[2] != '[gap]'}
    exported = {e['name'] for e in xs}
    report(f'{name}: --chrome names the functions dump --calls names',
           dumped and dumped <= exported | {'??'},
           f'missing {sorted(dumped - exported)[:10]}')
    return doc


def svg_checks(hwtrace, bundle, tmp, name, since=None, source=True):
    out = os.path.join(tmp, f'{name}.svg')
    p = run([hwtrace, 'export', '--svg', '-o', out, bundle] +
            (['--since', since] if since else []))
    if p.returncode:
        report(f'{name}: export --svg', False, p.stderr)
        return None
    try:
        root = ET.parse(out).getroot()
    except ET.ParseError as e:
        report(f'{name}: --svg is well-formed XML', False, str(e))
        return None
    titles = [t.text or '' for t in root.iter(SVG_NS + 'title')]
    report(f'{name}: --svg is well-formed XML with a box per call, each titled with '
           'its ' + ('source and ' if source else '') + 'instruction range',
           root.tag == SVG_NS + 'svg' and
           any(('.c:' in t or not source) and 'instructions' in t for t in titles),
           f'{len(titles)} titles: {titles[:3]}')
    png = os.path.join(tmp, f'{name}.png')
    r = run(['rsvg-convert', '-o', png, out])
    if r.returncode == 127 or 'not found' in r.stderr:
        print(f'SKIP {name}: rsvg-convert is not installed (librsvg2-bin)')
        return titles
    colours = png_colours(png) if r.returncode == 0 else set()
    report(f'{name}: rsvg-convert renders the SVG, and the picture is not blank',
           r.returncode == 0 and len(colours) > 4, f'{r.stderr[-300:]} {len(colours)} colours')
    return titles


def snapshot_checks(hwtrace, tmp):
    """Real trace made elsewhere: an OpenCSD snapshot (Snowball, ETMv3,
    no symbols) whose decode has gaps where the snapshot holds no code."""
    snap = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..',
                        'shared', 'corpus', 'opencsd', 'snapshots', 'Snowball')
    if not os.path.isdir(snap):
        print('SKIP snapshot pictures: ../shared/corpus/opencsd is not here')
        return
    doc = chrome_checks(hwtrace, snap, tmp, 'Snowball')
    gaps = [e for e in (doc or {}).get('traceEvents', [])
            if e.get('ph') == 'i' and e.get('name') == 'gap']
    report('Snowball: gaps are instant events with their reason',
           gaps and all(e['args'].get('reason') for e in gaps),
           f'{len(gaps)} gaps: {gaps[:1]}')
    svg_checks(hwtrace, snap, tmp, 'Snowball', source=False)


def main():
    args = parse_args()
    hwtrace = os.path.join(args.build, 'hwtrace')
    programs = os.path.join(args.build, 'programs')
    with tempfile.TemporaryDirectory(prefix='hwt-pictures-') as tmp:
        bundles = {}
        for prog in ('demo_crash', 'threads4', 'signal'):
            b = os.path.join(tmp, prog + '.bundle')
            p = run([hwtrace, 'record', '-q', '--backend', 'ptrace', '-o', b, '--',
                     os.path.join(programs, prog)])
            if not os.path.exists(os.path.join(b, 'trace.json')):
                report(f'record {prog}', False, p.stderr)
                continue
            bundles[prog] = b
        if 'demo_crash' in bundles and selected('chrome'):
            doc = chrome_checks(hwtrace, bundles['demo_crash'], tmp, 'demo_crash')
            faults = [e for e in (doc or {}).get('traceEvents', [])
                      if e.get('ph') == 'i' and e.get('name') == 'fault']
            report('demo_crash: the fault is an instant event at the end',
                   len(faults) == 1 and 'Segmentation' in faults[0]['args']['reason'],
                   f'{faults}')
        if 'demo_crash' in bundles and selected('chrome'):
            # A per-cpu LLDB export carries TSC in every PSB and perf's
            # conversion: its activations are timed by the trace.
            pc = os.path.join(tmp, 'per-cpu')
            p = run([hwtrace, 'export', '--lldb', '--per-cpu', '-o', pc,
                     bundles['demo_crash']])
            out = os.path.join(tmp, 'per-cpu.json')
            q = run([hwtrace, 'export', '--chrome', '-o', out, pc])
            doc = json.load(open(out)) if q.returncode == 0 else {}
            xs = [e for e in doc.get('traceEvents', []) if e.get('ph') == 'X']
            report('a trace with TSC: --chrome times the events by it, converted to '
                   'ns, and says so', p.returncode == 0 and xs and
                   'TSC' in doc['otherData']['clock'] and
                   min(e['ts'] for e in xs) > 1e6 and nested(xs),
                   f'{p.stderr}{q.stderr} {doc.get("otherData")}')
        if 'threads4' in bundles and selected('chrome'):
            doc = chrome_checks(hwtrace, bundles['threads4'], tmp, 'threads4')
            tids = {e['tid'] for e in (doc or {}).get('traceEvents', []) if e['ph'] == 'X'}
            report('threads4: one track per thread (five)', len(tids) == 5, f'{tids}')
        if 'signal' in bundles and selected('chrome'):
            doc = chrome_checks(hwtrace, bundles['signal'], tmp, 'signal')
            sigs = [e for e in (doc or {}).get('traceEvents', [])
                    if e.get('ph') == 'i' and e.get('name') == 'signal']
            report('signal: the handler\'s entry is a signal instant event',
                   len(sigs) >= 1, f'{len(sigs)} signal events')
        if 'demo_crash' in bundles and selected('svg'):
            svg_checks(hwtrace, bundles['demo_crash'], tmp, 'demo_crash')
            titles = svg_checks(hwtrace, bundles['demo_crash'], tmp, 'demo_crash-main',
                                since='main') or []
            report('demo_crash --since main: the picture starts at main and shows the '
                   'fault', any(t.startswith('main ') for t in titles) and
                   any('Segmentation' in t for t in titles), f'{titles[:4]}')
        if 'threads4' in bundles and selected('svg'):
            svg_checks(hwtrace, bundles['threads4'], tmp, 'threads4')
        if selected('snapshot'):
            snapshot_checks(hwtrace, tmp)
        # Bad input: a clear error, and nothing written.
        if 'demo_crash' in bundles and selected('errors'):
            out = os.path.join(tmp, 'none.svg')
            p = run([hwtrace, 'export', '--svg', '--since', 'no_such_fn', '-o', out,
                     bundles['demo_crash']])
            report('export --svg --since an unknown function: an error, no file',
                   p.returncode == 1 and 'no_such_fn' in p.stderr and
                   not os.path.exists(out), p.stderr)
            p = run([hwtrace, 'export', '--chrome', '--per-cpu', '-o', out,
                     bundles['demo_crash']])
            report('export --chrome --per-cpu is a usage error', p.returncode == 2,
                   p.stderr)
    return exit_status()


if __name__ == '__main__':
    raise SystemExit(main())
