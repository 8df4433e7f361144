// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What each rung action does to a task and to an app's group: one row an action, beside
 * the rung table of policy/actions.c (its spelling and properties).  A new rung action is
 * a row there and a row here; rungs.c and the step read only the row.
 */
#include <signal.h>
#include <string.h>

#include "log.h"

#include "jail-internal.h"

void qj_eng_group_note(struct app_state *a, pid_t pid)
{
	if (a->g_n < GROUP_PIDS_MAX)
		a->g_pids[a->g_n] = pid;
	a->g_n++;
}

static int notify_task(struct qj_engine *e, struct app_state *a, struct task *t)
{
	int r = qj_eng_send_signal(t, SIGXCPU);

	t->notified = r == 0;
	return r;
}

static int stop_task(struct qj_engine *e, struct app_state *a, struct task *t)
{
	int r = qj_eng_send_signal(t, SIGSTOP);

	if (r == 0) {
		t->undo.stopped = t->sent_stop = true;
		e->n_stopped_cycle++;
	}
	return r;
}

static bool stop_reached(const struct task *t)
{
	return t->undo.stopped || t->activity == QJ_TASK_STOPPED;
}

static int term_task(struct qj_engine *e, struct app_state *a, struct task *t)
{
	/* A stopped task cannot run its handler or die: continue it too. */
	int r = qj_eng_send_signal(t, SIGTERM);

	if (r == 0)
		(void)qj_eng_send_signal(t, SIGCONT);
	t->undo.stopped = false;
	t->killed_by_us = r == 0;
	return r;
}

static bool killed(const struct task *t)
{
	return t->killed_by_us;
}

static int kill_task(struct qj_engine *e, struct app_state *a, struct task *t)
{
	int r = qj_eng_send_signal(t, SIGKILL);

	t->undo.stopped = false;
	t->killed_by_us = r == 0;
	return r;
}

/* cgroup.kill: every task, and none can fork away meanwhile. */
static int kill_group(struct qj_engine *e, struct app_state *a)
{
	int r = qj_cgroup_kill(e->cg, a->name);

	for (size_t i = 0; r == 0 && i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];

		if (t->gone || strcmp(t->app, a->name) != 0)
			continue;
		if (t->ladder.pending)
			qj_eng_log_action(e, t, "ignored");
		t->killed_by_us = true;
		t->undo.stopped = false;
		t->by_group = true;
		qj_eng_group_note(a, t->pid);
	}
	return r;
}

/* Atomic against fork: children of a frozen task start frozen. */
static int freeze_group(struct qj_engine *e, struct app_state *a)
{
	int r = qj_cgroup_freeze(e->cg, a->name, true);

	if (r == 0)
		a->undo.frozen = true;
	return r;
}

/* Freezing is the group's: one action, the group's other tasks follow it. */
static int freeze_task(struct qj_engine *e, struct app_state *a, struct task *t)
{
	return freeze_group(e, a);
}

static bool frozen(const struct app_state *a)
{
	return a->undo.frozen;
}

static const struct rung_ops ops[_QJ_ACTION_MAX] = {
	[QJ_ACTION_SIGXCPU] = { .task = notify_task, .notifies = true },
	[QJ_ACTION_SIGSTOP] = { .task = stop_task,
				.sweep = true,
				.reached = stop_reached,
				.stops = true },
	[QJ_ACTION_SIGTERM] = { .task = term_task, .sweep = true, .reached = killed, .kills = true },
	[QJ_ACTION_SIGKILL] = { .task = kill_task,
				.group = kill_group,
				.kills = true,
				.kills_at_restore = true },
	[QJ_ACTION_FREEZE] = { .task = freeze_task, .group = freeze_group, .in_effect = frozen },
};

const struct rung_ops *qj_eng_action_ops(enum qj_action a)
{
	static const struct rung_ops none = {};

	return a >= 0 && a < _QJ_ACTION_MAX ? &ops[a] : &none;
}

const struct rung_ops *qj_eng_rung_ops(const struct qj_engine *e, int rung)
{
	return qj_eng_action_ops(e->p->rungs[rung].action);
}
