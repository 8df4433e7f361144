/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The suspend cycle state machine (pure).  The daemon feeds it events (hold
 * count changed, timer expired, quiesce step result, backend result, explicit
 * suspend request) with the current CLOCK_MONOTONIC time; it answers with a
 * mask of things to do and keeps the time of its next timer in ->deadline_usec.
 *
 *   AWAKE --(no holds)--> IDLE_WAIT --(idle_delay)--> [PREPARING] --> QUIESCING
 *   --(all blocked)--> SUSPENDING --(backend returned: resumed, jail restored)-->
 *   AWAKE or IDLE_WAIT
 *
 * PREPARING is only entered when delay holds exist: the cycle waits until each is done
 * (qj_cycle_on_ready() with none left) or max_delay passed, whichever comes first.
 *
 * A new hold aborts at any point: QUIESCING restores the jail at once,
 * SUSPENDING interrupts the backend write and restores when it returns.
 * Backend or quiesce failures restore and retry after a doubling backoff.
 *
 * Dark wakes (suspend.dark_wake: keep-quiesced, docs/decisions.md): a suspend that
 * returns with no hold keeps the jail quiesced (->kept) and waits idle_delay again;
 * the next cycle then asks the engine whether anything in the jail ran since
 * (QJ_CYCLE_DO_QUIESCE_KEPT) instead of sampling it again.  Holds that last
 * dark_wake_max (AWAKE's deadline), or the key turned off, restore the kept jail:
 * QJ_CYCLE_DO_RESTORE with ->restoring_kept.  Shorter holds (a wake's handler) leave it.
 */
#ifndef QJ_CYCLE_H
#define QJ_CYCLE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum qj_cycle_state {
	QJ_CYCLE_AWAKE,
	QJ_CYCLE_IDLE_WAIT,
	QJ_CYCLE_PREPARING, /* waiting for delay holds, at most max_delay */
	QJ_CYCLE_QUIESCING,
	QJ_CYCLE_SUSPENDING,
	_QJ_CYCLE_STATE_MAX,
	_QJ_CYCLE_STATE_INVALID = -EINVAL,
};

/* Actions for the daemon, in the order it performs them. */
enum {
	QJ_CYCLE_DO_QUIESCE_BEGIN = 1 << 0, /* backend prepare + qj_engine_quiesce_begin() */
	QJ_CYCLE_DO_QUIESCE_STEP = 1 << 1, /* qj_engine_quiesce_step(), report with _on_quiesce */
	QJ_CYCLE_DO_BACKEND_START = 1 << 2, /* hand the write to the worker thread */
	QJ_CYCLE_DO_BACKEND_INTERRUPT = 1 << 3, /* signal the worker thread */
	QJ_CYCLE_DO_RESTORE = 1 << 4, /* qj_engine_restore() */
	QJ_CYCLE_DO_RESUME_WAITERS = 1 << 5, /* answer hold requests deferred during the cycle */
	QJ_CYCLE_DO_KEEP = 1 << 6, /* resumed with no hold: qj_engine_keep_quiesced() */
	QJ_CYCLE_DO_QUIESCE_KEPT = 1 << 7, /* backend prepare + qj_engine_quiesce_kept(),
					    * report with _on_quiesce */
};

/* How the last attempt ended. */
enum qj_cycle_result {
	QJ_CYCLE_RESULT_NONE,
	QJ_CYCLE_RESULT_SUSPENDED, /* backend wrote and returned: suspended and resumed */
	QJ_CYCLE_RESULT_ABORTED, /* a hold arrived before the write */
	QJ_CYCLE_RESULT_INTERRUPTED, /* a hold interrupted the write */
	QJ_CYCLE_RESULT_FAILED, /* backend or quiesce error, retrying */
	_QJ_CYCLE_RESULT_MAX,
	_QJ_CYCLE_RESULT_INVALID = -EINVAL,
};

struct qj_cycle {
	enum qj_cycle_state state;
	uint64_t id; /* current or last cycle; 0 before the first */
	uint64_t deadline_usec; /* next timer, UINT64_MAX when none */
	uint64_t state_since_usec;
	size_t n_holds;
	bool interrupting; /* a hold arrived while the backend write runs */
	bool keep_quiesced; /* suspend.dark_wake: keep-quiesced */
	uint64_t dark_wake_max_usec; /* holds this long restore a kept jail; 0: any hold */
	bool kept; /* the jail stays quiesced since the last suspend (a dark wake) */
	bool restoring_kept; /* the last DO_RESTORE ends a kept jail, not a cycle */

	/* configuration (from the policy) */
	uint64_t idle_delay_usec;
	uint64_t retry_initial_usec;
	uint64_t retry_max_usec;
	uint64_t max_delay_usec; /* longest PREPARING; 0: never entered */
	size_t n_delays; /* delay holds a new cycle waits for */

	uint64_t retry_usec; /* current backoff, 0 when none */
	enum qj_cycle_result last_result;
	int last_error; /* negative errno of the last failure */
	uint64_t last_result_usec;
	uint64_t n_suspends;
	uint64_t n_aborts;
	uint64_t n_failures;
};

void qj_cycle_init(struct qj_cycle *c, uint64_t idle_delay_usec, uint64_t retry_initial_usec,
		   uint64_t retry_max_usec, uint64_t now_usec);
/* New configuration after a reload; takes effect at the next transition. */
void qj_cycle_configure(struct qj_cycle *c, uint64_t idle_delay_usec, uint64_t retry_initial_usec,
			uint64_t retry_max_usec);

/* QJ_CYCLE_DO_KEEP could not keep the jail: restore it now. */
unsigned qj_cycle_on_keep_failed(struct qj_cycle *c);
/*
 * suspend.dark_wake and dark_wake_max; turned off while the jail is kept, the next
 * _on_holds() restores it.
 */
void qj_cycle_set_keep_quiesced(struct qj_cycle *c, bool keep, uint64_t max_usec);
/* Delay holds now (@n_delays) and the longest wait for them; for the next cycle. */
void qj_cycle_set_delays(struct qj_cycle *c, size_t n_delays, uint64_t max_delay_usec);
/* @n_pending delay holds of the current cycle are not done yet. */
unsigned qj_cycle_on_ready(struct qj_cycle *c, size_t n_pending, uint64_t now_usec);
unsigned qj_cycle_on_holds(struct qj_cycle *c, size_t n_holds, uint64_t now_usec);
unsigned qj_cycle_on_timer(struct qj_cycle *c, uint64_t now_usec);
/* @r: 1 all blocked, 0 not yet (call again at @next_usec), negative errno. */
unsigned qj_cycle_on_quiesce(struct qj_cycle *c, int r, uint64_t next_usec, uint64_t now_usec);
/* @r: 0 suspended and resumed, negative errno (-EINTR interrupted, -EBUSY, ...). */
unsigned qj_cycle_on_backend(struct qj_cycle *c, int r, uint64_t now_usec);
/*
 * Explicit `suspend` request: skip the rest of idle_delay.  Returns -EBUSY
 * (holds exist), -EALREADY (a cycle runs), or the action mask.
 */
int qj_cycle_request_suspend(struct qj_cycle *c, uint64_t now_usec);

/* True while jailed peers' hold requests must wait (QOS_NONE). */
bool qj_cycle_jail_quiesced(const struct qj_cycle *c);

const char *qj_cycle_state_to_string(enum qj_cycle_state s);
const char *qj_cycle_result_to_string(enum qj_cycle_result r);

#endif
