#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The valgrind recorder on workloads of seconds, against valgrind
# --tool=none in the same run (bench/scale.py says what is measured).
# Usage: bench/scale.sh BUILD [WORKLOAD...]
set -eu
build=${1:-build}
shift || true
if ! "$build/hwtrace" backends | grep -q '^valgrind *available'; then
	echo "scale: skipped: $("$build/hwtrace" backends | grep '^valgrind')"
	exit 0
fi
exec python3 "$(dirname "$0")/scale.py" "$build" "$@"
