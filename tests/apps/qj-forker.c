// SPDX-License-Identifier: LGPL-2.1-or-later
/* Test app: keeps forking short-lived busy children (30 ms each) and reaping them. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long elapsed_ns(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1000000000L + b.tv_nsec - a->tv_nsec;
}

int main(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		pid_t c = fork();

		if (c < 0)
			return 1;
		if (c == 0) {
			struct timespec start;
			volatile unsigned long n = 0;

			clock_gettime(CLOCK_MONOTONIC, &start);
			while (elapsed_ns(&start) < 30 * 1000000L)
				n++;
			_exit(0);
		}
		while (waitpid(c, NULL, 0) < 0)
			;
	}
}
