// SPDX-License-Identifier: LGPL-2.1-or-later
/* Test app: prints the ready line, then runs $QJ_RUN_CMD with /bin/sh (real programs). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	const char *cmd = getenv("QJ_RUN_CMD");

	if (!cmd)
		return 2;
	printf("ready\n");
	fflush(stdout);
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	return 127;
}
