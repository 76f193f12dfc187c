# SPDX-License-Identifier: BSD-2-Clause
# plugin/lldb: libhwt-lldb.so, the `hwt` command family for stock LLDB
# (`plugin load`, docs/lldb.md). The C libraries' position-independent
# objects ($(O)/pic/, the Makefile's rule; the static libraries are not)
# are linked into the shared object with the C++ layer, so the plugin needs
# nothing of hwtrace at run time. Not built with SAN=1: a sanitized shared
# object cannot be dlopen'ed into an unsanitized lldb.

LLDB_PREFIX   := /usr/lib/llvm-22
LLDB_PLUGIN   := $(O)/libhwt-lldb.so
LLDB_SRC      := $(wildcard plugin/lldb/*.cpp)
LLDB_OBJ      := $(patsubst %.cpp,$(O)/pic/%.o,$(LLDB_SRC))
LLDB_PIC_C    := $(patsubst %.c,$(O)/pic/%.o,$(COMMON_SRC) $(REPLAY_SRC))
LLDB_CXXFLAGS := -std=c++17 -Wall -Wextra -Werror -Wshadow -fPIC $(CFLAGS) \
		 -I$(LLDB_PREFIX)/include -Icommon -Ireplay -MMD -MP

ifneq ($(SAN),1)
ifneq ($(wildcard $(LLDB_PREFIX)/include/lldb/API/LLDB.h),)
EXTRA_ALL += $(LLDB_PLUGIN)
else ifeq ($(MAKELEVEL),0)
$(info LLDB plugin not built: no $(LLDB_PREFIX)/include/lldb/API/LLDB.h (Debian package liblldb-22-dev))
endif
endif

$(O)/pic/%.o: %.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(LLDB_CXXFLAGS) -c $< -o $@

$(LLDB_PLUGIN): $(LLDB_OBJ) $(LLDB_PIC_C) plugin/lldb/libhwt-lldb.map
	$(CXX) -shared -fPIC -Wl,--no-undefined -Wl,-z,defs \
		-Wl,--version-script=plugin/lldb/libhwt-lldb.map -o $@ \
		$(filter %.o,$^) -L$(LLDB_PREFIX)/lib -Wl,-rpath,$(LLDB_PREFIX)/lib \
		-llldb $(EXT_REPLAY)
