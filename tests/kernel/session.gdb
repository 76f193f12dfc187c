# The GDB session run against hwt-server in the qemu guest, once per
# backend (scripts/check-kernel.sh); the program is recursion.c, static.
# Every backend must make GDB print the same thing.
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
delete
continue
