// SPDX-License-Identifier: GPL-2.0-or-later
/* hwt_guest.c - the program's threads as the kernel numbers them, and
 * its rep string instructions (hwt_guest.h). */
#include "pub_tool_basics.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_threadstate.h"

#include "hwt_guest.h"

static Int *lwp_of;                        /* ThreadId -> os tid */

void hwt_lwp_init(void)
{
	lwp_of = VG_(calloc)("hwt.lwp", VG_N_THREADS, sizeof(*lwp_of));
}

Int hwt_lwp_known(ThreadId tid)
{
	return tid < VG_N_THREADS ? lwp_of[tid] : 0;
}

Int hwt_lwp(ThreadId tid)
{
	Int os_tid = hwt_lwp_known(tid);

	return os_tid ? os_tid : VG_(gettid)();
}

void hwt_lwp_set(ThreadId tid, Int os_tid)
{
	if (tid < VG_N_THREADS)
		lwp_of[tid] = os_tid;
}

void hwt_lwp_forget_all(void)
{
	for (UInt i = 0; i < VG_N_THREADS; i++)
		lwp_of[i] = 0;
}

Bool hwt_is_rep_string(Addr a, UInt len)
{
	const UChar *p = (const UChar *)a;
	Bool rep = False;
	UInt i = 0;

	for (; i < len; i++) {
		UChar b = p[i];

		if (b == 0xf2 || b == 0xf3)
			rep = True;
		else if (!(b == 0x66 || b == 0x67 || b == 0x2e || b == 0x36 ||
			   b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65 ||
			   b == 0xf0))
			break;
	}
	if (i < len && (p[i] & 0xf0) == 0x40)
		i++;      /* REX */
	if (!rep || i >= len)
		return False;
	return (p[i] >= 0xa4 && p[i] <= 0xa7) || (p[i] >= 0xaa && p[i] <= 0xaf) ||
	       (p[i] >= 0x6c && p[i] <= 0x6f);
}
