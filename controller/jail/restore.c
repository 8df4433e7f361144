// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The restore: continue and thaw what the cycle stopped and froze, restore timer slack
 * and the CPU class, close the cycle's records and write its summary.
 */
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#include "jail-internal.h"

/*
 * After the restore's SIGCONTs, every app the cycle sent SIGSTOP to is listed
 * again: a task of it stopped (or with a SIGSTOP pending) is continued, unless
 * it is one the cycle tracked and never stopped (its owner stopped it).
 * Returns how many it continued.
 */
static unsigned restore_sweep(struct qj_engine *e)
{
	unsigned n = 0;

	for (size_t a = 0; a < e->n_apps; a++) {
		const char *app = e->apps[a].name;
		pid_t *pids = NULL;
		size_t k = 0;
		bool stopped_any = false;

		for (size_t i = 0; i < e->n_tasks && !stopped_any; i++)
			stopped_any = e->tasks[i].sent_stop && strcmp(e->tasks[i].app, app) == 0;
		if (!stopped_any || qj_cgroup_app_pids(e->cg, app, &pids, &k) < 0)
			continue;
		for (size_t i = 0; i < k; i++) {
			const struct task *t = qj_eng_find_task(e, pids[i]);
			struct qj_proc_status ps;
			struct qj_proc_stat st;

			if (t && !t->gone && !t->sent_stop)
				continue;
			if (qj_proc_stat_read(pids[i], &st) < 0 ||
			    qj_proc_status_read(pids[i], &ps) < 0)
				continue;
			if (qj_proc_some_thread_stopped(pids[i]) != 1 &&
			    !((ps.shdpnd | ps.sigpnd) & (1ULL << (SIGSTOP - 1))))
				continue;
			if (qj_eng_cont_if_same(pids[i], st.start_time) == 0) {
				log_notice("Continued %d (%s) in app %s, still stopped after the "
					   "restore",
					   pids[i], st.comm, app);
				n++;
			}
		}
		free(pids);
	}
	return n;
}

int qj_eng_restore(struct qj_engine *e, const char *why)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	unsigned continued = 0, thawed = 0;
	int r, ret = 0;

	if (!e->quiescing) {
		r = qj_cgroup_set_idle(e->cg, false);
		return r < 0 ? r : 0;
	}
	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];

		if ((t->undo.stopped || t->sent_stop) && !t->gone) {
			r = qj_eng_send_signal(t, SIGCONT);
			if (r == 0)
				continued++;
			else if (r != -ESRCH && ret == 0)
				ret = r;
			t->undo.stopped = false;
		}
	}
	continued += restore_sweep(e);
	for (size_t i = 0; i < e->n_apps; i++)
		if (e->apps[i].undo.frozen) {
			r = qj_cgroup_freeze(e->cg, e->apps[i].name, false);
			if (r < 0 && r != -ENOENT && ret == 0)
				ret = r;
			e->apps[i].undo.frozen = false;
			thawed++;
		}
	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];

		if (!t->gone && qj_pidfd_exited(t->pidfd))
			qj_eng_mark_gone(e, t);
		if (t->ladder.pending)
			qj_eng_log_action(e, t, t->gone ? qj_eng_gone_outcome(t) : "restored");
		qj_eng_slack_restore(e, t);
	}
	for (size_t i = 0; i < e->n_apps; i++)
		if (e->apps[i].ladder.pending)
			qj_eng_log_group(
				e, &e->apps[i],
				qj_eng_rung_ops(e, e->apps[i].ladder.rung)->kills_at_restore ?
					"killed" :
					"restored");
	r = qj_cgroup_set_idle(e->cg, false);
	if (r < 0 && ret == 0)
		ret = log_warning_errno(r, "Failed to restore the jail's CPU class: %m");
	qj_eng_count_strikes(e);
	qj_eng_log_summary(e, why ? why : "restore", now, false, continued, thawed);
	/* Follow what this cycle acted on a while longer: deaths the resume brings. */
	for (size_t i = 0; i < e->n_follows; i++)
		if (e->follows[i].until_usec == USEC_INFINITY)
			e->follows[i].until_usec = now + FOLLOW_AFTER_USEC;
	if (e->pm) {
		bool more = false;

		(void)qj_procmon_dispatch(e->pm, qj_eng_on_event, e, &more);
		if (!more) /* else the next qj_engine_on_procmon() logs them */
			qj_eng_follow_prune(e, now);
	}
	log_info("Cycle %" PRIu64 " restored (%s): %u actions, %u continued, %u thawed", e->cycle,
		 why ? why : "restore", e->n_actions, continued, thawed);
	qj_eng_tasks_clear(e);
	e->quiescing = false;
	r = qj_eng_save_state(e);
	if (r < 0 && ret == 0)
		ret = r;
	return ret;
}
