// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Adversary test app: a double-forking daemoniser.  The parent and the first
 * child exit at once; the grandchild, in a new session, spins.
 */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	volatile unsigned long n = 0;
	pid_t c = fork();

	if (c < 0)
		return 1;
	if (c > 0)
		_exit(0);
	(void)setsid();
	c = fork();
	if (c < 0)
		return 1;
	if (c > 0)
		_exit(0);
	printf("ready %d\n", getpid());
	fflush(stdout);
	for (;;)
		n++;
}
