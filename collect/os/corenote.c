// SPDX-License-Identifier: BSD-2-Clause
/* corenote.c - adding a note to an ELF core another program wrote
 * (corenote.h). Valgrind's cores have no NT_AUXV, without which GDB
 * cannot find where a position-independent executable was loaded. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corenote.h"

#define MAX_PHDRS 65000u          /* below PN_XNUM, with room */
#define MAX_DESC (1u << 20)

static size_t align(size_t n, size_t a)
{
	return (n + a - 1) & ~(a - 1);
}

static int io(ssize_t got, size_t want, const char *what, const char *path,
	      struct hwt_err *err)
{
	if (got == (ssize_t)want)
		return 0;
	return hwt_err_set(err, got < 0 ? errno : EIO, "cannot %s %s: %s",
			   what, path, got < 0 ? strerror(errno)
					       : "short transfer");
}

int hwt_core_append_note(const char *path, const char *name, uint32_t type,
			 const void *desc, size_t descsz, struct hwt_err *err)
{
	size_t namesz = strlen(name) + 1, notesz, tabsz;
	Elf64_Phdr *ph = NULL;
	Elf64_Ehdr eh;
	uint8_t *note = NULL;
	struct stat st;
	off_t note_off = 0, tab_off = 0;
	int fd, rc;

	if (descsz > MAX_DESC || namesz > 64)
		return hwt_err_set(err, EINVAL, "note too large for %s", path);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return hwt_err_set(err, errno, "cannot open %s: %s", path,
				   strerror(errno));
	rc = io(pread(fd, &eh, sizeof(eh), 0), sizeof(eh), "read", path, err);
	if (rc == 0 && (memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
			eh.e_ident[EI_CLASS] != ELFCLASS64 ||
			eh.e_ident[EI_DATA] != ELFDATA2LSB ||
			eh.e_type != ET_CORE ||
			eh.e_phentsize != sizeof(Elf64_Phdr) ||
			eh.e_phnum == 0 || eh.e_phnum >= MAX_PHDRS))
		rc = hwt_err_set(err, EINVAL, "%s is not a 64-bit ELF core "
				 "this can add a note to", path);
	if (rc == 0 && fstat(fd, &st) < 0)
		rc = hwt_err_set(err, errno, "cannot stat %s: %s", path,
				 strerror(errno));
	tabsz = (size_t)(eh.e_phnum + 1) * sizeof(*ph);
	notesz = sizeof(Elf64_Nhdr) + align(namesz, 4) + align(descsz, 4);
	if (rc == 0 && (!(ph = calloc(eh.e_phnum + 1, sizeof(*ph))) ||
			!(note = calloc(1, notesz))))
		rc = hwt_err_set(err, ENOMEM, "out of memory");
	if (rc == 0)
		rc = io(pread(fd, ph, tabsz - sizeof(*ph), (off_t)eh.e_phoff),
			tabsz - sizeof(*ph), "read", path, err);
	if (rc == 0) {
		Elf64_Nhdr nh = { (Elf64_Word)namesz, (Elf64_Word)descsz,
				  type };

		memcpy(note, &nh, sizeof(nh));
		memcpy(note + sizeof(nh), name, namesz);
		memcpy(note + sizeof(nh) + align(namesz, 4), desc, descsz);
		note_off = (off_t)align((size_t)st.st_size, 8);
		tab_off = (off_t)align((size_t)note_off + notesz, 8);
		ph[eh.e_phnum] = (Elf64_Phdr){
			.p_type = PT_NOTE, .p_offset = (Elf64_Off)note_off,
			.p_filesz = notesz, .p_align = 4,
		};
		rc = io(pwrite(fd, note, notesz, note_off), notesz, "write",
			path, err);
	}
	if (rc == 0)
		rc = io(pwrite(fd, ph, tabsz, tab_off), tabsz, "write", path,
			err);
	if (rc == 0) {
		/* The header last: until it is written the core is as it was. */
		eh.e_phoff = (Elf64_Off)tab_off;
		eh.e_phnum++;
		rc = io(pwrite(fd, &eh, sizeof(eh), 0), sizeof(eh), "write",
			path, err);
	}
	free(ph);
	free(note);
	if (close(fd) < 0 && rc == 0)
		rc = hwt_err_set(err, errno, "cannot write %s: %s", path,
				 strerror(errno));
	return rc;
}
