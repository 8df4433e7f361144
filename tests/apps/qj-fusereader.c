// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Test app: one thread stuck in 'D' on a FUSE read that is never answered
 * ($QJ_FUSE_FILE, served by qj-fusehang), one thread busy.  The reading
 * thread is interrupted once by a signal it handles, so it waits killable
 * (uninterruptible, 'D') from then on: a SIGSTOP never stops it.  Prints
 * "ready" once the reader is in 'D'.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile pid_t reader_tid;

static void on_usr1(int sig)
{
	(void)sig;
}

static void *reader(void *arg)
{
	char buf[64];
	int fd = open(arg, O_RDONLY | O_CLOEXEC);

	reader_tid = (pid_t)syscall(SYS_gettid);
	if (fd >= 0)
		(void)!read(fd, buf, sizeof(buf));
	return NULL;
}

static char thread_state(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] && p[2] ? p[2] : 0;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	const char *file = getenv("QJ_FUSE_FILE");
	volatile unsigned long x = 0;
	pthread_t th;

	if (!file)
		return 2;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) < 0 ||
	    pthread_create(&th, NULL, reader, (void *)file) != 0)
		return 1;
	/* Interrupted in its interruptible wait, the read waits killable: 'D'. */
	for (int i = 0; i < 500 && thread_state(reader_tid) != 'D'; i++) {
		while (!reader_tid)
			usleep(1000);
		if (thread_state(reader_tid) == 'S')
			(void)pthread_kill(th, SIGUSR1);
		usleep(10 * 1000);
	}
	if (thread_state(reader_tid) != 'D')
		return 3;
	printf("ready\n");
	fflush(stdout);
	for (;;)
		x++;
}
