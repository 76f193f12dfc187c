# SPDX-License-Identifier: GPL-2.0-or-later
# collect/valgrind/tool: the hwtrace Valgrind tool, built out of tree the
# way Valgrind builds its own tools (pkg-config valgrind gives the headers,
# libcoregrind, libvex and the load address): no libc, static, linked at
# valt_load_address. Valgrind finds tools in VALGRIND_LIB, so $(O)/valgrind/
# holds the tool beside links to everything of the installed Valgrind's
# own directory; the valgrind backend points VALGRIND_LIB there. Built
# without sanitizers in every build: it runs inside Valgrind.

VG_LIBEXEC  := /usr/libexec/valgrind
VG_TOOL_DIR := $(O)/valgrind
VG_TOOL     := $(VG_TOOL_DIR)/hwtrace-amd64-linux
VG_TOOL_SRC := collect/valgrind/tool/hwt_tool.c collect/valgrind/tool/hwt_data.c \
	       collect/valgrind/tool/hwt_guest.c
VG_CFLAGS   := -std=gnu11 -m64 -O2 -g $(WARN) -fno-stack-protector \
	       -fno-builtin -fno-strict-aliasing -fno-pic -fno-pie \
	       -DVGA_amd64=1 -DVGO_linux=1 -DVGP_amd64_linux=1 \
	       -DVGPV_amd64_linux_vanilla=1
VG_LDFLAGS  := -m64 -static -nodefaultlibs -nostartfiles -u _start \
	       -Wl,--build-id=none -no-pie

ifneq ($(wildcard /usr/include/valgrind/pub_tool_basics.h),)
# Beside hwtrace in every build, the sanitizer build's included: the
# backend finds it there.
binaries: $(VG_TOOL)
else ifeq ($(MAKELEVEL),0)
$(info Valgrind tool not built: no /usr/include/valgrind/pub_tool_basics.h (Debian package valgrind))
endif

$(VG_TOOL): $(VG_TOOL_SRC) collect/valgrind/tool/hwt_data.h \
	    collect/valgrind/tool/hwt_guest.h \
	    collect/valgrind/vgstream.h collect/valgrind/vgdata.h
	@mkdir -p $(VG_TOOL_DIR)
	@# Valgrind's own files (preloads, suppressions, gdbserver xml).
	for f in $(VG_LIBEXEC)/*; do ln -sfn $$f $(VG_TOOL_DIR)/; done
	for f in $(VG_TOOL_SRC); do \
		$(CC) $(VG_CFLAGS) $$(pkg-config --cflags valgrind) -c $$f \
			-o $@.$$(basename $$f .c).o || exit 1; \
	done
	$(CC) $(VG_LDFLAGS) \
		-Wl,-Ttext-segment=$$(pkg-config --variable=valt_load_address valgrind) \
		-o $@ $(patsubst %,$@.%.o,$(basename $(notdir $(VG_TOOL_SRC)))) \
		$$(pkg-config --libs valgrind)
	rm -f $@.*.o
