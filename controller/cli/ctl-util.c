// SPDX-License-Identifier: LGPL-2.1-or-later
/* Helpers shared by the verbs that talk to qosjaild. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "ctl.h"
#include "escape.h"
#include "qosjail.h"

int ctl_connect(const struct ctl_options *o, struct qj_conn **ret)
{
	int r = qj_open(o->socket_path, ret);

	if (r < 0)
		fprintf(stderr, "qosjailctl: cannot talk to qosjaild at %s: %s\n",
			o->socket_path ? o->socket_path : QJ_DEFAULT_SOCKET, strerror(-r));
	return r;
}

int ctl_fail(struct qj_conn *c, int r, const char *what)
{
	/* The daemon's message may quote names a client chose: escaped for the terminal. */
	char *msg = qj_escape(c ? qj_last_error(c) : "", QJ_ESCAPE_TERMINAL);

	fprintf(stderr, "qosjailctl: %s: %s%s%s\n", what, strerror(-r), msg && msg[0] ? ": " : "",
		msg ? msg : "");
	free(msg);
	return CTL_EXIT_FAILURE;
}

int ctl_exit_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return CTL_EXIT_FAILURE;
}

void ctl_format_usec(unsigned long long usec, char *buf, size_t size)
{
	if (usec >= 3600ULL * 1000000)
		snprintf(buf, size, "%lluh%02llum", usec / 3600000000ULL, usec / 60000000ULL % 60);
	else if (usec >= 60ULL * 1000000)
		snprintf(buf, size, "%llum%02llus", usec / 60000000ULL, usec / 1000000ULL % 60);
	else if (usec >= 1000000)
		snprintf(buf, size, "%llu.%01llus", usec / 1000000ULL, usec / 100000ULL % 10);
	else
		snprintf(buf, size, "%llums", usec / 1000ULL);
}
