/* SPDX-License-Identifier: BSD-2-Clause */
/* vgstream.h - the stream the hwtrace Valgrind tool writes and the
 * valgrind backend reads (docs/valgrind.md).
 *
 * Plain constants only: the tool (collect/valgrind/tool/) is built
 * without libc and includes this as it is.
 *
 * The stream is a magic, then items. Every item starts with one unsigned
 * LEB128 number V; V & 3 says what it is:
 *   0  EXEC   a superblock ran: translation V >> 2, to its end unless an
 *             EXIT follows or, for an implied one (HWT_VG_SB_IMPLIED),
 *             where its thread goes next says otherwise
 *   1  EXIT   the superblock just run left at its side exit V >> 2, or,
 *             V >> 2 being its count of side exits, at its end
 *   2  RECORD a rare record of kind V >> 2 (enum below) and its fields
 *   3  never (corruption)
 * Every number in a record is unsigned LEB128; an address delta is
 * zigzag-coded; a string is its length, then its bytes.
 */
#ifndef HWT_VGSTREAM_H
#define HWT_VGSTREAM_H

#define HWT_VG_MAGIC "HWTVG02\n"
#define HWT_VG_MAGIC_LEN 8

#define HWT_VG_EXEC 0u
#define HWT_VG_EXIT 1u
#define HWT_VG_RECORD 2u

/* Record kinds. */
enum {
	/* A translation: id, instruction count N, first address, then for
	 * each instruction its length times 2, plus 1 for a rep-prefixed
	 * string operation, and, from the second on, the zigzag delta of its
	 * address from the end of the one before (not 0 where the superblock
	 * followed a jump), then the count of side exits E and for each how
	 * many instructions ran when it is taken (0: none); then flags
	 * (HWT_VG_SB_*), the zigzag delta of its entry (the address it runs
	 * for: not its first instruction's where Valgrind redirected it)
	 * from its first instruction's address, and for an implied one each
	 * side exit's target as a zigzag delta from its entry. */
	HWT_VG_REC_SB = 1,
	/* The threads after this run as thread: os tid. */
	HWT_VG_REC_THREAD = 2,
	/* A thread was born: os tid (its first EXEC follows its THREAD). */
	HWT_VG_REC_BORN = 3,
	/* A thread ended: os tid. */
	HWT_VG_REC_GONE = 4,
	/* A signal is delivered to thread tid: os tid, signal; the thread's
	 * next instruction is its handler's first, an asynchronous transfer. */
	HWT_VG_REC_SIGNAL = 5,
	/* Thread tid is at pc: os tid, pc. Its last superblock ended at pc
	 * if pc is one of its instructions (a fault, or the end of the
	 * recording in the middle of one). */
	HWT_VG_REC_AT = 6,
	/* Executable memory mapped: start, length, file offset, flags
	 * (1 read, 2 write, 4 exec), path ("" for anonymous). */
	HWT_VG_REC_MAP = 7,
	/* Memory unmapped: start, length. */
	HWT_VG_REC_UNMAP = 8,
	/* The tool stopped recording: its byte bound was reached: bound. */
	HWT_VG_REC_FULL = 9,
	/* The program exits: status as the exit system call gives it. */
	HWT_VG_REC_EXIT = 10,
	/* Nothing more follows: the tool's last word. */
	HWT_VG_REC_END = 11,
	/* The program's auxiliary vector as Valgrind gave it: count N (at
	 * most HWT_VG_MAX_AUXV), then N type, value pairs (AT_NULL left
	 * out). A core gets it as NT_AUXV. */
	HWT_VG_REC_AUXV = 12,
	/* The process exec'd a new program under Valgrind
	 * (--trace-children=yes): the tool of the new program continues the
	 * stream with this instead of the magic. Translation numbers start
	 * again from 0; the exec'ing thread goes on, the others ended. */
	HWT_VG_REC_EXEC = 13,
	/* First after the magic of a forked child's stream (FILE.PID,
	 * --hwt-follow-fork=yes): the parent's os pid and the number N of
	 * translations the parent's stream had described at the fork; the
	 * child runs those too, so its own are numbered from N on. */
	HWT_VG_REC_FORK = 14,
	/* The process forks, its child followed (--hwt-follow-fork=yes):
	 * the child's stream may share the translations described so far
	 * (FORK), so the reader keeps them after this stream ends. No
	 * fields. A stream without one has no follower: its translations
	 * are dropped at its END. */
	HWT_VG_REC_FORKS = 15,
	/* Thread tid's last superblock run is over and the thread goes on
	 * at pc, not yet run: os tid, pc. Written where no EXEC of the
	 * thread may follow to say where an implied superblock left (a
	 * signal's handler comes next, the recording stops, an exec). */
	HWT_VG_REC_NEXT = 16,
};

/* Superblock flags.
 *
 * IMPLIED: no EXIT item is written for its side exits (they cost the
 * translated code more than all else it records). Which one a run left
 * by is told by where its thread goes next: the entry of its next run,
 * or the pc of a NEXT or an AT record that is not one of its
 * instructions: the side exit whose target that is, else its end. The
 * tool makes a superblock implied only where that is exact: every side
 * exit an ordinary jump, their targets distinct and none of them the
 * superblock's entry or one of its instructions (so an AT's pc inside a
 * run is a fault there, never a loop back).
 *
 * FINAL: an implied superblock whose end does not tell itself apart
 * (its last jump is indirect, a system call, or goes where a side exit
 * goes): a run that reaches its end writes EXIT with the count of side
 * exits. */
#define HWT_VG_SB_IMPLIED 1u
#define HWT_VG_SB_FINAL 2u

#define HWT_VG_MAX_AUXV 64u

#define HWT_VG_MAP_R 1u
#define HWT_VG_MAP_W 2u
#define HWT_VG_MAP_X 4u

#endif
