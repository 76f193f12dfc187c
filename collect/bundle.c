// SPDX-License-Identifier: BSD-2-Clause
/* bundle.c - a recording's threads and modules into a bundle being
 * written, for `hwtrace record` and hwt-server's qHwtSave alike. The
 * bundle type follows the backend's trace format. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "backend.h"
#include "hwt-collect.h"
#include "spill.h"

/* hwt-sw, one record per instruction, is stored compressed (a thirtieth
 * of its size, docs/bundle.md); hardware traces are already dense, and
 * LLDB reads intel-pt bundles' files as they are. */
static const struct {
	const char *type, *suffix;
	bool compress;
} kinds[] = {
	[HWT_COLLECT_FMT_SW] = { HWT_BUNDLE_TYPE_SW, "hwtsw.zst", true },
	[HWT_COLLECT_FMT_PT] = { HWT_BUNDLE_TYPE_PT, "ipt", false },
	[HWT_COLLECT_FMT_BTS] = { HWT_BUNDLE_TYPE_BTS, "bts", false },
	[HWT_COLLECT_FMT_ETM] = { NULL, NULL, false },
};

/* One thread's trace into the staging directory as kinds[f] keeps it;
 * a compressed one with its index beside it when it has one. */
static int stage_trace(const char *staging, const struct hwt_collect_thread *t,
		       bool compress, struct hwt_bundle_thread *bt,
		       struct hwt_err *err)
{
	uint8_t *packed, *idx;
	size_t n, idx_n;
	int rc;

	bt->trace_size = t->trace_size;
	/* A spill that could not keep its part leaves the ring's alone. */
	if (t->spill && (rc = hwt_sw_spill_stage(t->spill, t->trace,
						 t->trace_size, staging, bt,
						 err)) != -ENOSPC)
		return rc;
	if (!compress)
		return hwt_bundle_stage_write(staging, bt->trace_file, t->trace,
					      t->trace_size, err);
	if ((rc = hwt_sw_trace_pack(t->trace, t->trace_size, &packed, &n,
				    &idx, &idx_n, err)))
		return rc;
	bt->encoding = HWT_TRACE_ZSTD;
	bt->decoded_size = t->trace_size;
	bt->trace_size = n;
	rc = hwt_bundle_stage_write(staging, bt->trace_file, packed, n, err);
	if (!rc && idx) {
		if (!(bt->index_file = hwt_sw_index_name(bt->trace_file))) {
			rc = hwt_err_set(err, ENOMEM, "out of memory");
		} else {
			bt->index_size = idx_n;
			rc = hwt_bundle_stage_write(staging, bt->index_file,
						    idx, idx_n, err);
		}
	}
	free(packed);
	free(idx);
	return rc;
}

/* The index in b->processes of the program process pid (0: the
 * program) ran after exec execs, added when add; SIZE_MAX when absent. */
static size_t process_of(struct hwt_bundle *b, pid_t pid, uint32_t exec,
			 bool add)
{
	int64_t want = pid ? pid : b->pid;

	for (size_t p = 0; p < b->nprocesses; p++)
		if (b->processes[p].pid == want && b->processes[p].exec == exec)
			return p;
	if (!add)
		return SIZE_MAX;
	b->processes[b->nprocesses] = (struct hwt_bundle_process){
		.pid = want, .exec = exec };
	return b->nprocesses++;
}

/* The name of thread t's trace: threads/TID.SUFFIX, and when the bundle
 * has a history of that tid already (a thread that exec'd, a tid the
 * system reused), threads/TID.N.SUFFIX. */
static char *trace_name(const struct hwt_bundle *b,
			const struct hwt_collect_thread *t, const char *suffix)
{
	size_t same = 0;
	char *name;

	for (size_t i = 0; i < b->nthreads; i++)
		same += b->threads[i].tid == t->tid;
	if ((same ? asprintf(&name, "threads/%d.%zu.%s", (int)t->tid, same,
			     suffix) :
	     asprintf(&name, "threads/%d.%s", (int)t->tid, suffix)) < 0)
		return NULL;
	return name;
}

/* Each thread in its process: the program's, or a followed child's
 * (which then has its own modules, stage_modules). */
static int stage_threads(const char *staging,
			 const struct hwt_collect_thread *t, size_t n,
			 struct hwt_bundle *b, struct hwt_err *err)
{
	/* Every thread of a recording has its backend's one format. */
	enum hwt_collect_format f = n ? t[0].format : HWT_COLLECT_FMT_SW;

	if ((size_t)f >= sizeof(kinds) / sizeof(kinds[0]))
		return hwt_err_set(err, EPROTO, "the backend delivered trace "
				   "format %d, which hwtrace does not know",
				   (int)f);
	if (!kinds[f].type)
		return hwt_err_set(err, ENOTSUP, "recording CoreSight ETM "
				   "trace into a bundle is not supported yet "
				   "(hwtrace reads CoreSight only as OpenCSD "
				   "snapshot directories); pick another "
				   "--backend");
	b->type = (char *)kinds[f].type;
	b->threads = calloc(n ? n : 1, sizeof(*b->threads));
	b->processes = calloc(n + 1, sizeof(*b->processes));
	if (!b->threads || !b->processes)
		return hwt_err_set(err, ENOMEM, "out of memory");
	/* The program's last: the one the core is of. */
	b->processes[0].pid = b->pid;
	for (size_t i = 0; i < n; i++)
		if (t[i].pid == 0 && t[i].exec > b->processes[0].exec)
			b->processes[0].exec = t[i].exec;
	b->nprocesses = 1;
	for (size_t i = 0; i < n; i++) {
		struct hwt_bundle_thread *bt = &b->threads[b->nthreads];
		int rc;

		if (t[i].format != f)
			return hwt_err_set(err, EPROTO, "thread %d's trace "
					   "format differs from thread %d's",
					   (int)t[i].tid, (int)t[0].tid);
		if (!(bt->trace_file = trace_name(b, &t[i], kinds[f].suffix)))
			return hwt_err_set(err, ENOMEM, "out of memory");
		b->nthreads++;
		bt->tid = t[i].tid;
		bt->process = process_of(b, t[i].pid, t[i].exec, true);
		bt->lost_bytes = t[i].lost_bytes;
		bt->lost_insns = t[i].lost_insns;
		bt->insn_total = t[i].insn_total;
		bt->step_repairs = t[i].step_repairs;
		bt->step_gaps = t[i].step_gaps;
		rc = stage_trace(staging, &t[i], kinds[f].compress, bt, err);
		if (rc)
			return rc;
	}
	return 0;
}

/* Bytes from path's load address that its loaded segments (PT_LOAD)
 * span; 1 when that cannot be read. */
static uint64_t extent(const char *path)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = NULL;
	size_t n;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE ||
	    !(elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)) ||
	    elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &n))
		n = 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if ((ph.p_vaddr & ~(uint64_t)4095) < lo)
			lo = ph.p_vaddr & ~(uint64_t)4095;
		if (ph.p_vaddr + ph.p_memsz > hi)
			hi = ph.p_vaddr + ph.p_memsz;
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return hi > lo ? hi - lo : 1;
}

/* Whether a later module of the same program lies over m[i]: a list
 * holds what a program mapped over its life, and after a dlclose other
 * files may lie where earlier ones were (an exec starts another list).
 * One list cannot say which held at a point of the history, so the
 * earlier gives way and its code reads as unknown, never as the other
 * file's. ext[] caches each module's extent (0: not read yet). */
static bool overlaid(const struct hwt_collect_module *m, size_t n, size_t i,
		     uint64_t *ext)
{
	for (size_t j = i + 1; j < n; j++) {
		if (m[j].pid != m[i].pid || m[j].exec != m[i].exec ||
		    (m[j].load_address == m[i].load_address &&
		     !strcmp(m[j].path, m[i].path)))
			continue;
		if (!ext[i])
			ext[i] = extent(m[i].path);
		if (!ext[j])
			ext[j] = extent(m[j].path);
		if (m[j].load_address < m[i].load_address + ext[i] &&
		    m[i].load_address < m[j].load_address + ext[j])
			return true;
	}
	return false;
}

/* Module m of process proc into b: each file once, under modules/ by its
 * system path minus the root; a file gone since it was mapped keeps its
 * path only. */
static int stage_module(const char *staging, const struct hwt_collect_module *m,
			size_t proc, bool copy, struct hwt_bundle *b,
			struct hwt_err *err)
{
	struct hwt_bundle_module *bm = &b->modules[b->nmodules];
	const char *rel = m->path;

	bm->process = proc;
	bm->system_path = strdup(m->path);
	bm->uuid = m->build_id ? strdup(m->build_id) : NULL;
	bm->load_address = m->load_address;
	if (!bm->system_path || (m->build_id && !bm->uuid))
		return hwt_err_set(err, ENOMEM, "out of memory");
	b->nmodules++;
	/* The same file mapped twice (dlopen again, another process) is
	 * copied once. */
	for (size_t j = 0; j + 1 < b->nmodules && !bm->file; j++)
		if (!strcmp(b->modules[j].system_path, bm->system_path) &&
		    b->modules[j].file &&
		    !(bm->file = strdup(b->modules[j].file)))
			return hwt_err_set(err, ENOMEM, "out of memory");
	if (!copy || bm->file || rel[0] != '/')
		return 0;
	while (*rel == '/')
		rel++;
	if (asprintf(&bm->file, "modules/%s", rel) < 0) {
		bm->file = NULL;
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	if (hwt_bundle_stage_copy(staging, bm->file, bm->system_path, err)) {
		free(bm->file);
		bm->file = NULL;
		hwt_err_clear(err);
	}
	return 0;
}

/* Every process's modules but those a later one overlaid. A process
 * none of whose threads is in the bundle needs none. */
static int stage_modules(const char *staging,
			 const struct hwt_collect_module *m, size_t n,
			 bool copy, struct hwt_bundle *b, struct hwt_err *err)
{
	uint64_t *ext = calloc(n + 1, sizeof(*ext));
	int rc = 0;

	b->modules = calloc(n ? n : 1, sizeof(*b->modules));
	if (!b->modules || !ext) {
		free(ext);
		return hwt_err_set(err, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n && !rc; i++) {
		size_t proc = process_of(b, m[i].pid, m[i].exec, false);

		if (proc != SIZE_MAX && !overlaid(m, n, i, ext))
			rc = stage_module(staging, &m[i], proc, copy, b, err);
	}
	free(ext);
	return rc;
}

/* The registers and memory of the past, where the backend keeps them
 * and the bundle has a core of where the history ends: they are told
 * back from that memory, never from another's. */
static int stage_past(const char *staging, struct hwt_collector *c,
		      struct hwt_bundle *b, struct hwt_err *err)
{
	char *path;
	int rc;

	b->data_history = NULL;
	if (!c->backend->write_past || !b->core)
		return 0;
	if (asprintf(&path, "%s/%s", staging, HWT_BUNDLE_DATA_HISTORY) < 0)
		return hwt_err_set(err, ENOMEM, "out of memory");
	rc = c->backend->write_past(c, path, err);
	free(path);
	if (rc > 0)
		b->data_history = HWT_BUNDLE_DATA_HISTORY;
	return rc < 0 ? rc : 0;
}

int hwt_collect_stage(const char *staging, struct hwt_collector *c,
		      const struct hwt_collect_thread *threads,
		      size_t nthreads, bool copy_modules,
		      struct hwt_bundle *b, struct hwt_err *err)
{
	const struct hwt_collect_module *mods;
	size_t nmods = hwt_collect_modules(c, &mods);
	int rc;

	if (!threads)
		nthreads = hwt_collect_threads(c, &threads);
	b->cpu = hwt_collect_cpu_info();
	b->pid = hwt_collect_pid(c);
	b->triple = "x86_64-unknown-linux-gnu";
	rc = stage_threads(staging, threads, nthreads, b, err);
	if (!rc)
		rc = stage_modules(staging, mods, nmods, copy_modules, b, err);
	if (!rc)
		rc = stage_past(staging, c, b, err);
	return rc;
}

void hwt_collect_stage_free(struct hwt_bundle *b)
{
	for (size_t i = 0; i < b->nthreads; i++) {
		free(b->threads[i].trace_file);
		free(b->threads[i].index_file);
	}
	for (size_t i = 0; i < b->nmodules; i++) {
		free(b->modules[i].system_path);
		free(b->modules[i].file);
		free(b->modules[i].uuid);
	}
	free(b->processes);
	free(b->threads);
	free(b->modules);
	b->processes = NULL;
	b->threads = NULL;
	b->modules = NULL;
	b->nprocesses = b->nthreads = b->nmodules = 0;
}
