// SPDX-License-Identifier: BSD-2-Clause
/* backend_names.c - short backend names. The hardware backends are
 * registered under perf-* names (they record through perf_event_open),
 * while users name the trace hardware itself: --backend pt|bts|etm. */
#include <stddef.h>
#include <string.h>

#include "backend_names.h"

static const struct {
	const char *alias, *name;
} aliases[] = {
	{ "pt", "perf-pt" },
	{ "bts", "perf-bts" },
	{ "etm", "perf-etm" },
};

const char *hwt_backend_canonical(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (strcmp(name, aliases[i].alias) == 0)
			return aliases[i].name;
	return name;
}
