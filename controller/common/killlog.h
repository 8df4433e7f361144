/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kill log: append-only JSON Lines, one fsync'd record per escalation
 * action (a quiesce step's records fsync'd together) and one summary per quiesce cycle, rotated by size (PATH.1 ..
 * PATH.N).  The reader parses and filters lines for `qosjailctl log`.
 */
#ifndef QJ_KILLLOG_H
#define QJ_KILLLOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct qj_killlog;

/* One action against one process.  Strings may be NULL (written as null). */
struct qj_kill_record {
	uint64_t ts_usec; /* CLOCK_REALTIME of the action */
	uint64_t cycle;
	const char *app;
	pid_t pid;
	const char *comm;
	const char *exe;
	uid_t uid;
	const char *cgroup;
	const char *action; /* the rung's action as qj_action_to_string() spells it, or "exit" */
	int rung; /* ladder index */
	const char *rung_name;
	const char *reason;
	uint64_t cpu_ms; /* CPU (+ run-queue wait) used over window_ms */
	uint64_t window_ms;
	/* blocked, exited, killed, continued-by-other, ignored, restored (exit records: unknown) */
	const char *outcome;
	unsigned strikes;
};

/*
 * Opens (creating it and its directory) @path for appending, following no
 * symlink; -EPERM when a directory on the way is not root's (or is writable by
 * group or others, sticky /tmp-like ancestors excepted), -ELOOP on a symlink.
 */
int qj_killlog_open(const char *path, uint64_t max_bytes, unsigned keep, struct qj_killlog **ret);
struct qj_killlog *qj_killlog_free(struct qj_killlog *l);
const char *qj_killlog_path(const struct qj_killlog *l);
/* A new read-only fd (own offset) on the file being written, not found by path. */
int qj_killlog_open_reader(const struct qj_killlog *l);

int qj_killlog_append(struct qj_killlog *l, const struct qj_kill_record *r);
/*
 * Appends @obj (adds "ts" when missing) as one line; rotates first when it
 * would not fit.  A record that cannot be written (disk full: nothing of it is
 * left in the log) is counted; the next one that can is preceded by a record
 * of the gap: {"ts","action":"gap","lost","first_ts","last_ts","error"}.
 */
int qj_killlog_append_json(struct qj_killlog *l, json_t *obj);
/*
 * Cycle @cycle began at @realtime_usec (CLOCK_REALTIME): its summary records get a
 * "begin_ts" (the kill log's ts is the end, and window_ms leaves the sleep out).
 */
int qj_killlog_cycle_begin(struct qj_killlog *l, uint64_t cycle, uint64_t realtime_usec);

/*
 * From now until qj_killlog_sync(), records are written at once (one write(2)
 * each: readers, and a daemon restarted after a crash, see them) but not
 * fsync'd one by one: a step that acts on 10,000 tasks syncs once
 * (docs/decisions.md).  Rotation syncs what waits first.
 */
void qj_killlog_defer_sync(struct qj_killlog *l);
/*
 * fsyncs the records written since qj_killlog_defer_sync() and ends the
 * deferral.  On failure they are cut back and counted lost (a gap record tells
 * of them before the next record that fits); returns the negative errno.
 */
int qj_killlog_sync(struct qj_killlog *l);

struct qj_killlog_stats {
	uint64_t lost; /* records not written since the log was opened */
	uint64_t unrecorded; /* of those, not yet told by a gap record */
	int last_error; /* negative errno of the last loss, 0 when none */
};

void qj_killlog_get_stats(const struct qj_killlog *l, struct qj_killlog_stats *ret);

/* The highest cycle id in the log and its newest rotation when it was opened. */
uint64_t qj_killlog_highest_cycle(const struct qj_killlog *l);

#endif
