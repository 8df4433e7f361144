// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Test app: two busy threads.  Once stopped and continued, the main thread
 * exits alone with status 255 (exit(2) of one thread, not exit_group), and the
 * other thread exits alone 500 ms later with 0: the process's status, as wait(2)
 * reports it, is the leader's 255, while the last thread's exit event says 0.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile sig_atomic_t continued;

static void on_cont(int sig)
{
	(void)sig;
	continued = 1;
}

static void *worker(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	while (!continued)
		n++;
	usleep(500 * 1000); /* past the engine's wait for the last thread */
	syscall(SYS_exit, 0);
	return NULL;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_cont };
	volatile unsigned long n = 0;
	pthread_t th;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGCONT, &sa, NULL) < 0 || pthread_create(&th, NULL, worker, NULL) != 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	while (!continued)
		n++;
	syscall(SYS_exit, 255);
	return 0;
}
