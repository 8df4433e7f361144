/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Process events from the netlink proc connector (libnl): exec events drive
 * policy matching.  Forks of jailed tasks need no event: the kernel keeps
 * children in their parent's cgroups.  Events are system-wide.
 */
#ifndef QJ_PROCMON_H
#define QJ_PROCMON_H

#include <sys/types.h>

#include "policy.h"

/* An exec: the only event the kernel lets through to us (socket filter). */
struct qj_proc_event {
	pid_t pid; /* thread */
	pid_t tgid; /* process */
};

struct qj_procmon;

/* Root only (CAP_NET_ADMIN): -EPERM otherwise. */
int qj_procmon_new(struct qj_procmon **ret);
struct qj_procmon *qj_procmon_free(struct qj_procmon *m);
int qj_procmon_fd(const struct qj_procmon *m);
/*
 * Reads every pending event (non-blocking) and calls @cb for each.  Returns the
 * number of events, or -ENOBUFS when the socket overran and events were lost:
 * the caller resynchronises from cgroup.procs.
 */
int qj_procmon_dispatch(struct qj_procmon *m, int (*cb)(const struct qj_proc_event *ev, void *ud),
			void *ud);

#endif
