/* SPDX-License-Identifier: BSD-2-Clause */
/* vgdata.h - the data history the hwtrace Valgrind tool keeps beside its
 * stream (--hwt-data-bytes): what each run of a superblock overwrote, so
 * that the valgrind backend can take the registers and memory where the
 * history ends back to any instruction of its newest part
 * (docs/valgrind.md, "Data history").
 *
 * Plain constants only: the tool (collect/valgrind/tool/) is built
 * without libc and includes this as it is.
 *
 * While the program runs, the tool writes into a ring in its own memory,
 * never through the stream: a block per superblock run, an event where
 * the program's state changes outside translated code. At the end (the
 * program's exit or its fatal signal) it writes the ring to a file:
 *
 *   magic HWT_VGD_MAGIC, then two little-endian 64-bit lengths, of the
 *   layouts and of the ring, then the layouts, then the ring's bytes
 *   oldest first (the oldest may begin in the middle of something the
 *   ring overwrote: a reader walks back from the end and stops where a
 *   block would begin before the ring's first byte).
 *
 * Layouts: one per translation, unsigned LEB128 numbers (an address
 * delta zigzag-coded): its number, instruction count N, first address,
 * then per instruction its length times 2, plus 1 for a rep-prefixed
 * string operation, from the second on the delta of its address from
 * the end of the one before, and its count of memory accesses; the count of side exits E
 * and per exit how many instructions ran when it is taken; the count of
 * slots S and per slot its kind (HWT_VGD_SLOT_*) plus HWT_VGD_AFTER_ACCESS
 * where the instruction made a memory access before it, its instruction
 * index and its operands (REG: guest offset and size; MEM, UNKNOWN: size);
 * then per exit how many of the slots precede it; last, the block's size
 * in bytes.
 *
 * The ring holds 8-byte aligned items, each ending with a tag word whose
 * low 4 bits say what it is, so that the ring is walked from its end:
 *   HWT_VGD_TAG_RUN    a superblock's run: the word is number << 20 |
 *                      exit << 4 | tag, exit being the side exit taken,
 *                      E (its end), or HWT_VGD_EXIT_OPEN while it runs
 *                      (so a run left in the middle, by a fault or a
 *                      debugger, says so); the block is the layout's size, its
 *                      slots in order, each 8-byte aligned: REG its old
 *                      bytes (the guest state before the write), MEM the
 *                      address (0: nothing written) then the old bytes,
 *                      UNKNOWN the address (0: nothing written). Slots
 *                      after the exit taken hold nothing.
 *   HWT_VGD_TAG_EVENT  the word is length << 8 | kind << 4 | tag, its
 *                      payload the length's bytes before it (kinds below).
 *
 * Under a debugger (hwt-server) the same file is written at a stop, as
 * things stand (a snapshot: the monitor command hwt.data): the ring
 * followed by each thread's END and the last THREAD event, the ring
 * itself left as it was. The thread a debugger stopped in the middle of
 * a superblock stands at one of its instructions: its run is open, and
 * only the slots of the instructions before the one it stands at are
 * written.
 */
#ifndef HWT_VGDATA_H
#define HWT_VGDATA_H

#define HWT_VGD_MAGIC "HWTVGD01"
#define HWT_VGD_MAGIC_LEN 8

#define HWT_VGD_TAG_MASK 0xfu
#define HWT_VGD_TAG_RUN 0x1u
#define HWT_VGD_TAG_EVENT 0x2u
#define HWT_VGD_EXIT_OPEN 0xffffu

/* Slot kinds: a guest register write, a store, a store whose old bytes
 * were not read (they cannot be known before it). */
#define HWT_VGD_SLOT_REG 0u
#define HWT_VGD_SLOT_MEM 1u
#define HWT_VGD_SLOT_UNKNOWN 2u
#define HWT_VGD_SLOT_KIND_MASK 3u
#define HWT_VGD_AFTER_ACCESS 4u

/* Event kinds; every payload starts with the os tid as a 64-bit word. */
enum {
	/* The threads after this run as another: from, to. */
	HWT_VGD_EV_THREAD = 1,
	/* The thread's guest state before something outside translated
	 * code changed it (a system call, a signal's delivery): the rflags
	 * Valgrind computes for it, with the cause (HWT_VGD_CAUSE_*) in
	 * its top byte, then the state (VexGuestAMD64State). A debugger
	 * about to write registers is such a cause too. */
	HWT_VGD_EV_REGS = 2,
	/* The same, as the thread ends or the recording does: where its
	 * history ends. */
	HWT_VGD_EV_END = 3,
	/* Memory about to be written outside translated code (a system
	 * call, a signal frame, a debugger): address, length, the old
	 * bytes. */
	HWT_VGD_EV_MEM = 4,
	/* Memory whose bytes before now cannot be known (mapped, unmapped,
	 * or too large to copy): address, length. */
	HWT_VGD_EV_UNKNOWN = 5,
	/* A debugger stopped the program with the thread at pc (its next
	 * instruction, which the stream's history then holds): pc. Should
	 * a signal's handler be entered from there, that instruction
	 * counts as run, as the stream has it. */
	HWT_VGD_EV_STOP = 6,
};

/* What a REGS event's state comes before. */
#define HWT_VGD_CAUSE_SHIFT 56
#define HWT_VGD_CAUSE_SYSCALL 1u
#define HWT_VGD_CAUSE_SIGNAL 2u
#define HWT_VGD_CAUSE_DEBUGGER 3u
/* A debugger moves the thread elsewhere: the run it stood in the middle
 * of ends at the state's rip (Valgrind leaves the superblock), the
 * slots of the instructions from there on are not written. */
#define HWT_VGD_CAUSE_JUMP 4u

/* Where Valgrind 3.19's amd64 guest state (libvex_guest_amd64.h) keeps
 * what a debugger shows, for a reader built without Valgrind's headers;
 * the tool checks them against the headers it is built with. */
#define HWT_VGD_STATE_SIZE 928u
#define HWT_VGD_RAX 16u            /* then RCX RDX RBX RSP RBP RSI RDI
				    * R8 .. R15, 8 bytes each */
#define HWT_VGD_CC_OP 144u         /* then CC_DEP1, CC_DEP2, CC_NDEP */
#define HWT_VGD_DFLAG 176u
#define HWT_VGD_RIP 184u
#define HWT_VGD_ACFLAG 192u
#define HWT_VGD_IDFLAG 200u
#define HWT_VGD_FS_CONST 208u
#define HWT_VGD_SSEROUND 216u
#define HWT_VGD_YMM0 224u          /* YMM0 .. YMM16, 32 bytes each */
#define HWT_VGD_FTOP 768u
#define HWT_VGD_FPREG 776u         /* 8 doubles */
#define HWT_VGD_FPTAG 840u         /* 8 bytes */
#define HWT_VGD_FPROUND 848u
#define HWT_VGD_FC3210 856u
#define HWT_VGD_GS_CONST 904u

#endif
