#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""hwt-server post-mortem: stock GDB 13 over `target remote` on a crashed
process recorded by `hwtrace record` (demo_crash: main -> parse_config ->
lookup -> NULL dereference).

What must hold: bt shows the core's stack; GDB's record btrace reopens by
itself with the recorded history (instruction count as hwtrace's, minus the
current instruction, which GDB never counts); function-call-history ends in
main -> parse_config -> lookup; reverse-stepi, reverse-finish and record goto
land where the history says; after `record stop`, `record btrace pt` gives
the same history as Intel PT (hwt_pt_encode) and BTS again after that;
bs/bc (reverse execution without `record`)
work; hostile packets get error or empty replies and the session goes on;
a second client is refused; the server exits when GDB detaches."""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from hwt_testlib import RESULTS, ServerProcess, exit_status, parse_args, report

PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'plugin', 'gdb', 'hwtrace.py')


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, errors='replace',
                          timeout=timeout, **kw)


class Server(ServerProcess):
    """hwt-server on SPEC; the address GDB uses once it says where it listens."""

    def __init__(self, exe, bundle, spec, tmp, name, extra=()):
        super().__init__([exe, '--listen', spec, *extra, '--bundle', bundle], tmp, name)


# Registers `info all-registers` does not list for a core with XSAVE state.
EXTRA_REGS = [f'p/x $xmm{i}.uint128' for i in range(16)] + ['p/x $orig_rax', 'p/x $fs_base',
                                                            'p/x $gs_base']


def gdb(prog, address, cmds, timeout=180):
    args = ['gdb', '-nx', '-batch', '-ex', 'set pagination off',
            '-ex', 'set confirm off', '-ex', f'target remote {address}']
    for c in cmds:
        args += ['-ex', c]
    # One stream, so that error messages stay between the echo markers.
    return subprocess.run(args + [prog], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors='replace', timeout=timeout)


def section(out, start, end):
    """Lines GDB printed between two `echo` markers."""
    a = out.find(f'<<{start}>>')
    b = out.find(f'<<{end}>>', a + 1) if a >= 0 else -1
    return out[a + len(start) + 4:b] if a >= 0 and b >= 0 else ''


def mark(name):
    return f'echo <<{name}>>\\n'


# ---- a raw protocol client ---------------------------------------------------

def frame(payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return b'$' + payload + b'#%02x' % (sum(payload) & 0xff)


class Raw:
    def __init__(self, address):
        if ':' in address and not address.startswith('/'):
            host, port = address.rsplit(':', 1)
            self.s = socket.create_connection((host, int(port)), timeout=10)
        else:
            self.s = socket.socket(socket.AF_UNIX)
            self.s.settimeout(10)
            self.s.connect(address)
        self.buf = b''

    def read_unit(self):
        """'+', '-', or a packet's payload (bytes) once complete."""
        while True:
            if self.buf[:1] in (b'+', b'-'):
                u, self.buf = self.buf[:1], self.buf[1:]
                return u
            if self.buf[:1] == b'$':
                h = self.buf.find(b'#')
                if h >= 0 and len(self.buf) >= h + 3:
                    p, self.buf = self.buf[1:h], self.buf[h + 3:]
                    return p
            elif self.buf:
                raise RuntimeError(f'unexpected bytes {self.buf[:40]!r}')
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError('server closed the connection')
            self.buf += chunk

    def ask(self, raw):
        """Send raw bytes; return (ack, reply payload) in ack mode."""
        self.s.sendall(raw)
        ack = self.read_unit()
        if ack == b'-':
            return ack, None
        reply = self.read_unit()
        self.s.sendall(b'+')
        return ack, reply


def robustness(server_exe, bundle, tmp, items):
    srv = Server(server_exe, bundle, '127.0.0.1:0', tmp, 'raw')
    try:
        if not srv.address:
            report('robustness: server listens on 127.0.0.1 port 0', False, srv.log())
            return
        c = Raw(srv.address)
        ack, r = c.ask(frame('qSupported:swbreak+'))
        report('robustness: qSupported advertises btrace and reverse',
               ack == b'+' and r and b'qXfer:btrace:read+' in r and b'ReverseStep+' in r
               and b'Qbtrace:bts+' in r and b'PacketSize=' in r, f'{ack} {r}')
        bad = b'$qC#00'
        ack, r = c.ask(bad)
        report('robustness: bad checksum gets a NAK', ack == b'-', f'{ack} {r}')
        ack, r = c.ask(frame('qHwtNoSuchPacket'))
        report('robustness: unknown packet gets the empty reply', ack == b'+' and r == b'', f'{ack} {r}')
        for p in ('m', 'mzz,10', 'm1,', 'm,4', 'p', 'pzz', 'p1000', 'Hgzz', 'Hx1',
                  'qXfer:btrace:read:all:', 'qXfer:btrace:read:bogus:0,10',
                  'qXfer:features:read:target.xml:zz', 'qXfer:features:read:other.xml:0,10',
                  'Z0,1', 'vCont;q', 'M0,1:00', 'P10=0000000000000000',
                  'qXfer:auxv:read::ffffffff,10', 'm' + 'f' * 40 + ',1',
                  'Qbtrace-conf:pt:size=', 'Qbtrace-conf:pt:size=0', 'Qbtrace-conf:pt:size=0x1' + '0' * 9,
                  'Qbtrace:ptx', 'Qbtrace:pt'):
            ack, r = c.ask(frame(p))
            if not (ack == b'+' and r is not None and (r.startswith(b'E') or r == b'')):
                report(f'robustness: malformed {p!r} gets an error', False, f'{ack} {r}')
                break
        else:
            report('robustness: malformed packets get error replies', True)
        ack, r = c.ask(frame('Z0,' + 'a' * 5000) )
        report('robustness: over-long number gets an error', ack == b'+' and r.startswith(b'E'), f'{ack} {r[:60]}')
        ack, r = c.ask(b'$' + b'q' * 100000 + b'#00')
        report('robustness: oversized packet gets an error', ack == b'+' and r and r.startswith(b'E'),
               f'{ack} {r[:60] if r else r}')
        c.s.sendall(b'garbage\x03\x00\xff')
        ack, r = c.ask(frame('qHwtNoSuchPacket'))
        report('robustness: junk between packets is skipped', ack == b'+' and r == b'', f'{ack} {r}')

        # A second client is refused while this one is served.
        second = Raw(srv.address)
        try:
            msg = second.read_unit()
            gone = second.s.recv(100) == b''
        except (EOFError, OSError) as e:
            msg, gone = str(e).encode(), True
        report('second client is refused with a message',
               msg.startswith(b'E.') and b'already' in msg and gone, f'{msg} closed={gone}')

        # The first session still works: registers, memory, the trace.
        ack, r = c.ask(frame('QStartNoAckMode'))
        c.s.sendall(frame('g'))
        g = c.read_unit()
        rip = int.from_bytes(bytes.fromhex(g[16 * 16:17 * 16].decode()), 'little') if len(g) >= 17 * 16 else None
        report('robustness: session goes on (g gives the crash pc)',
               r == b'OK' and rip == int(items[-1][2], 16), f'{r} rip {rip} vs {items[-1][2]}')
        c.s.sendall(frame(f'm{int(items[-1][2], 16):x},4'))
        mem = c.read_unit()
        report('robustness: m reads code from the core', len(mem) == 8 and not mem.startswith(b'E'), f'{mem}')
        doc, off = b'', 0
        while True:
            c.s.sendall(frame(f'qXfer:btrace:read:all:{off:x},fff'))
            r = c.read_unit()
            data = re.sub(rb'}(.)', lambda m: bytes([m.group(1)[0] ^ 0x20]), r[1:])
            doc += data
            off += len(data)
            if r[:1] != b'm':
                break
        blocks = re.findall(rb'<block begin="0x([0-9a-f]+)" end="0x([0-9a-f]+)"/>', doc)
        report('robustness: qXfer:btrace:read:all pieces form the whole history',
               doc.startswith(b'<btrace version="1.0">') and doc.endswith(b'</btrace>') and blocks and
               int(blocks[0][1], 16) == int(items[-1][2], 16) and
               int(blocks[-1][0], 16) == int(items[0][2], 16),
               f'{len(doc)} bytes, {len(blocks)} blocks, first {blocks[:1]} last {blocks[-1:]}')
        c.s.sendall(frame('D'))
        r = c.read_unit()
        rc = srv.wait()
        report('server exits after detach', r == b'OK' and rc == 0, f'reply {r} exit {rc}\n{srv.log()}')
    except (OSError, EOFError, RuntimeError) as e:
        report('robustness: protocol exchange', False, f'{e}\n{srv.log()}')
    finally:
        srv.stop()


MT_SRC = r"""
#include <pthread.h>
volatile int *null_target;
static void *worker(void *a)
{
	for (volatile int i = 0; i < 1000; i++)
		;
	*null_target = 1;
	return a;
}
int main(void)
{
	pthread_t t;
	pthread_create(&t, 0, worker, 0);
	pthread_join(t, 0);
	return 0;
}
"""


def threads(server_exe, hwtrace, tmp):
    """Two threads, the second one faults: each thread has its own
    registers and history, the faulting one is GDB's thread 1."""
    src, prog, bundle = (os.path.join(tmp, n) for n in ('mt.c', 'mt', 'mt.bundle'))
    with open(src, 'w') as f:
        f.write(MT_SRC)
    p = run(['cc', '-g', '-O0', '-pthread', src, '-o', prog])
    if p.returncode:
        report('threads: build the two-thread crash', False, p.stderr)
        return
    p = run([hwtrace, 'record', '-q', '--backend', 'ptrace', '-o', bundle,
             '--', prog])
    info = run([hwtrace, 'info', bundle]).stdout
    counts = {int(t): int(n) for t, n in re.findall(r'thread (\d+): (\d+) items', info)}
    fault = re.search(r'in thread (\d+)', info)
    if p.returncode != 139 or len(counts) != 2 or not fault:
        report('threads: record the two-thread crash', False, f'rc {p.returncode}\n{info}')
        return
    srv = Server(server_exe, bundle, f'unix:{tmp}/mt.sock', tmp, 'mt')
    g = gdb(prog, srv.address, ['info threads', mark('t1'), 'bt 1', 'info record',
                                'thread 2', mark('t2'), 'info record', mark('end'), 'detach'])
    out = g.stdout
    t1, t2 = section(out, 't1', 'end'), section(out, 't2', 'end')
    want = {f'Thread {t}': n - 1 for t, n in counts.items()}
    # GDB names threads PID.TID under the multiprocess extension.
    got = dict((f'Thread {t}', int(n)) for n, t in
               re.findall(r'Recorded (\d+) instructions .* \(Thread (?:\d+\.)?(\d+)\)', out))
    report('threads: the faulting thread is thread 1, in worker',
           re.search(rf'^\* 1\s+Thread (?:\d+\.)?{fault.group(1)}\s+(?:0x[0-9a-f]+ in )?worker',
                     out, re.M) is not None and
           'worker' in t1, out[-1500:])
    report('threads: each thread has its own history', got == want and t2 != t1,
           f'gdb {got}, hwtrace {want}')
    rc = srv.wait()
    report('threads: server exits after detach', rc == 0, srv.log())
    srv.stop()


# What hwt-server gives GDB (and LLDB) of a thread's whole life:
# SRV_WHOLE_LIFE_MAX_ITEMS in plugin/gdb/server.h.
WHOLE_LIFE_MAX_ITEMS = 256 << 10


def long_history(server_exe, hwtrace, build, tmp):
    """A history four times longer than what GDB is given: GDB gets the
    newest 262144 instructions, the oldest of them where `record goto
    begin` lands, and the server decodes only that part."""
    prog = os.path.join(build, 'programs', 'spin')
    bundle = os.path.join(tmp, 'long.bundle')
    p = run([hwtrace, 'record', '-q', '--backend', 'valgrind', '-o', bundle,
             '--', prog, '100000'])
    info = run([hwtrace, 'info', bundle]).stdout
    m = re.search(r'(\d+) items in history', info)
    count = int(m.group(1)) if m else 0
    if p.returncode != 139 or count < 4 * WHOLE_LIFE_MAX_ITEMS:
        report('long history: record spin 100000', False,
               f'rc {p.returncode}, {count} items\n{p.stderr[-500:]}')
        return
    first = count - WHOLE_LIFE_MAX_ITEMS + 1
    d = run([hwtrace, 'dump', '--insn', '--tsv', '--range',
             f'{first},{first}', bundle]).stdout.split('\t')
    srv = Server(server_exe, bundle, f'unix:{tmp}/long.sock', tmp, 'long')
    g = gdb(prog, srv.address, [mark('info'), 'info record', mark('begin'),
                                'record goto begin', 'p/x $pc', mark('end'),
                                'kill'])
    out = g.stdout
    m = re.search(r'Recorded (\d+) instructions', section(out, 'info', 'begin'))
    report('long history: GDB gets the newest 262144 instructions, the '
           'current one not counted',
           m is not None and int(m.group(1)) == WHOLE_LIFE_MAX_ITEMS - 1,
           out[-1500:])
    m = re.search(r'\$1 = (0x[0-9a-f]+)', section(out, 'begin', 'end'))
    report('long history: record goto begin lands on the oldest of them',
           m is not None and len(d) > 2 and int(m.group(1), 16) == int(d[2], 16),
           f'gdb {m and m.group(1)}, hwtrace item {first}: {d}')
    srv.wait()
    srv.stop()


def main():
    args = parse_args()
    build = args.build
    hwtrace = os.path.join(build, 'hwtrace')
    server_exe = os.path.join(build, 'hwt-server')
    prog = os.path.join(build, 'programs', 'demo_crash')
    for f in (hwtrace, server_exe, prog):
        if not os.access(f, os.X_OK):
            report('gdb post-mortem', False, f'{f} missing: run make all')
            return 1
    if not shutil.which('gdb'):
        print('SKIP gdb post-mortem: gdb is not installed (make deps)')
        return 0
    tmp = tempfile.mkdtemp(prefix='hwt-gdbpm-')
    keep = False
    try:
        bundle = os.path.join(tmp, 'bundle')
        p = run([hwtrace, 'record', '-q', '--backend', 'ptrace', '-o', bundle,
             '--', prog])
        if p.returncode != 139 or not os.path.exists(os.path.join(bundle, 'core')):
            report('record demo_crash with a core', False, f'rc {p.returncode} {p.stderr}')
            return 1
        t = run([hwtrace, 'dump', '--insn', '--tsv', bundle])
        items = [line.split('\t') for line in t.stdout.splitlines()]
        info = run([hwtrace, 'info', bundle]).stdout
        m = re.search(r'(\d+) items in history', info)
        count = int(m.group(1)) if m else -1
        # The last entry into lookup and the call in parse_config before it.
        entry = max(i for i, it in enumerate(items) if it[4] == 'lookup+0')
        call = items[entry - 1]

        srv = Server(server_exe, bundle, f'unix:{tmp}/gdb.sock', tmp, 'gdb')
        if not srv.address:
            report('server listens on a unix socket', False, srv.log())
            return 1
        g = gdb(prog, srv.address, [
            mark('bt'), 'bt', mark('info'), 'info record',
            mark('junk'), 'maint packet qHwtNoSuchPacket', 'maint packet mzz,1',
            mark('status'), f'source {PY}', 'hwt status',
            mark('fch'), 'set record function-call-history-size 100',
            'record function-call-history /c',
            mark('rsi'), 'reverse-stepi', 'p/x $pc',
            mark('goto-end'), 'record goto end',
            mark('rfinish'), 'reverse-finish', 'p/x $pc',
            mark('begin'), 'record goto begin', 'p/x $pc', 'info record',
            mark('siginfo'), 'record goto end', 'p $_siginfo.si_signo',
            mark('pt'), 'record stop', 'record btrace pt', 'info record',
            'record function-call-history /c', mark('pt-ih'), 'record instruction-history',
            'reverse-stepi', 'p/x $pc',
            mark('reenable'), 'record stop', 'record btrace bts',
            'info record', 'reverse-stepi', 'p/x $pc',
            mark('regs'), 'record goto end', 'info all-registers'] + EXTRA_REGS + [
            mark('end'), 'detach'])
        out = g.stdout
        bt = section(out, 'bt', 'info')
        frames = re.findall(r'^#\d+\s+(?:0x[0-9a-f]+ in )?(\w+)', bt, re.M)
        report('bt shows the core stack lookup <- parse_config <- main',
               frames[:3] == ['lookup', 'parse_config', 'main'], f'{frames}\n{out[-1500:]}')
        report('GDB reopens record btrace from qXfer:btrace-conf',
               'Target is recording using Branch Trace Store' in out, out[-1500:])
        m = re.search(r'Recorded (\d+) instructions', section(out, 'info', 'junk'))
        gdb_count = int(m.group(1)) if m else None
        # GDB does not count the current instruction (the faulting one).
        report('info record counts hwtrace info\'s instructions (minus the current one)',
               gdb_count is not None and gdb_count == count - 1,
               f'gdb {gdb_count}, hwtrace {count}')
        junk = section(out, 'junk', 'status')
        st = section(out, 'status', 'fch')
        report('hwt status (hwtrace.py over qHwtStatus) shows the fault and counts',
               'post-mortem' in st and 'signal 11' in st and
               f'{count} instructions recorded, 0 lost' in st, st)
        report('maint packet: unknown -> empty, malformed -> error',
               'received: ""' in junk and 'received: "E' in junk, junk)
        def call_path(text):
            """Whether function-call-history in text ends in main -> parse_config -> lookup."""
            fch = [line for line in text.splitlines() if re.match(r'^\d+\t', line)]
            calls = [(len(f) - len(f.lstrip(' ')), f.strip()) for f in (line.split('\t', 1)[1] for line in fch)]
            if not calls or calls[-1][1] != 'lookup':
                return False, '\n'.join(fch[-12:])
            lvl = calls[-1][0]
            pc_idx = max((i for i, c in enumerate(calls) if c[1] == 'parse_config'), default=-1)
            m_idx = max((i for i, c in enumerate(calls[:pc_idx]) if c[1] == 'main'), default=-1)
            return (pc_idx >= 0 and m_idx >= 0 and calls[pc_idx][0] == lvl - 2 and
                    calls[m_idx][0] == lvl - 4), '\n'.join(fch[-12:])
        ok, why = call_path(section(out, 'fch', 'rsi'))
        report('function-call-history ends in main -> parse_config -> lookup', ok, why)
        m = re.search(r'\$1 = (0x[0-9a-f]+)', section(out, 'rsi', 'goto-end'))
        report('reverse-stepi goes to the previous history address',
               m and int(m.group(1), 16) == int(items[-2][2], 16),
               f'{m and m.group(1)} vs {items[-2][2]}\n{section(out, "rsi", "goto-end")}')
        rf = section(out, 'rfinish', 'begin')
        m = re.search(r'\$2 = (0x[0-9a-f]+)', rf)
        line = call[5].rsplit(':', 1)[1] if call[5] else '?'
        report('reverse-finish lands on the call in parse_config at its line',
               m and int(m.group(1), 16) == int(call[2], 16) and 'parse_config' in rf and
               re.search(rf'^{line}\s', rf, re.M) is not None,
               f'pc {m and m.group(1)} vs call {call[2]} line {line}\n{rf}')
        bg = section(out, 'begin', 'siginfo')
        m = re.search(r'\$3 = (0x[0-9a-f]+)', bg)
        report('record goto begin goes to the oldest instruction',
               m and int(m.group(1), 16) == int(items[0][2], 16) and 'At instruction 1.' in bg,
               f'{m and m.group(1)} vs {items[0][2]}\n{bg}')
        si = section(out, 'siginfo', 'reenable')
        report('$_siginfo from the core says SIGSEGV', re.search(r'= 11$', si, re.M) is not None, si)
        # Intel PT: the same history encoded as PT, decoded by GDB's libipt.
        pt = section(out, 'pt', 'reenable')
        m = re.search(r'Recorded (\d+) instructions', pt)
        report('record btrace pt: Intel PT format, same instruction count as BTS',
               'Recording format: Intel Processor Trace' in pt and m and
               int(m.group(1)) == gdb_count, pt[:1500])
        ok, why = call_path(section(out, 'pt', 'pt-ih'))
        report('record btrace pt: function-call-history ends in main -> parse_config -> lookup',
               ok, why)
        ih = re.findall(r'^(\d+)\t\s+(0x[0-9a-f]+)', pt, re.M)
        report('record btrace pt: instruction-history is the history\'s last instructions',
               len(ih) == 10 and [int(a, 16) for _, a in ih] ==
               [int(it[2], 16) for it in items[-11:-1]] and int(ih[-1][0]) == count - 1,
               f'{ih}\n{[it[2] for it in items[-11:-1]]}')
        pc = re.search(r'\$\d+ = (0x[0-9a-f]+)', pt)
        report('record btrace pt: reverse-stepi goes to the previous history address',
               pc and int(pc.group(1), 16) == int(items[-2][2], 16), pt[-1500:])
        re_on = section(out, 'reenable', 'regs')
        m = re.search(r'Recorded (\d+) instructions', re_on)
        pc = re.search(r'\$\d+ = (0x[0-9a-f]+)', re_on)
        report('record stop, then record btrace bts: the whole history again',
               m and int(m.group(1)) == count - 1 and pc and
               int(pc.group(1), 16) == int(items[-2][2], 16) and
               'Recording format: Branch Trace Store' in re_on, re_on)
        # Registers as GDB itself reads them from the core.
        core = run(['gdb', '-nx', '-batch', '-ex', 'info all-registers'] +
                   [a for c in EXTRA_REGS for a in ('-ex', c)] + [prog, os.path.join(bundle, 'core')])

        def regs(text):
            r = dict(re.findall(r'^([a-z][a-z0-9_]*)\s+(\S.*)$', text, re.M))
            values = re.findall(r'^\$\d+ = (.*)$', text, re.M)[-len(EXTRA_REGS):]
            r.update(zip(EXTRA_REGS, values))
            return r
        ours = regs(section(out, 'regs', 'end'))
        theirs = regs(core.stdout)
        names = [n for n in ours if n in theirs]
        diff = [(n, ours[n], theirs[n]) for n in names if ours[n] != theirs[n]]
        report('registers equal GDB\'s own reading of the core',
               len(names) == 41 + len(EXTRA_REGS) and not diff,
               f'{len(names)} compared, differ: {diff[:5]}')
        rc = srv.wait()
        report('server exits when GDB detaches', rc == 0 and 'disconnected' in srv.log(),
               f'exit {rc}\n{srv.log()}')
        srv.stop()

        # Reverse execution without `record`: GDB sends bs/bc itself.
        srv = Server(server_exe, bundle, f'unix:{tmp}/gdb2.sock', tmp, 'gdb2')
        g = gdb(prog, srv.address, [
            'record stop', mark('bs'), 'reverse-stepi', 'p/x $pc', 'info registers rsp',
            mark('bc'), 'break parse_config', 'reverse-continue', 'p/x $pc',
            mark('bcbegin'), 'delete', 'reverse-continue',
            mark('fwd'), 'continue', 'p/x $pc', 'bt 1', mark('end'), 'kill'])
        out = g.stdout
        bs = section(out, 'bs', 'bc')
        m = re.search(r'\$1 = (0x[0-9a-f]+)', bs)
        # The ptrace recorder's bundle carries its data history: the
        # registers there are that moment's, not unavailable.
        report('bs: reverse-stepi without record, the pc before and the '
               'registers of that moment',
               m and int(m.group(1), 16) == int(items[-2][2], 16) and
               re.search(r'^rsp\s+0x[0-9a-f]+', bs, re.M) and
               'unavailable' not in bs, bs)
        bc = section(out, 'bc', 'bcbegin')
        m = re.search(r'\$2 = (0x[0-9a-f]+)', bc)
        entries = [it for it in items if it[4].startswith('parse_config+')]
        report('bc: reverse-continue stops at a breakpoint in parse_config',
               m and 'Breakpoint 1, parse_config' in bc and
               any(int(it[2], 16) == int(m.group(1), 16) for it in entries), bc)
        report('bc: reverse-continue without breakpoints ends at the history begin',
               'No more reverse-execution history' in section(out, 'bcbegin', 'fwd'),
               section(out, 'bcbegin', 'fwd'))
        fwd = section(out, 'fwd', 'end')
        m = re.search(r'\$3 = (0x[0-9a-f]+)', fwd)
        report('c: forward continue replays to the crash and stops there',
               'No more reverse-execution history' in fwd and m and
               int(m.group(1), 16) == int(items[-1][2], 16) and 'lookup' in fwd, fwd)
        rc = srv.wait()
        report('server exits when GDB kills', rc == 0, f'exit {rc}\n{srv.log()}')
        srv.stop()

        threads(server_exe, hwtrace, tmp)
        long_history(server_exe, hwtrace, build, tmp)

        # Hostile input goes to the sanitizer build when there is one.
        san = os.environ.get('HWT_SAN_BUILD')
        hostile = os.path.join(san, 'hwt-server') if san and \
            os.access(os.path.join(san, 'hwt-server'), os.X_OK) else server_exe
        robustness(hostile, bundle, tmp, items)

        # A client that vanishes without detaching: the next one finds the
        # history where the first left it (gdbserver's way); with --once
        # the server ends with the first.
        srv = Server(server_exe, bundle, f'unix:{tmp}/gone.sock', tmp, 'gone')
        replies = []
        try:
            c = Raw(srv.address)
            c.ask(frame('qSupported'))
            c.ask(frame('Qbtrace:bts'))
            replies.append(c.ask(frame('bs'))[1])
            c.s.close()
            time.sleep(0.3)
            c = Raw(srv.address)
            c.ask(frame('qSupported'))
            replies.append(c.ask(frame('qXfer:btrace-conf:read::0,fff'))[1])
            replies.append(c.ask(frame('p10'))[1])
            c.s.sendall(frame('vKill;1'))
            rc = srv.wait()
        except (OSError, EOFError) as e:
            replies.append(str(e).encode())
            rc = None
        stepped_back = replies[0][:3] == b'T05' and \
            replies[2] == bytes.fromhex(items[-2][2][2:].rjust(16, '0'))[::-1].hex().encode()
        report('a client that vanishes: the next one finds btrace on and the '
               'replay position it left', stepped_back and b'<bts' in replies[1] and
               rc == 0 and 'waiting for the next' in srv.log(),
               f'replies {replies}, exit {rc}\n{srv.log()}')
        srv.stop()
        srv = Server(server_exe, bundle, f'unix:{tmp}/once.sock', tmp, 'once',
                     ['--once'])
        c = Raw(srv.address)
        c.ask(frame('qSupported'))
        c.s.close()
        rc = srv.wait()
        report('--once: server exits when the client vanishes mid-session',
               rc == 0 and 'disconnected, exiting' in srv.log(), f'exit {rc}\n{srv.log()}')
        srv.stop()

        # Loopback only, unless asked.
        p = run([server_exe, '--listen', '0.0.0.0:0', '--bundle', bundle], timeout=30)
        report('non-loopback address refused without --allow-remote',
               p.returncode == 2 and '--allow-remote' in p.stderr, f'rc {p.returncode} {p.stderr}')
        srv = subprocess.Popen([server_exe, '--listen', '0.0.0.0:0', '--allow-remote',
                                '--bundle', bundle], stderr=subprocess.PIPE, text=True)
        line = ''
        for _ in range(2):
            line += srv.stderr.readline()
        srv.kill()
        srv.wait()
        report('--allow-remote listens with a warning',
               'warning' in line and 'non-loopback' in line and 'listening on 0.0.0.0:' in line, line)
    except Exception as e:  # a crash in the driver is a failure, not silence
        keep = True
        report('gdb post-mortem driver', False, f'{type(e).__name__}: {e} (kept {tmp})')
    finally:
        if not keep and all(RESULTS):
            shutil.rmtree(tmp, ignore_errors=True)
        elif not all(RESULTS):
            print(f'  (files kept in {tmp})')
    return exit_status()


if __name__ == '__main__':
    sys.exit(main())
