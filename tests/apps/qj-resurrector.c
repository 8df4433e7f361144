// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Test app: a pair that SIGCONTs each other.  The parent spins; the child
 * sleeps in 10 ms steps (it blocks) and continues the parent whenever it
 * wakes.  The child exits when the parent is gone.  Prints "ready CHILDPID".
 */
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	volatile unsigned long n = 0;
	pid_t parent = getpid(), child;
	struct timespec last, now;

	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		for (;;) {
			usleep(10 * 1000);
			if (getppid() != parent)
				return 0;
			kill(parent, SIGCONT);
		}
	}
	printf("ready %d\n", child);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &last);
	for (;;) {
		n++;
		if ((n & 0xffff) != 0)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - last.tv_sec) * 1000000000L + now.tv_nsec - last.tv_nsec >
		    5 * 1000000L) {
			kill(child, SIGCONT);
			last = now;
		}
	}
}
