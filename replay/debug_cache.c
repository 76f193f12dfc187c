// SPDX-License-Identifier: BSD-2-Clause
/* debug_cache.c - DWARF read from a decompressed copy kept by build-id.
 *
 * Debian's debug files (libc6-dbg, python3.11-dbg) compress their .debug_*
 * sections, and libdw decompresses every one of them before it answers
 * anything: for libc that is 60 ms of zlib each time a bundle is opened,
 * most of what `hwtrace info` or the newest calls cost. So the first
 * time a compressed file is read its decompressed copy is kept in the
 * cache directory, named by the build-id, and read from then on the way
 * an uncompressed file is: mapped, nothing copied. GDB's index cache and
 * debuginfod's client cache are the models.
 *
 * The directory is $HWT_CACHE_DIR, else $XDG_CACHE_HOME/hwtrace, else
 * $HOME/.cache/hwtrace; HWT_CACHE_DIR set empty keeps no cache. A copy is
 * written under a temporary name and renamed, so readers never see half
 * of one; a copy whose build-id is not its name or that is not whole is
 * not used (and replaced). Nothing here fails its caller: without a
 * copy the file is read as it is.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replay-int.h"

/* Larger files are read as they are: a copy is their decompressed size. */
#define MAX_COPY (1ull << 30)

static bool compressed_debug(Elf *elf, uint64_t *size)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	bool any = false;

	*size = 0;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;
		GElf_Chdr ch;

		if (!gelf_getshdr(scn, &sh))
			return false;
		*size += sh.sh_size;
		if (!(sh.sh_flags & SHF_COMPRESSED) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strncmp(name, ".debug_", 7) || !gelf_getchdr(scn, &ch))
			continue;
		any = true;
		*size += ch.ch_size;
	}
	return any;
}

/* The cache file for build-id id (malloc'd), or NULL: no cache. */
static char *cache_path(const char *id, char **dir_out)
{
	const char *dir = getenv("HWT_CACHE_DIR"), *base, *sub = "";
	char *dir_path = NULL, *path = NULL;

	if (dir && !*dir)
		return NULL;
	if (!dir) {
		if ((base = getenv("XDG_CACHE_HOME")) && *base == '/') {
			sub = "/hwtrace";
		} else if ((base = getenv("HOME")) && *base == '/') {
			sub = "/.cache/hwtrace";
		} else {
			return NULL;
		}
		dir = base;
	}
	if (asprintf(&dir_path, "%s%s/debug", dir, sub) < 0)
		return NULL;
	if (asprintf(&path, "%s/%s.debug", dir_path, id) < 0) {
		free(dir_path);
		return NULL;
	}
	*dir_out = dir_path;
	return path;
}

/* Every missing directory of path (a directory) made. */
static bool make_dirs(char *path)
{
	for (char *p = path + 1; ; p++) {
		if (*p != '/' && *p)
			continue;
		char keep = *p;

		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			*p = keep;
			return false;
		}
		*p = keep;
		if (!keep)
			return true;
	}
}

/* The copy at path when it is whole and build-id id's. */
static Elf *open_copy(const char *path, const char *id, int *fd_out)
{
	char got[128];
	uint64_t size;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;

	if (fd < 0)
		return NULL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF ||
	    !hwt_elf_note_build_id(elf, got, sizeof(got)) || strcmp(got, id) ||
	    compressed_debug(elf, &size)) {
		if (elf)
			elf_end(elf);
		close(fd);
		return NULL;
	}
	*fd_out = fd;
	return elf;
}

/* src's sections, the compressed ones decompressed, into a new file at
 * path (its program headers left out: DWARF readers do not use them). */
static bool write_copy(const char *src, const char *path)
{
	char *tmp = NULL;
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1;
	Elf *e = NULL, *o = NULL;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	bool ok = false;

	if (in < 0 || asprintf(&tmp, "%s.tmp-%d", path, (int)getpid()) < 0) {
		tmp = NULL;
		goto out;
	}
	out = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0 || !(e = elf_begin(in, ELF_C_READ, NULL)) ||
	    !(o = elf_begin(out, ELF_C_WRITE, NULL)) || !gelf_getehdr(e, &eh) ||
	    !gelf_newehdr(o, gelf_getclass(e)))
		goto out;
	eh.e_phnum = 0;
	eh.e_phoff = 0;
	if (!gelf_update_ehdr(o, &eh))
		goto out;
	while ((scn = elf_nextscn(e, scn))) {
		Elf_Scn *n;
		Elf_Data *d, *nd;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) ||
		    ((sh.sh_flags & SHF_COMPRESSED) &&
		     (elf_compress(scn, 0, 0) < 0 || !gelf_getshdr(scn, &sh))) ||
		    !(n = elf_newscn(o)))
			goto out;
		if ((d = elf_getdata(scn, NULL))) {
			if (!(nd = elf_newdata(n)))
				goto out;
			*nd = *d;
		}
		if (!gelf_update_shdr(n, &sh))
			goto out;
	}
	ok = elf_update(o, ELF_C_WRITE) >= 0;
out:
	if (o)
		elf_end(o);
	if (e)
		elf_end(e);
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out))
		ok = false;
	if (tmp && (!ok || rename(tmp, path))) {
		unlink(tmp);
		ok = false;
	}
	free(tmp);
	return ok;
}

Elf *hwt_debug_cache_open(const char *src, Elf *elf, const char *id,
			  int *fd_out)
{
	char *dir = NULL, *path;
	uint64_t size;
	Elf *copy = NULL;

	*fd_out = -1;
	if (!compressed_debug(elf, &size) || size > MAX_COPY ||
	    !(path = cache_path(id, &dir)))
		return NULL;
	if (!(copy = open_copy(path, id, fd_out)) && make_dirs(dir) &&
	    write_copy(src, path))
		copy = open_copy(path, id, fd_out);
	free(path);
	free(dir);
	return copy;
}
