// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Adversary test app: a busy loop that hops to a fresh process every 20-100 ms
 * (fork, the child carries on, the parent exits), so no process lives as long
 * as a sample window.  Only the app's cgroup sees the work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int main(void)
{
	volatile unsigned long n = 0;

	printf("ready\n");
	fflush(stdout);
	srand((unsigned)getpid());
	for (;;) {
		long until = now_ms() + 20 + rand() % 81;
		pid_t c;

		while (now_ms() < until)
			n++;
		c = fork();
		if (c < 0)
			continue;
		if (c > 0)
			_exit(0);
		srand((unsigned)getpid());
	}
}
