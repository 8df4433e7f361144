// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * qosjailctl report --html FILE: gathers the kill log (cycles and actions), the
 * daemon's hold history and hold statistics, and writes one self-contained HTML
 * timeline (ctl-report-html.c draws it).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl-report-html.h"
#include "ctl.h"
#include "killlog-read.h"
#include "killlog.h"
#include "qosjail.h"
#include "util.h"

#define DEFAULT_KILL_LOG "/var/log/qosjail/kill.log"

static void help(void)
{
	printf("Usage: qosjailctl report --html FILE [OPTIONS]\n\n"
	       "Write a self-contained HTML page (no network) with a timeline of holds, suspend\n"
	       "cycles (quiescing, suspending, resumed) and every escalation action by app,\n"
	       "and a table of hold statistics.\n\n"
	       "  -o, --html FILE      the page to write\n"
	       "  -S, --since WHEN     from WHEN on: 12h, 30m, 2d, 45s or RFC3339\n"
	       "                       (default: the oldest record)\n"
	       "  -f, --file PATH      read this kill log instead of asking the daemon for it\n"
	       "                       (holds still come from the daemon when it answers)\n");
}

static int collect(json_t *rec, void *userdata)
{
	return json_array_append(userdata, rec);
}

/* The kill log's records since @since: from @path, or through the daemon. */
static int read_log(struct qj_conn *conn, const char *path, uint64_t since, json_t **ret)
{
	struct qj_killlog_filter flt = { .since_usec = since };
	_cleanup_fclose_ FILE *f = NULL;
	json_t *a = json_array();
	int fd = -1, r;

	if (!a)
		return -ENOMEM;
	if (path) {
		f = fopen(path, "re");
		if (!f)
			r = -errno;
	} else if (!conn) {
		r = -ENOTCONN;
	} else {
		r = qj_kill_log_open(conn, &fd);
		if (r >= 0) {
			f = fdopen(fd, "r");
			if (!f) {
				r = -errno;
				(void)close(fd);
			}
		}
	}
	if (f)
		r = qj_killlog_read(f, &flt, collect, a);
	if (r < 0) {
		json_decref(a);
		return r;
	}
	*ret = a;
	return 0;
}

static json_t *fetch_json(struct qj_conn *conn, int (*fn)(struct qj_conn *, char **))
{
	char *text = NULL;
	json_t *j;

	if (!conn || fn(conn, &text) < 0)
		return NULL;
	j = json_loads(text, 0, NULL);
	free(text);
	return j;
}

int ctl_report(int argc, char **argv, const struct ctl_options *o)
{
	static const struct option opts[] = { { "html", required_argument, NULL, 'o' },
					      { "since", required_argument, NULL, 'S' },
					      { "file", required_argument, NULL, 'f' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	struct ctl_report_data data = {};
	const char *out = NULL, *log_path = NULL;
	struct qj_conn *conn = NULL;
	char tmp[4096];
	FILE *f;
	int c, r, ret = CTL_EXIT_FAILURE;

	while ((c = getopt_long(argc, argv, "o:S:f:h", opts, NULL)) >= 0) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'S':
			if (ctl_parse_since(optarg, &data.since_usec) < 0)
				goto invalid;
			break;
		case 'f':
			log_path = optarg;
			break;
		case 'h':
			help();
			return CTL_EXIT_OK;
		default:
			goto invalid;
		}
	}
	if (optind < argc || !out)
		goto invalid;

	/* Without --file the daemon is needed for the log; with it, only for the holds. */
	if (log_path)
		(void)qj_open(o->socket_path, &conn);
	else if (ctl_connect(o, &conn) < 0)
		return CTL_EXIT_FAILURE;
	r = read_log(conn, log_path, data.since_usec, &data.records);
	if (r < 0) {
		if (conn)
			ctl_fail(conn, r, "report: the kill log");
		else
			fprintf(stderr, "qosjailctl report: cannot read %s: %s\n", log_path,
				strerror(-r));
		goto out;
	}
	data.history = fetch_json(conn, qj_hold_history);
	data.holds = fetch_json(conn, qj_holds);
	data.now_usec = now_usec(CLOCK_REALTIME);

	/* Written beside the target and renamed: a reader never sees half a page. */
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", out) >= sizeof(tmp)) {
		fprintf(stderr, "qosjailctl report: %s: name too long\n", out);
		goto out;
	}
	f = fopen(tmp, "wxe");
	if (!f) {
		fprintf(stderr, "qosjailctl report: cannot create %s: %s\n", tmp, strerror(errno));
		goto out;
	}
	r = ctl_report_html(f, &data);
	if (fclose(f) != 0 && r >= 0)
		r = negative_errno();
	if (r >= 0 && rename(tmp, out) < 0)
		r = negative_errno();
	if (r < 0) {
		(void)unlink(tmp);
		fprintf(stderr, "qosjailctl report: cannot write %s: %s\n", out, strerror(-r));
		goto out;
	}
	printf("%s: %zu cycles, %zu actions, %zu hold periods%s\n", out, data.n_cycles,
	       data.n_actions, data.n_hold_periods,
	       data.history ? "" : " (no hold history: the daemon did not answer)");
	ret = CTL_EXIT_OK;
out:
	json_decref(data.records);
	json_decref(data.history);
	json_decref(data.holds);
	qj_close(conn);
	return ret;
invalid:
	fprintf(stderr, "qosjailctl report: invalid usage; see qosjailctl report --help\n");
	return CTL_EXIT_INVALID;
}
