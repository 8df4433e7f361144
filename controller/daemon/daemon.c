// SPDX-License-Identifier: LGPL-2.1-or-later
/* qosjaild's manager: event loop, request handlers, suspend cycle effects (see daemon.h). */
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "backend.h"
#include "cycle.h"
#include "daemon.h"
#include "engine.h"
#include "escape.h"
#include "holds.h"
#include "ipc.h"
#include "killlog.h"
#include "log.h"
#include "policy.h"
#include "proc.h"
#include "proto.h"
#include "util.h"

/* How often an interrupt is re-sent while the worker has not returned (closes the race
 * between its cancel check and entering the blocking syscall). */
#define INTERRUPT_RESEND_USEC (20 * USEC_PER_MSEC)

struct fd_source {
	struct qj_event_source source;
	struct qj_daemon *d;
	int fd;
};

struct qj_daemon {
	struct qj_policy *policy;
	char *policy_path;
	char *state_dir;
	struct qj_engine *engine;
	struct qj_killlog *killlog;
	struct qj_holds *holds;
	struct qj_cycle cycle;
	struct qj_power *power;
	struct qj_ipc *ipc;

	int epoll_fd;
	struct fd_source signal_src;
	struct fd_source timer_src;
	struct fd_source notify_src;
	struct fd_source procmon_src;
	uint64_t timer_armed_usec; /* USEC_INFINITY: disarmed */
	uint64_t interrupt_resend_usec;

	bool started;
	bool exiting;
	bool reload_pending; /* a SIGHUP came during the backend write */
	int exit_code;
	size_t n_deferred; /* clients with a deferred hold request */
	uint64_t app_gen; /* bumped whenever jail membership may have changed */
	int (*membership)(uint64_t client_id, pid_t pid, const char **ret_app); /* no engine */
};

/* A request waiting for the jail to leave QOS_NONE. */
struct client_state {
	struct qj_request deferred;
	bool has_deferred;

	/* Cached jail membership of the peer, valid while app_gen == d->app_gen. */
	uint64_t app_gen;
	uint64_t app_usec;
	int app_r; /* 1 jailed, 0 not, negative errno: unknown (treated as jailed) */
	bool app_final; /* the peer has exited: app_r can no longer change */
	char app[QJ_POLICY_NAME_MAX + 1];
};

/*
 * Reading /proc/PID/cgroup costs ~9 us here (a third of a hold round trip), so a
 * peer's membership is cached per connection.  Membership changes through the
 * daemon (place), the engine's exec matching (any procmon dispatch) or root
 * writing cgroup.procs behind our back: the first two bump d->app_gen, a
 * cycle start bumps it (the deferral decision then reads fresh), and the cache
 * lives at most APP_CACHE_USEC for the third.
 */
#define APP_CACHE_USEC (1 * USEC_PER_SEC)

static void apply(struct qj_daemon *d, unsigned actions);

static uint64_t now(void)
{
	return now_usec(CLOCK_MONOTONIC);
}

/* ---- timer ---- */

static void rearm_timer(struct qj_daemon *d)
{
	uint64_t t = d->cycle.deadline_usec;
	struct itimerspec its = {};

	if (qj_holds_next_deadline(d->holds) < t)
		t = qj_holds_next_deadline(d->holds);
	if (d->interrupt_resend_usec < t)
		t = d->interrupt_resend_usec;
	if (d->ipc && qj_ipc_resume_usec(d->ipc) < t)
		t = qj_ipc_resume_usec(d->ipc);
	/*
	 * Lazy: a timer already armed at or before @t stays as it is.  The idle
	 * deadline moves later on every release, and re-arming each time cost a
	 * syscall per request; an early expiry only re-runs on_timer(), which finds
	 * nothing due and arms the real deadline.
	 */
	if (t >= d->timer_armed_usec)
		return;
	if (t != USEC_INFINITY) {
		if (t == 0)
			t = 1; /* 0 would disarm */
		its.it_value.tv_sec = (time_t)(t / USEC_PER_SEC);
		its.it_value.tv_nsec = (long)(t % USEC_PER_SEC) * 1000;
	}
	if (timerfd_settime(d->timer_src.fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
		log_error("Failed to arm the timer: %m");
		return;
	}
	d->timer_armed_usec = t;
}

/* ---- engine adapters ---- */

static struct client_state *client_state(struct qj_ipc_client *c);

/*
 * Jail membership of @c's peer, fail-closed (issue 11 finding 3): 1 and *ret_app (valid
 * until the next call) when jailed, 0 when not, negative errno when it cannot be known
 * (callers treat the peer as jailed in an unknown app).  Decided at connect and re-read
 * while cached answers age: /proc/PID/cgroup read, then the peer's pidfd checked, so the
 * pid still named the peer.  Once the connecting process has exited nothing can be read
 * for the connection any more: the last trusted answer stays (a jailed app that connects
 * and hands the socket to a child stays jailed), and without one the peer is unknown.
 * Only where pidfds do not exist at all (-ENOSYS: before 5.3) is the pid read alone.
 */
static int client_app(struct qj_daemon *d, struct qj_ipc_client *c, const char **ret_app)
{
	struct client_state *cs = client_state(c);
	uint64_t t = now();
	const char *app = NULL;
	int r;

	*ret_app = "";
	if (!d->engine && d->membership)
		return d->membership(c->id, c->pid, ret_app);
	if (!d->engine)
		return 0;
	if (!cs)
		return -ENOMEM;
	if (cs->app_final ||
	    (cs->app_gen == d->app_gen && t - cs->app_usec < APP_CACHE_USEC && cs->app_usec)) {
		*ret_app = cs->app;
		return cs->app_r;
	}
	if (c->pidfd < 0 && c->pidfd != -ENOSYS) {
		r = c->pidfd; /* gone before accept: never known */
		cs->app_final = true;
	} else {
		r = qj_engine_app_of_pid(d->engine, c->pid, &app);
		if (c->pidfd >= 0 && qj_pidfd_exited(c->pidfd)) {
			cs->app_final = true;
			if (cs->app_usec) { /* keep the last trusted answer */
				*ret_app = cs->app;
				return cs->app_r;
			}
			r = -ESRCH;
		}
	}
	cs->app_gen = d->app_gen;
	cs->app_usec = t ? t : 1;
	cs->app_r = r;
	snprintf(cs->app, sizeof(cs->app), "%s", r > 0 && app ? app : "");
	*ret_app = cs->app;
	return r;
}

/* ---- the cycle's effects ---- */

static void holds_changed(struct qj_daemon *d)
{
	apply(d, qj_cycle_on_holds(&d->cycle, qj_holds_count(d->holds), now()));
}

static void quiesce_step(struct qj_daemon *d)
{
	uint64_t next = USEC_INFINITY;
	int r = 1;

	if (d->engine)
		r = qj_engine_quiesce_step(d->engine, now(), &next);
	if (r < 0)
		log_error_errno(r, "Quiesce step of cycle %" PRIu64 " failed: %m", d->cycle.id);
	apply(d, qj_cycle_on_quiesce(&d->cycle, r, next, now()));
}

static void process_deferred(struct qj_daemon *d);

static void apply(struct qj_daemon *d, unsigned actions)
{
	int r;

	if (actions & QJ_CYCLE_DO_QUIESCE_BEGIN) {
		d->app_gen++;
		log_info("Cycle %" PRIu64 ": no holds, quiescing the jail", d->cycle.id);
		r = qj_power_prepare(d->power);
		if (r < 0) {
			log_warning_errno(r, "Failed to read the wakeup count: %m");
			apply(d, qj_cycle_on_quiesce(&d->cycle, r, 0, now()));
			return;
		}
		if (d->engine) {
			r = qj_engine_quiesce_begin(d->engine, d->cycle.id, now());
			if (r < 0) {
				log_error_errno(r, "Failed to quiesce the jail: %m");
				apply(d, qj_cycle_on_quiesce(&d->cycle, r, 0, now()));
				return;
			}
		}
	}
	if (actions & QJ_CYCLE_DO_QUIESCE_STEP)
		quiesce_step(d);
	if (actions & QJ_CYCLE_DO_BACKEND_START) {
		log_info("Cycle %" PRIu64 ": jail quiesced, suspending (%s)", d->cycle.id,
			 qj_backend_to_string(qj_power_kind(d->power)));
		r = qj_power_start(d->power);
		if (r < 0)
			apply(d, qj_cycle_on_backend(&d->cycle, r, now()));
	}
	if (actions & QJ_CYCLE_DO_BACKEND_INTERRUPT) {
		log_info("Cycle %" PRIu64 ": hold taken, interrupting the suspend write",
			 d->cycle.id);
		qj_power_interrupt(d->power);
		d->interrupt_resend_usec = now() + INTERRUPT_RESEND_USEC;
	}
	if (actions & QJ_CYCLE_DO_RESTORE) {
		const char *why = qj_cycle_result_to_string(d->cycle.last_result);

		if (d->engine) {
			r = qj_engine_restore(d->engine, why);
			if (r < 0)
				log_error_errno(r, "Failed to restore the jail: %m");
		}
		log_info("Cycle %" PRIu64 " ended: %s", d->cycle.id, why);
	}
	if (actions & QJ_CYCLE_DO_RESUME_WAITERS)
		process_deferred(d);
	rearm_timer(d);
}

static void reload_on_sighup(struct qj_daemon *d);

static void on_backend_done(struct qj_daemon *d, int result)
{
	d->interrupt_resend_usec = USEC_INFINITY;
	/* The patched kernel's "qos" errors: kernel/README.md, "Errors of a qos write". */
	if (result == -ERANGE)
		log_warning("Cycle %" PRIu64 ": the kernel refused to suspend: an incompatible "
			    "latency constraint is active (ERANGE), retrying with backoff",
			    d->cycle.id);
	else if (result == -EAGAIN)
		log_info("Cycle %" PRIu64 ": a wakeup event or a new constraint made the suspend "
			 "back out (EAGAIN), retrying",
			 d->cycle.id);
	else if (result == -EBUSY)
		log_warning("Cycle %" PRIu64 ": the kernel is busy (another suspend, autosleep, or "
			    "a task or device refused: EBUSY), retrying with backoff",
			    d->cycle.id);
	else if (result == -ESTALE)
		log_info("Cycle %" PRIu64 ": wakeup events since the wakeup count was read, "
			 "aborting",
			 d->cycle.id);
	else if (result < 0 && result != -EINTR)
		log_warning_errno(result, "Cycle %" PRIu64 ": suspend write failed: %m, retrying",
				  d->cycle.id);
	apply(d, qj_cycle_on_backend(&d->cycle, result, now()));
	if (d->reload_pending)
		reload_on_sighup(d); /* waits again if another write started */
}

/* ---- replies ---- */

static void reply(struct qj_ipc_client *c, json_t *msg, int pass_fd)
{
	int r;

	if (!msg) {
		log_error("Out of memory building a reply, disconnecting client %" PRIu64, c->id);
		qj_ipc_disconnect(c);
		return;
	}
	r = qj_ipc_send(c, msg, pass_fd);
	json_decref(msg);
	if (r == -EMSGSIZE || r == -ENOMEM) {
		/* Never leave a client waiting for a reply that was not sent. */
		msg = qj_reply_new_error(r, "reply too large or out of memory");
		if (msg)
			(void)qj_ipc_send(c, msg, -1);
		json_decref(msg);
	}
}

/*
 * Entries of a listing (holds in status and holds, names in holds): the oldest
 * LIST_MAX.  A listing costs the same however many holds users took, so it never
 * delays the others' requests (issue 11 finding 6: 65536 holds made each status
 * take 2.5 s).  The totals stay exact and the reply says "truncated".
 */
#define LIST_MAX 128

/*
 * Listing replies (status, holds) must fit in one message: halve the longest
 * of the "holds" and "stats" arrays until they do, and say "truncated".
 * The totals stay exact.
 */
static json_t *fit_reply(json_t *j)
{
	if (json_array_size(json_object_get(j, "holds")) <
		    (size_t)json_integer_value(json_object_get(j, "holds_total")) ||
	    json_array_size(json_object_get(j, "stats")) <
		    (size_t)json_integer_value(json_object_get(j, "stats_total")))
		(void)json_object_set_new(j, "truncated", json_true());
	for (;;) {
		json_t *holds = json_object_get(j, "holds"), *stats = json_object_get(j, "stats");
		json_t *a = json_array_size(stats) > json_array_size(holds) ? stats : holds;
		char *text = NULL;
		size_t n;
		int r;

		r = qj_proto_encode(j, &text, &n);
		free(text);
		if (r != -EMSGSIZE || json_array_size(a) == 0)
			return j;
		for (size_t keep = json_array_size(a) / 2; json_array_size(a) > keep;)
			(void)json_array_remove(a, json_array_size(a) - 1);
		(void)json_object_set_new(j, "truncated", json_true());
	}
}

static void reply_error(struct qj_ipc_client *c, int error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reply_error(struct qj_ipc_client *c, int error, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply(c, qj_reply_new_error(error, "%s", msg), -1);
}

static bool check_access(struct qj_daemon *d, struct qj_ipc_client *c,
			 const struct qj_principals *pr, const char *what)
{
	if (qj_principals_allow(pr, c->uid, c->groups, c->n_groups))
		return true;
	log_notice("Refused %s to pid %d uid %d (%s): not in access.%s of the policy", what, c->pid,
		   c->uid, c->comm, what);
	reply_error(c, -EPERM, "uid %d may not %s: not in access.%s of the policy", c->uid, what,
		    what);
	return false;
}

/* ---- handlers ---- */

static json_t *hold_json(const struct qj_hold *h, uint64_t t)
{
	/* comm is the peer's own choice of bytes, not necessarily UTF-8: escaped, never dropped. */
	return json_pack("{s:s,s:s,s:I,s:I,s:o,s:s,s:I,s:I}", "name", h->name, "reason", h->reason,
			 "pid", (json_int_t)h->owner.pid, "uid", (json_int_t)h->owner.uid, "comm",
			 qj_json_string_escaped(h->owner.comm), "app", h->owner.app, "age_usec",
			 (json_int_t)(t - h->start_usec), "timeout_left_usec",
			 h->deadline_usec == USEC_INFINITY ?
				 (json_int_t)-1 :
				 (json_int_t)(h->deadline_usec > t ? h->deadline_usec - t : 0));
}

static json_t *holds_array(struct qj_daemon *d, uint64_t t)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < LIST_MAX && qj_holds_get(d->holds, i); i++)
		if (json_array_append_new(a, hold_json(qj_holds_get(d->holds, i), t)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static void handle_hold(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			bool *ret_deferred)
{
	struct qj_hold_owner owner = { .pid = c->pid, .uid = c->uid };
	const struct qj_app *app = NULL;
	const char *app_name = NULL;
	uint64_t timeout = req->timeout_usec;
	json_t *msg;
	int r;

	if (!check_access(d, c, &d->policy->access_hold, "hold"))
		return;
	r = client_app(d, c, &app_name);
	if (r < 0) {
		log_notice("Refused hold '%s' to pid %d uid %d (%s): cannot tell whether it is "
			   "jailed (%s)",
			   req->name, c->pid, c->uid, c->comm, strerrorname_np(-r));
		reply_error(c, -EPERM,
			    "cannot tell whether pid %d is jailed (%s): an unknown peer gets no "
			    "holds",
			    c->pid, r == -ESRCH ? "it exited" : strerror(-r));
		return;
	}
	if (r > 0) {
		/* Jailed peers never keep the system awake: while the jail is at QOS_NONE
		 * their request blocks until resume, like any QoS resource would. */
		if (qj_cycle_jail_quiesced(&d->cycle)) {
			if (req->nonblock) {
				reply_error(
					c, -EAGAIN,
					"jailed app %s: the system is suspending, try after resume",
					app_name);
				return;
			}
			log_info("Deferring hold '%s' of jailed pid %d (%s) until resume",
				 req->name, c->pid, app_name);
			*ret_deferred = true;
			return;
		}
		app = qj_policy_find_app(d->policy, app_name);
		if (!app) {
			log_notice("Refused hold '%s' to pid %d: jailed in %s, which the policy no "
				   "longer lists",
				   req->name, c->pid, app_name);
			reply_error(c, -EPERM,
				    "jailed in app %s, which the policy no longer lists: no holds",
				    app_name);
			return;
		}
		snprintf(owner.app, sizeof(owner.app), "%s", app_name);
	}
	if (app) {
		size_t owned = 0;

		for (size_t i = 0; qj_holds_get(d->holds, i); i++)
			owned += strcmp(qj_holds_get(d->holds, i)->owner.app, app->name) == 0;
		if (!qj_holds_find(d->holds, c->id, req->name) && owned >= app->hold_max) {
			log_notice("Refused hold '%s' to pid %d: app %s may own %u holds",
				   req->name, c->pid, app->name, app->hold_max);
			reply_error(c, -EDQUOT, "app %s may own at most %u holds", app->name,
				    app->hold_max);
			return;
		}
		if (app->hold_max_timeout_usec &&
		    (timeout == 0 || timeout > app->hold_max_timeout_usec))
			timeout = app->hold_max_timeout_usec;
	}
	/* Quotas (issue 11 finding 6): no user fills the table that root's holds need. */
	if (c->uid != 0 && !qj_holds_find(d->holds, c->id, req->name)) {
		const char *which = NULL;
		unsigned max = 0;

		if (qj_holds_count_conn(d->holds, c->id) >= d->policy->max_holds_per_conn) {
			which = "holds_per_connection";
			max = d->policy->max_holds_per_conn;
		} else if (qj_holds_count_uid(d->holds, c->uid) >= d->policy->max_holds_per_uid) {
			which = "holds_per_uid";
			max = d->policy->max_holds_per_uid;
		}
		if (which) {
			log_debug("Refused hold '%s' to pid %d uid %d: limits.%s (%u)", req->name,
				  c->pid, c->uid, which, max);
			reply_error(c, -EDQUOT, "at most %u holds (limits.%s of the policy)", max,
				    which);
			return;
		}
	}
	memcpy(owner.comm, c->comm, sizeof(owner.comm));
	r = qj_holds_acquire(d->holds, c->id, req->name, req->reason, &owner, timeout, now());
	if (r == -EINVAL) {
		reply_error(c, r, "hold name and reason must be 1-%d/%d bytes", QJ_HOLD_NAME_MAX,
			    QJ_HOLD_REASON_MAX);
		return;
	}
	if (r == -ENOSPC) {
		log_warning("Refused hold '%s' to pid %d: the hold table is full", req->name,
			    c->pid);
		reply_error(c, r,
			    "the daemon's hold table is full (at most %d holds and %d distinct "
			    "names held at once)",
			    QJ_HOLDS_MAX, QJ_HOLDS_MAX_NAMES);
		return;
	}
	if (r < 0) {
		reply_error(c, r, "cannot take hold: %s", strerror(-r));
		return;
	}
	log_debug("Hold '%s' %s by pid %d (%s): %s", req->name, r ? "refreshed" : "taken", c->pid,
		  c->comm, req->reason);
	/* Only what differs from the request's defaults: replies are parsed per request. */
	msg = json_pack("{s:b}", "ok", 1);
	if (msg && ((r == 1 && json_object_set_new(msg, "refreshed", json_true())) ||
		    (timeout && json_object_set_new(msg, "timeout_usec",
						    json_integer((json_int_t)timeout))))) {
		json_decref(msg);
		msg = NULL;
	}
	reply(c, msg, -1);
	holds_changed(d);
}

static void handle_release(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req)
{
	int r = qj_holds_release(d->holds, c->id, req->name, now());

	if (r < 0) {
		reply_error(c, r, "this connection holds no '%s'", req->name);
		return;
	}
	reply(c, json_pack("{s:b}", "ok", 1), -1);
	holds_changed(d);
}

static void handle_status(struct qj_daemon *d, struct qj_ipc_client *c)
{
	struct qj_engine_counts counts = {};
	struct qj_power_stats ps;
	uint64_t t = now();
	json_t *j;

	qj_power_get_stats(d->power, &ps);
	if (d->engine)
		(void)qj_engine_counts(d->engine, &counts);
	j = json_pack("{s:b,s:s,s:I,s:I,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:o*}", "ok", 1, "state",
		      qj_cycle_state_to_string(d->cycle.state), "cycle", (json_int_t)d->cycle.id,
		      "state_age_usec", (json_int_t)(t - d->cycle.state_since_usec), "backend",
		      qj_backend_to_string(qj_power_kind(d->power)), "policy",
		      d->policy_path ? d->policy_path : "(built-in defaults)", "suspends",
		      (json_int_t)d->cycle.n_suspends, "aborts", (json_int_t)d->cycle.n_aborts,
		      "failures", (json_int_t)d->cycle.n_failures, "dry_runs",
		      (json_int_t)ps.dry_runs, "wakeup_count_mismatches", (json_int_t)ps.mismatches,
		      "clients", (json_int_t)qj_ipc_n_clients(d->ipc), "holds", holds_array(d, t));
	if (!j) {
		reply(c, NULL, -1);
		return;
	}
	(void)json_object_set_new(
		j, "last",
		json_pack("{s:s,s:s?,s:I}", "result",
			  qj_cycle_result_to_string(d->cycle.last_result), "error",
			  d->cycle.last_error ? strerrorname_np(-d->cycle.last_error) : NULL,
			  "age_usec",
			  (json_int_t)(d->cycle.last_result_usec ? t - d->cycle.last_result_usec :
								   0)));
	(void)json_object_set_new(
		j, "jail",
		json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:s?,s:o,s:I,s:I}", "cgroup",
			  d->policy->cgroup_path, "apps", (json_int_t)counts.apps, "tasks",
			  (json_int_t)counts.tasks, "busy", (json_int_t)counts.busy, "stopped",
			  (json_int_t)counts.stopped, "frozen", (json_int_t)counts.frozen, "killed",
			  (json_int_t)counts.killed, "holding_app",
			  counts.holding_app[0] ? counts.holding_app : NULL, "holding",
			  /* names a jailed process: its own bytes, escaped */
			  counts.holding[0] ? qj_json_string_escaped(counts.holding) : json_null(),
			  "quiesce_ms", (json_int_t)(counts.quiesce_usec / 1000), "bound_ms",
			  (json_int_t)(counts.bound_usec / 1000)));
	(void)json_object_set_new(j, "holds_total",
				  json_integer((json_int_t)qj_holds_count(d->holds)));
	if (d->killlog) {
		struct qj_killlog_stats ks;

		/* Records lost to a full disk: the operator must learn the log has a hole. */
		qj_killlog_get_stats(d->killlog, &ks);
		(void)json_object_set_new(
			j, "kill_log",
			json_pack("{s:s,s:I,s:I,s:s?}", "path", qj_killlog_path(d->killlog), "lost",
				  (json_int_t)ks.lost, "unrecorded", (json_int_t)ks.unrecorded,
				  "error", ks.last_error ? strerrorname_np(-ks.last_error) : NULL));
	}
	reply(c, fit_reply(j), -1);
}

static void handle_holds(struct qj_daemon *d, struct qj_ipc_client *c)
{
	uint64_t t = now();
	json_t *stats = json_array();
	struct qj_hold_stats s;

	for (size_t i = 0; stats && i < LIST_MAX && qj_holds_stats_at(d->holds, i, t, &s) == 0; i++)
		if (json_array_append_new(
			    stats,
			    json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "name", s.name,
				      "active", (json_int_t)s.active, "active_count",
				      (json_int_t)s.active_count, "event_count",
				      (json_int_t)s.event_count, "expire_count",
				      (json_int_t)s.expire_count, "total_time_usec",
				      (json_int_t)s.total_time_usec, "max_time_usec",
				      (json_int_t)s.max_time_usec, "last_change_usec",
				      (json_int_t)s.last_change_usec, "prevent_suspend_time_usec",
				      (json_int_t)s.prevent_suspend_time_usec)) < 0) {
			json_decref(stats);
			stats = NULL;
		}
	reply(c,
	      stats ? fit_reply(json_pack("{s:b,s:I,s:I,s:I,s:o*,s:o}", "ok", 1, "now_usec",
					  (json_int_t)t, "holds_total",
					  (json_int_t)qj_holds_count(d->holds), "stats_total",
					  (json_int_t)qj_holds_n_stats(d->holds), "holds",
					  holds_array(d, t), "stats", stats)) :
		      NULL,
	      -1);
}

/* Jailed peers (and peers whose membership is unknown) never move processes. */
static bool check_not_jailed(struct qj_daemon *d, struct qj_ipc_client *c, const char *what)
{
	const char *app = NULL;
	int r = client_app(d, c, &app);

	if (r == 0 || (r < 0 && c->uid == 0))
		return true;
	log_notice("Refused %s to pid %d uid %d (%s): %s", what, c->pid, c->uid, c->comm,
		   r > 0 ? "a jailed process" : "cannot tell whether it is jailed");
	reply_error(c, -EPERM, "a jailed process may not %s", what);
	return false;
}

/* place and spawn: access.place, not jailed, and a jail to place into. */
static bool check_may_place(struct qj_daemon *d, struct qj_ipc_client *c)
{
	if (!check_access(d, c, &d->policy->access_place, "place") ||
	    !check_not_jailed(d, c, "place"))
		return false;
	if (!d->engine) {
		reply_error(c, -EOPNOTSUPP, "no jail: the daemon runs without its engine");
		return false;
	}
	return true;
}

/*
 * Whether @c may place @pid (issue 11 finding 2): root any process; anyone else only
 * processes whose every uid (real, effective, saved, filesystem) is the caller's own
 * or one access.place_as lists for it, and never one with a root uid.  The uids are
 * read with a pidfd open (read, then the pidfd checked alive: the pid still named the
 * process that was read); *ret_pidfd stays open for the re-check after the move.
 */
static int check_place_target(struct qj_daemon *d, struct qj_ipc_client *c, pid_t pid,
			      int *ret_pidfd)
{
	_cleanup_close_ int fd = -EBADF;
	struct qj_proc_status st;
	int r;

	if (pid <= 0) {
		reply_error(c, -EINVAL, "invalid pid %d", pid);
		return -EINVAL;
	}
	fd = pidfd_open(pid, 0);
	if (fd < 0 && (c->uid != 0 || errno == ESRCH)) {
		r = -errno;
		if (r == -ESRCH)
			reply_error(c, r, "no process %d", pid);
		else
			reply_error(c, r, "cannot verify the owner of pid %d: pidfd_open: %s", pid,
				    strerror(-r));
		return r;
	}
	if (c->uid == 0) {
		*ret_pidfd = TAKE_FD(fd);
		return 0;
	}
	r = qj_proc_status_read(pid, &st);
	if (r >= 0 && qj_pidfd_exited(fd))
		r = -ESRCH;
	if (r < 0) {
		reply_error(c, r == -ENOENT ? -ESRCH : r, "no process %d", pid);
		return r;
	}
	for (size_t i = 0; i < ARRAY_SIZE(st.uids); i++) {
		uid_t u = st.uids[i];

		if (u == c->uid && u != 0)
			continue;
		if (qj_policy_may_place_as(d->policy, c->uid, u))
			continue;
		log_notice("Refused place of pid %d (uid %u) to pid %d uid %d (%s)", pid, u, c->pid,
			   c->uid, c->comm);
		reply_error(c, -EPERM,
			    u == 0 ? "pid %d runs as root: only root may place it" :
				     "pid %d runs as uid %u: uid %d may place only its own "
				     "processes and those access.place_as lists for it",
			    pid, u, c->uid);
		return -EPERM;
	}
	*ret_pidfd = TAKE_FD(fd);
	return 0;
}

static void handle_place(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req)
{
	_cleanup_close_ int pidfd = -EBADF;
	int r;

	if (!check_may_place(d, c))
		return;
	if (check_place_target(d, c, req->pid, &pidfd) < 0)
		return;
	r = qj_engine_place(d->engine, req->app, req->pid);
	d->app_gen++;
	/* Re-checked: had it exited during the move, the pid might have named another. */
	if (r >= 0 && pidfd >= 0 && qj_pidfd_exited(pidfd)) {
		log_warning("Pid %d exited while being placed into %s (requested by pid %d uid %d)",
			    req->pid, req->app, c->pid, c->uid);
		r = -ESRCH;
	}
	if (r < 0) {
		if (r == -ENOENT)
			reply_error(c, r, "no app '%s' in the policy", req->app);
		else if (r == -ESRCH)
			reply_error(c, r, "cannot place pid %d into '%s': no such process",
				    req->pid, req->app);
		else
			reply_error(c, r, "cannot place pid %d into '%s'", req->pid, req->app);
		return;
	}
	log_info("Placed pid %d into app %s (requested by pid %d uid %d)", req->pid, req->app,
		 c->pid, c->uid);
	reply(c, json_pack("{s:b,s:s,s:i}", "ok", 1, "app", req->app, "pid", req->pid), -1);
}

static void handle_spawn(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req)
{
	_cleanup_close_ int fd = -EBADF;
	int r;

	if (!check_may_place(d, c))
		return;
	r = qj_engine_open_cgroup(d->engine, req->app, &fd);
	if (r < 0) {
		reply_error(c, r,
			    r == -ENOENT ? "no app '%s' in the policy" :
					   "cannot open the cgroup of '%s'",
			    req->app);
		return;
	}
	log_info("Handing the cgroup of app %s to pid %d uid %d for spawning", req->app, c->pid,
		 c->uid);
	reply(c, json_pack("{s:b,s:s}", "ok", 1, "app", req->app), fd);
}

static void handle_log(struct qj_daemon *d, struct qj_ipc_client *c)
{
	_cleanup_close_ int fd = -EBADF;

	if (!check_access(d, c, &d->policy->access_logs, "logs"))
		return;
	fd = qj_killlog_open_reader(d->killlog);
	if (fd < 0) {
		reply_error(c, fd, "cannot open the kill log %s: %s", d->policy->log_path,
			    strerror(-fd));
		return;
	}
	/* A read-only reopen of the daemon's own descriptor: no path lookup as root. */
	reply(c, json_pack("{s:b,s:s}", "ok", 1, "path", d->policy->log_path), fd);
}

static int lookup_group(const char *group, gid_t *ret_gid, void *userdata)
{
	struct group gr, *res = NULL;
	char buf[4096];
	int r;

	(void)userdata;
	r = getgrnam_r(group, &gr, buf, sizeof(buf), &res);
	if (r != 0)
		return -r;
	if (!res)
		return -ENOENT;
	*ret_gid = gr.gr_gid;
	return 0;
}

static int load_policy(const char *path, struct qj_diags *diags, struct qj_policy **ret)
{
	struct qj_policy *p = NULL;
	int r;

	r = path ? qj_policy_load(path, diags, &p) : qj_policy_new_default(&p);
	if (r < 0)
		return r;
	r = qj_policy_resolve_groups(p, lookup_group, NULL);
	if (r < 0) {
		qj_policy_free(p);
		return r;
	}
	if (r > 0)
		log_warning("%d group name(s) in the access lists of %s do not exist, ignoring", r,
			    path ? path : "the defaults");
	*ret = p;
	return 0;
}

static int apply_policy(struct qj_daemon *d, struct qj_policy *p)
{
	int r;

	if (qj_power_running(d->power))
		return -EBUSY;
	r = qj_power_configure(d->power, p);
	if (r < 0)
		return r;
	if (d->engine) {
		r = qj_engine_set_policy(d->engine, p);
		if (r < 0) {
			(void)qj_power_configure(d->power, d->policy);
			return r;
		}
	}
	qj_cycle_configure(&d->cycle, p->idle_delay_usec, p->retry_initial_usec, p->retry_max_usec);
	qj_ipc_set_limits(d->ipc, p->max_clients, p->max_clients_per_uid);
	qj_policy_free(d->policy);
	d->policy = p;
	d->app_gen++;
	return 0;
}

static void handle_reload(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req)
{
	struct qj_diags diags = {};
	struct qj_policy *p = NULL;
	const char *path = req->path ? req->path : d->policy_path;
	char *text = NULL;
	size_t len = 0;
	int r;

	if (!check_access(d, c, &d->policy->access_reload, "reload"))
		return;
	if (req->path && c->uid != 0) {
		/* Reading an arbitrary file as root on behalf of a user would leak it. */
		reply_error(c, -EPERM, "only root may reload from another file");
		return;
	}
	if (!path) {
		reply_error(c, -EINVAL, "running on built-in defaults: name a policy file");
		return;
	}
	r = load_policy(path, &diags, &p);
	if (r < 0) {
		FILE *f = open_memstream(&text, &len);

		if (f) {
			qj_diags_print(&diags, f);
			(void)fclose(f);
		}
		log_warning("Reload of %s failed, keeping the running policy:\n%s", path,
			    text ? text : "");
		if (r == -EINVAL)
			reply_error(c, r, "invalid policy:\n%s", text ? text : "");
		else
			reply_error(c, r, "cannot load %s", path);
		free(text);
		qj_diags_done(&diags);
		return;
	}
	qj_diags_done(&diags);
	r = apply_policy(d, p);
	if (r < 0) {
		qj_policy_free(p);
		reply_error(c, r, "cannot apply %s now, keeping the running policy", path);
		return;
	}
	if (path != d->policy_path) {
		char *copy = strdup(path);

		if (copy) {
			free(d->policy_path);
			d->policy_path = copy;
		}
	}
	log_info("Reloaded policy %s (requested by pid %d uid %d)", d->policy_path, c->pid, c->uid);
	reply(c, json_pack("{s:b,s:s}", "ok", 1, "policy", d->policy_path), -1);
	apply(d, qj_cycle_on_holds(&d->cycle, qj_holds_count(d->holds), now()));
}

static void handle_suspend(struct qj_daemon *d, struct qj_ipc_client *c)
{
	int r;

	if (!check_access(d, c, &d->policy->access_suspend, "suspend"))
		return;
	r = qj_cycle_request_suspend(&d->cycle, now());
	if (r == -EBUSY) {
		reply_error(c, r, "%zu hold(s) keep the system awake; see qosjailctl holds",
			    qj_holds_count(d->holds));
		return;
	}
	if (r < 0) {
		reply_error(c, r, "a suspend cycle is already running (cycle %" PRIu64 ")",
			    d->cycle.id);
		return;
	}
	log_info("Suspend requested by pid %d uid %d", c->pid, c->uid);
	reply(c, json_pack("{s:b,s:I}", "ok", 1, "cycle", (json_int_t)d->cycle.id), -1);
	apply(d, (unsigned)r);
}

/* One sentence on why @x's process is or is not jailed. */
static void explain_why(const struct qj_engine_explain *x, char *buf, size_t size)
{
	const struct qj_app *a = x->policy_app;

	if (x->jailed && !a)
		snprintf(buf, size, "in the jail's group %s, which the policy no longer lists",
			 x->app);
	else if (x->jailed && a->exempt)
		snprintf(buf, size, "jailed in app %s, which is exempt: never escalated", x->app);
	else if (x->jailed && (a->match_exe || a->match_cmdline || a->has_match_uid))
		snprintf(buf, size, "jailed in app %s (placed, or matched by its rules at exec)",
			 x->app);
	else if (x->jailed)
		snprintf(buf, size, "jailed in app %s, placed by a launcher", x->app);
	else if (a && a->trust == QJ_TRUST_TRUSTED)
		snprintf(buf, size, "not jailed: matches app %s, which is trusted", x->app);
	else if (a)
		snprintf(buf, size,
			 "not jailed yet: matches app %s; it is jailed at its next exec or "
			 "event resync",
			 x->app);
	else
		snprintf(buf, size, "not jailed: matches no app of the policy");
}

/* The rungs a busy process of @x's app goes through from the next quiesce on. */
static json_t *explain_ladder(const struct qj_policy *p, const struct qj_engine_explain *x)
{
	json_t *a = json_array();

	for (int r = x->first_rung; a && r >= 0;
	     r = qj_ladder_next_rung(p, x->policy_app, r, x->catches_sigxcpu))
		if (json_array_append_new(
			    a, json_pack("{s:s,s:s,s:I}", "name", p->rungs[r].name, "action",
					 qj_action_to_string(p->rungs[r].action), "grace_usec",
					 (json_int_t)p->rungs[r].grace_usec)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/*
 * A process's comm and executable need not be UTF-8, and json_pack() refuses
 * the whole reply for one such string: escaped (\xNN) in place, never dropped.
 */
static void escape_proc_names(char *comm, size_t size, char **exe)
{
	char raw[256];

	snprintf(raw, sizeof(raw), "%s", comm);
	(void)qj_escape_buf(raw, QJ_ESCAPE_UTF8, comm, size); /* 15 bytes of comm: fits */
	if (*exe) {
		char *e = qj_escape(*exe, QJ_ESCAPE_UTF8);

		free(*exe);
		*exe = e; /* NULL on OOM: "exe" null, as when unreadable */
	}
}

static void handle_explain(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req)
{
	struct qj_engine_explain x;
	_cleanup_free_ char *exe = NULL;
	struct qj_proc_stat st;
	char why[256];
	int r;

	if (!d->engine) {
		reply_error(c, -EOPNOTSUPP, "no jail: the daemon runs without its engine");
		return;
	}
	r = qj_engine_explain(d->engine, req->pid, &x);
	if (r < 0) {
		reply_error(c, r, r == -ESRCH ? "no process %d" : "cannot inspect process %d",
			    req->pid);
		return;
	}
	/* What /proc/PID/exe would tell the peer itself: root, the owner, or log readers. */
	if (c->uid != 0 && c->uid != x.uid &&
	    !qj_principals_allow(&d->policy->access_logs, c->uid, c->groups, c->n_groups)) {
		log_notice("Refused explain of pid %d to pid %d uid %d (%s)", req->pid, c->pid,
			   c->uid, c->comm);
		reply_error(c, -EPERM,
			    "uid %d may not explain another user's process: not in access.logs",
			    c->uid);
		return;
	}
	if (qj_proc_stat_read(req->pid, &st) < 0)
		st.comm[0] = '\0';
	(void)qj_proc_exe(req->pid, &exe);
	escape_proc_names(st.comm, sizeof(st.comm), &exe);
	explain_why(&x, why, sizeof(why));
	reply(c,
	      json_pack("{s:b,s:i,s:s,s:s?,s:I,s:b,s:s?,s:s?,s:b,s:s,s:I,s:o,s:{s:b,s:b,s:s?,s:s?,"
			"s:b,s:b,s:o}}",
			"ok", 1, "pid", (int)req->pid, "comm", st.comm, "exe", exe, "uid",
			(json_int_t)x.uid, "jailed", x.jailed, "app", x.app[0] ? x.app : NULL,
			"trust", x.policy_app ? qj_trust_to_string(x.policy_app->trust) : NULL,
			"exempt", x.policy_app && x.policy_app->exempt, "why", why, "strikes",
			(json_int_t)x.strikes, "ladder", explain_ladder(d->policy, &x), "cycle",
			"quiescing", x.quiescing, "tracked", x.tracked, "activity",
			x.tracked ? qj_task_activity_to_string(x.activity) : NULL, "rung",
			x.tracked && x.rung >= 0 ? d->policy->rungs[x.rung].name : NULL,
			"stopped_by_qosjail", x.stopped_by_us, "frozen", x.frozen, "holding",
			x.holding[0] ? qj_json_string_escaped(x.holding) : json_null()),
	      -1);
}

/* Handles a decoded request; *ret_deferred when the reply must wait. */
static void handle(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
		   bool *ret_deferred)
{
	if (!c->hello && req->op != QJ_OP_HELLO) {
		reply_error(c, -EPROTO, "send {\"op\":\"hello\",\"version\":%d} first",
			    QJ_PROTO_VERSION);
		return;
	}
	switch (req->op) {
	case QJ_OP_HELLO:
		if (req->version != QJ_PROTO_VERSION) {
			reply_error(c, -EPROTONOSUPPORT,
				    "protocol version %d not supported (%d is)", req->version,
				    QJ_PROTO_VERSION);
			return;
		}
		c->hello = true;
		reply(c,
		      json_pack("{s:b,s:i,s:s,s:I}", "ok", 1, "version", QJ_PROTO_VERSION, "server",
				"qosjaild " QJ_VERSION, "client_id", (json_int_t)c->id),
		      -1);
		return;
	case QJ_OP_HOLD:
		handle_hold(d, c, req, ret_deferred);
		return;
	case QJ_OP_RELEASE:
		handle_release(d, c, req);
		return;
	case QJ_OP_STATUS:
		handle_status(d, c);
		return;
	case QJ_OP_HOLDS:
		handle_holds(d, c);
		return;
	case QJ_OP_PLACE:
		handle_place(d, c, req);
		return;
	case QJ_OP_SPAWN:
		handle_spawn(d, c, req);
		return;
	case QJ_OP_LOG:
		handle_log(d, c);
		return;
	case QJ_OP_RELOAD:
		handle_reload(d, c, req);
		return;
	case QJ_OP_SUSPEND:
		handle_suspend(d, c);
		return;
	case QJ_OP_EXPLAIN:
		handle_explain(d, c, req);
		return;
	default:
		reply_error(c, -EOPNOTSUPP, "unknown op");
	}
}

static struct client_state *client_state(struct qj_ipc_client *c)
{
	if (!c->userdata)
		c->userdata = calloc(1, sizeof(struct client_state));
	return c->userdata;
}

/* Keeps @req (ownership moves to @cs) until the jail leaves QOS_NONE; stops reading from @c. */
static void defer(struct qj_daemon *d, struct qj_ipc_client *c, struct client_state *cs,
		  struct qj_request *req)
{
	cs->deferred = *req;
	cs->has_deferred = true;
	d->n_deferred++;
	qj_ipc_pause(c, true);
}

static void on_message(void *userdata, struct qj_ipc_client *c, const char *buf, size_t len,
		       bool truncated)
{
	struct qj_daemon *d = userdata;
	struct qj_request req;
	struct client_state *cs;
	bool deferred = false;
	char err[256];
	int r;

	if (truncated) {
		r = -EMSGSIZE;
		snprintf(err, sizeof(err), "message exceeds the limit of %d bytes",
			 QJ_PROTO_MAX_MSG);
	} else {
		r = qj_request_parse(buf, len, &req, err, sizeof(err));
	}
	if (r < 0) {
		log_debug("Bad message from pid %d (%s): %s", c->pid, c->comm, err);
		reply_error(c, r, "%s", err);
		return;
	}
	handle(d, c, &req, &deferred);
	if (!deferred) {
		qj_request_done(&req);
		return;
	}
	cs = client_state(c);
	if (!cs) {
		qj_request_done(&req);
		reply_error(c, -ENOMEM, "out of memory");
		return;
	}
	defer(d, c, cs, &req);
}

static void process_deferred(struct qj_daemon *d)
{
	if (d->n_deferred == 0 || qj_cycle_jail_quiesced(&d->cycle))
		return;
	/*
	 * The request is moved out of the client's state before it is handled: a failed
	 * reply disconnects the client, and on_disconnect() frees that state.  Handling can
	 * also disconnect others (a released hold re-enters apply()): the walk restarts
	 * then; each client is taken at most once, so it ends.
	 */
	for (struct qj_ipc_client *c = qj_ipc_first(d->ipc), *next; c; c = next) {
		struct client_state *cs = c->userdata;
		struct qj_request req;
		bool deferred = false;

		next = qj_ipc_next(c);
		if (!cs || !cs->has_deferred)
			continue;
		req = cs->deferred;
		cs->deferred = (struct qj_request){};
		cs->has_deferred = false;
		d->n_deferred--;
		qj_ipc_pause(c, false);
		handle(d, c, &req, &deferred);
		if (deferred && qj_ipc_alive(c) && c->userdata)
			defer(d, c, c->userdata, &req); /* quiescing again: wait again */
		else
			qj_request_done(&req);
		if (d->n_deferred == 0 || qj_cycle_jail_quiesced(&d->cycle))
			return;
		if (next && !qj_ipc_alive(next))
			next = qj_ipc_first(d->ipc);
	}
}

static void on_disconnect(void *userdata, struct qj_ipc_client *c)
{
	struct qj_daemon *d = userdata;
	struct client_state *cs = c->userdata;
	size_t n;

	if (cs) {
		if (cs->has_deferred) {
			qj_request_done(&cs->deferred);
			d->n_deferred--;
		}
		free(cs);
		c->userdata = NULL;
	}
	n = qj_holds_release_conn(d->holds, c->id, now());
	if (n > 0) {
		log_debug("Client %" PRIu64 " (pid %d) closed, %zu hold(s) released", c->id, c->pid,
			  n);
		if (!d->exiting)
			holds_changed(d);
	}
}

/* Membership is decided while the connecting process is surely there. */
static void on_connect(void *userdata, struct qj_ipc_client *c)
{
	const char *app;

	(void)client_app(userdata, c, &app);
}

static const struct qj_ipc_ops ipc_ops = {
	.on_connect = on_connect,
	.on_message = on_message,
	.on_disconnect = on_disconnect,
};

/* ---- fd sources ---- */

/*
 * SIGHUP: reload the policy file.  While the backend write runs the policy cannot be
 * swapped (the worker reads it); the reload then waits until the write returns
 * (issue 11 finding 10: it used to be refused and lost).  Several SIGHUPs meanwhile
 * make one reload, of the file as it is then.
 */
static void reload_on_sighup(struct qj_daemon *d)
{
	struct qj_diags diags = {};
	struct qj_policy *p = NULL;
	int r;

	if (!d->policy_path) {
		log_notice("SIGHUP: running on built-in defaults, nothing to reload");
		return;
	}
	if (qj_power_running(d->power)) {
		if (!d->reload_pending)
			log_info("SIGHUP during the suspend write: reloading when it returns");
		d->reload_pending = true;
		return;
	}
	d->reload_pending = false;
	r = load_policy(d->policy_path, &diags, &p);
	if (r < 0) {
		log_warning_errno(r, "SIGHUP: reload of %s failed, keeping the running policy: %m",
				  d->policy_path);
		qj_diags_print(&diags, stderr);
	} else if ((r = apply_policy(d, p)) < 0) {
		qj_policy_free(p);
		log_warning_errno(r, "SIGHUP: cannot apply the policy now: %m");
	} else {
		log_info("SIGHUP: reloaded %s", d->policy_path);
	}
	qj_diags_done(&diags);
}

static void on_signal(struct qj_event_source *s, uint32_t events)
{
	struct qj_daemon *d = ((struct fd_source *)s)->d;
	struct signalfd_siginfo si;

	while (read(d->signal_src.fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			reload_on_sighup(d);
			continue;
		}
		log_info("Received %s, restoring the jail and exiting",
			 sigabbrev_np((int)si.ssi_signo));
		d->exiting = true;
	}
}

static void on_timer(struct qj_event_source *s, uint32_t events)
{
	struct qj_daemon *d = ((struct fd_source *)s)->d;
	uint64_t t = now(), v;
	size_t n;

	(void)!read(d->timer_src.fd, &v, sizeof(v));
	d->timer_armed_usec = USEC_INFINITY;
	n = qj_holds_expire(d->holds, t);
	if (n > 0) {
		log_debug("%zu hold(s) expired", n);
		holds_changed(d);
	}
	if (d->interrupt_resend_usec <= t) {
		if (qj_power_running(d->power)) {
			qj_power_interrupt(d->power);
			d->interrupt_resend_usec = t + INTERRUPT_RESEND_USEC;
		} else {
			d->interrupt_resend_usec = USEC_INFINITY;
		}
	}
	qj_ipc_on_timer(d->ipc, t);
	apply(d, qj_cycle_on_timer(&d->cycle, t));
}

static void on_notify(struct qj_event_source *s, uint32_t events)
{
	struct qj_daemon *d = ((struct fd_source *)s)->d;
	int result;

	if (qj_power_collect(d->power, &result) > 0)
		on_backend_done(d, result);
}

static void on_procmon(struct qj_event_source *s, uint32_t events)
{
	struct qj_daemon *d = ((struct fd_source *)s)->d;
	int r = qj_engine_on_procmon(d->engine);

	d->app_gen++; /* exec matching may have jailed a peer */
	if (r < 0)
		log_warning_errno(r, "Process events: %m, ignoring");
}

static int add_source(struct qj_daemon *d, struct fd_source *src, int fd,
		      void (*dispatch)(struct qj_event_source *, uint32_t))
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &src->source };

	src->source.dispatch = dispatch;
	src->d = d;
	src->fd = fd;
	if (fd < 0)
		return -EBADF;
	return epoll_ctl(d->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* ---- lifetime ---- */

static int make_parent_dir(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	char *slash;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int qj_daemon_new(const struct qj_daemon_config *cfg, struct qj_daemon **ret)
{
	struct qj_diags diags = {};
	struct qj_daemon *d;
	sigset_t ss;
	int r;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->epoll_fd = d->signal_src.fd = d->timer_src.fd = d->notify_src.fd = -EBADF;
	d->procmon_src.fd = -EBADF;
	d->timer_armed_usec = USEC_INFINITY;
	d->interrupt_resend_usec = USEC_INFINITY;

	r = load_policy(cfg->policy_path, &diags, &d->policy);
	if (r < 0) {
		qj_diags_print(&diags, stderr);
		qj_diags_done(&diags);
		log_error_errno(r, "Failed to load policy %s: %m", cfg->policy_path);
		goto fail;
	}
	qj_diags_done(&diags);
	d->policy_path = cfg->policy_path ? strdup(cfg->policy_path) : NULL;
	d->state_dir = strdup(cfg->state_dir);
	if ((cfg->policy_path && !d->policy_path) || !d->state_dir) {
		r = -ENOMEM;
		goto fail;
	}

	/* Signals: the loop reads them from a signalfd; SIGUSR1 is only for the worker. */
	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigaddset(&ss, SIGHUP);
	sigaddset(&ss, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0) {
		r = -errno;
		goto fail;
	}
	(void)signal(SIGPIPE, SIG_IGN);
	sigdelset(&ss, SIGUSR1);

	d->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (d->epoll_fd < 0) {
		r = log_error_errno(-errno, "epoll_create1 failed: %m");
		goto fail;
	}
	r = add_source(d, &d->signal_src, signalfd(-1, &ss, SFD_NONBLOCK | SFD_CLOEXEC), on_signal);
	if (r >= 0)
		r = add_source(d, &d->timer_src,
			       timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC),
			       on_timer);
	if (r >= 0)
		r = add_source(d, &d->notify_src, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC),
			       on_notify);
	if (r < 0) {
		log_error_errno(r, "Failed to set up the event loop: %m");
		goto fail;
	}

	r = qj_holds_new(&d->holds);
	if (r < 0)
		goto fail;
	r = qj_power_new(d->policy, d->notify_src.fd, &d->power);
	if (r < 0) {
		log_error_errno(r, "Failed to set up the %s backend: %m",
				qj_backend_to_string(d->policy->backend));
		goto fail;
	}
	log_info("Power backend: %s (%s)", qj_backend_to_string(qj_power_kind(d->power)),
		 qj_power_kind(d->power) == QJ_BACKEND_DRY_RUN ? "no kernel write" :
								 qj_power_path(d->power));

	r = qj_killlog_open(d->policy->log_path, d->policy->log_max_bytes, d->policy->log_keep,
			    &d->killlog);
	if (r < 0) {
		log_error_errno(
			r,
			r == -EPERM ? "Refusing the kill log %s: its directory (and every one "
				      "above it) must be owned by root and not writable by "
				      "group or others, and the log a regular file: %m" :
			r == -ELOOP ? "Refusing the kill log %s: a symlink on its path: %m" :
				      "Failed to open the kill log %s: %m",
			d->policy->log_path);
		goto fail;
	}
	d->membership = cfg->membership;
	if (!cfg->no_engine) {
		r = qj_engine_new(d->policy, d->killlog, d->state_dir, &d->engine);
		if (r < 0) {
			log_error_errno(r, "Failed to set up the jail %s: %m",
					d->policy->cgroup_path);
			goto fail;
		}
	}
	if (d->engine && qj_engine_procmon_fd(d->engine) >= 0) {
		r = add_source(d, &d->procmon_src, qj_engine_procmon_fd(d->engine), on_procmon);
		if (r < 0)
			goto fail;
	}

	r = make_parent_dir(cfg->socket_path);
	if (r >= 0)
		r = qj_ipc_new(d->epoll_fd, cfg->socket_path, &ipc_ops, d, &d->ipc);
	if (r < 0) {
		log_error_errno(r, "Failed to listen on %s: %m", cfg->socket_path);
		goto fail;
	}
	qj_ipc_set_limits(d->ipc, d->policy->max_clients, d->policy->max_clients_per_uid);

	qj_cycle_init(&d->cycle, d->policy->idle_delay_usec, d->policy->retry_initial_usec,
		      d->policy->retry_max_usec, now());
	/* Number on from the kill log, so that a cycle id names one cycle there. */
	if (d->killlog)
		d->cycle.id = qj_killlog_highest_cycle(d->killlog);
	/* Automatic suspend is what qosjaild is for: hold time counts as preventing it. */
	qj_holds_set_suspend_wanted(d->holds, true, now());
	*ret = d;
	return 0;
fail:
	qj_daemon_free(d);
	return r;
}

int qj_daemon_step(struct qj_daemon *d, int timeout_ms)
{
	struct epoll_event evs[32];
	int n;

	if (!d->started) {
		d->started = true;
		log_info("qosjaild %s ready, listening", QJ_VERSION);
		holds_changed(d); /* no holds yet: start the idle delay */
	}
	if (d->exiting)
		return -ECANCELED;
	n = epoll_wait(d->epoll_fd, evs, (int)ARRAY_SIZE(evs), timeout_ms);
	if (n < 0) {
		if (errno == EINTR)
			return 0;
		return log_error_errno(-errno, "epoll_wait failed: %m");
	}
	for (int i = 0; i < n; i++) {
		struct qj_event_source *s = evs[i].data.ptr;

		s->dispatch(s, evs[i].events);
	}
	qj_ipc_reap(d->ipc);
	if (qj_ipc_resume_usec(d->ipc) != USEC_INFINITY)
		rearm_timer(d); /* the listener paused: retry even if no client goes */
	return n;
}

int qj_daemon_run(struct qj_daemon *d)
{
	for (;;) {
		int r = qj_daemon_step(d, -1);

		if (r == -ECANCELED)
			return 0;
		if (r < 0)
			return r;
	}
}

struct qj_daemon *qj_daemon_free(struct qj_daemon *d)
{
	if (!d)
		return NULL;
	d->exiting = true;
	/* Interrupts and joins a running write first: nothing suspends after we left. */
	d->power = qj_power_free(d->power);
	d->ipc = qj_ipc_free(d->ipc);
	if (d->engine) {
		int r = qj_engine_restore(d->engine, "qosjaild exiting");

		if (r < 0)
			log_error_errno(r, "Failed to restore the jail on exit: %m");
		d->engine = qj_engine_free(d->engine);
	}
	d->killlog = qj_killlog_free(d->killlog);
	qj_holds_free(d->holds);
	qj_policy_free(d->policy);
	free(d->policy_path);
	free(d->state_dir);
	for (int *fd = (int[]){ d->signal_src.fd, d->timer_src.fd, d->notify_src.fd, d->epoll_fd },
		 *end = fd + 4;
	     fd < end; fd++)
		if (*fd >= 0)
			(void)close(*fd);
	free(d);
	return NULL;
}
