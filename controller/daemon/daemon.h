/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * qosjaild's manager: one epoll loop (signalfd, timerfd armed only when
 * something is pending, the IPC socket, the engine's procmon fd, the power
 * worker's eventfd), the request handlers and the suspend cycle's effects.
 */
#ifndef QJ_DAEMON_H
#define QJ_DAEMON_H

struct qj_daemon;

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct qj_daemon_config {
	const char *policy_path; /* NULL: built-in defaults */
	const char *socket_path;
	const char *state_dir;
	/*
	 * Tests and the request-handler fuzzer (tests/fuzz/fuzz-daemon.c): no jail engine
	 * (place and spawn answer EOPNOTSUPP), and a peer's jail membership comes from
	 * @membership (1 and *ret_app when jailed, 0, or negative errno) instead.
	 */
	bool no_engine;
	/* The metrics text goes there after each cycle (node_exporter's textfile); NULL: none. */
	const char *metrics_path;
	int (*membership)(uint64_t client_id, pid_t pid, const char **ret_app);
};

/* Loads the policy (diagnostics printed to stderr), sets up everything. */
int qj_daemon_new(const struct qj_daemon_config *cfg, struct qj_daemon **ret);
/* Runs until SIGTERM/SIGINT; returns 0 or negative errno. */
int qj_daemon_run(struct qj_daemon *d);
/*
 * One round of the loop (the first call also starts it): waits up to @timeout_ms (-1:
 * forever) and dispatches.  Returns the number of events, 0 on timeout, -ECANCELED once
 * SIGTERM/SIGINT came, or negative errno.
 */
int qj_daemon_step(struct qj_daemon *d, int timeout_ms);
/* Restores the jail (nothing left stopped), frees. */
struct qj_daemon *qj_daemon_free(struct qj_daemon *d);
/*
 * A thread reads /proc for the daemon and cannot be stopped (a read stuck on another
 * process's lock): the process must end with _exit(), as a leak checker's stop of
 * every thread at exit() would wait for that read.
 */
bool qj_daemon_reads_running(const struct qj_daemon *d);

#endif
