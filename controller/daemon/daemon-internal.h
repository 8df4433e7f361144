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
#include "ipc.h"
#include "notify.h"
#include "metrics.h"
#include "policy.h"
#include "util.h"

struct qj_engine;
struct qj_explain_pending;
struct qj_events;
struct qj_holds;
struct qj_killlog;
struct qj_logind;
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

	int epoll_fd;
	struct fd_source signal_src;
	struct fd_source timer_src;
	struct fd_source notify_src;
	struct fd_source procmon_src;
	struct fd_source watchdog_src; /* WATCHDOG=1 every half WatchdogSec=; -EBADF: none */
	struct fd_source procread_src; /* answers of cmdline reads done off the loop thread */
	struct qj_explain_pending *explains; /* explain requests waiting for a cmdline */
	json_t *waiters_cache; /* status's waiting_on_jail, made at waiters_usec */
	uint64_t waiters_usec;
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

static inline uint64_t qj_daemon_now(void)
{
	return now_usec(CLOCK_MONOTONIC);
}

/* Carries out the cycle's @actions (QJ_CYCLE_DO_*) and re-arms the timer. */
void qj_daemon_apply(struct qj_daemon *d, unsigned actions);
/* darkwake.c: QJ_CYCLE_DO_KEEP, QJ_CYCLE_DO_QUIESCE_KEPT, a DO_RESTORE of a kept jail. */
void qj_daemon_dark_keep(struct qj_daemon *d);
void qj_daemon_dark_quiesce(struct qj_daemon *d);
void qj_daemon_dark_restore(struct qj_daemon *d);
/* The hold count changed: tells the cycle and carries out what it says. */
void qj_daemon_holds_changed(struct qj_daemon *d);
/*
 * Loads @path and makes it the running policy, all or nothing (SIGHUP and the reload
 * request both come here).  Returns 0, -EBUSY while the backend write runs (the policy
 * cannot be swapped under the worker), -EINVAL with @diags filled for an invalid
 * policy, or another -errno; the running policy stays on any error.
 */
int qj_daemon_reload(struct qj_daemon *d, const char *path, struct qj_diags *diags);

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
/*
 * reply.c: sends @msg (taken; NULL: out of memory, @c is disconnected) with @pass_fd
 * (-1: none); one too large gets an error reply instead.
 */
void qj_daemon_reply(struct qj_ipc_client *c, json_t *msg, int pass_fd);
void qj_daemon_reply_error(struct qj_ipc_client *c, int error, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * explain.c: the explain request.  Access is checked before anything is read for the
 * caller; a cmdline is read off the loop thread while @c waits (paused).
 */
void qj_daemon_explain(struct qj_daemon *d, struct qj_ipc_client *c, pid_t pid);
/* @c is going: its explain waiting for a read is dropped. */
void qj_daemon_explain_forget(struct qj_daemon *d, struct qj_ipc_client *c);

/*
 * waiting.c: trusted work waiting on the jail (flock/fcntl locks its processes hold,
 * FUSE it serves): a JSON array for status (@only 0) and explain (@only the pid), and
 * a kill log record and a log line for each when a cycle suspends.
 */
json_t *qj_daemon_waiters_json(struct qj_daemon *d, pid_t only); /* a reference */
void qj_daemon_log_waiters(struct qj_daemon *d);

#endif
