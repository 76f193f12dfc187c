/* target_core.c - the crashed process as its core and bundle recorded it:
 * per-thread registers (NT_PRSTATUS, each followed by its NT_FPREGSET, the
 * faulting thread first, as kernel/ptrace/coredump.c writes them), the
 * auxiliary vector, the fatal signal and memory from the core's PT_LOAD
 * segments; threads' histories, the executable and the shared-library
 * list from the bundle's modules. The core is untrusted input: every note
 * is size-checked. */
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

#include "server.h"

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

/* ---- the session's target: core, bundle, modules ---------------------- */

struct hwt_history *srv_history(struct server *s, struct srv_thread *t,
				struct hwt_err *err)
{
	if (t->hist)
		return t->hist;
	if (t->bundle_idx < 0) {
		hwt_err_set(err, ENOENT, "thread %lld has no trace in the bundle",
			    (long long)t->tid);
		return NULL;
	}
	if (hwt_history_open(s->bundle, (size_t)t->bundle_idx, s->img,
			     &t->hist, err))
		return NULL;
	return t->hist;
}

size_t srv_read_memory(struct server *s, uint64_t addr, void *buf, size_t len)
{
	size_t done = 0;

	/* The core holds the memory at the crash; module files fill in what
	 * it left out. */
	while (done < len) {
		size_t n = hwt_image_read(s->core->mem, addr + done,
					  (uint8_t *)buf + done, len - done);

		if (n == 0)
			n = hwt_image_read(s->img, addr + done,
					   (uint8_t *)buf + done, len - done);
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

/* ---- opening ----------------------------------------------------------- */

struct elf_layout {
	uint64_t base;       /* first PT_LOAD page */
	uint64_t dynamic;    /* PT_DYNAMIC vaddr, 0 if none */
};

static bool elf_layout(const char *path, struct elf_layout *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ok = false;
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf;

	if (fd < 0)
		return false;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	memset(out, 0, sizeof(*out));
	out->base = UINT64_MAX;
	if (elf && gelf_getehdr(elf, &eh) && !elf_getphdrnum(elf, &nph)) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph))
				continue;
			if (ph.p_type == PT_LOAD && ph.p_vaddr < out->base)
				out->base = ph.p_vaddr & ~(uint64_t)0xfff;
			else if (ph.p_type == PT_DYNAMIC)
				out->dynamic = ph.p_vaddr;
		}
		ok = out->base != UINT64_MAX;
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return ok;
}

/* The executable is the module holding the program headers the kernel
 * passed in AT_PHDR (a PT_INTERP would not tell: libc.so.6 has one too);
 * without an auxv, the first module, which `hwtrace record` writes first. */
static size_t exec_module(const struct server *s)
{
	const struct hwt_bundle *b = s->bundle;
	uint64_t phdr = 0, best = 0;
	size_t exe = 0;

	for (size_t i = 0; i + 16 <= s->core->auxv_len; i += 16) {
		uint64_t type, val;

		memcpy(&type, s->core->auxv + i, 8);
		memcpy(&val, s->core->auxv + i + 8, 8);
		if (type == 3)          /* AT_PHDR */
			phdr = val;
	}
	for (size_t i = 0; phdr && i < b->nmodules; i++)
		if (b->modules[i].load_address <= phdr &&
		    b->modules[i].load_address >= best) {
			best = b->modules[i].load_address;
			exe = i;
		}
	return exe;
}

/* GDB loads shared-library symbols from this list: l_addr is each
 * library's load bias (load address minus its first PT_LOAD page) and
 * l_ld its dynamic section, which GDB checks the bias against. The
 * executable is not listed (GDB has it), its path serves exec-file. */
static int build_libraries(struct server *s, struct hwt_err *err)
{
	const struct hwt_bundle *b = s->bundle;
	size_t cap = 128, len = 0, exe = exec_module(s);
	char *doc = malloc(cap);

	if (!doc)
		return hwt_err_set(err, ENOMEM, "out of memory");
	len = (size_t)snprintf(doc, cap, "<library-list-svr4 version=\"1.0\">");
	for (size_t i = 0; i < b->nmodules; i++) {
		const struct hwt_bundle_module *m = &b->modules[i];
		char *path = m->file ? hwt_bundle_path(b, m->file)
				     : strdup(m->system_path);
		struct elf_layout lay;
		uint64_t bias;
		size_t need;
		bool ok = path && elf_layout(path, &lay);

		free(path);
		if (!ok || m->system_path[0] != '/')
			continue;
		if (i == exe) {
			s->exec_path = strdup(m->system_path);
			continue;
		}
		bias = m->load_address - lay.base;
		need = len + strlen(m->system_path) * 6 + 128;
		if (need > cap) {
			char *p = realloc(doc, cap = 2 * need);

			if (!p) {
				free(doc);
				return hwt_err_set(err, ENOMEM, "out of memory");
			}
			doc = p;
		}
		len += (size_t)snprintf(doc + len, cap - len, "<library name=\"");
		/* Paths are XML-escaped: they come from the traced system. */
		for (const char *c = m->system_path; *c; c++) {
			const char *e = *c == '&' ? "&amp;" : *c == '<' ? "&lt;" :
					*c == '>' ? "&gt;" : *c == '"' ? "&quot;" : NULL;

			len += (size_t)(e ? snprintf(doc + len, cap - len, "%s", e)
					  : snprintf(doc + len, cap - len, "%c", *c));
		}
		len += (size_t)snprintf(doc + len, cap - len,
					"\" lm=\"0x%zx\" lmid=\"0x0\" l_addr=\"0x%llx\" "
					"l_ld=\"0x%llx\"/>", i + 1,
					(unsigned long long)bias,
					(unsigned long long)(lay.dynamic ?
							     bias + lay.dynamic : 0));
	}
	if (len + 32 > cap) {
		char *p = realloc(doc, cap = len + 32);

		if (!p) {
			free(doc);
			return hwt_err_set(err, ENOMEM, "out of memory");
		}
		doc = p;
	}
	len += (size_t)snprintf(doc + len, cap - len, "</library-list-svr4>");
	s->libs_xml = doc;
	s->libs_len = len;
	return 0;
}

int server_open(struct server *s, const char *bundle_dir,
		const char *core_path, struct hwt_err *err)
{
	struct hwt_err werr = { 0 };
	char *core = NULL;
	int rc;

	memset(s, 0, sizeof(*s));
	rc = hwt_bundle_read(bundle_dir, &s->bundle, err);
	if (rc)
		return rc;
	if (core_path)
		core = strdup(core_path);
	else if (s->bundle->core)
		core = hwt_bundle_path(s->bundle, s->bundle->core);
	else
		return hwt_err_set(err, ENOENT, "bundle %s has no core (the "
				   "program did not die on a fatal signal); give "
				   "one with --core CORE", bundle_dir);
	if (!core)
		return hwt_err_set(err, ENOMEM, "out of memory");
	rc = core_open(core, &s->core, err);
	if (!rc)
		rc = hwt_image_new(&s->img, err);
	/* A missing module file only makes its code unreadable. */
	if (!rc && hwt_image_add_bundle(s->img, s->bundle, &werr))
		snprintf(s->warning, sizeof(s->warning), "%s", werr.msg);
	/* The bundle's core is already in the image; a core given on its own
	 * only needs adding when the bundle has none. */
	if (!rc && core_path && !s->bundle->core)
		rc = hwt_image_add_core(s->img, core, err);
	free(core);
	if (rc)
		return rc;
	s->threads = calloc(s->core->nthreads, sizeof(*s->threads));
	if (!s->threads)
		return hwt_err_set(err, ENOMEM, "out of memory");
	s->nthreads = s->core->nthreads;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct srv_thread *t = &s->threads[i];

		t->tid = s->core->threads[i].tid;
		t->core = &s->core->threads[i];
		t->bundle_idx = -1;
		for (size_t j = 0; j < s->bundle->nthreads; j++)
			if (s->bundle->threads[j].tid == t->tid)
				t->bundle_idx = (long)j;
		/* Recorded already: GDB's record btrace reopens on connect. */
		t->btrace_on = t->bundle_idx >= 0;
		if (t->bundle_idx >= 0 &&
		    s->bundle->threads[t->bundle_idx].trace_size > s->bts_size)
			s->bts_size = s->bundle->threads[t->bundle_idx].trace_size;
	}
	if (!s->bts_size)
		s->bts_size = 64 << 10;
	/* The encoded stream is not known before GDB asks for it; the
	 * raw trace size is as good a figure for a buffer as any. */
	s->pt_size = s->bts_size;
	return build_libraries(s, err);
}

void server_close(struct server *s)
{
	for (size_t i = 0; i < s->nthreads; i++) {
		struct srv_thread *t = &s->threads[i];

		if (t->cursor)
			hwt_cursor_free(t->cursor);
		if (t->hist)
			hwt_history_free(t->hist);
		free(t->btrace_xml);
	}
	free(s->threads);
	free(s->libs_xml);
	free(s->exec_path);
	if (s->img)
		hwt_image_free(s->img);
	core_free(s->core);
	if (s->bundle)
		hwt_bundle_free(s->bundle);
	memset(s, 0, sizeof(*s));
}
