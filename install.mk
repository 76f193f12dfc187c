# SPDX-License-Identifier: BSD-2-Clause
# install.mk: `make install` and `make uninstall` (PREFIX, default
# /usr/local, and DESTDIR as usual): the tools, the libraries as shared
# objects with sonames beside the static ones, their public headers under
# include/hwtrace/ and a pkg-config file each, the LLDB plugin, the GDB
# Python extras, the Valgrind tool, the man pages and bash completion;
# and the kernel module's source with its dkms.conf in
# /usr/src/hwtrace-VERSION (DKMS_SRC), where `dkms install` finds it
# (`make install-dkms` alone installs only that). The shared libraries are built from
# the position-independent objects of $(O)/pic/ (`make shared`).

VERSION     := $(shell cat VERSION)
# The tools say it (--version).
$(O)/tools/hwtrace/main.o $(O)/plugin/gdb/main.o: ALL_CFLAGS += -DHWT_VERSION='"$(VERSION)"'
$(O)/tools/hwtrace/main.o $(O)/plugin/gdb/main.o: VERSION
SOMAJOR     := $(firstword $(subst ., ,$(VERSION)))
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
LIBDIR      ?= $(PREFIX)/lib
INCLUDEDIR  ?= $(PREFIX)/include
DATADIR     ?= $(PREFIX)/share
LIBEXECDIR  ?= $(PREFIX)/libexec
MANDIR      ?= $(DATADIR)/man
COMPLETIONDIR ?= $(DATADIR)/bash-completion/completions
MAN_PAGES   := $(wildcard man/*.[1-9])
DKMS_SRC    ?= /usr/src/hwtrace-$(VERSION)
MODULE_SRC  := $(wildcard kernel/*.c kernel/*.h) kernel/Kbuild kernel/Makefile

SO_COMMON   := $(O)/libhwt-common.so.$(VERSION)
SO_COLLECT  := $(O)/libhwt-collect.so.$(VERSION)
SO_REPLAY   := $(O)/libhwt-replay.so.$(VERSION)
SHARED_LIBS := $(SO_COMMON) $(SO_COLLECT) $(SO_REPLAY)
PC_IN       := $(wildcard pkgconfig/*.pc.in)
PUBLIC_HEADERS := common/hwt-common.h common/hwt-past.h collect/hwt-collect.h replay/hwt-replay.h
pic = $(patsubst %.c,$(O)/pic/%.o,$(1))

.PHONY: shared install install-dkms uninstall

shared: $(SHARED_LIBS)

# Each library names its soname and what it needs, so a program links
# the one it uses and the dynamic linker finds the rest. It exports the
# functions of its public headers and nothing else, each at the version
# its map gives (common/libhwt-common.map, ...: a node per release that
# added functions). collect and replay carry the common code they use
# inside them, hidden, rather than have common export its internals.
so_link = $(CC) $(LDFLAGS_ALL) -shared -Wl,-soname,$(notdir $(basename $(basename $(basename $@)))).$(SOMAJOR) \
	  -Wl,--no-undefined -Wl,--version-script=$(filter %.map,$^) -o $@ \
	  $(filter %.o %.a,$^)
COMMON_PIC  := $(O)/pic/libhwt-common-pic.a
$(COMMON_PIC): $(call pic,$(COMMON_SRC))
	@mkdir -p $(dir $@); rm -f $@; ar rcs $@ $^
$(SO_COMMON): $(call pic,$(COMMON_SRC)) common/libhwt-common.map
	$(so_link) $(EXT_COMMON)
$(SO_COLLECT): $(call pic,$(COLLECT_SRC)) $(COMMON_PIC) collect/libhwt-collect.map
	$(so_link) $(EXT_COLLECT)
$(SO_REPLAY): $(call pic,$(REPLAY_SRC)) $(COMMON_PIC) replay/libhwt-replay.map
	$(so_link) $(EXT_REPLAY)

install-dkms:
	install -d $(DESTDIR)$(DKMS_SRC)/uapi
	install -m 644 $(MODULE_SRC) $(DESTDIR)$(DKMS_SRC)
	install -m 644 kernel/uapi/hwtrace.h $(DESTDIR)$(DKMS_SRC)/uapi
	sed 's|@VERSION@|$(VERSION)|g' kernel/dkms.conf.in >$(DESTDIR)$(DKMS_SRC)/dkms.conf

install: all shared install-dkms
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR)/hwtrace $(DESTDIR)$(DATADIR)/hwtrace/gdb
	install -m 755 $(HWTRACE) $(HWT_SERVER) $(DESTDIR)$(BINDIR)
	install -m 644 $(LIB_COMMON) $(LIB_COLLECT) $(LIB_REPLAY) $(DESTDIR)$(LIBDIR)
	for so in $(notdir $(SHARED_LIBS)); do \
		install -m 755 $(O)/$$so $(DESTDIR)$(LIBDIR) && \
		ln -sf $$so $(DESTDIR)$(LIBDIR)/$${so%.$(VERSION)}.$(SOMAJOR) && \
		ln -sf $${so%.$(VERSION)}.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/$${so%.$(VERSION)} || exit 1; \
	done
	install -m 644 $(PUBLIC_HEADERS) $(DESTDIR)$(INCLUDEDIR)/hwtrace
	@# pkg-config files name this install's directories.
	for pc in $(PC_IN); do \
		sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|' \
		    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|; s|@VERSION@|$(VERSION)|' \
		    $$pc >$(DESTDIR)$(LIBDIR)/pkgconfig/$$(basename $$pc .in) || exit 1; \
	done
	install -m 644 plugin/gdb/hwtrace.py $(DESTDIR)$(DATADIR)/hwtrace/gdb
	for page in $(MAN_PAGES); do \
		install -d $(DESTDIR)$(MANDIR)/man$${page##*.} && \
		install -m 644 $$page $(DESTDIR)$(MANDIR)/man$${page##*.} || exit 1; \
	done
	install -d $(DESTDIR)$(COMPLETIONDIR)
	install -m 644 completion/hwtrace.bash $(DESTDIR)$(COMPLETIONDIR)/hwtrace
	install -m 644 completion/hwtrace.bash $(DESTDIR)$(COMPLETIONDIR)/hwt-server
	@# Optional parts: installed when they were built.
	if [ -f $(O)/libhwt-lldb.so ]; then \
		install -d $(DESTDIR)$(LIBDIR)/hwtrace && \
		install -m 755 $(O)/libhwt-lldb.so $(DESTDIR)$(LIBDIR)/hwtrace; fi
	@# The tool beside links to Valgrind's own files, as in the build.
	if [ -f $(O)/valgrind/hwtrace-amd64-linux ]; then \
		install -d $(DESTDIR)$(LIBEXECDIR)/hwtrace && \
		rm -rf $(DESTDIR)$(LIBEXECDIR)/hwtrace/valgrind && \
		cp -P -R $(O)/valgrind $(DESTDIR)$(LIBEXECDIR)/hwtrace/valgrind; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/hwtrace $(DESTDIR)$(BINDIR)/hwt-server
	rm -f $(foreach l,common collect replay,$(DESTDIR)$(LIBDIR)/libhwt-$(l).a \
		$(DESTDIR)$(LIBDIR)/libhwt-$(l).so $(DESTDIR)$(LIBDIR)/libhwt-$(l).so.$(SOMAJOR) \
		$(DESTDIR)$(LIBDIR)/libhwt-$(l).so.$(VERSION) $(DESTDIR)$(LIBDIR)/pkgconfig/hwt-$(l).pc)
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/hwtrace/,$(notdir $(PUBLIC_HEADERS)))
	rm -f $(DESTDIR)$(DATADIR)/hwtrace/gdb/hwtrace.py $(DESTDIR)$(LIBDIR)/hwtrace/libhwt-lldb.so
	rm -rf $(DESTDIR)$(LIBEXECDIR)/hwtrace/valgrind
	rm -f $(foreach p,$(MAN_PAGES),$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(p)))/$(notdir $(p)))
	rm -f $(DESTDIR)$(COMPLETIONDIR)/hwtrace $(DESTDIR)$(COMPLETIONDIR)/hwt-server
	rm -rf $(DESTDIR)$(DKMS_SRC)
	-rmdir $(DESTDIR)$(INCLUDEDIR)/hwtrace $(DESTDIR)$(DATADIR)/hwtrace/gdb \
		$(DESTDIR)$(DATADIR)/hwtrace $(DESTDIR)$(LIBDIR)/hwtrace \
		$(DESTDIR)$(LIBEXECDIR)/hwtrace 2>/dev/null
