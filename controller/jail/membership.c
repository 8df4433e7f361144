// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Who is in the jail: placing processes, the app of a pid, exec matching from the
 * proc connector's events, and the resync from /proc and cgroup.procs when events
 * were lost.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "escape.h"
#include "killlog.h"
#include "ladder.h"
#include "log.h"
#include "policy.h"
#include "proc.h"
#include "procfs.h"
#include "procmon.h"
#include "procread.h"
#include "sampler.h"
#include "util.h"

#include "jail-internal.h"

const struct qj_app *qj_eng_jailed_app(const struct qj_engine *e, const char *name)
{
	const struct qj_app *a = qj_policy_find_app(e->p, name);

	return a && a->trust == QJ_TRUST_JAILED ? a : NULL;
}

int qj_engine_place(struct qj_engine *e, const char *app, pid_t pid)
{
	int r;

	if (!qj_eng_jailed_app(e, app))
		return -ENOENT;
	if (pid <= 0)
		return -EINVAL;
	r = qj_cgroup_app_create(e->cg, app);
	if (r < 0)
		return r;
	r = qj_cgroup_place(e->cg, app, pid);
	if (r == -ESRCH || r == -ENOENT)
		return -ESRCH;
	if (r < 0)
		return r;
	log_debug("Placed %d in app %s", pid, app);
	return 0;
}

int qj_engine_open_cgroup(struct qj_engine *e, const char *app, int *ret_fd)
{
	_cleanup_free_ char *p = NULL;
	int fd;

	if (!qj_eng_jailed_app(e, app))
		return -ENOENT;
	p = qj_cgroup_app_path(e->cg, app);
	if (!p)
		return -ENOMEM;
	fd = open(p, O_DIRECTORY | O_PATH | O_CLOEXEC);
	if (fd < 0)
		return negative_errno();
	*ret_fd = fd;
	return 0;
}

int qj_engine_app_of_pid(struct qj_engine *e, pid_t pid, const char **ret_app)
{
	_cleanup_free_ char *name = NULL;
	struct app_state *a;
	int r;

	r = qj_cgroup_app_of_pid(e->cg, pid, &name);
	if (r <= 0)
		return r;
	a = qj_eng_app_state(e, name);
	if (!a)
		return -ENOMEM;
	if (ret_app)
		*ret_app = a->name;
	return 1;
}

/* Places @pid in @a when it is a jailed app and @pid is not jailed yet; 1 when placed. */
static int place_matched(struct qj_engine *e, const struct qj_app *a, pid_t pid, const char *exe,
			 const char *why)
{
	int r;

	if (!a || a->trust != QJ_TRUST_JAILED)
		return 0;
	r = qj_cgroup_app_of_pid(e->cg, pid, NULL);
	if (r != 0)
		return 0; /* jailed already (or gone) */
	r = qj_engine_place(e, a->name, pid);
	if (r == -ESRCH)
		return 0;
	if (r < 0)
		return log_debug_errno(r, "Failed to jail %d (%s) in %s: %m", pid, exe, a->name);
	log_debug("Jailed %d (%s) in app %s: %s", pid, exe, a->name, why);
	return 1;
}

/*
 * Matches waiting for a free place in the reader's queue (an event overrun's resync can
 * find more candidates than it holds).  They hold no fd; past this many, a candidate is
 * jailed without its cmdline (fail closed).
 */
#define MAX_BACKLOG 65536

/* A process whose match waits for its cmdline (read off the loop thread). */
struct exec_match {
	struct qj_engine *e;
	pid_t pid;
	uint64_t start_time; /* with the pid, the process (stat field 22) */
	int pidfd; /* the process that exec'd: a reused pid is never placed; -1 in the backlog */
	uid_t uid;
	char *exe;
};

static void exec_match_free(struct exec_match *m)
{
	if (m->pidfd >= 0)
		close(m->pidfd);
	free(m->exe);
	free(m);
}

/*
 * Its cmdline could not be read (stuck past the timeout, or too many reads stuck): it
 * goes to the first jailed app it may match, rather than run outside the jail because it
 * keeps its own lock contended.  Decided with the policy running now.
 */
static void place_unread(struct qj_engine *e, struct exec_match *m, int r)
{
	const struct qj_app *a;
	bool needs;

	a = qj_policy_match_without_cmdline(e->p, m->exe, m->uid, &needs);
	if (!needs)
		a = qj_policy_match(e->p, m->exe, NULL, m->uid);
	if (!a || a->trust != QJ_TRUST_JAILED)
		return;
	log_notice("Cannot read the cmdline of %d (%s): %s; jailing it in app %s, which it may "
		   "match (fail closed)",
		   m->pid, m->exe, r == -ETIMEDOUT ? "the read is stuck" : strerror(-r), a->name);
	if (place_matched(e, a, m->pid, m->exe, "its cmdline could not be read") > 0)
		e->placed_async++;
}

static void on_cmdline(int r, const char *cmdline, void *userdata)
{
	struct exec_match *m = userdata;
	struct qj_engine *e = m->e;

	if (r != -ECANCELED && r != -ESRCH && !qj_pidfd_exited(m->pidfd)) {
		if (r < 0)
			place_unread(e, m, r);
		else if (place_matched(e, qj_policy_match(e->p, m->exe, cmdline, m->uid), m->pid,
				       m->exe, "its match rules") > 0)
			e->placed_async++;
	}
	exec_match_free(m);
}

/*
 * Queues the read of @m's cmdline; decides in on_cmdline().  Takes @m.  A process gone
 * (or its pid reused) is dropped; a full queue keeps @m in the backlog; any other
 * failure jails it without its cmdline (fail closed).
 */
static int submit_match(struct qj_engine *e, struct exec_match *m)
{
	struct qj_proc_stat st;
	int r;

	m->pidfd = pidfd_open(m->pid, 0);
	/* Checked after the pidfd is open: it pins the process the check sees. */
	if (m->pidfd < 0 && errno != ESRCH) {
		place_unread(e, m, negative_errno()); /* EMFILE: not a pass to run unjailed */
		exec_match_free(m);
		return 0;
	}
	if (m->pidfd < 0 || qj_proc_stat_read(m->pid, &st) < 0 || st.start_time != m->start_time) {
		exec_match_free(m); /* gone, or the pid names another process now */
		return 0;
	}
	r = qj_procread_submit(e->pr, m->pid, m->uid, 0, on_cmdline, m, NULL);
	if (r == 0)
		return 0;
	if (r == -ENOSPC && e->n_backlog < MAX_BACKLOG) {
		struct exec_match **nb = realloc(e->backlog, (e->n_backlog + 1) * sizeof(*nb));

		if (nb) {
			close(m->pidfd);
			m->pidfd = -1;
			e->backlog = nb;
			e->backlog[e->n_backlog++] = m;
			return 0;
		}
	}
	if (r != -ESRCH)
		place_unread(e, m, r);
	exec_match_free(m);
	return 0;
}

/* Moves backlogged matches into the reader's queue while it has room, oldest first. */
static void drain_backlog(struct qj_engine *e)
{
	size_t k = 0;

	if (e->n_backlog == 0)
		return;
	while (k < e->n_backlog) {
		size_t before = e->n_backlog;

		(void)submit_match(e, e->backlog[k]);
		if (e->n_backlog > before) { /* full again: it went back to the end */
			e->n_backlog--;
			break;
		}
		k++;
	}
	memmove(e->backlog, e->backlog + k, (e->n_backlog - k) * sizeof(*e->backlog));
	e->n_backlog -= k;
}

/* Reads @pid's cmdline off the loop thread (now, or once the queue has room). */
static int classify_later(struct qj_engine *e, pid_t pid, uint64_t start_time, const char *exe,
			  uid_t uid)
{
	struct exec_match *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	*m = (struct exec_match){ .e = e,
				  .pid = pid,
				  .start_time = start_time,
				  .pidfd = -1,
				  .uid = uid,
				  .exe = strdup(exe) };
	if (!m->exe) {
		exec_match_free(m);
		return -ENOMEM;
	}
	if (e->n_backlog > 0) { /* behind those already waiting */
		struct exec_match **nb;

		if (e->n_backlog >= MAX_BACKLOG) {
			place_unread(e, m, -ENOSPC);
			exec_match_free(m);
			return 0;
		}
		nb = realloc(e->backlog, (e->n_backlog + 1) * sizeof(*nb));
		if (!nb) {
			exec_match_free(m);
			return -ENOMEM;
		}
		e->backlog = nb;
		e->backlog[e->n_backlog++] = m;
		return 0;
	}
	return submit_match(e, m);
}

/*
 * Classifies a process that exec'd; places it when a jailed app matches.  Its exe, uid
 * and state are read here (none takes the process's locks); its cmdline only when it
 * decides, and then off the loop thread.
 */
static int classify(struct qj_engine *e, pid_t pid)
{
	_cleanup_free_ char *exe = NULL;
	const struct qj_app *a;
	struct qj_proc_status ps;
	struct qj_proc_stat st;
	bool needs;

	if (qj_proc_exe(pid, &exe) < 0 || qj_proc_status_read(pid, &ps) < 0)
		return 0; /* gone already */
	a = qj_policy_match_without_cmdline(e->p, exe, ps.uid, &needs);
	if (needs)
		return qj_proc_stat_read(pid, &st) < 0 ?
			       0 :
			       classify_later(e, pid, st.start_time, exe, ps.uid);
	return place_matched(e, a, pid, exe, "its match rules");
}

int qj_eng_on_event(const struct qj_proc_event *ev, void *ud)
{
	struct qj_engine *e = ud;

	if (ev->what == QJ_PROC_EXIT) {
		qj_eng_on_exit_event(e, ev);
		return 0;
	}
	if (ev->pid != ev->tgid) /* a thread exec'd: its process is what we place */
		return 0;
	return classify(e, ev->tgid);
}

/* Events were lost: reclassify every process and re-read the jail's membership. */
static int resync(struct qj_engine *e)
{
	DIR *d = opendir(qj_procfs_root());
	struct dirent *de;
	int r;

	if (!d)
		return negative_errno();
	while ((de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name);

		if (pid <= 1)
			continue;
		r = classify(e, pid);
		if (r == -ENOMEM) {
			closedir(d);
			return r;
		}
	}
	closedir(d);
	if (e->quiescing)
		return qj_eng_rescan(e, now_usec(CLOCK_MONOTONIC));
	return 0;
}

int qj_engine_on_procmon(struct qj_engine *e)
{
	bool more = false;
	int r;

	if (!e->pm)
		return 0;
	r = qj_procmon_dispatch(e->pm, qj_eng_on_event, e, &more);
	if (r == -ENOBUFS) {
		log_debug("Process event overrun, resynchronising from /proc and cgroup.procs");
		/* Read what is queued after the overrun before the full scan. */
		(void)qj_procmon_dispatch(e->pm, qj_eng_on_event, e, &more);
		e->resyncs++;
		r = resync(e);
	}
	/* An exit event still queued carries the signal a pidfd alone cannot tell. */
	if (!more)
		qj_eng_follow_prune(e, now_usec(CLOCK_MONOTONIC));
	return r;
}

/*
 * qj_eng_add_task()'s error @r for @pid as the quiesce step must see it: 0 when the
 * task is no longer ours to track (exited, or moved out of the jail since the
 * listing), else @r.  EMFILE or ENOSYS (no pidfd_open) leave a jailed task
 * unwatched: the step must fail rather than report a quiet jail (fail closed,
 * retried with backoff).
 */
static int untrackable(int r, pid_t pid, const char *app)
{
	if (r == -ESRCH || r == -ENOENT)
		return 0;
	log_warning_errno(r, "Cannot track %d in %s: %m", pid, app);
	return r;
}

static void app_new_task(struct qj_engine *e, const char *app)
{
	struct app_state *a = qj_eng_app_state(e, app);

	if (a)
		a->new_tasks++;
}

/* A pid of an app's first listing not tracked yet, with the pidfd opened before the second. */
struct candidate {
	pid_t pid;
	int pidfd;
	struct task *reused; /* the dead task whose pid it is, or NULL */
};

static int cmp_pid(const void *a, const void *b)
{
	const pid_t *x = a, *y = b;

	return (*x > *y) - (*x < *y);
}

static bool listed(const pid_t *v, size_t n, pid_t pid)
{
	return n && bsearch(&pid, v, n, sizeof(*v), cmp_pid);
}

/*
 * The candidates of @app whose pid its cgroup.procs lists again after their pidfds were
 * opened: each such pidfd is the jailed process (a pid is not reused while its process
 * lives).  One listing for all of them, not a read of /proc/PID/cgroup each (10,000 at a
 * quiesce's beginning); the same for the v1 cpu group's threads on a hybrid host.  Each
 * one tracked goes to @added or replaces the dead task whose pid it reused.  Every
 * candidate's pidfd is taken over (closed, or kept by its task).
 */
static int track_candidates(struct qj_engine *e, const char *app, struct candidate *c, size_t n,
			    uint64_t now, struct task *added, size_t *n_added, int *untracked)
{
	_cleanup_free_ pid_t *procs = NULL, *v1 = NULL;
	size_t n_procs = 0, n_v1 = 0, i = 0, kept = 0;
	int r, v1r;

	r = qj_cgroup_app_pids(e->cg, app, &procs, &n_procs);
	if (r == -ENOENT)
		r = 0; /* the group went away: none of them is in it */
	/* 0: no v1 groups, every task is in; unreadable: placed as one not in it. */
	v1r = r < 0 ? 0 : qj_cgroup_app_v1_tids(e->cg, app, &v1, &n_v1);
	if (v1r == -ENOMEM)
		r = v1r;
	if (n_procs)
		qsort(procs, n_procs, sizeof(*procs), cmp_pid);
	if (n_v1)
		qsort(v1, n_v1, sizeof(*v1), cmp_pid);
	for (; i < n && r >= 0; i++) {
		struct task t;

		if (!listed(procs, n_procs, c[i].pid)) {
			(void)close(c[i].pidfd); /* moved out, or exited and its pid reused */
			continue;
		}
		/*
		 * Its /proc files are kept while its pidfd is below half the fd limit,
		 * counting the files kept before it in this batch (fds are allocated lowest
		 * first): as when each pidfd was opened just before its files.
		 */
		r = qj_eng_add_task(e, app, c[i].pid, c[i].pidfd,
				    v1r == 0 || (v1r > 0 && listed(v1, n_v1, c[i].pid)),
				    (int64_t)c[i].pidfd + 2 * (int64_t)kept < e->keep_fds_below,
				    now, &t);
		if (r < 0 && r != -ENOMEM) {
			r = untrackable(r, c[i].pid, app); /* logs each one */
			*untracked = *untracked ?: r;
			r = 0;
			continue;
		}
		if (r < 0) {
			i++; /* its pidfd was closed with it */
			break;
		}
		kept += t.sample.fd >= 0;
		if (c[i].reused) {
			qj_eng_task_done(c[i].reused);
			*c[i].reused = t;
		} else {
			added[(*n_added)++] = t;
		}
		app_new_task(e, app);
	}
	for (; i < n; i++)
		(void)close(c[i].pidfd);
	return r;
}

/*
 * Lists @app's processes: those tracked are seen, the others' pidfds opened (candidates,
 * checked by track_candidates()).  Grows @added for them.
 */
static int rescan_app(struct qj_engine *e, const char *app, uint64_t now, struct task **added,
		      size_t *n_added, int *untracked)
{
	_cleanup_free_ pid_t *pids = NULL;
	_cleanup_free_ struct candidate *c = NULL;
	size_t k = 0, n = 0;
	struct task *na;
	int r;

	r = qj_cgroup_app_pids(e->cg, app, &pids, &k);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	c = calloc(k ? k : 1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < k; i++) {
		struct task *t = qj_eng_find_task(e, pids[i]);
		int fd;

		if (t && !t->gone) {
			t->seen = e->generation;
			continue;
		}
		if (t && t->killed_by_us && !qj_pidfd_exited(t->pidfd)) {
			/* Killed and still dying: the same process, not a new task. */
			t->seen = e->generation;
			continue;
		}
		/* A dead task's PID reused inside the jail: a new task in its place. */
		fd = pidfd_open(pids[i], 0);
		if (fd < 0) {
			r = untrackable(negative_errno(), pids[i], app); /* logs each one */
			*untracked = *untracked ?: r;
			continue;
		}
		c[n++] = (struct candidate){ .pid = pids[i], .pidfd = fd, .reused = t };
	}
	if (n == 0)
		return 0;
	na = realloc(*added, (*n_added + n) * sizeof(*na));
	if (!na) {
		for (size_t i = 0; i < n; i++)
			(void)close(c[i].pidfd);
		return -ENOMEM;
	}
	*added = na;
	return track_candidates(e, app, c, n, now, *added, n_added, untracked);
}

int qj_eng_rescan(struct qj_engine *e, uint64_t now)
{
	char **apps = NULL;
	struct task *added = NULL;
	size_t n_added = 0;
	int r, untracked = 0;

	e->generation++;
	r = qj_cgroup_list_apps(e->cg, &apps);
	if (r < 0)
		return r;
	for (char **a = apps; *a && r >= 0; a++)
		r = rescan_app(e, *a, now, &added, &n_added, &untracked);
	qj_strv_free(apps);

	if (n_added > 0 && r >= 0) {
		struct task *nt = realloc(e->tasks, (e->n_tasks + n_added) * sizeof(*nt));

		if (!nt) {
			r = -ENOMEM;
		} else {
			e->tasks = nt;
			memcpy(e->tasks + e->n_tasks, added, n_added * sizeof(*added));
			e->n_tasks += n_added;
			qsort(e->tasks, e->n_tasks, sizeof(*e->tasks), qj_eng_cmp_task);
			/* Credit parents: a forker is as busy as the children it starts. */
			for (size_t i = 0; i < n_added; i++) {
				struct task *parent = qj_eng_find_task(e, added[i].ppid);

				if (parent && !parent->gone &&
				    strcmp(parent->app, added[i].app) == 0)
					parent->spawned++;
			}
			n_added = 0;
		}
	}
	for (size_t i = 0; i < n_added; i++)
		qj_eng_task_done(&added[i]);
	free(added);

	/* Not listed any more: exited, or moved out of the jail by someone. */
	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];

		if (t->gone || t->seen == e->generation)
			continue;
		if (!qj_pidfd_exited(t->pidfd) && (t->undo.stopped || t->sent_stop))
			(void)qj_eng_send_signal(t, SIGCONT); /* left the jail: not ours to hold */
		qj_eng_mark_gone(e, t);
	}
	return r < 0 ? r : untracked;
}

int qj_engine_procread_fd(const struct qj_engine *e)
{
	return qj_procread_fd(e->pr);
}

int qj_engine_on_procread(struct qj_engine *e)
{
	unsigned placed = e->placed_async;
	int r = qj_procread_dispatch(e->pr);

	drain_backlog(e); /* answers made room in the queue */

	return r < 0 ? r : (int)(e->placed_async - placed);
}

int qj_engine_read_cmdline(struct qj_engine *e, pid_t pid, uid_t uid,
			   void (*done)(int r, const char *cmdline, void *userdata), void *userdata,
			   uint64_t *ret_id)
{
	/* A caller's question spares the readers exec matching needs. */
	return qj_procread_submit(e->pr, pid, uid, QJ_PROCREAD_SPARE, done, userdata, ret_id);
}

void qj_engine_cancel_read(struct qj_engine *e, uint64_t id)
{
	qj_procread_cancel(e->pr, id);
}

unsigned qj_engine_stuck_reads(const struct qj_engine *e)
{
	return (unsigned)qj_procread_n_stuck(e->pr);
}

unsigned qj_engine_reads_running(const struct qj_engine *e)
{
	return (unsigned)qj_procread_n_reading(e->pr);
}

void qj_eng_backlog_free(struct qj_engine *e)
{
	for (size_t i = 0; i < e->n_backlog; i++)
		exec_match_free(e->backlog[i]);
	free(e->backlog);
	e->backlog = NULL;
	e->n_backlog = 0;
}
