// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjailctl status [--json] and qosjailctl holds [--json]. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "escape.h"
#include "qosjail.h"

static int parse_json_flag(int argc, char **argv, const char *usage, bool *ret_json)
{
	static const struct option opts[] = { { "json", no_argument, NULL, 'j' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	int c;

	*ret_json = false;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) >= 0) {
		if (c == 'j') {
			*ret_json = true;
		} else if (c == 'h') {
			printf("Usage: %s\n", usage);
			return 0;
		} else {
			return -EINVAL;
		}
	}
	return optind < argc ? -EINVAL : 1;
}

static long long num(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static void print_holds_table(const json_t *holds)
{
	size_t i;
	json_t *h;

	if (json_array_size(holds) == 0) {
		printf("  (none)\n");
		return;
	}
	printf("  %-20s %-8s %-6s %-16s %-10s %-10s %s\n", "NAME", "PID", "UID", "COMM", "AGE",
	       "TIMEOUT", "REASON");
	json_array_foreach (holds, i, h) {
		char age[32], left[32] = "-";

		ctl_format_usec((unsigned long long)num(h, "age_usec"), age, sizeof(age));
		if (num(h, "timeout_left_usec") >= 0)
			ctl_format_usec((unsigned long long)num(h, "timeout_left_usec"), left,
					sizeof(left));
		printf("  %-20s %-8lld %-6lld %-16s %-10s %-10s %s%s%s%s\n", str(h, "name"),
		       num(h, "pid"), num(h, "uid"), str(h, "comm"), age, left, str(h, "reason"),
		       str(h, "app")[0] ? " [app " : "", str(h, "app"),
		       str(h, "app")[0] ? "]" : "");
	}
}

/*
 * The reply as JSON (@ret) and text (@ret_text).  Every string of @ret is
 * escaped for a terminal: names, reasons and comms are whatever other users
 * chose, and a listing must not let them recolour the screen or forge a line.
 */
static int fetch(const struct ctl_options *o, int (*fn)(struct qj_conn *, char **),
		 const char *what, json_t **ret, char **ret_text)
{
	struct qj_conn *conn = NULL;
	char *text = NULL;
	int r;

	if (ctl_connect(o, &conn) < 0)
		return CTL_EXIT_FAILURE;
	r = fn(conn, &text);
	if (r < 0) {
		ctl_fail(conn, r, what);
		qj_close(conn);
		return CTL_EXIT_FAILURE;
	}
	qj_close(conn);
	*ret = json_loads(text, 0, NULL);
	if (!*ret || qj_json_escape_strings(*ret, QJ_ESCAPE_TERMINAL) < 0) {
		json_decref(*ret);
		free(text);
		fprintf(stderr, "qosjailctl %s: malformed reply\n", what);
		return CTL_EXIT_FAILURE;
	}
	*ret_text = text;
	return CTL_EXIT_OK;
}

/* Trusted processes waiting on a lock or a FUSE server of the jail (issue 25 finding 6). */
static void print_waiting(json_t *a)
{
	size_t i;
	json_t *w;

	if (json_array_size(a) == 0)
		return;
	printf("Waiting on the jail (trusted):\n");
	json_array_foreach (a, i, w)
		printf("  pid %lld (%s) %s\n", num(w, "pid"), str(w, "comm"), str(w, "text"));
}

int ctl_status(int argc, char **argv, const struct ctl_options *o)
{
	json_t *j = NULL, *jail, *last, *kl;
	char *text = NULL, age[32];
	bool as_json;
	int r;

	r = parse_json_flag(argc, argv, "qosjailctl status [--json]", &as_json);
	if (r <= 0)
		return r < 0 ? CTL_EXIT_INVALID : CTL_EXIT_OK;
	r = fetch(o, qj_status, "status", &j, &text);
	if (r != CTL_EXIT_OK)
		return r;
	if (as_json || o->json) {
		printf("%s\n", text);
	} else {
		jail = json_object_get(j, "jail");
		last = json_object_get(j, "last");
		ctl_format_usec((unsigned long long)num(j, "state_age_usec"), age, sizeof(age));
		printf("State:    %s for %s (cycle %lld)%s\n", str(j, "state"), age,
		       num(j, "cycle"),
		       json_is_true(json_object_get(j, "kept_quiesced")) ?
			       ", jail kept quiesced after a dark wake" :
			       "");
		printf("Backend:  %s\nPolicy:   %s\n", str(j, "backend"), str(j, "policy"));
		ctl_format_usec((unsigned long long)num(last, "age_usec"), age, sizeof(age));
		printf("Last:     %s%s%s%s (%s ago)\n", str(last, "result"),
		       str(last, "error")[0] ? " (" : "", str(last, "error"),
		       str(last, "error")[0] ? ")" : "", age);
		printf("Cycles:   %lld suspended, %lld aborted, %lld failed\n", num(j, "suspends"),
		       num(j, "aborts"), num(j, "failures"));
		if (num(j, "retry_usec") > 0) {
			ctl_format_usec((unsigned long long)num(j, "retry_usec"), age, sizeof(age));
			printf("Backoff:  %s after a failed cycle\n", age);
		}
		printf("Jail:     %s: %lld apps, %lld tasks, %lld busy, %lld stopped, %lld frozen, "
		       "%lld killed\n",
		       str(jail, "cgroup"), num(jail, "apps"), num(jail, "tasks"),
		       num(jail, "busy"), num(jail, "stopped"), num(jail, "frozen"),
		       num(jail, "killed"));
		if (str(jail, "holding_app")[0])
			printf("Quiesce:  %lld ms of at most %lld ms, waiting for app %s: %s\n",
			       num(jail, "quiesce_ms"), num(jail, "bound_ms"),
			       str(jail, "holding_app"), str(jail, "holding"));
		print_waiting(json_object_get(j, "waiting_on_jail"));
		printf("Clients:  %lld\nHolds:    %lld%s\n", num(j, "clients"),
		       num(j, "holds_total"),
		       json_is_true(json_object_get(j, "truncated")) ? " (the oldest listed)" : "");
		print_holds_table(json_object_get(j, "holds"));
		kl = json_object_get(j, "kill_log");
		if (kl) { /* an older daemon does not say */
			printf("Kill log: %s", str(kl, "path"));
			if (num(kl, "lost") > 0)
				printf(": %lld records not written (%s), %lld not yet told by a "
				       "gap record",
				       num(kl, "lost"), str(kl, "error"), num(kl, "unrecorded"));
			printf("\n");
		}
	}
	json_decref(j);
	free(text);
	return CTL_EXIT_OK;
}

int ctl_holds(int argc, char **argv, const struct ctl_options *o)
{
	json_t *j = NULL, *s;
	char *text = NULL;
	bool as_json;
	size_t i;
	int r;

	r = parse_json_flag(argc, argv, "qosjailctl holds [--json]", &as_json);
	if (r <= 0)
		return r < 0 ? CTL_EXIT_INVALID : CTL_EXIT_OK;
	r = fetch(o, qj_holds, "holds", &j, &text);
	if (r != CTL_EXIT_OK)
		return r;
	if (as_json || o->json) {
		printf("%s\n", text);
	} else {
		printf("Live holds:\n");
		print_holds_table(json_object_get(j, "holds"));
		printf("\nStatistics (like /sys/kernel/debug/wakeup_sources):\n");
		printf("  %-20s %6s %8s %8s %8s %12s %12s %12s %14s\n", "NAME", "ACTIVE", "ACT_CNT",
		       "EVENTS", "EXPIRED", "TOTAL", "MAX", "LAST_CHANGE", "PREVENT_SUSP");
		json_array_foreach (json_object_get(j, "stats"), i, s) {
			char total[32], max[32], last[32], prevent[32];

			ctl_format_usec((unsigned long long)num(s, "total_time_usec"), total,
					sizeof(total));
			ctl_format_usec((unsigned long long)num(s, "max_time_usec"), max,
					sizeof(max));
			ctl_format_usec((unsigned long long)(num(j, "now_usec") -
							     num(s, "last_change_usec")),
					last, sizeof(last));
			ctl_format_usec((unsigned long long)num(s, "prevent_suspend_time_usec"),
					prevent, sizeof(prevent));
			printf("  %-20s %6lld %8lld %8lld %8lld %12s %12s %8s ago %14s\n",
			       str(s, "name"), num(s, "active"), num(s, "active_count"),
			       num(s, "event_count"), num(s, "expire_count"), total, max, last,
			       prevent);
		}
	}
	json_decref(j);
	free(text);
	return CTL_EXIT_OK;
}
