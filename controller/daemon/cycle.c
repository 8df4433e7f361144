// SPDX-License-Identifier: LGPL-2.1-or-later
/* The suspend cycle state machine (pure, see cycle.h). */
#include <assert.h>

#include "cycle.h"
#include "util.h"

void qj_cycle_init(struct qj_cycle *c, uint64_t idle_delay_usec, uint64_t retry_initial_usec,
		   uint64_t retry_max_usec, uint64_t now_usec)
{
	*c = (struct qj_cycle){
		.state = QJ_CYCLE_AWAKE,
		.deadline_usec = USEC_INFINITY,
		.state_since_usec = now_usec,
	};
	qj_cycle_configure(c, idle_delay_usec, retry_initial_usec, retry_max_usec);
}

void qj_cycle_configure(struct qj_cycle *c, uint64_t idle_delay_usec, uint64_t retry_initial_usec,
			uint64_t retry_max_usec)
{
	c->idle_delay_usec = idle_delay_usec;
	c->retry_initial_usec = retry_initial_usec ? retry_initial_usec : 1;
	c->retry_max_usec = retry_max_usec < c->retry_initial_usec ? c->retry_initial_usec :
								     retry_max_usec;
}

static void set_state(struct qj_cycle *c, enum qj_cycle_state s, uint64_t now)
{
	c->state = s;
	c->state_since_usec = now;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? USEC_INFINITY : a + b;
}

/* Back to AWAKE or IDLE_WAIT after a cycle ended; @delay is how long to wait. */
static void settle(struct qj_cycle *c, uint64_t delay, uint64_t now)
{
	c->interrupting = false;
	if (c->n_holds > 0) {
		set_state(c, QJ_CYCLE_AWAKE, now);
		c->deadline_usec = USEC_INFINITY;
	} else {
		set_state(c, QJ_CYCLE_IDLE_WAIT, now);
		c->deadline_usec = add_sat(now, delay);
	}
}

static void record(struct qj_cycle *c, enum qj_cycle_result r, int error, uint64_t now)
{
	c->last_result = r;
	c->last_error = error;
	c->last_result_usec = now;
}

static uint64_t next_backoff(struct qj_cycle *c)
{
	c->retry_usec = c->retry_usec ? c->retry_usec * 2 : c->retry_initial_usec;
	if (c->retry_usec > c->retry_max_usec)
		c->retry_usec = c->retry_max_usec;
	return c->retry_usec;
}

void qj_cycle_set_keep_quiesced(struct qj_cycle *c, bool keep, uint64_t max_usec)
{
	c->keep_quiesced = keep;
	c->dark_wake_max_usec = max_usec;
}

/* The jail kept quiesced since the last suspend is restored now (a hold, or the key off). */
static unsigned release_kept(struct qj_cycle *c)
{
	if (!c->kept)
		return 0;
	c->kept = false;
	c->restoring_kept = true;
	return QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS;
}

unsigned qj_cycle_on_keep_failed(struct qj_cycle *c)
{
	return release_kept(c);
}

/*
 * A hold while the jail is kept (now AWAKE): a short wake's handler does not need the
 * jail, so it stays quiesced until the holds have lasted dark_wake_max (on_timer).
 */
static unsigned hold_while_kept(struct qj_cycle *c, uint64_t now)
{
	if (!c->kept)
		return 0;
	if (!c->keep_quiesced || c->dark_wake_max_usec == 0)
		return release_kept(c);
	c->deadline_usec = add_sat(now, c->dark_wake_max_usec);
	return 0;
}

unsigned qj_cycle_on_holds(struct qj_cycle *c, size_t n_holds, uint64_t now_usec)
{
	c->n_holds = n_holds;
	c->restoring_kept = false;
	switch (c->state) {
	case QJ_CYCLE_AWAKE:
		if (n_holds == 0)
			settle(c, c->idle_delay_usec, now_usec);
		return c->keep_quiesced ? 0 : release_kept(c);
	case QJ_CYCLE_IDLE_WAIT:
		if (n_holds > 0) {
			set_state(c, QJ_CYCLE_AWAKE, now_usec);
			c->deadline_usec = USEC_INFINITY;
			c->retry_usec = 0;
			return hold_while_kept(c, now_usec);
		}
		return c->keep_quiesced ? 0 : release_kept(c);
	case QJ_CYCLE_PREPARING:
		if (n_holds == 0)
			return 0;
		/* Nothing was quiesced yet: nothing to restore, unless a dark wake kept it. */
		c->n_aborts++;
		record(c, QJ_CYCLE_RESULT_ABORTED, -EINTR, now_usec);
		settle(c, c->idle_delay_usec, now_usec);
		return hold_while_kept(c, now_usec);
	case QJ_CYCLE_QUIESCING:
		if (n_holds == 0)
			return 0;
		c->n_aborts++;
		record(c, QJ_CYCLE_RESULT_ABORTED, -EINTR, now_usec);
		settle(c, c->idle_delay_usec, now_usec);
		return QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS;
	case QJ_CYCLE_SUSPENDING:
		if (n_holds == 0 || c->interrupting)
			return 0;
		c->interrupting = true;
		return QJ_CYCLE_DO_BACKEND_INTERRUPT;
	default:
		return 0;
	}
}

static unsigned begin_quiesce(struct qj_cycle *c, uint64_t now)
{
	set_state(c, QJ_CYCLE_QUIESCING, now);
	c->deadline_usec = USEC_INFINITY;
	if (c->kept) {
		/* The jail is still quiesced: this cycle owns it now. */
		c->kept = false;
		return QJ_CYCLE_DO_QUIESCE_KEPT;
	}
	return QJ_CYCLE_DO_QUIESCE_BEGIN | QJ_CYCLE_DO_QUIESCE_STEP;
}

static unsigned start_cycle(struct qj_cycle *c, uint64_t now)
{
	c->id++;
	if (c->n_delays > 0 && c->max_delay_usec > 0) {
		set_state(c, QJ_CYCLE_PREPARING, now);
		c->deadline_usec = add_sat(now, c->max_delay_usec);
		return 0;
	}
	return begin_quiesce(c, now);
}

void qj_cycle_set_delays(struct qj_cycle *c, size_t n_delays, uint64_t max_delay_usec)
{
	c->n_delays = n_delays;
	c->max_delay_usec = max_delay_usec;
}

unsigned qj_cycle_on_ready(struct qj_cycle *c, size_t n_pending, uint64_t now_usec)
{
	if (c->state != QJ_CYCLE_PREPARING || n_pending > 0)
		return 0;
	return begin_quiesce(c, now_usec);
}

unsigned qj_cycle_on_timer(struct qj_cycle *c, uint64_t now_usec)
{
	c->restoring_kept = false;
	if (now_usec < c->deadline_usec)
		return 0;
	switch (c->state) {
	case QJ_CYCLE_IDLE_WAIT:
		return start_cycle(c, now_usec);
	case QJ_CYCLE_PREPARING:
		return begin_quiesce(c, now_usec); /* max_delay passed */
	case QJ_CYCLE_QUIESCING:
		c->deadline_usec = USEC_INFINITY;
		return QJ_CYCLE_DO_QUIESCE_STEP;
	case QJ_CYCLE_AWAKE:
		/* Held for dark_wake_max: the machine stays awake, the jail runs again. */
		c->deadline_usec = USEC_INFINITY;
		return release_kept(c);
	default:
		c->deadline_usec = USEC_INFINITY;
		return 0;
	}
}

unsigned qj_cycle_on_quiesce(struct qj_cycle *c, int r, uint64_t next_usec, uint64_t now_usec)
{
	c->restoring_kept = false;
	if (c->state != QJ_CYCLE_QUIESCING)
		return 0;
	if (r < 0) {
		c->n_failures++;
		record(c, QJ_CYCLE_RESULT_FAILED, r, now_usec);
		settle(c, next_backoff(c), now_usec);
		return QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS;
	}
	if (r == 0) {
		c->deadline_usec = next_usec > now_usec ? next_usec : now_usec;
		return 0;
	}
	set_state(c, QJ_CYCLE_SUSPENDING, now_usec);
	c->deadline_usec = USEC_INFINITY;
	c->interrupting = false;
	return QJ_CYCLE_DO_BACKEND_START;
}

unsigned qj_cycle_on_backend(struct qj_cycle *c, int r, uint64_t now_usec)
{
	if (c->state != QJ_CYCLE_SUSPENDING)
		return 0;
	c->restoring_kept = false;
	if (r == 0) {
		c->n_suspends++;
		c->retry_usec = 0;
		record(c, QJ_CYCLE_RESULT_SUSPENDED, 0, now_usec);
		settle(c, c->idle_delay_usec, now_usec);
		/* A dark wake: nothing trusted wants the machine, the jail stays as it is. */
		if (c->keep_quiesced && c->state == QJ_CYCLE_IDLE_WAIT) {
			c->kept = true;
			return QJ_CYCLE_DO_KEEP;
		}
	} else if (c->interrupting || (r == -EINTR && c->n_holds > 0)) {
		/* Whatever the write said, a hold is why it ended: not a failure. */
		c->n_aborts++;
		record(c, QJ_CYCLE_RESULT_INTERRUPTED, r, now_usec);
		settle(c, c->idle_delay_usec, now_usec);
	} else {
		c->n_failures++;
		record(c, QJ_CYCLE_RESULT_FAILED, r, now_usec);
		settle(c, next_backoff(c), now_usec);
	}
	return QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS;
}

int qj_cycle_request_suspend(struct qj_cycle *c, uint64_t now_usec)
{
	if (c->n_holds > 0)
		return -EBUSY;
	if (c->state != QJ_CYCLE_IDLE_WAIT && c->state != QJ_CYCLE_AWAKE)
		return -EALREADY;
	return (int)start_cycle(c, now_usec);
}

bool qj_cycle_jail_quiesced(const struct qj_cycle *c)
{
	return c->state == QJ_CYCLE_QUIESCING || c->state == QJ_CYCLE_SUSPENDING || c->kept;
}

const char *qj_cycle_state_to_string(enum qj_cycle_state s)
{
	static const char *const t[_QJ_CYCLE_STATE_MAX] = {
		[QJ_CYCLE_AWAKE] = "awake",	      [QJ_CYCLE_IDLE_WAIT] = "idle-wait",
		[QJ_CYCLE_PREPARING] = "preparing",   [QJ_CYCLE_QUIESCING] = "quiescing",
		[QJ_CYCLE_SUSPENDING] = "suspending",
	};

	return s >= 0 && s < _QJ_CYCLE_STATE_MAX ? t[s] : NULL;
}

const char *qj_cycle_result_to_string(enum qj_cycle_result r)
{
	static const char *const t[_QJ_CYCLE_RESULT_MAX] = {
		[QJ_CYCLE_RESULT_NONE] = "none",
		[QJ_CYCLE_RESULT_SUSPENDED] = "suspended",
		[QJ_CYCLE_RESULT_ABORTED] = "aborted",
		[QJ_CYCLE_RESULT_INTERRUPTED] = "interrupted",
		[QJ_CYCLE_RESULT_FAILED] = "failed",
	};

	return r >= 0 && r < _QJ_CYCLE_RESULT_MAX ? t[r] : NULL;
}
