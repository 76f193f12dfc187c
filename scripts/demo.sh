#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# make demo: record the bundled example that crashes two calls deep, then
# show what hwtrace knows about the crash.
set -eu
build=${1:-build}
hwtrace="$build/hwtrace"
prog="$(cd "$build/programs" && pwd)/demo_crash"
out=$(mktemp -d /tmp/hwtrace-demo-XXXXXX)
trap 'rm -rf "$out"' EXIT

echo "\$ hwtrace record -o $out/bundle -- $prog"
status=0
"$hwtrace" record -o "$out/bundle" -- "$prog" || status=$?
echo "(exit status $status: the program crashed, as it should)"
[ "$status" -gt 128 ] || { echo "demo: expected a crash" >&2; exit 1; }
echo
echo "\$ hwtrace info $out/bundle"
"$hwtrace" info "$out/bundle"
echo
echo "\$ hwtrace dump --insn --last 30 $out/bundle"
"$hwtrace" dump --insn --last 30 "$out/bundle"
echo
echo "\$ hwtrace dump --calls --since main $out/bundle"
"$hwtrace" dump --calls --since main "$out/bundle"
