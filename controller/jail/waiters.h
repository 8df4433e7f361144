/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Trusted work waiting on the jail (issue 25 finding 6): a trusted process blocked on a
 * flock/fcntl lock a jailed process holds, or on a FUSE request while the jail holds a
 * FUSE server, waits out a whole suspend once the jail is stopped.  What can be found
 * cheaply, and without a read that takes another process's locks:
 *
 *  - locks: /proc/locks lists every held lock and, on "->" lines under it, the tasks
 *    blocked on it (directly or behind another waiter): exact;
 *  - FUSE: a jailed process with /dev/fuse open serves FUSE; a trusted thread whose
 *    wchan is the FUSE request wait waits on some FUSE server.  Which connection a
 *    request went to is not visible (/proc/PID/syscall takes the target's exec lock),
 *    so when the jail serves FUSE such a wait is reported as one that may be on it.
 *    A reader waiting for a page the server has not filled waits on the page lock, in
 *    code every file system shares: not detected.
 */
#ifndef QJ_WAITERS_H
#define QJ_WAITERS_H

#include <stddef.h>
#include <sys/types.h>

#include "policy.h"

struct qj_engine;

enum qj_wait_kind {
	QJ_WAIT_LOCK, /* a flock/fcntl/OFD lock a jailed process holds */
	QJ_WAIT_FUSE, /* a FUSE request, while a jailed process serves FUSE */
};

struct qj_wait {
	enum qj_wait_kind kind;
	pid_t waiter; /* the trusted process that waits */
	char waiter_comm[64];
	pid_t holder; /* the jailed process: holds the lock, or serves FUSE */
	char holder_comm[64];
	char app[QJ_POLICY_NAME_MAX + 1]; /* the holder's app */
	char what[96]; /* "FLOCK WRITE lock on fe:00:1234", "a FUSE request" */
};

/* "lock", "fuse". */
const char *qj_wait_kind_to_string(enum qj_wait_kind k);

/*
 * Calls @cb for every blocked task in /proc/locks @text: its pid, the pid holding the
 * lock it waits behind, and the lock ("POSIX WRITE lock on 08:01:1234").  Locks without
 * a pid (OFD locks: -1) are skipped.  A negative return from @cb stops the walk.
 */
int qj_locks_parse(const char *text,
		   int (*cb)(pid_t waiter, pid_t holder, const char *lock, void *userdata),
		   void *userdata);

/*
 * The trusted work waiting on the jail now (allocated array); @only > 0: only what
 * process @only waits on.  0 or negative errno.
 */
int qj_engine_waiters(struct qj_engine *e, pid_t only, struct qj_wait **ret, size_t *ret_n);

#endif
