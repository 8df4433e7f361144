// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjailctl suspend: start a suspend cycle now; qosjailctl reload [FILE]. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"
#include "qosjail.h"

int ctl_suspend(int argc, char **argv, const struct ctl_options *o)
{
	struct qj_conn *conn = NULL;
	int r;

	if (argc > 1) {
		fprintf(stderr, "Usage: qosjailctl suspend\n");
		return strcmp(argv[1], "--help") == 0 ? CTL_EXIT_OK : CTL_EXIT_INVALID;
	}
	if (ctl_connect(o, &conn) < 0)
		return CTL_EXIT_FAILURE;
	r = qj_suspend(conn);
	if (r < 0)
		ctl_fail(conn, r, "suspend");
	qj_close(conn);
	return r < 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
}

int ctl_reload(int argc, char **argv, const struct ctl_options *o)
{
	struct qj_conn *conn = NULL;
	int r;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		fprintf(stderr, "Usage: qosjailctl reload [FILE]\n");
		return argc == 2 && strcmp(argv[1], "--help") == 0 ? CTL_EXIT_OK : CTL_EXIT_INVALID;
	}
	if (ctl_connect(o, &conn) < 0)
		return CTL_EXIT_FAILURE;
	r = qj_reload(conn, argc == 2 ? argv[1] : NULL);
	if (r < 0)
		ctl_fail(conn, r, "reload (the running policy is unchanged)");
	qj_close(conn);
	return r == -EINVAL ? CTL_EXIT_INVALID : r < 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
}
