// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The jail engine: its life (new, free, a policy reload), the public entry points of
 * the quiesce and the restore, and what it tells status, metrics and explain.  The
 * work is in the files below it (jail-internal.h lists them bottom up): the task
 * table (tasks.c), observing a task (observe.c), group demand (appdemand.c), the
 * rungs (rungs.c), the step (step.c), the restore (restore.c), their kill-log
 * records (killrec.c), deaths followed after a cycle (follow.c), notify consent
 * (consent.c), membership (membership.c) and what a restarted daemon undoes
 * (restart.c).  Signals go only through pidfds opened while the process was
 * verified in the jail, so a reused PID is never signalled.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "procread.h"

#include "jail-internal.h"

static int create_app_groups(struct qj_engine *e)
{
	for (size_t i = 0; i < e->p->n_apps; i++) {
		const struct qj_app *a = &e->p->apps[i];
		int r;

		if (a->trust != QJ_TRUST_JAILED)
			continue;
		r = qj_cgroup_app_create(e->cg, a->name);
		if (r < 0)
			return log_debug_errno(r, "Failed to create group of app %s: %m", a->name);
		if (!qj_eng_app_state(e, a->name))
			return -ENOMEM;
	}
	return 0;
}

int qj_engine_new(const struct qj_policy *p, struct qj_killlog *log, const char *state_dir,
		  struct qj_engine **ret)
{
	struct qj_engine *e;
	int r;

	if (!p || !p->cgroup_path || p->n_rungs == 0)
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->p = p;
	e->log = log;
	if (state_dir) {
		/*
		 * 0755: by default it is the socket's directory too, which launchers
		 * of any uid must reach; the state file itself is 0600.
		 */
		if (mkdir(state_dir, 0755) < 0 && errno != EEXIST) {
			r = negative_errno();
			goto fail;
		}
		if (asprintf(&e->state_file, "%s/%s", state_dir, STATE_FILE) < 0) {
			r = -ENOMEM;
			goto fail;
		}
	}
	/*
	 * Up to three fds per jailed process during a quiesce (pidfd, schedstat,
	 * status).  The /proc files are kept open only while the pidfds are below
	 * half the limit (fds are allocated lowest first, so a pidfd's number is
	 * about how many are open): 10,000 tasks fit a 20,000-fd limit, with room
	 * left for clients, follows and the kill log.
	 */
	{
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
				log_debug_errno(errno,
						"Failed to raise RLIMIT_NOFILE, ignoring: %m");
		}
		e->keep_fds_below = INT_MAX;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 2 < (rlim_t)INT_MAX)
			e->keep_fds_below = (int)(rl.rlim_cur / 2);
	}
	/* Say so at start, not only when a cycle fails: every signal goes through pidfds. */
	r = pidfd_open(getpid(), 0);
	if (r < 0)
		log_warning_errno(errno,
				  "pidfd_open() does not work here (%m): jailed tasks cannot be "
				  "tracked, and cycles with jailed tasks will fail");
	else
		(void)close(r);
	{
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		e->cpus = n > 0 ? (unsigned)n : 1;
	}
	r = qj_cgroup_new(p->cgroup_path, p->cpu_cgroup_path, &e->cg);
	if (r < 0)
		goto fail;
	if (p->cpu_idle && !qj_cgroup_has_idle_knob(e->cg))
		log_warning("Jail %s has no cpu controller (no cpu.idle or cpu.weight, no v1 cpu "
			    "group): jail.cpu_idle cannot lower its CPU class while quiescing, and "
			    "continuing many busy tasks may starve the daemon; enable \"+cpu\" in "
			    "the parent's cgroup.subtree_control",
			    p->cgroup_path);
	r = create_app_groups(e);
	if (r < 0)
		goto fail;
	r = qj_eng_load_and_undo_state(e);
	if (r < 0)
		goto fail;
	r = qj_eng_sweep_jail(e);
	if (r > 0)
		log_debug("Thawed or continued %d leftovers in the jail", r);
	r = qj_eng_save_state(e);
	if (r < 0)
		goto fail;
	r = qj_procmon_new(&e->pm);
	if (r < 0)
		log_debug_errno(r, "Process events unavailable, exec matching off: %m");
	r = qj_procread_new(QJ_PROCREAD_TIMEOUT_USEC, &e->pr);
	if (r < 0)
		goto fail;
	*ret = e;
	return 0;
fail:
	qj_engine_free(e);
	return r;
}

struct qj_engine *qj_engine_free(struct qj_engine *e)
{
	if (!e)
		return NULL;
	e->pr = qj_procread_free(e->pr); /* pending reads answered -ECANCELED: before the rest */
	qj_eng_backlog_free(e);
	qj_eng_tasks_clear(e);
	qj_eng_follows_free(e);
	qj_eng_consents_free(e);
	for (size_t i = 0; i < e->n_apps; i++) {
		free(e->apps[i].name);
		for (size_t k = 0; k < e->apps[i].n_counts; k++)
			free(e->apps[i].counts[k].rung);
		free(e->apps[i].counts);
	}
	free(e->apps);
	qj_procmon_free(e->pm);
	qj_cgroup_free(e->cg);
	free(e->state_file);
	free(e);
	return NULL;
}

int qj_engine_set_policy(struct qj_engine *e, const struct qj_policy *p)
{
	const struct qj_policy *old = e->p;
	int r;

	if (!p || p->n_rungs == 0)
		return -EINVAL;
	if (strcmp(p->cgroup_path, old->cgroup_path) != 0)
		return -EXDEV; /* moving the jail needs a restart */
	e->p = p;
	r = create_app_groups(e);
	if (r < 0) {
		e->p = old;
		return r;
	}
	/* Rungs of a running cycle index the new ladder: keep them in range. */
	for (size_t i = 0; i < e->n_tasks; i++)
		if (e->tasks[i].ladder.rung >= (int)p->n_rungs)
			e->tasks[i].ladder.rung = (int)p->n_rungs - 1;
	for (size_t i = 0; i < e->n_apps; i++)
		if (e->apps[i].ladder.rung >= (int)p->n_rungs)
			e->apps[i].ladder.rung = (int)p->n_rungs - 1;
	return 0;
}

int qj_engine_procmon_fd(const struct qj_engine *e)
{
	return e->pm ? qj_procmon_fd(e->pm) : -1;
}

/*
 * The kill log's records of one step are fsync'd once, when the step ends:
 * before the daemon acts on its result (docs/decisions.md).
 */
static void log_defer(struct qj_engine *e)
{
	if (e->log)
		qj_killlog_defer_sync(e->log);
}

static void log_sync(struct qj_engine *e)
{
	int r;

	if (!e->log)
		return;
	r = qj_killlog_sync(e->log);
	if (r < 0)
		log_warning_errno(r, "Failed to sync the kill log, records counted lost: %m");
}

int qj_engine_quiesce_begin(struct qj_engine *e, uint64_t cycle, uint64_t now_usec)
{
	int r;

	log_defer(e);
	r = qj_eng_quiesce_begin(e, cycle, now_usec);
	log_sync(e);
	return r;
}

int qj_engine_quiesce_step(struct qj_engine *e, uint64_t now_usec, uint64_t *ret_next_usec)
{
	int r;

	log_defer(e);
	r = qj_eng_quiesce_step(e, now_usec, ret_next_usec);
	log_sync(e);
	return r;
}

int qj_engine_restore(struct qj_engine *e, const char *why)
{
	int r;

	log_defer(e);
	r = qj_eng_restore(e, why);
	log_sync(e);
	return r;
}

int qj_engine_counts(const struct qj_engine *e, struct qj_engine_counts *ret)
{
	struct qj_engine_counts c = {};
	pid_t *pids = NULL;
	size_t n = 0;
	int r;

	for (size_t i = 0; i < e->p->n_apps; i++)
		c.apps += e->p->apps[i].trust == QJ_TRUST_JAILED;
	r = qj_cgroup_app_pids(e->cg, NULL, &pids, &n);
	if (r < 0)
		return r;
	free(pids);
	c.tasks = (unsigned)n;
	for (size_t i = 0; i < e->n_tasks; i++) {
		const struct task *t = &e->tasks[i];

		if (t->gone)
			continue;
		c.busy += t->activity == QJ_TASK_BUSY || t->activity == QJ_TASK_CONTINUED;
		c.stopped += t->undo.stopped;
	}
	for (size_t i = 0; i < e->n_apps; i++) {
		const struct app_state *a = &e->apps[i];

		c.frozen += a->undo.frozen;
		if (e->quiescing && a->holding[0] && !c.holding_app[0]) {
			snprintf(c.holding_app, sizeof(c.holding_app), "%s", a->name);
			snprintf(c.holding, sizeof(c.holding), "%s", a->holding);
			c.holding_next_usec = a->holding_next_usec;
		}
	}
	c.killed = e->n_killed;
	c.resyncs = e->resyncs;
	c.bound_usec = qj_policy_quiesce_bound_usec(e->p);
	if (e->quiescing && e->quiesced_usec)
		c.quiesce_usec = e->quiesced_usec - e->begin_usec; /* the summary's quiesce_ms */
	else if (e->quiescing)
		c.quiesce_usec = now_usec(CLOCK_MONOTONIC) - e->begin_usec;
	*ret = c;
	return 0;
}

int qj_engine_explain(struct qj_engine *e, pid_t pid, const char *cmdline,
		      struct qj_engine_explain *ret)
{
	_cleanup_free_ char *exe = NULL, *in_app = NULL;
	struct qj_engine_explain x = { .rung = -1, .first_rung = -1 };
	const struct qj_app *a = NULL;
	struct qj_proc_status ps;
	const struct task *t;
	int r;

	r = qj_proc_status_read(pid, &ps);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	x.uid = ps.uid;
	x.catches_sigxcpu = ps.sigcgt & (1ULL << (SIGXCPU - 1));
	{
		struct qj_proc_stat st;

		x.consents = qj_proc_stat_read(pid, &st) == 0 &&
			     qj_eng_consented(e, pid, st.start_time);
	}
	r = qj_cgroup_app_of_pid(e->cg, pid, &in_app);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	x.jailed = r > 0;
	if (x.jailed) {
		snprintf(x.app, sizeof(x.app), "%s", in_app);
		a = qj_policy_find_app(e->p, in_app);
	} else {
		bool needs;

		/* Kernel threads have no exe: they match no rule.  The cmdline: only when given. */
		(void)qj_proc_exe(pid, &exe);
		a = qj_policy_match_without_cmdline(e->p, exe, ps.uid, &needs);
		if (needs && cmdline)
			a = qj_policy_match(e->p, exe, cmdline, ps.uid);
		x.cmdline_unknown = needs && !cmdline;
		if (a)
			snprintf(x.app, sizeof(x.app), "%s", a->name);
	}
	x.policy_app = a;
	x.quiescing = e->quiescing;
	t = qj_eng_find_task(e, pid);
	if (x.jailed && e->quiescing && t && !t->gone) {
		x.tracked = true;
		x.activity = t->activity;
		x.rung = t->ladder.rung;
		x.stopped_by_us = t->undo.stopped;
	}
	if (x.jailed) {
		const struct app_state *as = qj_eng_app_state(e, x.app);

		if (as) {
			x.strikes = as->undo.strikes;
			x.frozen = as->undo.frozen;
			if (e->quiescing)
				snprintf(x.holding, sizeof(x.holding), "%s", as->holding);
		}
	}
	if (a && a->trust == QJ_TRUST_JAILED && !a->exempt)
		x.first_rung =
			qj_ladder_first_rung(e->p, a, x.strikes, x.catches_sigxcpu, x.consents);
	*ret = x;
	return 0;
}

int qj_engine_foreach_action_count(const struct qj_engine *e,
				   int (*cb)(const char *app, const char *rung,
					     enum qj_action action, uint64_t n, void *userdata),
				   void *userdata)
{
	for (size_t i = 0; i < e->n_apps; i++)
		for (size_t k = 0; k < e->apps[i].n_counts; k++) {
			const struct action_count *c = &e->apps[i].counts[k];
			int r = cb(e->apps[i].name, c->rung, c->action, c->n, userdata);

			if (r < 0)
				return r;
		}
	return 0;
}

int qj_engine_app_tasks(const struct qj_engine *e, size_t i, const char **ret_app,
			unsigned *ret_tasks)
{
	pid_t *pids = NULL;
	size_t n = 0;
	int r;

	if (i >= e->p->n_apps)
		return -ENOENT;
	*ret_app = e->p->apps[i].name;
	if (e->p->apps[i].trust != QJ_TRUST_JAILED) {
		*ret_tasks = 0;
		return 0;
	}
	r = qj_cgroup_app_pids(e->cg, e->p->apps[i].name, &pids, &n);
	free(pids);
	if (r == -ENOENT) /* no group yet: nothing in it */
		n = 0;
	else if (r < 0)
		return r;
	*ret_tasks = (unsigned)n;
	return 1;
}
