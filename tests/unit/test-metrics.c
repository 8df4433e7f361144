// SPDX-License-Identifier: LGPL-2.1-or-later
/* The daemon's counters (pure part of daemon/metrics.c): buckets, results, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "metrics.h"
#include "util.h"

/* A bucket's bound is inclusive (le), as Prometheus counts; past the last is +Inf. */
static void test_metrics_quiesced_buckets(void **state)
{
	struct qj_metrics m = {};

	(void)state;
	qj_metrics_quiesced(&m, 100 * USEC_PER_MSEC); /* le 0.1 */
	qj_metrics_quiesced(&m, 100 * USEC_PER_MSEC + 1); /* le 0.25 */
	qj_metrics_quiesced(&m, 0); /* le 0.1 */
	qj_metrics_quiesced(&m, 61 * USEC_PER_SEC); /* +Inf */
	assert_int_equal(m.quiesce_le[0], 2);
	assert_int_equal(m.quiesce_le[1], 1);
	assert_int_equal(m.quiesce_le[QJ_METRICS_N_QUIESCE_BUCKETS], 1);
	assert_int_equal(m.quiesce_count, 4);
	assert_int_equal(m.quiesce_sum_usec, 200 * USEC_PER_MSEC + 1 + 61 * USEC_PER_SEC);
}

static void test_metrics_cycle_results(void **state)
{
	struct qj_metrics m = {};

	(void)state;
	qj_metrics_cycle_ended(&m, QJ_CYCLE_RESULT_SUSPENDED);
	qj_metrics_cycle_ended(&m, QJ_CYCLE_RESULT_FAILED);
	qj_metrics_cycle_ended(&m, QJ_CYCLE_RESULT_FAILED);
	qj_metrics_cycle_ended(&m, QJ_CYCLE_RESULT_NONE); /* no cycle ended: not counted */
	assert_int_equal(m.cycles[QJ_CYCLE_RESULT_SUSPENDED], 1);
	assert_int_equal(m.cycles[QJ_CYCLE_RESULT_FAILED], 2);
	assert_int_equal(m.cycles[QJ_CYCLE_RESULT_NONE], 0);
}

/* Errors counted by errno, a bounded table: the rest in one "other" row. */
static void test_metrics_backend_errors_bounded(void **state)
{
	struct qj_metrics m = {};

	(void)state;
	qj_metrics_backend_error(&m, -EBUSY);
	qj_metrics_backend_error(&m, -EBUSY);
	for (int e = 1; e <= QJ_METRICS_MAX_ERRORS + 3; e++)
		qj_metrics_backend_error(&m, -1000 - e);
	assert_int_equal(m.n_backend_errors, QJ_METRICS_MAX_ERRORS);
	assert_int_equal(m.backend_errors[0].error, -EBUSY);
	assert_int_equal(m.backend_errors[0].n, 2);
	assert_int_equal(m.backend_errors_other, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_quiesced_buckets),
		cmocka_unit_test(test_metrics_cycle_results),
		cmocka_unit_test(test_metrics_backend_errors_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
