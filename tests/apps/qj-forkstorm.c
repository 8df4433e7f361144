// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Adversary test app: a fork storm.  Four forkers start processes as fast as
 * they can, each child exec'ing this program again and exiting at once: every
 * one is an exec event for the daemon's process-event socket, enough to overrun
 * it.  At most 64 children of each forker are alive at once.  Prints "ready" at
 * once.  With QJ_STORM_COUNT set, the number started so far is written to that
 * file (a decimal line, rewritten in place) every 256 starts.
 *
 * Built static and without sanitizers (tests/apps/CMakeLists.txt): an exec of
 * an ASan binary costs milliseconds, and only ~100 a second fit on a loaded
 * 2-CPU machine; this one is cheap enough to reach 10,000 in seconds.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKERS 4
#define ALIVE_MAX 64

static void report(int fd, unsigned long n)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%lu\n", n);

	(void)!pwrite(fd, buf, (size_t)len, 0);
}

/* The child only execs or exits: it never returns from here. */
static pid_t __attribute__((noinline)) start_child(void)
{
	pid_t c = vfork();

	if (c == 0) {
		execl("/proc/self/exe", "qj-forkstorm", "child", (char *)NULL);
		_exit(127);
	}
	return c;
}

static void storm(unsigned long *started, int count_fd)
{
	unsigned alive = 0;

	for (;;) {
		unsigned long n;
		pid_t c;

		while (alive >= ALIVE_MAX && waitpid(-1, NULL, 0) > 0)
			alive--;
		while (waitpid(-1, NULL, WNOHANG) > 0)
			alive--;
		c = start_child();
		if (c < 0)
			continue;
		alive++;
		n = __atomic_add_fetch(started, 1, __ATOMIC_RELAXED);
		if (count_fd >= 0 && n % 256 == 0)
			report(count_fd, n);
	}
}

int main(int argc, char **argv)
{
	const char *count_path = getenv("QJ_STORM_COUNT");
	unsigned long *started;
	int count_fd = -1;

	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return 0; /* the exec was the point */
	started = mmap(NULL, sizeof(*started), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0);
	if (started == MAP_FAILED)
		return 1;
	if (count_path)
		count_fd = open(count_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	printf("ready\n");
	fflush(stdout);
	for (int i = 1; i < FORKERS; i++)
		if (fork() == 0)
			break;
	storm(started, count_fd);
}
