// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The quiesce: its beginning and one step (observe each task, the task ladder, the group
 * ladder for apps their tasks do not explain), and what holds it up.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>

#include "escape.h"
#include "log.h"

#include "engine-internal.h"

int qj_eng_quiesce_begin(struct qj_engine *e, uint64_t cycle, uint64_t now_usec)
{
	int r;

	if (e->quiescing)
		return -EBUSY;
	e->quiescing = true;
	e->cycle = cycle;
	e->begin_usec = now_usec;
	e->quiesced_usec = 0;
	e->n_actions = e->n_killed = e->n_stopped_cycle = 0;
	e->jail_running = e->jail_running_now = 0;
	qj_eng_follow_prune(e, now_usec);
	qj_eng_consents_prune(e);
	for (size_t i = 0; i < e->n_apps; i++) {
		struct app_state *a = &e->apps[i];

		a->struck = false;
		a->have_base = a->busy = a->judged = a->suspect = a->restart_due = false;
		a->ladder.rung = -1;
		a->g_sweeping = a->ladder.pending = false;
		a->g_n = 0;
		a->holding[0] = 0;
	}
	r = qj_eng_sample_groups(e, now_usec);
	if (r < 0) {
		e->quiescing = false;
		return r;
	}
	if (qj_cgroup_usage_usec(e->cg, NULL, &e->jail_usage_begin) < 0)
		e->jail_usage_begin = 0;
	/* The idle class first: the rest of the cycle must not starve us (docs/platform.md). */
	if (e->p->cpu_idle) {
		r = qj_cgroup_set_idle(e->cg, true);
		if (r < 0)
			log_warning_errno(r,
					  "Failed to put the jail at idle CPU class, ignoring: %m");
	}
	r = qj_eng_save_state(e);
	if (r < 0)
		log_warning_errno(r, "Failed to save state, ignoring: %m");
	r = qj_eng_rescan(e, now_usec);
	if (r < 0)
		return r;
	if (e->state_dirty) {
		r = qj_eng_save_state(e);
		if (r < 0)
			log_warning_errno(r, "Failed to save state, ignoring: %m");
	}
	return 0;
}

static void hold_up(struct app_state *a, uint64_t next, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void hold_up(struct app_state *a, uint64_t next, const char *fmt, ...)
{
	va_list ap;

	if (a->holding[0])
		return; /* the first reason found this step */
	va_start(ap, fmt);
	vsnprintf(a->holding, sizeof(a->holding), fmt, ap);
	va_end(ap);
	a->holding_next_usec = next;
}

/*
 * The group ladder for busy app @a its tasks do not explain: the next group
 * rung when its grace is over.  1 when a rung was applied, 0, or -errno.
 */
static int group_escalate(struct qj_engine *e, struct app_state *a, uint64_t now, uint64_t *next)
{
	struct qj_ladder_decision d;
	int r;

	r = qj_eng_rung_step(e, a, NULL, now, &d);
	if (r == -ENOMEM || (r < 0 && d.verdict != QJ_LADDER_APPLY))
		return r;
	if (d.verdict == QJ_LADDER_APPLY) {
		d.next_usec = now + CONFIRM_USEC;
		hold_up(a, d.next_usec, "group %s: app busy, %" PRIu64 " ms of %" PRIu64 " ms",
			e->p->rungs[d.rung].name, a->last_cpu_ms, a->last_window_ms);
	} else if (d.verdict == QJ_LADDER_WAIT) {
		hold_up(a, d.next_usec, "app busy, next group rung after grace");
	} else {
		hold_up(a, USEC_INFINITY, "app busy after its last group rung");
	}
	if (d.next_usec < *next)
		*next = d.next_usec;
	return d.verdict == QJ_LADDER_APPLY;
}

/* Does @t of @a let the system suspend?  Unmeasured tasks count when their app is quiet. */
static bool task_blocked(const struct task *t, const struct app_state *a)
{
	if (qj_task_activity_is_blocked(t->activity))
		return true;
	return t->activity == QJ_TASK_UNKNOWN && t->ladder.rung < 0 && a && a->judged && !a->busy &&
	       !a->g_sweeping;
}

/* The quiesce ran past its bound: one record per app holding it up, then the step fails. */
static int quiesce_timeout(struct qj_engine *e, uint64_t now)
{
	uint64_t bound = qj_policy_quiesce_bound_usec(e->p);

	for (size_t i = 0; i < e->n_apps; i++) {
		struct app_state *a = &e->apps[i];
		json_t *o;

		if (!a->holding[0])
			continue;
		log_warning("Quiesce of cycle %" PRIu64 " past its bound of %" PRIu64
			    " ms: app %s still %s",
			    e->cycle, bound / 1000, a->name, a->holding);
		if (!e->log)
			continue;
		o = json_pack("{s:I,s:s,s:s,s:o,s:s,s:I,s:I}", "cycle", (json_int_t)e->cycle, "app",
			      a->name, "action", "quiesce-timeout", "reason",
			      qj_json_string_escaped(a->holding), "outcome", "failed", "bound_ms",
			      (json_int_t)(bound / 1000), "window_ms",
			      (json_int_t)((now - e->begin_usec) / 1000));
		qj_eng_append_record(e, o);
	}
	return -ETIMEDOUT;
}

int qj_eng_quiesce_step(struct qj_engine *e, uint64_t now_usec, uint64_t *ret_next_usec)
{
	uint64_t next = USEC_INFINITY;
	bool all_blocked = true, changed = false;
	int r;

	if (!e->quiescing)
		return -ESTALE;
	if (now_usec > e->begin_usec + qj_policy_quiesce_bound_usec(e->p))
		return quiesce_timeout(e, now_usec);
	for (size_t i = 0; i < e->n_apps; i++) {
		e->apps[i].explained = false;
		e->apps[i].new_tasks = 0;
		e->apps[i].n_live = 0;
		e->apps[i].holding[0] = 0;
	}
	r = qj_eng_rescan(e, now_usec);
	if (r < 0)
		return r;
	r = qj_eng_sample_groups(e, now_usec);
	if (r < 0)
		return r;
	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];
		struct app_state *as = qj_eng_app_state(e, t->app);
		struct qj_ladder_decision d;

		if (!as)
			return -ENOMEM;
		r = qj_eng_observe(e, t, now_usec);
		if (r < 0)
			return r;
		if (t->gone)
			continue;
		/* "blocked" once the kernel says so: a queued stop is not taken yet. */
		if (t->ladder.pending && (t->activity == QJ_TASK_IDLE ||
					  (t->activity == QJ_TASK_STOPPED && !t->stop_queued) ||
					  t->activity == QJ_TASK_FROZEN))
			qj_eng_log_action(e, t, "blocked");
		else if (t->ladder.pending && t->activity == QJ_TASK_CONTINUED &&
			 qj_eng_rung_ops(e, t->ladder.rung)->stops)
			qj_eng_log_action(e, t, "continued-by-other");

		r = qj_eng_rung_step(e, as, t, now_usec, &d);
		if (r == -ENOMEM || (r < 0 && d.verdict != QJ_LADDER_APPLY))
			return r;
		if (d.verdict == QJ_LADDER_APPLY) {
			if (t->gone)
				continue;
			if (r > 0) {
				uint64_t confirm =
					qj_action_info(e->p->rungs[t->ladder.rung].action)
						->confirm_usec;

				changed = true;
				d.next_usec = t->ladder.applied_usec +
					      e->p->rungs[t->ladder.rung].grace_usec;
				if (confirm && now_usec + confirm < d.next_usec)
					d.next_usec = now_usec + confirm;
			} else {
				d.next_usec = USEC_INFINITY; /* its group is freezing */
			}
		}
		if (d.verdict == QJ_LADDER_EXEMPT)
			continue;
		if (t->activity != QJ_TASK_STOPPED && t->activity != QJ_TASK_FROZEN)
			as->n_live++;
		/*
		 * A visible busy task on the per-task ladder explains its app's
		 * demand; so does one acted on and not measured since (starved
		 * at the idle class), for a grace and two windows.
		 */
		if (t->activity == QJ_TASK_BUSY || t->activity == QJ_TASK_CONTINUED ||
		    d.verdict == QJ_LADDER_APPLY ||
		    (t->activity == QJ_TASK_UNKNOWN && t->ladder.rung >= 0 &&
		     now_usec < t->ladder.applied_usec + e->p->rungs[t->ladder.rung].grace_usec +
					2 * e->p->sample_window_usec))
			as->explained = true;
		if (!task_blocked(t, as) || d.verdict == QJ_LADDER_APPLY) {
			all_blocked = false;
			if (d.verdict == QJ_LADDER_APPLY)
				hold_up(as, d.next_usec, "%s sent to %d (%s)",
					e->p->rungs[d.rung].name, t->pid, t->comm);
			else if (d.verdict == QJ_LADDER_EXHAUSTED)
				hold_up(as, USEC_INFINITY, "busy after its last rung: %d (%s)",
					t->pid, t->comm);
			else if (t->activity == QJ_TASK_UNKNOWN)
				hold_up(as, d.next_usec, "measuring %d (%s)", t->pid, t->comm);
			else
				hold_up(as, d.next_usec, "%s %d (%s), next rung after grace",
					qj_task_activity_to_string(t->activity), t->pid, t->comm);
		}
		if (d.next_usec < next)
			next = d.next_usec;
		/* Keep measuring whatever is not stopped or frozen. */
		if (t->activity != QJ_TASK_STOPPED && t->activity != QJ_TASK_FROZEN &&
		    t->sample.t0_usec + e->p->sample_window_usec < next)
			next = t->sample.t0_usec + e->p->sample_window_usec;
	}

	e->jail_running = e->jail_running_now;
	e->jail_running_now = 0;

	/* App-level demand: the group ladder for apps whose tasks cannot explain it. */
	for (size_t i = 0; i < e->n_apps; i++) {
		struct app_state *a = &e->apps[i];
		const struct qj_app *app = qj_eng_jailed_app(e, a->name);

		if (!app || app->exempt)
			continue;
		if (a->g_sweeping) {
			r = qj_eng_group_sweep(e, a, now_usec);
			if (r < 0)
				return r;
			if ((r > 0 || a->new_tasks > 0) &&
			    now_usec >= a->ladder.applied_usec +
						e->p->rungs[a->ladder.rung].grace_usec) {
				/*
				 * Forking faster than the sweep for a whole grace
				 * period: the next group rung (cgroup.freeze or
				 * cgroup.kill are atomic against fork).
				 */
				log_notice("App %s outruns the group %s sweep: next rung", a->name,
					   e->p->rungs[a->ladder.rung].name);
				a->g_sweeping = false;
				all_blocked = false;
				r = group_escalate(e, a, now_usec, &next);
				if (r < 0)
					return r;
				changed = true;
				continue;
			}
			if (r > 0 || a->new_tasks > 0) {
				/* Not stable yet: list cgroup.procs again in a moment. */
				changed = true;
				all_blocked = false;
				hold_up(a, now_usec + CONFIRM_USEC,
					"group %s sweep: %u tasks so far",
					e->p->rungs[a->ladder.rung].name, a->g_n);
				if (now_usec + CONFIRM_USEC < next)
					next = now_usec + CONFIRM_USEC;
				continue;
			}
			/* cgroup.procs stable, every task reached: judge it from here. */
			a->g_sweeping = false;
			qj_eng_group_restart(e, a, now_usec);
		}
		if (a->have_base && a->t0_usec + e->p->sample_window_usec < next &&
		    (a->ladder.pending || !all_blocked))
			next = a->t0_usec + e->p->sample_window_usec;
		if (!a->judged) {
			/*
			 * Busy when last judged, acted on since: it holds the
			 * quiesce until a window says it is idle, unless nothing
			 * of it can run any more.
			 */
			if (a->suspect && a->n_live > 0) {
				all_blocked = false;
				hold_up(a, a->t0_usec + e->p->sample_window_usec,
					"busy in its last window, judged again after an action");
				if (a->t0_usec + e->p->sample_window_usec < next)
					next = a->t0_usec + e->p->sample_window_usec;
			}
			continue;
		}
		if (!a->busy) {
			if (a->ladder.pending)
				qj_eng_log_group(e, a,
						 qj_eng_rung_ops(e, a->ladder.rung)->kills ?
							 "killed" :
							 "blocked");
			continue;
		}
		if (a->explained)
			continue;
		all_blocked = false;
		r = group_escalate(e, a, now_usec, &next);
		if (r < 0)
			return r;
		changed |= r > 0;
	}
	qj_eng_group_restarts_flush(e);
	qj_eng_follow_sync(e);
	if (changed || e->state_dirty) {
		r = qj_eng_save_state(e);
		if (r < 0)
			log_warning_errno(r, "Failed to save state, ignoring: %m");
	}
	if (all_blocked) {
		if (!e->quiesced_usec)
			e->quiesced_usec = now_usec;
		*ret_next_usec = USEC_INFINITY;
		return 1;
	}
	/* Never past the bound without a look: that step ends the quiesce. */
	if (next > e->begin_usec + qj_policy_quiesce_bound_usec(e->p))
		next = e->begin_usec + qj_policy_quiesce_bound_usec(e->p) + 1;
	if (next <= now_usec)
		next = now_usec + 1;
	*ret_next_usec = next;
	return 0;
}
