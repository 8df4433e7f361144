// SPDX-License-Identifier: LGPL-2.1-or-later
/* Test app: a busy loop with no signal handlers. */
#include <stdio.h>

int main(void)
{
	volatile unsigned long n = 0;

	printf("ready\n");
	fflush(stdout);
	for (;;)
		n++;
}
