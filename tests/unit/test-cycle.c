// SPDX-License-Identifier: LGPL-2.1-or-later
/* The suspend cycle state machine over simulated time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cycle.h"
#include "util.h"

#define IDLE 1000
#define RETRY 100
#define RETRY_MAX 350

static void init(struct qj_cycle *c)
{
	qj_cycle_init(c, IDLE, RETRY, RETRY_MAX, 0);
}

/* Runs from "no holds at @t" to SUSPENDING; returns the time reached. */
static uint64_t to_suspending(struct qj_cycle *c, uint64_t t)
{
	assert_int_equal(qj_cycle_on_holds(c, 0, t), 0);
	assert_int_equal(c->state, QJ_CYCLE_IDLE_WAIT);
	assert_int_equal(c->deadline_usec, t + IDLE);
	t += IDLE;
	assert_int_equal(qj_cycle_on_timer(c, t),
			 QJ_CYCLE_DO_QUIESCE_BEGIN | QJ_CYCLE_DO_QUIESCE_STEP);
	assert_int_equal(c->state, QJ_CYCLE_QUIESCING);
	assert_true(qj_cycle_jail_quiesced(c));
	assert_int_equal(qj_cycle_on_quiesce(c, 1, 0, t), QJ_CYCLE_DO_BACKEND_START);
	assert_int_equal(c->state, QJ_CYCLE_SUSPENDING);
	return t;
}

static void test_cycle_full_suspend_and_resume(void **state)
{
	struct qj_cycle c;
	uint64_t t;

	(void)state;
	init(&c);
	assert_int_equal(c.state, QJ_CYCLE_AWAKE);
	assert_int_equal(c.deadline_usec, USEC_INFINITY);
	t = to_suspending(&c, 10);
	assert_int_equal(c.id, 1);
	assert_int_equal(qj_cycle_on_backend(&c, 0, t + 5000),
			 QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS);
	assert_int_equal(c.state, QJ_CYCLE_IDLE_WAIT);
	assert_int_equal(c.deadline_usec, t + 5000 + IDLE);
	assert_int_equal(c.last_result, QJ_CYCLE_RESULT_SUSPENDED);
	assert_int_equal(c.n_suspends, 1);
	assert_false(qj_cycle_jail_quiesced(&c));
	/* Next cycle gets the next id. */
	assert_int_equal(qj_cycle_on_timer(&c, c.deadline_usec),
			 QJ_CYCLE_DO_QUIESCE_BEGIN | QJ_CYCLE_DO_QUIESCE_STEP);
	assert_int_equal(c.id, 2);
}

static void test_cycle_timer_before_deadline_does_nothing(void **state)
{
	struct qj_cycle c;

	(void)state;
	init(&c);
	qj_cycle_on_holds(&c, 0, 0);
	assert_int_equal(qj_cycle_on_timer(&c, IDLE - 1), 0);
	assert_int_equal(c.state, QJ_CYCLE_IDLE_WAIT);
}

static void test_cycle_hold_during_idle_wait(void **state)
{
	struct qj_cycle c;

	(void)state;
	init(&c);
	qj_cycle_on_holds(&c, 0, 0);
	assert_int_equal(qj_cycle_on_holds(&c, 1, 500), 0);
	assert_int_equal(c.state, QJ_CYCLE_AWAKE);
	assert_int_equal(c.deadline_usec, USEC_INFINITY);
	/* Released again: idle_delay starts over. */
	qj_cycle_on_holds(&c, 0, 700);
	assert_int_equal(c.deadline_usec, 700 + IDLE);
	assert_int_equal(c.id, 0);
}

static void test_cycle_quiesce_steps_then_hold_aborts(void **state)
{
	struct qj_cycle c;

	(void)state;
	init(&c);
	qj_cycle_on_holds(&c, 0, 0);
	qj_cycle_on_timer(&c, IDLE);
	assert_int_equal(qj_cycle_on_quiesce(&c, 0, IDLE + 250, IDLE), 0);
	assert_int_equal(c.deadline_usec, IDLE + 250);
	assert_int_equal(qj_cycle_on_timer(&c, IDLE + 250), QJ_CYCLE_DO_QUIESCE_STEP);
	assert_int_equal(qj_cycle_on_quiesce(&c, 0, IDLE + 500, IDLE + 250), 0);
	assert_int_equal(qj_cycle_on_holds(&c, 1, IDLE + 300),
			 QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS);
	assert_int_equal(c.state, QJ_CYCLE_AWAKE);
	assert_int_equal(c.last_result, QJ_CYCLE_RESULT_ABORTED);
	assert_int_equal(c.n_aborts, 1);
	assert_int_equal(c.deadline_usec, USEC_INFINITY);
	/* A late step result is ignored. */
	assert_int_equal(qj_cycle_on_quiesce(&c, 1, 0, IDLE + 400), 0);
	assert_int_equal(c.state, QJ_CYCLE_AWAKE);
}

static void test_cycle_hold_interrupts_backend(void **state)
{
	struct qj_cycle c;
	uint64_t t;

	(void)state;
	init(&c);
	t = to_suspending(&c, 0);
	assert_int_equal(qj_cycle_on_holds(&c, 1, t + 10), QJ_CYCLE_DO_BACKEND_INTERRUPT);
	assert_int_equal(c.state, QJ_CYCLE_SUSPENDING);
	/* A second hold does not signal again. */
	assert_int_equal(qj_cycle_on_holds(&c, 2, t + 11), 0);
	assert_int_equal(qj_cycle_on_backend(&c, -EINTR, t + 12),
			 QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS);
	assert_int_equal(c.state, QJ_CYCLE_AWAKE);
	assert_int_equal(c.last_result, QJ_CYCLE_RESULT_INTERRUPTED);
	assert_int_equal(c.last_error, -EINTR);
	assert_int_equal(c.n_failures, 0);
	assert_false(c.interrupting);
}

static void test_cycle_hold_released_before_interrupt_lands(void **state)
{
	struct qj_cycle c;
	uint64_t t;

	(void)state;
	init(&c);
	t = to_suspending(&c, 0);
	qj_cycle_on_holds(&c, 1, t + 1);
	qj_cycle_on_holds(&c, 0, t + 2);
	qj_cycle_on_backend(&c, -EINTR, t + 3);
	assert_int_equal(c.last_result, QJ_CYCLE_RESULT_INTERRUPTED);
	assert_int_equal(c.state, QJ_CYCLE_IDLE_WAIT);
	assert_int_equal(c.deadline_usec, t + 3 + IDLE);
}

static void test_cycle_ebusy_backoff_doubles_and_caps(void **state)
{
	struct qj_cycle c;
	uint64_t t;
	const uint64_t expect[] = { 100, 200, 350, 350 };

	(void)state;
	init(&c);
	t = to_suspending(&c, 0);
	for (size_t i = 0; i < ARRAY_SIZE(expect); i++) {
		assert_int_equal(qj_cycle_on_backend(&c, -EBUSY, t),
				 QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS);
		assert_int_equal(c.state, QJ_CYCLE_IDLE_WAIT);
		assert_int_equal(c.last_result, QJ_CYCLE_RESULT_FAILED);
		assert_int_equal(c.last_error, -EBUSY);
		assert_int_equal(c.deadline_usec, t + expect[i]);
		t = c.deadline_usec;
		assert_int_equal(qj_cycle_on_timer(&c, t),
				 QJ_CYCLE_DO_QUIESCE_BEGIN | QJ_CYCLE_DO_QUIESCE_STEP);
		qj_cycle_on_quiesce(&c, 1, 0, t);
	}
	assert_int_equal(c.n_failures, 4);
	/* Success resets the backoff. */
	qj_cycle_on_backend(&c, 0, t);
	assert_int_equal(c.retry_usec, 0);
	assert_int_equal(c.deadline_usec, t + IDLE);
}

static void test_cycle_quiesce_failure_retries(void **state)
{
	struct qj_cycle c;

	(void)state;
	init(&c);
	qj_cycle_on_holds(&c, 0, 0);
	qj_cycle_on_timer(&c, IDLE);
	assert_int_equal(qj_cycle_on_quiesce(&c, -EIO, 0, IDLE),
			 QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS);
	assert_int_equal(c.state, QJ_CYCLE_IDLE_WAIT);
	assert_int_equal(c.deadline_usec, IDLE + RETRY);
	assert_int_equal(c.last_error, -EIO);
}

static void test_cycle_request_suspend(void **state)
{
	struct qj_cycle c;

	(void)state;
	init(&c);
	qj_cycle_on_holds(&c, 1, 0);
	assert_int_equal(qj_cycle_request_suspend(&c, 5), -EBUSY);
	qj_cycle_on_holds(&c, 0, 10);
	assert_int_equal(qj_cycle_request_suspend(&c, 20),
			 QJ_CYCLE_DO_QUIESCE_BEGIN | QJ_CYCLE_DO_QUIESCE_STEP);
	assert_int_equal(c.state, QJ_CYCLE_QUIESCING);
	assert_int_equal(c.id, 1);
	assert_int_equal(qj_cycle_request_suspend(&c, 21), -EALREADY);
}

static void test_cycle_strings(void **state)
{
	(void)state;
	assert_string_equal(qj_cycle_state_to_string(QJ_CYCLE_IDLE_WAIT), "idle-wait");
	assert_null(qj_cycle_state_to_string(_QJ_CYCLE_STATE_MAX));
	assert_string_equal(qj_cycle_result_to_string(QJ_CYCLE_RESULT_INTERRUPTED), "interrupted");
}

/* Delay holds: PREPARING until all are ready or max_delay passed; a hold aborts it. */
static void test_cycle_delay_holds(void **state)
{
	struct qj_cycle c;
	uint64_t t = 0;

	(void)state;
	init(&c);
	qj_cycle_set_delays(&c, 2, 500);
	assert_int_equal(qj_cycle_on_holds(&c, 0, t), 0);
	t += IDLE;
	assert_int_equal(qj_cycle_on_timer(&c, t), 0);
	assert_int_equal(c.state, QJ_CYCLE_PREPARING);
	assert_false(qj_cycle_jail_quiesced(&c));
	assert_int_equal(c.deadline_usec, t + 500);
	assert_int_equal(qj_cycle_on_ready(&c, 1, t + 10), 0);
	assert_int_equal(qj_cycle_on_ready(&c, 0, t + 20),
			 QJ_CYCLE_DO_QUIESCE_BEGIN | QJ_CYCLE_DO_QUIESCE_STEP);
	assert_int_equal(c.state, QJ_CYCLE_QUIESCING);

	/* Next cycle: nobody is ready, max_delay passes. */
	init(&c);
	qj_cycle_set_delays(&c, 1, 500);
	(void)qj_cycle_on_holds(&c, 0, 0);
	assert_int_equal(qj_cycle_on_timer(&c, IDLE), 0);
	assert_int_equal(qj_cycle_on_timer(&c, IDLE + 499), 0);
	assert_int_equal(qj_cycle_on_timer(&c, IDLE + 500),
			 QJ_CYCLE_DO_QUIESCE_BEGIN | QJ_CYCLE_DO_QUIESCE_STEP);

	/* A hold while preparing: aborted, nothing to restore. */
	init(&c);
	qj_cycle_set_delays(&c, 1, 500);
	(void)qj_cycle_on_holds(&c, 0, 0);
	(void)qj_cycle_on_timer(&c, IDLE);
	assert_int_equal(qj_cycle_on_holds(&c, 1, IDLE + 1), 0);
	assert_int_equal(c.state, QJ_CYCLE_AWAKE);
	assert_int_equal(c.last_result, QJ_CYCLE_RESULT_ABORTED);
	assert_int_equal(c.n_aborts, 1);

	/* max_delay 0: delay holds are never waited for. */
	init(&c);
	qj_cycle_set_delays(&c, 1, 0);
	(void)qj_cycle_on_holds(&c, 0, 0);
	assert_int_equal(qj_cycle_on_timer(&c, IDLE),
			 QJ_CYCLE_DO_QUIESCE_BEGIN | QJ_CYCLE_DO_QUIESCE_STEP);
}

/* suspend.dark_wake: keep-quiesced: a suspend that returns with no hold keeps the jail. */
static void test_cycle_dark_wake_keeps_the_jail(void **state)
{
	struct qj_cycle c;
	uint64_t t;

	(void)state;
	init(&c);
	qj_cycle_set_keep_quiesced(&c, true, 0);
	t = to_suspending(&c, 0);
	assert_int_equal(qj_cycle_on_backend(&c, 0, t + 10), QJ_CYCLE_DO_KEEP);
	assert_int_equal(c.state, QJ_CYCLE_IDLE_WAIT);
	assert_int_equal(c.last_result, QJ_CYCLE_RESULT_SUSPENDED);
	assert_int_equal(c.n_suspends, 1);
	assert_true(c.kept);
	/* Jailed peers' hold requests still wait: the jail is at QOS_NONE. */
	assert_true(qj_cycle_jail_quiesced(&c));
	/* The idle delay again, then the engine is asked what ran, with no new window. */
	assert_int_equal(c.deadline_usec, t + 10 + IDLE);
	assert_int_equal(qj_cycle_on_timer(&c, t + 10 + IDLE), QJ_CYCLE_DO_QUIESCE_KEPT);
	assert_int_equal(c.id, 2);
	assert_int_equal(c.state, QJ_CYCLE_QUIESCING);
	assert_false(c.kept);
	assert_int_equal(qj_cycle_on_quiesce(&c, 1, 0, t + 10 + IDLE), QJ_CYCLE_DO_BACKEND_START);
	assert_int_equal(qj_cycle_on_backend(&c, 0, t + 20 + IDLE), QJ_CYCLE_DO_KEEP);
	assert_true(c.kept);
}

static void test_cycle_dark_wake_hold_restores(void **state)
{
	struct qj_cycle c;
	uint64_t t;

	(void)state;
	init(&c);
	qj_cycle_set_keep_quiesced(&c, true, 0);
	t = to_suspending(&c, 0);
	qj_cycle_on_backend(&c, 0, t + 10);
	/* Releasing nothing changes nothing; a hold restores the kept jail at once. */
	assert_int_equal(qj_cycle_on_holds(&c, 0, t + 11), 0);
	assert_true(c.kept);
	assert_int_equal(qj_cycle_on_holds(&c, 1, t + 12),
			 QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS);
	assert_true(c.restoring_kept);
	assert_false(c.kept);
	assert_int_equal(c.state, QJ_CYCLE_AWAKE);
	assert_false(qj_cycle_jail_quiesced(&c));
	/* The restore ended no cycle: the counts stay. */
	assert_int_equal(c.n_aborts, 0);
	assert_int_equal(c.last_result, QJ_CYCLE_RESULT_SUSPENDED);
	/* Released: a normal cycle, sampling again. */
	assert_int_equal(qj_cycle_on_holds(&c, 0, t + 13), 0);
	assert_false(c.restoring_kept);
	assert_int_equal(qj_cycle_on_timer(&c, t + 13 + IDLE),
			 QJ_CYCLE_DO_QUIESCE_BEGIN | QJ_CYCLE_DO_QUIESCE_STEP);
}

/* A hold while the kept jail waits for delay holds, and the key turned off. */
static void test_cycle_dark_wake_preparing_and_off(void **state)
{
	struct qj_cycle c;
	uint64_t t;

	(void)state;
	init(&c);
	qj_cycle_set_keep_quiesced(&c, true, 0);
	t = to_suspending(&c, 0);
	qj_cycle_on_backend(&c, 0, t);
	qj_cycle_set_delays(&c, 1, 500);
	assert_int_equal(qj_cycle_on_timer(&c, t + IDLE), 0);
	assert_int_equal(c.state, QJ_CYCLE_PREPARING);
	assert_true(qj_cycle_jail_quiesced(&c));
	assert_int_equal(qj_cycle_on_holds(&c, 1, t + IDLE + 1),
			 QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS);
	assert_true(c.restoring_kept);
	assert_false(c.kept);
	assert_int_equal(c.last_result, QJ_CYCLE_RESULT_ABORTED);

	/* Off after a reload: the next hold count restores it, even with no hold. */
	qj_cycle_set_delays(&c, 0, 0);
	qj_cycle_on_holds(&c, 0, t + IDLE + 2);
	t = c.deadline_usec;
	qj_cycle_on_timer(&c, t);
	qj_cycle_on_quiesce(&c, 1, 0, t);
	assert_int_equal(qj_cycle_on_backend(&c, 0, t), QJ_CYCLE_DO_KEEP);
	qj_cycle_set_keep_quiesced(&c, false, 0);
	assert_int_equal(qj_cycle_on_holds(&c, 0, t + 1),
			 QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS);
	assert_false(qj_cycle_jail_quiesced(&c));
	assert_int_equal(c.state, QJ_CYCLE_IDLE_WAIT);
}

/* A suspend that failed, or was interrupted by a hold, restores as before. */
static void test_cycle_dark_wake_failures_restore(void **state)
{
	struct qj_cycle c;
	uint64_t t;

	(void)state;
	init(&c);
	qj_cycle_set_keep_quiesced(&c, true, 0);
	t = to_suspending(&c, 0);
	assert_int_equal(qj_cycle_on_backend(&c, -EBUSY, t),
			 QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS);
	assert_false(c.kept);
	assert_false(c.restoring_kept);
	t = c.deadline_usec;
	qj_cycle_on_timer(&c, t);
	assert_int_equal(qj_cycle_on_quiesce(&c, 1, 0, t), QJ_CYCLE_DO_BACKEND_START);
	qj_cycle_on_holds(&c, 1, t + 1);
	assert_int_equal(qj_cycle_on_backend(&c, 0, t + 2),
			 QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS);
	assert_false(c.kept);
	assert_int_equal(c.state, QJ_CYCLE_AWAKE);
}

/* dark_wake_max: a short hold (a wake's handler) leaves the jail kept, a long one not. */
static void test_cycle_dark_wake_short_hold_keeps(void **state)
{
	struct qj_cycle c;
	uint64_t t;

	(void)state;
	init(&c);
	qj_cycle_set_keep_quiesced(&c, true, 500);
	t = to_suspending(&c, 0);
	qj_cycle_on_backend(&c, 0, t);
	/* The modem handler holds 200 ms: awake, the jail still kept. */
	assert_int_equal(qj_cycle_on_holds(&c, 1, t + 10), 0);
	assert_int_equal(c.state, QJ_CYCLE_AWAKE);
	assert_true(c.kept);
	assert_true(qj_cycle_jail_quiesced(&c));
	assert_int_equal(c.deadline_usec, t + 10 + 500);
	assert_int_equal(qj_cycle_on_holds(&c, 2, t + 100), 0);
	assert_int_equal(c.deadline_usec, t + 10 + 500); /* from the first hold */
	assert_int_equal(qj_cycle_on_holds(&c, 0, t + 210), 0);
	assert_int_equal(c.state, QJ_CYCLE_IDLE_WAIT);
	assert_true(c.kept);
	assert_int_equal(qj_cycle_on_timer(&c, t + 210 + IDLE), QJ_CYCLE_DO_QUIESCE_KEPT);
	assert_int_equal(qj_cycle_on_quiesce(&c, 1, 0, t + 210 + IDLE), QJ_CYCLE_DO_BACKEND_START);
	t += 210 + IDLE;
	/* Music: a hold past dark_wake_max restores the jail, the machine stays awake. */
	assert_int_equal(qj_cycle_on_backend(&c, 0, t), QJ_CYCLE_DO_KEEP);
	assert_int_equal(qj_cycle_on_holds(&c, 1, t + 1), 0);
	assert_int_equal(qj_cycle_on_timer(&c, t + 500), 0);
	assert_true(c.kept);
	assert_int_equal(qj_cycle_on_timer(&c, t + 501),
			 QJ_CYCLE_DO_RESTORE | QJ_CYCLE_DO_RESUME_WAITERS);
	assert_true(c.restoring_kept);
	assert_false(c.kept);
	assert_false(qj_cycle_jail_quiesced(&c));
	assert_int_equal(c.state, QJ_CYCLE_AWAKE);
	assert_int_equal(c.deadline_usec, USEC_INFINITY);
	/* Released: a normal cycle. */
	qj_cycle_on_holds(&c, 0, t + 600);
	assert_int_equal(qj_cycle_on_timer(&c, t + 600 + IDLE),
			 QJ_CYCLE_DO_QUIESCE_BEGIN | QJ_CYCLE_DO_QUIESCE_STEP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cycle_full_suspend_and_resume),
		cmocka_unit_test(test_cycle_timer_before_deadline_does_nothing),
		cmocka_unit_test(test_cycle_hold_during_idle_wait),
		cmocka_unit_test(test_cycle_quiesce_steps_then_hold_aborts),
		cmocka_unit_test(test_cycle_hold_interrupts_backend),
		cmocka_unit_test(test_cycle_hold_released_before_interrupt_lands),
		cmocka_unit_test(test_cycle_ebusy_backoff_doubles_and_caps),
		cmocka_unit_test(test_cycle_quiesce_failure_retries),
		cmocka_unit_test(test_cycle_request_suspend),
		cmocka_unit_test(test_cycle_strings),
		cmocka_unit_test(test_cycle_delay_holds),
		cmocka_unit_test(test_cycle_dark_wake_keeps_the_jail),
		cmocka_unit_test(test_cycle_dark_wake_hold_restores),
		cmocka_unit_test(test_cycle_dark_wake_preparing_and_off),
		cmocka_unit_test(test_cycle_dark_wake_failures_restore),
		cmocka_unit_test(test_cycle_dark_wake_short_hold_keeps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
