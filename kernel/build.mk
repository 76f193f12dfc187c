# SPDX-License-Identifier: GPL-2.0-only
# hwtrace.ko (kernel/). The host kernel here cannot load modules, so
# the module is built and tested inside a qemu guest by
# scripts/check-kernel.sh (docs/kernel-module.md); it is not part of
# `make all`. `make bench-kernel` prints the module vs ptrace rate.
.PHONY: check-kernel bench-kernel

check-kernel: $(O)/hwt-server
	@scripts/check-kernel.sh $(O)/kernel-check

bench-kernel:
	@bench/kernel.sh $(O)/kernel-check
