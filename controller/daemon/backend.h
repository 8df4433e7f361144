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

struct qj_power;

struct qj_power_stats {
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
int qj_power_new(const struct qj_policy *p, int notify_fd, struct qj_power **ret);
/* Interrupts a running job, joins the worker, frees. */
struct qj_power *qj_power_free(struct qj_power *b);

/* New policy after a reload; takes effect at the next job. */
int qj_power_configure(struct qj_power *b, const struct qj_policy *p);

enum qj_backend qj_power_kind(const struct qj_power *b);
const char *qj_power_path(const struct qj_power *b); /* power/state path */

/* Before the quiesce: wakeup-count reads and remembers power/wakeup_count. */
int qj_power_prepare(struct qj_power *b);
/* Hands the suspend write to the worker thread.  -EBUSY when a job runs. */
int qj_power_start(struct qj_power *b);
/* Interrupts the running job (SIGUSR1 to the worker).  Safe to repeat. */
void qj_power_interrupt(struct qj_power *b);
bool qj_power_running(const struct qj_power *b);
/*
 * After @notify_fd became readable: 1 and *ret_result (0 or negative errno)
 * when a job finished, 0 when none did.
 */
int qj_power_collect(struct qj_power *b, int *ret_result);

/* Logs what a write's @result (0 or negative errno) means for @cycle; EINTR says nothing. */
void qj_power_log_result(uint64_t cycle, int result);
void qj_power_get_stats(const struct qj_power *b, struct qj_power_stats *ret);

#endif
