/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reads of /proc/PID/cmdline off the loop thread (issue 25 finding 1).  Such a read takes
 * the target's mmap_lock, which the target can keep contended for as long as a FUSE
 * server it reads from does not answer: the loop must never make it.  The file is opened
 * on the loop (that does not take the lock, and binds the read to that process), then a
 * worker thread reads it and the result comes back through one fd the loop polls.
 *
 * A read that takes longer than the timeout is answered -ETIMEDOUT and its worker
 * abandoned: it exits when the read returns, and a new worker takes the queue.  Abandoned
 * workers are bounded, in all and per uid of the processes they wait on: past a bound a
 * read fails at once (-EBUSY).  So one user's stuck processes cannot use up the readers
 * the others' exec matching needs, and the daemon's threads stay bounded.
 *
 * Everything here except the worker runs on the loop thread; callbacks too.  Nothing
 * wakes the loop while no read is queued or running (no timer is armed then).
 */
#ifndef QJ_PROCREAD_H
#define QJ_PROCREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * A cmdline read normally takes microseconds; a worker waits this long before it is
 * abandoned.  Long enough that a loaded machine does not make it fail (a process whose
 * read fails may be jailed: fail closed), short enough to bound how long an exec
 * matched by its cmdline can run before it is decided.
 */
#define QJ_PROCREAD_TIMEOUT_USEC (1000 * 1000ULL)
/* Abandoned (stuck) workers at most, in all and waiting on the processes of one uid. */
#define QJ_PROCREAD_MAX_STUCK 16
#define QJ_PROCREAD_MAX_STUCK_PER_UID 2
/* Reads queued at most (each holds two fds until it is answered). */
#define QJ_PROCREAD_MAX_QUEUE 256

/* Refuse the read while any read of this uid is stuck (explain: spare the budget). */
#define QJ_PROCREAD_SPARE (1u << 0)

struct qj_procread;

/*
 * The answer for one read, on the loop thread: @r 0 and @text (the cmdline, NULs as
 * spaces; valid during the call) or a negative errno: -ESRCH gone, -ETIMEDOUT stuck,
 * -EBUSY too many stuck, -ECANCELED cancelled or freed (free what @userdata holds).
 */
typedef void (*qj_procread_done_fn)(int r, const char *text, void *userdata);

int qj_procread_new(uint64_t timeout_usec, struct qj_procread **ret);
/* Answers what is pending with -ECANCELED; never waits for a stuck worker.  NULL is fine. */
struct qj_procread *qj_procread_free(struct qj_procread *pr);
/* Polled by the loop (readable when answers or a timeout are due). */
int qj_procread_fd(const struct qj_procread *pr);
/*
 * Queues a read of @pid's cmdline for a process of @uid.  @done is called exactly once,
 * later, from qj_procread_dispatch() (or cancel/free), unless this returns an error:
 * -ESRCH (gone), -EBUSY (too many reads stuck), -ENOSPC (queue full), -EMFILE, -ENOMEM.
 * *@ret_id (may be NULL) names the read for qj_procread_cancel().
 */
int qj_procread_submit(struct qj_procread *pr, pid_t pid, uid_t uid, unsigned flags,
		       qj_procread_done_fn done, void *userdata, uint64_t *ret_id);
/* Answers read @id with -ECANCELED now (nothing when already answered). */
void qj_procread_cancel(struct qj_procread *pr, uint64_t id);
/* Calls back the reads answered or timed out; returns how many. */
int qj_procread_dispatch(struct qj_procread *pr);
/* Workers abandoned in a read that has not returned yet. */
size_t qj_procread_n_stuck(const struct qj_procread *pr);
/* Workers in a read now: the stuck ones and the one running (none can be stopped). */
size_t qj_procread_n_reading(const struct qj_procread *pr);

/*
 * Blocking read of an open /proc/PID/cmdline, NULs as spaces (allocated).  Only on a
 * worker thread, or of a process that cannot hold its locks against us (ourselves).
 */
int qj_procread_cmdline_fd(int fd, char **ret);

#endif
