/* SPDX-License-Identifier: BSD-2-Clause */
/* signals.h - Linux's signal numbers and GDB's remote protocol's
 * (gdb_signals.c). Internal: no public header includes it, and the shared
 * libraries do not export it. */
#ifndef HWT_SIGNALS_H
#define HWT_SIGNALS_H

/* GDB's number for a Linux signal (143, GDB_SIGNAL_UNKNOWN, if none). */
int hwt_gdb_signal(int linux_sig);
/* Linux's number for a GDB signal; 0 when Linux has no such signal. */
int hwt_linux_signal(int gdb_sig);

#endif
