// SPDX-License-Identifier: BSD-2-Clause
/* test_coresight.c - what CoreSight decoding builds on: raw memory regions
 * with an instruction set, Arm instruction lengths and classes (A64, A32,
 * T32), and the strict snapshot ini reader. The decoding itself is checked
 * against OpenCSD's reference output in tests/integration/test_coresight.py.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hwt-replay.h"
#include "check.h"

struct sample {
	uint32_t word;           /* A64/A32: the word; T32: hw1 << 16 | hw2
				  * for 32-bit, the halfword for 16-bit */
	uint8_t len;
	enum hwt_insn_class cls;
	const char *what;
};

static const struct sample a64[] = {
	{ 0x94000000, 4, HWT_INSN_CALL, "bl" },
	{ 0xd63f0020, 4, HWT_INSN_CALL, "blr x1" },
	{ 0xd65f03c0, 4, HWT_INSN_RET, "ret" },
	{ 0xd69f03e0, 4, HWT_INSN_RET, "eret" },
	{ 0xd61f0040, 4, HWT_INSN_JUMP, "br x2" },
	{ 0x14000002, 4, HWT_INSN_JUMP, "b" },
	{ 0x54000040, 4, HWT_INSN_CJUMP, "b.eq" },
	{ 0xb4000040, 4, HWT_INSN_CJUMP, "cbz" },
	{ 0x36080040, 4, HWT_INSN_CJUMP, "tbz" },
	{ 0xd4000001, 4, HWT_INSN_SYSCALL, "svc" },
	{ 0x91000400, 4, HWT_INSN_OTHER, "add" },
};

static const struct sample a32[] = {
	{ 0xeb000000, 4, HWT_INSN_CALL, "bl" },
	{ 0xe12fff33, 4, HWT_INSN_CALL, "blx r3" },
	{ 0xe12fff1e, 4, HWT_INSN_RET, "bx lr" },
	{ 0xe12fff10, 4, HWT_INSN_JUMP, "bx r0" },
	{ 0xe8bd8010, 4, HWT_INSN_RET, "pop {r4, pc}" },
	{ 0xe49df004, 4, HWT_INSN_RET, "ldr pc, [sp], #4" },
	{ 0xe590f000, 4, HWT_INSN_JUMP, "ldr pc, [r0]" },
	{ 0xe1a0f00e, 4, HWT_INSN_RET, "mov pc, lr" },
	{ 0xe25ef004, 4, HWT_INSN_RET, "subs pc, lr, #4" },
	{ 0xea000000, 4, HWT_INSN_JUMP, "b" },
	{ 0x0a000000, 4, HWT_INSN_CJUMP, "beq" },
	{ 0x112fff1e, 4, HWT_INSN_CJUMP, "bxne lr" },
	{ 0xef000000, 4, HWT_INSN_SYSCALL, "svc" },
	{ 0xe1a00001, 4, HWT_INSN_OTHER, "mov r0, r1" },
	/* unknown to Capstone 4 (seen in the ETE corpus): still 4 bytes */
	{ 0xf3b76588, 4, HWT_INSN_OTHER, ".inst" },
};

static const struct sample t32[] = {
	{ 0xf000f800, 4, HWT_INSN_CALL, "bl" },
	{ 0x4798, 2, HWT_INSN_CALL, "blx r3" },
	{ 0x4770, 2, HWT_INSN_RET, "bx lr" },
	{ 0xbd10, 2, HWT_INSN_RET, "pop {r4, pc}" },
	{ 0xb100, 2, HWT_INSN_CJUMP, "cbz r0" },
	{ 0xe000, 2, HWT_INSN_JUMP, "b.n" },
	{ 0xd000, 2, HWT_INSN_CJUMP, "beq.n" },
	{ 0x2001, 2, HWT_INSN_OTHER, "movs r0, #1" },
};

/* Encode samples as they sit in memory; returns the byte count. */
static size_t encode(const struct sample *s, size_t n, bool thumb,
		     uint8_t *out)
{
	size_t at = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t w = s[i].word;

		if (thumb && s[i].len == 4) {
			out[at++] = (uint8_t)(w >> 16);
			out[at++] = (uint8_t)(w >> 24);
			out[at++] = (uint8_t)w;
			out[at++] = (uint8_t)(w >> 8);
		} else if (thumb) {
			out[at++] = (uint8_t)w;
			out[at++] = (uint8_t)(w >> 8);
		} else {
			for (int b = 0; b < 4; b++)
				out[at++] = (uint8_t)(w >> (8 * b));
		}
	}
	return at;
}

static void check_isa(const char *dir, const char *name, enum hwt_isa isa,
		      enum hwt_isa region_isa, const struct sample *s, size_t n)
{
	uint8_t buf[256];
	size_t size = encode(s, n, isa == HWT_ISA_T32, buf);
	struct hwt_image *img = NULL;
	struct hwt_err err = { 0 };
	char path[512], label[128];
	uint64_t a = 0x10000;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s.bin", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, size, f) != size || fclose(f)) {
		CHECK(name, false, "cannot write %s", path);
		return;
	}
	rc = hwt_image_new(&img, &err);
	if (!rc)
		rc = hwt_image_add_raw(img, path, 0, size, a, region_isa, &err);
	snprintf(label, sizeof(label), "%s: raw region mapped", name);
	CHECK(label, rc == 0, "%s", err.msg);
	for (size_t i = 0; !rc && i < n; i++) {
		struct hwt_insn in;
		int irc = hwt_image_insn_isa(img, a, isa, true, &in);

		snprintf(label, sizeof(label), "%s: %s", name, s[i].what);
		CHECK(label, irc == 0 && in.len == s[i].len && in.cls == s[i].cls,
		      "rc %d len %u class %s text '%s' at 0x%llx", irc, in.len,
		      hwt_insn_class_name(in.cls), in.text,
		      (unsigned long long)a);
		a += s[i].len;
	}
	hwt_image_free(img);
}

/* ---- snapshot reader ---- */

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static const char snapshot_ini[] =
	"; comment\n[snapshot]\nversion=1.0\n\n[device_list]\n"
	"device0=cpu.ini\ndevice1=etm.ini\n\n[trace]\nmetadata=trace.ini\n";
static const char cpu_ini[] =
	"[device]\nname=cpu_0\nclass=core\ntype=Cortex-A15\n\n[regs]\n"
	"R15=0x80000000\n\n[dump1]\nfile=mem.bin\naddress=0x80000000\n"
	"length=0x10\n";
static const char etm_ini[] =
	"[device]\nname=PTM_0\nclass=trace_source\ntype=PFT1.1\n\n[regs]\n"
	"ETMCR(id:0x0)=0x20000400\nETMIDR(0x079)=0x411CF312\n"
	"ETMCCER=0x34C01AC2\nETMTRACEIDR(id:0x80)=0x00000012\n";
static const char trace_ini[] =
	"[trace_buffers]\nbuffers=buffer0\n\n[buffer0]\nname=B\n"
	"file=trace.bin\nformat=source_data\n\n[source_buffers]\nPTM_0=B\n\n"
	"[core_trace_sources]\ncpu_0=PTM_0\n";

static void check_snapshot(const char *dir)
{
	struct hwt_bundle *b = NULL;
	struct hwt_err err = { 0 };
	char name[32];
	int rc;

	mkdir(dir, 0755);
	put(dir, "snapshot.ini", snapshot_ini);
	put(dir, "cpu.ini", cpu_ini);
	put(dir, "etm.ini", etm_ini);
	put(dir, "trace.ini", trace_ini);
	put(dir, "trace.bin", "\x00\x00\x00\x00");
	put(dir, "mem.bin", "0123456789abcdef0123");
	rc = hwt_bundle_read(dir, &b, &err);
	CHECK("snapshot: read", rc == 0 && b && b->nthreads == 1 &&
	      b->nsources == 1 && b->nregions == 1, "%s", err.msg);
	if (!rc) {
		const struct hwt_bundle_cs_source *s = &b->sources[0];

		CHECK("snapshot: PTM source from registers",
		      s->protocol == HWT_CS_PTM && s->trace_id == 0x12 &&
		      !s->formatted && s->regs[HWT_CS_ETMCR] == 0x20000400 &&
		      s->regs[HWT_CS_ETMCCER] == 0x34C01AC2 &&
		      s->arch == HWT_CS_ARCH_V7 && s->profile == 'A',
		      "protocol %d id 0x%x", s->protocol, s->trace_id);
		CHECK("snapshot: thread named by trace ID",
		      b->threads[0].tid == 0x12 &&
		      !strcmp(hwt_bundle_thread_name(b, 0, name, sizeof(name)),
			      "0x12"), "tid %lld", (long long)b->threads[0].tid);
		CHECK("snapshot: dump clipped to its length, A32",
		      b->regions[0].size == 0x10 &&
		      b->regions[0].address == 0x80000000 &&
		      b->regions[0].isa == HWT_ISA_A32 && !b->regions[0].missing,
		      "size %llu", (unsigned long long)b->regions[0].size);
	}
	hwt_bundle_free(b);
	b = NULL;
	put(dir, "etm.ini", "[device]\nname=PTM_0\nclass=trace_source\n"
	    "type=PFT1.1\n[regs]\nthis line is wrong\n");
	rc = hwt_bundle_read(dir, &b, &err);
	CHECK("snapshot: malformed line names file and line",
	      rc == -EINVAL && strstr(err.msg, "etm.ini:6:"), "rc %d: %s", rc,
	      err.msg);
	hwt_bundle_free(b);
	b = NULL;
	put(dir, "etm.ini", etm_ini);
	put(dir, "trace.ini", "[trace_buffers]\nbuffers=buffer0\n[buffer0\n");
	rc = hwt_bundle_read(dir, &b, &err);
	CHECK("snapshot: broken section header",
	      rc == -EINVAL && strstr(err.msg, "trace.ini:3:"), "rc %d: %s", rc,
	      err.msg);
	hwt_bundle_free(b);
}

int main(void)
{
	char dir[] = "/tmp/hwt-cs-unit-XXXXXX", snap[600], cmd[700];

	if (!mkdtemp(dir)) {
		CHECK("temporary directory", false, "mkdtemp failed");
		return check_exit();
	}
	check_isa(dir, "a64", HWT_ISA_A64, HWT_ISA_A64, a64,
		  sizeof(a64) / sizeof(a64[0]));
	check_isa(dir, "a32", HWT_ISA_A32, HWT_ISA_A32, a32,
		  sizeof(a32) / sizeof(a32[0]));
	/* Thumb code in an A32 region: the item's ISA wins. */
	check_isa(dir, "t32", HWT_ISA_T32, HWT_ISA_A32, t32,
		  sizeof(t32) / sizeof(t32[0]));
	/* DEFAULT means the region's own instruction set. */
	check_isa(dir, "a64-default", HWT_ISA_DEFAULT, HWT_ISA_A64, a64,
		  sizeof(a64) / sizeof(a64[0]));
	snprintf(snap, sizeof(snap), "%s/snap", dir);
	check_snapshot(snap);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		CHECK("cleanup", false, "%s failed", cmd);
	return check_exit();
}
