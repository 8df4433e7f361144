// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Observing a task: what /proc and its sample window say it did (qj_eng_observe()), and
 * whether the signal of its last rung still waits to be taken.
 */
#include <inttypes.h>
#include <signal.h>
#include <string.h>

#include "log.h"

#include "jail-internal.h"

static bool app_frozen(struct qj_engine *e, const char *app)
{
	struct app_state *a = qj_eng_app_state(e, app);

	return a && a->undo.frozen && qj_cgroup_event(e->cg, app, "frozen") == 1;
}

/* /proc said "no such process": gone only when the pidfd agrees (else exiting: look again). */
static bool exited(int r, const struct task *t)
{
	return (r == -ESRCH || r == -ENOENT) && qj_pidfd_exited(t->pidfd);
}

/*
 * Was @t notified (SIGXCPU) and has not blocked since, nor used a busy
 * window's worth of CPU?  A task that listens winds down with microseconds of
 * CPU; starved at the idle class on a loaded host it may wait seconds to get
 * them.  Not a time limit, then, but a CPU budget: one that spins on instead
 * spends it and is judged as any other.  Past half the quiesce bound a starved
 * one is judged as any other too, so the cycle still ends within the bound.
 */
bool qj_eng_notify_wait(const struct qj_engine *e, const struct task *t, uint64_t now)
{
	return t->notified && !t->gone && t->ladder.rung >= 0 &&
	       qj_eng_rung_ops(e, t->ladder.rung)->notifies &&
	       now < e->begin_usec + qj_policy_quiesce_bound_usec(e->p) / 2 &&
	       !qj_sample_is_busy(t->sample.base.cpu_ns - t->notify_cpu_ns,
				  e->p->sample_window_usec, e->p->busy_threshold);
}

/*
 * Of the processes @t started since @since, those gone already: too
 * short-lived to be judged on their own, they make it a forker.  Those alive
 * are tracked and judged themselves: a shell waiting for the pipeline it
 * started is not busy (it was stopped, "busy, 0 ms").
 */
static unsigned short_lived_children(const struct qj_engine *e, const struct task *t,
				     uint64_t since)
{
	unsigned alive = 0;

	if (t->spawned < 2)
		return t->spawned;
	for (size_t i = 0; i < e->n_tasks; i++) {
		const struct task *c = &e->tasks[i];

		alive += c->ppid == t->pid && !c->gone && c->added_usec >= since &&
			 strcmp(c->app, t->app) == 0;
	}
	return alive < t->spawned ? t->spawned - alive : 0;
}

/* Alive per its pidfd, with SIGKILL pending or inside its exit. */
static bool task_dying(struct task *t)
{
	struct qj_proc_status ps;
	struct qj_proc_stat st;

	if (t->pidfd < 0 || qj_pidfd_exited(t->pidfd))
		return false;
	if (qj_proc_stat_read(t->pid, &st) < 0 || st.start_time != t->start_time)
		return false;
	if (st.flags & QJ_PF_EXITING)
		return true;
	return qj_proc_status_read(t->pid, &ps) == 0 &&
	       ((ps.shdpnd | ps.sigpnd) & (1ULL << (SIGKILL - 1)));
}

/*
 * Does @t wait to take the signal of its last rung?  Pending, it has not had
 * the CPU to take it yet (a SIGXCPU handler to run, a SIGSTOP to act on); killed,
 * it needs the CPU to finish dying.  Unreadable: no (fail closed: nothing
 * excused).
 */
bool qj_eng_task_signal_pending(struct qj_engine *e, struct task *t)
{
	struct qj_proc_status ps;
	uint64_t mask;

	if (t->ladder.rung < 0)
		return false;
	if (t->killed_by_us && task_dying(t))
		return true;
	if (t->gone || qj_proc_status_read(t->pid, &ps) < 0)
		return false;
	mask = qj_action_info(e->p->rungs[t->ladder.rung].action)->pending_mask;
	if (!mask)
		return false;
	if ((ps.shdpnd | ps.sigpnd) & mask)
		return true;
	/*
	 * A group stop under way: one thread took the SIGSTOP, others wait to
	 * stop.  Not a thread in 'D': it takes the stop only when its wait ends
	 * (a FUSE read that never returns), and runs nothing meanwhile.
	 */
	if (mask == 1ULL << (SIGSTOP - 1))
		return t->threads > 1 && qj_proc_stop_under_way(t->pid) == 1;
	return false;
}

/*
 * Updates t->activity from /proc and the sample window.  Fails closed: any
 * error other than the task having exited is returned, and the step fails
 * rather than take an unreadable task for a quiet one.
 */
/* @t, stopped by the cycle, is not in 'T': stopping still, or continued by another. */
static int observe_our_stop(struct task *t, const struct qj_proc_stat *st,
			    const struct qj_proc_status *ps, uint64_t now)
{
	int r;

	/*
	 * A SIGSTOP takes effect when the task next runs; starved at
	 * the idle class that can take a while.  Still pending: stopping.
	 */
	if ((ps->shdpnd | ps->sigpnd) & (1ULL << (SIGSTOP - 1))) {
		t->activity = QJ_TASK_STOPPED;
		t->stop_queued = true;
		return 0;
	}
	/*
	 * Neither stopped nor pending: the stop may have been dequeued
	 * between the two reads (stat said R, status no longer has it).
	 * The dequeue and the stopped state are one step under the
	 * task's signal lock, so a thread in T now is that stop.
	 */
	r = qj_proc_some_thread_stopped(t->pid);
	if (r < 0 && !(r == -ESRCH || r == -ENOENT))
		return log_warning_errno(r, "Failed to read the threads of %d (%s): %m", t->pid,
					 t->comm);
	if (r != 0) {
		t->activity = QJ_TASK_STOPPED; /* or exiting: the pidfd will say so */
		return 0;
	}
	/* We stopped it and it runs: another process sent SIGCONT. */
	t->undo.stopped = false;
	t->activity = QJ_TASK_CONTINUED;
	r = qj_sample_restart(&t->sample, st, now);
	if (r < 0 && !exited(r, t))
		return r;
	return 0;
}

/* A window of @t ended with raw verdict @act: its activity, weighed with its app's. */
static void judge_window(struct qj_engine *e, struct task *t, const struct qj_proc_stat *st,
			 enum qj_task_activity act, uint64_t window_t0, uint64_t cpu_base_ns,
			 uint64_t now)
{
	struct app_state *a = qj_eng_app_state(e, t->app);

	act = qj_demand_task_verdict(&(struct qj_task_window){
		.activity = act,
		.spawned = act == QJ_TASK_IDLE ? short_lived_children(e, t, window_t0) : t->spawned,
		.acted_on = t->ladder.rung >= 0,
		.runnable = st->state == 'R',
		.signal_pending = t->sig_seen_usec >= window_t0,
		.app_judged = a && a->judged,
		.app_busy = a && a->busy,
		.notify_waiting = qj_eng_notify_wait(e, t, now),
		.own_cpu_busy = qj_sample_is_busy(t->sample.base.cpu_ns - cpu_base_ns,
						  t->sample.last_window_usec, e->p->busy_threshold),
	});
	t->spawned = 0;
	t->activity = act;
	log_debug("%d (%s): %s, %" PRIu64 " ms of %" PRIu64 " ms", t->pid, t->comm,
		  qj_task_activity_to_string(act), t->sample.last_ns / 1000000,
		  (uint64_t)(t->sample.last_window_usec / USEC_PER_MSEC));
}

int qj_eng_observe(struct qj_engine *e, struct task *t, uint64_t now)
{
	struct qj_proc_stat st;
	struct qj_proc_status ps = {};
	enum qj_task_activity act;
	uint64_t window_t0, cpu_base_ns;
	int r;

	if (t->gone)
		return 0;
	if (qj_pidfd_exited(t->pidfd)) {
		qj_eng_mark_gone(e, t);
		return 0;
	}
	r = qj_proc_stat_read(t->pid, &st);
	if (r == -ESRCH || r == -ENOENT) {
		if (exited(r, t))
			qj_eng_mark_gone(e, t);
		return 0; /* exiting: the pidfd will say so */
	}
	if (r < 0)
		return log_warning_errno(r, "Failed to read the state of %d (%s): %m", t->pid,
					 t->comm);
	if (st.start_time != t->start_time || st.state == 'X') {
		qj_eng_mark_gone(e, t);
		return 0;
	}
	e->jail_running_now += st.state == 'R';
	if (st.state == 'Z') {
		/*
		 * The pidfd says the process lives: its main thread exited
		 * (pthread_exit) and other threads run.  Judge it by them.
		 */
		r = qj_proc_threads_state(t->pid, &st.state);
		if (r < 0 && !(r == -ESRCH || r == -ENOENT))
			return log_warning_errno(r, "Failed to read the threads of %d (%s): %m",
						 t->pid, t->comm);
		if (r < 0 || st.state == 'Z')
			return 0; /* exiting: the pidfd will say so */
	}
	t->threads = st.num_threads;
	/* A stop in effect needs no look at the pending signals (10,000 confirmations). */
	if (t->killed_by_us || (t->undo.stopped && st.state != 'T' && st.state != 't')) {
		r = qj_proc_status_read(t->pid, &ps);
		if (r < 0 && !(r == -ESRCH || r == -ENOENT))
			return log_warning_errno(r, "Failed to read the signals of %d (%s): %m",
						 t->pid, t->comm);
		if (r < 0)
			return 0; /* exiting */
	}
	if (t->killed_by_us && ((ps.shdpnd | ps.sigpnd) & (1ULL << (SIGKILL - 1)))) {
		/* A fatal signal is queued as SIGKILL: dying, it runs no code of its own. */
		qj_eng_mark_gone(e, t);
		return 0;
	}
	if (app_frozen(e, t->app)) {
		t->activity = QJ_TASK_FROZEN;
		return 0;
	}
	t->stop_queued = false;
	if (st.state == 'T' || st.state == 't') {
		/* Measured afresh from its first look once it runs again. */
		t->activity = QJ_TASK_STOPPED;
		t->sample.have_base = false;
		return 0;
	}
	if (t->undo.stopped)
		return observe_our_stop(t, &st, &ps, now);
	if (t->activity == QJ_TASK_STOPPED || t->activity == QJ_TASK_FROZEN)
		t->activity = QJ_TASK_UNKNOWN; /* resumed by its owner: measure afresh */
	if (t->ladder.rung >= 0 && !t->killed_by_us && qj_eng_task_signal_pending(e, t))
		t->sig_seen_usec = now;
	else if (t->notified && st.state != 'R')
		t->notified = false; /* took the notification and blocked */
	window_t0 = t->sample.t0_usec;
	cpu_base_ns = t->sample.base.cpu_ns;
	r = qj_sample_observe(&t->sample, &st, now, e->p->sample_window_usec, e->p->busy_threshold,
			      t->ladder.rung < 0, &act);
	if (r == -ESRCH || r == -ENOENT) {
		if (exited(r, t))
			qj_eng_mark_gone(e, t);
		return 0;
	}
	if (r < 0)
		return log_warning_errno(r, "Failed to sample %d (%s): %m", t->pid, t->comm);
	if (r == 1)
		judge_window(e, t, &st, act, window_t0, cpu_base_ns, now);
	return 0;
}
