#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# GDB 13.1's own testsuite (Debian's gdb-source package, run by dejagnu)
# against hwt-server, and against Debian's gdbserver as the reference:
#
#   btrace   gdb.btrace and gdb.python/py-record-btrace*.exp, record btrace
#            over the server (tests/gdb/boards/hwt-server.exp)
#   reverse  gdb.reverse on the server's own reverse execution (bs/bc:
#            gdb,can_reverse 1, gdb,use_precord 0), recording from
#            launch (--record): no test asks for a recording first
#   full     gdb.reverse and gdb.python/py-record-full.exp with GDB's
#            record full driving the server, the testsuite's default
#
# Each set runs against hwt-server (SET) and Debian's gdbserver
# (gdbserver-SET), where that can run it. dejagnu's results become PASS,
# FAIL and SKIP lines (unsupported, untested and GDB's own expected
# failures are skips with their reason) and the closing line; so are the
# failures tests/gdb/gdb-side-failures.txt shows to be GDB's own. make
# check runs btrace and full, each with its gdbserver reference
# (tests/integration/test_gdb_testsuite.py); reverse has failures left
# (docs/gdb-testsuite.md).
#
# usage: scripts/check-gdb.sh [BUILD_DIR] [SET...]   (default build, all sets)
# HWT_GDB_TESTS narrows a set's tests (dejagnu's TESTS, e.g.
# "gdb.btrace/step.exp").
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$SRC/build}" && pwd)
[ $# -gt 0 ] && shift
SETS=${*:-btrace reverse full}
W=$BUILD/gdb-testsuite
SERVER=$BUILD/hwt-server
# unset: make's variables must not reach the testsuite's own make.
unset MAKEFLAGS MFLAGS MAKELEVEL

skip() { echo "SKIP gdb_testsuite: $*"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
die() { echo "FAIL gdb_testsuite: $*"; echo "0 passed, 1 failed"; exit 1; }

[ -x "$SERVER" ] || die "$SERVER is not built (make)"
command -v runtest >/dev/null || skip "dejagnu is not installed (scripts/install-deps.sh)"
command -v gdb >/dev/null || skip "gdb is not installed"

# The testsuite of the installed GDB, from Debian's gdb-source package,
# unpacked once: the testsuite, the files its configure and Makefile use.
mkdir -p "$W"
if [ ! -f "$W/src/gdb/gdb/testsuite/configure" ]; then
	rm -rf "$W/src" "$W/deb"
	mkdir -p "$W/src" "$W/deb"
	(cd "$W/deb" && apt-get download gdb-source >/dev/null 2>&1) ||
		{ apt-get update -qq >/dev/null 2>&1 &&
		  (cd "$W/deb" && apt-get download gdb-source >/dev/null 2>&1); } ||
		skip "cannot download Debian's gdb-source package"
	dpkg -x "$W"/deb/gdb-source_*.deb "$W/deb/x"
	tar -xJf "$W/deb/x/usr/src/gdb.tar.xz" -C "$W/src" --wildcards \
		'gdb/gdb/testsuite/*' 'gdb/gdb/*.mk' gdb/install-sh \
		gdb/config.guess gdb/config.sub gdb/mkinstalldirs ||
		die "cannot unpack the gdb source"
	rm -rf "$W/deb"
fi

# dejagnu finds the project's boards through this site file.
cat >"$W/site-boards.exp" <<EOF
lappend boards_dir $SRC/tests/gdb/boards
EOF

total_pass=0 total_fail=0 total_skip=0

# One testsuite run: NAME, BOARD, server program, tests; hwt-server's
# options in $server_opts, the programs' GLIBC_TUNABLES in $tunables.
server_opts=
run_set() {
	name=$1 board=$2 server=$3
	shift 3
	dir=$W/run-$name
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$dir" && "$W/src/gdb/gdb/testsuite/configure" >configure.log 2>&1) ||
		{ echo "FAIL $name: the testsuite does not configure (see $dir/configure.log)"
		  total_fail=$((total_fail + 1)); return; }
	tests=${HWT_GDB_TESTS:-$*}
	# The testsuite's exit status says only that something failed: its
	# summary says what. Under GDB 13's record full the programs must
	# not run glibc's AVX or AVX-512 code, which it cannot record
	# ("Process record does not support instruction 0xc5 / 0x62"): on a
	# cpu that has them the tests would fail (or time out, over Debian's
	# gdbserver) by the cpu, not by the server.
	(cd "$dir" && HWT_SERVER=$SERVER HWT_SERVER_OPTS=$server_opts \
		GLIBC_TUNABLES=${tunables:-${GLIBC_TUNABLES:-}} \
		DEJAGNU=$W/site-boards.exp \
		timeout "${HWT_GDB_SET_TIMEOUT:-2400}" make check \
		RUNTESTFLAGS="--target_board=$board GDB=$(command -v gdb) GDBSERVER=$server $tests" \
		>"$dir/run.log" 2>&1) || true
	if [ ! -f "$dir/gdb.sum" ]; then
		echo "FAIL $name: no gdb.sum (see $dir/run.log)"
		total_fail=$((total_fail + 1))
		return
	fi
	# PASS/XPASS pass; FAIL/UNRESOLVED/ERROR fail; UNSUPPORTED,
	# UNTESTED and GDB's own KFAIL/XFAIL marks are skips with reasons.
	# GDB's own failures (tests/gdb/gdb-side-failures.txt) are skips
	# with their reason, and so, on the server's reverse, are the tests
	# that need GDB's record full itself (tests/gdb/record-full-only.txt).
	counts=$(awk -v set="$name" '
		FILENAME ~ /gdb-side-failures/ {
			if ($1 ~ /^#/ || NF < 2) next
			key = $0; sub(/ -- .*/, "", key)
			why = $0; sub(/^.* -- /, "", why)
			known[key] = why; next }
		FILENAME ~ /record-full-only/ {
			if ($1 ~ /^#/ || NF < 2) next
			key = $0; sub(/ -- .*/, "", key)
			why = $0; sub(/^.* -- /, "", why)
			full[key] = why; next }
		/^(PASS|XPASS): / { sub(/^[A-Z]*: /, ""); print "PASS " set ": " $0; p++; next }
		/^(FAIL|UNRESOLVED|ERROR): / {
			t = $0; sub(/^[A-Z]*: /, "", t); sub(/ \(.*\)$/, "", t)
			f = t; sub(/: .*/, "", f)
			ft = t; sub(/: /, " ", ft)
			base = set; sub(/^gdbserver-/, "", base)
			if ((base " " t) in known) {
				print "SKIP " set ": " t ": GDB'"'"'s own failure: " known[base " " t]; s++; next }
			if (set == "reverse" && ((f in full) || (ft in full))) {
				print "SKIP " set ": " t ": needs GDB'"'"'s record full: " ((ft in full) ? full[ft] : full[f]); s++; next }
			sub(/: /, " " set ": "); print; f_++; next }
		/^(UNSUPPORTED|UNTESTED|KFAIL|XFAIL): / {
			kind = $1; sub(/:$/, "", kind); $1 = "";
			print "SKIP " set ":" $0 ": " tolower(kind) " (the testsuite'"'"'s own verdict)"; s++; next }
		END { printf "COUNTS %d %d %d\n", p, f_, s }' \
		"$SRC/tests/gdb/gdb-side-failures.txt" \
		"$SRC/tests/gdb/record-full-only.txt" "$dir/gdb.sum" |
		sed 's/^UNRESOLVED /FAIL /; s/^ERROR /FAIL /')
	echo "$counts" | grep -v '^COUNTS' || true
	set -- $(echo "$counts" | sed -n 's/^COUNTS //p')
	echo "  | $name: $1 passed, $2 failed, $3 skipped ($dir/gdb.sum)"
	total_pass=$((total_pass + $1))
	total_fail=$((total_fail + $2))
	total_skip=$((total_skip + $3))
}

BTRACE="gdb.btrace/*.exp gdb.python/py-record-btrace*.exp"
REVERSE="gdb.reverse/*.exp"
FULL="gdb.reverse/*.exp gdb.python/py-record-full.exp"
NO_AVX=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX2,-AVX
tunables=
GS=$(command -v gdbserver || true)
for set in $SETS; do
	case $set in
	btrace) run_set btrace hwt-server "$SRC/tests/gdb/hwt-gdbserver" $BTRACE ;;
	reverse) server_opts=--record
		run_set reverse hwt-server-reverse "$SRC/tests/gdb/hwt-gdbserver" $REVERSE
		server_opts= ;;
	full) tunables=$NO_AVX
		run_set full hwt-server "$SRC/tests/gdb/hwt-gdbserver" $FULL
		tunables= ;;
	gdbserver-*)
		[ -n "$GS" ] || { echo "SKIP $set: gdbserver is not installed"; total_skip=$((total_skip + 1)); continue; }
		case ${set#gdbserver-} in
		btrace) run_set "$set" debian-gdbserver "$GS" $BTRACE ;;
		full) tunables=$NO_AVX
			run_set "$set" debian-gdbserver "$GS" $FULL
			tunables= ;;
		*) die "unknown set $set" ;;
		esac ;;
	*) die "unknown set $set (btrace, reverse, full, gdbserver-btrace, gdbserver-full)" ;;
	esac
done
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
