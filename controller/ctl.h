/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * qosjailctl verbs.  Each takes the arguments after the verb (argv[0] is the
 * verb) and returns the process exit status.
 */
#ifndef QJ_CTL_H
#define QJ_CTL_H

#include <stdbool.h>

/* Exit statuses shared by all verbs (documented in qosjailctl(1)). */
enum {
	CTL_EXIT_OK = 0,
	CTL_EXIT_FAILURE = 1, /* operation failed (daemon error, I/O) */
	CTL_EXIT_INVALID = 2, /* invalid policy or invalid usage */
};

struct ctl_options {
	const char *socket_path;
	bool json;
};

/* qosjailctl log: the kill log as a table or JSON Lines (ctl-log.c). */
int ctl_log(int argc, char **argv, const struct ctl_options *o);

#endif
