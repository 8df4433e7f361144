// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Test app: a large group of busy processes, $QJ_HERD_N of them (itself
 * included), each spinning alone.  They sleep until all are forked (spinning
 * children would starve the forking parent), then spin; "ready" once they are
 * told to.  "ready" comes first: the test counts the group.  Built without
 * sanitizers: it forks thousands of times.
 */
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void spin(void)
{
	volatile unsigned long x = 0;

	for (;;)
		x++;
}

int main(void)
{
	const char *s = getenv("QJ_HERD_N");
	long n = s ? strtol(s, NULL, 10) : 0;
	volatile int *go;

	/*
	 * A shared futex word, not a pipe: a child stopped before it ran would hold
	 * the pipe open; one woken every millisecond would starve the parent.
	 */
	go = mmap(NULL, sizeof(*go), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (n < 1 || n > 100000 || go == MAP_FAILED)
		return 2;
	/* Ready at once: on a loaded machine the forks take a while (the test counts them). */
	printf("ready\n");
	fflush(stdout);
	for (long i = 1; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			while (!*go)
				(void)syscall(SYS_futex, go, FUTEX_WAIT, 0, NULL, NULL, 0);
			spin();
		}
	}
	*go = 1;
	(void)syscall(SYS_futex, go, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	spin();
}
