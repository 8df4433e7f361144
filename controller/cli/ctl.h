/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * qosjailctl verbs.  Each takes the arguments after the verb (argv[0] is the
 * verb) and returns the process exit status.
 */
#ifndef QJ_CTL_H
#define QJ_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct qj_conn;

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

/* qosjailctl check [--dump] [--quiet] FILE...: validates policies offline (ctl-check.c). */
int ctl_check(int argc, char **argv, const struct ctl_options *o);

/* Daemon verbs (ctl-hold.c, ctl-status.c, ctl-suspend.c, ctl-run.c, ctl-place.c). */
int ctl_hold(int argc, char **argv, const struct ctl_options *o);
int ctl_holds(int argc, char **argv, const struct ctl_options *o);
int ctl_status(int argc, char **argv, const struct ctl_options *o);
int ctl_suspend(int argc, char **argv, const struct ctl_options *o);
int ctl_reload(int argc, char **argv, const struct ctl_options *o);
int ctl_run(int argc, char **argv, const struct ctl_options *o);
int ctl_place(int argc, char **argv, const struct ctl_options *o);
/* qosjailctl monitor [--json] [--count N]: cycle events as they happen (ctl-monitor.c). */
int ctl_monitor(int argc, char **argv, const struct ctl_options *o);
/* qosjailctl explain PID (ctl-explain.c). */
int ctl_explain(int argc, char **argv, const struct ctl_options *o);

/* ctl-util.c: connect (printing why not), report a failure, exit status of a child. */
int ctl_connect(const struct ctl_options *o, struct qj_conn **ret);
int ctl_fail(struct qj_conn *c, int r, const char *what);
int ctl_exit_status(int wstatus);
void ctl_format_usec(unsigned long long usec, char *buf, size_t size);
/* --since: "12h", "30m", "2d", "45s" before now, or an RFC3339 time, as CLOCK_REALTIME. */
int ctl_parse_since(const char *s, uint64_t *ret);
/* qosjailctl log: the kill log as a table or JSON Lines (ctl-log.c). */
int ctl_log(int argc, char **argv, const struct ctl_options *o);
/* qosjailctl metrics: the daemon's counters, Prometheus text (ctl-metrics.c). */
int ctl_metrics(int argc, char **argv, const struct ctl_options *o);
/* qosjailctl report --html FILE: the timeline of holds, cycles and actions (ctl-report.c). */
int ctl_report(int argc, char **argv, const struct ctl_options *o);

#endif
