// SPDX-License-Identifier: BSD-2-Clause
/* core.c - a crashed process's core file: per-thread registers
 * (NT_PRSTATUS, each followed by its NT_FPREGSET, the faulting thread
 * first, as collect/os/coredump.c writes them), the auxiliary vector, the
 * fatal signal and memory from its PT_LOAD segments. The core is
 * untrusted input: every note is size-checked. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <unistd.h>

#include "core.h"
#include "hwt-replay.h"

/* user_regs_struct offset of rip (index 16 of 27 words). */
#define GREGS_RIP_OFF (16 * 8)

uint64_t core_thread_pc(const struct core_thread *t)
{
	uint64_t pc;

	memcpy(&pc, t->gregs + GREGS_RIP_OFF, sizeof(pc));
	return pc;
}

static int add_thread(struct hwt_core *c, const uint8_t *desc, size_t size,
		      const char *path, struct hwt_err *err)
{
	struct elf_prstatus st;
	struct core_thread *t;

	if (size < sizeof(st))
		return hwt_err_set(err, EBADMSG, "%s: NT_PRSTATUS note is %zu "
				   "bytes, expected %zu: not an x86-64 Linux core",
				   path, size, sizeof(st));
	if (c->nthreads >= HWT_BUNDLE_MAX_THREADS)
		return hwt_err_set(err, E2BIG, "%s: more than %u threads",
				   path, HWT_BUNDLE_MAX_THREADS);
	_Static_assert(sizeof(st.pr_reg) == CORE_GREGS_SIZE,
		       "elf_gregset_t is not user_regs_struct");
	memcpy(&st, desc, sizeof(st));
	t = realloc(c->threads, (c->nthreads + 1) * sizeof(*t));
	if (!t)
		return hwt_err_set(err, ENOMEM, "out of memory reading %s", path);
	c->threads = t;
	t = &c->threads[c->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = st.pr_pid;
	memcpy(t->gregs, &st.pr_reg, CORE_GREGS_SIZE);
	if (!c->signo)
		c->signo = st.pr_cursig;
	return 0;
}

static int read_notes(struct hwt_core *c, Elf *elf, const GElf_Phdr *ph,
		      const char *path, struct hwt_err *err)
{
	Elf_Data *data = elf_getdata_rawchunk(elf, (int64_t)ph->p_offset,
					      ph->p_filesz, ELF_T_NHDR);
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;
	int rc;

	if (!data)
		return hwt_err_set(err, EBADMSG, "%s: PT_NOTE segment at offset "
				   "%#llx is outside the file", path,
				   (unsigned long long)ph->p_offset);
	while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)data->d_buf + name_off;
		const uint8_t *desc = (const uint8_t *)data->d_buf + desc_off;

		off = next;
		if (nh.n_namesz != 5 || memcmp(name, "CORE", 5) != 0)
			continue;
		switch (nh.n_type) {
		case NT_PRSTATUS:
			rc = add_thread(c, desc, nh.n_descsz, path, err);
			if (rc)
				return rc;
			break;
		case NT_FPREGSET:
			/* Belongs to the thread whose status came before. */
			if (c->nthreads && nh.n_descsz >= CORE_FXSAVE_SIZE) {
				struct core_thread *t = &c->threads[c->nthreads - 1];

				memcpy(t->fxsave, desc, CORE_FXSAVE_SIZE);
				t->have_fp = true;
			}
			break;
		case NT_AUXV:
			if (c->auxv || nh.n_descsz > CORE_MAX_AUXV)
				break;
			c->auxv = malloc(nh.n_descsz ? nh.n_descsz : 1);
			if (!c->auxv)
				return hwt_err_set(err, ENOMEM, "out of memory");
			memcpy(c->auxv, desc, nh.n_descsz);
			c->auxv_len = nh.n_descsz;
			break;
		case NT_SIGINFO:
			if (nh.n_descsz >= sizeof(c->siginfo)) {
				memcpy(c->siginfo, desc, sizeof(c->siginfo));
				memcpy(&c->signo, desc, sizeof(int));
				c->have_siginfo = true;
			}
			break;
		default:
			break;
		}
	}
	return 0;
}

static int parse_core(struct hwt_core *c, const char *path, struct hwt_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf;

	if (fd < 0)
		return hwt_err_set(err, errno, "cannot open core %s: %s", path,
				   strerror(errno));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_type != ET_CORE ||
	    eh.e_machine != EM_X86_64 || gelf_getclass(elf) != ELFCLASS64 ||
	    elf_getphdrnum(elf, &nph)) {
		rc = hwt_err_set(err, EINVAL, "%s is not an x86-64 ELF core file",
				 path);
		goto out;
	}
	for (size_t i = 0; i < nph && !rc; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_NOTE)
			rc = read_notes(c, elf, &ph, path, err);
	}
	if (!rc && c->nthreads == 0)
		rc = hwt_err_set(err, EINVAL, "%s has no thread registers "
				 "(NT_PRSTATUS)", path);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

int core_open(const char *path, struct hwt_core **out, struct hwt_err *err)
{
	struct hwt_core *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return hwt_err_set(err, ENOMEM, "out of memory");
	rc = parse_core(c, path, err);
	if (!rc)
		rc = hwt_image_new(&c->mem, err);
	if (!rc)
		rc = hwt_image_add_core(c->mem, path, err);
	if (rc) {
		core_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void core_free(struct hwt_core *c)
{
	if (!c)
		return;
	if (c->mem)
		hwt_image_free(c->mem);
	free(c->threads);
	free(c->auxv);
	free(c);
}
