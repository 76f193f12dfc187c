// SPDX-License-Identifier: GPL-2.0-or-later
/* hwt_guest.h - what both halves of the tool, the stream (hwt_tool.c)
 * and the data history (hwt_data.c), ask about the program: which kernel
 * thread a Valgrind thread is, and whether an instruction is a rep
 * string operation. */
#ifndef HWT_TOOL_GUEST_H
#define HWT_TOOL_GUEST_H

#include "pub_tool_basics.h"

/* The map of threads, once the options are read. */
void hwt_lwp_init(void);
/* Thread tid's os tid; the calling thread's own while none is known. */
Int hwt_lwp(ThreadId tid);
/* Thread tid's os tid, 0 while none is known. */
Int hwt_lwp_known(ThreadId tid);
/* Thread tid is os tid os_tid from now on (0: no longer known). */
void hwt_lwp_set(ThreadId tid, Int os_tid);
/* No thread is known (a forked child starts anew). */
void hwt_lwp_forget_all(void);

/* Whether the guest instruction at a is a rep-prefixed string operation:
 * Valgrind runs each iteration as a superblock of its own, plus one that
 * only finds the count exhausted, which a cpu does not execute. */
Bool hwt_is_rep_string(Addr a, UInt len);

#endif
