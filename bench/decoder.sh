#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bench/decoder.sh BUILD: the x86 decoder. (a) decode throughput of
# replay's decoder (Zydis) against Capstone over libc's executable
# sections; (b) the replay full walk of one recording, by this tree's
# bench_replay and by the one built from the commit before replay moved
# to Zydis (BENCH_DECODER_BEFORE, default 12ae132), measured in this run
# on the same bundle.
set -eu
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
before=${BENCH_DECODER_BEFORE:-12ae132}
work=$(mktemp -d /tmp/hwtrace-bench-decoder-XXXXXX)
cleanup() {
	git -C "$top" worktree remove --force "$work/before" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

"$build/bench/bench_decode"

# A recording whose walk meets many distinct instructions (the dynamic
# linker, libc start-up, directory listing): decoding costs show there.
"$build/hwtrace" record -q -o "$work/ls" --size 64M -- /bin/ls -l /usr/lib >/dev/null

if ! git -C "$top" worktree add -q --detach "$work/before" "$before" 2>/dev/null; then
	echo "decoder: cannot check out $before (no git history here); the full walk before the change is not measured"
	exit 0
fi
make -s -C "$work/before" build/bench/bench_replay >/dev/null 2>&1
walk() { "$1" "$work/ls" | sed -n 's/^full walk: .*, \([0-9.]*\) M instructions\/s$/\1/p'; }
old=$(walk "$work/before/build/bench/bench_replay")
new=$(walk "$build/bench/bench_replay")
echo "decoder: full walk before ($before, Capstone): $old M instructions/s"
echo "decoder: full walk after (Zydis):              $new M instructions/s"
python3 -c "import sys; print(f'decoder: full walk ratio after / before = {float(sys.argv[2]) / float(sys.argv[1]):.2f}x')" "$old" "$new"
