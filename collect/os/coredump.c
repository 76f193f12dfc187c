// SPDX-License-Identifier: BSD-2-Clause
/* coredump.c - ELF core of the stopped, faulted process, in the layout the
 * kernel writes so stock debuggers load it: a PT_NOTE with per-thread
 * registers (faulting thread first) and process notes, then one PT_LOAD
 * per mapping. Unlike the kernel's default filter, file-backed text is
 * included, so the core alone supplies the code bytes a trace decoder
 * needs; untouched or unreadable pages become holes (read back as
 * zeros). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/procfs.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <unistd.h>

#include "array.h"
#include "fdio.h"
#include "proc.h"

#define PAGE 4096u
#define COPY_CHUNK (1u << 20)
/* Room for the largest XSAVE layout (AMX is about 11 KiB). */
#define XSTATE_MAX (32u << 10)
#define AUXV_MAX (64u << 10)
#define CMDLINE_MAX (64u << 10)

struct notes {
	uint8_t *p;
	size_t len, alloc;
	bool nomem;
};

static size_t align4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

static void note_add(struct notes *b, const char *name, uint32_t type,
		     const void *desc, size_t descsz)
{
	size_t namesz = strlen(name) + 1;
	size_t need = sizeof(Elf64_Nhdr) + align4(namesz) + align4(descsz);
	Elf64_Nhdr nh = {
		.n_namesz = (Elf64_Word)namesz,
		.n_descsz = (Elf64_Word)descsz,
		.n_type = type,
	};
	uint8_t *at;

	if (b->nomem)
		return;
	if (HWT_ARRAY_RESERVE(b->p, b->alloc, b->len + need, 4096)) {
		b->nomem = true;
		return;
	}
	at = b->p + b->len;
	memset(at, 0, need);
	memcpy(at, &nh, sizeof(nh));
	memcpy(at + sizeof(nh), name, namesz);
	memcpy(at + sizeof(nh) + align4(namesz), desc, descsz);
	b->len += need;
}

static void add_prstatus(struct notes *b, const struct hwt_core_desc *d,
			 pid_t tid, const struct user_regs_struct *regs)
{
	struct elf_prstatus st;
	pid_t pid = d->pid;

	memset(&st, 0, sizeof(st));
	/* Like the kernel, every thread carries the signal that dumped. */
	st.pr_info.si_signo = d->siginfo->si_signo;
	st.pr_info.si_code = d->siginfo->si_code;
	st.pr_info.si_errno = d->siginfo->si_errno;
	st.pr_cursig = (short)d->signal;
	st.pr_pid = tid;
	st.pr_ppid = getpid();
	st.pr_pgrp = getpgid(pid);
	st.pr_sid = getsid(pid);
	_Static_assert(sizeof(st.pr_reg) == sizeof(*regs),
		       "elf_gregset_t and user_regs_struct differ");
	memcpy(&st.pr_reg, regs, sizeof(st.pr_reg));
	st.pr_fpvalid = 1;
	note_add(b, "CORE", NT_PRSTATUS, &st, sizeof(st));
}

static void add_prpsinfo(struct notes *b, pid_t pid)
{
	struct elf_prpsinfo ps;
	char path[64], *text;
	struct stat sb;
	size_t len;

	memset(&ps, 0, sizeof(ps));
	ps.pr_state = 3;      /* the kernel's index for 't' (traced) */
	ps.pr_sname = 't';
	ps.pr_pid = pid;
	ps.pr_ppid = getpid();
	ps.pr_pgrp = getpgid(pid);
	ps.pr_sid = getsid(pid);
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &sb) == 0) {
		ps.pr_uid = sb.st_uid;
		ps.pr_gid = sb.st_gid;
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (hwt_proc_read(path, 4096, &text, &len, NULL) == 0) {
		text[strcspn(text, "\n")] = '\0';
		strncpy(ps.pr_fname, text, sizeof(ps.pr_fname) - 1);
		free(text);
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (hwt_proc_read(path, CMDLINE_MAX, &text, &len, NULL) == 0) {
		if (len > sizeof(ps.pr_psargs) - 1)
			len = sizeof(ps.pr_psargs) - 1;
		for (size_t i = 0; i < len; i++)
			ps.pr_psargs[i] = text[i] ? text[i] : ' ';
		while (len > 0 && ps.pr_psargs[len - 1] == ' ')
			ps.pr_psargs[--len] = '\0';
		free(text);
	}
	note_add(b, "CORE", NT_PRPSINFO, &ps, sizeof(ps));
}

static void add_auxv(struct notes *b, pid_t tid)
{
	char path[64], *text;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)tid);
	if (hwt_proc_read(path, AUXV_MAX, &text, &len, NULL) == 0) {
		note_add(b, "CORE", NT_AUXV, text, len);
		free(text);
	}
}

/* NT_FILE: count, page size, (start, end, page offset) per file mapping,
 * then the names. GDB uses it to name the files behind the mappings. */
static void add_files(struct notes *b, const struct hwt_maps *maps)
{
	size_t count = 0, names = 0, size, at;
	uint64_t *words;
	uint8_t *desc;

	for (size_t i = 0; i < maps->n; i++)
		if (maps->v[i].path && maps->v[i].path[0] == '/') {
			count++;
			names += strlen(maps->v[i].path) + 1;
		}
	size = 16 + count * 24 + names;
	desc = calloc(1, size);
	if (!desc) {
		b->nomem = true;
		return;
	}
	words = (uint64_t *)desc;
	words[0] = count;
	words[1] = PAGE;
	at = 2;
	for (size_t i = 0; i < maps->n; i++)
		if (maps->v[i].path && maps->v[i].path[0] == '/') {
			words[at++] = maps->v[i].start;
			words[at++] = maps->v[i].end;
			words[at++] = maps->v[i].offset / PAGE;
		}
	at *= sizeof(uint64_t);
	for (size_t i = 0; i < maps->n; i++)
		if (maps->v[i].path && maps->v[i].path[0] == '/') {
			size_t n = strlen(maps->v[i].path) + 1;

			memcpy(desc + at, maps->v[i].path, n);
			at += n;
		}
	note_add(b, "CORE", NT_FILE, desc, size);
	free(desc);
}

static void add_fp_notes(struct notes *b, pid_t tid, uint8_t *xstate)
{
	struct user_fpregs_struct fp;
	struct iovec iov = { xstate, XSTATE_MAX };

	memset(&fp, 0, sizeof(fp));
	ptrace(PTRACE_GETFPREGS, tid, 0, &fp);
	note_add(b, "CORE", NT_FPREGSET, &fp, sizeof(fp));
	if (ptrace(PTRACE_GETREGSET, tid, NT_X86_XSTATE, &iov) == 0)
		note_add(b, "LINUX", NT_X86_XSTATE, xstate, iov.iov_len);
}

static int build_notes(const struct hwt_core_desc *d,
		       const struct hwt_maps *maps, struct notes *b,
		       struct hwt_err *err)
{
	uint8_t *xstate = malloc(XSTATE_MAX);
	pid_t f = d->fault_tid;
	struct user_regs_struct regs;

	if (!xstate)
		return hwt_err_set(err, ENOMEM, "out of memory for a core");
	if (ptrace(PTRACE_GETREGS, f, 0, &regs) < 0) {
		free(xstate);
		return hwt_err_set(err, errno,
				   "cannot read the registers of thread %d: %s",
				   (int)f, strerror(errno));
	}
	/* The kernel's order: the dumping thread's status, the process
	 * notes, its other register sets, then each other thread. */
	add_prstatus(b, d, f, &regs);
	add_prpsinfo(b, d->pid);
	note_add(b, "CORE", NT_SIGINFO, d->siginfo, sizeof(*d->siginfo));
	add_auxv(b, f);
	add_files(b, maps);
	add_fp_notes(b, f, xstate);
	for (size_t i = 0; i < d->ntids; i++) {
		if (d->tids[i] == f)
			continue;
		/* A thread killed since it stopped has no registers. */
		if (ptrace(PTRACE_GETREGS, d->tids[i], 0, &regs) < 0)
			continue;
		add_prstatus(b, d, d->tids[i], &regs);
		add_fp_notes(b, d->tids[i], xstate);
	}
	free(xstate);
	if (b->nomem)
		return hwt_err_set(err, ENOMEM, "out of memory for core notes");
	return 0;
}

/* Mapping contents are only written when the first page reads: guard
 * pages, [vvar] and the like get p_filesz 0, as in kernel cores. */
static bool dumpable(int memfd, const struct hwt_map *m)
{
	uint8_t probe;

	return m->readable && m->start <= (uint64_t)INT64_MAX &&
	       pread(memfd, &probe, 1, (off_t)m->start) == 1;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* Copy [start, end) of the process to the file at its current offset.
 * Pages that cannot be read, and zero pages, are left as holes. */
static int copy_memory(int memfd, int fd, uint64_t start, uint64_t end,
		       uint8_t *buf)
{
	for (uint64_t at = start; at < end;) {
		size_t n = end - at > COPY_CHUNK ? COPY_CHUNK : (size_t)(end - at);
		ssize_t got = pread(memfd, buf, n, (off_t)at);

		if (got < (ssize_t)n) {
			/* Read page by page to keep what is readable. */
			for (size_t off = 0; off < n; off += PAGE)
				if (pread(memfd, buf + off, PAGE,
					  (off_t)(at + off)) != PAGE)
					memset(buf + off, 0, PAGE);
		}
		for (size_t off = 0; off < n; off += PAGE) {
			int rc;

			if (all_zero(buf + off, PAGE)) {
				if (lseek(fd, PAGE, SEEK_CUR) < 0)
					return -errno;
				continue;
			}
			if ((rc = hwt_write_all(fd, buf + off, PAGE)) < 0)
				return rc;
		}
		at += n;
	}
	return 0;
}

static int write_core_file(int fd, int memfd,
			   const struct hwt_maps *maps,
			   const struct notes *notes, struct hwt_err *err)
{
	size_t nphdr = 1 + maps->n;
	Elf64_Phdr *ph = calloc(nphdr, sizeof(*ph));
	uint8_t *buf = malloc(COPY_CHUNK);
	uint64_t off, data_start;
	Elf64_Ehdr eh;
	int rc = 0;

	if (!ph || !buf) {
		rc = hwt_err_set(err, ENOMEM, "out of memory writing a core");
		goto out;
	}
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
	eh.e_type = ET_CORE;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = (Elf64_Half)nphdr;

	off = sizeof(eh) + nphdr * sizeof(Elf64_Phdr);
	ph[0].p_type = PT_NOTE;
	ph[0].p_offset = off;
	ph[0].p_filesz = notes->len;
	off = (off + notes->len + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	data_start = off;
	for (size_t i = 0; i < maps->n; i++) {
		const struct hwt_map *m = &maps->v[i];
		Elf64_Phdr *p = &ph[1 + i];

		p->p_type = PT_LOAD;
		p->p_offset = off;
		p->p_vaddr = m->start;
		p->p_memsz = m->end - m->start;
		p->p_filesz = dumpable(memfd, m) ? p->p_memsz : 0;
		p->p_flags = (m->readable ? PF_R : 0) |
			     (m->writable ? PF_W : 0) |
			     (m->executable ? PF_X : 0);
		p->p_align = PAGE;
		off += p->p_filesz;
	}
	if ((rc = hwt_write_all(fd, &eh, sizeof(eh))) < 0 ||
	    (rc = hwt_write_all(fd, ph, nphdr * sizeof(*ph))) < 0 ||
	    (rc = hwt_write_all(fd, notes->p, notes->len)) < 0 ||
	    lseek(fd, (off_t)data_start, SEEK_SET) < 0)
		goto io_error;
	for (size_t i = 1; i < nphdr; i++)
		if (ph[i].p_filesz &&
		    (rc = copy_memory(memfd, fd, ph[i].p_vaddr,
				      ph[i].p_vaddr + ph[i].p_filesz, buf)) < 0)
			goto io_error;
	/* Trailing holes need the size set explicitly. */
	if (ftruncate(fd, (off_t)off) < 0)
		goto io_error;
	rc = 0;
	goto out;
io_error:
	rc = rc < 0 ? rc : -errno;
	rc = hwt_err_set(err, -rc, "writing the core failed: %s",
			 strerror(-rc));
out:
	free(ph);
	free(buf);
	return rc;
}

int hwt_core_write(const struct hwt_core_desc *d, const char *path,
		   struct hwt_err *err)
{
	pid_t tid = d->fault_tid;
	struct notes notes = {0};
	struct hwt_maps maps;
	char mempath[64];
	int fd, memfd, rc;

	if ((rc = hwt_maps_read(tid, &maps, err)) < 0)
		return hwt_err_prefix(err, "writing a core: ");
	if (1 + maps.n >= PN_XNUM) {
		hwt_maps_free(&maps);
		return hwt_err_set(err, E2BIG,
				   "the process has %zu mappings, more than an "
				   "ELF core without extended numbering holds",
				   maps.n);
	}
	if ((rc = build_notes(d, &maps, &notes, err)) < 0)
		goto out_maps;
	snprintf(mempath, sizeof(mempath), "/proc/%d/mem", (int)tid);
	memfd = open(mempath, O_RDONLY | O_CLOEXEC);
	if (memfd < 0) {
		rc = hwt_err_set(err, errno, "cannot open %s: %s", mempath,
				 strerror(errno));
		goto out_maps;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = hwt_err_set(err, errno, "cannot create core file %s: %s",
				 path, strerror(errno));
		close(memfd);
		goto out_maps;
	}
	rc = write_core_file(fd, memfd, &maps, &notes, err);
	close(memfd);
	if (close(fd) < 0 && rc == 0)
		rc = hwt_err_set(err, errno, "writing core file %s: %s", path,
				 strerror(errno));
	if (rc < 0)
		unlink(path);
out_maps:
	free(notes.p);
	hwt_maps_free(&maps);
	return rc;
}
