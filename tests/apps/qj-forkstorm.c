// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Adversary test app: a fork storm.  Starts 10,000 processes as fast as it can
 * (each execs this program again, so each is an exec event for the daemon's
 * process-event socket, enough to overrun it), at most 200 alive at once, each
 * exiting at once; then goes on forking at that pace.  Prints "ready" at once.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	unsigned alive = 0;

	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return 0; /* the exec was the point */
	printf("ready\n");
	fflush(stdout);
	for (unsigned long started = 0;; started++) {
		pid_t c;

		while (alive >= 200 && waitpid(-1, NULL, 0) > 0)
			alive--;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			alive--;
		c = fork();
		if (c < 0)
			continue;
		if (c == 0) {
			execl("/proc/self/exe", "qj-forkstorm", "child", (char *)NULL);
			_exit(127);
		}
		alive++;
	}
}
