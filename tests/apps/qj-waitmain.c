// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Test app: a worker thread spins while the main thread waits where no signal
 * but a fatal one wakes it (vfork: until the child exits, 'D' in /proc), with
 * a signal of its own pending.  A SIGSTOP sent to the process is then taken by
 * the worker: the worker stops at once, the main thread only when its wait
 * ends, and meanwhile neither /proc/PID/stat (D) nor the pending sets say
 * "stopped".  Prints "ready" once the worker runs.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void on_usr1(int sig)
{
	(void)sig;
}

static void *spin(void *arg)
{
	(void)arg;
	for (volatile unsigned long n = 0;; n++)
		;
	return NULL;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	pthread_t th;

	sigaction(SIGUSR1, &sa, NULL);
	if (pthread_create(&th, NULL, spin, NULL) != 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		pid_t c = vfork();

		if (c == 0) {
			/* Raw syscalls only: this child shares the parent's memory. */
			struct timespec ts = { .tv_sec = 2 };

			syscall(SYS_kill, getppid(), SIGUSR1);
			syscall(SYS_nanosleep, &ts, NULL);
			syscall(SYS_exit, 0);
		}
	}
}
