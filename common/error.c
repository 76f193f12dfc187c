// SPDX-License-Identifier: BSD-2-Clause
/* error.c - error messages carried back to callers instead of printed. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hwt-common.h"

int hwt_err_set(struct hwt_err *err, int code, const char *fmt, ...)
{
	if (code < 0)
		code = -code;
	if (err) {
		va_list ap;

		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return -code;
}

int hwt_err_prefix(struct hwt_err *err, const char *fmt, ...)
{
	char prefix[256];
	size_t plen, mlen;
	va_list ap;

	/* Without a message to carry the code is unknown, but a failure
	 * passed through here must stay one. */
	if (!err)
		return -EIO;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	/* Keep as much of the original message as fits after the prefix. */
	plen = strlen(prefix);
	mlen = strnlen(err->msg, sizeof(err->msg) - 1);
	if (plen + mlen >= sizeof(err->msg))
		mlen = sizeof(err->msg) - 1 - plen;
	memmove(err->msg + plen, err->msg, mlen);
	memcpy(err->msg, prefix, plen);
	err->msg[plen + mlen] = '\0';
	return -err->code;
}

void hwt_err_clear(struct hwt_err *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}
