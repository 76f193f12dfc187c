#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The valgrind recorder's values of the past against the same recording
# without them and valgrind --tool=none, in the same run (bench/values.py
# says what is measured).
# Usage: bench/values.sh BUILD [WORKLOAD...]
set -eu
build=${1:-build}
shift || true
if ! "$build/hwtrace" backends | grep -q '^valgrind *available'; then
	echo "values: skipped: $("$build/hwtrace" backends | grep '^valgrind')"
	exit 0
fi
exec python3 "$(dirname "$0")/values.py" "$build" "$@"
