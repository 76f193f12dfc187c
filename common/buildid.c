// SPDX-License-Identifier: BSD-2-Clause
/* buildid.c - GNU build-id of an ELF file, the identity bundles record so a
 * module copy can be matched to the file that was traced. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hwt-common.h"

static int note_build_id(Elf_Data *data, char *out, size_t outsz)
{
	GElf_Nhdr nhdr;
	size_t off = 0, name_off, desc_off;

	while ((off = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		const uint8_t *desc = (const uint8_t *)data->d_buf + desc_off;
		const char *name = (const char *)data->d_buf + name_off;

		if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_namesz != 4 ||
		    memcmp(name, "GNU", 4) != 0)
			continue;
		if (nhdr.n_descsz == 0 || nhdr.n_descsz * 2 + 1 > outsz)
			return -EOVERFLOW;
		for (size_t i = 0; i < nhdr.n_descsz; i++)
			snprintf(out + 2 * i, 3, "%02x", desc[i]);
		return 0;
	}
	return -ENOENT;
}

int hwt_elf_build_id(const char *path, char *out, size_t outsz,
		     struct hwt_err *err)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	int fd, rc = -ENOENT;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return hwt_err_set(err, EINVAL, "libelf initialisation failed");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hwt_err_set(err, errno, "cannot open %s: %s", path,
				   strerror(errno));
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		rc = hwt_err_set(err, ENOEXEC, "%s is not an ELF file", path);
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr shdr;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (data && (rc = note_build_id(data, out, outsz)) != -ENOENT)
			break;
	}
	if (rc == -ENOENT)
		hwt_err_set(err, ENOENT, "%s has no GNU build-id", path);
	else if (rc < 0)
		hwt_err_set(err, -rc, "%s has an oversized build-id", path);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}
