# SPDX-License-Identifier: BSD-2-Clause
# hwtrace top-level build. `make` builds everything into build/;
# `make check` installs missing Debian packages, builds and runs every test;
# `make demo` records the bundled crashing example and shows its history.
# SAN=1 builds into build-san/ with AddressSanitizer and UBSan.

CC      ?= cc
SAN     ?=
ifeq ($(SAN),1)
O       := build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
O       := build
SANFLAGS :=
endif

CSTD     := -std=c11 -D_GNU_SOURCE
WARN     := -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CFLAGS   ?= -O2 -g
ALL_CFLAGS = $(CSTD) $(WARN) $(CFLAGS) $(SANFLAGS) -Icommon -Icollect -Ireplay -MMD -MP
LDFLAGS_ALL = $(SANFLAGS) $(LDFLAGS)

COMMON_SRC  := $(wildcard common/*.c)
COLLECT_SRC := $(wildcard collect/*.c collect/*/*.c)
REPLAY_SRC  := $(wildcard replay/*.c)
HWTRACE_SRC := $(wildcard tools/hwtrace/*.c)
HWT_SERVER_SRC := $(wildcard plugin/gdb/*.c)
# What the programs share (not the libraries, which never print):
# progress shown on a terminal.
CLI_SRC     := $(wildcard tools/cli/*.c)
UNIT_SRC    := $(wildcard tests/unit/*/test_*.c tests/unit/*/*/test_*.c)
PROG_SRC    := $(wildcard tests/programs/*.c)

obj = $(patsubst %.c,$(O)/%.o,$(1))

LIB_COMMON  := $(O)/libhwt-common.a
LIB_COLLECT := $(O)/libhwt-collect.a
LIB_REPLAY  := $(O)/libhwt-replay.a
LIB_CLI     := $(O)/libhwt-cli.a
HWTRACE     := $(O)/hwtrace
HWT_SERVER  := $(O)/hwt-server
UNIT_BINS   := $(patsubst tests/unit/%.c,$(O)/tests/unit/%,$(UNIT_SRC))

# What each library needs from Debian's, so every binary links what it
# uses: common reads JSON and ELF notes, replay decodes (Zydis for x86,
# Capstone for Arm, libipt, OpenCSD, libdw's line tables); the collector
# decodes x86 with Zydis to keep the old bytes of what the ptrace
# recorder's instructions store.
EXT_COMMON  := -ljson-c -lelf -lzstd
# Capstone is loaded when Arm code is first decoded (replay/arm.c); only
# the decoder benchmark, which compares it with Zydis, links it.
EXT_REPLAY  := -lZydis -ldw -lipt -lopencsd_c_api -lopencsd $(EXT_COMMON)
EXT_COLLECT := -lZydis $(EXT_COMMON)

.PHONY: all binaries deps check check-unit check-gdb demo bench clean programs fuzz fuzz-long print-collect-src

# `make` alone builds what `make all` builds, whatever the included
# component files define first.
.DEFAULT_GOAL := all

# Components with build rules of their own add their outputs to EXTRA_ALL.
EXTRA_ALL :=
-include plugin/lldb/build.mk
-include kernel/build.mk
-include collect/valgrind/tool/build.mk
include install.mk

all: binaries programs $(EXTRA_ALL)
binaries: $(HWTRACE) $(HWT_SERVER) $(UNIT_BINS)

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# Position-independent objects, for the shared libraries (install.mk)
# and the LLDB plugin: only what the public headers mark HWT_API is
# visible outside the object they are linked into.
$(O)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

$(LIB_COMMON): $(call obj,$(COMMON_SRC))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(LIB_COLLECT): $(call obj,$(COLLECT_SRC))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(LIB_REPLAY): $(call obj,$(REPLAY_SRC))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^

$(LIB_CLI): $(call obj,$(CLI_SRC))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^

$(O)/tools/hwtrace/%.o $(O)/plugin/gdb/%.o: ALL_CFLAGS += -Itools/cli
$(HWTRACE): $(call obj,$(HWTRACE_SRC)) $(LIB_CLI) $(LIB_COLLECT) $(LIB_REPLAY) $(LIB_COMMON)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(EXT_REPLAY)

$(HWT_SERVER): $(call obj,$(HWT_SERVER_SRC)) $(LIB_CLI) $(LIB_COLLECT) $(LIB_REPLAY) $(LIB_COMMON)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(EXT_REPLAY)

# Unit tests mirror the source tree: tests/unit/<folder>/test_*.c tests
# <folder>/ and links only what that folder's code needs. The shared
# helpers (check.h, collect_util.h, self_image.h) are found by -I.
UNIT_O := $(O)/tests/unit
$(UNIT_O)/%.o: ALL_CFLAGS += -Itests/unit -Itests
$(UNIT_O)/plugin/gdb/%.o: ALL_CFLAGS += -Iplugin/gdb

$(UNIT_O)/common/%: $(UNIT_O)/common/%.o $(LIB_COMMON)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(EXT_COMMON)

$(UNIT_O)/collect/%: $(UNIT_O)/collect/%.o $(LIB_COLLECT) $(LIB_COMMON)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(EXT_COLLECT)

# The Valgrind flags thunk (collect/valgrind/vexflags.c) is checked
# against Valgrind's own amd64g_calculate_rflags_all, from the libvex
# archive of Debian's valgrind package: GPL, so linked into this test
# only. Without the archive the test says it skipped the comparison.
VEX_ARCHIVE := $(wildcard $(shell pkg-config --variable=libdir valgrind 2>/dev/null)/valgrind/libvex-amd64-linux.a)
$(UNIT_O)/collect/test_vexflags.o: ALL_CFLAGS += $(if $(VEX_ARCHIVE),-DHWT_VEX_ORACLE=1)
$(UNIT_O)/collect/test_vexflags.o: $(VEX_ARCHIVE)
$(UNIT_O)/collect/test_vexflags: $(UNIT_O)/collect/test_vexflags.o $(LIB_COLLECT) $(LIB_COMMON) $(VEX_ARCHIVE)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(EXT_COLLECT)

# Expansion is tested on traces the collector records.
$(UNIT_O)/replay/test_expand_sw: $(UNIT_O)/replay/test_expand_sw.o $(LIB_COLLECT) $(LIB_REPLAY) $(LIB_COMMON)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(EXT_REPLAY)

$(UNIT_O)/replay/%: $(UNIT_O)/replay/%.o $(LIB_REPLAY) $(LIB_COMMON)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(EXT_REPLAY)

# The protocol parser is tested on its own, without the server (common
# gives it its hex digits).
$(UNIT_O)/plugin/gdb/test_rsp: $(UNIT_O)/plugin/gdb/test_rsp.o $(O)/plugin/gdb/rsp.o $(LIB_COMMON)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(EXT_COMMON)

# hwt-server's packet handlers, over a fake target.
$(UNIT_O)/plugin/gdb/test_gdb_server: $(UNIT_O)/plugin/gdb/test_gdb_server.o $(filter-out $(O)/plugin/gdb/main.o,$(call obj,$(HWT_SERVER_SRC))) $(LIB_CLI) $(LIB_COLLECT) $(LIB_REPLAY) $(LIB_COMMON)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(EXT_REPLAY)

# Test programs are the traced subjects: built without sanitizers, with
# line tables, by the rules in tests/programs/Makefile.
programs:
	$(MAKE) -C tests/programs O=$(abspath build)/programs

deps:
	@scripts/install-deps.sh

check: deps
	$(MAKE) all
	$(MAKE) SAN=1 binaries
	@# The sanitizer build's tests trace the same (uninstrumented) programs.
	ln -sfn ../build/programs build-san/programs
	$(MAKE) fuzz
	@python3 tests/run.py --build build --san-build build-san

check-unit: all
	@python3 tests/run.py --build build --only unit

# GDB 13.1's own testsuite against hwt-server and Debian's gdbserver
# (docs/gdb-testsuite.md): every set; check runs btrace and full with
# their gdbserver references (tests/integration/test_gdb_testsuite.py),
# the sets with no unexpected failure. SETS="reverse" narrows it.
check-gdb: deps
	$(MAKE) all
	@scripts/check-gdb.sh build $(SETS)

demo: deps
	$(MAKE) all
	@scripts/demo.sh build

BENCH_BINS := $(O)/bench/bench_replay $(O)/bench/bench_decode $(O)/bench/bench_past
$(O)/bench/%: $(O)/bench/%.o $(LIB_REPLAY) $(LIB_COMMON)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(EXT_REPLAY) -lcapstone

bench: all $(BENCH_BINS)
	@bench/run.sh build

# libFuzzer targets (docs/fuzzing.md): clang with its fuzzer runtime,
# AddressSanitizer and UBSan, so the library sources are compiled again
# into build-fuzz/ (gcc objects cannot take clang's fuzzer
# instrumentation). tests/integration/test_fuzz.py runs them briefly.
FUZZ_O     := build-fuzz
FUZZ_CC    := clang
FUZZ_SAN   := address,undefined
FUZZ_FLAGS := -O1 -g -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS  := $(patsubst tests/fuzz/%.c,$(FUZZ_O)/%,$(FUZZ_SRC))
FUZZ_LIB   := $(patsubst %.c,$(FUZZ_O)/obj/%.o,$(COMMON_SRC) $(REPLAY_SRC))

$(FUZZ_O)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CSTD) $(WARN) $(FUZZ_FLAGS) \
		-fsanitize=fuzzer-no-link,$(FUZZ_SAN) -Icommon -Icollect -Ireplay \
		-Itests/fuzz -MMD -MP -c $< -o $@

$(FUZZ_BINS): $(FUZZ_O)/%: $(FUZZ_O)/obj/tests/fuzz/%.o $(FUZZ_LIB)
	$(FUZZ_CC) -fsanitize=fuzzer,$(FUZZ_SAN) -o $@ $^ $(EXT_REPLAY)

# hwt-server's packet parser is fuzzed on its own, like its unit test.
$(FUZZ_O)/fuzz_rsp: $(FUZZ_O)/obj/plugin/gdb/rsp.o

# The valgrind backend's stream reader and what it writes into.
$(FUZZ_O)/fuzz_vgstream: $(patsubst %.c,$(FUZZ_O)/obj/%.o,collect/valgrind/stream.c collect/valgrind/runlog.c collect/valgrind/keep.c collect/ring.c collect/spill.c collect/os/modset.c collect/os/procmaps.c collect/os/procfs.c)

# The tool's data history into values of the past.
$(FUZZ_O)/fuzz_vgdata: $(patsubst %.c,$(FUZZ_O)/obj/%.o,collect/valgrind/data.c collect/valgrind/vexflags.c)

# The link to Valgrind's gdbserver, reading what vgdb passes on.
$(FUZZ_O)/fuzz_vgdb: $(FUZZ_O)/obj/collect/valgrind/vgdb.o

# What the ptrace recorder takes instructions and calls to write.
$(FUZZ_O)/fuzz_stores: $(patsubst %.c,$(FUZZ_O)/obj/%.o,collect/os/x86mem.c collect/ptrace/sysmem.c)

fuzz: $(FUZZ_BINS)

# Every fuzz target for FUZZ_SECONDS each (docs/fuzzing.md), two at a
# time; what a run finds that covers new code is merged into the corpus
# kept in tests/fuzz/corpus/TARGET/, which every run starts from.
FUZZ_SECONDS ?= 600
fuzz-long: all fuzz
	@HWT_FUZZ_SECONDS=$(FUZZ_SECONDS) HWT_FUZZ_KEEP=1 \
		python3 tests/integration/test_fuzz.py --build build

# The collector's sources, for the kernel suite's static guest build.
print-collect-src:
	@echo $(COLLECT_SRC)

clean:
	rm -rf build build-san build-fuzz

# Not GDB's testsuite, unpacked into the build by check-gdb: its .d are
# dtrace scripts.
-include $(shell find $(O) $(FUZZ_O) -path '*/gdb-testsuite' -prune -o -name '*.d' -print 2>/dev/null)
