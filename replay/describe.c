// SPDX-License-Identifier: BSD-2-Clause
/* describe.c - what a bundle holds, as text: the report `hwtrace info`
 * prints (docs/cli.md), built here so that every front end (the CLI, the
 * LLDB plugin's `hwt info`) says the same. Written into a memory stream;
 * nothing is printed. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwt-past.h"
#include "hwt-replay.h"

static void describe_stop(FILE *f, const struct hwt_bundle *b,
			  struct hwt_image *img)
{
	struct hwt_symbol sym;

	switch (b->stop_reason) {
	case HWT_STOP_EXITED:
		fprintf(f, "stop:    exited with status %d\n", b->stop_status);
		break;
	case HWT_STOP_SIGNALED:
		fprintf(f, "stop:    killed by signal %d (%s)\n", b->stop_signal,
			strsignal(b->stop_signal));
		break;
	case HWT_STOP_FAULT:
		fprintf(f, "stop:    signal %d (%s) in thread %" PRId64
			" at 0x%" PRIx64 "\n", b->stop_signal,
			strsignal(b->stop_signal), b->stop_tid, b->stop_pc);
		if (hwt_image_symbolize(img, b->stop_pc, &sym) == 0 &&
		    sym.function) {
			fprintf(f, "         in %s", sym.function);
			if (sym.file)
				fprintf(f, " at %s:%d", sym.file, sym.line);
			fputc('\n', f);
		}
		break;
	case HWT_STOP_NONE:
		/* Hardware captures (CoreSight snapshots) name no process:
		 * the trace simply ends where capture stopped. */
		fprintf(f, "stop:    %s\n", b->pid > 0 ?
			"still running when saved" :
			"not recorded (the trace ends where capture stopped)");
		break;
	}
	if (b->stop_note)
		fprintf(f, "note:    %s\n", b->stop_note);
}

/* Followed children, and the programs processes ran before an exec. */
static void describe_processes(FILE *f, const struct hwt_bundle *b)
{
	size_t children = 0, replaced = 0;

	for (size_t p = 1; p < hwt_bundle_nprocesses(b); p++) {
		if (hwt_bundle_process_replaced_by(b, p))
			replaced++;
		else if (hwt_bundle_process_pid(b, p) != b->pid)
			children++;
	}
	if (children)
		fprintf(f, "children: %zu followed\n", children);
	if (replaced)
		fprintf(f, "execs:   %zu programs replaced by an exec, each "
			"with its own history\n", replaced);
}

/* "process P", and " before exec N" when an exec replaced its program. */
static void describe_process(FILE *f, const struct hwt_bundle *b, size_t p)
{
	uint32_t by = hwt_bundle_process_replaced_by(b, p);

	fprintf(f, "process %" PRId64, hwt_bundle_process_pid(b, p));
	if (by)
		fprintf(f, " before exec %u", by);
}

static int describe_threads(FILE *f, const struct hwt_bundle *b,
			    struct hwt_bundle_images *ims, struct hwt_err *err)
{
	fprintf(f, "threads: %zu\n", b->nthreads);
	for (size_t i = 0; i < b->nthreads; i++) {
		const struct hwt_bundle_thread *t = &b->threads[i];
		struct hwt_history *h;
		struct hwt_image *img;
		char name[32];
		int rc;

		if ((rc = hwt_bundle_images_thread(ims, i, &img, err)) ||
		    (rc = hwt_history_open(b, i, img, &h, err)))
			return rc;
		fprintf(f, "  thread %s: ",
			hwt_bundle_thread_name(b, i, name, sizeof(name)));
		if (t->process)
			fprintf(f, "process %" PRId64 ", ",
				hwt_bundle_process_pid(b, t->process));
		fprintf(f, "%" PRIu64 " items in history, ",
			hwt_history_count(h));
		/* Only recorders that count instructions (hwt-sw, BTS) fill
		 * these; hardware traces say nothing about what they lost. */
		if (t->insn_total || t->lost_insns || t->lost_bytes)
			fprintf(f, "%" PRIu64 " instructions recorded, %" PRIu64
				" lost (%" PRIu64 " bytes), ", t->insn_total,
				t->lost_insns, t->lost_bytes);
		if (t->step_repairs || t->step_gaps)
			fprintf(f, "%" PRIu64 " lost step traps repaired, %"
				PRIu64 " left as gaps, ", t->step_repairs,
				t->step_gaps);
		if (t->encoding == HWT_TRACE_ZSTD)
			fprintf(f, "trace %" PRIu64 " bytes (zstd, %" PRIu64
				" decoded%s%s)\n", t->trace_size,
				t->decoded_size,
				t->index_file && !hwt_history_index_note(h) ?
				", indexed" : "",
				hwt_history_runs_kept(h) ? ", runs kept" : "");
		else
			fprintf(f, "trace %" PRIu64 " bytes\n", t->trace_size);
		if (hwt_history_index_note(h))
			fprintf(f, "    index not used (the trace was read "
				"whole): %s\n", hwt_history_index_note(h));
		hwt_history_free(h);
	}
	return 0;
}

/* CoreSight snapshots: each trace source and memory dump. */
static void describe_coresight(FILE *f, const struct hwt_bundle *b)
{
	static const char *const proto[] = {
		[HWT_CS_UNKNOWN] = "unknown", [HWT_CS_ETMV3] = "ETMv3",
		[HWT_CS_PTM] = "PTM", [HWT_CS_ETMV4] = "ETMv4",
		[HWT_CS_ETE] = "ETE", [HWT_CS_STM] = "STM", [HWT_CS_ITM] = "ITM",
	};

	if (!b->nsources && !b->nregions)
		return;
	fprintf(f, "sources: %zu\n", b->nsources);
	for (size_t i = 0; i < b->nsources; i++) {
		const struct hwt_bundle_cs_source *s = &b->sources[i];

		if (s->skipped) {
			fprintf(f, "  %s: skipped: %s\n", s->name, s->skipped);
			continue;
		}
		fprintf(f, "  %s: %s", s->name,
			(unsigned)s->protocol <= HWT_CS_ITM ?
			proto[s->protocol] : "unknown");
		if (i < b->nthreads)
			fprintf(f, " trace ID 0x%x, %s buffer %s", s->trace_id,
				s->formatted ? "formatted" : "raw",
				b->threads[i].trace_file);
		fprintf(f, "%s%s\n", s->core ? " tracing " : "",
			s->core ? s->core : "");
	}
	fprintf(f, "memory:  %zu dumps\n", b->nregions);
	for (size_t i = 0; i < b->nregions; i++) {
		const struct hwt_bundle_region *r = &b->regions[i];

		fprintf(f, "  0x%012" PRIx64 " %8" PRIu64 " bytes %s%s\n",
			r->address, r->size, r->file,
			r->missing ? " (file missing: reads as unmapped)" : "");
	}
}

/* What the data history holds, or why it will not be believed. */
static void describe_past(FILE *f, const struct hwt_bundle *b)
{
	struct hwt_past *p = NULL;
	struct hwt_err err = { 0 };
	char *path;
	uint64_t regs = 0;

	if (!b->data_history) {
		fprintf(f, "data:    (none: values of the past are unavailable)\n");
		return;
	}
	if (!(path = hwt_bundle_path(b, b->data_history)) ||
	    hwt_past_read(path, &p, &err) < 0) {
		fprintf(f, "data:    %s not used: %s\n", b->data_history,
			path ? err.msg : "out of memory");
		free(path);
		return;
	}
	for (size_t i = 0; i < p->nthreads; i++)
		regs += p->threads[i].regs.n;
	fprintf(f, "data:    %s: registers before %" PRIu64 " instructions, "
		"%zu stores (%zu bytes kept)\n", b->data_history, regs, p->n,
		p->nbytes);
	hwt_past_free(p);
	free(path);
}

/* Each process's modules, the program's first. */
static void describe_modules(FILE *f, const struct hwt_bundle *b)
{
	for (size_t p = 0; p < hwt_bundle_nprocesses(b); p++) {
		size_t n = 0;

		for (size_t i = 0; i < b->nmodules; i++)
			n += b->modules[i].process == p;
		if (p == 0) {
			fprintf(f, "modules: %zu\n", n);
		} else {
			fprintf(f, "modules of ");
			describe_process(f, b, p);
			if (n)
				fprintf(f, ": %zu\n", n);
			else
				fprintf(f, ": the program's\n");
		}
		for (size_t i = 0; i < b->nmodules; i++) {
			const struct hwt_bundle_module *m = &b->modules[i];

			if (m->process != p)
				continue;
			fprintf(f, "  0x%012" PRIx64 " %s%s%s\n",
				m->load_address, m->system_path,
				m->uuid ? " build-id " : "",
				m->uuid ? m->uuid : "");
		}
	}
}

int hwt_bundle_describe(const struct hwt_bundle *b,
			struct hwt_bundle_images *ims, char **text,
			struct hwt_err *err)
{
	size_t len;
	FILE *f = open_memstream(text, &len);
	struct hwt_image *img;
	int rc;

	if (!f)
		return hwt_err_set(err, ENOMEM, "out of memory");
	/* The program's modules are all read: one that cannot be is the
	 * answer. */
	if ((rc = hwt_bundle_images_program(ims, &img, err))) {
		fclose(f);
		free(*text);
		*text = NULL;
		return rc;
	}
	fprintf(f, "bundle:  %s\n", b->dir);
	fprintf(f, "format:  %s\n", b->type);
	/* CoreSight snapshots name cores per source (below), not a cpu. */
	if (b->cpu.vendor[0])
		fprintf(f, "cpu:     %s family %d model %d stepping %d\n",
			b->cpu.vendor, b->cpu.family, b->cpu.model,
			b->cpu.stepping);
	if (b->pid > 0)
		fprintf(f, "process: %" PRId64 "\n", b->pid);
	else
		fprintf(f, "process: unknown (the bundle names none)\n");
	describe_processes(f, b);
	describe_stop(f, b, img);
	fprintf(f, "core:    %s\n", b->core ? b->core : "(none)");
	describe_past(f, b);
	rc = describe_threads(f, b, ims, err);
	if (!rc) {
		describe_coresight(f, b);
		describe_modules(f, b);
	}
	if (fclose(f) != 0 && !rc)
		rc = hwt_err_set(err, ENOMEM, "out of memory");
	if (rc) {
		free(*text);
		*text = NULL;
	}
	return rc;
}
