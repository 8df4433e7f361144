// SPDX-License-Identifier: LGPL-2.1-or-later
/* Test app: spins until told (SIGXCPU) that the system wants to suspend, then blocks. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t told;

static void on_xcpu(int sig)
{
	(void)sig;
	told = 1;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_xcpu };
	volatile unsigned long n = 0;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGXCPU, &sa, NULL) < 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	while (!told)
		n++;
	for (;;)
		pause();
}
