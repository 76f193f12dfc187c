// SPDX-License-Identifier: BSD-2-Clause
/* gdb_signals.c - Linux signal numbers to GDB's own (gdb/signals.def)
 * and back: the remote protocol speaks GDB's numbers in stop replies and
 * in C/S actions (hwt-server's and Valgrind's gdbserver's alike), the
 * kernel speaks Linux's. */
#include "hwt-common.h"
#include "signals.h"

/* {linux, gdb} where they are not the same number or have no match. */
static const unsigned char MAP[][2] = {
	{ 1, 1 }, { 2, 2 }, { 3, 3 }, { 4, 4 }, { 5, 5 }, { 6, 6 },
	{ 7, 10 },     /* SIGBUS */
	{ 8, 8 }, { 9, 9 },
	{ 10, 30 },    /* SIGUSR1 */
	{ 11, 11 },
	{ 12, 31 },    /* SIGUSR2 */
	{ 13, 13 }, { 14, 14 }, { 15, 15 },
	{ 17, 20 },    /* SIGCHLD */
	{ 18, 19 },    /* SIGCONT */
	{ 19, 17 },    /* SIGSTOP */
	{ 20, 18 },    /* SIGTSTP */
	{ 21, 21 }, { 22, 22 },
	{ 23, 16 },    /* SIGURG */
	{ 24, 24 }, { 25, 25 }, { 26, 26 }, { 27, 27 }, { 28, 28 },
	{ 29, 23 },    /* SIGIO */
	{ 30, 32 },    /* SIGPWR */
	{ 31, 12 },    /* SIGSYS */
};

/* Real-time signals: Linux 34..64 are GDB_SIGNAL_REALTIME_34.. (46..),
 * 32 and 33 are REALTIME_32 (77) and REALTIME_33 (45). */
#define GDB_RT34 46
#define GDB_RT32 77
#define GDB_RT33 45
#define GDB_UNKNOWN 143

int hwt_gdb_signal(int sig)
{
	for (size_t i = 0; i < sizeof(MAP) / sizeof(MAP[0]); i++)
		if (MAP[i][0] == sig)
			return MAP[i][1];
	if (sig == 32)
		return GDB_RT32;
	if (sig == 33)
		return GDB_RT33;
	if (sig >= 34 && sig <= 64)
		return GDB_RT34 + sig - 34;
	return GDB_UNKNOWN;
}

int hwt_linux_signal(int gsig)
{
	for (size_t i = 0; i < sizeof(MAP) / sizeof(MAP[0]); i++)
		if (MAP[i][1] == gsig)
			return MAP[i][0];
	if (gsig == GDB_RT32)
		return 32;
	if (gsig == GDB_RT33)
		return 33;
	if (gsig >= GDB_RT34 && gsig <= GDB_RT34 + 30)
		return gsig - GDB_RT34 + 34;
	return 0;
}
