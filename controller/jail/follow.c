// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Following deaths after a cycle: a process acted on is followed until it exits or a
 * while after the restore, and its death is logged with the signal or status its exit
 * event carries.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "escape.h"
#include "log.h"

#include "jail-internal.h"

static void follow_done(struct follow *f)
{
	if (f->pidfd >= 0)
		(void)close(f->pidfd);
	free(f->app);
	free(f->exe);
	*f = (struct follow){ .pidfd = -EBADF };
}

struct follow *qj_eng_find_follow(struct qj_engine *e, pid_t pid)
{
	for (size_t i = 0; i < e->n_follows; i++)
		if (e->follows[i].pid == pid)
			return &e->follows[i];
	return NULL;
}

void qj_eng_follow_remove(struct qj_engine *e, struct follow *f)
{
	follow_done(f);
	*f = e->follows[--e->n_follows];
	e->watch_dirty = true;
}

/* The exit-event filter names exactly the followed processes. */
void qj_eng_follow_sync(struct qj_engine *e)
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

void qj_eng_follow_add(struct qj_engine *e, const struct task *t, const char *action)
{
	struct follow *f = qj_eng_find_follow(e, t->pid), *v;

	if (f && f->pidfd >= 0 && !qj_pidfd_exited(f->pidfd)) {
		f->after = action;
		f->cycle = e->cycle;
		f->until_usec = USEC_INFINITY;
		return;
	}
	if (f)
		qj_eng_follow_remove(e, f); /* a dead one's PID reused */
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
	qj_eng_append_record(e, o);
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
		qj_eng_follow_remove(e, f);
	}
	qj_eng_follow_sync(e);
}

void qj_eng_on_exit_event(struct qj_engine *e, const struct qj_proc_event *ev)
{
	struct follow *f = qj_eng_find_follow(e, ev->tgid);
	struct qj_proc_stat st;
	struct pollfd pfd;

	if (!f)
		return;
	if (now_usec(CLOCK_MONOTONIC) >= f->until_usec && !f->dead_usec) {
		qj_eng_follow_remove(e, f); /* died long after the resume: not for the record */
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
		qj_eng_follow_remove(e, f);
	}
}

void qj_eng_follows_free(struct qj_engine *e)
{
	for (size_t i = 0; i < e->n_follows; i++)
		follow_done(&e->follows[i]);
	free(e->follows);
	e->follows = NULL;
	e->n_follows = 0;
}
