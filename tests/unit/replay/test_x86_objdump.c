// SPDX-License-Identifier: BSD-2-Clause
/* test_x86_objdump.c - the x86 decoder against binutils, whatever the CPU.
 *
 * Every executable section of the system libraries the tests trace
 * (libc, the dynamic linker, libm, libstdc++, libgcc_s) and of the test
 * programs is walked by objdump -d; each instruction objdump finds is
 * decoded from the image at the same address, and its length and text
 * must be objdump's. Which glibc string variants a CPU runs does not
 * matter here: all of them are in the file.
 *
 * One convention differs on purpose: objdump prints fwait (9b) and the
 * x87 control instruction after it as one ("fstcw" for 9b d9 /7); the
 * CPU executes two instructions, single-stepping stops between them and
 * Intel PT decoders (libipt) count two, so hwtrace does too. Such a pair
 * must decode as fwait plus an instruction filling the rest.
 */
#include <dlfcn.h>
#include <errno.h>
#include <gelf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hwt-replay.h"
#include "check.h"

struct tally {
	unsigned long insns, undecodable, length, text, fwait_pairs;
	char first_bad[512];
};

static void note_bad(struct tally *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note_bad(struct tally *t, const char *fmt, ...)
{
	va_list ap;

	if (t->first_bad[0])
		return;
	va_start(ap, fmt);
	vsnprintf(t->first_bad, sizeof(t->first_bad), fmt, ap);
	va_end(ap);
}

/* The address of the first PT_LOAD segment: loading the file there makes
 * run-time addresses objdump's link-time ones. */
static int first_load(const char *path, uint64_t *vaddr)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	size_t n;
	int rc = -ENOENT;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && !elf_getphdrnum(e, &n))
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
				*vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
				rc = 0;
				break;
			}
		}
	elf_end(e);
	close(fd);
	return rc;
}

/* objdump's text without what GDB and hwtrace leave to the listing:
 * the "<symbol+off>" after a target and the "# address" comment; bare
 * branch targets get GDB's "0x". */
static bool is_branch_word(const char *w, size_t n)
{
	return (n >= 1 && w[0] == 'j') || (n == 4 && !strncmp(w, "call", 4)) ||
		(n >= 4 && !strncmp(w, "loop", 4)) ||
		(n == 6 && !strncmp(w, "xbegin", 6));
}

static void objdump_text(char *t)
{
	char *c = strstr(t, "  #"), *sp;

	if (c)
		*c = '\0';
	if ((c = strstr(t, " <")))
		*c = '\0';
	while (*t && t[strlen(t) - 1] == ' ')
		t[strlen(t) - 1] = '\0';
	sp = strrchr(t, ' ');
	if (!sp || !sp[1] || strspn(sp + 1, "0123456789abcdef") != strlen(sp + 1))
		return;
	/* a branch mnemonic, possibly after prefixes ("data16 rex.W call") */
	for (char *w = t; w < sp; w += strcspn(w, " "), w += strspn(w, " "))
		if (is_branch_word(w, strcspn(w, " "))) {
			memmove(sp + 3, sp + 1, strlen(sp + 1) + 1);
			sp[1] = '0';
			sp[2] = 'x';
			return;
		}
}

/* One objdump line "  addr:\tbytes \ttext": 0 and its parts, or -1 for
 * any other line. */
static int parse_line(char *line, uint64_t *addr, unsigned *len, char **text)
{
	char *tab1 = strchr(line, '\t'), *tab2, *end;

	if (!tab1 || tab1 == line || tab1[-1] != ':')
		return -1;
	*addr = strtoull(line, &end, 16);
	if (end != tab1 - 1)
		return -1;
	tab2 = strchr(tab1 + 1, '\t');
	*len = 0;
	for (char *p = tab1 + 1; p < (tab2 ? tab2 : tab1 + strlen(tab1)); p++)
		if (p[0] != ' ' && p[0] != '\n' && p[1] && p[1] != ' ') {
			(*len)++;
			p++;
		}
	*text = tab2 ? tab2 + 1 : tab1 + strlen(tab1);
	(*text)[strcspn(*text, "\n")] = '\0';
	return 0;
}

static void compare_one(struct hwt_image *img, const char *name, uint64_t addr,
			unsigned len, char *text, struct tally *t)
{
	struct hwt_insn in, rest;
	uint8_t b;
	int rc;

	t->insns++;
	objdump_text(text);
	rc = hwt_image_insn(img, addr, true, &in);
	if (rc) {
		t->undecodable++;
		note_bad(t, "%s 0x%llx: rc %d for '%s'", name,
			 (unsigned long long)addr, rc, text);
		return;
	}
	if (in.len != len && len > 1 && in.len == 1 &&
	    hwt_image_read(img, addr, &b, 1) == 1 && b == 0x9b &&
	    !hwt_image_insn(img, addr + 1, true, &rest) &&
	    rest.len == len - 1 && !strncmp(rest.text, "fn", 2)) {
		t->fwait_pairs++;
		return;
	}
	if (in.len != len) {
		t->length++;
		note_bad(t, "%s 0x%llx: length %u, objdump %u ('%s')", name,
			 (unsigned long long)addr, in.len, len, text);
		return;
	}
	if (strcmp(in.text, text)) {
		t->text++;
		note_bad(t, "%s 0x%llx: '%s', objdump '%s'", name,
			 (unsigned long long)addr, in.text, text);
	}
}

/* Compare every instruction objdump finds in path; -errno when objdump
 * or the file cannot be read. */
static int compare_file(const char *path, const char *name, struct tally *t)
{
	char cmd[PATH_MAX + 96], line[1024];
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	uint64_t load = 0;
	FILE *p;
	int rc;

	if ((rc = first_load(path, &load)))
		return rc;
	if (hwt_image_new(&img, &err) ||
	    hwt_image_add_elf(img, path, load, &err)) {
		printf("FAIL %s: cannot map: %s\n", name, err.msg);
		return -EIO;
	}
	snprintf(cmd, sizeof(cmd), "objdump -d -w -z --insn-width=15 '%s'",
		 path);
	p = popen(cmd, "r");
	if (!p) {
		hwt_image_free(img);
		return -errno;
	}
	while (fgets(line, sizeof(line), p)) {
		uint64_t addr;
		unsigned len;
		char *text;

		if (!parse_line(line, &addr, &len, &text))
			compare_one(img, name, addr, len, text, t);
	}
	rc = pclose(p);
	hwt_image_free(img);
	return rc ? -EIO : 0;
}

static void check_file(const char *path, const char *name)
{
	struct tally t = { 0 };
	char what[256];
	int rc = compare_file(path, name, &t);

	snprintf(what, sizeof(what), "%s: every objdump instruction decodes",
		 name);
	CHECK(what, !rc && t.insns > 0 && !t.undecodable,
	      "rc %d, %lu of %lu undecodable; first: %s", rc, t.undecodable,
	      t.insns, t.first_bad);
	snprintf(what, sizeof(what), "%s: every boundary and length is "
		 "objdump's", name);
	CHECK(what, !rc && t.insns > 0 && !t.length,
	      "%lu of %lu differ; first: %s", t.length, t.insns, t.first_bad);
	snprintf(what, sizeof(what), "%s: every text is objdump's", name);
	CHECK(what, !rc && t.insns > 0 && !t.text,
	      "%lu of %lu differ; first: %s", t.text, t.insns, t.first_bad);
	printf("INFO %s (%s): %lu instructions, %lu fwait pairs objdump "
	       "prints as one\n", name, path, t.insns, t.fwait_pairs);
}

/* The file the dynamic linker loads for soname, as a traced program's
 * would; NULL if it is not installed. */
static const char *library_path(const char *soname, char *buf, size_t size)
{
	void *h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
	struct link_map *lm;

	if (!h)
		return NULL;
	/* realpath writes up to PATH_MAX bytes */
	if (size < PATH_MAX || dlinfo(h, RTLD_DI_LINKMAP, &lm) ||
	    !lm->l_name[0] || !realpath(lm->l_name, buf)) {
		dlclose(h);
		return NULL;
	}
	dlclose(h);
	return buf;
}

int main(int argc, char **argv)
{
	static const char *const libs[] = {
		"libc.so.6", "ld-linux-x86-64.so.2", "libm.so.6",
		"libstdc++.so.6", "libgcc_s.so.1",
	};
	static const char *const progs[] = {
		"loops", "loops_O0", "recursion", "fnptr", "qsort", "switch",
		"longjmp", "signal", "crash", "threads4", "pie_lib", "dlopen",
		"demo_crash", "hits3", "libhwtdemo.so",
	};
	char dir[PATH_MAX], path[PATH_MAX + 64];

	(void)argc;
	for (size_t i = 0; i < sizeof(libs) / sizeof(*libs); i++) {
		const char *p = library_path(libs[i], path, sizeof(path));

		if (p)
			check_file(p, libs[i]);
		else
			CHECK(libs[i], false, "not found by the dynamic linker: "
			      "%s", dlerror());
	}
	if (!check_programs_dir(dir, sizeof(dir)))
		return 2;
	for (size_t i = 0; i < sizeof(progs) / sizeof(*progs); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, progs[i]);
		if (access(path, R_OK))
			CHECK(progs[i], false, "%s is not built (make programs)",
			      path);
		else
			check_file(path, progs[i]);
	}
	return check_exit();
}
