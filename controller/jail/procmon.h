/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Process events from the netlink proc connector (libnl): exec events drive
 * policy matching; exit events of followed processes say how they died.  Forks
 * of jailed tasks need no event: the kernel keeps children in their parent's
 * cgroups.  Events are system-wide.
 */
#ifndef QJ_PROCMON_H
#define QJ_PROCMON_H

#include <sys/types.h>

#include "policy.h"

enum qj_proc_event_kind {
	QJ_PROC_EXEC,
	QJ_PROC_EXIT,
};

/*
 * An exec, or the exit of a thread of a watched process: the only events the
 * kernel lets through to us (socket filter).
 */
struct qj_proc_event {
	enum qj_proc_event_kind what;
	pid_t pid; /* thread */
	pid_t tgid; /* process */
	int exit_code; /* QJ_PROC_EXIT: wait status (signal in the low 7 bits, or status << 8) */
};

struct qj_procmon;

/* Most processes whose exits the kernel filter names one by one; more pass every exit. */
#define QJ_PROCMON_MAX_WATCH 240

/* Root only (CAP_NET_ADMIN): -EPERM otherwise. */
int qj_procmon_new(struct qj_procmon **ret);
struct qj_procmon *qj_procmon_free(struct qj_procmon *m);
int qj_procmon_fd(const struct qj_procmon *m);
/*
 * Lets exit events of the processes @tgids through the socket filter (none
 * when @n is 0: exec events only, so nothing else on the machine wakes us).
 */
int qj_procmon_watch_exits(struct qj_procmon *m, const pid_t *tgids, size_t n);
/*
 * Reads pending events (non-blocking, at most QJ_PROCMON_BUDGET messages) and
 * calls @cb for each.  Returns the number of events, or -ENOBUFS when the socket
 * overran and events were lost: the caller resynchronises from cgroup.procs.
 * *@ret_more (may be NULL) says whether the budget ran out before the queue did.
 */
/*
 * At most this many messages a dispatch: a fork storm sends events faster than a
 * loaded daemon classifies them, and reading until EAGAIN never returned (38 s in
 * one run), starving the quiesce timer past its bound.  The socket stays readable,
 * so the event loop comes back after its other sources had their turn.
 */
#define QJ_PROCMON_BUDGET 256

int qj_procmon_dispatch(struct qj_procmon *m, int (*cb)(const struct qj_proc_event *ev, void *ud),
			void *ud, bool *ret_more);

#endif
