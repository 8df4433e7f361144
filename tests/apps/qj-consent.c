// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Test app linked to libqosjail: catches SIGXCPU (writes "xcpu" and blocks from
 * then on) and spins.  Connects to $QOSJAIL_SOCKET, prints "ready", waits for a
 * byte on stdin (it has been placed in the jail by then); with the argument
 * "consent" it then calls qj_notify_consent() and prints "consent R" (0 or a
 * negative errno), else "no-consent".  With a second argument "subscribe" it also
 * subscribes to cycle events ("subscribed R"), and once told it blocks reading them,
 * printing each ("event JSON"), and stops reading after the "resumed" one: how an app
 * that blocked after SIGXCPU learns the system resumed (it is not stopped, so no
 * SIGCONT comes).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qosjail.h"

static volatile sig_atomic_t told;

static void on_xcpu(int sig)
{
	(void)sig;
	told = 1;
	(void)!write(STDOUT_FILENO, "xcpu\n", 5);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_xcpu };
	struct qj_conn *c = NULL;
	volatile unsigned long n = 0;
	char b;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGXCPU, &sa, NULL) < 0 || qj_open(NULL, &c) < 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	if (read(STDIN_FILENO, &b, 1) != 1)
		return 1;
	if (argc > 1 && strcmp(argv[1], "consent") == 0)
		printf("consent %d\n", qj_notify_consent(c));
	else
		printf("no-consent\n");
	if (argc > 2 && strcmp(argv[2], "subscribe") == 0)
		printf("subscribed %d\n", qj_subscribe(c, 0));
	fflush(stdout);
	while (!told)
		n++;
	for (char *ev = NULL; argc > 2 && qj_event_next(c, -1, &ev) == 0; free(ev)) {
		printf("event %s\n", ev);
		fflush(stdout);
		if (strstr(ev, "\"resumed\"")) {
			free(ev);
			break;
		}
	}
	for (;;)
		pause();
}
