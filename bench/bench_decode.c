// SPDX-License-Identifier: BSD-2-Clause
/* bench_decode.c - x86 decode throughput: replay's decoder (Zydis) against
 * Capstone over the same bytes, in the same run.
 *
 * Both sweep the executable sections of an ELF file (default: libc) the
 * way a linear disassembler does: at each address decode one instruction
 * and move on by its length, one byte where the bytes do not decode.
 * Capstone runs as replay used it before (x86-64, detail on, which the
 * classification needs). Reports instructions per second for length and
 * class, and for text, and how many addresses each could not decode.
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <capstone/capstone.h>

#include "x86.h"

struct text {
	uint8_t *bytes;
	uint64_t addr;
	size_t size;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The executable sections of path, concatenated in file order. */
static int load_text(const char *path, struct text **out, size_t *n)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE ||
	    !(e = elf_begin(fd, ELF_C_READ, NULL)))
		return -1;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) ||
		    !(d = elf_getdata(scn, NULL)) || !d->d_size)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 8;
			*out = realloc(*out, cap * sizeof(**out));
		}
		(*out)[*n].bytes = malloc(d->d_size);
		memcpy((*out)[*n].bytes, d->d_buf, d->d_size);
		(*out)[*n].size = d->d_size;
		(*out)[*n].addr = sh.sh_addr;
		(*n)++;
	}
	elf_end(e);
	close(fd);
	return *n ? 0 : -1;
}

struct sweep {
	unsigned long insns, bad;
	double secs;
};

static void sweep_zydis(const struct hwt_x86 *x, const struct text *t,
			size_t n, bool text, struct sweep *s)
{
	double t0 = now();
	char buf[128];

	*s = (struct sweep){ 0 };
	for (size_t k = 0; k < n; k++)
		for (size_t off = 0; off < t[k].size;) {
			struct hwt_x86_insn in;
			const uint8_t *p = t[k].bytes + off;
			size_t left = t[k].size - off;
			uint64_t a = t[k].addr + off;

			if (hwt_x86_decode(x, false, p, left, a, &in)) {
				s->bad++;
				off++;
				continue;
			}
			if (text)
				hwt_x86_text(x, false, p, left, a, buf,
					     sizeof(buf));
			s->insns++;
			off += in.len;
		}
	s->secs = now() - t0;
}

static void sweep_capstone(csh cs, cs_insn *ci, const struct text *t,
			   size_t n, struct sweep *s)
{
	double t0 = now();

	*s = (struct sweep){ 0 };
	for (size_t k = 0; k < n; k++)
		for (size_t off = 0; off < t[k].size;) {
			const uint8_t *p = t[k].bytes + off;
			size_t left = t[k].size - off;
			uint64_t a = t[k].addr + off;

			if (!cs_disasm_iter(cs, &p, &left, &a, ci)) {
				s->bad++;
				off++;
				continue;
			}
			s->insns++;
			off += ci->size;
		}
	s->secs = now() - t0;
}

static void report(const char *what, const struct sweep *s)
{
	printf("decode: %-34s %8lu insns in %6.3f s = %6.2f M insns/s, "
	       "%lu addresses undecodable\n", what, s->insns, s->secs,
	       (double)s->insns / s->secs / 1e6, s->bad);
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] :
		"/usr/lib/x86_64-linux-gnu/libc.so.6";
	struct text *t;
	struct hwt_x86 x;
	struct sweep zl, zt, cl, ct;
	size_t n;
	csh cs;
	cs_insn *ci;

	if (load_text(path, &t, &n) || hwt_x86_init(&x) ||
	    cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK ||
	    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK ||
	    !(ci = cs_malloc(cs))) {
		fprintf(stderr, "bench_decode: cannot read %s or set up the "
			"decoders\n", path);
		return 1;
	}
	printf("decode: linear sweep of the executable sections of %s\n", path);
	sweep_capstone(cs, ci, t, n, &cl);
	sweep_zydis(&x, t, n, false, &zl);
	report("Capstone 4 (length, class)", &cl);
	report("Zydis via replay/x86.c (length, class)", &zl);
	/* Capstone's text comes with every decode; replay's is formatted
	 * only when a listing asks. */
	cs_option(cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
	sweep_capstone(cs, ci, t, n, &ct);
	sweep_zydis(&x, t, n, true, &zt);
	report("Capstone 4 (AT&T text)", &ct);
	report("Zydis via replay/x86.c (GDB text)", &zt);
	printf("decode: ratio Zydis / Capstone = %.2fx for length and class, "
	       "%.2fx for text\n",
	       ((double)zl.insns / zl.secs) / ((double)cl.insns / cl.secs),
	       ((double)zt.insns / zt.secs) / ((double)ct.insns / ct.secs));
	cs_free(ci, 1);
	cs_close(&cs);
	for (size_t k = 0; k < n; k++)
		free(t[k].bytes);
	free(t);
	return 0;
}
