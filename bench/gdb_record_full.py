# SPDX-License-Identifier: BSD-2-Clause
# GDB script: time `record full` over work() of bench/loop.c.
# Run: gdb -nx -batch -x gdb_record_full.py --args PROG N
import time
import gdb

gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("set record full insn-number-max unlimited")
gdb.execute("break work")
gdb.execute("run", to_string=True)
gdb.execute("record full")
t0 = time.monotonic()
gdb.execute("finish", to_string=True)
elapsed = time.monotonic() - t0
info = gdb.execute("info record", to_string=True)
n = 0
for line in info.splitlines():
    if line.startswith("Log contains"):
        n = int(line.split()[2])
print(f"GDB_RECORD_FULL insns={n} seconds={elapsed:.3f}")
gdb.execute("record stop")
gdb.execute("kill")
