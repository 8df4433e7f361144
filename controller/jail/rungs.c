// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The rungs: performing a rung on a task (pidfd signals, cgroup.freeze) or on an app's
 * group (stop/term sweeps, cgroup.freeze, cgroup.kill).
 */
#include <inttypes.h>
#include <signal.h>
#include <string.h>

#include "log.h"

#include "engine-internal.h"

static uint64_t realtime_now(void)
{
	return now_usec(CLOCK_REALTIME);
}

int qj_eng_task_apply(struct qj_engine *e, struct task *t, int rung, uint64_t now)
{
	enum qj_action action = e->p->rungs[rung].action;
	struct app_state *a = qj_eng_app_state(e, t->app);
	_cleanup_free_ char *cg = NULL;
	struct qj_proc_stat st;
	int r = 0;

	if (!a)
		return -ENOMEM;
	/* Freezing is the group's: one action, the group's other tasks follow it. */
	if (action == QJ_ACTION_FREEZE && a->frozen_by_us)
		return 0;
	if (t->pending)
		qj_eng_log_action(
			e, t, t->activity == QJ_TASK_CONTINUED ? "continued-by-other" : "ignored");
	t->pending_reason = qj_task_activity_to_string(t->activity);
	t->pending_cpu_ms = t->sample.last_ns / 1000000;
	t->pending_window_ms = t->sample.last_window_usec / USEC_PER_MSEC;

	switch (action) {
	case QJ_ACTION_SIGXCPU:
		r = qj_eng_send_signal(t, SIGXCPU);
		t->notified = r == 0;
		break;
	case QJ_ACTION_SIGSTOP:
		r = qj_eng_send_signal(t, SIGSTOP);
		if (r == 0) {
			t->stopped_by_us = t->sent_stop = true;
			e->n_stopped_cycle++;
		}
		break;
	case QJ_ACTION_SIGTERM:
		/* A stopped task cannot run its handler or die: continue it too. */
		r = qj_eng_send_signal(t, SIGTERM);
		if (r == 0)
			(void)qj_eng_send_signal(t, SIGCONT);
		t->stopped_by_us = false;
		t->killed_by_us = true;
		break;
	case QJ_ACTION_SIGKILL:
		r = qj_eng_send_signal(t, SIGKILL);
		t->stopped_by_us = false;
		t->killed_by_us = true;
		break;
	case QJ_ACTION_FREEZE:
		r = qj_cgroup_freeze(e->cg, t->app, true);
		if (r == 0)
			a->frozen_by_us = true;
		break;
	default:
		return -EINVAL;
	}
	t->rung = rung;
	t->applied_usec = now;
	t->applied_realtime_usec = realtime_now();
	t->sig_seen_usec = now; /* sent: pending until it runs */
	t->pending = true;
	if (qj_action_info(action)->strike)
		a->struck = true;
	e->n_actions++;
	qj_eng_count_action(a, &e->p->rungs[rung]);
	if (r == -ESRCH) {
		qj_eng_mark_gone(e, t);
		return 0;
	}
	if (r < 0) {
		t->pending = false;
		return log_warning_errno(r, "Failed to apply %s to %d (%s), ignoring: %m",
					 qj_action_to_string(action), t->pid, t->comm);
	}
	qj_eng_follow_add(e, t, qj_action_to_string(action));
	qj_eng_group_restart(e, a, now); /* the app's demand is judged afresh after an action */
	cg = qj_cgroup_app_path(e->cg, t->app);
	log_notice("Sent %s to %d (%s) in %s: %s, %" PRIu64 " ms of %" PRIu64 " ms",
		   qj_action_to_string(action), t->pid, t->comm, cg ? cg : t->app,
		   t->pending_reason, t->pending_cpu_ms, t->pending_window_ms);
	t->activity = QJ_TASK_UNKNOWN;
	/*
	 * Its next window starts at its next look (after the confirmation), not
	 * here: a step that stops 10,000 tasks reads nothing more of them.  A
	 * notified task's CPU is read now: its budget to wind down counts from it.
	 */
	t->sample.have_base = false;
	if (action == QJ_ACTION_SIGXCPU && qj_proc_stat_read(t->pid, &st) == 0)
		(void)qj_sample_restart(&t->sample, &st, now);
	t->notify_cpu_ns = t->sample.base.cpu_ns;
	return 1;
}

static void group_note(struct app_state *a, pid_t pid)
{
	if (a->g_n < GROUP_PIDS_MAX)
		a->g_pids[a->g_n] = pid;
	a->g_n++;
}

/*
 * Sends the group's current rung (stop, or term) to every task of @a not yet
 * reached.  Returns how many it reached, or a negative errno.
 */
int qj_eng_group_sweep(struct qj_engine *e, struct app_state *a, uint64_t now)
{
	enum qj_action action = e->p->rungs[a->g_rung].action;
	int n = 0;

	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];
		int r;

		if (t->gone || strcmp(t->app, a->name) != 0)
			continue;
		if (action == QJ_ACTION_SIGSTOP) {
			if (t->stopped_by_us || t->activity == QJ_TASK_STOPPED)
				continue;
			r = qj_eng_send_signal(t, SIGSTOP);
			if (r == 0) {
				t->stopped_by_us = t->sent_stop = true;
				e->n_stopped_cycle++;
			}
		} else {
			if (t->killed_by_us)
				continue;
			r = qj_eng_send_signal(t, SIGTERM);
			if (r == 0)
				(void)qj_eng_send_signal(t, SIGCONT);
			t->stopped_by_us = false;
			t->killed_by_us = r == 0;
		}
		if (r == -ESRCH) {
			qj_eng_mark_gone(e, t);
			continue;
		}
		if (r < 0)
			return log_warning_errno(r, "Failed to send %s to %d (%s) in app %s: %m",
						 qj_action_to_string(action), t->pid, t->comm,
						 a->name);
		if (t->pending)
			qj_eng_log_action(e, t, "ignored"); /* its own rung did not block it */
		t->by_group = true;
		t->rung = a->g_rung;
		t->applied_usec = now;
		t->activity = QJ_TASK_UNKNOWN;
		qj_eng_follow_add(e, t, qj_action_to_string(action));
		group_note(a, t->pid);
		n++;
	}
	return n;
}

/* Applies group rung @rung to app @a: stop/term sweeps, cgroup.freeze, cgroup.kill. */
int qj_eng_group_apply(struct qj_engine *e, struct app_state *a, int rung, uint64_t now)
{
	enum qj_action action = e->p->rungs[rung].action;
	_cleanup_free_ char *cg = qj_cgroup_app_path(e->cg, a->name);
	int r = 0;

	if (a->g_pending)
		qj_eng_log_group(e, a, "ignored");
	a->g_rung = rung;
	a->g_applied_usec = now;
	a->g_applied_realtime_usec = realtime_now();
	a->g_n = 0;
	a->g_cpu_ms = a->last_cpu_ms;
	a->g_window_ms = a->last_window_ms;
	a->g_pending = true;
	a->g_sweeping = false;
	a->struck = true;
	e->n_actions++;
	qj_eng_count_action(a, &e->p->rungs[rung]);
	switch (action) {
	case QJ_ACTION_SIGSTOP:
	case QJ_ACTION_SIGTERM:
		a->g_sweeping = true;
		r = qj_eng_group_sweep(e, a, now);
		break;
	case QJ_ACTION_FREEZE:
		/* Atomic against fork: children of a frozen task start frozen. */
		r = qj_cgroup_freeze(e->cg, a->name, true);
		if (r == 0)
			a->frozen_by_us = true;
		break;
	case QJ_ACTION_SIGKILL:
		/* cgroup.kill: every task, and none can fork away meanwhile. */
		r = qj_cgroup_kill(e->cg, a->name);
		for (size_t i = 0; r == 0 && i < e->n_tasks; i++) {
			struct task *t = &e->tasks[i];

			if (t->gone || strcmp(t->app, a->name) != 0)
				continue;
			if (t->pending)
				qj_eng_log_action(e, t, "ignored");
			t->killed_by_us = true;
			t->stopped_by_us = false;
			t->by_group = true;
			group_note(a, t->pid);
		}
		break;
	default:
		r = -EINVAL; /* the notify rung never applies to a group */
	}
	if (r < 0) {
		a->g_pending = false;
		return log_warning_errno(r, "Failed to apply group %s to app %s: %m",
					 qj_action_to_string(action), a->name);
	}
	log_notice("Applied %s to app %s (%s), %d tasks: app busy, %" PRIu64 " ms of %" PRIu64
		   " ms, its tasks handled or too short-lived",
		   qj_action_to_string(action), a->name, cg ? cg : a->name, (int)a->g_n,
		   a->g_cpu_ms, a->g_window_ms);
	qj_eng_group_restart(e, a, now);
	return 1;
}
