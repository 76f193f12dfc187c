#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Install the Debian packages hwtrace needs, only those missing, quietly.
# Idempotent: when everything is there it does nothing, not even
# `apt-get update`. README.md says why each package is needed.
set -eu

PACKAGES="build-essential pkg-config python3 gdb gdbserver dejagnu procps util-linux
libzydis-dev libcapstone-dev libelf-dev libdw-dev libjson-c-dev libzstd-dev
libopencsd-dev libopencsd-bin
libipt-dev
valgrind librsvg2-bin
debhelper dh-dkms dpkg-dev
lldb-22 liblldb-22-dev python3-lldb-22
clang libclang-rt-14-dev
qemu-system-x86 busybox-static cpio linux-headers-amd64"

missing=""
for p in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing Debian packages:$missing" >&2
	echo "install-deps: run 'sudo apt-get install$missing' (or make as root)" >&2
	exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
