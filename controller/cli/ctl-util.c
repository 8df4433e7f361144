// SPDX-License-Identifier: LGPL-2.1-or-later
/* Helpers shared by the verbs that talk to qosjaild. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "ctl.h"
#include "escape.h"
#include "killlog.h"
#include "qosjail.h"
#include "rfc3339.h"
#include "util.h"

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

/* "12h", "30m", "2d", "45s" before now, or an RFC3339 time. */
int ctl_parse_since(const char *s, uint64_t *ret)
{
	static const struct {
		char unit;
		uint64_t usec;
	} units[] = { { 's', USEC_PER_SEC },
		      { 'm', 60 * USEC_PER_SEC },
		      { 'h', 3600 * USEC_PER_SEC },
		      { 'd', 86400 * USEC_PER_SEC } };
	uint64_t now = now_usec(CLOCK_REALTIME);
	char *end;
	unsigned long long n;

	if (qj_parse_rfc3339(s, ret) == 0)
		return 0;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno || end == s || end[0] == 0 || end[1] != 0)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (units[i].unit == end[0]) {
			uint64_t d = n * units[i].usec;

			*ret = d >= now ? 1 : now - d;
			return 0;
		}
	return -EINVAL;
}
