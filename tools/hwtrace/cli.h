/* cli.h - the hwtrace subcommands and what they share. */
#ifndef HWT_CLI_H
#define HWT_CLI_H

#include "hwt-common.h"

/* Exit codes besides the traced program's own status (record). */
#define HWT_EXIT_USAGE 2
#define HWT_EXIT_ERROR 1

int cmd_record(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_export(int argc, char **argv);

/* Print "hwtrace: <msg>" for err to stderr; returns HWT_EXIT_ERROR. */
int cli_fail(const struct hwt_err *err);
/* Print a usage error and a hint; returns HWT_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
