// SPDX-License-Identifier: BSD-2-Clause
/* window.c - the part of a history a command shows: all of it, --range
 * A,B, --last N, or --since FUNC (from the most recent entry into FUNC,
 * found by searching backward from the newest item, so only what is shown
 * and what lies between is decoded). */
#include <errno.h>
#include <string.h>

#include "cli.h"
#include "hwt-replay.h"
#include "util.h"

static int parse_range(const char *s, uint64_t *a, uint64_t *b)
{
	const char *comma = strchr(s, ',');
	char first[32];

	if (!comma || (size_t)(comma - s) >= sizeof(first))
		return -EINVAL;
	memcpy(first, s, (size_t)(comma - s));
	first[comma - s] = '\0';
	if (hwt_parse_u64(first, a) || hwt_parse_u64(comma + 1, b) || *a == 0 ||
	    *b < *a)
		return -EINVAL;
	return 0;
}

int cli_window_option(struct cli_window *w, const char *cmd, int opt,
		      const char *arg)
{
	if (w->has_range || w->newest || w->since)
		return cli_usage_error(cmd, "--range, --last and --since "
				       "exclude each other");
	switch (opt) {
	case 'r':
		if (parse_range(arg, &w->first, &w->last))
			return cli_usage_error(cmd, "--range '%s' must be A,B "
					       "with 1 <= A <= B", arg);
		w->has_range = true;
		return 0;
	case 'l':
		if (hwt_parse_u64(arg, &w->newest) || w->newest == 0)
			return cli_usage_error(cmd, "--last '%s' must be a "
					       "positive count", arg);
		return 0;
	default:
		w->since = arg;
		return 0;
	}
}

int cli_window_apply(const struct cli_window *w, struct hwt_history *h,
		     struct hwt_image *img, uint64_t *first, uint64_t *last,
		     struct hwt_err *err)
{
	uint64_t count = hwt_history_count(h), entry;
	struct hwt_cursor *cur;
	int rc;

	*first = 1;
	*last = count;
	if (w->has_range) {
		*first = w->first;
		*last = w->last < count ? w->last : count;
	} else if (w->newest && w->newest < count) {
		*first = count - w->newest + 1;
	} else if (w->since) {
		entry = hwt_image_lookup_function(img, w->since);
		if (!entry)
			return hwt_err_set(err, ENOENT, "no function '%s' in the "
					   "bundle's modules", w->since);
		if ((rc = hwt_cursor_new(h, img, &cur, err)))
			return rc;
		rc = hwt_cursor_continue(cur, HWT_BACKWARD, &entry, 1, err);
		if (rc == HWT_HIT)
			*first = hwt_cursor_pos(cur);
		hwt_cursor_free(cur);
		if (rc < 0)
			return rc;
		if (rc != HWT_HIT)
			return hwt_err_set(err, ENOENT, "'%s' was not entered in "
					   "the recorded history", w->since);
	}
	return 0;
}
