#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/gdb_server.sh BUILD: GDB over hwt-server on big post-mortem
# histories. (a) what GDB itself spends to connect, process the history as
# BTS (record-btrace reopens at connect) and answer `info record`, for ~1.5 M
# and ~4.5 M instructions; (b) a reverse-continue answered by the server
# (`record stop`, then bc) across the whole 4.5 M history to a breakpoint at
# its first instruction. Prints both and the ratio (goal: >= 50x).
set -eu
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/hwtrace-bench-gdbsrv-XXXXXX)
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# Post-mortem serving needs a core: this loop faults after its work.
cc -O1 -g -DLOOP_CRASH -o "$work/loop" "$here/loop.c"

# Start hwt-server on bundle $1; sets $server and $addr.
serve() {
	"$build/hwt-server" --listen "unix:$work/sock" --bundle "$1" \
		2>"$work/server.log" &
	server=$!
	i=0
	until grep -q 'listening on' "$work/server.log"; do
		i=$((i + 1))
		[ "$i" -lt 300 ] || { cat "$work/server.log" >&2; exit 1; }
		sleep 0.1
	done
}

unserve() {
	wait "$server" || true
	server=
}

# Wall time of a GDB batch run (seconds) into $secs; its output in $1.out.
timed_gdb() {
	out=$1
	shift
	start=$(date +%s.%N)
	gdb -nx -batch -ex 'set pagination off' -ex 'set confirm off' \
		-ex "target remote $work/sock" "$@" "$work/loop" >"$out" 2>&1
	end=$(date +%s.%N)
	secs=$(awk "BEGIN { printf \"%.2f\", $end - $start }")
}

# Iterations of loop.c for about 1.5 M and 4.5 M instructions.
for n in ${BENCH_GDBSRV_ITERS:-110000 340000}; do
	"$build/hwtrace" record -q -o "$work/b$n" --size 64M -- \
		"$work/loop" "$n" >/dev/null 2>&1 || true
	[ -f "$work/b$n/core" ] || { echo "no core recorded for $n" >&2; exit 1; }
	serve "$work/b$n"
	timed_gdb "$work/a$n.out" -ex 'info record' -ex detach
	unserve
	insns=$(sed -n 's/^Recorded \([0-9]*\) instructions.*/\1/p' "$work/a$n.out")
	[ -n "$insns" ] || { cat "$work/a$n.out" >&2; exit 1; }
	echo "gdb-server: GDB connect + btrace processing + info record, $insns insns: $secs s"
	gdb_secs=$secs
	big=$n
done

# (b) on the biggest history: the server's reverse-continue to the history's
# first instruction, timed inside GDB around the command alone.
first=$("$build/hwtrace" dump --insn --tsv "$work/b$big" 2>/dev/null | head -1 | cut -f3)
serve "$work/b$big"
timed_gdb "$work/b.out" -ex 'record stop' -ex "break *$first" \
	-ex 'python import time; t0 = time.monotonic()' \
	-ex 'reverse-continue' \
	-ex 'python print("BC_SECONDS=%.4f" % (time.monotonic() - t0))' \
	-ex 'p/x $pc' -ex kill
unserve
bc_secs=$(sed -n 's/^BC_SECONDS=//p' "$work/b.out")
grep -q "Breakpoint 1, " "$work/b.out" && grep -q "= $first\$" "$work/b.out" ||
	{ cat "$work/b.out" >&2; exit 1; }
echo "gdb-server: bc reverse-continue over $insns insns to $first: $bc_secs s"
echo "gdb-server: ratio GDB processing / bc = $(awk "BEGIN { printf \"%.1f\", $gdb_secs / $bc_secs }")x (goal >= 50x)"
