/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * qosjaild's manager: one epoll loop (signalfd, timerfd armed only when
 * something is pending, the IPC socket, the engine's procmon fd, the power
 * worker's eventfd), the request handlers and the suspend cycle's effects.
 */
#ifndef QJ_DAEMON_H
#define QJ_DAEMON_H

struct qj_daemon;

struct qj_daemon_config {
	const char *policy_path; /* NULL: built-in defaults */
	const char *socket_path;
	const char *state_dir;
};

/* Loads the policy (diagnostics printed to stderr), sets up everything. */
int qj_daemon_new(const struct qj_daemon_config *cfg, struct qj_daemon **ret);
/* Runs until SIGTERM/SIGINT; returns 0 or negative errno. */
int qj_daemon_run(struct qj_daemon *d);
/* Restores the jail (nothing left stopped), frees. */
struct qj_daemon *qj_daemon_free(struct qj_daemon *d);

#endif
