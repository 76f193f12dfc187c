/* SPDX-License-Identifier: BSD-2-Clause */
/* vgdata_sample.h - data history files of the Valgrind tool
 * (collect/valgrind/vgdata.h) made as the tool lays them out, for the
 * unit test and as the fuzz target's seeds: one thread (TID) runs a
 * translation of two instructions twice, a system call between the
 * runs. */
#ifndef HWT_VGDATA_SAMPLE_H
#define HWT_VGDATA_SAMPLE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "hwt-common.h"
#include "valgrind/vgdata.h"

#define TID 100
#define PC0 0x1000u                /* a 3-byte register write */
#define PC1 0x1003u                /* a 4-byte store */
#define ADDR 0x5000u

#define LAY_MAX 4096u
#define RING_MAX (1u << 16)

struct file {
	uint8_t lay[LAY_MAX];
	size_t nlay;
	uint8_t ring[RING_MAX];
	size_t nring;
	uint8_t out[24 + LAY_MAX + RING_MAX];
	size_t nout;
};

static inline void lu(struct file *f, uint64_t v)
{
	f->nlay += hwt_put_uleb128(f->lay + f->nlay, v);
}

static inline void rput(struct file *f, const void *p, size_t n)
{
	memcpy(f->ring + f->nring, p, n);
	f->nring += n;
}

static inline void rword(struct file *f, uint64_t w)
{
	rput(f, &w, 8);
}

/* Translation id: PC0 (writes RAX, no access) then PC1 (stores 8 bytes
 * at one access), one side exit after PC0. Its block: RAX's old value,
 * the store's address and old bytes, the run's word. */
static inline void layout(struct file *f, uint64_t id, bool rax_after_store)
{
	lu(f, id);
	lu(f, 2);                  /* instructions */
	lu(f, PC0);
	lu(f, 3 << 1);
	lu(f, 0);                  /* accesses */
	lu(f, 0);                  /* delta from PC0's end */
	lu(f, 4 << 1);
	lu(f, 1);
	lu(f, 1);                  /* side exits */
	lu(f, 1);                  /* after PC0 */
	lu(f, 2);                  /* slots */
	if (rax_after_store) {
		/* PC1 stores, then writes RAX (after its access). */
		lu(f, HWT_VGD_SLOT_MEM);
		lu(f, 1);
		lu(f, 8);
		lu(f, HWT_VGD_SLOT_REG | HWT_VGD_AFTER_ACCESS);
		lu(f, 1);
		lu(f, HWT_VGD_RAX);
		lu(f, 8);
		lu(f, 0);          /* no slot before the exit */
	} else {
		lu(f, HWT_VGD_SLOT_REG);
		lu(f, 0);
		lu(f, HWT_VGD_RAX);
		lu(f, 8);
		lu(f, HWT_VGD_SLOT_MEM);
		lu(f, 1);
		lu(f, 8);
		lu(f, 1);          /* the RAX slot before the exit */
	}
	lu(f, 8 + 16 + 8);
}

static inline uint64_t run_word(uint64_t id, uint32_t exit)
{
	return id << 20 | (uint64_t)exit << 4 | HWT_VGD_TAG_RUN;
}

static inline void run(struct file *f, uint64_t id, uint64_t old_rax,
		uint64_t old_mem)
{
	rword(f, old_rax);
	rword(f, ADDR);
	rword(f, old_mem);
	rword(f, run_word(id, 1));
}

static inline void event(struct file *f, unsigned kind, const void *p, size_t n)
{
	rput(f, p, n);
	rword(f, (uint64_t)n << 8 | (uint64_t)kind << 4 | HWT_VGD_TAG_EVENT);
}

static inline void thread_switch(struct file *f, uint64_t from, uint64_t to)
{
	uint64_t p[2] = { from, to };

	event(f, HWT_VGD_EV_THREAD, p, sizeof(p));
}

/* A state event: tid, Valgrind's flags with the cause in the top byte,
 * the state (RAX, RBX, RIP, flags thunk COPY of 0). */
static inline void state_of(struct file *f, unsigned kind, uint64_t rax,
			    uint64_t rip, unsigned cause, uint64_t rbx)
{
	uint8_t p[16 + HWT_VGD_STATE_SIZE] = { 0 };
	uint64_t tid = TID, flags = (uint64_t)cause << HWT_VGD_CAUSE_SHIFT;

	memcpy(p, &tid, 8);
	memcpy(p + 8, &flags, 8);
	memcpy(p + 16 + HWT_VGD_RAX, &rax, 8);
	memcpy(p + 16 + HWT_VGD_RAX + 3 * 8, &rbx, 8);
	memcpy(p + 16 + HWT_VGD_RIP, &rip, 8);
	event(f, kind, p, sizeof(p));
}

/* A debugger's stop with the thread at pc. */
static inline void stop_at(struct file *f, uint64_t pc)
{
	uint64_t p[2] = { TID, pc };

	event(f, HWT_VGD_EV_STOP, p, sizeof(p));
}

static inline void state(struct file *f, unsigned kind, uint64_t rax,
			 uint64_t rip)
{
	state_of(f, kind, rax, rip, HWT_VGD_CAUSE_SYSCALL, 0);
}

static inline void finish(struct file *f)
{
	uint64_t len[2] = { f->nlay, f->nring };

	memcpy(f->out, HWT_VGD_MAGIC, HWT_VGD_MAGIC_LEN);
	memcpy(f->out + 8, len, 16);
	memcpy(f->out + 24, f->lay, f->nlay);
	memcpy(f->out + 24 + f->nlay, f->ring, f->nring);
	f->nout = 24 + f->nlay + f->nring;
}

/* Two runs of translation 0 by one thread: RAX is 1, the first run
 * writes 2, a system call between the runs makes it 7, the second run
 * writes 3. ADDR held 0x11 before the first store, 0x22 before the
 * second. */
static inline void two_runs(struct file *f)
{
	memset(f, 0, sizeof(*f));
	layout(f, 0, false);
	thread_switch(f, 0, TID);
	run(f, 0, 1, 0x11);
	state(f, HWT_VGD_EV_REGS, 2, PC1 + 4);
	run(f, 0, 7, 0x22);
	state(f, HWT_VGD_EV_END, 3, PC1 + 4);
	thread_switch(f, TID, 0);
	finish(f);
}

#endif
