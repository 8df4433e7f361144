// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * qosjaild's request handlers: one handle_*() per op of the protocol (common/proto.h),
 * the access checks and quotas in front of them, replies, and the hold requests of
 * jailed peers deferred while the jail is quiesced.
 */
#include <fcntl.h>
#include <stddef.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adopt.h"
#include "backend.h"
#include "cycle.h"
#include "daemon-internal.h"
#include "daemon.h"
#include "engine.h"
#include "escape.h"
#include "events.h"
#include "holds.h"
#include "ipc.h"
#include "killlog.h"
#include "log.h"
#include "ops.h"
#include "policy.h"
#include "proc.h"
#include "proto.h"
#include "util.h"

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
	uint64_t t = qj_daemon_now();
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

/* ---- replies ---- */

static void reply(struct qj_ipc_client *c, json_t *msg, int pass_fd)
{
	qj_daemon_reply(c, msg, pass_fd);
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
	qj_daemon_reply_error(c, error, "%s", msg);
}

/* ---- handlers ---- */

/*
 * The quotas a hold request must fit: its app's hold_max and lease cap (@app: the jailed
 * peer's, NULL for anyone else; *timeout is capped to it), and for anyone but root the
 * policy's limits per connection and per uid.  False, the refusal sent, when it does not.
 */
static bool hold_within_quotas(const struct qj_holds *h, const struct qj_policy *p,
			       struct qj_ipc_client *c, const struct qj_request *req,
			       const struct qj_app *app, uint64_t *timeout)
{
	if (app) {
		size_t owned = 0;

		for (size_t i = 0; qj_holds_get(h, i); i++)
			owned += strcmp(qj_holds_get(h, i)->owner.app, app->name) == 0;
		if (!qj_holds_find(h, c->id, req->name) && owned >= app->hold_max) {
			log_notice("Refused hold '%s' to pid %d: app %s may own %u holds",
				   req->name, c->pid, app->name, app->hold_max);
			reply_error(c, -EDQUOT, "app %s may own at most %u holds", app->name,
				    app->hold_max);
			return false;
		}
		if (app->hold_max_timeout_usec &&
		    (*timeout == 0 || *timeout > app->hold_max_timeout_usec))
			*timeout = app->hold_max_timeout_usec;
	}
	/* Quotas (issue 11 finding 6): no user fills the table that root's holds need. */
	if (c->uid != 0 && !qj_holds_find(h, c->id, req->name)) {
		const char *which = NULL;
		unsigned max = 0;

		if (qj_holds_count_conn(h, c->id) >= p->max_holds_per_conn) {
			which = "holds_per_connection";
			max = p->max_holds_per_conn;
		} else if (qj_holds_count_uid(h, c->uid) >= p->max_holds_per_uid) {
			which = "holds_per_uid";
			max = p->max_holds_per_uid;
		}
		if (which) {
			log_debug("Refused hold '%s' to pid %d uid %d: limits.%s (%u)", req->name,
				  c->pid, c->uid, which, max);
			reply_error(c, -EDQUOT, "at most %u holds (limits.%s of the policy)", max,
				    which);
			return false;
		}
	}
	return true;
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
	if (!hold_within_quotas(d->holds, d->policy, c, req, app, &timeout))
		return;
	memcpy(owner.comm, c->comm, sizeof(owner.comm));
	r = qj_holds_acquire(d->holds, c->id, req->name, req->reason, &owner, timeout,
			     qj_daemon_now());
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
			    "names held at once, of which %d and %d are kept for root)",
			    QJ_HOLDS_MAX, QJ_HOLDS_MAX_NAMES, QJ_HOLDS_ROOT, QJ_HOLDS_ROOT_NAMES);
		return;
	}
	if (r < 0) {
		reply_error(c, r, "cannot take hold: %s", strerror(-r));
		return;
	}
	log_debug("Hold '%s' %s by pid %d (%s): %s", req->name, r ? "refreshed" : "taken", c->pid,
		  c->comm, req->reason);
	/* Only what differs from the request's defaults: replies are parsed per request. */
	msg = qj_reply_new_ok();
	if (msg && ((r == 1 && json_object_set_new(msg, "refreshed", json_true())) ||
		    (timeout && json_object_set_new(msg, "timeout_usec",
						    json_integer((json_int_t)timeout))))) {
		json_decref(msg);
		msg = NULL;
	}
	reply(c, msg, -1);
	qj_daemon_holds_changed(d);
}

static void handle_release(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			   bool *ret_deferred)
{
	int r = qj_holds_release(d->holds, c->id, req->name, qj_daemon_now());

	if (r < 0) {
		reply_error(c, r, "this connection holds no '%s'", req->name);
		return;
	}
	reply(c, qj_reply_new_ok(), -1);
	qj_daemon_holds_changed(d);
}

/* place and spawn (access.place and not jailed: the op table): a jail to place into. */
static bool check_may_place(struct qj_daemon *d, struct qj_ipc_client *c)
{
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
static int check_place_target(const struct qj_policy *p, struct qj_ipc_client *c, pid_t pid,
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
		if (qj_policy_may_place_as(p, c->uid, u))
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

static void handle_place(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			 bool *ret_deferred)
{
	_cleanup_close_ int pidfd = -EBADF;
	int r;

	if (!check_may_place(d, c))
		return;
	if (check_place_target(d->policy, c, req->pid, &pidfd) < 0)
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

/* spawn with "child": the caller's waiting child, by the pidfd passed with the request. */
static void spawn_child(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req)
{
	_cleanup_close_ int pidfd = qj_ipc_take_fd(c);
	struct qj_adopt_caller who = { .pid = c->pid, .pidfd = c->pidfd, .uid = c->uid };
	char cgroup[4096], err[512];
	pid_t pid = 0;
	int r;

	r = qj_adopt_child(d->engine, d->policy, &who, req->app, pidfd, &pid, cgroup,
			   sizeof(cgroup), err, sizeof(err));
	d->app_gen++;
	if (r < 0) {
		log_notice("Refused spawn into %s for pid %d uid %d (%s): %s", req->app, c->pid,
			   c->uid, c->comm, err);
		reply_error(c, r, "%s", err);
		return;
	}
	log_info("Placed pid %d, the waiting child of pid %d uid %d, into app %s", pid, c->pid,
		 c->uid, req->app);
	reply(c,
	      json_pack("{s:b,s:s,s:i,s:s}", "ok", 1, "app", req->app, "pid", pid, "cgroup",
			cgroup),
	      -1);
}

static void handle_spawn(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			 bool *ret_deferred)
{
	_cleanup_close_ int fd = -EBADF;
	int r;

	if (!check_may_place(d, c))
		return;
	if (req->child) {
		spawn_child(d, c, req);
		return;
	}
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

static void handle_log(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
		       bool *ret_deferred)
{
	_cleanup_close_ int fd = -EBADF;

	fd = qj_killlog_open_reader(d->killlog);
	if (fd < 0) {
		reply_error(c, fd, "cannot open the kill log %s: %s", d->policy->log_path,
			    strerror(-fd));
		return;
	}
	/* A read-only reopen of the daemon's own descriptor: no path lookup as root. */
	reply(c, json_pack("{s:b,s:s}", "ok", 1, "path", d->policy->log_path), fd);
}

static void handle_reload(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			  bool *ret_deferred)
{
	struct qj_diags diags = {};
	const char *path = req->path ? req->path : d->policy_path;
	char *text = NULL;
	size_t len = 0;
	int r;

	if (req->path && c->uid != 0) {
		/* Reading an arbitrary file as root on behalf of a user would leak it. */
		reply_error(c, -EPERM, "only root may reload from another file");
		return;
	}
	if (!path) {
		reply_error(c, -EINVAL, "running on built-in defaults: name a policy file");
		return;
	}
	r = qj_daemon_reload(d, path, &diags);
	if (r == -EINVAL && diags.n > 0) {
		FILE *f = open_memstream(&text, &len);

		if (f) {
			qj_diags_print(&diags, f);
			(void)fclose(f);
		}
		log_warning("Reload of %s failed, keeping the running policy:\n%s", path,
			    text ? text : "");
		reply_error(c, r, "invalid policy:\n%s", text ? text : "");
		free(text);
	} else if (r == -EBUSY) {
		reply_error(c, r,
			    "cannot apply %s during the suspend write, keeping the running "
			    "policy",
			    path);
	} else if (r < 0) {
		log_warning_errno(r, "Reload of %s failed, keeping the running policy: %m", path);
		reply_error(c, r, "cannot load %s: %s", path, strerror(-r));
	} else {
		log_info("Reloaded policy %s (requested by pid %d uid %d)", d->policy_path, c->pid,
			 c->uid);
		reply(c, json_pack("{s:b,s:s}", "ok", 1, "policy", d->policy_path), -1);
	}
	qj_diags_done(&diags);
}

/*
 * The caller consents to the notify rung: it handles SIGXCPU as "the system
 * wants to suspend".  Only a jailed process, for itself: a consent it could give
 * for another process would let one app choose another's rung.
 */
static void handle_notify(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			  bool *ret_deferred)
{
	const char *app = NULL;
	int r;

	r = client_app(d, c, &app);
	if (r <= 0 || !app[0]) {
		reply_error(c, -EPERM, "%s: only a jailed process consents to notifications",
			    r == 0 ? "not jailed" : "cannot tell whether it is jailed");
		return;
	}
	if (!d->engine || c->pidfd < 0) {
		reply_error(c, -ESRCH, "the caller cannot be told apart from a reused pid");
		return;
	}
	r = qj_engine_notify_consent(d->engine, c->pid, c->pidfd);
	if (r < 0) {
		reply_error(c, r, "%s",
			    r == -ENOSPC ? "this app has as many consents as it may keep (256)" :
			    r == -EPERM	 ? "only a jailed process consents" :
					   "the caller is gone");
		return;
	}
	log_info("Pid %d of app %s consents to the notify rung", c->pid, app);
	reply(c, json_pack("{s:b,s:s}", "ok", 1, "app", app), -1);
}

/* explain lives in explain.c (its reads leave the loop thread); the op table's entry. */
static void handle_explain(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			   bool *ret_deferred)
{
	qj_explainer_request(&d->explainer, c, req->pid);
}

static void handle_hello(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			 bool *ret_deferred)
{
	if (req->version != QJ_PROTO_VERSION) {
		reply_error(c, -EPROTONOSUPPORT, "protocol version %d not supported (%d is)",
			    req->version, QJ_PROTO_VERSION);
		return;
	}
	c->hello = true;
	reply(c,
	      json_pack("{s:b,s:i,s:s,s:I}", "ok", 1, "version", QJ_PROTO_VERSION, "server",
			"qosjaild " QJ_VERSION, "client_id", (json_int_t)c->id),
	      -1);
}

typedef void handler_fn(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			bool *ret_deferred);

#define ANYONE                          \
	{                               \
		.who = QJ_OP_WHO_ANYONE \
	}
#define LISTED(list)                                                                              \
	{                                                                                         \
		.who = QJ_OP_WHO_POLICY, .principals = offsetof(struct qj_policy, access_##list), \
		.name = #list                                                                     \
	}
/* Designated: a field a row leaves out is zero, which refuses. */
#define RULE(acc, hel, jail)                                \
	{                                                   \
		.access = acc, .hello = hel, .jailed = jail \
	}
#define RULE_FLAGGED(acc, hel, jail, facc, fjail)                                    \
	{                                                                            \
		.access = acc, .hello = hel, .jailed = jail, .flagged_access = facc, \
		.flagged_jailed = fjail                                              \
	}

/*
 * THE op table: every op of the protocol (common/proto.h), its handler and the rule
 * checked in front of it (ops.h): who may send it, whether hello must come first, what a
 * jailed caller gets.  An op without a row has no handler and an unset rule: refused.
 * The checks that depend on the request's target (explain: the process's owner; place:
 * the process's uids; reload from another file: root) stay in the handlers.
 */
static const struct {
	handler_fn *handler;
	struct qj_op_rule rule;
} ops[_QJ_OP_MAX] = {
	[QJ_OP_HELLO] = { handle_hello, RULE(ANYONE, false, QJ_OP_JAILED_AS_ANYONE) },
	/* A jailed peer's hold waits while the jail is quiesced, within its app's quota. */
	[QJ_OP_HOLD] = { handle_hold, RULE(LISTED(hold), true, QJ_OP_JAILED_HANDLER) },
	[QJ_OP_RELEASE] = { handle_release, RULE(ANYONE, true, QJ_OP_JAILED_AS_ANYONE) },
	[QJ_OP_STATUS] = { qj_listing_status, RULE(ANYONE, true, QJ_OP_JAILED_AS_ANYONE) },
	[QJ_OP_HOLDS] = { qj_listing_holds, RULE(ANYONE, true, QJ_OP_JAILED_AS_ANYONE) },
	[QJ_OP_PLACE] = { handle_place, RULE(LISTED(place), true, QJ_OP_JAILED_REFUSED_BUT_ROOT) },
	[QJ_OP_SPAWN] = { handle_spawn, RULE(LISTED(place), true, QJ_OP_JAILED_REFUSED_BUT_ROOT) },
	[QJ_OP_LOG] = { handle_log, RULE(LISTED(logs), true, QJ_OP_JAILED_AS_ANYONE) },
	[QJ_OP_RELOAD] = { handle_reload, RULE(LISTED(reload), true, QJ_OP_JAILED_AS_ANYONE) },
	[QJ_OP_SUSPEND] = { qj_cycle_op_suspend,
			    RULE(LISTED(suspend), true, QJ_OP_JAILED_AS_ANYONE) },
	[QJ_OP_EXPLAIN] = { handle_explain, RULE(ANYONE, true, QJ_OP_JAILED_AS_ANYONE) },
	[QJ_OP_NOTIFY] = { handle_notify, RULE(ANYONE, true, QJ_OP_JAILED_ONLY) },
	[QJ_OP_METRICS] = { qj_listing_metrics, RULE(ANYONE, true, QJ_OP_JAILED_AS_ANYONE) },
	[QJ_OP_HISTORY] = { qj_listing_history, RULE(ANYONE, true, QJ_OP_JAILED_AS_ANYONE) },
	/* Anyone may watch; "delay" (a delay hold) is access.delay and never a jailed peer. */
	[QJ_OP_SUBSCRIBE] = { qj_cycle_op_subscribe,
			      RULE_FLAGGED(ANYONE, true, QJ_OP_JAILED_AS_ANYONE, LISTED(delay),
					   QJ_OP_JAILED_REFUSED) },
	/* Only a delay hold has anything to be ready with: the handler says ENOENT. */
	[QJ_OP_READY] = { qj_cycle_op_ready, RULE(ANYONE, true, QJ_OP_JAILED_AS_ANYONE) },
};

/* Handles a decoded request; *ret_deferred when the reply must wait.  The one check. */
static void handle(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
		   bool *ret_deferred)
{
	struct qj_op_peer peer = {
		.uid = c->uid, .groups = c->groups, .n_groups = c->n_groups, .hello = c->hello
	};
	bool flagged = req->op == QJ_OP_SUBSCRIBE && req->delay;
	const char *name = qj_op_to_string(req->op), *why, *list, *app;
	char what[128];
	int r;

	if (req->op < 0 || req->op >= _QJ_OP_MAX) {
		reply_error(c, -EOPNOTSUPP, "unknown op");
		return;
	}
	if (qj_op_rule_needs_jail(&ops[req->op].rule, flagged))
		peer.jailed = client_app(d, c, &app);
	r = qj_op_rule_check(&ops[req->op].rule, d->policy, &peer, flagged, &why, &list);
	if (r == 0 && !ops[req->op].handler)
		r = -EPERM, why = "the daemon has no handler for this request", list = "";
	if (r == -EPROTO) {
		reply_error(c, r, "send {\"op\":\"hello\",\"version\":%d} first", QJ_PROTO_VERSION);
		return;
	}
	if (r < 0) {
		snprintf(what, sizeof(what), why, list);
		log_notice("Refused %s%s to pid %d uid %d (%s): %s", name,
			   flagged ? " with a delay hold" : "", c->pid, c->uid, c->comm, what);
		reply_error(c, r, "uid %d may not %s%s: %s", c->uid, name,
			    flagged ? " with a delay hold" : "", what);
		return;
	}
	ops[req->op].handler(d, c, req, ret_deferred);
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

static void message(struct qj_daemon *d, struct qj_ipc_client *c, const char *buf, size_t len,
		    bool truncated)
{
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

/*
 * What the request posted (the hold count changed, a suspend asked for) runs before the
 * next request of the batch is read: a pipelined status sees its hold's effect.
 */
static void on_message(void *userdata, struct qj_ipc_client *c, const char *buf, size_t len,
		       bool truncated)
{
	struct qj_daemon *d = userdata;

	message(d, c, buf, len, truncated);
	qj_loop_flush(d->loop);
}

void qj_daemon_process_deferred(struct qj_daemon *d)
{
	if (d->n_deferred == 0 || qj_cycle_jail_quiesced(&d->cycle))
		return;
	/*
	 * The request is moved out of the client's state before it is handled: a failed
	 * reply disconnects the client, and on_disconnect() frees that state.  Should the
	 * walk's next client be gone meanwhile, the walk restarts; each client is taken at
	 * most once, so it ends.  What a handler posts runs after the walk.
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
	qj_events_forget(d->events, c);
	qj_explainer_forget(&d->explainer, c);
	n = qj_holds_release_conn(d->holds, c->id, qj_daemon_now());
	if (n > 0) {
		log_debug("Client %" PRIu64 " (pid %d) closed, %zu hold(s) released", c->id, c->pid,
			  n);
		if (!d->exiting)
			qj_daemon_holds_changed(d);
	}
}

/* Membership is decided while the connecting process is surely there. */
static void on_connect(void *userdata, struct qj_ipc_client *c)
{
	const char *app;

	(void)client_app(userdata, c, &app);
}

const struct qj_ipc_ops qj_daemon_ipc_ops = {
	.on_connect = on_connect,
	.on_message = on_message,
	.on_disconnect = on_disconnect,
};
