// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The jail engine: wires cgroup.c (membership, knobs), procmon.c (exec
 * matching), sampler.c (busy detection) and ladder.c (decisions) into the
 * quiesce the daemon drives, and writes every action to the kill log.  Signals
 * go only through pidfds opened while the process was verified in the jail,
 * so a reused PID is never signalled.  Membership is in membership.c, the
 * state a restarted daemon undoes in restart.c.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
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
#include "engine.h"
#include "escape.h"
#include "killlog.h"
#include "ladder.h"
#include "log.h"
#include "policy.h"
#include "proc.h"
#include "procmon.h"
#include "procread.h"
#include "rfc3339.h"
#include "sampler.h"
#include "util.h"

#include "engine-internal.h"

static uint64_t realtime_now(void)
{
	return now_usec(CLOCK_REALTIME);
}

struct app_state *qj_eng_app_state(struct qj_engine *e, const char *name)
{
	struct app_state *v;

	for (size_t i = 0; i < e->n_apps; i++)
		if (strcmp(e->apps[i].name, name) == 0)
			return &e->apps[i];
	v = realloc(e->apps, (e->n_apps + 1) * sizeof(*v));
	if (!v)
		return NULL;
	e->apps = v;
	memset(&v[e->n_apps], 0, sizeof(*v));
	v[e->n_apps].name = strdup(name);
	if (!v[e->n_apps].name)
		return NULL;
	return &v[e->n_apps++];
}

/* One more action of @rung against @a; not counted (logged) when out of memory. */
static void count_action(struct app_state *a, const struct qj_rung *rung)
{
	struct action_count *v;

	for (size_t i = 0; i < a->n_counts; i++)
		if (a->counts[i].action == rung->action &&
		    strcmp(a->counts[i].rung, rung->name) == 0) {
			a->counts[i].n++;
			return;
		}
	v = realloc(a->counts, (a->n_counts + 1) * sizeof(*v));
	if (!v)
		goto oom;
	a->counts = v;
	v[a->n_counts] =
		(struct action_count){ .rung = strdup(rung->name), .action = rung->action, .n = 1 };
	if (!v[a->n_counts].rung)
		goto oom;
	a->n_counts++;
	return;
oom:
	log_warning("Out of memory counting an action of app %s, ignoring", a->name);
}

int qj_eng_send_signal(struct task *t, int sig)
{
	if (t->pidfd < 0)
		return -ESRCH;
	if (pidfd_send_signal(t->pidfd, sig, NULL, 0) < 0)
		return negative_errno();
	return 0;
}

/* --- lifecycle ------------------------------------------------------------ */

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

void qj_eng_task_done(struct task *t)
{
	if (t->pidfd >= 0)
		(void)close(t->pidfd);
	t->pidfd = -EBADF;
	qj_sample_close(&t->sample);
	free(t->app);
	free(t->exe);
	free(t->slack);
	t->app = t->exe = NULL;
	t->slack = NULL;
}

static void tasks_clear(struct qj_engine *e)
{
	for (size_t i = 0; i < e->n_tasks; i++)
		qj_eng_task_done(&e->tasks[i]);
	free(e->tasks);
	e->tasks = NULL;
	e->n_tasks = 0;
}

static void follow_done(struct follow *f)
{
	if (f->pidfd >= 0)
		(void)close(f->pidfd);
	free(f->app);
	free(f->exe);
	*f = (struct follow){ .pidfd = -EBADF };
}

struct qj_engine *qj_engine_free(struct qj_engine *e)
{
	if (!e)
		return NULL;
	e->pr = qj_procread_free(e->pr); /* pending reads answered -ECANCELED: before the rest */
	qj_eng_backlog_free(e);
	tasks_clear(e);
	for (size_t i = 0; i < e->n_follows; i++)
		follow_done(&e->follows[i]);
	free(e->follows);
	for (size_t i = 0; i < e->n_consents; i++) {
		(void)close(e->consents[i].pidfd);
		free(e->consents[i].app);
	}
	free(e->consents);
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
		if (e->tasks[i].rung >= (int)p->n_rungs)
			e->tasks[i].rung = (int)p->n_rungs - 1;
	return 0;
}

int qj_engine_procmon_fd(const struct qj_engine *e)
{
	return e->pm ? qj_procmon_fd(e->pm) : -1;
}

/* Forgets the consents of processes that exited. */
static void consents_prune(struct qj_engine *e)
{
	for (size_t i = 0; i < e->n_consents;) {
		if (qj_pidfd_exited(e->consents[i].pidfd)) {
			(void)close(e->consents[i].pidfd);
			free(e->consents[i].app);
			e->consents[i] = e->consents[--e->n_consents];
		} else {
			i++;
		}
	}
}

/* Did process @pid, started at @start_time, consent?  (A reused pid did not.) */
static bool consented(struct qj_engine *e, pid_t pid, uint64_t start_time)
{
	for (size_t i = 0; i < e->n_consents; i++)
		if (e->consents[i].pid == pid && e->consents[i].start_time == start_time)
			return !qj_pidfd_exited(e->consents[i].pidfd);
	return false;
}

int qj_engine_notify_consent(struct qj_engine *e, pid_t pid, int pidfd)
{
	_cleanup_free_ char *app = NULL;
	struct qj_proc_stat st;
	struct consent *v;
	size_t share = 0;
	int r, fd;

	if (pid <= 0 || pidfd < 0)
		return -EINVAL;
	r = qj_cgroup_app_of_pid(e->cg, pid, &app);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	if (r == 0)
		return -EPERM;
	/* Read after the membership: the pidfd says the pid still names the caller. */
	r = qj_proc_stat_read(pid, &st);
	if (r < 0 || qj_pidfd_exited(pidfd))
		return -ESRCH;
	consents_prune(e);
	if (consented(e, pid, st.start_time))
		return 0;
	for (size_t i = 0; i < e->n_consents; i++)
		share += strcmp(e->consents[i].app, app) == 0;
	if (share >= MAX_CONSENTS_PER_APP)
		return -ENOSPC;
	fd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return negative_errno();
	v = realloc(e->consents, (e->n_consents + 1) * sizeof(*v));
	if (!v) {
		(void)close(fd);
		return -ENOMEM;
	}
	e->consents = v;
	v[e->n_consents++] = (struct consent){
		.pid = pid, .pidfd = fd, .start_time = st.start_time, .app = TAKE_PTR(app)
	};
	/* A task of the running cycle hears it at its next rung. */
	for (size_t i = 0; i < e->n_tasks; i++)
		if (e->tasks[i].pid == pid && e->tasks[i].start_time == st.start_time)
			e->tasks[i].consents = true;
	log_debug("Process %d consents to the notify rung", pid);
	return 0;
}

/* --- following processes acted on ----------------------------------------- */

/* Appends @o (consumed; NULL after an OOM is dropped) to the kill log. */
static void append_record(struct qj_engine *e, json_t *o)
{
	int r;

	if (!o)
		return;
	r = qj_killlog_append_json(e->log, o);
	json_decref(o);
	if (r < 0)
		log_warning_errno(r, "Failed to write the kill log, ignoring: %m");
}

static struct follow *find_follow(struct qj_engine *e, pid_t pid)
{
	for (size_t i = 0; i < e->n_follows; i++)
		if (e->follows[i].pid == pid)
			return &e->follows[i];
	return NULL;
}

static void follow_remove(struct qj_engine *e, struct follow *f)
{
	follow_done(f);
	*f = e->follows[--e->n_follows];
	e->watch_dirty = true;
}

/* The exit-event filter names exactly the followed processes. */
static void follow_sync(struct qj_engine *e)
{
	_cleanup_free_ pid_t *pids = NULL;
	int r;

	if (!e->watch_dirty || !e->pm)
		return;
	if (e->n_follows) {
		pids = calloc(e->n_follows, sizeof(*pids));
		if (!pids)
			return; /* tried again at the next change */
		for (size_t i = 0; i < e->n_follows; i++)
			pids[i] = e->follows[i].pid;
	}
	r = qj_procmon_watch_exits(e->pm, pids, e->n_follows);
	if (r < 0)
		log_warning_errno(r, "Failed to update the exit-event filter, ignoring: %m");
	else
		e->watch_dirty = false;
}

static void follow_add(struct qj_engine *e, const struct task *t, const char *action)
{
	struct follow *f = find_follow(e, t->pid), *v;

	if (f && f->pidfd >= 0 && !qj_pidfd_exited(f->pidfd)) {
		f->after = action;
		f->cycle = e->cycle;
		f->until_usec = USEC_INFINITY;
		return;
	}
	if (f)
		follow_remove(e, f); /* a dead one's PID reused */
	if (!e->pm || e->n_follows >= MAX_FOLLOW)
		return; /* no exit events: nothing to follow with */
	v = realloc(e->follows, (e->n_follows + 1) * sizeof(*v));
	if (!v)
		return;
	e->follows = v;
	f = &v[e->n_follows];
	*f = (struct follow){ .pid = t->pid,
			      .cycle = e->cycle,
			      .until_usec = USEC_INFINITY,
			      .uid = t->uid,
			      .after = action };
	memcpy(f->comm, t->comm, sizeof(f->comm));
	f->pidfd = fcntl(t->pidfd, F_DUPFD_CLOEXEC, 3);
	f->app = strdup(t->app);
	f->exe = t->exe ? strdup(t->exe) : NULL;
	if (f->pidfd < 0 || !f->app) {
		follow_done(f);
		return;
	}
	e->n_follows++;
	e->watch_dirty = true;
}

/* One record for a followed process's death: how it died (signal or status). */
static void log_exit(struct qj_engine *e, const struct follow *f)
{
	_cleanup_free_ char *cg = qj_cgroup_app_path(e->cg, f->app);
	int sig = f->exit_code & 0x7f, status = (f->exit_code >> 8) & 0xff;
	char reason[48];
	json_t *o;

	/* Without its exit event nothing says how it died: not "exited". */
	if (!f->have_code)
		snprintf(reason, sizeof(reason), "unknown");
	else if (sig)
		snprintf(reason, sizeof(reason), "SIG%s", sigabbrev_np(sig) ?: "?");
	else
		snprintf(reason, sizeof(reason), "status %d", status);
	log_notice("%d (%s) in %s %s (%s) after %s in cycle %" PRIu64, f->pid, f->comm,
		   cg ? cg : f->app, sig ? "was killed" : "exited", reason, f->after, f->cycle);
	if (!e->log)
		return;
	/* comm and exe are the process's own bytes, not necessarily UTF-8: escaped. */
	o = json_pack("{s:I,s:s,s:i,s:o,s:o,s:i,s:o,s:s,s:s,s:s,s:s,s:o}", "cycle",
		      (json_int_t)f->cycle, "app", f->app, "pid", f->pid, "comm",
		      qj_json_string_escaped(f->comm), "exe", qj_json_string_escaped(f->exe), "uid",
		      (int)f->uid, "cgroup", qj_json_string_escaped(cg), "action", "exit", "reason",
		      reason, "after", f->after, "outcome",
		      !f->have_code ? "unknown" :
		      sig	    ? "killed" :
				      "exited",
		      "signal", f->have_code && sig ? json_string(reason) : json_null());
	append_record(e, o);
}

/*
 * How long a dead process's exit event may still be on its way: the event
 * leaves before its pidfd turns readable, but the daemon reads it later, and on
 * a loaded machine much later.  Past this (an overrun lost it), "unknown".
 */
#define EXIT_EVENT_WAIT_USEC (5 * USEC_PER_SEC)

/* Logs followed processes that are gone, drops those followed long enough. */
void qj_eng_follow_prune(struct qj_engine *e, uint64_t now)
{
	for (size_t i = 0; i < e->n_follows;) {
		struct follow *f = &e->follows[i];
		bool dead = qj_pidfd_exited(f->pidfd);

		if (dead && !f->have_code && e->pm) {
			/* Its exit event waits to be read: it says how it died. */
			if (!f->dead_usec)
				f->dead_usec = now;
			if (now < f->dead_usec + EXIT_EVENT_WAIT_USEC) {
				i++;
				continue;
			}
		}
		/* Followed long enough: a later death is not for the record. */
		if (dead && (now < f->until_usec || f->dead_usec))
			log_exit(e, f);
		else if (now < f->until_usec) {
			i++;
			continue;
		}
		follow_remove(e, f);
	}
	follow_sync(e);
}

void qj_eng_on_exit_event(struct qj_engine *e, const struct qj_proc_event *ev)
{
	struct follow *f = find_follow(e, ev->tgid);
	struct qj_proc_stat st;
	struct pollfd pfd;

	if (!f)
		return;
	if (now_usec(CLOCK_MONOTONIC) >= f->until_usec && !f->dead_usec) {
		follow_remove(e, f); /* died long after the resume: not for the record */
		return;
	}
	/*
	 * The process's status is its main thread's exit code (wait(2) reports
	 * it), or the group's when the group exits after the main thread did:
	 * every thread of a group exit carries the group's code or signal.  A
	 * thread that exits alone after the main thread says nothing of the
	 * process: the last event was taken for the process's, and an exit(255)
	 * was logged "status 0".
	 */
	if (ev->pid == ev->tgid || !f->leader_exited || ev->exit_code != 0)
		f->exit_code = ev->exit_code;
	f->leader_exited |= ev->pid == ev->tgid;
	f->have_code = true;
	/*
	 * The event leaves before the exit is complete.  When this was the last
	 * thread the pidfd turns readable in a moment: wait that long, no longer.
	 */
	pfd = (struct pollfd){ .fd = f->pidfd, .events = POLLIN };
	if (poll(&pfd, 1, 0) == 0 &&
	    (qj_proc_stat_read(ev->tgid, &st) < 0 || st.num_threads <= 1 || st.state == 'Z'))
		(void)poll(&pfd, 1, 200);
	if (qj_pidfd_exited(f->pidfd)) {
		log_exit(e, f);
		follow_remove(e, f);
	}
}

/* --- quiesce ---------------------------------------------------------------- */

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
	t->slack = calloc(n, sizeof(*t->slack));
	if (!t->slack) {
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
		t->slack[t->n_slack].tid = tids[i];
		t->slack[t->n_slack].start_time = st.start_time;
		t->slack[t->n_slack++].old_ns = old;
	}
	free(tids);
}

static void slack_restore(struct qj_engine *e, struct task *t)
{
	pid_t *tids = NULL;
	size_t n = 0;

	if (e->p->timer_slack_nsec == 0 || t->gone || qj_proc_tids(t->pid, &tids, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = 0; /* threads born during the cycle: back to the default */

		for (size_t j = 0; j < t->n_slack; j++)
			if (t->slack[j].tid == tids[i])
				v = t->slack[j].old_ns;
		(void)qj_proc_timerslack_set(tids[i], v);
	}
	free(tids);
}

int qj_eng_add_task(struct qj_engine *e, const char *app, pid_t pid, uint64_t now, struct task *ret)
{
	_cleanup_free_ char *in_app = NULL;
	struct qj_proc_stat st;
	struct qj_proc_status ps;
	struct task t = { .pid = pid, .pidfd = -EBADF, .rung = -1, .sample.fd = -EBADF };
	int r;

	t.pidfd = pidfd_open(pid, 0);
	if (t.pidfd < 0)
		return negative_errno();
	/*
	 * The pid came from cgroup.procs; it may have been reused since.  Check
	 * membership after pidfd_open: if it is in the jail now, the pidfd is
	 * the jailed process (alive, so the pid cannot have moved on).
	 */
	r = qj_cgroup_app_of_pid(e->cg, pid, &in_app);
	if (r <= 0 || strcmp(in_app, app) != 0) {
		r = r < 0 ? r : -ESRCH;
		goto fail;
	}
	/*
	 * Tasks that entered the v2 group without us (clone3 into the group by
	 * `qosjailctl run`, a direct write of cgroup.procs) are not in the v1 cpu
	 * group on a hybrid host: the idle class would not reach them.
	 */
	r = qj_cgroup_ensure_v1(e->cg, app, pid);
	if (r < 0)
		goto fail;
	if (r > 0)
		log_debug("Moved %d into the v1 cpu group of app %s", pid, app);
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
	t.consents = consented(e, pid, st.start_time);
	r = qj_proc_exe(pid, &t.exe);
	if (r < 0)
		goto fail;
	/* Its /proc files kept open while fds are plenty; the pidfd is never given up. */
	r = qj_sample_open(&t.sample, pid, t.pidfd < e->keep_fds_below);
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
	if (t.n_slack)
		e->state_dirty = true;
	*ret = t;
	return 0;
fail:
	qj_eng_task_done(&t);
	return r;
}

static const char *gone_outcome(const struct task *t)
{
	return t->killed_by_us ? "killed" : "exited";
}

static void log_action(struct qj_engine *e, struct task *t, const char *outcome)
{
	struct app_state *a = qj_eng_app_state(e, t->app);
	const struct qj_rung *rung = &e->p->rungs[t->rung];
	_cleanup_free_ char *cg = qj_cgroup_app_path(e->cg, t->app);
	struct qj_kill_record rec = {
		.ts_usec = t->applied_realtime_usec,
		.cycle = e->cycle,
		.app = t->app,
		.pid = t->pid,
		.comm = t->comm,
		.exe = t->exe,
		.uid = t->uid,
		.cgroup = cg,
		.action = qj_action_to_string(rung->action),
		.rung = t->rung,
		.rung_name = rung->name,
		.reason = t->pending_reason,
		.cpu_ms = t->pending_cpu_ms,
		.window_ms = t->pending_window_ms,
		.outcome = outcome,
		.strikes = a ? a->strikes + a->struck : 0,
	};
	int r;

	t->pending = false;
	if (!e->log)
		return;
	r = qj_killlog_append(e->log, &rec);
	if (r < 0)
		log_warning_errno(r, "Failed to write the kill log, ignoring: %m");
}

void qj_eng_mark_gone(struct qj_engine *e, struct task *t)
{
	if (t->gone)
		return;
	t->gone = true;
	t->activity = QJ_TASK_GONE;
	t->stopped_by_us = false;
	if (t->killed_by_us) {
		struct follow *f = find_follow(e, t->pid);

		/* Killed by the rung that says so in its record: nothing more to follow. */
		e->n_killed++;
		if (f)
			follow_remove(e, f);
	}
	if (t->pending)
		log_action(e, t, gone_outcome(t));
}

static bool app_frozen(struct qj_engine *e, const char *app)
{
	struct app_state *a = qj_eng_app_state(e, app);

	return a && a->frozen_by_us && qj_cgroup_event(e->cg, app, "frozen") == 1;
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
static bool notify_wait(const struct qj_engine *e, const struct task *t, uint64_t now)
{
	return t->notified && !t->gone && t->rung >= 0 &&
	       e->p->rungs[t->rung].action == QJ_ACTION_SIGXCPU &&
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

/*
 * Updates t->activity from /proc and the sample window.  Fails closed: any
 * error other than the task having exited is returned, and the step fails
 * rather than take an unreadable task for a quiet one.
 */
static int observe(struct qj_engine *e, struct task *t, uint64_t now)
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
	if (t->killed_by_us || (t->stopped_by_us && st.state != 'T' && st.state != 't')) {
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
	if (t->stopped_by_us) {
		/*
		 * A SIGSTOP takes effect when the task next runs; starved at
		 * the idle class that can take a while.  Still pending: stopping.
		 */
		if ((ps.shdpnd | ps.sigpnd) & (1ULL << (SIGSTOP - 1))) {
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
			return log_warning_errno(r, "Failed to read the threads of %d (%s): %m",
						 t->pid, t->comm);
		if (r != 0) {
			t->activity = QJ_TASK_STOPPED; /* or exiting: the pidfd will say so */
			return 0;
		}
		/* We stopped it and it runs: another process sent SIGCONT. */
		t->stopped_by_us = false;
		t->activity = QJ_TASK_CONTINUED;
		r = qj_sample_restart(&t->sample, &st, now);
		if (r < 0 && !exited(r, t))
			return r;
		return 0;
	}
	if (t->activity == QJ_TASK_STOPPED || t->activity == QJ_TASK_FROZEN)
		t->activity = QJ_TASK_UNKNOWN; /* resumed by its owner: measure afresh */
	if (t->rung >= 0 && !t->killed_by_us && qj_eng_task_signal_pending(e, t))
		t->sig_seen_usec = now;
	else if (t->notified && st.state != 'R')
		t->notified = false; /* took the notification and blocked */
	window_t0 = t->sample.t0_usec;
	cpu_base_ns = t->sample.base.cpu_ns;
	r = qj_sample_observe(&t->sample, &st, now, e->p->sample_window_usec, e->p->busy_threshold,
			      t->rung < 0, &act);
	if (r == -ESRCH || r == -ENOENT) {
		if (exited(r, t))
			qj_eng_mark_gone(e, t);
		return 0;
	}
	if (r < 0)
		return log_warning_errno(r, "Failed to sample %d (%s): %m", t->pid, t->comm);
	if (r == 1) {
		struct app_state *a = qj_eng_app_state(e, t->app);

		act = qj_demand_task_verdict(&(struct qj_task_window){
			.activity = act,
			.spawned = act == QJ_TASK_IDLE ? short_lived_children(e, t, window_t0) :
							 t->spawned,
			.acted_on = t->rung >= 0,
			.runnable = st.state == 'R',
			.signal_pending = t->sig_seen_usec >= window_t0,
			.app_judged = a && a->judged,
			.app_busy = a && a->busy,
			.notify_waiting = notify_wait(e, t, now),
			.own_cpu_busy = qj_sample_is_busy(t->sample.base.cpu_ns - cpu_base_ns,
							  t->sample.last_window_usec,
							  e->p->busy_threshold),
		});
		t->spawned = 0;
		t->activity = act;
		log_debug("%d (%s): %s, %" PRIu64 " ms of %" PRIu64 " ms", t->pid, t->comm,
			  qj_task_activity_to_string(act), t->sample.last_ns / 1000000,
			  (uint64_t)(t->sample.last_window_usec / USEC_PER_MSEC));
	}
	return 0;
}

static int apply(struct qj_engine *e, struct task *t, int rung, uint64_t now)
{
	enum qj_action action = e->p->rungs[rung].action;
	struct app_state *a = qj_eng_app_state(e, t->app);
	_cleanup_free_ char *cg = NULL;
	struct qj_proc_stat st;
	int r = 0;

	if (!a)
		return -ENOMEM;
	/* Freezing is the group's: one action, the group's other tasks follow it. */
	if (action == QJ_ACTION_FREEZE && a->frozen_by_us)
		return 0;
	if (t->pending)
		log_action(e, t,
			   t->activity == QJ_TASK_CONTINUED ? "continued-by-other" : "ignored");
	t->pending_reason = qj_task_activity_to_string(t->activity);
	t->pending_cpu_ms = t->sample.last_ns / 1000000;
	t->pending_window_ms = t->sample.last_window_usec / USEC_PER_MSEC;

	switch (action) {
	case QJ_ACTION_SIGXCPU:
		r = qj_eng_send_signal(t, SIGXCPU);
		t->notified = r == 0;
		break;
	case QJ_ACTION_SIGSTOP:
		r = qj_eng_send_signal(t, SIGSTOP);
		if (r == 0) {
			t->stopped_by_us = t->sent_stop = true;
			e->n_stopped_cycle++;
		}
		break;
	case QJ_ACTION_SIGTERM:
		/* A stopped task cannot run its handler or die: continue it too. */
		r = qj_eng_send_signal(t, SIGTERM);
		if (r == 0)
			(void)qj_eng_send_signal(t, SIGCONT);
		t->stopped_by_us = false;
		t->killed_by_us = true;
		break;
	case QJ_ACTION_SIGKILL:
		r = qj_eng_send_signal(t, SIGKILL);
		t->stopped_by_us = false;
		t->killed_by_us = true;
		break;
	case QJ_ACTION_FREEZE:
		r = qj_cgroup_freeze(e->cg, t->app, true);
		if (r == 0)
			a->frozen_by_us = true;
		break;
	default:
		return -EINVAL;
	}
	t->rung = rung;
	t->applied_usec = now;
	t->applied_realtime_usec = realtime_now();
	t->sig_seen_usec = now; /* sent: pending until it runs */
	t->pending = true;
	if (qj_action_info(action)->strike)
		a->struck = true;
	e->n_actions++;
	count_action(a, &e->p->rungs[rung]);
	if (r == -ESRCH) {
		qj_eng_mark_gone(e, t);
		return 0;
	}
	if (r < 0) {
		t->pending = false;
		return log_warning_errno(r, "Failed to apply %s to %d (%s), ignoring: %m",
					 qj_action_to_string(action), t->pid, t->comm);
	}
	follow_add(e, t, qj_action_to_string(action));
	qj_eng_group_restart(e, a, now); /* the app's demand is judged afresh after an action */
	cg = qj_cgroup_app_path(e->cg, t->app);
	log_notice("Sent %s to %d (%s) in %s: %s, %" PRIu64 " ms of %" PRIu64 " ms",
		   qj_action_to_string(action), t->pid, t->comm, cg ? cg : t->app,
		   t->pending_reason, t->pending_cpu_ms, t->pending_window_ms);
	t->activity = QJ_TASK_UNKNOWN;
	/*
	 * Its next window starts at its next look (after the confirmation), not
	 * here: a step that stops 10,000 tasks reads nothing more of them.  A
	 * notified task's CPU is read now: its budget to wind down counts from it.
	 */
	t->sample.have_base = false;
	if (action == QJ_ACTION_SIGXCPU && qj_proc_stat_read(t->pid, &st) == 0)
		(void)qj_sample_restart(&t->sample, &st, now);
	t->notify_cpu_ns = t->sample.base.cpu_ns;
	return 1;
}

static int sample_groups(struct qj_engine *e, uint64_t now);
static void group_restarts_flush(struct qj_engine *e);
static void app_share_base(const struct qj_engine *e, struct app_state *a);

static int quiesce_begin(struct qj_engine *e, uint64_t cycle, uint64_t now_usec)
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
	consents_prune(e);
	for (size_t i = 0; i < e->n_apps; i++) {
		struct app_state *a = &e->apps[i];

		a->struck = false;
		a->have_base = a->busy = a->judged = a->suspect = a->restart_due = false;
		a->g_rung = -1;
		a->g_sweeping = a->g_pending = false;
		a->g_n = 0;
		a->holding[0] = 0;
	}
	r = sample_groups(e, now_usec);
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

	if (t->rung < 0)
		return false;
	if (t->killed_by_us && task_dying(t))
		return true;
	if (t->gone || qj_proc_status_read(t->pid, &ps) < 0)
		return false;
	mask = qj_action_info(e->p->rungs[t->rung].action)->pending_mask;
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

	if (e->p->rungs[t->rung].action != QJ_ACTION_SIGSTOP || t->killed_by_us)
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
		if (t->rung >= 0 && strcmp(t->app, a->name) == 0)
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

		if (strcmp(t->app, a->name) != 0 || t->rung < 0)
			continue;
		if (qj_eng_task_signal_pending(e, t) || notify_wait(e, t, now))
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
 * after it.  Its base is read by group_restarts_flush() at the end of the step,
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

/* The bases of the windows the step's actions restarted: after the last action. */
static void group_restarts_flush(struct qj_engine *e)
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

static int sample_groups(struct qj_engine *e, uint64_t now)
{
	group_restarts_flush(e); /* a step that failed part-way left them */
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

/* One kill-log record per group action, written once its outcome is known. */
static void log_group(struct qj_engine *e, struct app_state *a, const char *outcome)
{
	const struct qj_rung *rung = &e->p->rungs[a->g_rung];
	_cleanup_free_ char *cg = qj_cgroup_app_path(e->cg, a->name);
	char reason[96], ts[32];
	json_t *o, *pids;

	a->g_pending = false;
	log_info("Group %s of app %s: %s (%u tasks)", qj_action_to_string(rung->action), a->name,
		 outcome, a->g_n);
	if (!e->log)
		return;
	snprintf(reason, sizeof(reason), "app busy, its tasks handled or too short-lived");
	if (qj_format_rfc3339(a->g_applied_realtime_usec, ts, sizeof(ts)) < 0)
		ts[0] = '\0';
	pids = json_array();
	for (unsigned i = 0; pids && i < a->g_n && i < GROUP_PIDS_MAX; i++)
		(void)json_array_append_new(pids, json_integer(a->g_pids[i]));
	/* When the rung was applied, not when its outcome is known; as text, like every record. */
	o = json_pack("{s:s,s:I,s:s,s:s?,s:s,s:s,s:i,s:s,s:s,s:i,s:o,s:I,s:I,s:s,s:i}", "ts", ts,
		      "cycle", (json_int_t)e->cycle, "app", a->name, "cgroup", cg, "scope", "group",
		      "action", qj_action_to_string(rung->action), "rung", a->g_rung, "rung_name",
		      rung->name, "reason", reason, "tasks", (int)a->g_n, "pids",
		      pids ? pids : json_null(), "cpu_ms", (json_int_t)a->g_cpu_ms, "window_ms",
		      (json_int_t)a->g_window_ms, "outcome", outcome, "strikes",
		      (int)(a->strikes + a->struck));
	append_record(e, o);
}

static void group_note(struct app_state *a, pid_t pid)
{
	if (a->g_n < GROUP_PIDS_MAX)
		a->g_pids[a->g_n] = pid;
	a->g_n++;
}

/*
 * Sends the group's current rung (stop, or term) to every task of @a not yet
 * reached.  Returns how many it reached, or a negative errno.
 */
static int group_sweep(struct qj_engine *e, struct app_state *a, uint64_t now)
{
	enum qj_action action = e->p->rungs[a->g_rung].action;
	int n = 0;

	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];
		int r;

		if (t->gone || strcmp(t->app, a->name) != 0)
			continue;
		if (action == QJ_ACTION_SIGSTOP) {
			if (t->stopped_by_us || t->activity == QJ_TASK_STOPPED)
				continue;
			r = qj_eng_send_signal(t, SIGSTOP);
			if (r == 0) {
				t->stopped_by_us = t->sent_stop = true;
				e->n_stopped_cycle++;
			}
		} else {
			if (t->killed_by_us)
				continue;
			r = qj_eng_send_signal(t, SIGTERM);
			if (r == 0)
				(void)qj_eng_send_signal(t, SIGCONT);
			t->stopped_by_us = false;
			t->killed_by_us = r == 0;
		}
		if (r == -ESRCH) {
			qj_eng_mark_gone(e, t);
			continue;
		}
		if (r < 0)
			return log_warning_errno(r, "Failed to send %s to %d (%s) in app %s: %m",
						 qj_action_to_string(action), t->pid, t->comm,
						 a->name);
		if (t->pending)
			log_action(e, t, "ignored"); /* its own rung did not block it */
		t->by_group = true;
		t->rung = a->g_rung;
		t->applied_usec = now;
		t->activity = QJ_TASK_UNKNOWN;
		follow_add(e, t, qj_action_to_string(action));
		group_note(a, t->pid);
		n++;
	}
	return n;
}

/* Applies group rung @rung to app @a: stop/term sweeps, cgroup.freeze, cgroup.kill. */
static int group_apply(struct qj_engine *e, struct app_state *a, int rung, uint64_t now)
{
	enum qj_action action = e->p->rungs[rung].action;
	_cleanup_free_ char *cg = qj_cgroup_app_path(e->cg, a->name);
	int r = 0;

	if (a->g_pending)
		log_group(e, a, "ignored");
	a->g_rung = rung;
	a->g_applied_usec = now;
	a->g_applied_realtime_usec = realtime_now();
	a->g_n = 0;
	a->g_cpu_ms = a->last_cpu_ms;
	a->g_window_ms = a->last_window_ms;
	a->g_pending = true;
	a->g_sweeping = false;
	a->struck = true;
	e->n_actions++;
	count_action(a, &e->p->rungs[rung]);
	switch (action) {
	case QJ_ACTION_SIGSTOP:
	case QJ_ACTION_SIGTERM:
		a->g_sweeping = true;
		r = group_sweep(e, a, now);
		break;
	case QJ_ACTION_FREEZE:
		/* Atomic against fork: children of a frozen task start frozen. */
		r = qj_cgroup_freeze(e->cg, a->name, true);
		if (r == 0)
			a->frozen_by_us = true;
		break;
	case QJ_ACTION_SIGKILL:
		/* cgroup.kill: every task, and none can fork away meanwhile. */
		r = qj_cgroup_kill(e->cg, a->name);
		for (size_t i = 0; r == 0 && i < e->n_tasks; i++) {
			struct task *t = &e->tasks[i];

			if (t->gone || strcmp(t->app, a->name) != 0)
				continue;
			if (t->pending)
				log_action(e, t, "ignored");
			t->killed_by_us = true;
			t->stopped_by_us = false;
			t->by_group = true;
			group_note(a, t->pid);
		}
		break;
	default:
		r = -EINVAL; /* the notify rung never applies to a group */
	}
	if (r < 0) {
		a->g_pending = false;
		return log_warning_errno(r, "Failed to apply group %s to app %s: %m",
					 qj_action_to_string(action), a->name);
	}
	log_notice("Applied %s to app %s (%s), %d tasks: app busy, %" PRIu64 " ms of %" PRIu64
		   " ms, its tasks handled or too short-lived",
		   qj_action_to_string(action), a->name, cg ? cg : a->name, (int)a->g_n,
		   a->g_cpu_ms, a->g_window_ms);
	qj_eng_group_restart(e, a, now);
	return 1;
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
	const struct qj_app *app = qj_policy_find_app(e->p, a->name);
	struct qj_ladder_task lt = { .rung = a->g_rung,
				     .applied_usec = a->g_applied_usec,
				     .activity = QJ_TASK_BUSY,
				     .catches_sigxcpu = false,
				     .strikes = a->strikes };
	struct qj_ladder_decision d;
	int r, applied = 0;

	r = qj_ladder_decide(e->p, app, &lt, now, &d);
	if (r < 0)
		return r;
	if (d.verdict == QJ_LADDER_APPLY) {
		r = group_apply(e, a, d.rung, now);
		if (r == -ENOMEM)
			return r;
		applied = 1;
		d.next_usec = now + CONFIRM_USEC;
		hold_up(a, d.next_usec, "group %s: app busy, %" PRIu64 " ms of %" PRIu64 " ms",
			e->p->rungs[d.rung].name, a->last_cpu_ms, a->last_window_ms);
	} else if (d.verdict == QJ_LADDER_WAIT) {
		hold_up(a, d.next_usec, "app busy, next group rung after grace");
	} else {
		if (a->g_pending)
			log_group(e, a, "ignored");
		hold_up(a, USEC_INFINITY, "app busy after its last group rung");
	}
	if (d.next_usec < *next)
		*next = d.next_usec;
	return applied;
}

/* Does @t of @a let the system suspend?  Unmeasured tasks count when their app is quiet. */
static bool task_blocked(const struct task *t, const struct app_state *a)
{
	if (qj_task_activity_is_blocked(t->activity))
		return true;
	return t->activity == QJ_TASK_UNKNOWN && t->rung < 0 && a && a->judged && !a->busy &&
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
		append_record(e, o);
	}
	return -ETIMEDOUT;
}

static int quiesce_step(struct qj_engine *e, uint64_t now_usec, uint64_t *ret_next_usec)
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
	r = sample_groups(e, now_usec);
	if (r < 0)
		return r;
	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];
		const struct qj_app *app = qj_policy_find_app(e->p, t->app);
		struct app_state *as = qj_eng_app_state(e, t->app);
		struct qj_ladder_task lt;
		struct qj_ladder_decision d;

		if (!as)
			return -ENOMEM;
		r = observe(e, t, now_usec);
		if (r < 0)
			return r;
		if (t->gone)
			continue;
		/* "blocked" once the kernel says so: a queued stop is not taken yet. */
		if (t->pending && (t->activity == QJ_TASK_IDLE ||
				   (t->activity == QJ_TASK_STOPPED && !t->stop_queued) ||
				   t->activity == QJ_TASK_FROZEN))
			log_action(e, t, "blocked");
		else if (t->pending && t->activity == QJ_TASK_CONTINUED &&
			 e->p->rungs[t->rung].action == QJ_ACTION_SIGSTOP)
			log_action(e, t, "continued-by-other");

		lt = (struct qj_ladder_task){ .rung = t->rung,
					      .applied_usec = t->applied_usec,
					      .activity = t->activity,
					      .catches_sigxcpu = t->catches_sigxcpu,
					      .consents = t->consents,
					      .strikes = as->strikes };
		r = qj_ladder_decide(e->p, app, &lt, now_usec, &d);
		if (r < 0)
			return r;
		if (d.verdict == QJ_LADDER_APPLY) {
			r = apply(e, t, d.rung, now_usec);
			if (r == -ENOMEM)
				return r;
			if (t->gone)
				continue;
			if (r > 0) {
				uint64_t confirm =
					qj_action_info(e->p->rungs[t->rung].action)->confirm_usec;

				changed = true;
				d.next_usec = t->applied_usec + e->p->rungs[t->rung].grace_usec;
				if (confirm && now_usec + confirm < d.next_usec)
					d.next_usec = now_usec + confirm;
			} else {
				d.next_usec = USEC_INFINITY; /* its group is freezing */
			}
		} else if (d.verdict == QJ_LADDER_EXHAUSTED && t->pending) {
			log_action(e, t, "ignored");
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
		    (t->activity == QJ_TASK_UNKNOWN && t->rung >= 0 &&
		     now_usec < t->applied_usec + e->p->rungs[t->rung].grace_usec +
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
			r = group_sweep(e, a, now_usec);
			if (r < 0)
				return r;
			if ((r > 0 || a->new_tasks > 0) &&
			    now_usec >= a->g_applied_usec + e->p->rungs[a->g_rung].grace_usec) {
				/*
				 * Forking faster than the sweep for a whole grace
				 * period: the next group rung (cgroup.freeze or
				 * cgroup.kill are atomic against fork).
				 */
				log_notice("App %s outruns the group %s sweep: next rung", a->name,
					   e->p->rungs[a->g_rung].name);
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
					e->p->rungs[a->g_rung].name, a->g_n);
				if (now_usec + CONFIRM_USEC < next)
					next = now_usec + CONFIRM_USEC;
				continue;
			}
			/* cgroup.procs stable, every task reached: judge it from here. */
			a->g_sweeping = false;
			qj_eng_group_restart(e, a, now_usec);
		}
		if (a->have_base && a->t0_usec + e->p->sample_window_usec < next &&
		    (a->g_pending || !all_blocked))
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
			if (a->g_pending)
				log_group(e, a,
					  e->p->rungs[a->g_rung].action == QJ_ACTION_SIGTERM ||
							  e->p->rungs[a->g_rung].action ==
								  QJ_ACTION_SIGKILL ?
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
	group_restarts_flush(e);
	follow_sync(e);
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

static void write_summary(struct qj_engine *e, const char *why, uint64_t now, unsigned continued,
			  unsigned thawed)
{
	json_t *o;
	uint64_t usage = 0;
	unsigned tasks = 0;
	int r;

	if (!e->log)
		return;
	for (size_t i = 0; i < e->n_tasks; i++)
		tasks += !e->tasks[i].gone;
	(void)qj_cgroup_usage_usec(e->cg, NULL, &usage);
	o = json_pack(
		"{s:I,s:s,s:s,s:s,s:I,s:I,s:I,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "cycle",
		(json_int_t)e->cycle, "action", "summary", "reason", why ? why : "restore",
		"outcome", e->quiesced_usec ? "quiesced" : "aborted", "quiesce_ms",
		(json_int_t)(e->quiesced_usec ? (e->quiesced_usec - e->begin_usec) / 1000 : 0),
		"window_ms", (json_int_t)((now - e->begin_usec) / 1000), "cpu_ms",
		(json_int_t)(usage > e->jail_usage_begin ? (usage - e->jail_usage_begin) / 1000 :
							   0),
		"tasks", (int)tasks, "actions", (int)e->n_actions, "stopped",
		(int)e->n_stopped_cycle, "killed", (int)e->n_killed, "continued", (int)continued,
		"thawed", (int)thawed, "seen", (int)e->n_tasks);
	if (!o)
		return;
	r = qj_killlog_append_json(e->log, o);
	json_decref(o);
	if (r < 0)
		log_warning_errno(r, "Failed to write the kill log summary, ignoring: %m");
}

static int restore(struct qj_engine *e, const char *why)
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

		if ((t->stopped_by_us || t->sent_stop) && !t->gone) {
			r = qj_eng_send_signal(t, SIGCONT);
			if (r == 0)
				continued++;
			else if (r != -ESRCH && ret == 0)
				ret = r;
			t->stopped_by_us = false;
		}
	}
	continued += restore_sweep(e);
	for (size_t i = 0; i < e->n_apps; i++)
		if (e->apps[i].frozen_by_us) {
			r = qj_cgroup_freeze(e->cg, e->apps[i].name, false);
			if (r < 0 && r != -ENOENT && ret == 0)
				ret = r;
			e->apps[i].frozen_by_us = false;
			thawed++;
		}
	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];

		if (!t->gone && qj_pidfd_exited(t->pidfd))
			qj_eng_mark_gone(e, t);
		if (t->pending)
			log_action(e, t, t->gone ? gone_outcome(t) : "restored");
		slack_restore(e, t);
	}
	for (size_t i = 0; i < e->n_apps; i++)
		if (e->apps[i].g_pending)
			log_group(e, &e->apps[i],
				  e->p->rungs[e->apps[i].g_rung].action == QJ_ACTION_SIGKILL ?
					  "killed" :
					  "restored");
	r = qj_cgroup_set_idle(e->cg, false);
	if (r < 0 && ret == 0)
		ret = log_warning_errno(r, "Failed to restore the jail's CPU class: %m");
	for (size_t i = 0; i < e->n_apps; i++)
		if (e->apps[i].struck) {
			e->apps[i].strikes++;
			e->apps[i].struck = false;
		}
	write_summary(e, why, now, continued, thawed);
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
	tasks_clear(e);
	e->quiescing = false;
	r = qj_eng_save_state(e);
	if (r < 0 && ret == 0)
		ret = r;
	return ret;
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
	r = quiesce_begin(e, cycle, now_usec);
	log_sync(e);
	return r;
}

int qj_engine_quiesce_step(struct qj_engine *e, uint64_t now_usec, uint64_t *ret_next_usec)
{
	int r;

	log_defer(e);
	r = quiesce_step(e, now_usec, ret_next_usec);
	log_sync(e);
	return r;
}

int qj_engine_restore(struct qj_engine *e, const char *why)
{
	int r;

	log_defer(e);
	r = restore(e, why);
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
		c.stopped += t->stopped_by_us;
	}
	for (size_t i = 0; i < e->n_apps; i++) {
		const struct app_state *a = &e->apps[i];

		c.frozen += a->frozen_by_us;
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

		x.consents = qj_proc_stat_read(pid, &st) == 0 && consented(e, pid, st.start_time);
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
		x.rung = t->rung;
		x.stopped_by_us = t->stopped_by_us;
	}
	if (x.jailed) {
		const struct app_state *as = qj_eng_app_state(e, x.app);

		if (as) {
			x.strikes = as->strikes;
			x.frozen = as->frozen_by_us;
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
