/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The escalation ladder as a pure decision: per task state + policy + now ->
 * what to do next and when to look again.  No syscalls; the engine measures,
 * the ladder decides, the engine applies.
 */
#ifndef QJ_LADDER_H
#define QJ_LADDER_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"

/* What the last measurement says about a task. */
enum qj_task_activity {
	QJ_TASK_UNKNOWN, /* no complete sample window since the last action */
	QJ_TASK_IDLE, /* wanted less than busy_threshold of a CPU over the window */
	QJ_TASK_BUSY,
	QJ_TASK_STOPPED, /* 'T' in /proc/PID/stat: counts as blocked */
	QJ_TASK_FROZEN, /* its app group is frozen */
	QJ_TASK_CONTINUED, /* qosjail stopped it, another process SIGCONTed it */
	QJ_TASK_GONE,
	_QJ_TASK_ACTIVITY_MAX,
	_QJ_TASK_ACTIVITY_INVALID = -EINVAL,
};

struct qj_ladder_task {
	int rung; /* last rung applied in this cycle, -1 for none */
	uint64_t applied_usec; /* when @rung was applied */
	enum qj_task_activity activity;
	bool catches_sigxcpu; /* SigCgt has SIGXCPU */
	unsigned strikes; /* of the task's app, before this cycle */
	bool consents; /* the process asked for the notification (qj_notify_consent()) */
};

enum qj_ladder_verdict {
	QJ_LADDER_DONE, /* blocked or gone: nothing to do */
	QJ_LADDER_WAIT, /* grace period or sample window running: look again at next_usec */
	QJ_LADDER_APPLY, /* apply .rung now */
	QJ_LADDER_EXEMPT, /* exempt app: never escalated */
	QJ_LADDER_EXHAUSTED, /* busy at the app's last allowed rung: nothing more to try */
	_QJ_LADDER_VERDICT_MAX,
	_QJ_LADDER_VERDICT_INVALID = -EINVAL,
};

struct qj_ladder_decision {
	enum qj_ladder_verdict verdict;
	int rung; /* with APPLY: the rung index to apply */
	uint64_t next_usec; /* with WAIT: when the decision may change; else USEC_INFINITY */
};

/* The rung a busy task of @a starts at (strikes considered), -1 when none applies. */
int qj_ladder_first_rung(const struct qj_policy *p, const struct qj_app *a, unsigned strikes,
			 bool catches_sigxcpu, bool consents);
/* The rung after @rung for @a, -1 when @rung is the last allowed one. */
int qj_ladder_next_rung(const struct qj_policy *p, const struct qj_app *a, int rung,
			bool catches_sigxcpu, bool consents);
/* Decides for one task.  Returns 0, or -EINVAL for an inconsistent state. */
int qj_ladder_decide(const struct qj_policy *p, const struct qj_app *a,
		     const struct qj_ladder_task *t, uint64_t now_usec,
		     struct qj_ladder_decision *ret);
/* True for activities that let the system suspend. */
bool qj_task_activity_is_blocked(enum qj_task_activity a);

const char *qj_task_activity_to_string(enum qj_task_activity a);
const char *qj_ladder_verdict_to_string(enum qj_ladder_verdict v);

#endif
