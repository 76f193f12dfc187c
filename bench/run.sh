#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# make bench: recorder vs GDB `record full`, and replay speed/memory.
# Everything is measured in this one run; ratios are what count.
set -eu
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/hwtrace-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT

cc -O1 -g -o "$work/loop" "$here/loop.c"

# --- recorder: instructions per second, hwtrace vs gdb record full --------
n_gdb=${BENCH_GDB_ITERS:-20000}
n_hwt=${BENCH_HWT_ITERS:-60000}
cpu=$(awk '{print $39}' /proc/self/stat)
gdb_line=$(taskset -c "$cpu" gdb -nx -batch -x "$here/gdb_record_full.py" \
	--args "$work/loop" "$n_gdb" 2>/dev/null | grep '^GDB_RECORD_FULL')
gdb_insns=$(echo "$gdb_line" | sed 's/.*insns=\([0-9]*\).*/\1/')
gdb_secs=$(echo "$gdb_line" | sed 's/.*seconds=\([0-9.]*\).*/\1/')

start=$(date +%s.%N)
"$build/hwtrace" record -q --backend ptrace -o "$work/b" --size 64M -- "$work/loop" "$n_hwt" >/dev/null
end=$(date +%s.%N)
hwt_insns=$("$build/hwtrace" info "$work/b" | sed -n 's/.* \([0-9]*\) instructions recorded.*/\1/p' | head -1)

python3 - "$gdb_insns" "$gdb_secs" "$hwt_insns" "$start" "$end" <<'PY'
import sys
gi, gs, hi, s, e = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
hs = e - s
g_rate, h_rate = gi / gs, hi / hs
print(f"recorder: gdb record full   {gi:>9} insns in {gs:6.2f} s = {g_rate:9.0f} insns/s")
print(f"recorder: hwtrace (ptrace)  {hi:>9} insns in {hs:6.2f} s = {h_rate:9.0f} insns/s")
print(f"recorder: ratio hwtrace / gdb record full = {h_rate / g_rate:.2f}x (goal >= 3x)")
PY

# --- replay: a history of at least 5 M instructions -----------------------
n_big=${BENCH_REPLAY_ITERS:-400000}
"$build/hwtrace" record -q --backend ptrace -o "$work/big" --size 64M -- "$work/loop" "$n_big" >/dev/null
"$build/bench/bench_replay" "$work/big"

# --- GDB over hwt-server: GDB's own btrace processing vs the server's bc ---
"$here/gdb_server.sh" "$build"

# --- x86 decoder: Zydis vs Capstone, and the replay walk before and after -
"$here/decoder.sh" "$build"

# --- the valgrind recorder vs valgrind --tool=none, ptrace, record full ---
"$here/valgrind.sh" "$build"

# --- GDB to main through hwt-server (untraced until asked) vs gdbserver ---
"$here/run_to_main.sh" "$build"

# --- the valgrind recorder on workloads of seconds vs valgrind --tool=none -
"$here/scale.sh" "$build"

# --- a flight recording of a long run: memory bounded, the end exact -----
python3 "$here/flight.py" "$build" valgrind
