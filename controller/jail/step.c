// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The quiesce: its beginning and one step (observe each task, the task ladder, the group
 * ladder for apps their tasks do not explain), and what holds it up.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "log.h"

#include "jail-internal.h"

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

/* What one step learns as it goes: scratch, local to the step. */
struct step {
	uint64_t now;
	uint64_t next; /* when to look again */
	bool all_blocked;
	bool changed; /* the undo state may have changed: save it */
	/* Per app, by its index in e->apps. */
	struct step_app {
		bool explained; /* a task of it is busy and on the per-task ladder */
		unsigned n_live; /* tasks of it neither stopped, frozen nor gone */
	} * apps;
	size_t n_apps;
};

static struct step_app *step_app(struct step *s, const struct qj_engine *e,
				 const struct app_state *a)
{
	size_t i = (size_t)(a - e->apps);

	if (i >= s->n_apps) {
		struct step_app *v = realloc(s->apps, e->n_apps * sizeof(*v));

		if (!v)
			return NULL;
		memset(v + s->n_apps, 0, (e->n_apps - s->n_apps) * sizeof(*v));
		s->apps = v;
		s->n_apps = e->n_apps;
	}
	return &s->apps[i];
}

static void look_at(struct step *s, uint64_t when)
{
	if (when < s->next)
		s->next = when;
}

/* When a task's rung just applied is confirmed or its grace ends. */
static uint64_t applied_next(const struct qj_engine *e, const struct task *t, uint64_t now)
{
	const struct qj_rung *rung = &e->p->rungs[t->ladder.rung];
	uint64_t confirm = qj_action_info(rung->action)->confirm_usec;
	uint64_t next = t->ladder.applied_usec + rung->grace_usec;

	return confirm && now + confirm < next ? now + confirm : next;
}

/* Why @t of @a holds the quiesce up, after decision @d. */
static void task_holds_up(const struct qj_engine *e, struct app_state *as, const struct task *t,
			  const struct qj_ladder_decision *d)
{
	if (d->verdict == QJ_LADDER_APPLY)
		hold_up(as, d->next_usec, "%s sent to %d (%s)", e->p->rungs[d->rung].name, t->pid,
			t->comm);
	else if (d->verdict == QJ_LADDER_EXHAUSTED)
		hold_up(as, USEC_INFINITY, "busy after its last rung: %d (%s)", t->pid, t->comm);
	else if (t->activity == QJ_TASK_UNKNOWN)
		hold_up(as, d->next_usec, "measuring %d (%s)", t->pid, t->comm);
	else
		hold_up(as, d->next_usec, "%s %d (%s), next rung after grace",
			qj_task_activity_to_string(t->activity), t->pid, t->comm);
}

/* The task ladder for @t: observe it, close its last rung's record, decide and apply. */
static int step_task(struct qj_engine *e, struct step *s, struct task *t)
{
	struct app_state *as = qj_eng_app_state(e, t->app);
	struct qj_ladder_decision d;
	struct step_app *sa;
	int r;

	if (!as || !(sa = step_app(s, e, as)))
		return -ENOMEM;
	r = qj_eng_observe(e, t, s->now);
	if (r < 0 || t->gone)
		return r;
	/* "blocked" once the kernel says so: a queued stop is not taken yet. */
	if (t->ladder.pending &&
	    (t->activity == QJ_TASK_IDLE || (t->activity == QJ_TASK_STOPPED && !t->stop_queued) ||
	     t->activity == QJ_TASK_FROZEN))
		qj_eng_log_action(e, t, "blocked");
	else if (t->ladder.pending && t->activity == QJ_TASK_CONTINUED &&
		 qj_eng_rung_ops(e, t->ladder.rung)->stops)
		qj_eng_log_action(e, t, "continued-by-other");

	r = qj_eng_rung_step(e, as, t, s->now, &d);
	if (r == -ENOMEM || (r < 0 && d.verdict != QJ_LADDER_APPLY))
		return r;
	if (d.verdict == QJ_LADDER_APPLY) {
		if (t->gone)
			return 0;
		s->changed |= r > 0;
		/* Not applied: its group is freezing. */
		d.next_usec = r > 0 ? applied_next(e, t, s->now) : USEC_INFINITY;
	}
	if (d.verdict == QJ_LADDER_EXEMPT)
		return 0;
	if (t->activity != QJ_TASK_STOPPED && t->activity != QJ_TASK_FROZEN)
		sa->n_live++;
	/*
	 * A visible busy task on the per-task ladder explains its app's
	 * demand; so does one acted on and not measured since (starved
	 * at the idle class), for a grace and two windows.
	 */
	if (t->activity == QJ_TASK_BUSY || t->activity == QJ_TASK_CONTINUED ||
	    d.verdict == QJ_LADDER_APPLY ||
	    (t->activity == QJ_TASK_UNKNOWN && t->ladder.rung >= 0 &&
	     s->now < t->ladder.applied_usec + e->p->rungs[t->ladder.rung].grace_usec +
			      2 * e->p->sample_window_usec))
		sa->explained = true;
	if (!task_blocked(t, as) || d.verdict == QJ_LADDER_APPLY) {
		s->all_blocked = false;
		task_holds_up(e, as, t, &d);
	}
	look_at(s, d.next_usec);
	/* Keep measuring whatever is not stopped or frozen. */
	if (t->activity != QJ_TASK_STOPPED && t->activity != QJ_TASK_FROZEN)
		look_at(s, t->sample.t0_usec + e->p->sample_window_usec);
	return 0;
}

/*
 * A group sweep under way: sweep again.  1 when it goes on (or gave way to the next
 * group rung), 0 once cgroup.procs is stable and every task was reached, -errno.
 */
static int step_sweep(struct qj_engine *e, struct step *s, struct app_state *a)
{
	const struct qj_rung *rung = &e->p->rungs[a->ladder.rung];
	int r;

	r = qj_eng_group_sweep(e, a, s->now);
	if (r < 0)
		return r;
	if (r == 0 && a->new_tasks == 0) {
		/* cgroup.procs stable, every task reached: judge it from here. */
		a->g_sweeping = false;
		qj_eng_group_restart(e, a, s->now);
		return 0;
	}
	s->changed = true;
	s->all_blocked = false;
	if (s->now >= a->ladder.applied_usec + rung->grace_usec) {
		/*
		 * Forking faster than the sweep for a whole grace period: the next
		 * group rung (cgroup.freeze or cgroup.kill are atomic against fork).
		 */
		log_notice("App %s outruns the group %s sweep: next rung", a->name, rung->name);
		a->g_sweeping = false;
		r = group_escalate(e, a, s->now, &s->next);
		return r < 0 ? r : 1;
	}
	/* Not stable yet: list cgroup.procs again in a moment. */
	hold_up(a, s->now + CONFIRM_USEC, "group %s sweep: %u tasks so far", rung->name, a->g_n);
	look_at(s, s->now + CONFIRM_USEC);
	return 1;
}

/* The group ladder for app @a, when its tasks do not explain its demand. */
static int step_group(struct qj_engine *e, struct step *s, struct app_state *a)
{
	const struct qj_app *app = qj_eng_jailed_app(e, a->name);
	uint64_t window_end = a->t0_usec + e->p->sample_window_usec;
	struct step_app *sa = step_app(s, e, a);
	int r;

	if (!sa)
		return -ENOMEM;
	if (!app || app->exempt)
		return 0;
	if (a->g_sweeping) {
		r = step_sweep(e, s, a);
		if (r != 0)
			return r < 0 ? r : 0;
		window_end = a->t0_usec + e->p->sample_window_usec; /* restarted */
	}
	if (a->have_base && (a->ladder.pending || !s->all_blocked))
		look_at(s, window_end);
	if (!a->judged) {
		/*
		 * Busy when last judged, acted on since: it holds the quiesce until a
		 * window says it is idle, unless nothing of it can run any more.
		 */
		if (a->suspect && sa->n_live > 0) {
			s->all_blocked = false;
			hold_up(a, window_end,
				"busy in its last window, judged again after an action");
			look_at(s, window_end);
		}
		return 0;
	}
	if (!a->busy) {
		if (a->ladder.pending)
			qj_eng_log_group(e, a,
					 qj_eng_rung_ops(e, a->ladder.rung)->kills ? "killed" :
										     "blocked");
		return 0;
	}
	if (sa->explained)
		return 0;
	s->all_blocked = false;
	r = group_escalate(e, a, s->now, &s->next);
	if (r < 0)
		return r;
	s->changed |= r > 0;
	return 0;
}

/* Looks at every task and app, applies the rungs due; scheduling is the caller's. */
static int step_run(struct qj_engine *e, struct step *s)
{
	int r;

	for (size_t i = 0; i < e->n_apps; i++) {
		e->apps[i].new_tasks = 0;
		e->apps[i].holding[0] = 0;
	}
	r = qj_eng_rescan(e, s->now);
	if (r < 0)
		return r;
	r = qj_eng_sample_groups(e, s->now);
	if (r < 0)
		return r;
	for (size_t i = 0; i < e->n_tasks; i++) {
		r = step_task(e, s, &e->tasks[i]);
		if (r < 0)
			return r;
	}
	e->jail_running = e->jail_running_now;
	e->jail_running_now = 0;
	/* App-level demand: the group ladder for apps whose tasks cannot explain it. */
	for (size_t i = 0; i < e->n_apps; i++) {
		r = step_group(e, s, &e->apps[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Is the first window still open, with nothing acted on and a task not yet measured?
 * Then no task can be judged yet and the jail cannot be quiet: a look at every task
 * (10,000 stat reads, and a later first verdict) would change nothing.  A task that
 * appears meanwhile is found by the step at the window's end.
 */
static bool first_window_open(const struct qj_engine *e, uint64_t now)
{
	bool unmeasured = false;

	if (e->n_actions || now >= e->begin_usec + e->p->sample_window_usec)
		return false;
	for (size_t i = 0; i < e->n_tasks && !unmeasured; i++)
		unmeasured = !e->tasks[i].gone && e->tasks[i].activity == QJ_TASK_UNKNOWN;
	return unmeasured;
}

int qj_eng_quiesce_step(struct qj_engine *e, uint64_t now_usec, uint64_t *ret_next_usec)
{
	struct step s = { .now = now_usec, .next = USEC_INFINITY, .all_blocked = true };
	uint64_t bound;
	int r;

	if (!e->quiescing)
		return -ESTALE;
	bound = e->begin_usec + qj_policy_quiesce_bound_usec(e->p);
	if (now_usec > bound)
		return quiesce_timeout(e, now_usec);
	if (first_window_open(e, now_usec)) {
		*ret_next_usec = e->begin_usec + e->p->sample_window_usec;
		return 0;
	}
	r = step_run(e, &s);
	free(s.apps);
	if (r < 0)
		return r;
	qj_eng_group_restarts_flush(e);
	qj_eng_follow_sync(e);
	if (s.changed || e->state_dirty) {
		r = qj_eng_save_state(e);
		if (r < 0)
			log_warning_errno(r, "Failed to save state, ignoring: %m");
	}
	if (s.all_blocked) {
		if (!e->quiesced_usec)
			e->quiesced_usec = now_usec;
		*ret_next_usec = USEC_INFINITY;
		return 1;
	}
	/* Never past the bound without a look: that step ends the quiesce. */
	s.next = s.next > bound ? bound + 1 : s.next;
	*ret_next_usec = s.next <= now_usec ? now_usec + 1 : s.next;
	return 0;
}
