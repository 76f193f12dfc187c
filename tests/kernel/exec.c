// SPDX-License-Identifier: BSD-2-Clause
/* exec in the middle of a recording: runs a little, then execs argv[1]. */
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	execv(argv[1], argv + 1);
	return 1;
}
