/* info.c - `hwtrace info`: what a bundle holds. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hwt-replay.h"

static const char info_usage[] =
	"usage: hwtrace info PATH\n"
	"\n"
	"Show a bundle's format, cpu, how the program ended, each thread's\n"
	"recorded and lost instructions, its modules and its core.\n";

static void print_stop(const struct hwt_bundle *b)
{
	switch (b->stop_reason) {
	case HWT_STOP_EXITED:
		printf("stop:    exited with status %d\n", b->stop_status);
		break;
	case HWT_STOP_SIGNALED:
		printf("stop:    killed by signal %d (%s)\n", b->stop_signal,
		       strsignal(b->stop_signal));
		break;
	case HWT_STOP_FAULT:
		printf("stop:    signal %d (%s) in thread %" PRId64
		       " at 0x%" PRIx64 "\n", b->stop_signal,
		       strsignal(b->stop_signal), b->stop_tid, b->stop_pc);
		break;
	case HWT_STOP_NONE:
		/* Hardware captures (CoreSight snapshots) name no process:
		 * the trace simply ends where capture stopped. */
		printf("stop:    %s\n", b->pid > 0 ?
		       "still running when saved" :
		       "not recorded (the trace ends where capture stopped)");
		break;
	}
}

/* CoreSight snapshots: each trace source and memory dump. */
static void print_coresight(const struct hwt_bundle *b)
{
	static const char *const proto[] = {
		[HWT_CS_UNKNOWN] = "unknown", [HWT_CS_ETMV3] = "ETMv3",
		[HWT_CS_PTM] = "PTM", [HWT_CS_ETMV4] = "ETMv4",
		[HWT_CS_ETE] = "ETE", [HWT_CS_STM] = "STM",
	};

	if (!b->nsources && !b->nregions)
		return;
	printf("sources: %zu\n", b->nsources);
	for (size_t i = 0; i < b->nsources; i++) {
		const struct hwt_bundle_cs_source *s = &b->sources[i];

		printf("  %s: %s", s->name, proto[s->protocol]);
		if (i < b->nthreads)
			printf(" trace ID 0x%x, %s buffer %s", s->trace_id,
			       s->formatted ? "formatted" : "raw",
			       b->threads[i].trace_file);
		else
			printf(" (no instruction trace)");
		printf("%s%s\n", s->core ? " tracing " : "",
		       s->core ? s->core : "");
	}
	printf("memory:  %zu dumps\n", b->nregions);
	for (size_t i = 0; i < b->nregions; i++) {
		const struct hwt_bundle_region *r = &b->regions[i];

		printf("  0x%012" PRIx64 " %8" PRIu64 " bytes %s%s\n",
		       r->address, r->size, r->file,
		       r->missing ? " (file missing: reads as unmapped)" : "");
	}
}

int cmd_info(int argc, char **argv)
{
	struct hwt_bundle *b = NULL;
	struct hwt_image *img = NULL;
	struct hwt_err err = { 0 };
	int rc;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(info_usage, stdout);
		return 0;
	}
	if (argc != 2)
		return cli_usage_error("info", "expected exactly one bundle");
	if ((rc = hwt_bundle_read(argv[1], &b, &err)) ||
	    (rc = hwt_image_new(&img, &err)) ||
	    (rc = hwt_image_add_bundle(img, b, &err)))
		goto out;
	printf("bundle:  %s\n", b->dir);
	printf("format:  %s\n", b->type);
	/* CoreSight snapshots name cores per source (below), not a cpu. */
	if (b->cpu.vendor[0])
		printf("cpu:     %s family %d model %d stepping %d\n",
		       b->cpu.vendor, b->cpu.family, b->cpu.model,
		       b->cpu.stepping);
	if (b->pid > 0)
		printf("process: %" PRId64 "\n", b->pid);
	else
		printf("process: unknown (the bundle names none)\n");
	print_stop(b);
	if (b->stop_reason == HWT_STOP_FAULT) {
		struct hwt_symbol sym;

		if (hwt_image_symbolize(img, b->stop_pc, &sym) == 0 &&
		    sym.function) {
			printf("         in %s", sym.function);
			if (sym.file)
				printf(" at %s:%d", sym.file, sym.line);
			putchar('\n');
		}
	}
	printf("core:    %s\n", b->core ? b->core : "(none)");
	printf("threads: %zu\n", b->nthreads);
	for (size_t i = 0; i < b->nthreads; i++) {
		const struct hwt_bundle_thread *t = &b->threads[i];
		struct hwt_history *h;
		char name[32];

		if ((rc = hwt_history_open(b, i, img, &h, &err)))
			goto out;
		printf("  thread %s: %" PRIu64 " items in history, ",
		       hwt_bundle_thread_name(b, i, name, sizeof(name)),
		       hwt_history_count(h));
		/* Only recorders that count instructions (hwt-sw, BTS) fill
		 * these; hardware traces say nothing about what they lost. */
		if (t->insn_total || t->lost_insns || t->lost_bytes)
			printf("%" PRIu64 " instructions recorded, %" PRIu64
			       " lost (%" PRIu64 " bytes), ", t->insn_total,
			       t->lost_insns, t->lost_bytes);
		printf("trace %" PRIu64 " bytes\n", t->trace_size);
		hwt_history_free(h);
	}
	print_coresight(b);
	printf("modules: %zu\n", b->nmodules);
	for (size_t i = 0; i < b->nmodules; i++) {
		const struct hwt_bundle_module *m = &b->modules[i];

		printf("  0x%012" PRIx64 " %s%s%s\n", m->load_address,
		       m->system_path, m->uuid ? " build-id " : "",
		       m->uuid ? m->uuid : "");
	}
out:
	hwt_image_free(img);
	hwt_bundle_free(b);
	return rc ? cli_fail(&err) : 0;
}
