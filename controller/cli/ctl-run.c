// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjailctl run --app NAME [--] CMD...: start CMD inside the app's jail group. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl.h"
#include "qosjail.h"

int ctl_run(int argc, char **argv, const struct ctl_options *o)
{
	static const struct option opts[] = { { "app", required_argument, NULL, 'a' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct qj_conn *conn = NULL;
	const char *app = NULL;
	int c, r, status;
	pid_t pid;

	while ((c = getopt_long(argc, argv, "+a:h", opts, NULL)) >= 0) {
		switch (c) {
		case 'a':
			app = optarg;
			break;
		case 'h':
			printf("Usage: qosjailctl run --app NAME [--] CMD [ARGS...]\n"
			       "Starts CMD inside the jail group of app NAME (clone3 into the "
			       "cgroup);\nexits with its status, 128+N when killed by signal N.\n");
			return CTL_EXIT_OK;
		default:
			return CTL_EXIT_INVALID;
		}
	}
	if (!app || optind >= argc) {
		fprintf(stderr, "qosjailctl run: --app and a command are required\n");
		return CTL_EXIT_INVALID;
	}
	if (ctl_connect(o, &conn) < 0)
		return CTL_EXIT_FAILURE;
	r = qj_spawn(conn, app, argv + optind, &pid, NULL);
	if (r < 0) {
		/* Like a shell: 127 when the command could not be executed. */
		int code = strncmp(qj_last_error(conn), "cannot execute", 14) == 0 ?
				   127 :
				   CTL_EXIT_FAILURE;

		ctl_fail(conn, r, "run");
		qj_close(conn);
		return code;
	}
	qj_close(conn);
	(void)sigaction(SIGINT, &ign, NULL);
	(void)sigaction(SIGQUIT, &ign, NULL);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return CTL_EXIT_FAILURE;
	return ctl_exit_status(status);
}
