# SPDX-License-Identifier: BSD-2-Clause
# hwtrace.py - GDB commands for what GDB has no command for, over
# hwt-server's qHwt packets (docs/gdb-server.md). Load with
#   (gdb) source plugin/gdb/hwtrace.py
# after (or before) `target remote` to an hwt-server.
import os

import gdb


def _packet(name):
    inf = gdb.selected_inferior()
    conn = getattr(inf, 'connection', None)
    if not isinstance(conn, getattr(gdb, 'RemoteTargetConnection', ())):
        raise gdb.GdbError('hwt: not connected to hwt-server; use target remote first')
    reply = conn.send_packet(name)
    if isinstance(reply, bytes):
        reply = reply.decode('ascii', 'replace')
    if not reply:
        raise gdb.GdbError(f'hwt: the remote target does not answer {name}: not an hwt-server?')
    if reply.startswith('E'):
        what = name.split(':')[0]
        raise gdb.GdbError(f'hwt: {what} failed: {reply[2:] if reply.startswith("E.") else reply}')
    return reply


class Hwt(gdb.Command):
    """hwtrace commands: hwt status, hwt save DIR."""

    def __init__(self):
        super().__init__('hwt', gdb.COMMAND_STATUS, prefix=True)


class HwtStatus(gdb.Command):
    """Show what hwt-server serves: mode, trace format, how the program
stopped, and per thread the instructions recorded and lost."""

    def __init__(self):
        super().__init__('hwt status', gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        if arg.strip():
            raise gdb.GdbError('hwt status takes no arguments')
        fields, threads = {}, []
        for item in _packet('qHwtStatus').split(';'):
            key, _, value = item.partition('=')
            if key == 'thread':
                threads.append(value.split(','))
            else:
                fields[key] = value
        stop = fields.get('stop', '?')
        if fields.get('mode') == 'live':
            how = f"process {fields.get('pid', '?')}" + (' (ended)' if stop == 'exited' else '')
        else:
            how = 'stopped: ' + {
                'fault': f"fault, signal {fields.get('signal')} in thread {fields.get('stop_tid')}",
                'signaled': f"killed by signal {fields.get('signal')}"}.get(stop, stop)
        gdb.write(f"hwt-server: {fields.get('mode', '?')}, format {fields.get('format', '?')}, "
                  f"{how}\n")
        for tid, total, lost, lost_bytes, size in threads:
            gdb.write(f'thread {tid}: {total} instructions recorded, {lost} lost '
                      f'({lost_bytes} bytes dropped), trace {size} bytes\n')
        if fields.get('more') == '1':
            gdb.write('(more threads than one reply holds)\n')


class HwtSave(gdb.Command):
    """hwt save DIR: write the trace hwt-server holds as a bundle at DIR
(which must not exist), for `hwtrace dump`, `hwt-server --bundle` or LLDB.
Live: every thread's history up to this stop and copies of the modules."""

    def __init__(self):
        super().__init__('hwt save', gdb.COMMAND_STATUS, gdb.COMPLETE_FILENAME)

    def invoke(self, arg, from_tty):
        args = gdb.string_to_argv(arg)
        if len(args) != 1:
            raise gdb.GdbError('usage: hwt save DIR')
        # The server resolves relative paths in its own directory.
        path = os.path.abspath(os.path.expanduser(args[0]))
        _packet('qHwtSave:' + path.encode().hex())
        gdb.write(f'hwt: saved the trace to {path}\n')


Hwt()
HwtStatus()
HwtSave()
