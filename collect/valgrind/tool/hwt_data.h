// SPDX-License-Identifier: GPL-2.0-or-later
/* hwt_data.h - the tool's data history (vgdata.h): what translated code
 * and Valgrind's own writes overwrite, kept in a ring in the tool's
 * memory and written to a file when the program ends. */
#ifndef HWT_TOOL_DATA_H
#define HWT_TOOL_DATA_H

#include "pub_tool_basics.h"
#include "libvex_ir.h"

/* --hwt-data-bytes=N (0: no data history) and --hwt-data-out=FILE. */
Bool hwt_data_option(const HChar *arg);
void hwt_data_usage(void);
/* After the options: the ring, and Valgrind's hooks for memory written
 * outside translated code. */
void hwt_data_init(void);
Bool hwt_data_on(void);
/* Describe translation id's slots and add, to out, the code that keeps
 * what in's statements overwrite: called for every statement of in in
 * order (before it is added to out), after hwt_data_begin at the
 * superblock's start. */
void hwt_data_begin(IRSB *out, const IRSB *in, ULong id);
void hwt_data_before(IRSB *out, IRStmt *st);
void hwt_data_after(IRSB *out, IRStmt *st);
/* After the last statement: the run reached its end. */
void hwt_data_end(IRSB *out);
/* The threads after this run as thread to (os tids). */
void hwt_data_switch(Int from, Int to);
/* Thread tid's state before something outside translated code changes
 * it (end: where its history ends). */
void hwt_data_regs(ThreadId tid, Int os_tid, Bool end, UInt cause);
/* A debugger stopped the program, thread os_tid at pc. */
void hwt_data_stop(Int os_tid, Addr pc);
/* Memory mapped or unmapped: what it held before cannot be known. */
void hwt_data_mmap(Addr a, SizeT len);
void hwt_data_munmap(Addr a, SizeT len);
/* The program's end, after every live thread's state (hwt_data_regs,
 * end), cur running last: the file. Not written when keep is False
 * (the stream stopped earlier). */
void hwt_data_finish(Bool keep, Int cur);
/* The file as things stand, the program stopped (under a debugger):
 * after begin, each live thread's state (hwt_data_regs, end), then
 * write with cur running last. The ring itself is left as it was, so
 * that the program goes on recording into it. False: no data kept. */
Bool hwt_data_snapshot_begin(UInt nthreads);
void hwt_data_snapshot_write(Int cur);
/* A debugger is about to write memory: its old bytes. (Registers: a
 * REGS event, HWT_VGD_CAUSE_DEBUGGER.) */
void hwt_data_debugger_writes(Addr a, SizeT len);
/* A forked child that is not recorded keeps no data either. */
void hwt_data_off(void);

#endif
