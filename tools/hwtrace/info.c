// SPDX-License-Identifier: BSD-2-Clause
/* info.c - `hwtrace info`: what a bundle holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hwt-replay.h"

static const char info_usage[] =
	"usage: hwtrace info PATH\n"
	"\n"
	"Show a bundle's format, cpu, how the program ended, each thread's\n"
	"recorded and lost instructions, its modules and its core.\n"
	"\n"
	"Example:\n"
	"  hwtrace info crash.bundle\n";

int cmd_info(int argc, char **argv)
{
	struct hwt_bundle *b = NULL;
	struct hwt_bundle_images *ims = NULL;
	struct hwt_err err = { 0 };
	char *text = NULL;
	int rc;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(info_usage, stdout);
		return 0;
	}
	if (argc != 2)
		return cli_usage_error("info", "expected exactly one bundle");
	if (!(rc = hwt_bundle_read(argv[1], &b, &err)) &&
	    !(rc = hwt_bundle_images_new(b, &ims, &err)) &&
	    !(rc = hwt_bundle_describe(b, ims, &text, &err)))
		fputs(text, stdout);
	free(text);
	hwt_bundle_images_free(ims);
	hwt_bundle_free(b);
	return rc ? cli_fail(&err) : 0;
}
