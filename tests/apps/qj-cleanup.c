// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Test app: like GNU make, catches SIGXCPU (the CPU-limit signal) to clean up
 * and then dies of it.  Spins; after SIGXCPU it goes on spinning ("cleaning
 * up") until it has been stopped and continued, then spins 50 ms more of its
 * own CPU time and re-raises SIGXCPU with the default action.  Waiting for the
 * SIGCONT makes its death fall after the resume whatever the machine's load:
 * the case where only following the process tells the kill log what happened.
 */
#include <signal.h>
#include <stdio.h>
#include <time.h>

static volatile sig_atomic_t told, continued;

static void on_xcpu(int sig)
{
	(void)sig;
	told = 1;
}

static void on_cont(int sig)
{
	(void)sig;
	continued = told;
}

static long cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_xcpu };
	volatile unsigned long n = 0;
	long until = -1;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGXCPU, &sa, NULL) < 0)
		return 1;
	sa.sa_handler = on_cont;
	if (sigaction(SIGCONT, &sa, NULL) < 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		n++;
		if ((n & 0xffff) != 0 || !continued)
			continue;
		if (until < 0)
			until = cpu_ms() + 50;
		if (cpu_ms() >= until) {
			signal(SIGXCPU, SIG_DFL);
			raise(SIGXCPU);
		}
	}
}
