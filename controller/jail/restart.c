// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Restart safety: what must be undone after a crash (stopped tasks, frozen groups,
 * the jail's CPU class, timer slack) is kept in a state file rewritten atomically;
 * a new instance undoes it and sweeps the jail.
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
#include "procmon.h"
#include "sampler.h"
#include "util.h"

#include "jail-internal.h"

int qj_eng_save_state(struct qj_engine *e)
{
	_cleanup_free_ char *tmp = NULL;
	_cleanup_free_ char *text = NULL;
	_cleanup_close_ int fd = -EBADF;
	json_t *o, *stopped, *frozen, *strikes, *slack;
	bool sync = e->strikes_dirty;
	const char *knob;
	int64_t old;
	size_t len;

	if (!e->state_file)
		return 0;
	o = json_object();
	stopped = json_array();
	frozen = json_array();
	strikes = json_object();
	slack = json_array();
	if (!o || !stopped || !frozen || !strikes || !slack)
		goto oom;
	if (json_object_set_new(o, "version", json_integer(1)) < 0 ||
	    json_object_set_new(o, "cycle", json_integer((json_int_t)e->cycle)) < 0 ||
	    json_object_set(o, "stopped", stopped) < 0 ||
	    json_object_set(o, "frozen", frozen) < 0 ||
	    json_object_set(o, "strikes", strikes) < 0 || json_object_set(o, "slack", slack) < 0)
		goto oom;
	for (size_t i = 0; i < e->n_tasks; i++) {
		struct task *t = &e->tasks[i];

		if (t->undo.stopped && !t->gone &&
		    json_array_append_new(stopped, json_pack("{s:i,s:I}", "pid", t->pid, "start",
							     (json_int_t)t->start_time)) < 0)
			goto oom;
		for (size_t j = 0; j < t->undo.n_slack && !t->gone; j++)
			if (json_array_append_new(
				    slack,
				    json_pack("{s:i,s:I,s:I}", "tid", t->undo.slack[j].tid, "start",
					      (json_int_t)t->undo.slack[j].start_time, "old",
					      (json_int_t)t->undo.slack[j].old_ns)) < 0)
				goto oom;
	}
	for (size_t i = 0; i < e->n_apps; i++) {
		if (e->apps[i].undo.frozen &&
		    json_array_append_new(frozen, json_string(e->apps[i].name)) < 0)
			goto oom;
		if (e->apps[i].undo.strikes &&
		    json_object_set_new(strikes, e->apps[i].name,
					json_integer(e->apps[i].undo.strikes)) < 0)
			goto oom;
	}
	if (qj_cgroup_idle_saved(e->cg, &knob, &old) == 0 &&
	    json_object_set_new(o, "idle", json_pack("{s:s,s:I}", "knob", knob, "old", old)) < 0)
		goto oom;
	json_decref(stopped);
	json_decref(frozen);
	json_decref(strikes);
	json_decref(slack);
	stopped = frozen = strikes = slack = NULL;

	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text || asprintf(&tmp, "%s.tmp", e->state_file) < 0)
		return -ENOMEM;
	len = strlen(text);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return log_debug_errno(negative_errno(), "Failed to write %s: %m", tmp);
	/*
	 * What it undoes (stops, slack, freezes, the CPU class) a reboot undoes too: a
	 * restarted daemon reads it from the page cache, so only a new strike, which must
	 * outlive a reboot, waits for the disk (docs/decisions.md).
	 */
	if (write(fd, text, len) != (ssize_t)len || (sync && fsync(fd) < 0))
		return log_debug_errno(negative_errno(), "Failed to write %s: %m", tmp);
	/* rename(2) is atomic: a crash leaves the old state or the new one. */
	if (rename(tmp, e->state_file) < 0)
		return log_debug_errno(negative_errno(), "Failed to rename %s: %m", tmp);
	e->state_dirty = false;
	if (sync)
		e->strikes_dirty = false;
	return 0;
oom:
	json_decref(o);
	json_decref(stopped);
	json_decref(frozen);
	json_decref(strikes);
	json_decref(slack);
	return -ENOMEM;
}

/* SIGCONT @pid if it is still the process with @start_time. */
int qj_eng_cont_if_same(pid_t pid, uint64_t start_time)
{
	_cleanup_close_ int fd = -EBADF;
	struct qj_proc_stat st;
	int r;

	fd = pidfd_open(pid, 0);
	if (fd < 0)
		return negative_errno();
	/* Checked after pidfd_open: the pidfd pins the process the check saw. */
	r = qj_proc_stat_read(pid, &st);
	if (r < 0)
		return r;
	if (st.start_time != start_time)
		return -ESRCH; /* PID reused: not ours */
	if (pidfd_send_signal(fd, SIGCONT, NULL, 0) < 0)
		return negative_errno();
	return 0;
}

int qj_eng_load_and_undo_state(struct qj_engine *e)
{
	json_t *o, *v;
	size_t i;
	unsigned undone = 0;

	if (!e->state_file)
		return 0;
	o = json_load_file(e->state_file, 0, NULL);
	if (!o)
		return 0; /* no previous instance, or nothing it needed undone */
	json_array_foreach (json_object_get(o, "stopped"), i, v) {
		pid_t pid = (pid_t)json_integer_value(json_object_get(v, "pid"));
		uint64_t start = (uint64_t)json_integer_value(json_object_get(v, "start"));

		if (pid > 0 && qj_eng_cont_if_same(pid, start) == 0)
			undone++;
	}
	/* Timer slack a cycle raised: back to each thread's own value (0: the default). */
	json_array_foreach (json_object_get(o, "slack"), i, v) {
		pid_t tid = (pid_t)json_integer_value(json_object_get(v, "tid"));
		uint64_t start = (uint64_t)json_integer_value(json_object_get(v, "start"));
		uint64_t old = (uint64_t)json_integer_value(json_object_get(v, "old"));

		if (tid > 0 && qj_proc_timerslack_set_if_same(tid, start, old) == 0)
			undone++;
	}
	json_array_foreach (json_object_get(o, "frozen"), i, v) {
		const char *app = json_string_value(v);

		if (app && qj_cgroup_freeze(e->cg, app, false) == 0)
			undone++;
	}
	v = json_object_get(o, "idle");
	if (v) {
		int r = qj_cgroup_idle_restore(
			e->cg, json_string_value(json_object_get(v, "knob")) ?: "",
			(int64_t)json_integer_value(json_object_get(v, "old")));

		if (r < 0)
			log_debug_errno(r, "Failed to restore the jail's CPU class, ignoring: %m");
		else
			undone++;
	}
	{
		const char *name;

		json_object_foreach (json_object_get(o, "strikes"), name, v) {
			struct app_state *a = qj_eng_app_state(e, name);

			if (!a) {
				json_decref(o);
				return -ENOMEM;
			}
			a->undo.strikes = (unsigned)json_integer_value(v);
		}
	}
	json_decref(o);
	if (undone)
		log_debug("Undid %u things a previous instance left behind", undone);
	return (int)undone;
}

/* Whatever the state file says, nothing in the jail stays frozen or stopped. */
int qj_eng_sweep_jail(struct qj_engine *e)
{
	char **apps = NULL;
	int r, n = 0;

	r = qj_cgroup_list_apps(e->cg, &apps);
	if (r < 0)
		return r;
	for (char **a = apps; *a; a++) {
		pid_t *pids = NULL;
		size_t k = 0;

		if (qj_cgroup_freeze_requested(e->cg, *a) == 1 &&
		    qj_cgroup_freeze(e->cg, *a, false) == 0)
			n++;
		if (qj_cgroup_app_pids(e->cg, *a, &pids, &k) < 0)
			continue;
		for (size_t i = 0; i < k; i++) {
			struct qj_proc_stat st;

			if (qj_proc_stat_read(pids[i], &st) < 0)
				continue;
			/* A main thread that exited says Z: its other threads may be stopped. */
			if (st.state == 'Z' && qj_proc_threads_state(pids[i], &st.state) < 0)
				continue;
			/* A SIGSTOP sent just before a crash may not have taken effect yet. */
			if (st.state != 'T') {
				struct qj_proc_status ps;

				if (qj_proc_status_read(pids[i], &ps) == 0 &&
				    ((ps.shdpnd | ps.sigpnd) & (1ULL << (SIGSTOP - 1))))
					st.state = 'T';
			}
			if (st.state == 'T' && qj_eng_cont_if_same(pids[i], st.start_time) == 0)
				n++;
		}
		free(pids);
	}
	qj_strv_free(apps);
	return n;
}
