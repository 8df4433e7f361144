/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libqosjail: the client side of qosjaild.  Every function returns 0 (or a
 * positive count) on success and a negative errno on failure.  Link with
 * `pkg-config --cflags --libs qosjail`.  See libqosjail(3).
 *
 * A connection is not thread-safe: use one per thread, or serialise calls.
 * Holds belong to the connection that took them and end when it closes.
 */
#ifndef QOSJAIL_H
#define QOSJAIL_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Default daemon socket; $QOSJAIL_SOCKET overrides it when qj_open() gets NULL. */
#define QJ_DEFAULT_SOCKET "/run/qosjail/qosjail.sock"

/* qj_hold() flags. */
#define QJ_HOLD_NONBLOCK (1u << 0) /* jailed callers: -EAGAIN instead of waiting for resume */
/* qj_subscribe() flags. */
#define QJ_SUBSCRIBE_DELAY (1u << 0) /* a delay hold: the cycle waits for qj_ready() */

struct qj_conn;

/**
 * qj_version() - Version of the library.
 *
 * Return: a static string such as "0.1.0".
 */
const char *qj_version(void);

/**
 * qj_open() - Connect to qosjaild and perform the version handshake.
 * @socket_path: daemon socket; NULL for $QOSJAIL_SOCKET or QJ_DEFAULT_SOCKET.
 * @ret: the new connection, written only on success.
 *
 * Return: 0, -ENOENT/-ECONNREFUSED when no daemon listens, -EPROTONOSUPPORT
 * when the daemon speaks another protocol version, other negative errno.
 */
int qj_open(const char *socket_path, struct qj_conn **ret);

/**
 * qj_close() - Close a connection; every hold it owns is released.
 * @conn: connection or NULL.
 *
 * Return: NULL.
 */
struct qj_conn *qj_close(struct qj_conn *conn);

/**
 * qj_fd() - The connection's socket, e.g. to poll for the daemon going away.
 * @conn: connection.
 *
 * Return: the file descriptor (owned by @conn).
 */
int qj_fd(const struct qj_conn *conn);

/**
 * qj_last_error() - The daemon's message for the last failed request.
 * @conn: connection.
 *
 * Return: a string owned by @conn, valid until the next call; "" when none.
 */
const char *qj_last_error(const struct qj_conn *conn);

/**
 * qj_hold() - Keep the system awake until released, timed out or closed.
 * @conn: connection.
 * @name: hold name (1-128 bytes); holding it again refreshes reason and timeout.
 * @reason: free text for operators (1-512 bytes).
 * @timeout_usec: release automatically after this long; 0 for never.
 * @flags: 0 or QJ_HOLD_NONBLOCK.
 *
 * A jailed caller's request waits while the system is suspending (its app is
 * at QOS_NONE) and is answered after resume, unless QJ_HOLD_NONBLOCK.
 *
 * Return: 0, -EPERM (access.hold), -EAGAIN (nonblocking, suspending),
 * -EDQUOT (app hold limit), -EINVAL, other negative errno.
 */
int qj_hold(struct qj_conn *conn, const char *name, const char *reason, uint64_t timeout_usec,
	    unsigned flags);

/**
 * qj_release() - Release a hold taken on this connection.
 * @conn: connection.
 * @name: hold name.
 *
 * Return: 0, -ENOENT when this connection holds no such name.
 */
int qj_release(struct qj_conn *conn, const char *name);

/**
 * qj_status() - Daemon state as JSON text.
 * @conn: connection.
 * @ret_json: malloc()ed JSON object (state, cycle, backend, last result,
 *	counters, jail counts, holds with owners and ages); free() it.
 *
 * Return: 0 or negative errno.
 */
int qj_status(struct qj_conn *conn, char **ret_json);

/**
 * qj_holds() - Live holds and per-name statistics as JSON text.
 * @conn: connection.
 * @ret_json: malloc()ed JSON object with "holds" and "stats" (active_count,
 *	event_count, expire_count, total_time_usec, max_time_usec,
 *	last_change_usec, prevent_suspend_time_usec); free() it.
 *
 * Return: 0 or negative errno.
 */
int qj_holds(struct qj_conn *conn, char **ret_json);

/**
 * qj_metrics() - The daemon's counters as Prometheus text.
 * @conn: connection.
 * @ret_text: malloc()ed text in the Prometheus text exposition format 0.0.4
 *	(holds and time held by name, cycles by result, the quiesce duration
 *	histogram, actions by app and rung, jail tasks by app, backend errors);
 *	free() it.  The same text the daemon writes with --metrics-file.
 *
 * Return: 0 or negative errno.
 */
int qj_metrics(struct qj_conn *conn, char **ret_text);

/**
 * qj_hold_history() - Recent active periods of hold names as JSON text.
 * @conn: connection.
 * @ret_json: malloc()ed JSON object: "now_usec" (CLOCK_REALTIME), "periods"
 *	(name, start_usec, end_usec, expired; the newest ended ones the daemon
 *	kept, oldest first) and "active" (name, start_usec of names held now);
 *	free() it.
 *
 * Return: 0 or negative errno.
 */
int qj_hold_history(struct qj_conn *conn, char **ret_json);

/**
 * qj_explain() - Why a process is or is not jailed, and what the next quiesce
 *	would do to it, as JSON text.
 * @conn: connection.
 * @pid: the process.
 * @ret_json: malloc()ed JSON object (pid, comm, exe, uid, jailed, app, trust,
 *	exempt, why, strikes, ladder: the rungs a busy process goes through,
 *	cycle: what the current quiesce knows of it); free() it.
 *
 * Return: 0, -ESRCH for no such process, -EPERM for another user's process
 * unless the caller is root or may read logs, or negative errno.
 */
int qj_explain(struct qj_conn *conn, pid_t pid, char **ret_json);

/**
 * qj_place() - Move a running process into an app's jail group.
 * @conn: connection (access.place).
 * @app: app name from the policy.
 * @pid: process.
 *
 * Return: 0, -EPERM, -ENOENT (unknown app), -ESRCH (no such process).
 */
int qj_place(struct qj_conn *conn, const char *app, pid_t pid);

/**
 * qj_spawn() - Start a program inside an app's jail group.
 * @conn: connection (access.place).
 * @app: app name from the policy.
 * @argv: NULL-terminated arguments; argv[0] is looked up in $PATH.
 * @ret_pid: the child's pid (it is the caller's child: wait for it).
 * @ret_pidfd: a pidfd of the child, or NULL to not keep one.
 *
 * The daemon hands over the group's cgroup2 directory fd and the child is
 * created there with clone3(CLONE_INTO_CGROUP).  A caller that may not do that
 * (not root: EACCES) forks a child that waits; its pidfd goes to the daemon,
 * which moves it when it is the caller's own child, and the child execs only
 * once its /proc/self/cgroup names the jail.  Either way the program never runs
 * outside the jail.  It inherits the caller's stdio and environment.
 *
 * Return: 0, -EPERM, -ENOENT (unknown app, or program not found), -EIO (the
 * child was not in the jail: not executed), the exec error of the child, other
 * negative errno.
 */
int qj_spawn(struct qj_conn *conn, const char *app, char *const argv[], pid_t *ret_pid,
	     int *ret_pidfd);

/**
 * qj_suspend() - Start a suspend cycle now instead of after idle_delay.
 * @conn: connection (access.suspend).
 *
 * Return: 0 (cycle started), -EBUSY (holds exist), -EALREADY (a cycle
 * runs), -EPERM.
 */
int qj_suspend(struct qj_conn *conn);

/**
 * qj_notify_consent() - Ask for the notification before a stop.
 * @conn: connection of a jailed process
 *
 * The calling process declares that it handles SIGXCPU as "the system wants
 * to suspend" (it winds down and blocks).  The daemon then may send it SIGXCPU
 * first when it is busy at a suspend, before stronger rungs; without consent
 * (here or the policy key notify) a busy process is never sent SIGXCPU, which
 * is also the CPU-limit signal.  Kept until the process exits.
 *
 * Return: 0, -EPERM when the caller is not jailed, or a negative errno.
 */
int qj_notify_consent(struct qj_conn *conn);

/**
 * qj_reload() - Reload the policy atomically.
 * @conn: connection (access.reload).
 * @path: another policy file (root only), or NULL for the running one's file.
 *
 * On an invalid policy the running one stays; qj_last_error() has the
 * FILE:LINE:COL diagnostics.
 *
 * Return: 0, -EINVAL (invalid policy), -EPERM, other negative errno.
 */
int qj_reload(struct qj_conn *conn, const char *path);

/**
 * qj_subscribe() - Receive the suspend cycle's events on this connection.
 * @conn: connection; use one for events alone, or call qj_event_next() often: events
 *	that arrive while another call waits for its reply are kept for it.
 * @flags: 0, or QJ_SUBSCRIBE_DELAY for a delay hold (access.delay, not jailed): each
 *	cycle then waits after its "quiescing" event until qj_ready() or the policy's
 *	suspend.max_delay, whichever comes first.
 *
 * Events, in order: {"event":"quiescing","cycle":N,"delay":B} before the jail is
 * quiesced, {"event":"suspending","cycle":N} before the system is suspended,
 * {"event":"resumed","cycle":N,"result":R} when the cycle ended and the jail runs
 * again (R: suspended, aborted, interrupted, failed) with "jail": "restored" or
 * "kept-quiesced" (suspend.dark_wake), then {"event":"restored","cycle":N} when a
 * kept jail runs again.  A subscriber that leaves 64 KiB
 * of events unread is disconnected.
 *
 * Return: 0, -EEXIST (subscribed already), -EPERM (delay hold refused).
 */
int qj_subscribe(struct qj_conn *conn, unsigned flags);

/**
 * qj_event_next() - The next cycle event of a subscribed connection.
 * @conn: connection.
 * @timeout_ms: how long to wait; -1 for ever, 0 not at all.
 * @ret_json: malloc()ed JSON object of the event; free() it.
 *
 * Return: 0, -ETIMEDOUT, -ECONNRESET when the daemon closed the connection.
 */
int qj_event_next(struct qj_conn *conn, int timeout_ms, char **ret_json);

/**
 * qj_ready() - A delay hold is done with its work for cycle @cycle.
 * @conn: connection subscribed with QJ_SUBSCRIBE_DELAY.
 * @cycle: the "cycle" of the "quiescing" event.
 *
 * Return: 0, -ESTALE when that cycle no longer waits (max_delay passed), -ENOENT.
 */
int qj_ready(struct qj_conn *conn, uint64_t cycle);

/**
 * qj_kill_log_open() - Get a read-only fd of the kill log.
 * @conn: connection (access.logs).
 * @ret_fd: the fd (JSON Lines); close() it.
 *
 * Return: 0, -EPERM, -ENOENT (no log yet), other negative errno.
 */
int qj_kill_log_open(struct qj_conn *conn, int *ret_fd);

#ifdef __cplusplus
}
#endif

#endif
