#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# What GDB printed against hwt-server in the guest, one file per backend
# (B/gdb-NAME.out, scripts/check-kernel.sh): each session reached its
# breakpoints, recorded and replayed, and ran the program to its end;
# every backend's session printed what the first one's did, thread and
# process ids aside.
# usage: gdb-compare.sh B FIRST OTHER...
B=$1
shift
first=${1:-}
[ -n "$first" ] || echo "FAIL gdb_sessions: the guest opened no GDB session (see $B/serial.log.txt)"

# GDB knows the process id (the multiprocess extension) and, on the host,
# fails to open the guest process's /proc files: the ids differ by run.
# Memory of the past differs by backend on purpose (below): it is left
# out of the comparison.
norm() {
	sed -e 's/Thread [0-9][0-9.]*/Thread N/g' -e 's/process [0-9][0-9]*/process N/g' \
	    -e 's|/proc/[0-9]*/task/[0-9]*/|/proc/N/task/N/|g' \
	    -e '/^<<past-memory>>$/,/^<<end>>$/d' "$1"
}

for name in "$@"; do
	out=$B/gdb-$name.out
	if [ ! -s "$out" ]; then
		echo "FAIL gdb_session_$name: no GDB session ran against hwt-server --backend $name (see the GDB lines of $B/serial.log.txt)"
		continue
	fi
	hits=$(grep -c '^Breakpoint 1, 0x[0-9a-f]* in fib ()' "$out")
	if [ "$hits" -ge 4 ] && grep -q '^Recorded [1-9][0-9]* instructions in' "$out" &&
	   grep -q '^Replay in progress\.  At instruction [1-9]' "$out" &&
	   grep -q 'exited normally\]' "$out"; then
		echo "PASS gdb_session_$name: $hits breakpoint stops, btrace recorded and replayed, ran to the end"
	else
		echo "FAIL gdb_session_$name: $hits breakpoint stops; GDB printed:"
		sed 's/^/  | /' "$out" | tail -n 40
	fi
	# The ptrace recorder keeps memory of the past; the module backend
	# keeps none, so there a global in the past is unavailable.
	past=$(sed -n '/^<<past-memory>>$/,/^<<end>>$/p' "$out")
	if [ "$name" = ptrace ]; then
		want='^0x[0-9a-f]* <environ>:[[:space:]]*0x[0-9a-f]'
		what="a global in the past has its value then"
	else
		want='Cannot access memory at address'
		what="a global in the past is unavailable, not today's"
	fi
	if printf '%s\n' "$past" | grep -q "$want"; then
		echo "PASS gdb_session_${name}_past_memory: $what"
	else
		echo "FAIL gdb_session_${name}_past_memory: GDB printed:"
		printf '%s\n' "$past" | sed 's/^/  | /'
	fi
	[ "$name" = "$first" ] && continue
	[ -s "$B/gdb-$first.out" ] || continue
	norm "$B/gdb-$first.out" >"$B/gdb-$first.out.n"
	norm "$out" >"$out.n"
	if diff "$B/gdb-$first.out.n" "$out.n" >"$out.diff"; then
		echo "PASS gdb_session_${name}_equals_$first"
	else
		echo "FAIL gdb_session_${name}_equals_$first: GDB printed differently:"
		sed 's/^/  | /' "$out.diff" | head -n 40
	fi
done
