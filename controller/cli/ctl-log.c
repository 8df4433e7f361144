// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * qosjailctl log: reads the kill log file (no daemon needed), filters, prints a
 * table or JSON Lines, and with --follow waits on inotify for appends and
 * rotations.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "actions.h"
#include "ctl.h"
#include "escape.h"
#include "killlog-read.h"
#include "killlog.h"
#include "util.h"

#define DEFAULT_KILL_LOG "/var/log/qosjail/kill.log"

struct log_out {
	bool json;
	size_t limit; /* 0: all */
	json_t **ring;
	size_t n, next;
	bool header_done;
};

static void print_header(struct log_out *o)
{
	if (o->json || o->header_done)
		return;
	printf("%-19s %-6s %-12s %-7s %-16s %-9s %-18s %-12s %s\n", "TIME", "CYCLE", "APP", "PID",
	       "COMM", "ACTION", "REASON", "CPU", "OUTCOME");
	o->header_done = true;
}

static const char *str(json_t *rec, const char *key)
{
	const char *s = json_string_value(json_object_get(rec, key));

	return s ? s : "-";
}

static void print_record(struct log_out *o, json_t *rec)
{
	char when[20], cpu[32];

	if (o->json) {
		char *line = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);

		if (line)
			printf("%s\n", line);
		free(line);
		return;
	}
	print_header(o);
	/* Every field may carry another user's bytes (comm, exe, reason): escaped for the terminal. */
	if (qj_json_escape_strings(rec, QJ_ESCAPE_TERMINAL) < 0) {
		printf("(record not shown: out of memory)\n");
		return;
	}
	/* "2026-12-03T09:05:41.123Z" -> "2026-12-03 09:05:41" */
	snprintf(when, sizeof(when), "%s", str(rec, "ts"));
	if (strlen(when) > 10)
		when[10] = ' ';
	snprintf(cpu, sizeof(cpu), "%lld/%lld ms",
		 (long long)json_integer_value(json_object_get(rec, "cpu_ms")),
		 (long long)json_integer_value(json_object_get(rec, "window_ms")));
	if (strcmp(str(rec, "action"), "gap") == 0) {
		/* The daemon could not write these (disk full): say so where they would be. */
		printf("%-19s %-6s %-12s %-7s %-16s %-9s %lld records lost (%s) from %s to %s\n",
		       when, "-", "-", "-", "-", "gap",
		       (long long)json_integer_value(json_object_get(rec, "lost")),
		       str(rec, "error"), str(rec, "first_ts"), str(rec, "last_ts"));
		return;
	}
	if (strcmp(str(rec, "action"), "summary") == 0) {
		printf("%-19s %-6lld %-12s %-7s %-16s %-9s %-18s %-12s %s (%lld actions, %lld "
		       "stopped, %lld killed)\n",
		       when, (long long)json_integer_value(json_object_get(rec, "cycle")), "-", "-",
		       "-", "summary", str(rec, "reason"), cpu, str(rec, "outcome"),
		       (long long)json_integer_value(json_object_get(rec, "actions")),
		       (long long)json_integer_value(json_object_get(rec, "stopped")),
		       (long long)json_integer_value(json_object_get(rec, "killed")));
		return;
	}
	printf("%-19s %-6lld %-12.12s %-7lld %-16.16s %-9s %-18.18s %-12s %s\n", when,
	       (long long)json_integer_value(json_object_get(rec, "cycle")), str(rec, "app"),
	       (long long)json_integer_value(json_object_get(rec, "pid")), str(rec, "comm"),
	       str(rec, "action"), str(rec, "reason"), cpu, str(rec, "outcome"));
}

static int collect(json_t *rec, void *ud)
{
	struct log_out *o = ud;

	if (o->limit == 0) {
		print_record(o, rec);
		return 0;
	}
	/* Keep the newest --limit records. */
	if (o->ring[o->next])
		json_decref(o->ring[o->next]);
	o->ring[o->next] = json_incref(rec);
	o->next = (o->next + 1) % o->limit;
	if (o->n < o->limit)
		o->n++;
	return 0;
}

static int print_live(json_t *rec, void *ud)
{
	print_record(ud, rec);
	(void)fflush(stdout);
	return 0;
}

static void flush_ring(struct log_out *o)
{
	size_t start = o->n < o->limit ? 0 : o->next;

	for (size_t i = 0; i < o->n; i++) {
		json_t *rec = o->ring[(start + i) % o->limit];

		print_record(o, rec);
		json_decref(rec);
		o->ring[(start + i) % o->limit] = NULL;
	}
	o->n = 0;
}

static int follow(const char *path, FILE *f, const struct qj_killlog_filter *flt, struct log_out *o)
{
	_cleanup_free_ char *dir = strdup(path);
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	_cleanup_close_ int fd = -EBADF;
	char *slash;
	int wd_file, wd_dir;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = 0;
	else
		strcpy(dir, ".");
	fd = inotify_init1(IN_CLOEXEC);
	if (fd < 0)
		return -errno;
	wd_file = inotify_add_watch(fd, path, IN_MODIFY);
	/* Rotation renames the file and creates a new one. */
	wd_dir = inotify_add_watch(fd, dir, IN_CREATE | IN_MOVED_TO);
	if (wd_file < 0 || wd_dir < 0)
		return -errno;
	for (;;) {
		char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
		bool reopen = false;
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			if (ev->wd == wd_dir && ev->len && strcmp(ev->name, base) == 0)
				reopen = true;
			p += sizeof(*ev) + ev->len;
		}
		/* Whatever is left in the old file first, then the new one. */
		clearerr(f);
		(void)qj_killlog_read(f, flt, print_live, o);
		if (reopen) {
			FILE *nf = fopen(path, "re");

			if (!nf)
				continue;
			fclose(f);
			f = nf;
			(void)inotify_rm_watch(fd, wd_file);
			wd_file = inotify_add_watch(fd, path, IN_MODIFY);
			(void)qj_killlog_read(f, flt, print_live, o);
		}
	}
}

static void help(void)
{
	char actions[128];

	qj_action_list(actions, sizeof(actions), ", ");
	printf("Usage: qosjailctl log [OPTIONS]\n\n"
	       "Show the kill log: every escalation action and one summary per cycle.\n\n"
	       "  -f, --file PATH      log file (default " DEFAULT_KILL_LOG ")\n"
	       "  -a, --app APP        only this app\n"
	       "  -p, --pid PID        only this process\n"
	       "  -A, --action ACTION  only this action: exit, summary, gap (records lost to a\n"
	       "                       full disk) or a rung's action, any case (older logs'\n"
	       "                       sigstop matches too):\n"
	       "                       %s\n"
	       "  -c, --cycle N        only this quiesce cycle\n"
	       "  -S, --since WHEN     newer than WHEN: 12h, 30m, 2d, 45s or RFC3339\n"
	       "  -n, --limit N        only the newest N records\n"
	       "  -F, --follow         keep printing records as they are appended\n"
	       "  -j, --json           JSON Lines instead of a table\n",
	       actions);
}

int ctl_log(int argc, char **argv, const struct ctl_options *opts)
{
	static const struct option options[] = { { "file", required_argument, NULL, 'f' },
						 { "app", required_argument, NULL, 'a' },
						 { "pid", required_argument, NULL, 'p' },
						 { "action", required_argument, NULL, 'A' },
						 { "cycle", required_argument, NULL, 'c' },
						 { "since", required_argument, NULL, 'S' },
						 { "limit", required_argument, NULL, 'n' },
						 { "follow", no_argument, NULL, 'F' },
						 { "json", no_argument, NULL, 'j' },
						 { "help", no_argument, NULL, 'h' },
						 {} };
	struct qj_killlog_filter flt = {};
	struct log_out o = { .json = opts && opts->json };
	const char *path = DEFAULT_KILL_LOG;
	bool do_follow = false;
	FILE *f;
	char *end;
	int c, r;

	while ((c = getopt_long(argc, argv, "f:a:p:A:c:S:n:Fjh", options, NULL)) >= 0) {
		switch (c) {
		case 'f':
			path = optarg;
			break;
		case 'a':
			flt.app = optarg;
			break;
		case 'p':
			flt.pid = (pid_t)strtol(optarg, &end, 10);
			if (*end || flt.pid <= 0)
				goto invalid;
			break;
		case 'A':
			flt.action = optarg;
			break;
		case 'c':
			flt.cycle = strtoull(optarg, &end, 10);
			if (*end)
				goto invalid;
			flt.has_cycle = true;
			break;
		case 'S':
			if (ctl_parse_since(optarg, &flt.since_usec) < 0)
				goto invalid;
			break;
		case 'n':
			o.limit = strtoul(optarg, &end, 10);
			if (*end || o.limit == 0 || o.limit > 1000000)
				goto invalid;
			break;
		case 'F':
			do_follow = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 'h':
			help();
			return CTL_EXIT_OK;
		default:
			goto invalid;
		}
	}
	if (optind < argc)
		goto invalid;
	if (o.limit) {
		o.ring = calloc(o.limit, sizeof(*o.ring));
		if (!o.ring)
			return CTL_EXIT_FAILURE;
	}
	f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "qosjailctl log: cannot open %s: %s\n", path, strerror(errno));
		free(o.ring);
		return CTL_EXIT_FAILURE;
	}
	r = qj_killlog_read(f, &flt, collect, &o);
	if (o.limit)
		flush_ring(&o);
	free(o.ring);
	o.ring = NULL;
	o.limit = 0;
	if (r >= 0 && !o.json && !do_follow && r == 0)
		fprintf(stderr, "qosjailctl log: no matching records in %s\n", path);
	(void)fflush(stdout);
	if (r >= 0 && do_follow)
		r = follow(path, f, &flt, &o);
	fclose(f);
	if (r < 0) {
		fprintf(stderr, "qosjailctl log: %s: %s\n", path, strerror(-r));
		return CTL_EXIT_FAILURE;
	}
	return CTL_EXIT_OK;
invalid:
	fprintf(stderr, "qosjailctl log: invalid usage; see qosjailctl log --help\n");
	return CTL_EXIT_INVALID;
}
