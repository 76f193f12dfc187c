// SPDX-License-Identifier: BSD-2-Clause
/* test_vexflags.c - the flags collect/valgrind/vexflags.c computes from
 * Valgrind's amd64 flags thunk: the op numbers, a few cases worked by
 * hand from the Intel SDM, ops Valgrind does not have refused, and every
 * op Valgrind
 * 3.19 has against Valgrind's own amd64g_calculate_rflags_all on edge
 * and pseudo-random operands, the six flag bits compared.
 *
 * Valgrind's function comes from the libvex archive of Debian's valgrind
 * package, linked into this test binary only (it is GPL; the library
 * must not need it). The Makefile defines HWT_VEX_ORACLE when it found
 * the archive; without it the comparison is a SKIP with the reason. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "valgrind/vexflags.h"

#ifdef HWT_VEX_ORACLE
/* VEX/priv/guest_amd64_helpers.c; its ULong is unsigned long long. */
unsigned long long amd64g_calculate_rflags_all(unsigned long long cc_op,
					       unsigned long long cc_dep1,
					       unsigned long long cc_dep2,
					       unsigned long long cc_ndep);
#endif

/* Enough to say which op a failure is about. */
static void op_name(uint64_t op, char *buf, size_t size)
{
	static const char *const sized[] = {
		"ADD", "SUB", "ADC", "SBB", "LOGIC", "INC", "DEC", "SHL",
		"SHR", "ROL", "ROR", "UMUL", "SMUL",
	};
	static const char *const pairs[] = {
		"ANDN", "BLSI", "BLSMSK", "BLSR", "ADCX", "ADOX",
	};

	if (op == HWT_VEX_CC_COPY)
		snprintf(buf, size, "COPY");
	else if (op < HWT_VEX_CC_ANDN)
		snprintf(buf, size, "%s%c", sized[(op - 1) / 4],
			 "BWLQ"[(op - 1) % 4]);
	else if (op < HWT_VEX_CC_NUMBER)
		snprintf(buf, size, "%s%u", pairs[(op - HWT_VEX_CC_ANDN) / 2],
			 32u << (op - HWT_VEX_CC_ANDN) % 2);
	else
		snprintf(buf, size, "op %" PRIu64, op);
}

struct known {
	uint64_t op, dep1, dep2, ndep, flags;
};

#define B 0
#define W 1
#define L 2
#define Q 3
#define F(x) HWT_VEX_##x

/* Worked from the SDM's definitions, the thunk filled in as Valgrind's
 * cpu fills it (vexflags.h); undefined flags as Valgrind gives them. */
static const struct known known[] = {
	/* 0xff + 1 = 0x100: the carry out of bit 7 and bit 3, result 0. */
	{ HWT_VEX_CC_ADD + B, 0xff, 1, 0, F(CF) | F(AF) | F(ZF) | F(PF) },
	/* 0x7f + 1 = 0x80: two positives give a negative; one bit set. */
	{ HWT_VEX_CC_ADD + B, 0x7f, 1, 0, F(OF) | F(SF) | F(AF) },
	/* Only the low 16 bits count. */
	{ HWT_VEX_CC_ADD + W, 0x1234ffff, 0xabcd0001, 0,
	  F(CF) | F(AF) | F(ZF) | F(PF) },
	/* 0 - 1: borrows out of every bit; 0xff has eight bits set. */
	{ HWT_VEX_CC_SUB + L, 0, 1, 0, F(CF) | F(SF) | F(AF) | F(PF) },
	/* INT64_MIN - 1 = INT64_MAX: signed overflow, no unsigned borrow. */
	{ HWT_VEX_CC_SUB + Q, 0x8000000000000000, 1, 0,
	  F(OF) | F(AF) | F(PF) },
	{ HWT_VEX_CC_SUB + Q, 5, 5, 0, F(ZF) | F(PF) },
	/* UINT64_MAX + 0 + carry 1: DEP2 is 0 ^ 1. */
	{ HWT_VEX_CC_ADC + Q, UINT64_MAX, 1, 1,
	  F(CF) | F(AF) | F(ZF) | F(PF) },
	/* 1 + 1 + carry 0: no carry anywhere, 2 has one bit set. */
	{ HWT_VEX_CC_ADC + B, 1, 1, 0, 0 },
	/* 0 - 0 - borrow 1 = 0xff. */
	{ HWT_VEX_CC_SBB + B, 0, 1, 1, F(CF) | F(SF) | F(AF) | F(PF) },
	/* 0x80 - 0x7f - borrow 1 = 0: -128 - 127 - 1 overflows. */
	{ HWT_VEX_CC_SBB + B, 0x80, 0x7e, 1,
	  F(OF) | F(ZF) | F(PF) | F(AF) },
	{ HWT_VEX_CC_LOGIC + L, 0x80000003, 0, 0, F(SF) | F(PF) },
	{ HWT_VEX_CC_LOGIC + B, 0x100, 0, 0, F(ZF) | F(PF) },
	/* INC to 0x80 overflows; CF stays what it was. */
	{ HWT_VEX_CC_INC + B, 0x80, 0, 1, F(OF) | F(SF) | F(AF) | F(CF) },
	{ HWT_VEX_CC_INC + Q, 0, 0, 0, F(ZF) | F(PF) | F(AF) },
	/* DEC from 0x8000 to 0x7fff overflows. */
	{ HWT_VEX_CC_DEC + W, 0x7fff, 0, 0, F(OF) | F(AF) | F(PF) },
	/* 0x81 << 1: result 0x02, the top bit went out to CF; OF as the
	 * result's top bit is not CF. */
	{ HWT_VEX_CC_SHL + B, 0x02, 0x81, 0, F(CF) | F(OF) },
	/* 0x81 >> 1 (SHR): 0x40, bit 0 to CF, OF the operand's top bit. */
	{ HWT_VEX_CC_SHR + B, 0x40, 0x81, 0, F(CF) | F(OF) },
	/* SAR of 0x81 by 1: 0xc0, OF clear. */
	{ HWT_VEX_CC_SHR + B, 0xc0, 0x81, 0, F(CF) | F(SF) | F(PF) },
	/* 0x81 rol 1 = 0x03: CF bit 0, OF top XOR CF; ZF, PF kept. */
	{ HWT_VEX_CC_ROL + B, 0x03, 0, F(ZF) | F(PF),
	  F(CF) | F(OF) | F(ZF) | F(PF) },
	/* 0x81 ror 1 = 0xc0: CF the top bit, OF the top two XOR'd. */
	{ HWT_VEX_CC_ROR + B, 0xc0, 0, F(OF) | F(SF), F(CF) | F(SF) },
	/* UINT64_MAX * 2: the high half is 1. */
	{ HWT_VEX_CC_UMUL + Q, UINT64_MAX, 2, 0, F(CF) | F(OF) | F(SF) },
	{ HWT_VEX_CC_UMUL + L, 0x10000, 0xffff, 0, F(SF) | F(PF) },
	/* -128 * -1 = 128 does not fit in a signed byte. */
	{ HWT_VEX_CC_SMUL + B, 0x80, 0xff, 0, F(CF) | F(OF) | F(SF) },
	/* -1 * -1 = 1 fits. */
	{ HWT_VEX_CC_SMUL + Q, UINT64_MAX, UINT64_MAX, 0, 0 },
	/* INT64_MIN * 1 fits, INT64_MIN * -1 does not. */
	{ HWT_VEX_CC_SMUL + Q, 0x8000000000000000, 1, 0, F(SF) | F(PF) },
	{ HWT_VEX_CC_SMUL + Q, 0x8000000000000000, UINT64_MAX, 0,
	  F(CF) | F(OF) | F(SF) | F(PF) },
	{ HWT_VEX_CC_ANDN + 1, 0, 0, 0, F(ZF) },
	/* BLSI of 0: result 0, CF clear as the source was zero. */
	{ HWT_VEX_CC_BLSI + 1, 0, 0, 0, F(ZF) },
	{ HWT_VEX_CC_BLSI + 0, 0x80000000, 0x80000000, 0, F(SF) | F(CF) },
	/* BLSMSK of 0: all ones, CF as the source was zero. */
	{ HWT_VEX_CC_BLSMSK + 0, 0xffffffff, 0, 0, F(SF) | F(CF) },
	/* BLSR of INT64_MIN's bits: 0. */
	{ HWT_VEX_CC_BLSR + 1, 0, 0x8000000000000000, 0, F(ZF) },
	/* ADCX: 1 + 0 + carry 1 = 2, no carry out; the rest kept. */
	{ HWT_VEX_CC_ADCX + 1, 1, 1, F(CF) | F(ZF), F(ZF) },
	/* ADOX (32 bits): 0xffffffff + 0 + OF 1 carries out into OF. */
	{ HWT_VEX_CC_ADOX + 0, 0x1ffffffff, 1, F(OF) | F(SF),
	  F(OF) | F(SF) },
	{ HWT_VEX_CC_COPY, UINT64_MAX, 0, 0, HWT_VEX_FLAGS },
};

static void test_known(void)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		const struct known *k = &known[i];
		uint64_t got = ~0ull;
		bool ok = hwt_vex_flags(k->op, k->dep1, k->dep2, k->ndep, &got);
		char name[32], what[96];

		op_name(k->op, name, sizeof(name));
		snprintf(what, sizeof(what), "known %zu: %s 0x%" PRIx64
			 " 0x%" PRIx64 " 0x%" PRIx64, i, name, k->dep1,
			 k->dep2, k->ndep);
		CHECK(what, ok && got == k->flags,
		      "%s: flags 0x%" PRIx64 ", expected 0x%" PRIx64,
		      ok ? "known" : "refused", got, k->flags);
	}
}

/* The numbers are Valgrind 3.19's (its enum in VEX/priv/
 * guest_amd64_defs.h, the VALGRIND_3_19_0 tag), written out here so a
 * build without Valgrind's archive still sees them change. */
static void test_op_numbers(void)
{
	static const struct {
		const char *name;
		unsigned ours, valgrind;
	} ops[] = {
		{ "ADD", HWT_VEX_CC_ADD, 1 },
		{ "SUB", HWT_VEX_CC_SUB, 5 },
		{ "ADC", HWT_VEX_CC_ADC, 9 },
		{ "SBB", HWT_VEX_CC_SBB, 13 },
		{ "LOGIC", HWT_VEX_CC_LOGIC, 17 },
		{ "INC", HWT_VEX_CC_INC, 21 },
		{ "DEC", HWT_VEX_CC_DEC, 25 },
		{ "SHL", HWT_VEX_CC_SHL, 29 },
		{ "SHR", HWT_VEX_CC_SHR, 33 },
		{ "ROL", HWT_VEX_CC_ROL, 37 },
		{ "ROR", HWT_VEX_CC_ROR, 41 },
		{ "UMUL", HWT_VEX_CC_UMUL, 45 },
		{ "SMUL", HWT_VEX_CC_SMUL, 49 },
		{ "ANDN", HWT_VEX_CC_ANDN, 53 },
		{ "BLSI", HWT_VEX_CC_BLSI, 55 },
		{ "BLSMSK", HWT_VEX_CC_BLSMSK, 57 },
		{ "BLSR", HWT_VEX_CC_BLSR, 59 },
		{ "ADCX", HWT_VEX_CC_ADCX, 61 },
		{ "ADOX", HWT_VEX_CC_ADOX, 63 },
		{ "NUMBER", HWT_VEX_CC_NUMBER, 65 },
	};
	const char *bad = NULL;

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (ops[i].ours != ops[i].valgrind)
			bad = ops[i].name;
	CHECK("op numbers are Valgrind 3.19's", !bad, "%s is not", bad);
}

/* Ops past Valgrind 3.19's last are refused, and the flags left alone. */
static void test_unknown_ops(void)
{
	static const uint64_t ops[] = {
		HWT_VEX_CC_NUMBER, HWT_VEX_CC_NUMBER + 1, 100, 1ull << 32,
		UINT64_MAX,
	};
	bool all = true;
	uint64_t bad = 0;

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		uint64_t f = 0x1234;

		if (hwt_vex_flags(ops[i], 1, 2, 3, &f) || f != 0x1234) {
			all = false;
			bad = ops[i];
		}
	}
	CHECK("unknown ops are refused", all, "op %" PRIu64 " was not", bad);
}

#ifdef HWT_VEX_ORACLE

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* splitmix64: the same sequence on every run. */
static uint64_t rng(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static const uint64_t edges[] = {
	0, 1, 2, 0xf, 0x10, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff,
	0x7fffffff, 0x80000000, 0xffffffff, 0x100000000,
	0x7fffffffffffffff, 0x8000000000000000, UINT64_MAX,
};
#define NEDGES (sizeof(edges) / sizeof(edges[0]))

/* Carries and old flags: each flag alone and together, and bits that
 * are no flag. */
static const uint64_t ndeps[] = {
	0, 1, HWT_VEX_OF, HWT_VEX_OF | HWT_VEX_CF, HWT_VEX_FLAGS,
	HWT_VEX_FLAGS & ~HWT_VEX_CF, HWT_VEX_ZF | HWT_VEX_PF, UINT64_MAX,
};
#define NNDEPS (sizeof(ndeps) / sizeof(ndeps[0]))

/* An operand: any 64 bits, or a value of 8, 16 or 32 bits, or an edge,
 * or one next to an edge. */
static uint64_t operand(void)
{
	static const uint64_t narrow[] = { 0xff, 0xffff, 0xffffffff };
	uint64_t r = rng();

	switch (r & 3) {
	case 0:
		return rng();
	case 1:
		return rng() & narrow[(r >> 2) % 3];
	case 2:
		return edges[(r >> 2) % NEDGES];
	default:
		return edges[(r >> 2) % NEDGES] + ((r >> 8) % 5) - 2;
	}
}

static uint64_t some_ndep(void)
{
	uint64_t r = rng();

	switch (r & 3) {
	case 0:
		return rng();
	case 1:
		return rng() & HWT_VEX_FLAGS;
	default:
		return (r >> 2) & 1;
	}
}

struct tally {
	unsigned long n, bad;
	uint64_t dep1, dep2, ndep, ours, theirs;  /* the first mismatch */
	bool refused, extra_bits;
};

static void compare(struct tally *t, uint64_t op, uint64_t dep1,
		    uint64_t dep2, uint64_t ndep)
{
	uint64_t ours = ~0ull, theirs;
	bool ok = hwt_vex_flags(op, dep1, dep2, ndep, &ours);

	theirs = amd64g_calculate_rflags_all(op, dep1, dep2, ndep) &
		 HWT_VEX_FLAGS;
	t->n++;
	if (ok && ours == theirs)
		return;
	if (!t->bad++) {
		t->dep1 = dep1;
		t->dep2 = dep2;
		t->ndep = ndep;
		t->ours = ours;
		t->theirs = theirs;
		t->refused = !ok;
		t->extra_bits = ok && (ours & ~HWT_VEX_FLAGS);
	}
}

/* The hand-worked cases are what Valgrind says too. */
static void test_known_by_valgrind(void)
{
	bool all = true;
	size_t bad = 0;

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		const struct known *k = &known[i];

		if ((amd64g_calculate_rflags_all(k->op, k->dep1, k->dep2,
						 k->ndep) & HWT_VEX_FLAGS) !=
		    k->flags) {
			all = false;
			bad = i;
		}
	}
	CHECK("Valgrind agrees with the known cases", all,
	      "it does not with known %zu", bad);
}

/* Every op Valgrind 3.19 has: each pair of edges with each NDEP, then
 * 4000 pseudo-random thunks. */
static void test_against_valgrind(void)
{
	test_known_by_valgrind();
	for (uint64_t op = 0; op < HWT_VEX_CC_NUMBER; op++) {
		struct tally t = { 0 };
		char name[32], what[96];

		for (size_t i = 0; i < NEDGES; i++)
			for (size_t j = 0; j < NEDGES; j++)
				for (size_t k = 0; k < NNDEPS; k++)
					compare(&t, op, edges[i], edges[j],
						ndeps[k]);
		for (int i = 0; i < 4000; i++) {
			uint64_t dep1 = operand(), dep2 = operand();

			compare(&t, op, dep1, dep2, some_ndep());
		}
		op_name(op, name, sizeof(name));
		snprintf(what, sizeof(what), "%s (op %" PRIu64 ") as Valgrind's "
			 "amd64g_calculate_rflags_all", name, op);
		CHECK(what, !t.bad,
		      "%lu of %lu differ; first: dep1 0x%" PRIx64 " dep2 0x%"
		      PRIx64 " ndep 0x%" PRIx64 ": 0x%" PRIx64 "%s, Valgrind 0x%"
		      PRIx64, t.bad, t.n, t.dep1, t.dep2, t.ndep, t.ours,
		      t.refused ? " (refused)" :
		      t.extra_bits ? " (bits that are no flag)" : "",
		      t.theirs);
	}
}

#else

static void test_against_valgrind(void)
{
	printf("SKIP vexflags against Valgrind: this test was built without "
	       "Valgrind's libvex-amd64-linux.a (Debian package valgrind; "
	       "pkg-config valgrind names its directory)\n");
}

#endif

int main(void)
{
	RUN(test_op_numbers);
	RUN(test_known);
	RUN(test_unknown_ops);
	RUN(test_against_valgrind);
	return check_exit();
}
