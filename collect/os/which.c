// SPDX-License-Identifier: BSD-2-Clause
/* which.c - a program found through PATH as execvp would (which.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "which.h"

bool hwt_which(const char *prog, char *out, size_t size)
{
	const char *path = getenv("PATH");

	if (strchr(prog, '/'))
		return (size_t)snprintf(out, size, "%s", prog) < size &&
		       access(out, X_OK) == 0;
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);

		if ((size_t)snprintf(out, size, "%.*s/%s", (int)len, p,
				     prog) < size && access(out, X_OK) == 0)
			return true;
		p += len + (colon != NULL);
	}
	return false;
}
