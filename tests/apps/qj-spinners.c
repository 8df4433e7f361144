// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Adversary test app: a tree of short-lived spinners, a thousand every couple
 * of seconds.  The parent keeps twenty alive through intermediate children
 * that exit at once, so the spinners' CPU is never reaped into the parent's
 * counters: the parent looks idle, each spinner lives 30 ms.
 */
#include <stdio.h>
#include <sys/wait.h>
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
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		for (int i = 0; i < 20; i++) {
			pid_t c = fork();

			if (c < 0)
				break;
			if (c == 0) {
				if (fork() == 0) {
					volatile unsigned long n = 0;
					long until = now_ms() + 30;

					while (now_ms() < until)
						n++;
				}
				_exit(0);
			}
			(void)waitpid(c, NULL, 0);
		}
		usleep(20000);
	}
}
