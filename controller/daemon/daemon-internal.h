/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What daemon.c (the loop, the cycle's effects, reload) and requests.c (the request
 * handlers) share.  Private to controller/daemon/.
 */
#ifndef QJ_DAEMON_INTERNAL_H
#define QJ_DAEMON_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cycle.h"
#include "daemon.h"
#include "explain.h"
#include "ipc.h"
#include "loop.h"
#include "notify.h"
#include "metrics.h"
#include "policy.h"
#include "proto.h"
#include "reply.h"
#include "util.h"

struct qj_engine;
struct qj_events;
struct qj_holds;
struct qj_killlog;
struct qj_logind;
struct qj_logind_idle;
struct qj_power;

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
	struct qj_notify notify; /* the service manager's readiness and status */
	struct qj_metrics metrics;
	char *metrics_path; /* --metrics-file: written after each cycle; NULL: none */
	int metrics_dfd; /* its directory, held once opened safely; -EBADF until then */
	char *metrics_base;
	uint64_t quiesce_begin_usec;
	struct qj_events *events; /* subscriptions and delay holds */
	struct qj_logind *logind; /* NULL: no bridge (off in the policy, or no system bus) */
	struct qj_logind_idle *logind_idle; /* NULL: logind.idle_hint off, or no system bus */

	struct qj_loop *loop;
	struct qj_loop_work apply_work; /* runs the cycle's actions in @actions */
	struct qj_loop_work holds_work; /* the hold count changed: tell the cycle */
	struct qj_loop_work delays_work; /* the delay holds may all be ready */
	unsigned actions; /* QJ_CYCLE_DO_* not yet carried out */
	struct fd_source signal_src;
	struct qj_loop_timer timer; /* the cycle's, the holds', the bridges' deadlines */
	struct fd_source notify_src;
	struct fd_source procmon_src;
	struct fd_source watchdog_src; /* WATCHDOG=1 every half WatchdogSec=; -EBADF: none */
	struct fd_source procread_src; /* answers of cmdline reads done off the loop thread */
	struct qj_explainer explainer; /* explain requests: what they read, those waiting */
	json_t *waiters_cache; /* status's waiting_on_jail, made at waiters_usec */
	uint64_t waiters_usec;
	uint64_t interrupt_resend_usec;

	bool started;
	bool exiting;
	bool reload_pending; /* a SIGHUP came during the backend write */
	int exit_code;
	size_t n_deferred; /* clients with a deferred hold request */
	uint64_t app_gen; /* bumped whenever jail membership may have changed */
	int (*membership)(uint64_t client_id, pid_t pid, const char **ret_app); /* no engine */
};

static inline uint64_t qj_daemon_now(void)
{
	return now_usec(CLOCK_MONOTONIC);
}

/*
 * Posts the cycle's @actions (QJ_CYCLE_DO_*): they are carried out, with what they lead
 * to, in one loop once the current dispatch returns, and the timer re-armed.
 */
static inline void qj_daemon_apply(struct qj_daemon *d, unsigned actions)
{
	d->actions |= actions;
	qj_loop_post(d->loop, &d->apply_work);
}

/* The hold count changed: posts telling the cycle, and carrying out what it says. */
static inline void qj_daemon_holds_changed(struct qj_daemon *d)
{
	qj_loop_post(d->loop, &d->holds_work);
}
/*
 * darkwake.c: QJ_CYCLE_DO_KEEP, QJ_CYCLE_DO_QUIESCE_KEPT (each returns the actions it
 * leads to), a DO_RESTORE of a kept jail.  They call nothing of daemon.c: the metrics
 * file is written by the caller.
 */
unsigned qj_daemon_dark_keep(struct qj_daemon *d);
unsigned qj_daemon_dark_quiesce(struct qj_daemon *d);
void qj_daemon_dark_restore(struct qj_daemon *d);
/*
 * Loads @path and makes it the running policy, all or nothing (SIGHUP and the reload
 * request both come here).  Returns 0, -EBUSY while the backend write runs (the policy
 * cannot be swapped under the worker), -EINVAL with @diags filled for an invalid
 * policy, or another -errno; the running policy stays on any error.
 */
int qj_daemon_reload(struct qj_daemon *d, const char *path, struct qj_diags *diags);

static inline struct qj_metrics_view qj_daemon_metrics_view(struct qj_daemon *d)
{
	return (struct qj_metrics_view){ .holds = d->holds,
					 .engine = d->engine,
					 .cycle = &d->cycle,
					 .metrics = &d->metrics,
					 .power = d->power,
					 .killlog = d->killlog };
}

/*
 * policy-load.c: loads @path (NULL: the built-in defaults) as the daemon runs it: group
 * names resolved (missing ones logged and ignored), the default jail path placed.
 */
int qj_daemon_load_policy(const char *path, struct qj_diags *diags, struct qj_policy **ret);
/*
 * Starts, stops or re-decides the logind bridge as the running policy says (a bridge
 * whose bus went away is started again: a reload is how an operator brings it back).
 */
void qj_daemon_logind_follow_policy(struct qj_daemon *d);

/* Writes the metrics text to --metrics-file, if any; a failure is logged, not fatal. */
void qj_daemon_write_metrics(struct qj_daemon *d);
/*
 * Jail membership of any process, fail-closed: 1 and *ret_app when jailed, 0 when not,
 * negative errno when it cannot be known (callers treat it as jailed).
 */
int qj_daemon_pid_app(struct qj_daemon *d, pid_t pid, const char **ret_app);

/* requests.c: the IPC server's callbacks, and the hold requests deferred by a quiesce. */
extern const struct qj_ipc_ops qj_daemon_ipc_ops;
void qj_daemon_process_deferred(struct qj_daemon *d);
/* listings.c: the read-only listings' handlers (the op table's rows in requests.c). */
void qj_listing_status(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
		       bool *ret_deferred);
void qj_listing_holds(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
		      bool *ret_deferred);
void qj_listing_metrics(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			bool *ret_deferred);
void qj_listing_history(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			bool *ret_deferred);

/* cycle-ops.c: suspend, subscribe and ready (the op table's rows in requests.c). */
void qj_cycle_op_suspend(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			 bool *ret_deferred);
void qj_cycle_op_subscribe(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
			   bool *ret_deferred);
void qj_cycle_op_ready(struct qj_daemon *d, struct qj_ipc_client *c, struct qj_request *req,
		       bool *ret_deferred);

/*
 * waiting.c: trusted work waiting on the jail (flock/fcntl locks its processes hold,
 * FUSE it serves): a JSON array for status (@only 0) and explain (@only the pid), and
 * a kill log record and a log line for each when a cycle suspends.
 */
json_t *qj_daemon_waiters_json(struct qj_daemon *d, pid_t only); /* a reference */
void qj_daemon_log_waiters(struct qj_daemon *d);

#endif
