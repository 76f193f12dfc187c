# SPDX-License-Identifier: BSD-2-Clause
# The GDB session run against hwt-server in the qemu guest, once per
# backend (scripts/check-kernel.sh); the program is recursion.c, static.
# Every backend must make GDB print the same thing. After `record stop`
# reverse-stepi is the server's own reverse execution: there a writable
# variable has its value then (ptrace keeps memory of the past) or is
# unavailable (module), never today's.
break fib
continue
record btrace bts
continue
continue
info record
record instruction-history
record function-call-history
reverse-stepi
reverse-continue
info record
record goto end
stepi
stepi
info record
record stop
reverse-stepi
echo <<past-memory>>\n
python
try:
    gdb.execute("x/xg &environ")
except gdb.error as e:
    print(e)
end
echo <<end>>\n
delete
continue
continue
