# hwtrace.py - GDB commands for what GDB has no command for, over
# hwt-server's qHwt packets (docs/gdb-server.md). Load with
#   (gdb) source plugin/gdb/hwtrace.py
# after (or before) `target remote` to an hwt-server.
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
        raise gdb.GdbError(f'hwt: {name} failed: {reply[2:] if reply.startswith("E.") else reply}')
    return reply


class Hwt(gdb.Command):
    """hwtrace commands: hwt status."""

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
        how = {'fault': f"fault, signal {fields.get('signal')} in thread {fields.get('stop_tid')}",
               'signaled': f"killed by signal {fields.get('signal')}"}.get(stop, stop)
        gdb.write(f"hwt-server: {fields.get('mode', '?')}, format {fields.get('format', '?')}, "
                  f"stopped: {how}\n")
        for tid, total, lost, lost_bytes, size in threads:
            gdb.write(f'thread {tid}: {total} instructions recorded, {lost} lost '
                      f'({lost_bytes} bytes dropped), trace {size} bytes\n')
        if fields.get('more') == '1':
            gdb.write('(more threads than one reply holds)\n')


Hwt()
HwtStatus()
