// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Group demand: each app's window of cgroup CPU use and stall, judged against a runnable
 * task's share of the machine, and whether a window spans an action still in flight.
 */
#include <inttypes.h>
#include <signal.h>
#include <string.h>

#include "log.h"

#include "jail-internal.h"

/* *ret_stall is UINT64_MAX without PSI (Debian boots with psi=0): no stall figure. */
static int group_demand(struct qj_engine *e, const char *app, uint64_t *ret_usage,
			uint64_t *ret_stall)
{
	uint64_t usage, stall = 0;
	int r;

	r = qj_cgroup_usage_usec(e->cg, app, &usage);
	if (r < 0)
		return r;
	if (qj_cgroup_cpu_stall_usec(e->cg, app, &stall) < 0)
		stall = UINT64_MAX;
	*ret_usage = usage;
	*ret_stall = stall;
	return 0;
}

/*
 * Would a window starting now measure @t as it was before its last action?
 * Yes while the signal waits to be taken, except a SIGSTOP still queued: the
 * task has not run since it was sent (a running one takes it at once) and
 * stops before it runs anything of its own.  Its wait to take the stop is
 * the app's stall, though: such a window is judged by CPU alone
 * (*ret_stop_queued).  Starved at the idle class on a loaded host a stop may
 * stay queued for the whole cycle, and not judging the window kept a large
 * app "measured again" until quiesce-timeout (docs/decisions.md).
 */
static bool action_in_flight(struct qj_engine *e, struct task *t, bool *ret_stop_queued)
{
	struct qj_proc_status ps;

	if (!qj_eng_rung_ops(e, t->ladder.rung)->stops || t->killed_by_us)
		return qj_eng_task_signal_pending(e, t);
	if (t->gone)
		return false;
	/* One queued stop found is enough: 10,000 just stopped cost one read. */
	if (!*ret_stop_queued && qj_proc_status_read(t->pid, &ps) == 0 &&
	    ((ps.shdpnd | ps.sigpnd) & (1ULL << (SIGSTOP - 1))))
		*ret_stop_queued = true;
	return t->threads > 1 && qj_proc_stop_under_way(t->pid) == 1;
}

/*
 * @a's window begins: is an action on a task of it still in flight (the first
 * one found answers), or a stop still queued?
 */
static void group_wait_base(struct qj_engine *e, struct app_state *a)
{
	a->pending_at_start = a->stop_queued_at_start = false;
	for (size_t i = 0; i < e->n_tasks && !a->pending_at_start; i++) {
		struct task *t = &e->tasks[i];

		/* Gone too: a task killed and still dying needs the CPU to finish. */
		if (t->ladder.rung >= 0 && strcmp(t->app, a->name) == 0)
			a->pending_at_start = action_in_flight(e, t, &a->stop_queued_at_start);
	}
}

/*
 * Is @a's stall over the window the ladder's doing?  At the idle class on a
 * busy host a task acted on needs the CPU only to take its signal, and waits
 * for it, runnable: its app's cpu.pressure counts that wait.  So a window at
 * whose end a task acted on still waits to take its signal is judged by the
 * group's CPU use alone (docs/decisions.md).
 */
static bool group_stall_excused(struct qj_engine *e, struct app_state *a, uint64_t now)
{
	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];

		if (strcmp(t->app, a->name) != 0 || t->ladder.rung < 0)
			continue;
		if (qj_eng_task_signal_pending(e, t) || qj_eng_notify_wait(e, t, now))
			return true;
	}
	return false;
}

/*
 * Did @a's window open while an action on it had not landed yet?  Then it
 * measured the app before and after, and says nothing of what is left running:
 * a forker at its share of a loaded host next to three siblings that were
 * still running passed as idle, and ran at 42% of a CPU once they were
 * stopped, while the system was "suspending".
 */
static bool group_window_spans_action(const struct qj_engine *e, const struct app_state *a)
{
	(void)e;
	return a->pending_at_start;
}

/*
 * Starts @a's next group window now: what came before an action says nothing
 * after it.  Its base is read by qj_eng_group_restarts_flush() at the end of the step,
 * once every action of the step was taken.
 */
void qj_eng_group_restart(struct qj_engine *e, struct app_state *a, uint64_t now)
{
	(void)e;
	a->judged = false;
	a->busy = false;
	a->t0_usec = now;
	a->restart_due = true;
}

/*
 * Per app group: did the group as a whole want more than busy_threshold of a
 * CPU over the window, whatever the lifetime of its tasks?  Fails closed: a
 * group whose counters cannot be read fails the step.
 */
/*
 * One look at the machine's load: runnable tasks outside the jail (the jailed
 * ones seen in 'R' at the last step taken off), summed for the apps' windows.
 * Unreadable: the last value stands.
 */
static void sample_machine(struct qj_engine *e)
{
	unsigned running;

	if (qj_sample_runnable(&running) == 0)
		e->others_now = running > e->jail_running ? running - e->jail_running : 0;
	e->others_sum += e->others_now;
	e->others_n++;
}

/* What a runnable task of @a got of a CPU over its window, from the load's mean. */
static double app_share(const struct qj_engine *e, const struct app_state *a)
{
	double others = e->others_n > a->others_base_n ?
				(e->others_sum - a->others_base_sum) /
					(double)(e->others_n - a->others_base_n) :
				e->others_now;

	return qj_demand_share(e->cpus, others);
}

static void app_share_base(const struct qj_engine *e, struct app_state *a)
{
	a->others_base_sum = e->others_sum;
	a->others_base_n = e->others_n;
}

/* The bases of the windows the step's actions restarted: after the last action. */
void qj_eng_group_restarts_flush(struct qj_engine *e)
{
	for (size_t i = 0; i < e->n_apps; i++) {
		struct app_state *a = &e->apps[i];
		uint64_t usage, stall;

		if (!a->restart_due)
			continue;
		a->restart_due = false;
		a->have_base = group_demand(e, a->name, &usage, &stall) == 0;
		a->base_usec = a->have_base ? usage : 0;
		a->base_stall_usec = a->have_base ? stall : 0;
		app_share_base(e, a);
		group_wait_base(e, a);
	}
}

int qj_eng_sample_groups(struct qj_engine *e, uint64_t now)
{
	qj_eng_group_restarts_flush(e); /* a step that failed part-way left them */
	sample_machine(e);
	for (size_t i = 0; i < e->n_apps; i++) {
		struct app_state *a = &e->apps[i];
		uint64_t usage, stall;
		int r;

		if (!qj_eng_jailed_app(e, a->name))
			continue;
		r = group_demand(e, a->name, &usage, &stall);
		if (r == -ENOENT)
			continue; /* no such group (yet) */
		if (r < 0)
			return log_warning_errno(r, "Failed to read the CPU use of app %s: %m",
						 a->name);
		if (a->have_base && now < a->t0_usec + e->p->sample_window_usec)
			continue;
		if (a->have_base && group_window_spans_action(e, a)) {
			/* Judged again over a window that starts now: it must prove quiet. */
			a->judged = false;
			a->suspect = true;
			log_debug(
				"App %s: its window began before an action landed, measured again",
				a->name);
		} else if (a->have_base) {
			bool no_stall = stall == UINT64_MAX || a->base_stall_usec == UINT64_MAX;
			uint64_t used = usage > a->base_usec ? usage - a->base_usec : 0;
			uint64_t stalled = !no_stall && stall > a->base_stall_usec ?
						   stall - a->base_stall_usec :
						   0;
			bool excused = stalled > 0 &&
				       (a->stop_queued_at_start || group_stall_excused(e, a, now));
			double share = app_share(e, a);

			a->busy = qj_demand_app_busy(
				&(struct qj_app_window){ .used_usec = used,
							 .stalled_usec = stalled,
							 .stall_excused = excused,
							 .no_stall = no_stall,
							 .window_usec = now - a->t0_usec,
							 .share = share },
				e->p->busy_threshold, &used);
			a->judged = true;
			a->suspect = a->busy;
			a->last_cpu_ms = used / 1000;
			a->last_window_ms = (now - a->t0_usec) / 1000;
			if (a->busy)
				log_debug("App %s: busy, %" PRIu64 " ms of %" PRIu64
					  " ms (stall %" PRIu64 " ms%s; a task's share %.2f)",
					  a->name, a->last_cpu_ms, a->last_window_ms,
					  stalled / 1000, excused ? ", excused" : "", share);
		}
		a->have_base = true;
		a->t0_usec = now;
		a->base_usec = usage;
		a->base_stall_usec = stall;
		a->restart_due = false;
		app_share_base(e, a);
		group_wait_base(e, a);
	}
	return 0;
}
