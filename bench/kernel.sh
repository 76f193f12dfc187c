#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Recording rate of hwtrace.ko against a ptrace single-stepper, both in
# the same qemu guest (the guest suite's bench step): prints the BENCH
# line and whether the module reaches 50 times the ptrace rate.
# usage: bench/kernel.sh [BUILD_DIR]
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$SRC/build/kernel-check}
out=$("$SRC/scripts/check-kernel.sh" "$B") || true
line=$(printf '%s\n' "$out" | grep '^BENCH ' || true)
[ -n "$line" ] || { printf '%s\n' "$out" | tail -n 20; echo "bench-kernel: the guest printed no BENCH line"; exit 1; }
echo "$line"
ratio=$(echo "$line" | sed -n 's/.*ratio \([0-9]*\)\..*/\1/p')
if [ "${ratio:-0}" -ge 50 ]; then
	echo "module/ptrace ratio ${ratio}x: goal (>= 50x) met"
else
	echo "module/ptrace ratio ${ratio}x: below the 50x goal"
fi
