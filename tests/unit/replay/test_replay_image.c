// SPDX-License-Identifier: BSD-2-Clause
/* test_replay_image.c - address space, instructions and symbols.
 *
 * The test program maps itself (/proc/self/exe at its real load address)
 * and checks the image against its own memory, names and line table. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hwt-replay.h"
#include "replay-int.h"
#include "check.h"

/* Instructions with known encodings, one of each class. */
__asm__(".text\n"
	".globl insn_samples\n"
	"insn_samples:\n"
	".byte 0xe8, 0, 0, 0, 0\n"      /* call .+5 */
	".byte 0xc3\n"                  /* ret */
	".byte 0xe9, 0, 0, 0, 0\n"      /* jmp .+5 */
	".byte 0xff, 0xe0\n"            /* jmp *%rax */
	".byte 0x74, 0x00\n"            /* je */
	".byte 0xe3, 0x00\n"            /* jrcxz */
	".byte 0xe2, 0x00\n"            /* loop */
	".byte 0x0f, 0x05\n"            /* syscall */
	".byte 0xcd, 0x80\n"            /* int $0x80 */
	".byte 0x90\n"                  /* nop */
	".byte 0x48, 0x89, 0xe5\n"      /* mov %rsp,%rbp */
	".byte 0xff, 0xd0\n"            /* call *%rax */
	".byte 0x06\n"                  /* push %es: invalid in 64-bit */
	".byte 0xcc\n");
extern const char insn_samples[];

/* Today's ISA as glibc runs it on AVX-512 machines (EVEX string
 * functions), CET, AMX, VAES, BMI2, and branches with targets; encodings
 * and texts from GNU as and objdump 2.40. Then an APX instruction (REX2
 * prefix d5), which Zydis 4.0 does not know: it must read as undecodable
 * with its bytes. */
__asm__(".text\n"
	".globl isa_samples\n"
	"isa_samples:\n"
	".byte 0xc5, 0xfb, 0x93, 0xc1\n"
	".byte 0x62, 0xf1, 0x7d, 0x20, 0x74, 0x0f\n"
	".byte 0x62, 0xf2, 0x76, 0x4a, 0x26, 0xc1\n"
	".byte 0x62, 0xb3, 0x6d, 0x20, 0x3e, 0xd9, 0x01\n"
	".byte 0x62, 0xf3, 0x65, 0x48, 0x25, 0xe2, 0xde\n"
	".byte 0xc4, 0xe1, 0xf9, 0x98, 0xc8\n"
	".byte 0xf3, 0x0f, 0x1e, 0xfa\n"
	".byte 0x3e, 0xff, 0xe0\n"
	".byte 0xf2, 0xff, 0xe2\n"
	".byte 0xc4, 0xe2, 0x78, 0x49, 0x06\n"
	".byte 0xc4, 0xe2, 0x7b, 0x49, 0xc0\n"
	".byte 0x62, 0xf2, 0x6d, 0x48, 0xdc, 0xd9\n"
	".byte 0xc4, 0xe2, 0xf9, 0xf7, 0xcb\n"
	".byte 0x62, 0xe1, 0xfe, 0x48, 0x7f, 0x44, 0x17, 0xff\n"
	".byte 0xf3, 0xaa\n"
	".byte 0xf3, 0xc3\n"
	".byte 0xc7, 0xf8, 0xfa, 0xff, 0xff, 0xff\n"
	".byte 0xe3, 0xfe\n"
	".byte 0xe2, 0xfe\n"
	".byte 0xe8, 0x10, 0x00, 0x00, 0x00\n"
	".byte 0x0f, 0x05\n"
	".byte 0xd5, 0x19, 0x01, 0xc8\n");
extern const char isa_samples[];

static const int probe_line = __LINE__ + 2;
__attribute__((noinline, used)) int probe_fn(int x);
__attribute__((noinline, used)) int probe_fn(int x)
{
	return x * 3 + (x >> 2);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Calls qsort through the PLT and does work after it, so that the call
 * is not turned into a tail jump. */
__attribute__((noinline, used)) int call_qsort(int *v, size_t n);
__attribute__((noinline, used)) int call_qsort(int *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_int);
	return v[0] + probe_fn((int)n);
}

static uint64_t self_load, ld_load, ld_text;
static char ld_path[256];

/* The program itself comes first; the dynamic linker is the object
 * whose name contains "ld-linux". */
static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	uint64_t lo = UINT64_MAX, text = 0;
	int *n = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		if (info->dlpi_phdr[i].p_type != PT_LOAD)
			continue;
		if (info->dlpi_phdr[i].p_vaddr < lo)
			lo = info->dlpi_phdr[i].p_vaddr;
		if (info->dlpi_phdr[i].p_flags & PF_X)
			text = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
	}
	if ((*n)++ == 0)
		self_load = info->dlpi_addr + (lo & ~(uint64_t)4095);
	else if (info->dlpi_name && strstr(info->dlpi_name, "ld-linux")) {
		ld_load = info->dlpi_addr + (lo & ~(uint64_t)4095);
		ld_text = text;
		snprintf(ld_path, sizeof(ld_path), "%s", info->dlpi_name);
	}
	return 0;
}

static uint64_t addr_of(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = s ? strlen(s) : 0, m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static void test_self(void)
{
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	struct hwt_symbol sym;
	uint8_t buf[64];
	uint64_t fn = addr_of((const void *)probe_fn);
	int rc;

	hwt_image_new(&img, &err);
	rc = hwt_image_add_elf(img, "/proc/self/exe", self_load, &err);
	CHECK("image maps itself", rc == 0, "rc %d: %s", rc, err.msg);
	CHECK("image reads own code",
	      hwt_image_read(img, fn, buf, sizeof(buf)) == sizeof(buf) &&
	      !memcmp(buf, (const void *)probe_fn, sizeof(buf)),
	      "bytes at probe_fn differ from memory");
	CHECK("image read of unmapped", hwt_image_read(img, 0x1000, buf, 8) == 0,
	      "read something at 0x1000");
	rc = hwt_image_symbolize(img, fn + 1, &sym);
	CHECK("symbolize function", rc == 0 && sym.function &&
	      !strcmp(sym.function, "probe_fn") && sym.func_addr == fn,
	      "rc %d function %s at 0x%llx", rc,
	      sym.function ? sym.function : "(null)",
	      (unsigned long long)sym.func_addr);
	CHECK("symbolize module", sym.module &&
	      !strcmp(sym.module, "/proc/self/exe"), "module %s",
	      sym.module ? sym.module : "(null)");
	rc = hwt_image_symbolize(img, fn, &sym);
	CHECK("symbolize source line", rc == 0 &&
	      ends_with(sym.file, "test_replay_image.c") &&
	      sym.line >= probe_line && sym.line <= probe_line + 2,
	      "%s:%d, expected line %d", sym.file ? sym.file : "(null)",
	      sym.line, probe_line);
	CHECK("symbolize unmapped", hwt_image_symbolize(img, 0x1000, &sym) ==
	      -ENOENT, "0x1000 symbolized");
	CHECK("lookup function", hwt_image_lookup_function(img, "probe_fn") ==
	      fn && hwt_image_lookup_function(img, "no_such_fn") == 0,
	      "probe_fn at 0x%llx",
	      (unsigned long long)hwt_image_lookup_function(img, "probe_fn"));
	hwt_image_free(img);
}

/* The same file mapped twice (another process's copy, a dlopen again):
 * each copy's lines at its own addresses, the second asked first, from
 * line tables the two share. */
static void test_same_file_twice(void)
{
	const uint64_t delta = 0x40000000000ull;
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	struct hwt_symbol a, b;
	uint64_t fn = addr_of((const void *)probe_fn);
	int rc;

	hwt_image_new(&img, &err);
	rc = hwt_image_add_elf(img, "/proc/self/exe", self_load, &err);
	if (rc == 0)
		rc = hwt_image_add_elf(img, "/proc/self/exe", self_load + delta,
				       &err);
	CHECK("image maps a file twice", rc == 0, "rc %d: %s", rc, err.msg);
	rc = hwt_image_symbolize(img, fn + delta, &b);
	rc |= hwt_image_symbolize(img, fn, &a);
	CHECK("a file mapped twice: each copy's lines at its own addresses",
	      rc == 0 && ends_with(a.file, "test_replay_image.c") &&
	      a.line >= probe_line && a.line <= probe_line + 2 &&
	      b.file && !strcmp(a.file, b.file) && a.line == b.line &&
	      b.func_addr == a.func_addr + delta,
	      "rc %d: %s:%d, %s:%d at 0x%llx", rc, a.file ? a.file : "(null)",
	      a.line, b.file ? b.file : "(null)", b.line,
	      (unsigned long long)b.func_addr);
	hwt_image_free(img);
}

/* The one file in dir/debug, its size (0: none) and inode. */
static off_t cached(const char *dir, ino_t *ino)
{
	char path[600];
	struct dirent *e;
	struct stat st;
	off_t size = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/debug", dir);
	if (!(d = opendir(path)))
		return 0;
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".debug")) {
			snprintf(path, sizeof(path), "%s/debug/%s", dir,
				 e->d_name);
			if (!stat(path, &st)) {
				size = st.st_size;
				*ino = st.st_ino;
			}
		}
	closedir(d);
	return size;
}

/* This program's line of probe_fn through a copy of it whose DWARF is
 * compressed (as Debian's debug packages are). */
static bool compressed_line(const char *exe, struct hwt_symbol *sym)
{
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	bool ok;
	int rc;

	hwt_image_new(&img, &err);
	rc = hwt_image_add_elf(img, exe, self_load, &err);
	if (!rc)
		rc = hwt_image_symbolize(img, addr_of((const void *)probe_fn),
					 sym);
	/* The names are the image's. */
	ok = rc == 0 && ends_with(sym->file, "test_replay_image.c") &&
		sym->line >= probe_line && sym->line <= probe_line + 2;
	sym->file = NULL;
	hwt_image_free(img);
	return ok;
}

/* Where this program's .text and .debug_aranges are in its file. */
static bool self_sections(const char *path, uint64_t *text, uint64_t *text_n,
			  uint64_t *ar_off, uint64_t *ar_n)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	*text_n = *ar_n = 0;
	elf_version(EV_CURRENT);
	if (fd < 0 || !(elf = elf_begin(fd, ELF_C_READ, NULL))) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (!elf_getshdrstrndx(elf, &shstrndx))
		while ((scn = elf_nextscn(elf, scn))) {
			const char *name;

			if (!gelf_getshdr(scn, &sh) ||
			    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
				continue;
			if (!strcmp(name, ".text")) {
				*text = sh.sh_addr;
				*text_n = sh.sh_size;
			} else if (!strcmp(name, ".debug_aranges") &&
				   !(sh.sh_flags & SHF_COMPRESSED)) {
				*ar_off = sh.sh_offset;
				*ar_n = sh.sh_size;
			}
		}
	elf_end(elf);
	close(fd);
	return *text_n && *ar_n >= 32;
}

/* A copy of this program with its bytes at off replaced. */
static bool patched_copy(const char *self, const char *out, uint64_t off,
			 const void *bytes, size_t n)
{
	char cmd[800];
	FILE *f;
	bool ok;

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", self, out);
	if (system(cmd) != 0 || !(f = fopen(out, "r+b")))
		return false;
	ok = fseek(f, (long)off, SEEK_SET) == 0 && fwrite(bytes, n, 1, f) == 1;
	return fclose(f) == 0 && ok;
}

/* Compile units are found from .debug_aranges where it names them
 * (aranges.c): every address of this program has the line it has with
 * no .debug_aranges at all (every unit read), with a set that names no
 * unit (that unit read), and with a malformed section (not used). */
static void test_aranges(const char *dir)
{
	char self[300] = "", none[300], stray[300], bad[300], cmd[800];
	const char *paths[4] = { self, none, stray, bad };
	const char *what[4] = { "", "none", "a stray set", "malformed" };
	struct hwt_image *img[4] = { NULL };
	uint64_t text = 0, text_n, ar_off = 0, ar_n, differ = 0, lines = 0;
	uint64_t first_diff = 0;
	struct hwt_err err = { 0 };
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const uint8_t stray_unit[4] = { 0xf0, 0xff, 0xff, 0x7f };
	const uint8_t version3[2] = { 3, 0 };
	int which = 0;

	snprintf(none, sizeof(none), "%s/aranges-none", dir);
	snprintf(stray, sizeof(stray), "%s/aranges-stray", dir);
	snprintf(bad, sizeof(bad), "%s/aranges-bad", dir);
	snprintf(cmd, sizeof(cmd), "objcopy --remove-section=.debug_aranges "
		 "'%s' '%s'", self, none);
	if (n <= 0 || !self_sections(self, &text, &text_n, &ar_off, &ar_n) ||
	    system(cmd) != 0) {
		printf("SKIP aranges: this program has no .debug_aranges, or "
		       "objcopy (binutils) could not remove it\n");
		return;
	}
	/* The first set's unit offset (after its 32-bit length and 16-bit
	 * version) names no unit; the second copy's version is 3. */
	if (!patched_copy(self, stray, ar_off + 6, stray_unit, 4) ||
	    !patched_copy(self, bad, ar_off + 4, version3, 2)) {
		CHECK("aranges: copies of this program made", false, "%s",
		      dir);
		return;
	}
	for (int i = 0; i < 4; i++) {
		hwt_image_new(&img[i], &err);
		if (hwt_image_add_elf(img[i], paths[i], self_load, &err))
			printf("  (%s: %s)\n", paths[i], err.msg);
	}
	for (uint64_t a = self_load + text; a < self_load + text + text_n;
	     a++) {
		struct hwt_line l[4];
		int rc[4];

		for (int i = 0; i < 4; i++)
			rc[i] = hwt_image_line(img[i], a, &l[i]);
		lines += rc[1] == 0;
		for (int i = 0; i < 4; i++) {
			if (i == 1 || (rc[i] == rc[1] && (rc[i] ||
			    (l[i].lo == l[1].lo && l[i].hi == l[1].hi &&
			     l[i].line == l[1].line &&
			     !strcmp(l[i].file, l[1].file)))))
				continue;
			if (!differ++) {
				first_diff = a;
				which = i;
			}
		}
	}
	CHECK("aranges: every address's line as with every unit read, with "
	      ".debug_aranges whole, with a stray set, malformed",
	      lines > text_n / 2 && differ == 0, "%llu of %llu addresses "
	      "differ, the first 0x%llx (%s); %llu with a line",
	      (unsigned long long)differ, (unsigned long long)text_n,
	      (unsigned long long)first_diff, what[which] ? what[which] : "",
	      (unsigned long long)lines);
	for (int i = 0; i < 4; i++)
		hwt_image_free(img[i]);
}

/* Compressed DWARF is read from a decompressed copy kept by build-id
 * (debug_cache.c): made the first time, used after, made again when
 * damaged, none kept with HWT_CACHE_DIR empty; the lines the same each
 * time. */
static void test_debug_cache(const char *dir)
{
	char exe[300], cache[300], cmd[800], path[700];
	const char *was = getenv("HWT_CACHE_DIR");
	char *saved = was ? strdup(was) : NULL;
	struct hwt_symbol sym;
	ino_t ino = 0, ino2 = 0;
	off_t size, size2;
	bool ok;

	char self[300] = "";
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	snprintf(exe, sizeof(exe), "%s/zexe", dir);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	/* Not /proc/self/exe: in the shell that is objcopy. */
	snprintf(cmd, sizeof(cmd), "objcopy --compress-debug-sections=zlib "
		 "'%s' '%s'", n > 0 ? self : "/proc/self/exe", exe);
	if (system(cmd) != 0) {
		printf("SKIP debug cache: objcopy (binutils) could not "
		       "compress this program's DWARF\n");
		free(saved);
		return;
	}
	setenv("HWT_CACHE_DIR", cache, 1);
	ok = compressed_line(exe, &sym);
	size = cached(cache, &ino);
	CHECK("debug cache: compressed DWARF gives its lines, a "
	      "decompressed copy is kept", ok && size > 0,
	      "line %d, copy of %lld bytes", sym.line, (long long)size);
	ok = compressed_line(exe, &sym);
	size2 = cached(cache, &ino2);
	CHECK("debug cache: the copy is read the next time, not made again",
	      ok && size2 == size && ino2 == ino, "inode %llu then %llu",
	      (unsigned long long)ino, (unsigned long long)ino2);
	snprintf(path, sizeof(path), "%s/debug", cache);
	snprintf(cmd, sizeof(cmd), "for f in '%s'/*.debug; do "
		 "truncate -s 64 \"$f\"; done", path);
	ok = system(cmd) == 0 && compressed_line(exe, &sym);
	size2 = cached(cache, &ino2);
	CHECK("debug cache: a damaged copy is not used, and is made again",
	      ok && size2 == size, "%lld bytes after", (long long)size2);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cache);
	setenv("HWT_CACHE_DIR", "", 1);
	ok = system(cmd) == 0 && compressed_line(exe, &sym);
	CHECK("debug cache: HWT_CACHE_DIR empty keeps none, the lines the "
	      "same", ok && cached(cache, &ino2) == 0, "copy kept");
	if (saved)
		setenv("HWT_CACHE_DIR", saved, 1);
	else
		unsetenv("HWT_CACHE_DIR");
	free(saved);
}

/* The PLT stub qsort is called through is named like GDB names it. */
static void test_plt(void)
{
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	uint64_t fn = addr_of((const void *)call_qsort);
	const uint8_t *p = (const uint8_t *)call_qsort;
	bool found = false;
	int v[3] = { 3, 1, 2 };

	call_qsort(v, 3);
	hwt_image_new(&img, &err);
	hwt_image_add_elf(img, "/proc/self/exe", self_load, &err);
	for (size_t off = 0; off + 5 <= 96 && !found; off++) {
		struct hwt_insn in;
		struct hwt_symbol sym;
		int32_t rel;

		/* Only at instruction boundaries. */
		if (hwt_image_insn(img, fn + off, false, &in) || in.len == 0)
			continue;
		if (p[off] == 0xe8) {
			memcpy(&rel, p + off + 1, 4);
			if (!hwt_image_symbolize(img, fn + off + 5 + (uint64_t)
						 (int64_t)rel, &sym) &&
			    sym.function && !strcmp(sym.function, "qsort@plt"))
				found = true;
		}
		off += in.len - 1;
	}
	CHECK("plt stub named qsort@plt", found, "no call to qsort@plt found");
	CHECK("plt stub looked up",
	      hwt_image_lookup_function(img, "qsort@plt") != 0, "not found");
	hwt_image_free(img);
}

/* Stepping goes through the dynamic linker; it is told by PT_INTERP. */
static void test_linker(void)
{
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	int rc;

	hwt_image_new(&img, &err);
	hwt_image_add_elf(img, "/proc/self/exe", self_load, &err);
	rc = ld_load ? hwt_image_add_elf(img, ld_path, ld_load, &err) : -1;
	CHECK("dynamic linker found", rc == 0 &&
	      hwt_image_in_linker(img, ld_text) &&
	      !hwt_image_in_linker(img, addr_of((const void *)probe_fn)),
	      "rc %d, ld %s at 0x%llx", rc, ld_path,
	      (unsigned long long)ld_load);
	hwt_image_free(img);
}

static void test_insns(void)
{
	static const struct {
		uint8_t len;
		enum hwt_insn_class cls;
	} want[] = {
		{ 5, HWT_INSN_CALL }, { 1, HWT_INSN_RET }, { 5, HWT_INSN_JUMP },
		{ 2, HWT_INSN_JUMP }, { 2, HWT_INSN_CJUMP },
		{ 2, HWT_INSN_CJUMP }, { 2, HWT_INSN_CJUMP },
		{ 2, HWT_INSN_SYSCALL }, { 2, HWT_INSN_SYSCALL },
		{ 1, HWT_INSN_OTHER }, { 3, HWT_INSN_OTHER },
		{ 2, HWT_INSN_CALL },
	};
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	struct hwt_insn in;
	uint64_t a = addr_of(insn_samples);
	size_t i, mov = 10;
	int rc = 0;

	hwt_image_new(&img, &err);
	hwt_image_add_elf(img, "/proc/self/exe", self_load, &err);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		rc = hwt_image_insn(img, a, i == mov, &in);
		if (rc || in.len != want[i].len || in.cls != want[i].cls)
			break;
		if (i == mov && strcmp(in.text, "mov    %rsp,%rbp"))
			break;
		a += in.len;
	}
	CHECK("insn length and class", i == sizeof(want) / sizeof(want[0]),
	      "sample %zu: rc %d len %u class %s text '%s'", i, rc, in.len,
	      hwt_insn_class_name(in.cls), in.text);
	rc = hwt_image_insn(img, a, false, &in);
	CHECK("insn invalid bytes", rc == -EILSEQ, "rc %d", rc);
	rc = hwt_image_insn(img, 0x1000, true, &in);
	CHECK("insn unmapped", rc == -ENOENT, "rc %d", rc);
	/* Cached answers are the same answers. */
	rc = hwt_image_insn(img, addr_of(insn_samples), true, &in);
	CHECK("insn text", rc == 0 && in.cls == HWT_INSN_CALL &&
	      !strncmp(in.text, "call", 4), "rc %d text '%s'", rc, in.text);
	hwt_image_free(img);
}

static void test_isa(void)
{
	static const struct {
		uint8_t len;
		enum hwt_insn_class cls;
		int64_t target;         /* from the instruction; 0: none */
		const char *text;
	} want[] = {
		{ 4, HWT_INSN_OTHER, 0, "kmovd  %k1,%eax" },
		{ 6, HWT_INSN_OTHER, 0, "vpcmpeqb (%rdi),%ymm16,%k1" },
		{ 6, HWT_INSN_OTHER, 0, "vptestnmb %zmm1,%zmm1,%k0{%k2}" },
		{ 7, HWT_INSN_OTHER, 0, "vpcmpltub %ymm17,%ymm18,%k3" },
		{ 7, HWT_INSN_OTHER, 0, "vpternlogd $0xde,%zmm2,%zmm3,%zmm4" },
		{ 5, HWT_INSN_OTHER, 0, "kortestd %k0,%k1" },
		{ 4, HWT_INSN_OTHER, 0, "endbr64" },
		{ 3, HWT_INSN_JUMP, 0, "notrack jmp *%rax" },
		{ 3, HWT_INSN_JUMP, 0, "bnd jmp *%rdx" },
		{ 5, HWT_INSN_OTHER, 0, "ldtilecfg (%rsi)" },
		{ 5, HWT_INSN_OTHER, 0, "tilezero %tmm0" },
		{ 6, HWT_INSN_OTHER, 0, "vaesenc %zmm1,%zmm2,%zmm3" },
		{ 5, HWT_INSN_OTHER, 0, "shlx   %rax,%rbx,%rcx" },
		{ 8, HWT_INSN_OTHER, 0, "vmovdqu64 %zmm16,-0x40(%rdi,%rdx,1)" },
		{ 2, HWT_INSN_OTHER, 0, "rep stos %al,%es:(%rdi)" },
		{ 2, HWT_INSN_RET, 0, "repz ret" },
		{ 6, HWT_INSN_OTHER, 0, NULL },
		{ 2, HWT_INSN_CJUMP, 0, NULL },
		{ 2, HWT_INSN_CJUMP, 0, NULL },
		{ 5, HWT_INSN_CALL, 5 + 0x10, NULL },
		{ 2, HWT_INSN_SYSCALL, 0, "syscall" },
	};
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	struct hwt_insn in;
	struct hwt_insn_info info;
	uint64_t a = addr_of(isa_samples), target;
	size_t i;
	int rc = 0;

	hwt_image_new(&img, &err);
	hwt_image_add_elf(img, "/proc/self/exe", self_load, &err);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		rc = hwt_image_insn(img, a, true, &in);
		if (rc || in.len != want[i].len || in.cls != want[i].cls ||
		    (want[i].text && strcmp(in.text, want[i].text)))
			break;
		/* jrcxz and loop to themselves: the target is their own
		 * address; a call's is after it */
		target = want[i].target ? a + (uint64_t)want[i].target :
			in.cls == HWT_INSN_CJUMP ? a : 0;
		rc = hwt_image_insn_detail(img, a, HWT_ISA_DEFAULT, &info);
		if (rc || info.direct != (target != 0) || info.target != target ||
		    info.rep_string != (i == 14))
			break;
		a += in.len;
	}
	CHECK("x86 whole ISA: length, class, target and text",
	      i == sizeof(want) / sizeof(want[0]),
	      "sample %zu at 0x%llx: rc %d len %u class %s text '%s' "
	      "direct %d target 0x%llx rep %d", i, (unsigned long long)a, rc,
	      in.len, hwt_insn_class_name(in.cls), in.text, info.direct,
	      (unsigned long long)info.target, info.rep_string);
	rc = hwt_image_insn(img, a, true, &in);
	CHECK("x86 undecodable bytes are shown, not hidden",
	      rc == -EILSEQ && !strncmp(in.text, "undecodable: d5 19 01 c8",
					24), "rc %d text '%s'", rc, in.text);
	hwt_image_free(img);
}

/* A minimal ELF core: one header, phdrs, then each segment's bytes. */
struct fake_seg {
	uint64_t vaddr, filesz;
	uint8_t fill;
};

static int write_core(const char *path, const struct fake_seg *segs, int n,
		      size_t cut)
{
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph[8];
	uint8_t *buf;
	size_t off = sizeof(eh) + n * sizeof(Elf64_Phdr), size = off;
	FILE *f;

	for (int i = 0; i < n; i++)
		size += segs[i].filesz;
	buf = calloc(1, size);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_CORE;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = (Elf64_Half)n;
	for (int i = 0; i < n; i++) {
		ph[i] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X,
				      .p_offset = off, .p_vaddr = segs[i].vaddr,
				      .p_filesz = segs[i].filesz,
				      .p_memsz = segs[i].filesz + 4096,
				      .p_align = 4096 };
		memset(buf + off, segs[i].fill, segs[i].filesz);
		off += segs[i].filesz;
	}
	memcpy(buf, &eh, sizeof(eh));
	memcpy(buf + sizeof(eh), ph, n * sizeof(Elf64_Phdr));
	f = fopen(path, "wb");
	if (!f)
		return -1;
	fwrite(buf, 1, size - cut, f);
	fclose(f);
	free(buf);
	return 0;
}

static void test_core(const char *dir)
{
	uint64_t fn = addr_of((const void *)probe_fn);
	struct fake_seg segs[] = {
		{ 0x7000000, 16, 0xc3 },                /* code no module has */
		{ fn & ~(uint64_t)4095, 8192, 0xcc },   /* stale copy of text */
		{ 0x8000000, 0, 0 },                    /* not dumped */
		{ 0x9000000, 100, 0x90 },               /* cut short */
	};
	char path[512];
	uint8_t buf[16];
	struct hwt_err err = { 0 };
	struct hwt_insn in;

	snprintf(path, sizeof(path), "%s/core", dir);
	write_core(path, segs, 4, 60);
	for (int order = 0; order < 2; order++) {
		struct hwt_image *img;
		int rc1, rc2;

		hwt_image_new(&img, &err);
		if (order == 0) {
			rc1 = hwt_image_add_core(img, path, &err);
			rc2 = hwt_image_add_elf(img, "/proc/self/exe",
						self_load, &err);
		} else {
			rc2 = hwt_image_add_elf(img, "/proc/self/exe",
						self_load, &err);
			rc1 = hwt_image_add_core(img, path, &err);
		}
		CHECK(order ? "core added after module" :
		      "core added before module", rc1 == 0 && rc2 == 0,
		      "rc %d %d: %s", rc1, rc2, err.msg);
		CHECK(order ? "module beats core (after)" :
		      "module beats core (before)",
		      hwt_image_read(img, fn, buf, 16) == 16 &&
		      !memcmp(buf, (const void *)probe_fn, 16),
		      "core bytes override the module");
		CHECK(order ? "core fills gaps (after)" :
		      "core fills gaps (before)",
		      hwt_image_insn(img, 0x7000005, false, &in) == 0 &&
		      in.cls == HWT_INSN_RET, "no ret at 0x7000005");
		CHECK("core without file bytes",
		      hwt_image_read(img, 0x8000000, buf, 1) == 0,
		      "filesz 0 segment readable");
		CHECK("truncated core keeps the rest",
		      hwt_image_read(img, 0x9000000, buf, 16) == 16 &&
		      hwt_image_read(img, 0x9000000 + 39, buf, 2) == 1,
		      "truncated segment not clipped to 40 bytes");
		hwt_image_free(img);
	}
}

static void test_errors(const char *dir)
{
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	char path[512];
	FILE *f;
	int rc;

	hwt_image_new(&img, &err);
	rc = hwt_image_add_elf(img, "/nonexistent/x.so", 0, &err);
	CHECK("missing module", rc == -ENOENT &&
	      strstr(err.msg, "/nonexistent/x.so"), "rc %d: %s", rc, err.msg);
	snprintf(path, sizeof(path), "%s/text", dir);
	f = fopen(path, "w");
	fputs("not an elf file\n", f);
	fclose(f);
	rc = hwt_image_add_elf(img, path, 0, &err);
	CHECK("non-ELF module", rc == -EINVAL && strstr(err.msg, "ELF"),
	      "rc %d: %s", rc, err.msg);
	snprintf(path, sizeof(path), "%s/core", dir);
	rc = hwt_image_add_elf(img, path, 0, &err);
	CHECK("core as module", rc == -EINVAL && strstr(err.msg, "core"),
	      "rc %d: %s", rc, err.msg);
	rc = hwt_image_add_core(img, "/proc/self/exe", &err);
	CHECK("module as core", rc == -EINVAL && strstr(err.msg, "core"),
	      "rc %d: %s", rc, err.msg);
	hwt_image_free(img);
}

static void test_bundle(const char *dir)
{
	struct hwt_bundle_module mods[] = {
		{ .system_path = "/proc/self/exe", .load_address = self_load },
		{ .system_path = "[vdso]", .load_address = 0x7fff0000 },
		{ .system_path = "/nonexistent/libgone.so",
		  .load_address = 0x7f0000000000 },
	};
	struct hwt_bundle b = { .dir = (char *)dir, .modules = mods,
				.nmodules = 3, .core = "core" };
	struct hwt_image *img;
	struct hwt_err err = { 0 };
	uint8_t buf[4];
	int rc;

	hwt_image_new(&img, &err);
	rc = hwt_image_add_bundle(img, &b, &err);
	CHECK("bundle with a missing module", rc == -ENOENT &&
	      strstr(err.msg, "1 of 3") && strstr(err.msg, "libgone"),
	      "rc %d: %s", rc, err.msg);
	CHECK("bundle maps the rest",
	      hwt_image_read(img, addr_of((const void *)probe_fn), buf, 4) == 4 &&
	      hwt_image_read(img, 0x7000000, buf, 4) == 4,
	      "module or core missing");
	hwt_image_free(img);
}

/* Each process of a bundle decodes with its own modules; one that lists
 * none with the program's; only the program's has the core. A file two
 * processes map at one address has its symbols read once. */
static void test_bundle_processes(const char *dir)
{
	const uint64_t delta = 0x40000000000ull;
	struct hwt_bundle_module mods[] = {
		{ .system_path = "/proc/self/exe", .load_address = self_load },
		{ .system_path = "/proc/self/exe",
		  .load_address = self_load + delta, .process = 1 },
		{ .system_path = "/proc/self/exe", .load_address = self_load,
		  .process = 3 },
		{ .system_path = "/proc/self/exe",
		  .load_address = self_load + delta, .process = 4 },
	};
	struct hwt_bundle_thread th[] = {
		{ .tid = 10 }, { .tid = 11, .process = 1 },
		{ .tid = 12, .process = 2 }, { .tid = 13, .process = 3 },
		{ .tid = 14, .process = 4 },
	};
	struct hwt_bundle_process procs[] = {
		{ .pid = 10 }, { .pid = 11 }, { .pid = 12 }, { .pid = 13 },
		{ .pid = 14 },
	};
	struct hwt_bundle b = { .dir = (char *)dir, .pid = 10,
				.processes = procs, .nprocesses = 5,
				.threads = th, .nthreads = 5, .modules = mods,
				.nmodules = 4, .core = "core" };
	uint64_t fn = addr_of((const void *)probe_fn);
	struct hwt_bundle_images *ims;
	struct hwt_image *img[5] = { 0 };
	struct hwt_symbol s0 = { 0 }, s3 = { 0 };
	struct hwt_err err = { 0 };
	uint8_t buf[4];
	int rc = hwt_bundle_images_new(&b, &ims, &err);

	for (size_t t = 0; rc == 0 && t < 5; t++)
		rc = hwt_bundle_images_thread(ims, t, &img[t], &err);
	CHECK("an image per process", rc == 0 && img[0] && img[1] &&
	      img[1] != img[0] && img[2] != img[0] && img[3] != img[1] &&
	      img[3] != img[0],
	      "rc %d: %s", rc, err.msg);
	CHECK("processes with the same modules share one image",
	      img[4] == img[1], "two images");
	if (rc) {
		hwt_bundle_images_free(ims);
		return;
	}
	CHECK("the program's image: its module and the core",
	      hwt_image_read(img[0], fn, buf, 4) == 4 &&
	      hwt_image_read(img[0], fn + delta, buf, 4) == 0 &&
	      hwt_image_read(img[0], 0x7000000, buf, 4) == 4,
	      "module or core missing");
	CHECK("a child's image: its own modules, not the program's core",
	      hwt_image_read(img[1], fn + delta, buf, 4) == 4 &&
	      hwt_image_read(img[1], fn, buf, 4) == 0 &&
	      hwt_image_read(img[1], 0x7000000, buf, 4) == 0,
	      "the program's modules or core in a child's image");
	CHECK("a child that lists no modules: the program's, not its core",
	      hwt_image_read(img[2], fn, buf, 4) == 4 &&
	      hwt_image_read(img[2], 0x7000000, buf, 4) == 0,
	      "wrong modules");
	rc = hwt_image_symbolize(img[3], fn, &s3);
	rc |= hwt_image_symbolize(img[0], fn, &s0);
	CHECK("a file two processes map at one address: one symbol table",
	      rc == 0 && s0.function && !strcmp(s0.function, "probe_fn") &&
	      s3.function == s0.function,
	      "rc %d: %s %p %p", rc, s0.function ? s0.function : "(null)",
	      (const void *)s0.function, (const void *)s3.function);
	rc = hwt_bundle_images_thread(ims, 5, &img[0], &err);
	CHECK("no such thread", rc == -EINVAL && !img[0], "rc %d", rc);
	hwt_bundle_images_free(ims);
}

int main(void)
{
	char dir[] = "/tmp/hwt-test-image-XXXXXX";
	char cmd[600];

	if (!mkdtemp(dir)) {
		printf("FAIL setup: mkdtemp\n");
		return 1;
	}
	dl_iterate_phdr(phdr_cb, &(int){ 0 });
	RUN(test_self);
	RUN(test_same_file_twice);
	RUN(test_plt);
	RUN(test_linker);
	RUN(test_insns);
	RUN(test_isa);
	RUN(test_core, dir);
	RUN(test_errors, dir);
	RUN(test_bundle, dir);
	RUN(test_bundle_processes, dir);
	RUN(test_debug_cache, dir);
	RUN(test_aranges, dir);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("warning: could not remove %s\n", dir);
	return check_exit();
}
