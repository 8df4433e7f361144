// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Adversary test app: the main thread exits (pthread_exit) after starting two
 * busy threads.  /proc/PID/stat then says Z for the process while its threads
 * burn the CPU: only its pidfd can say when the process is gone.
 */
#include <pthread.h>
#include <stdio.h>

static void *busy_thread(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	for (;;)
		n++;
	return NULL;
}

int main(void)
{
	pthread_t t;

	for (int i = 0; i < 2; i++)
		if (pthread_create(&t, NULL, busy_thread, NULL) != 0)
			return 1;
	printf("ready\n");
	fflush(stdout);
	pthread_exit(NULL);
}
