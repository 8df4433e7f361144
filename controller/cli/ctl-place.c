// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjailctl place --app NAME PID...: move running processes into an app's jail group. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"
#include "qosjail.h"

int ctl_place(int argc, char **argv, const struct ctl_options *o)
{
	static const struct option opts[] = { { "app", required_argument, NULL, 'a' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	struct qj_conn *conn = NULL;
	const char *app = NULL;
	int c, ret = CTL_EXIT_OK;

	while ((c = getopt_long(argc, argv, "a:h", opts, NULL)) >= 0) {
		switch (c) {
		case 'a':
			app = optarg;
			break;
		case 'h':
			printf("Usage: qosjailctl place --app NAME PID...\n");
			return CTL_EXIT_OK;
		default:
			return CTL_EXIT_INVALID;
		}
	}
	if (!app || optind >= argc) {
		fprintf(stderr, "qosjailctl place: --app and at least one PID are required\n");
		return CTL_EXIT_INVALID;
	}
	for (int i = optind; i < argc; i++) {
		char *end;
		long v = strtol(argv[i], &end, 10);

		if (*end || v <= 0 || v > INT32_MAX) {
			fprintf(stderr, "qosjailctl place: bad pid '%s'\n", argv[i]);
			return CTL_EXIT_INVALID;
		}
	}
	if (ctl_connect(o, &conn) < 0)
		return CTL_EXIT_FAILURE;
	for (int i = optind; i < argc; i++) {
		int r = qj_place(conn, app, (pid_t)strtol(argv[i], NULL, 10));

		if (r < 0)
			ret = ctl_fail(conn, r, argv[i]);
	}
	qj_close(conn);
	return ret;
}
