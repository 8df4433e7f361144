// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kill log's records of the ladder: one per task action and one per group action,
 * written once the action's outcome is known.
 */
#include <jansson.h>
#include <stdio.h>

#include "log.h"
#include "rfc3339.h"

#include "jail-internal.h"

/* Appends @o (consumed; NULL after an OOM is dropped) to the kill log. */
void qj_eng_append_record(struct qj_engine *e, json_t *o)
{
	int r;

	if (!o)
		return;
	r = qj_killlog_append_json(e->log, o);
	json_decref(o);
	if (r < 0)
		log_warning_errno(r, "Failed to write the kill log, ignoring: %m");
}

const char *qj_eng_gone_outcome(const struct task *t)
{
	return t->killed_by_us ? "killed" : "exited";
}

void qj_eng_log_action(struct qj_engine *e, struct task *t, const char *outcome)
{
	struct app_state *a = qj_eng_app_state(e, t->app);
	const struct qj_rung *rung = &e->p->rungs[t->ladder.rung];
	_cleanup_free_ char *cg = qj_cgroup_app_path(e->cg, t->app);
	struct qj_kill_record rec = {
		.ts_usec = t->ladder.applied_realtime_usec,
		.cycle = e->cycle,
		.app = t->app,
		.pid = t->pid,
		.comm = t->comm,
		.exe = t->exe,
		.uid = t->uid,
		.cgroup = cg,
		.action = qj_action_to_string(rung->action),
		.rung = t->ladder.rung,
		.rung_name = rung->name,
		.reason = t->pending_reason,
		.cpu_ms = t->pending_cpu_ms,
		.window_ms = t->pending_window_ms,
		.outcome = outcome,
		.strikes = a ? a->undo.strikes + a->struck : 0,
	};
	int r;

	t->ladder.pending = false;
	if (!e->log)
		return;
	r = qj_killlog_append(e->log, &rec);
	if (r < 0)
		log_warning_errno(r, "Failed to write the kill log, ignoring: %m");
}

/* One kill-log record per group action, written once its outcome is known. */
void qj_eng_log_group(struct qj_engine *e, struct app_state *a, const char *outcome)
{
	const struct qj_rung *rung = &e->p->rungs[a->ladder.rung];
	_cleanup_free_ char *cg = qj_cgroup_app_path(e->cg, a->name);
	char reason[96], ts[32];
	json_t *o, *pids;

	a->ladder.pending = false;
	log_info("Group %s of app %s: %s (%u tasks)", qj_action_to_string(rung->action), a->name,
		 outcome, a->g_n);
	if (!e->log)
		return;
	snprintf(reason, sizeof(reason), "app busy, its tasks handled or too short-lived");
	if (qj_format_rfc3339(a->ladder.applied_realtime_usec, ts, sizeof(ts)) < 0)
		ts[0] = '\0';
	pids = json_array();
	for (unsigned i = 0; pids && i < a->g_n && i < GROUP_PIDS_MAX; i++)
		(void)json_array_append_new(pids, json_integer(a->g_pids[i]));
	/* When the rung was applied, not when its outcome is known; as text, like every record. */
	o = json_pack("{s:s,s:I,s:s,s:s?,s:s,s:s,s:i,s:s,s:s,s:i,s:o,s:I,s:I,s:s,s:i}", "ts", ts,
		      "cycle", (json_int_t)e->cycle, "app", a->name, "cgroup", cg, "scope", "group",
		      "action", qj_action_to_string(rung->action), "rung", a->ladder.rung,
		      "rung_name", rung->name, "reason", reason, "tasks", (int)a->g_n, "pids",
		      pids ? pids : json_null(), "cpu_ms", (json_int_t)a->g_cpu_ms, "window_ms",
		      (json_int_t)a->g_window_ms, "outcome", outcome, "strikes",
		      (int)(a->undo.strikes + a->struck));
	qj_eng_append_record(e, o);
}

void qj_eng_log_summary(struct qj_engine *e, const char *why, uint64_t now, bool kept,
			unsigned continued, unsigned thawed)
{
	uint64_t usage = 0;
	unsigned tasks = 0;
	json_t *o;

	if (!e->log)
		return;
	for (size_t i = 0; i < e->n_tasks; i++)
		tasks += !e->tasks[i].gone;
	(void)qj_cgroup_usage_usec(e->cg, NULL, &usage);
	/* begin_ts: the kill log adds the one the daemon noted (qj_killlog_cycle_begin()). */
	o = json_pack(
		"{s:I,s:s,s:s,s:s,s:I,s:I,s:I,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "cycle",
		(json_int_t)e->cycle, "action", "summary", "reason", why, "outcome",
		e->quiesced_usec ? "quiesced" : "aborted", "quiesce_ms",
		(json_int_t)(e->quiesced_usec ? (e->quiesced_usec - e->begin_usec) / 1000 : 0),
		"window_ms", (json_int_t)((now - e->begin_usec) / 1000), "cpu_ms",
		(json_int_t)(usage > e->jail_usage_begin ? (usage - e->jail_usage_begin) / 1000 :
							   0),
		"tasks", (int)tasks, "actions", (int)e->n_actions, "stopped",
		(int)e->n_stopped_cycle, "killed", (int)e->n_killed, "continued", (int)continued,
		"thawed", (int)thawed, "seen", (int)e->n_tasks);
	if (o && kept && json_object_set_new(o, "kept", json_true()) < 0) {
		json_decref(o);
		o = NULL;
	}
	qj_eng_append_record(e, o);
}
