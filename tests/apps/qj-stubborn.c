// SPDX-License-Identifier: LGPL-2.1-or-later
/* Test app: ignores SIGTERM and spins. */
#include <signal.h>
#include <stdio.h>

int main(void)
{
	volatile unsigned long n = 0;

	signal(SIGTERM, SIG_IGN);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		n++;
}
