#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Build hwtrace.ko against the Debian linux-headers-amd64 tree, boot the
# matching kernel under qemu (TCG) with a busybox initramfs holding the
# module and the guest tests (tests/kernel/), and report the guest's
# PASS/FAIL lines as "N passed, N failed". Exits nonzero on a failure or
# when the guest never reports (an oops panics the guest: oops=panic).
#
# usage: scripts/check-kernel.sh [BUILD_DIR]    (default build/kernel-check)
# Exit status 77: qemu or the kernel cannot be had here (a skip).
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$SRC/build/kernel-check}
mkdir -p "$B"
B=$(cd "$B" && pwd)
TIMEOUT=${HWT_KCHECK_TIMEOUT:-480}
# hwt-server for the GDB sessions in the guest: the build next to B.
SERVER=${HWT_SERVER:-$(dirname "$B")/hwt-server}
# Run from make (make check-kernel O=DIR), the caller's variables would
# reach the builds below through MAKEFLAGS: kbuild takes O= as its own
# output directory. Those builds are independent of the caller's.
unset MAKEFLAGS MFLAGS MAKELEVEL

skip() { echo "SKIP kernel_module: $*"; exit 77; }
die() { echo "FAIL kernel_build: $*"; echo "0 passed, 1 failed"; exit 1; }

command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed (scripts/install-deps.sh)"
BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] || skip "busybox-static not installed"
HDR=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1)
[ -n "$HDR" ] || skip "linux-headers-amd64 not installed"
KVER=${HDR#/usr/src/linux-headers-}

# The module, built once from the source tree `make install` gives DKMS
# (/usr/src/hwtrace-VERSION, here under a DESTDIR), with its dkms.conf's
# command: what `dkms install` runs for every installed kernel.
rm -rf "$B/mod" "$B/dkms"
make -s -C "$SRC" install-dkms DESTDIR="$B/dkms" >"$B/mod.log" 2>&1 ||
	{ cat "$B/mod.log"; die "installing the module's source for DKMS failed"; }
mv "$B/dkms/usr/src/hwtrace-$(cat "$SRC/VERSION")" "$B/mod"
grep -q '^MAKE\[0\]="make KDIR=${kernel_source_dir} modules"$' "$B/mod/dkms.conf" ||
	die "dkms.conf does not build with make KDIR=... modules"
make -s -C "$B/mod" KDIR="$HDR" modules >"$B/mod.log" 2>&1 ||
	{ cat "$B/mod.log"; die "module build failed"; }
grep -q "warning:" "$B/mod.log" && { cat "$B/mod.log"; die "module build warnings"; }

# The kernel image matching the headers, cached.
VMLINUZ=$B/cache/vmlinuz-$KVER
if [ ! -f "$VMLINUZ" ]; then
	mkdir -p "$B/cache/deb"
	(cd "$B/cache/deb" && rm -f ./*.deb &&
	 { apt-get download "linux-image-$KVER" >/dev/null 2>&1 ||
	   { [ "$(id -u)" = 0 ] && apt-get update >/dev/null 2>&1 &&
	     apt-get download "linux-image-$KVER" >/dev/null 2>&1; }; }) ||
		skip "cannot download linux-image-$KVER (apt-get download)"
	rm -rf "$B/cache/x"
	dpkg-deb -x "$B"/cache/deb/linux-image-"$KVER"*.deb "$B/cache/x"
	cp "$B/cache/x/boot/vmlinuz-$KVER" "$VMLINUZ"
	rm -rf "$B/cache/x" "$B/cache/deb"
fi

# The shared libraries dynamic programs need, into the initramfs at the
# paths ldd names (the initramfs's own files left alone).
copy_libs() {
	for lib in $(ldd "$@" |
		     sed -n 's/.*[[:space:]]\(\/[^[:space:]]*\) (0x.*/\1/p' | sort -u); do
		case $lib in "$R"/*) continue ;; esac
		[ -f "$R$lib" ] && continue
		mkdir -p "$R${lib%/*}"
		cp -L "$lib" "$R$lib" || die "cannot copy $lib into the initramfs"
	done
}

# Guest programs: static, but for dlopen below.
R=$B/initramfs
rm -rf "$R"
mkdir -p "$R/bin" "$R/tests" "$R/proc" "$R/sys" "$R/dev" "$R/tmp"
K=$SRC/tests/kernel
CFLAGS="-static -O2 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter"
gcc $CFLAGS -I"$SRC/kernel/uapi" -o "$R/tests/hwt-guest" "$K/hwt-guest.c" -lpthread ||
	die "hwt-guest build failed"
# The collector API's guest tool, libhwt-collect and libhwt-common built
# in. It links dynamically (Debian has no static Zydis, which the ptrace
# recorder decodes stores with); its libraries go into the initramfs as
# hwt-server's do. The collector's sources are the Makefile's list.
collect_src=$(cd "$SRC" && env -u MAKEFLAGS -u MAKELEVEL make -s --no-print-directory print-collect-src) ||
	die "cannot list the collector's sources"
gcc ${CFLAGS#-static } -std=c11 -D_GNU_SOURCE -I"$SRC/common" -I"$SRC/collect" \
	-o "$R/tests/hwt-collect-guest" "$K/hwt-collect-guest.c" \
	$(for f in $collect_src; do printf '%s/%s ' "$SRC" "$f"; done) "$SRC"/common/*.c \
	-lZydis -ljson-c -lelf -lzstd -lz -lpthread >"$B/collect-guest.log" 2>&1 ||
	{ cat "$B/collect-guest.log"; die "hwt-collect-guest build failed"; }
copy_libs "$R/tests/hwt-collect-guest"
for p in sig fork exec threads naps; do
	gcc $CFLAGS -o "$R/tests/$p" "$K/$p.c" -lpthread || die "$p build failed"
done
# Ordinary C: calls and returns through libc; a SIGSEGV two calls deep.
for p in recursion crash; do
	gcc $CFLAGS -o "$R/tests/$p" "$SRC/tests/programs/$p.c" || die "$p build failed"
done
# A dynamic program: dlopen()s libhwtdemo.so from its own directory
# (RUNPATH $ORIGIN) and dlclose()s it. The host's dynamic loader and the
# libraries both need go into the initramfs at the paths ldd names, so the
# guest resolves them as the host does.
make -s -C "$SRC/tests/programs" O="$B/progs" "$B/progs/dlopen" \
	"$B/progs/libhwtdemo.so" >"$B/progs.log" 2>&1 ||
	{ cat "$B/progs.log"; die "dlopen build failed"; }
cp "$B/progs/dlopen" "$B/progs/libhwtdemo.so" "$R/tests/"
copy_libs "$R/tests/dlopen" "$R/tests/libhwtdemo.so"
[ -f "$R/lib64/ld-linux-x86-64.so.2" ] || die "ldd named no dynamic loader for dlopen"
# hwt-server, dynamic like dlopen: its libraries go in the same way. GDB
# runs on the host (it needs Python and much more); hwt-relay joins the
# guest's second serial port, which qemu offers the host as a TCP port,
# to the server's socket.
GDB_SESSIONS=0
if command -v gdb >/dev/null && [ -x "$SERVER" ]; then
	GDB_SESSIONS=1
	cp "$SERVER" "$R/tests/hwt-server"
	gcc $CFLAGS -o "$R/tests/hwt-relay" "$K/hwt-relay.c" || die "hwt-relay build failed"
	copy_libs "$SERVER"
elif ! command -v gdb >/dev/null; then
	echo "SKIP gdb_sessions: gdb is not installed on the host"
else
	echo "SKIP gdb_sessions: $SERVER is not built (make binaries)"
fi
gcc -static -nostdlib -DLOOP_N=5000 -o "$R/tests/loop" "$K/loop.S" || die "loop build failed"
gcc -static -nostdlib -DLOOP_N=500000 -o "$R/tests/bigloop" "$K/loop.S" || die "bigloop build failed"
cp "$B/mod/hwtrace.ko" "$R/tests/"
cp "$BUSYBOX" "$R/bin/busybox"
cp "$K/init" "$R/init"
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1 >"$B/initrd.gz")

# Boot. The guest powers off when done; a panic (oops=panic) ends qemu
# at once (panic=-1 reboots, -no-reboot exits). The second serial port
# is a TCP server on the host for the GDB sessions (hwt_gdb=1 tells the
# guest to hold them).
LOG=$B/serial.log
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rc=0
timeout "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m 768 -smp 2 \
	-nodefaults -no-reboot -display none -monitor none -serial stdio -nic none \
	-serial "tcp:127.0.0.1:$PORT,server=on,wait=off" \
	-kernel "$VMLINUZ" -initrd "$B/initrd.gz" \
	-append "console=ttyS0 panic=-1 oops=panic rdinit=/init loglevel=4 hwt_gdb=$GDB_SESSIONS" \
	>"$LOG" 2>&1 </dev/null &
QEMU=$!
# Serve each session the guest opens ("GDB SESSION name", then "GDB
# READY" once the relay holds the port) with the same GDB script.
served=0
rm -f "$B"/gdb-*.out
while kill -0 $QEMU 2>/dev/null; do
	ready=$(tr -d '\r' <"$LOG" | awk '/^GDB SESSION [a-z]/ { name = $3 } /^GDB READY/ { print name }')
	n=$(printf '%s\n' "$ready" | grep -c . || true)
	if [ "$n" -gt "$served" ]; then
		served=$((served + 1))
		name=$(printf '%s\n' "$ready" | sed -n "${served}p")
		timeout 300 gdb -nx -batch -ex 'set pagination off' -ex 'set confirm off' \
			-ex "file $R/tests/recursion" -ex "target remote 127.0.0.1:$PORT" \
			-x "$K/session.gdb" >"$B/gdb-$name.out" 2>&1 || true
		# A serial port shows no hangup: tell hwt-relay GDB is gone.
		python3 -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"\x04hwt-relay-end\x04")
time.sleep(1)' "$PORT" || true
		continue
	fi
	sleep 0.2
done
wait $QEMU || rc=$?
tr -d '\r' <"$LOG" >"$LOG.txt"
if [ "$rc" != 0 ] && ! grep -q "^GUEST DONE" "$LOG.txt"; then
	grep -q "Could not\|failed to initialize" "$LOG.txt" &&
		! grep -q "Linux version" "$LOG.txt" && skip "qemu cannot run: $(head -n 3 "$LOG.txt")"
fi

grep -E "^(PASS|FAIL|SKIP) |^BENCH " "$LOG.txt" || true
pass=$(grep -c "^PASS " "$LOG.txt" || true)
fail=$(grep -c "^FAIL " "$LOG.txt" || true)
if ! grep -q "^GUEST DONE" "$LOG.txt"; then
	echo "FAIL guest_completed: the guest never finished (qemu status $rc); last lines of $LOG.txt:"
	tail -n 40 "$LOG.txt" | sed 's/^/  | /'
	fail=$((fail + 1))
fi
if grep -q "Oops\|BUG:\|WARNING:\|Call Trace" "$LOG.txt"; then
	echo "FAIL guest_kernel_clean: kernel warning or oops in $LOG.txt:"
	grep -m 20 -A 20 "Oops\|BUG:\|WARNING:" "$LOG.txt" | sed 's/^/  | /'
	fail=$((fail + 1))
fi
if [ "$GDB_SESSIONS" = 1 ] && grep -q "^GUEST DONE" "$LOG.txt"; then
	r=$(sh "$K/gdb-compare.sh" "$B" $(awk '/^GDB SESSION [a-z]/ { print $3 }' "$LOG.txt"))
	printf '%s\n' "$r"
	pass=$((pass + $(printf '%s\n' "$r" | grep -c "^PASS " || true)))
	fail=$((fail + $(printf '%s\n' "$r" | grep -c "^FAIL " || true)))
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
