// SPDX-License-Identifier: LGPL-2.1-or-later
/* Test app: one busy thread among three idle ones (the main thread idles too). */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

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

	for (int i = 0; i < 3; i++)
		if (pthread_create(&t, NULL, idle_thread, NULL) != 0)
			return 1;
	if (pthread_create(&t, NULL, busy_thread, NULL) != 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
