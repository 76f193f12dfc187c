// SPDX-License-Identifier: BSD-2-Clause
/* insn.c - instruction length, class, direct target and text at an
 * address of the image: x86 through Zydis (x86.c), Arm through Capstone
 * (arm.c).
 *
 * Decoders ask for the length of every instruction they walk, so what
 * the bytes say is cached per address in a direct-mapped table: a hot
 * loop costs one decode per distinct address. Text is rare (listings)
 * and is produced on demand, never cached.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "replay-int.h"

static const char *const class_names[] = {
	[HWT_INSN_OTHER] = "other",
	[HWT_INSN_CALL] = "call",
	[HWT_INSN_RET] = "return",
	[HWT_INSN_JUMP] = "jump",
	[HWT_INSN_CJUMP] = "cond-jump",
	[HWT_INSN_SYSCALL] = "syscall",
};

const char *hwt_insn_class_name(enum hwt_insn_class cls)
{
	if ((unsigned)cls < sizeof(class_names) / sizeof(class_names[0]))
		return class_names[cls];
	return "unknown";
}

static bool is_x86(enum hwt_isa isa)
{
	return isa == HWT_ISA_X86_64 || isa == HWT_ISA_X86_32;
}

#define HUGE_PAGE ((size_t)2 << 20)
#define ICACHE_BYTES ((HWT_ICACHE_SIZE * sizeof(struct hwt_insn_slot) + \
		       HUGE_PAGE - 1) & ~(HUGE_PAGE - 1))

/* The cache in one huge page where the kernel gives one: its slots are
 * touched all over (that is what hashing is for), and page by page that
 * is a fault per 4 KiB, 2.5 ms for a newest view on a virtual machine.
 * Mapped, not allocated: the kernel's pages come zeroed, so it is
 * cleared once, not twice. */
static struct hwt_insn_slot *icache_new(void)
{
	uint8_t *p = mmap(NULL, ICACHE_BYTES + HUGE_PAGE,
			  PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	uintptr_t at;

	if (p == MAP_FAILED)
		return NULL;
	/* Cut to a huge page's alignment. */
	at = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	if (at > (uintptr_t)p)
		munmap(p, at - (uintptr_t)p);
	if ((uintptr_t)p + HUGE_PAGE > at)
		munmap((uint8_t *)at + ICACHE_BYTES,
		       (uintptr_t)p + HUGE_PAGE - at);
	madvise((void *)at, ICACHE_BYTES, MADV_HUGEPAGE);
	return (struct hwt_insn_slot *)at;
}

static void icache_free(struct hwt_insn_slot *c)
{
	if (c)
		munmap(c, ICACHE_BYTES);
}

void hwt_insn_fini(struct hwt_image *img)
{
	hwt_arm_fini(&img->arm);
	icache_free(img->icache);
	img->icache = NULL;
}

/* The instruction set addr is read in: isa, else its span's. */
static enum hwt_isa resolve_isa(struct hwt_image *img, uint64_t addr,
				enum hwt_isa isa)
{
	const struct hwt_span *s;

	if (isa > HWT_ISA_DEFAULT && isa <= HWT_ISA_X86_32)
		return isa;
	s = hwt_image_span(img, addr);
	return s && s->isa > HWT_ISA_DEFAULT && s->isa <= HWT_ISA_X86_32 ?
		s->isa : HWT_ISA_X86_64;
}

/* Decode the bytes at addr as isa (resolved). 0, -ENOENT (no code),
 * -EILSEQ (not an instruction) or -ENOMEM. */
static int decode(struct hwt_image *img, uint64_t addr, enum hwt_isa isa,
		  struct hwt_insn_info *out)
{
	uint8_t buf[HWT_MAX_INSN];
	size_t n = hwt_image_read(img, addr, buf, sizeof(buf));
	struct hwt_x86_insn x;
	struct hwt_arm_insn a;
	int rc;

	memset(out, 0, sizeof(*out));
	if (n == 0)
		return -ENOENT;
	if (!is_x86(isa)) {
		rc = hwt_arm_decode(&img->arm, isa, buf, n, addr, &a);
		if (!rc) {
			out->len = a.len;
			out->cls = a.cls;
		}
		return rc;
	}
	rc = hwt_x86_decode(&img->x86, isa == HWT_ISA_X86_32, buf, n, addr, &x);
	if (!rc)
		*out = (struct hwt_insn_info){
			.target = x.target, .len = x.len, .cls = x.cls,
			.direct = x.direct, .rep_string = x.rep_string,
		};
	return rc;
}

static size_t slot_of(uint64_t addr)
{
	/* Fibonacci hashing: instruction addresses are dense and would
	 * otherwise crowd into neighbouring slots by their low bits. */
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 49) &
		(HWT_ICACHE_SIZE - 1);
}


int hwt_image_insn_detail(struct hwt_image *img, uint64_t addr,
			  enum hwt_isa isa, struct hwt_insn_info *out)
{
	struct hwt_insn_slot *s;
	int rc;

	if (!img->icache && !(img->icache = icache_new()))
		return -ENOMEM;
	/* Keyed by the isa asked for, so that the common DEFAULT lookup
	 * costs no span search on a hit; the image clears the cache when
	 * what DEFAULT means at an address changes. */
	s = &img->icache[slot_of(addr)];
	if (!s->used || s->addr != addr || s->isa != isa) {
		rc = decode(img, addr, resolve_isa(img, addr, isa), &s->info);
		if (rc == -ENOMEM)
			return rc;
		s->used = true;
		s->addr = addr;
		s->isa = (uint8_t)isa;
		s->rc = (int8_t)rc;
		img->icache_filled = true;
	}
	*out = s->info;
	return s->rc;
}

int hwt_image_insn_info_isa(struct hwt_image *img, uint64_t addr,
			    enum hwt_isa isa, uint8_t *len,
			    enum hwt_insn_class *cls)
{
	struct hwt_insn_info info;
	int rc = hwt_image_insn_detail(img, addr, isa, &info);

	*len = info.len;
	*cls = (enum hwt_insn_class)info.cls;
	return rc;
}

int hwt_image_insn_info(struct hwt_image *img, uint64_t addr, uint8_t *len,
			enum hwt_insn_class *cls)
{
	return hwt_image_insn_info_isa(img, addr, HWT_ISA_DEFAULT, len, cls);
}

/* "undecodable: 62 f2 7d ..." with the bytes that are there, so that a
 * listing never hides code it has but cannot read. */
static void undecodable_text(struct hwt_image *img, uint64_t addr, char *text,
			     size_t size)
{
	uint8_t buf[HWT_MAX_INSN];
	size_t n = hwt_image_read(img, addr, buf, sizeof(buf)), len;

	len = (size_t)snprintf(text, size, "undecodable:");
	for (size_t i = 0; i < n && len + 4 < size; i++)
		len += (size_t)snprintf(text + len, size - len, " %02x", buf[i]);
}

int hwt_image_insn_isa(struct hwt_image *img, uint64_t addr, enum hwt_isa isa,
		       bool want_text, struct hwt_insn *out)
{
	uint8_t buf[HWT_MAX_INSN];
	size_t n;
	int rc;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	rc = hwt_image_insn_info_isa(img, addr, isa, &out->len, &out->cls);
	if (rc == -EILSEQ && want_text)
		undecodable_text(img, addr, out->text, sizeof(out->text));
	if (rc || !want_text)
		return rc;
	isa = resolve_isa(img, addr, isa);
	n = hwt_image_read(img, addr, buf, sizeof(buf));
	return is_x86(isa) ?
		hwt_x86_text(&img->x86, isa == HWT_ISA_X86_32, buf, n, addr,
			     out->text, sizeof(out->text)) :
		hwt_arm_text(&img->arm, isa, buf, n, addr, out->text,
			     sizeof(out->text));
}

int hwt_image_insn(struct hwt_image *img, uint64_t addr, bool want_text,
		   struct hwt_insn *out)
{
	return hwt_image_insn_isa(img, addr, HWT_ISA_DEFAULT, want_text, out);
}
