/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a ladder rung can do: one table of every action's spelling and properties.
 * The policy parser, the engine, explain and the tests read it; adding a rung action is
 * an entry here and a row of the engine's table of what it does (jail/rungops.c).
 */
#ifndef QJ_ACTIONS_H
#define QJ_ACTIONS_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

/* What a rung does.  Order is not escalation order: the ladder is data. */
enum qj_action {
	QJ_ACTION_SIGXCPU, /* notify; skipped when the task does not catch SIGXCPU */
	QJ_ACTION_SIGSTOP,
	QJ_ACTION_SIGTERM, /* sent with SIGCONT so the handler can run */
	QJ_ACTION_SIGKILL,
	QJ_ACTION_FREEZE, /* cgroup.freeze of the app's group */
	_QJ_ACTION_MAX,
	_QJ_ACTION_INVALID = -EINVAL,
};

struct qj_action_info {
	/* The one spelling users see: policy, kill log, explain, status, log lines, man pages. */
	const char *name;
	/* How kill logs written before spelled it; readers still accept it.  NULL: as @name. */
	const char *old_log_name;
	/* Name and grace of a rung that gives only its action (and of the default ladder). */
	const char *default_rung_name;
	uint64_t default_grace_usec;
	/* Only for a task that handles the signal, of an app that consents (policy notify). */
	bool needs_handler;
	/* How soon the engine looks again after applying it: its effect shows in /proc and
	 * cgroup.events at once; 0: only the grace period tells (a handler must run). */
	uint64_t confirm_usec;
	/* Counts as a strike against the app (a notification does not). */
	bool strike;
	/* Has a form for the app's group as a whole (stop sweep, cgroup.freeze, cgroup.kill). */
	bool group;
	/* Signals (bit signo - 1) that, pending, say the task has yet to take it; 0: none. */
	uint64_t pending_mask;
};

/* The entry of @a; NULL when @a is not an action. */
const struct qj_action_info *qj_action_info(enum qj_action a);
/* Its name, as users see it ("SIGSTOP", "freeze"); NULL when @a is not an action. */
const char *qj_action_to_string(enum qj_action a);
/*
 * The rung actions' names in table order, "A, B, C" with @last_sep before the last one
 * (", " or " or "), for messages and help that list them.  Truncated to @size.
 */
void qj_action_list(char *buf, size_t size, const char *last_sep);
/* Case-insensitive; "SIGXCPU", "XCPU", "sigxcpu" (old kill logs) and "freeze" are accepted. */
enum qj_action qj_action_from_string(const char *s);

#endif
