// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjailctl monitor [--json] [--count N]: the suspend cycle's events as they happen. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "qosjail.h"

static const char usage[] = "Usage: qosjailctl monitor [--json] [--count N]\n";

/* One line for people: "cycle 12: quiescing", "cycle 12: resumed (suspended)". */
static void print_event(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);
	const char *ev = json_string_value(json_object_get(j, "event"));
	const char *result = json_string_value(json_object_get(j, "result"));

	printf("cycle %lld: %s", (long long)json_integer_value(json_object_get(j, "cycle")),
	       ev ? ev : "?");
	if (json_is_true(json_object_get(j, "delay")))
		printf(" (waiting for delay holds)");
	if (result)
		printf(" (%s)", result);
	putchar('\n');
	json_decref(j);
}

int ctl_monitor(int argc, char **argv, const struct ctl_options *o)
{
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' },
					      { "count", required_argument, NULL, 'n' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	struct qj_conn *conn = NULL;
	long long count = -1;
	bool json = false;
	char *end, *text;
	int c, r;

	while ((c = getopt_long(argc, argv, "jn:h", opts, NULL)) >= 0) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'n':
			errno = 0;
			count = strtoll(optarg, &end, 10);
			if (errno || *end || count < 1) {
				fprintf(stderr,
					"qosjailctl monitor: --count wants a number >= 1\n");
				return CTL_EXIT_INVALID;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return CTL_EXIT_OK;
		default:
			fputs(usage, stderr);
			return CTL_EXIT_INVALID;
		}
	}
	if (optind < argc) {
		fputs(usage, stderr);
		return CTL_EXIT_INVALID;
	}
	if (ctl_connect(o, &conn) < 0)
		return CTL_EXIT_FAILURE;
	r = qj_subscribe(conn, 0);
	if (r < 0) {
		ctl_fail(conn, r, "subscribe");
		qj_close(conn);
		return CTL_EXIT_FAILURE;
	}
	for (; count != 0; count -= count > 0) {
		r = qj_event_next(conn, -1, &text);
		if (r < 0)
			break;
		if (json)
			puts(text);
		else
			print_event(text);
		fflush(stdout);
		free(text);
	}
	if (r < 0)
		fprintf(stderr, "qosjailctl monitor: %s\n",
			r == -ECONNRESET ? "the daemon closed the connection" : strerror(-r));
	qj_close(conn);
	return r < 0 ? CTL_EXIT_FAILURE : CTL_EXIT_OK;
}
