// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The rungs: the ladder's decision for a task or an app's group (one rung state, one
 * decide-and-apply for both) and the bookkeeping of performing it; what a rung action
 * does to a task or a group is its row in rungops.c.
 */
#include <inttypes.h>
#include <string.h>

#include "log.h"

#include "jail-internal.h"

static uint64_t realtime_now(void)
{
	return now_usec(CLOCK_REALTIME);
}

/* Marks @rs's rung @rung applied now; counts it, and a strike if it strikes, against @a. */
static void rung_taken(struct qj_engine *e, struct app_state *a, struct rung_state *rs, int rung,
		       uint64_t now)
{
	rs->rung = rung;
	rs->applied_usec = now;
	rs->applied_realtime_usec = realtime_now();
	rs->pending = true;
	e->n_actions++;
	qj_eng_count_action(a, &e->p->rungs[rung]);
	if (qj_action_info(e->p->rungs[rung].action)->strike)
		a->struck = true;
}

/*
 * What the kill log gives as the reason.  A task starved at the idle class on a
 * loaded machine reads 0 ms of CPU; "busy" beside 0 ms would say something the
 * kernel did not, so the record says it waited runnable and was given no CPU.
 */
static const char *task_reason(const struct task *t)
{
	if (t->activity == QJ_TASK_BUSY && t->sample.last_starved)
		return "busy, starved";
	return qj_task_activity_to_string(t->activity);
}

static int task_apply(struct qj_engine *e, struct app_state *a, struct task *t, int rung,
		      uint64_t now)
{
	enum qj_action action = e->p->rungs[rung].action;
	const struct rung_ops *ops = qj_eng_rung_ops(e, rung);
	_cleanup_free_ char *cg = NULL;
	struct qj_proc_stat st;
	int r;

	if (!ops->task)
		return -EINVAL;
	if (ops->in_effect && ops->in_effect(a))
		return 0;
	if (t->ladder.pending)
		qj_eng_log_action(
			e, t, t->activity == QJ_TASK_CONTINUED ? "continued-by-other" : "ignored");
	t->pending_reason = task_reason(t);
	t->pending_cpu_ms = t->sample.last_ns / 1000000;
	t->pending_window_ms = t->sample.last_window_usec / USEC_PER_MSEC;
	qj_eng_task_exe(t);
	r = ops->task(e, a, t);
	rung_taken(e, a, &t->ladder, rung, now);
	t->sig_seen_usec = now; /* sent: pending until it runs */
	if (r == -ESRCH) {
		qj_eng_mark_gone(e, t);
		return 0;
	}
	if (r < 0) {
		t->ladder.pending = false;
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
	if (ops->notifies && qj_proc_stat_read(t->pid, &st) == 0)
		(void)qj_sample_restart(&t->sample, &st, now);
	t->notify_cpu_ns = t->sample.base.cpu_ns;
	return 1;
}

int qj_eng_group_sweep(struct qj_engine *e, struct app_state *a, uint64_t now)
{
	enum qj_action action = e->p->rungs[a->ladder.rung].action;
	const struct rung_ops *ops = qj_eng_rung_ops(e, a->ladder.rung);
	int n = 0;

	if (!ops->sweep)
		return -EINVAL;
	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];
		int r;

		if (t->gone || strcmp(t->app, a->name) != 0 || ops->reached(t))
			continue;
		/*
		 * Its own ladder went further than the group's (continued by another after
		 * the group's stop, it was sent its next rung): the sweep leaves it to it.
		 */
		if (t->ladder.rung > a->ladder.rung)
			continue;
		qj_eng_task_exe(t);
		r = ops->task(e, a, t);
		if (r == -ESRCH) {
			qj_eng_mark_gone(e, t);
			continue;
		}
		if (r < 0)
			return log_warning_errno(r, "Failed to send %s to %d (%s) in app %s: %m",
						 qj_action_to_string(action), t->pid, t->comm,
						 a->name);
		if (t->ladder.pending)
			qj_eng_log_action(e, t, "ignored"); /* its own rung did not block it */
		t->by_group = true;
		t->ladder.rung = a->ladder.rung;
		t->ladder.applied_usec = now;
		t->activity = QJ_TASK_UNKNOWN;
		qj_eng_follow_add(e, t, qj_action_to_string(action));
		qj_eng_group_note(a, t->pid);
		n++;
	}
	return n;
}

/* Applies group rung @rung to app @a: a sweep, or the row's group form. */
static int group_apply(struct qj_engine *e, struct app_state *a, int rung, uint64_t now)
{
	enum qj_action action = e->p->rungs[rung].action;
	const struct rung_ops *ops = qj_eng_rung_ops(e, rung);
	_cleanup_free_ char *cg = qj_cgroup_app_path(e->cg, a->name);
	int r;

	if (a->ladder.pending)
		qj_eng_log_group(e, a, "ignored");
	rung_taken(e, a, &a->ladder, rung, now);
	a->g_n = 0;
	a->g_cpu_ms = a->last_cpu_ms;
	a->g_window_ms = a->last_window_ms;
	a->g_sweeping = ops->sweep;
	if (a->g_sweeping)
		r = qj_eng_group_sweep(e, a, now);
	else if (ops->group)
		r = ops->group(e, a);
	else
		r = -EINVAL; /* the notify rung never applies to a group */
	if (r < 0) {
		a->ladder.pending = false;
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

int qj_eng_rung_step(struct qj_engine *e, struct app_state *a, struct task *t, uint64_t now,
		     struct qj_ladder_decision *ret)
{
	struct rung_state *rs = t ? &t->ladder : &a->ladder;
	struct qj_ladder_task lt = { .rung = rs->rung,
				     .applied_usec = rs->applied_usec,
				     .activity = t ? t->activity : QJ_TASK_BUSY,
				     .catches_sigxcpu = t && t->catches_sigxcpu,
				     .consents = t && t->consents,
				     .strikes = a->undo.strikes };
	int r;

	*ret = (struct qj_ladder_decision){ .verdict = _QJ_LADDER_VERDICT_INVALID,
					    .rung = -1,
					    .next_usec = USEC_INFINITY };
	r = qj_ladder_decide(e->p, qj_policy_find_app(e->p, a->name), &lt, now, ret);
	if (r < 0)
		return r;
	if (ret->verdict == QJ_LADDER_APPLY)
		return t ? task_apply(e, a, t, ret->rung, now) : group_apply(e, a, ret->rung, now);
	/* Busy after the last rung it may have: that rung did not block it. */
	if (ret->verdict == QJ_LADDER_EXHAUSTED && rs->pending) {
		if (t)
			qj_eng_log_action(e, t, "ignored");
		else
			qj_eng_log_group(e, a, "ignored");
	}
	return 0;
}
