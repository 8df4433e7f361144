// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjailctl explain [--json] PID: why a process is or is not jailed, what a quiesce would do. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"
#include "escape.h"
#include "qosjail.h"

static const char *str(const json_t *o, const char *key, const char *fallback)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : fallback;
}

static void print_ladder(const json_t *ladder)
{
	size_t i;
	json_t *r;

	if (json_array_size(ladder) == 0) {
		printf("nothing (not escalated against)\n");
		return;
	}
	json_array_foreach (ladder, i, r) {
		char grace[32];

		ctl_format_usec(
			(unsigned long long)json_integer_value(json_object_get(r, "grace_usec")),
			grace, sizeof(grace));
		printf("%s%s (%s, grace %s)", i ? " -> " : "", str(r, "name", "?"),
		       str(r, "action", "?"), grace);
	}
	printf("\n");
}

static void print_explain(const json_t *j)
{
	const json_t *cy = json_object_get(j, "cycle");

	printf("Process:  %lld (%s) %s, uid %lld\n",
	       (long long)json_integer_value(json_object_get(j, "pid")), str(j, "comm", "?"),
	       str(j, "exe", "(no executable)"),
	       (long long)json_integer_value(json_object_get(j, "uid")));
	printf("Jailed:   %s\n", json_is_true(json_object_get(j, "jailed")) ? "yes" : "no");
	printf("Why:      %s\n", str(j, "why", ""));
	if (json_is_string(json_object_get(j, "app")))
		printf("App:      %s (%s%s), %lld strike(s)\n", str(j, "app", ""),
		       str(j, "trust", "not in the policy"),
		       json_is_true(json_object_get(j, "exempt")) ? ", exempt" : "",
		       (long long)json_integer_value(json_object_get(j, "strikes")));
	printf("If busy:  ");
	print_ladder(json_object_get(j, "ladder"));
	if (json_is_true(json_object_get(cy, "quiescing")))
		printf("Now:      quiescing; %s%s%s%s%s\n",
		       json_is_true(json_object_get(cy, "tracked")) ? str(cy, "activity", "?") :
								      "not tracked",
		       json_is_string(json_object_get(cy, "rung")) ? ", last rung " : "",
		       str(cy, "rung", ""),
		       json_is_true(json_object_get(cy, "stopped_by_qosjail")) ?
			       ", stopped by qosjail" :
			       "",
		       json_is_true(json_object_get(cy, "frozen")) ? ", group frozen" : "");
	if (json_is_string(json_object_get(cy, "holding")))
		printf("Holding:  its app holds the quiesce up: %s\n", str(cy, "holding", ""));
	else if (!json_is_true(json_object_get(cy, "quiescing")))
		printf("Now:      no quiesce running\n");
	for (size_t i = 0; i < json_array_size(json_object_get(j, "waiting_on_jail")); i++)
		printf("Waits:    %s\n",
		       str(json_array_get(json_object_get(j, "waiting_on_jail"), i), "text", ""));
}

int ctl_explain(int argc, char **argv, const struct ctl_options *o)
{
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	struct qj_conn *conn = NULL;
	bool as_json = o->json;
	char *text = NULL, *end;
	json_t *j;
	long pid;
	int c, r;

	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) >= 0) {
		switch (c) {
		case 'j':
			as_json = true;
			break;
		case 'h':
			printf("Usage: qosjailctl explain [--json] PID\n");
			return CTL_EXIT_OK;
		default:
			return CTL_EXIT_INVALID;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "qosjailctl explain: exactly one PID is required\n");
		return CTL_EXIT_INVALID;
	}
	pid = strtol(argv[optind], &end, 10);
	if (*end || end == argv[optind] || pid <= 0 || pid > INT32_MAX) {
		fprintf(stderr, "qosjailctl explain: bad pid '%s'\n", argv[optind]);
		return CTL_EXIT_INVALID;
	}
	if (ctl_connect(o, &conn) < 0)
		return CTL_EXIT_FAILURE;
	r = qj_explain(conn, (pid_t)pid, &text);
	if (r < 0) {
		ctl_fail(conn, r, "explain");
		qj_close(conn);
		return CTL_EXIT_FAILURE;
	}
	qj_close(conn);
	j = json_loads(text, 0, NULL);
	if (!j) {
		fprintf(stderr, "qosjailctl explain: malformed reply\n");
		free(text);
		return CTL_EXIT_FAILURE;
	}
	if (as_json) {
		printf("%s\n", text);
	} else if (qj_json_escape_strings(j, QJ_ESCAPE_TERMINAL) < 0) {
		fprintf(stderr, "qosjailctl explain: out of memory\n");
		json_decref(j);
		free(text);
		return CTL_EXIT_FAILURE;
	} else {
		/* comm and exe are the process's own choice: no raw control characters. */
		print_explain(j);
	}
	json_decref(j);
	free(text);
	return CTL_EXIT_OK;
}
