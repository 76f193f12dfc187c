#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/run_to_main.sh BUILD: GDB runs a C++ program to main through
# hwt-server and through Debian's gdbserver, in the same run: connect,
# `break main`, `continue`, `kill`, timed around the whole GDB session
# (server start included), the median of RUNS each. The program links
# libstdc++ and builds a few globals before main, so the dynamic loader and
# the constructors run a few million instructions that a stepping server
# would pay for. Prints both and the ratio (goal: <= 1.5x).
# Then single steps: GDB's `record full` over work() of bench/loop.c
# steps every instruction through the server (vCont;s, g, m for each),
# timed inside GDB, the median of RUNS each: the server's cost per stop
# against gdbserver's (goal: <= 1.5x).
set -eu
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
runs=${BENCH_MAIN_RUNS:-5}
work=$(mktemp -d /tmp/hwtrace-bench-main-XXXXXX)
trap 'rm -rf "$work"' EXIT

command -v gdbserver >/dev/null || { echo "run-to-main: gdbserver is not installed" >&2; exit 1; }
cat >"$work/prog.cc" <<'EOF'
#include <iostream>
#include <map>
#include <string>
#include <vector>

static std::map<std::string, int> table = { { "one", 1 }, { "two", 2 } };
static std::vector<std::string> words(1000, "word");

int main(int argc, char **argv)
{
	std::cout << table.size() + words.size() + argc << (argv ? "\n" : "");
	return 0;
}
EOF
c++ -O1 -g -o "$work/prog" "$work/prog.cc"
cc -O1 -g -o "$work/loop" "$here/loop.c"
steps=${BENCH_STEP_ITERS:-2000}
cat >"$work/main.gdb" <<'EOF'
break main
continue
p $pc
EOF
cat >"$work/step.gdb" <<'EOF'
set record full insn-number-max unlimited
break work
continue
record full
python import time; t0 = time.monotonic()
finish
python print("STEPPED %.3f" % (time.monotonic() - t0))
info record
EOF

# A free TCP port on the loopback.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# One GDB session running script $1 through server command "$2..." (PORT
# replaced by a free port) on $prog; its wall time in seconds on stdout,
# GDB's output in $work/gdb.out.
session() {
	script=$1
	shift
	port=$(free_port)
	start=$(date +%s.%N)
	# shellcheck disable=SC2046
	$(echo "$@" | sed "s/PORT/$port/") >/dev/null 2>"$work/server.log" &
	server=$!
	i=0
	until grep -q "Listening on port" "$work/server.log" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -lt 3000 ] || { cat "$work/server.log" >&2; exit 1; }
		sleep 0.01
	done
	gdb -nx -batch -ex 'set confirm off' -ex "target remote 127.0.0.1:$port" \
		-x "$work/$script.gdb" -ex kill "$prog" >"$work/gdb.out" 2>&1
	wait "$server" || true
	end=$(date +%s.%N)
	grep -q "Breakpoint 1, " "$work/gdb.out" ||
		{ cat "$work/gdb.out" "$work/server.log" >&2; exit 1; }
	awk "BEGIN { printf \"%.3f\n\", $end - $start }"
}

# Seconds GDB spent in `finish` under record full, through "$@".
stepped() {
	session step "$@" >/dev/null
	grep -q '^Log contains' "$work/gdb.out" ||
		{ cat "$work/gdb.out" >&2; exit 1; }
	sed -n 's/^STEPPED //p' "$work/gdb.out"
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

prog=$work/prog
hwt=$(for i in $(seq "$runs"); do
	session main "$build/hwt-server --once --listen 127.0.0.1:PORT -- $prog"
done | median)
gds=$(for i in $(seq "$runs"); do
	session main "gdbserver --once 127.0.0.1:PORT $prog"
done | median)
echo "run-to-main: C++ program, GDB session to main: hwt-server $hwt s, gdbserver $gds s (median of $runs)"
echo "run-to-main: ratio hwt-server / gdbserver = $(awk "BEGIN { printf \"%.2f\", $hwt / $gds }")x (goal <= 1.5x)"

prog=$work/loop
hwt=$(for i in $(seq "$runs"); do
	stepped "$build/hwt-server --once --listen 127.0.0.1:PORT -- $prog $steps"
done | median)
gds=$(for i in $(seq "$runs"); do
	stepped "gdbserver --once 127.0.0.1:PORT $prog $steps"
done | median)
n=$(sed -n 's/^Log contains \([0-9]*\) .*/\1/p' "$work/gdb.out")
echo "single steps: GDB record full over work($steps), $n instructions: hwt-server $hwt s, gdbserver $gds s (median of $runs)"
echo "single steps: ratio hwt-server / gdbserver = $(awk "BEGIN { printf \"%.2f\", $hwt / $gds }")x (goal <= 1.5x)"
