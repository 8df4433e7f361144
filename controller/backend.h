/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Power backends: what "suspend now" means (policy->backend), and the one
 * worker thread that performs the blocking write so the daemon's loop keeps
 * serving.  Paths are under policy->sysfs_root, so tests use a fake tree.
 *
 *   qos           write "qos" to power/state (patched kernel: blocks until no
 *                 QOS_EVENTUALLY constraint is active; EBUSY at once on an
 *                 incompatible latency constraint; EINTR when signalled)
 *   wakeup-count  read power/wakeup_count before quiescing, then write it
 *                 back (a change means wakeup events: abort) and write
 *                 policy->wakeup_state ("mem" or "freeze") to power/state
 *   mem, freeze   plain write to power/state
 *   dry-run       no kernel write: sleeps dry_run_length (interruptible)
 *   auto          qos when power/state lists "qos", else wakeup-count
 */
#ifndef QJ_BACKEND_H
#define QJ_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "policy.h"

struct qj_backend;

struct qj_backend_stats {
	uint64_t attempts; /* suspend writes started */
	uint64_t dry_runs; /* simulated suspends completed (dry-run) */
	uint64_t dry_run_usec; /* simulated suspend time (dry-run) */
	uint64_t mismatches; /* wakeup-count aborts */
	unsigned wakeup_count; /* last value read (wakeup-count) */
};

/*
 * Resolves "auto" and starts the worker thread.  @notify_fd (an eventfd) is
 * written when a suspend job finished.  The calling thread must block
 * SIGUSR1 (the interrupt signal) before; the worker unblocks it for itself.
 */
int qj_backend_new(const struct qj_policy *p, int notify_fd, struct qj_backend **ret);
/* Interrupts a running job, joins the worker, frees. */
struct qj_backend *qj_backend_free(struct qj_backend *b);

/* New policy after a reload; takes effect at the next job. */
int qj_backend_configure(struct qj_backend *b, const struct qj_policy *p);

enum qj_backend qj_backend_kind(const struct qj_backend *b);
const char *qj_backend_path(const struct qj_backend *b); /* power/state path */

/* Before the quiesce: wakeup-count reads and remembers power/wakeup_count. */
int qj_backend_prepare(struct qj_backend *b);
/* Hands the suspend write to the worker thread.  -EBUSY when a job runs. */
int qj_backend_start(struct qj_backend *b);
/* Interrupts the running job (SIGUSR1 to the worker).  Safe to repeat. */
void qj_backend_interrupt(struct qj_backend *b);
bool qj_backend_running(const struct qj_backend *b);
/*
 * After @notify_fd became readable: 1 and *ret_result (0 or negative errno)
 * when a job finished, 0 when none did.
 */
int qj_backend_collect(struct qj_backend *b, int *ret_result);

void qj_backend_get_stats(const struct qj_backend *b, struct qj_backend_stats *ret);

#endif
