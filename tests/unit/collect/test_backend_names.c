// SPDX-License-Identifier: BSD-2-Clause
/* test_backend_names.c - the short backend names pt, bts and etm reach
 * the perf backends, through the lookup and through hwt_collect_launch. */
#include <errno.h>
#include <string.h>

#include "backend_names.h"
#include "check.h"
#include "hwt-collect.h"

/* Launch /bin/true with a backend name; returns launch's result, err
 * holds why it failed. A successful launch is closed at once. */
static int try_launch(const char *backend, struct hwt_err *err)
{
	struct hwt_collect_opts opts = { .sz = sizeof(opts), .backend = backend };
	char *argv[] = { "/bin/true", NULL };
	struct hwt_collector *c = NULL;
	int rc;

	memset(err, 0, sizeof(*err));
	rc = hwt_collect_launch(&opts, argv, &c, err);
	if (rc == 0)
		hwt_collect_close(c);
	return rc;
}

int main(void)
{
	static const char *const pairs[][2] = {
		{ "pt", "perf-pt" }, { "bts", "perf-bts" }, { "etm", "perf-etm" },
	};
	static const char *const same[] = {
		"perf-pt", "ptrace", "module", "PT", "p", "pts", "",
	};
	const char *const *names;
	size_t n = hwt_collect_backends(&names);
	struct hwt_err err;

	for (size_t i = 0; i < 3; i++) {
		const char *got = hwt_backend_canonical(pairs[i][0]);
		bool registered = false;

		CHECK("alias_maps", got && strcmp(got, pairs[i][1]) == 0,
		      "%s -> %s, want %s", pairs[i][0], got ? got : "(null)",
		      pairs[i][1]);
		for (size_t k = 0; k < n; k++)
			registered |= strcmp(names[k], pairs[i][1]) == 0;
		CHECK("alias_target_registered", registered,
		      "%s is not a registered backend", pairs[i][1]);
	}
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		CHECK("other_names_unchanged",
		      hwt_backend_canonical(same[i]) == same[i],
		      "\"%s\" was changed", same[i]);
	CHECK("null_stays_null", hwt_backend_canonical(NULL) == NULL,
	      "NULL (pick the best) was changed");

	/* Through the public API: an alias is never "unknown"; when its
	 * backend cannot work here the error names the backend. */
	for (size_t i = 0; i < 3; i++) {
		int rc = try_launch(pairs[i][0], &err);

		CHECK("alias_launch_known", rc == 0 ||
		      (!strstr(err.msg, "unknown trace backend") &&
		       strstr(err.msg, pairs[i][1])),
		      "--backend %s: rc %d, \"%s\"", pairs[i][0], rc, err.msg);
	}
	CHECK("case_matters", try_launch("PT", &err) == -EINVAL &&
	      strstr(err.msg, "unknown trace backend \"PT\"") &&
	      strstr(err.msg, "perf-pt"),
	      "--backend PT: \"%s\"", err.msg);
	return check_exit();
}
