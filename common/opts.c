// SPDX-License-Identifier: BSD-2-Clause
/* opts.c - option structs that grow, checked the way libbpf checks its
 * own (hwt-common.h, "option structs"). */
#include <errno.h>
#include <string.h>

#include "hwt-common.h"

int hwt_opts_copy(void *out, size_t out_sz, const void *in, size_t in_sz,
		  size_t min_sz, const char *type, struct hwt_err *err)
{
	const unsigned char *extra = (const unsigned char *)in + out_sz;

	memset(out, 0, out_sz);
	*(size_t *)out = out_sz;
	if (!in)
		return 0;
	if (in_sz < min_sz)
		return hwt_err_set(err, EINVAL, "%s.sz is %zu; set it to "
				   "sizeof(struct %s) (HWT_OPTS does)", type,
				   in_sz, type);
	for (size_t i = 0; in_sz > out_sz && i < in_sz - out_sz; i++)
		if (extra[i])
			return hwt_err_set(err, EINVAL, "struct %s from a "
					   "newer hwtrace sets options this "
					   "library does not have (byte %zu of "
					   "%zu); leave them zero or use a "
					   "newer library", type, out_sz + i,
					   in_sz);
	memcpy(out, in, in_sz < out_sz ? in_sz : out_sz);
	*(size_t *)out = out_sz;
	return 0;
}
