// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Adversary test app: the work hops to a fresh thread every 20-100 ms (the
 * main thread waits in pthread_join).  A thread that exited drops out of its
 * process's counters: only the app's cgroup sees the work.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void *spin(void *arg)
{
	long until = now_ms() + (long)(size_t)arg;
	volatile unsigned long n = 0;

	while (now_ms() < until)
		n++;
	return NULL;
}

int main(void)
{
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		pthread_t t;

		if (pthread_create(&t, NULL, spin, (void *)(size_t)(20 + rand() % 81)) != 0)
			return 1;
		pthread_join(t, NULL);
	}
}
