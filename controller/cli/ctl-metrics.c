// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * qosjailctl metrics: the daemon's counters in the Prometheus text exposition format,
 * printed as the daemon made them (the same text as qosjaild --metrics-file).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "qosjail.h"

int ctl_metrics(int argc, char **argv, const struct ctl_options *o)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, {} };
	struct qj_conn *conn = NULL;
	char *text = NULL;
	int c, r;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
		if (c != 'h')
			goto invalid;
		printf("Usage: qosjailctl metrics\n\n"
		       "Print qosjaild's counters in the Prometheus text exposition format 0.0.4:\n"
		       "holds and time held by name, cycles by result, the quiesce duration\n"
		       "histogram, actions by app and rung, jail tasks by app, backend errors.\n");
		return CTL_EXIT_OK;
	}
	if (optind < argc)
		goto invalid;
	if (ctl_connect(o, &conn) < 0)
		return CTL_EXIT_FAILURE;
	r = qj_metrics(conn, &text);
	if (r < 0) {
		ctl_fail(conn, r, "metrics");
		qj_close(conn);
		return CTL_EXIT_FAILURE;
	}
	qj_close(conn);
	/* Label values are escaped by the daemon as the format says: no raw control bytes. */
	fputs(text, stdout);
	free(text);
	return CTL_EXIT_OK;
invalid:
	fprintf(stderr, "qosjailctl metrics: invalid usage; see qosjailctl metrics --help\n");
	return CTL_EXIT_INVALID;
}
