// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The task table of a cycle (sorted by pid; each task pinned by its pidfd), and the timer
 * slack each task is given while the jail quiesces.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "log.h"

#include "jail-internal.h"

int qj_eng_send_signal(struct task *t, int sig)
{
	if (t->pidfd < 0)
		return -ESRCH;
	if (pidfd_send_signal(t->pidfd, sig, NULL, 0) < 0)
		return negative_errno();
	return 0;
}

void qj_eng_task_exe(struct task *t)
{
	int r;

	if (t->exe || t->gone)
		return;
	r = qj_proc_exe(t->pid, &t->exe);
	if (r < 0)
		log_debug_errno(r, "Failed to read the executable of %d (%s), ignoring: %m", t->pid,
				t->comm);
}

void qj_eng_task_done(struct task *t)
{
	if (t->pidfd >= 0)
		(void)close(t->pidfd);
	t->pidfd = -EBADF;
	qj_sample_close(&t->sample);
	free(t->app);
	free(t->exe);
	free(t->undo.slack);
	t->app = t->exe = NULL;
	t->undo.slack = NULL;
}

void qj_eng_tasks_clear(struct qj_engine *e)
{
	for (size_t i = 0; i < e->n_tasks; i++)
		qj_eng_task_done(&e->tasks[i]);
	free(e->tasks);
	e->tasks = NULL;
	e->n_tasks = 0;
}

int qj_eng_cmp_task(const void *a, const void *b)
{
	const struct task *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

struct task *qj_eng_find_task(struct qj_engine *e, pid_t pid)
{
	struct task key = { .pid = pid };

	return e->n_tasks ?
		       bsearch(&key, e->tasks, e->n_tasks, sizeof(*e->tasks), qj_eng_cmp_task) :
		       NULL;
}

/* @st: the process's stat, read just before (a single thread's start time is its own). */
static void slack_apply(struct qj_engine *e, struct task *t, const struct qj_proc_stat *pst)
{
	pid_t *tids = NULL;
	size_t n = 0;

	if (e->p->timer_slack_nsec == 0)
		return;
	if (pst->num_threads == 1) {
		/* No listing of its threads: 10,000 tasks are tracked in one step. */
		tids = malloc(sizeof(*tids));
		if (!tids)
			return;
		tids[0] = t->pid;
		n = 1;
	} else if (qj_proc_tids(t->pid, &tids, &n) < 0) {
		return;
	}
	t->undo.slack = calloc(n, sizeof(*t->undo.slack));
	if (!t->undo.slack) {
		free(tids);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct qj_proc_stat st;
		uint64_t old;

		if (n == 1 && tids[i] == t->pid)
			st = *pst;
		else if (qj_proc_stat_read(tids[i], &st) < 0)
			continue;
		if (qj_proc_timerslack_get(tids[i], &old) < 0)
			continue;
		/* Inherited from a parent we slacked: its own value is the default. */
		if (old == e->p->timer_slack_nsec)
			old = 0;
		if (qj_proc_timerslack_set(tids[i], e->p->timer_slack_nsec) < 0)
			continue;
		t->undo.slack[t->undo.n_slack].tid = tids[i];
		t->undo.slack[t->undo.n_slack].start_time = st.start_time;
		t->undo.slack[t->undo.n_slack++].old_ns = old;
	}
	free(tids);
}

void qj_eng_slack_restore(struct qj_engine *e, struct task *t)
{
	pid_t *tids = NULL;
	size_t n = 0;

	if (e->p->timer_slack_nsec == 0 || t->gone || qj_proc_tids(t->pid, &tids, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = 0; /* threads born during the cycle: back to the default */

		for (size_t j = 0; j < t->undo.n_slack; j++)
			if (t->undo.slack[j].tid == tids[i])
				v = t->undo.slack[j].old_ns;
		(void)qj_proc_timerslack_set(tids[i], v);
	}
	free(tids);
}

int qj_eng_add_task(struct qj_engine *e, const char *app, pid_t pid, int pidfd, bool v1_in,
		    bool keep_files, uint64_t now, struct task *ret)
{
	struct qj_proc_stat st;
	struct qj_proc_status ps;
	struct task t = { .pid = pid,
			  .pidfd = pidfd,
			  .ladder.rung = -1,
			  .sample.fd = -EBADF,
			  .sample.status_fd = -EBADF };
	int r;

	/*
	 * Tasks that entered the v2 group without us (clone3 into the group by
	 * `qosjailctl run`, a direct write of cgroup.procs) are not in the v1 cpu
	 * group on a hybrid host: the idle class would not reach them.
	 */
	if (!v1_in) {
		r = qj_cgroup_place_v1(e->cg, app, pid);
		if (r < 0)
			goto fail;
		log_debug("Moved %d into the v1 cpu group of app %s", pid, app);
	}
	r = qj_proc_stat_read(pid, &st);
	if (r < 0)
		goto fail;
	t.start_time = st.start_time;
	t.added_usec = now;
	t.ppid = st.ppid;
	t.threads = st.num_threads;
	memcpy(t.comm, st.comm, sizeof(t.comm));
	r = qj_proc_status_read(pid, &ps);
	if (r < 0)
		goto fail;
	t.uid = ps.uid;
	t.catches_sigxcpu = ps.sigcgt & (1ULL << (SIGXCPU - 1));
	t.consents = qj_eng_consented(e, pid, st.start_time);
	/* Its /proc files kept open while fds are plenty; the pidfd is never given up. */
	r = qj_sample_open(&t.sample, pid, keep_files);
	if (r < 0)
		goto fail;
	r = qj_sample_restart_status(&t.sample, &st, &ps, now);
	if (r < 0)
		goto fail;
	t.app = strdup(app);
	if (!t.app) {
		r = -ENOMEM;
		goto fail;
	}
	t.activity = st.state == 'T' ? QJ_TASK_STOPPED : QJ_TASK_UNKNOWN;
	t.seen = e->generation;
	slack_apply(e, &t, &st);
	if (t.undo.n_slack)
		e->state_dirty = true;
	*ret = t;
	return 0;
fail:
	qj_eng_task_done(&t);
	return r;
}

void qj_eng_mark_gone(struct qj_engine *e, struct task *t)
{
	if (t->gone)
		return;
	t->gone = true;
	t->activity = QJ_TASK_GONE;
	t->undo.stopped = false;
	if (t->killed_by_us) {
		struct follow *f = qj_eng_find_follow(e, t->pid);

		/* Killed by the rung that says so in its record: nothing more to follow. */
		e->n_killed++;
		if (f)
			qj_eng_follow_remove(e, f);
	}
	if (t->ladder.pending)
		qj_eng_log_action(e, t, qj_eng_gone_outcome(t));
}
