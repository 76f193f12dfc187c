#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The valgrind backend against its peers, all measured in this run:
#   - python3 -c pass recorded whole, against valgrind --tool=none running
#     it (goal: at most 3x), and the instructions per second;
#   - the loop of bench/loop.c under the ptrace recorder and under the
#     valgrind recorder, in instructions per second (goal: 200x);
#   - the same against GDB's record full (goal: 500x);
#   - trace bytes per instruction: the bundle's (hwt-sw, zstd-compressed;
#     goal 0.5), and for comparison the tool's stream and hwt-sw decoded.
# Usage: bench/valgrind.sh BUILD
set -eu
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
if ! "$build/hwtrace" backends | grep -q '^valgrind *available'; then
	echo "valgrind: skipped: $("$build/hwtrace" backends | grep '^valgrind')"
	exit 0
fi
work=$(mktemp -d /tmp/hwtrace-bench-vg-XXXXXX)
trap 'rm -rf "$work"' EXIT
cc -O1 -g -o "$work/loop" "$here/loop.c"
python=$(readlink -f /usr/bin/python3)

now() { date +%s.%N; }
insns() { "$build/hwtrace" info "$1" | sed -n 's/.* \([0-9]*\) instructions recorded.*/\1/p' | head -1; }
trace_bytes() { du -sb "$1/threads" | cut -f1; }
decoded_bytes() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sum(t.get("traceDecodedSize", t["traceSize"]) for t in d["processes"][0]["threads"]))' "$1/trace.json"
}

# --- python3 -c pass, whole -------------------------------------------------
t0=$(now); valgrind --tool=none -q "$python" -c pass; t1=$(now)
"$build/hwtrace" record -q --backend valgrind -o "$work/py" -- "$python" -c pass
t2=$(now)
py_insns=$(insns "$work/py")
py_bytes=$(trace_bytes "$work/py")
py_decoded=$(decoded_bytes "$work/py")
VALGRIND_LIB="$build/valgrind" valgrind --tool=hwtrace -q \
	--hwt-out="$work/py.stream" "$python" -c pass
stream_bytes=$(stat -c %s "$work/py.stream")

# --- the loop: ptrace, valgrind, gdb record full ----------------------------
n_small=${BENCH_PTRACE_ITERS:-20000}
n_big=${BENCH_VALGRIND_ITERS:-20000000}
t3=$(now); "$build/hwtrace" record -q --backend ptrace -o "$work/pt" -- "$work/loop" "$n_small" >/dev/null; t4=$(now)
"$build/hwtrace" record -q --backend valgrind -o "$work/vg" -- "$work/loop" "$n_big" >/dev/null; t5=$(now)
gdb_line=$(gdb -nx -batch -x "$here/gdb_record_full.py" \
	--args "$work/loop" "$n_small" 2>/dev/null | grep '^GDB_RECORD_FULL')

python3 - "$t0" "$t1" "$t2" "$py_insns" "$py_bytes" "$stream_bytes" \
	"$t3" "$t4" "$t5" "$(insns "$work/pt")" "$(insns "$work/vg")" \
	"$gdb_line" "$py_decoded" <<'PY'
import sys
a = sys.argv[1:]
t0, t1, t2 = map(float, a[0:3])
py_insns, py_bytes, stream_bytes = int(a[3]), int(a[4]), int(a[5])
t3, t4, t5 = map(float, a[6:9])
pt_insns, vg_insns = int(a[9]), int(a[10])
gdb = dict(kv.split('=') for kv in a[11].split()[1:])
py_decoded = int(a[12])
none_s, rec_s = t1 - t0, t2 - t1
print(f"valgrind: python3 -c pass: valgrind --tool=none {none_s:.2f} s, "
      f"hwtrace record --backend valgrind {rec_s:.2f} s "
      f"({py_insns} insns, {py_insns / rec_s / 1e6:.1f} M insns/s)")
print(f"valgrind: ratio record / --tool=none = {rec_s / none_s:.2f}x (goal <= 3x)")
pt_rate = pt_insns / (t4 - t3)
vg_rate = vg_insns / (t5 - t4)
gdb_rate = int(gdb['insns']) / float(gdb['seconds'])
print(f"valgrind: loop: ptrace {pt_rate:,.0f} insns/s ({pt_insns} insns), "
      f"valgrind {vg_rate:,.0f} insns/s ({vg_insns} insns), "
      f"gdb record full {gdb_rate:,.0f} insns/s")
print(f"valgrind: ratio valgrind / ptrace = {vg_rate / pt_rate:.0f}x (goal >= 200x)")
print(f"valgrind: ratio valgrind / gdb record full = {vg_rate / gdb_rate:.0f}x (goal >= 500x)")
print(f"valgrind: trace bytes per instruction: bundle {py_bytes / py_insns:.3f} "
      f"(goal <= 0.5); tool stream {stream_bytes / py_insns:.2f}, "
      f"hwt-sw decoded {py_decoded / py_insns:.2f}")
PY
