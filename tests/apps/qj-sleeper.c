// SPDX-License-Identifier: LGPL-2.1-or-later
/* Test app: blocks in read(2) on a pipe nobody writes. */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	int p[2];
	char c;

	if (pipe(p) < 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;)
		if (read(p[0], &c, 1) <= 0)
			pause();
}
