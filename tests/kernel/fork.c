// SPDX-License-Identifier: BSD-2-Clause
/*
 * fork and exec while recorded: the child must run untraced and must not
 * be killed by a trap; with an argument the child execs that program.
 */
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int status, i, sum = 0;
	pid_t pid = fork();

	if (pid < 0)
		return 2;
	if (pid == 0) {
		for (i = 0; i < 1000; i++)
			sum += i;
		if (argc > 1)
			execv(argv[1], argv + 1);
		_exit(sum == 499500 ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 3;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 4;
}
