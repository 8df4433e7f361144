// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Dark wakes (suspend.dark_wake: keep-quiesced, docs/decisions.md): after a suspend that
 * returned with no trusted hold the jail stays as the quiesce left it (stopped, frozen,
 * QOS_NONE, idle CPU class), and the next cycle takes it over without a sample window
 * when nothing in it ran since.  Anything that did run (cpu.stat moved, a task was
 * continued by someone else, a new process came) makes the next cycle start over: the
 * jail is restored and quiesced as if it had never been kept.
 */
#include <inttypes.h>
#include <signal.h>

#include "jail-internal.h"
#include "log.h"

/* A task's CPU, all threads (ns); false when it cannot be read (gone). */
static bool task_cpu_ns(struct task *t, uint64_t *ret)
{
	struct qj_proc_stat st;
	struct qj_demand d;

	if (qj_proc_stat_read(t->pid, &st) < 0 || st.start_time != t->start_time ||
	    qj_sample_read(&t->sample, &st, &d) < 0)
		return false;
	*ret = d.cpu_ns;
	return true;
}

/*
 * The tasks we stopped whose SIGSTOP is still pending (starved at the idle class): to
 * take it they must run, in the kernel, and the jail's usage moves by that much.
 */
static void note_settling(struct qj_engine *e)
{
	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];
		struct qj_proc_stat st;

		t->kept_settling = false;
		if (t->gone || !t->undo.stopped || qj_proc_stat_read(t->pid, &st) < 0 ||
		    st.start_time != t->start_time || st.state == 'T' || st.state == 't')
			continue;
		t->kept_settling = task_cpu_ns(t, &t->kept_cpu_ns);
	}
}

/*
 * The CPU the settling tasks used since the jail was kept, in usec rounded up, when
 * each is stopped now (it ran only to take its stop: no code of its own).
 */
static uint64_t settled_usec(struct qj_engine *e)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];
		struct qj_proc_stat st;
		uint64_t ns;

		if (!t->kept_settling || t->gone || qj_proc_stat_read(t->pid, &st) < 0 ||
		    st.start_time != t->start_time || (st.state != 'T' && st.state != 't') ||
		    !task_cpu_ns(t, &ns) || ns < t->kept_cpu_ns)
			continue;
		sum += (ns - t->kept_cpu_ns + 999) / 1000 + 1; /* +1: usage_usec truncates */
	}
	return sum;
}

int qj_engine_keep_quiesced(struct qj_engine *e, const char *why)
{
	uint64_t now = now_usec(CLOCK_MONOTONIC);
	int r;

	if (!e->quiescing || !e->quiesced_usec)
		return -ESTALE;
	if (e->log)
		qj_killlog_defer_sync(e->log);
	/* Records still waiting for their outcome: the quiesce is complete, they took effect. */
	for (size_t i = 0; i < e->n_tasks; i++)
		if (e->tasks[i].ladder.pending && !e->tasks[i].gone)
			qj_eng_log_action(e, &e->tasks[i], "blocked");
	for (size_t i = 0; i < e->n_apps; i++)
		if (e->apps[i].ladder.pending)
			qj_eng_log_group(e, &e->apps[i],
					 qj_eng_rung_ops(e, e->apps[i].ladder.rung)->kills ?
						 "killed" :
						 "blocked");
	/* The cycle ended: its strikes count, as at a restore, and must outlive a reboot. */
	qj_eng_count_strikes(e);
	r = qj_eng_save_state(e);
	if (r < 0)
		log_warning_errno(r, "Failed to save the jail's state, ignoring: %m");
	qj_eng_log_summary(e, why ? why : "suspended", now, true, 0, 0);
	r = qj_cgroup_usage_usec(e->cg, NULL, &e->kept_usage_usec);
	e->kept = r >= 0; /* without a usage figure the next cycle starts over */
	if (r < 0)
		log_warning_errno(r, "Cannot read the jail's CPU usage, not keeping it: %m");
	note_settling(e); /* after the usage: what they run later is never in it */
	log_info("Cycle %" PRIu64 " kept quiesced (%s): %u actions, %u stopped so far", e->cycle,
		 why ? why : "suspended", e->n_actions, e->n_stopped_cycle);
	if (e->log) {
		r = qj_killlog_sync(e->log);
		if (r < 0)
			log_warning_errno(r, "Failed to sync the kill log: %m");
	}
	return e->kept ? 0 : r;
}

/*
 * A task we stopped is still ours to count as stopped: in T, or its SIGSTOP still
 * pending (starved at the idle class it has not run to take it; a SIGCONT would have
 * discarded it), or one of its threads in T (observe.c's reasoning for a quiesce).
 */
static bool still_stopped(pid_t pid, const struct qj_proc_stat *st)
{
	struct qj_proc_status ps;

	if (st->state == 'T' || st->state == 't')
		return true;
	if (qj_proc_status_read(pid, &ps) == 0 &&
	    ((ps.shdpnd | ps.sigpnd) & (1ULL << (SIGSTOP - 1))))
		return true;
	return qj_proc_some_thread_stopped(pid) > 0;
}

/*
 * What ran in the jail since it was kept, or NULL: nothing.  A stopped task seen
 * running again (someone sent SIGCONT) or a process the table does not have is
 * "something", even if the CPU counter has not moved yet.
 */
static const char *what_ran(struct qj_engine *e, uint64_t now)
{
	size_t before = e->n_tasks;
	uint64_t usage = 0;

	if (qj_cgroup_usage_usec(e->cg, NULL, &usage) < 0)
		return "its CPU usage cannot be read";
	if (usage != e->kept_usage_usec) {
		/* Explained by stops taking effect?  The usage read again after theirs. */
		uint64_t settled = settled_usec(e);

		if (qj_cgroup_usage_usec(e->cg, NULL, &usage) < 0)
			return "its CPU usage cannot be read";
		if (usage < e->kept_usage_usec || usage - e->kept_usage_usec > settled)
			return "its CPU usage moved";
		log_debug("The jail's %" PRIu64 " us since the dark wake: its SIGSTOPs taking "
			  "effect",
			  usage - e->kept_usage_usec);
	}
	if (qj_eng_rescan(e, now) < 0)
		return "its processes cannot be listed";
	if (e->n_tasks != before)
		return "a new process";
	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];
		struct qj_proc_stat st;

		if (t->gone || !t->undo.stopped)
			continue;
		if (qj_proc_stat_read(t->pid, &st) < 0)
			continue; /* gone: nothing of it runs */
		if (st.start_time == t->start_time && !still_stopped(t->pid, &st))
			return "a stopped process was continued";
	}
	return NULL;
}

int qj_engine_quiesce_kept(struct qj_engine *e, uint64_t cycle, uint64_t now,
			   uint64_t *ret_next_usec)
{
	const char *ran;
	int r;

	*ret_next_usec = USEC_INFINITY;
	ran = e->quiescing && e->kept ? what_ran(e, now) : "the jail is not kept";
	e->kept = false;
	if (ran) {
		/* Start over: the quiesce that would have run without the key. */
		log_info("Cycle %" PRIu64 ": %s since the dark wake, quiescing the jail again",
			 cycle, ran);
		r = qj_engine_restore(e, "ran during the dark wake");
		if (r < 0)
			log_warning_errno(r, "Failed to restore the kept jail: %m");
		r = qj_engine_quiesce_begin(e, cycle, now);
		if (r < 0)
			return r;
		*ret_next_usec = now;
		return 0;
	}
	/* The same stopped and frozen tasks: this cycle owns them, quiesced at once. */
	e->cycle = cycle;
	e->begin_usec = e->quiesced_usec = now;
	e->n_actions = e->n_killed = e->n_stopped_cycle = 0;
	e->jail_usage_begin = e->kept_usage_usec;
	log_info("Cycle %" PRIu64 ": nothing in the jail ran since the dark wake, quiesced", cycle);
	r = qj_eng_save_state(e);
	if (r < 0)
		log_warning_errno(r, "Failed to save state, ignoring: %m");
	return 1;
}
