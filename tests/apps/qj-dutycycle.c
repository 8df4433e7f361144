// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Adversary test app: six processes, each busy 12 ms out of every 30 ms (40%
 * of a CPU, under a 50% threshold), so no process looks busy while the app
 * as a whole wants more than two CPUs.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000L;
}

static void cycle(void)
{
	volatile unsigned long n = 0;

	for (;;) {
		long until = now_us() + 12000;

		while (now_us() < until)
			n++;
		usleep(18000);
	}
}

int main(void)
{
	for (int i = 0; i < 5; i++) {
		pid_t c = fork();

		if (c < 0)
			return 1;
		if (c == 0)
			cycle();
	}
	printf("ready\n");
	fflush(stdout);
	cycle();
}
