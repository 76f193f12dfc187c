#!/bin/sh
# bench/run_to_main.sh BUILD: GDB runs a C++ program to main through
# hwt-server and through Debian's gdbserver, in the same run: connect,
# `break main`, `continue`, `kill`, timed around the whole GDB session
# (server start included), the median of RUNS each. The program links
# libstdc++ and builds a few globals before main, so the dynamic loader and
# the constructors run a few million instructions that a stepping server
# would pay for. Prints both and the ratio (goal: <= 1.5x).
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

# A free TCP port on the loopback.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# One GDB session to main through server command "$@" (PORT replaced by a
# free port); its wall time in seconds on stdout.
session() {
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
		-ex 'break main' -ex continue -ex 'p $pc' -ex kill "$work/prog" \
		>"$work/gdb.out" 2>&1
	wait "$server" || true
	end=$(date +%s.%N)
	grep -q "Breakpoint 1, main" "$work/gdb.out" ||
		{ cat "$work/gdb.out" "$work/server.log" >&2; exit 1; }
	awk "BEGIN { printf \"%.3f\n\", $end - $start }"
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

hwt=$(for i in $(seq "$runs"); do
	session "$build/hwt-server --once --listen 127.0.0.1:PORT -- $work/prog"
done | median)
gds=$(for i in $(seq "$runs"); do
	session "gdbserver --once 127.0.0.1:PORT $work/prog"
done | median)
echo "run-to-main: C++ program, GDB session to main: hwt-server $hwt s, gdbserver $gds s (median of $runs)"
echo "run-to-main: ratio hwt-server / gdbserver = $(awk "BEGIN { printf \"%.2f\", $hwt / $gds }")x (goal <= 1.5x)"
