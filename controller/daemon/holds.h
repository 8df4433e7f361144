/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hold table: who keeps the system awake and why, plus per-name
 * statistics modelled on the kernel's wakeup_sources.  Pure: every entry
 * point takes the current CLOCK_MONOTONIC time in microseconds, so the unit
 * tests drive it over simulated time; the timeline's CLOCK_BOOTTIME stamps come
 * from a clock the tests replace (qj_holds_set_boottime()).
 *
 * A hold is identified by (connection, name).  Holding the same name again on
 * the same connection refreshes it (reason, timeout) like __pm_stay_awake()
 * on an active source: event_count grows, active_count does not.  Several
 * connections may hold the same name; the name is active while any does.
 */
#ifndef QJ_HOLDS_H
#define QJ_HOLDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "policy.h"

#define QJ_HOLD_NAME_MAX 128
#define QJ_HOLD_REASON_MAX 512
/* Distinct names with statistics; inactive ones are recycled LRU beyond this. */
#define QJ_HOLDS_MAX_NAMES 4096
/* Holds alive at once, over all connections. */
#define QJ_HOLDS_MAX 65536
/*
 * Of those, kept for root's holds (uid 0: root's clients, the logind bridge's fail-closed
 * hold, root's inhibitors): whatever users take, root's hold is never refused for a full
 * table.  Users are bounded per uid by the policy, but several uids together could fill it.
 */
#define QJ_HOLDS_ROOT 4096
#define QJ_HOLDS_ROOT_NAMES 512
/* Ended active periods kept for the timeline (qosjailctl report), newest over oldest. */
#define QJ_HOLDS_HISTORY_MAX 256

struct qj_holds;

/**
 * struct qj_hold_owner - The peer that took a hold.
 * @pid: peer pid (SO_PEERCRED at connect).
 * @uid: peer uid.
 * @comm: peer comm, NUL-terminated.
 * @app: app name when the peer is jailed or matched by the policy, else "".
 */
struct qj_hold_owner {
	pid_t pid;
	uid_t uid;
	char comm[17];
	char app[QJ_POLICY_NAME_MAX + 1];
};

/**
 * struct qj_hold - One live hold.
 * @conn: connection id that owns it; the hold dies with the connection.
 * @name: hold name.
 * @reason: free text shown to operators.
 * @owner: who took it.
 * @start_usec: when it was first taken.
 * @refresh_usec: when it was last taken or refreshed.
 * @deadline_usec: when it expires, UINT64_MAX for never.
 */
struct qj_hold {
	uint64_t conn;
	char *name;
	char *reason;
	struct qj_hold_owner owner;
	uint64_t start_usec;
	uint64_t refresh_usec;
	uint64_t deadline_usec;
};

/**
 * struct qj_hold_stats - Statistics of one hold name (cf. struct wakeup_source).
 * @name: hold name.
 * @active: holds of this name alive now.
 * @active_count: times the name went from inactive to active.
 * @event_count: hold requests (new or refresh) for the name.
 * @expire_count: holds of the name that ended by timeout.
 * @total_time_usec: time the name was active.
 * @max_time_usec: longest single active period.
 * @last_change_usec: last activation or deactivation.
 * @prevent_suspend_time_usec: active time while suspend was wanted.
 * @active_since_usec: start of the current active period (valid when @active).
 * @active_since_boot_usec: the same in CLOCK_BOOTTIME (the table's clock, see
 *	qj_holds_set_boottime()): monotonic time stops during a suspend, so only this
 *	converts to wall-clock time after one.
 * @prevent_since_usec: start of the current preventing period.
 */
struct qj_hold_stats {
	char *name;
	unsigned active;
	uint64_t active_count;
	uint64_t event_count;
	uint64_t expire_count;
	uint64_t total_time_usec;
	uint64_t max_time_usec;
	uint64_t last_change_usec;
	uint64_t prevent_suspend_time_usec;
	uint64_t active_since_usec;
	uint64_t active_since_boot_usec;
	uint64_t prevent_since_usec;
};

/**
 * struct qj_hold_interval - One ended active period of a hold name.
 * @name: hold name (owned by the table).
 * @start_usec: when the name became active.
 * @end_usec: when its last hold ended.
 * @start_boot_usec: @start_usec in CLOCK_BOOTTIME (for the wall clock: the timeline).
 * @end_boot_usec: @end_usec in CLOCK_BOOTTIME.
 * @expired: the last hold ended by timeout.
 */
struct qj_hold_interval {
	char *name;
	uint64_t start_usec;
	uint64_t end_usec;
	uint64_t start_boot_usec;
	uint64_t end_boot_usec;
	bool expired;
};

int qj_holds_new(struct qj_holds **ret);
struct qj_holds *qj_holds_free(struct qj_holds *t);

/*
 * Takes or refreshes the hold (@conn, @name).  @timeout_usec 0 means no
 * timeout.  Returns 0 for a new hold, 1 for a refresh, -ENOSPC when the table
 * is full (for an owner other than uid 0: all but the room kept for root),
 * -EINVAL for an empty or too long name or reason, -ENOMEM.
 */
int qj_holds_acquire(struct qj_holds *t, uint64_t conn, const char *name, const char *reason,
		     const struct qj_hold_owner *owner, uint64_t timeout_usec, uint64_t now_usec);
/* Releases (@conn, @name).  0 or -ENOENT. */
int qj_holds_release(struct qj_holds *t, uint64_t conn, const char *name, uint64_t now_usec);
/* Releases every hold of @conn (connection closed).  Returns how many. */
size_t qj_holds_release_conn(struct qj_holds *t, uint64_t conn, uint64_t now_usec);
/* Releases every hold whose deadline is <= @now_usec.  Returns how many. */
size_t qj_holds_expire(struct qj_holds *t, uint64_t now_usec);
/* Earliest deadline, UINT64_MAX when no hold has one. */
uint64_t qj_holds_next_deadline(struct qj_holds *t);

/*
 * Whether the system wants to suspend (the daemon's automatic suspend is on).
 * Like the kernel's autosleep_enabled: active time counts as
 * prevent_suspend_time only while it is set.
 */
void qj_holds_set_suspend_wanted(struct qj_holds *t, bool wanted, uint64_t now_usec);

size_t qj_holds_count(const struct qj_holds *t);
/* Live holds of a connection, of an owner uid: O(log n). */
size_t qj_holds_count_conn(const struct qj_holds *t, uint64_t conn);
size_t qj_holds_count_uid(const struct qj_holds *t, uid_t uid);
/* The @i-th live hold, in the order they were taken; NULL past the end. */
const struct qj_hold *qj_holds_get(const struct qj_holds *t, size_t i);
const struct qj_hold *qj_holds_find(const struct qj_holds *t, uint64_t conn, const char *name);

size_t qj_holds_n_stats(const struct qj_holds *t);
/*
 * Statistics of the @i-th name (or of @name) as of @now_usec: the current
 * active period is included in the times, as the kernel's debugfs does.
 * Returns 0, or -ENOENT past the end / for an unknown name.  ret->name is
 * borrowed.
 */
int qj_holds_stats_at(const struct qj_holds *t, size_t i, uint64_t now_usec,
		      struct qj_hold_stats *ret);
int qj_holds_stats_find(const struct qj_holds *t, const char *name, uint64_t now_usec,
			struct qj_hold_stats *ret);

/*
 * The ended active periods kept (at most QJ_HOLDS_HISTORY_MAX, the newest), oldest
 * first: the @i-th, or NULL past the end.  Periods still running are the stats'
 * active ones (active_since_usec).
 */
/*
 * The clock of the CLOCK_BOOTTIME stamps (default: the real one); the unit tests give
 * one that runs ahead of their simulated CLOCK_MONOTONIC by a "sleep".
 */
void qj_holds_set_boottime(struct qj_holds *t, uint64_t (*now)(void *userdata), void *userdata);
uint64_t qj_holds_boottime(const struct qj_holds *t);
/* A CLOCK_BOOTTIME stamp as CLOCK_REALTIME, from both clocks read now. */
uint64_t qj_holds_boot_to_realtime(uint64_t boot_usec, uint64_t now_boot_usec,
				   uint64_t now_real_usec);

size_t qj_holds_n_history(const struct qj_holds *t);
const struct qj_hold_interval *qj_holds_history(const struct qj_holds *t, size_t i);

#endif
