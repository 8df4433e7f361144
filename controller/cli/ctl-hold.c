// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjailctl hold --name N --why W [--timeout T] -- CMD...: hold while CMD runs. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl.h"
#include "policy.h"
#include "qosjail.h"

int ctl_hold(int argc, char **argv, const struct ctl_options *o)
{
	static const struct option opts[] = { { "name", required_argument, NULL, 'n' },
					      { "why", required_argument, NULL, 'w' },
					      { "timeout", required_argument, NULL, 't' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	const char *name = NULL, *why = NULL;
	struct qj_conn *conn = NULL;
	uint64_t timeout = 0;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int, old_quit;
	int c, r, status;
	pid_t pid;

	while ((c = getopt_long(argc, argv, "+n:w:t:h", opts, NULL)) >= 0) {
		switch (c) {
		case 'n':
			name = optarg;
			break;
		case 'w':
			why = optarg;
			break;
		case 't':
			if (qj_parse_duration(optarg, &timeout) < 0) {
				fprintf(stderr, "qosjailctl hold: bad duration '%s'\n", optarg);
				return CTL_EXIT_INVALID;
			}
			break;
		case 'h':
			printf("Usage: qosjailctl hold --name NAME --why REASON [--timeout T] -- "
			       "CMD [ARGS...]\n"
			       "Keeps the system awake while CMD runs; exits with CMD's status.\n");
			return CTL_EXIT_OK;
		default:
			return CTL_EXIT_INVALID;
		}
	}
	if (!name || !why || optind >= argc) {
		fprintf(stderr, "qosjailctl hold: --name, --why and a command are required\n");
		return CTL_EXIT_INVALID;
	}
	if (ctl_connect(o, &conn) < 0)
		return CTL_EXIT_FAILURE;
	r = qj_hold(conn, name, why, timeout, 0);
	if (r < 0) {
		ctl_fail(conn, r, "hold");
		qj_close(conn);
		return CTL_EXIT_FAILURE;
	}
	/* The terminal's ^C reaches CMD; we stay to report its status. */
	(void)sigaction(SIGINT, &ign, &old_int);
	(void)sigaction(SIGQUIT, &ign, &old_quit);
	pid = fork();
	if (pid < 0) {
		perror("qosjailctl hold: fork");
		qj_close(conn);
		return CTL_EXIT_FAILURE;
	}
	if (pid == 0) {
		(void)sigaction(SIGINT, &old_int, NULL);
		(void)sigaction(SIGQUIT, &old_quit, NULL);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "qosjailctl hold: cannot execute %s: %m\n", argv[optind]);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			status = CTL_EXIT_FAILURE << 8;
			break;
		}
	(void)qj_release(conn, name);
	qj_close(conn);
	return ctl_exit_status(status);
}
