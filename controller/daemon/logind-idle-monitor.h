/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who sets a session's idle hint (the idle-hint bridge's half, see logind-idle.h): a
 * second connection to the system bus becomes a D-Bus monitor (BecomeMonitor, root only)
 * of Session.SetIdleHint calls to logind; each caller's uid and pid are asked of the bus
 * driver (GetConnectionCredentials) and its jail membership is decided while it lives
 * (pidfd opened before the read, checked alive after it).  Only a call by a process that
 * is not jailed is reported; a jailed or unknown caller is logged and ignored.  A leaf:
 * it reports through the callbacks its owner set.  Private to controller/daemon/.
 */
#ifndef QJ_LOGIND_IDLE_MONITOR_H
#define QJ_LOGIND_IDLE_MONITOR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "loop.h"

typedef struct sd_bus sd_bus;

/* Callers being identified at once: a flood of SetIdleHint calls costs at most this many. */
#define QJ_IDLE_CALLS_MAX 64

struct qj_idle_call;
struct qj_logind_handles;

struct qj_idle_monitor {
	struct qj_event_source source; /* its owner sets the dispatch */
	int fd;
	const struct qj_logind_handles *h; /* borrowed: the loop, the engine or membership */
	sd_bus *mon;
	sd_bus *bus; /* borrowed: the owner's connection, for GetConnectionCredentials */
	bool up; /* BecomeMonitor answered */
	char *const *logind_owner; /* borrowed: logind's unique name, "" or NULL unknown */
	struct qj_idle_call *calls[QJ_IDLE_CALLS_MAX];
	uint64_t n_ignored, n_dropped;
	/* A call to logind's SetIdleHint(@value) on @path by a process of @uid, not jailed. */
	void (*on_hint)(struct qj_idle_monitor *m, uid_t uid, const char *path, int value);
	/* The monitor came up (@why NULL) or failed (@why says how). */
	void (*on_state)(struct qj_idle_monitor *m, const char *why);
};

/* @m->src.d, ->bus, ->logind_owner and the callbacks set: connects, fd in the loop. */
int qj_idle_monitor_start(struct qj_idle_monitor *m);
/* Closes the connection and forgets the calls being identified. */
void qj_idle_monitor_close(struct qj_idle_monitor *m);
/* Processes what arrived; a negative errno when the connection is gone (then closed). */
int qj_idle_monitor_process(struct qj_idle_monitor *m);
uint64_t qj_idle_monitor_timeout(const struct qj_idle_monitor *m);

#endif
