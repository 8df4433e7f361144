// SPDX-License-Identifier: LGPL-2.1-or-later
/* The escalation ladder over simulated time: table-driven, no syscalls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ladder.h"
#include "test-policy.h"
#include "util.h"

#define G (500 * USEC_PER_MSEC)
#define T0 (1000 * USEC_PER_SEC)

enum app_kind { APP_DEFAULT, APP_EXEMPT, APP_MAX1, APP_START2, APP_NO_CONSENT };

struct ladder_case {
	const char *name;
	enum app_kind app;
	struct qj_ladder_task task;
	uint64_t now;
	int ret;
	enum qj_ladder_verdict verdict;
	int rung;
	uint64_t next;
};

static const struct ladder_case cases[] = {
	{ "busy, catches sigxcpu: notify first",
	  APP_DEFAULT,
	  { -1, 0, QJ_TASK_BUSY, true, 0, false },
	  T0,
	  0,
	  QJ_LADDER_APPLY,
	  0,
	  USEC_INFINITY },
	{ "busy, catches sigxcpu, no notify consent in the policy: skip sigxcpu",
	  APP_NO_CONSENT,
	  { -1, 0, QJ_TASK_BUSY, true, 0, false },
	  T0,
	  0,
	  QJ_LADDER_APPLY,
	  1,
	  USEC_INFINITY },
	{ "busy, catches sigxcpu, no consent in the policy, the process consents: notify first",
	  APP_NO_CONSENT,
	  { -1, 0, QJ_TASK_BUSY, true, 0, true },
	  T0,
	  0,
	  QJ_LADDER_APPLY,
	  0,
	  USEC_INFINITY },
	{ "busy, consents but does not catch sigxcpu: skip sigxcpu",
	  APP_NO_CONSENT,
	  { -1, 0, QJ_TASK_BUSY, false, 0, true },
	  T0,
	  0,
	  QJ_LADDER_APPLY,
	  1,
	  USEC_INFINITY },
	{ "busy, no handler: skip sigxcpu",
	  APP_DEFAULT,
	  { -1, 0, QJ_TASK_BUSY, false, 0, false },
	  T0,
	  0,
	  QJ_LADDER_APPLY,
	  1,
	  USEC_INFINITY },
	{ "busy inside grace: wait",
	  APP_DEFAULT,
	  { 0, T0, QJ_TASK_BUSY, true, 0, false },
	  T0 + G - 1,
	  0,
	  QJ_LADDER_WAIT,
	  -1,
	  T0 + G },
	{ "busy after grace: sigstop",
	  APP_DEFAULT,
	  { 0, T0, QJ_TASK_BUSY, true, 0, false },
	  T0 + G,
	  0,
	  QJ_LADDER_APPLY,
	  1,
	  USEC_INFINITY },
	{ "busy after sigstop grace: sigterm",
	  APP_DEFAULT,
	  { 1, T0, QJ_TASK_BUSY, false, 0, false },
	  T0 + G,
	  0,
	  QJ_LADDER_APPLY,
	  2,
	  USEC_INFINITY },
	{ "busy after sigterm grace: sigkill",
	  APP_DEFAULT,
	  { 2, T0, QJ_TASK_BUSY, false, 0, false },
	  T0 + G,
	  0,
	  QJ_LADDER_APPLY,
	  3,
	  USEC_INFINITY },
	{ "busy after sigkill: exhausted",
	  APP_DEFAULT,
	  { 3, T0, QJ_TASK_BUSY, false, 0, false },
	  T0 + G,
	  0,
	  QJ_LADDER_EXHAUSTED,
	  -1,
	  USEC_INFINITY },
	{ "stopped counts as blocked",
	  APP_DEFAULT,
	  { 1, T0, QJ_TASK_STOPPED, false, 0, false },
	  T0,
	  0,
	  QJ_LADDER_DONE,
	  -1,
	  USEC_INFINITY },
	{ "idle: nothing to do",
	  APP_DEFAULT,
	  { -1, 0, QJ_TASK_IDLE, false, 0, false },
	  T0,
	  0,
	  QJ_LADDER_DONE,
	  -1,
	  USEC_INFINITY },
	{ "polite blocked after sigxcpu",
	  APP_DEFAULT,
	  { 0, T0, QJ_TASK_IDLE, true, 0, false },
	  T0 + G,
	  0,
	  QJ_LADDER_DONE,
	  -1,
	  USEC_INFINITY },
	{ "gone",
	  APP_DEFAULT,
	  { 2, T0, QJ_TASK_GONE, false, 0, false },
	  T0,
	  0,
	  QJ_LADDER_DONE,
	  -1,
	  USEC_INFINITY },
	{ "frozen",
	  APP_DEFAULT,
	  { -1, 0, QJ_TASK_FROZEN, false, 0, false },
	  T0,
	  0,
	  QJ_LADDER_DONE,
	  -1,
	  USEC_INFINITY },
	{ "continued by other: climbs without waiting",
	  APP_DEFAULT,
	  { 1, T0, QJ_TASK_CONTINUED, false, 0, false },
	  T0 + 1,
	  0,
	  QJ_LADDER_APPLY,
	  2,
	  USEC_INFINITY },
	{ "unknown after action: wait for grace",
	  APP_DEFAULT,
	  { 1, T0, QJ_TASK_UNKNOWN, false, 0, false },
	  T0,
	  0,
	  QJ_LADDER_WAIT,
	  -1,
	  T0 + G },
	{ "unknown after action, grace over: only the engine's window can tell",
	  APP_DEFAULT,
	  { 1, T0, QJ_TASK_UNKNOWN, false, 0, false },
	  T0 + G,
	  0,
	  QJ_LADDER_WAIT,
	  -1,
	  USEC_INFINITY },
	{ "unknown before any action: engine's window",
	  APP_DEFAULT,
	  { -1, 0, QJ_TASK_UNKNOWN, false, 0, false },
	  T0,
	  0,
	  QJ_LADDER_WAIT,
	  -1,
	  USEC_INFINITY },
	{ "exempt busy app: never escalated",
	  APP_EXEMPT,
	  { -1, 0, QJ_TASK_BUSY, true, 0, false },
	  T0,
	  0,
	  QJ_LADDER_EXEMPT,
	  -1,
	  USEC_INFINITY },
	{ "exempt continued app: never escalated",
	  APP_EXEMPT,
	  { -1, 0, QJ_TASK_CONTINUED, true, 0, false },
	  T0,
	  0,
	  QJ_LADDER_EXEMPT,
	  -1,
	  USEC_INFINITY },
	{ "strikes below max: normal start",
	  APP_DEFAULT,
	  { -1, 0, QJ_TASK_BUSY, true, 2, false },
	  T0,
	  0,
	  QJ_LADDER_APPLY,
	  0,
	  USEC_INFINITY },
	{ "strikes at max: start at strike rung",
	  APP_DEFAULT,
	  { -1, 0, QJ_TASK_BUSY, true, 3, false },
	  T0,
	  0,
	  QJ_LADDER_APPLY,
	  1,
	  USEC_INFINITY },
	{ "max_rung caps the climb",
	  APP_MAX1,
	  { 1, T0, QJ_TASK_BUSY, false, 0, false },
	  T0 + G,
	  0,
	  QJ_LADDER_EXHAUSTED,
	  -1,
	  USEC_INFINITY },
	{ "continued at max_rung: exhausted",
	  APP_MAX1,
	  { 1, T0, QJ_TASK_CONTINUED, false, 0, false },
	  T0,
	  0,
	  QJ_LADDER_EXHAUSTED,
	  -1,
	  USEC_INFINITY },
	{ "start_rung",
	  APP_START2,
	  { -1, 0, QJ_TASK_BUSY, true, 0, false },
	  T0,
	  0,
	  QJ_LADDER_APPLY,
	  2,
	  USEC_INFINITY },
	{ "rung out of range",
	  APP_DEFAULT,
	  { 4, T0, QJ_TASK_BUSY, true, 0, false },
	  T0,
	  -EINVAL,
	  0,
	  0,
	  0 },
	{ "activity out of range",
	  APP_DEFAULT,
	  { -1, T0, _QJ_TASK_ACTIVITY_MAX, true, 0, false },
	  T0,
	  -EINVAL,
	  0,
	  0,
	  0 },
};

struct fixture {
	struct qj_policy *p;
	struct qj_app *apps[5];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	f->p = qj_test_policy_new(G);
	qj_test_policy_add_app(f->p, "default")->notify = true;
	qj_test_policy_add_app(f->p, "exempt")->exempt = true;
	qj_test_policy_add_app(f->p, "max1")->max_rung = 1;
	qj_test_policy_add_app(f->p, "start2")->start_rung = 2;
	qj_test_policy_add_app(f->p, "noconsent");
	for (int i = 0; i < 5; i++)
		f->apps[i] = &f->p->apps[i];
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	qj_policy_free(f->p);
	free(f);
	return 0;
}

static void test_ladder_decide_table(void **state)
{
	struct fixture *f = *state;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct ladder_case *c = &cases[i];
		struct qj_ladder_decision d = { .verdict = -1, .rung = -7, .next_usec = 7 };
		int r;

		print_message("case: %s\n", c->name);
		r = qj_ladder_decide(f->p, f->apps[c->app], &c->task, c->now, &d);
		assert_int_equal(r, c->ret);
		if (r < 0)
			continue;
		assert_int_equal(d.verdict, c->verdict);
		assert_int_equal(d.rung, c->rung);
		assert_true(d.next_usec == c->next);
	}
}

/*
 * Simulated time: a task whose behaviour after each rung is scripted climbs the
 * ladder; the sequence of applied rungs and their times is checked.
 */
struct sim_case {
	const char *name;
	enum app_kind app;
	bool catches;
	unsigned strikes;
	/* activity after rung i was applied (index by rung), BUSY before any */
	enum qj_task_activity after[QJ_POLICY_MAX_RUNGS];
	int want[QJ_POLICY_MAX_RUNGS + 1]; /* applied rungs, -1 terminated */
	enum qj_ladder_verdict final;
};

static const struct sim_case sims[] = {
	{ "busy loop: stopped",
	  APP_DEFAULT,
	  false,
	  0,
	  { QJ_TASK_BUSY, QJ_TASK_STOPPED },
	  { 1, -1 },
	  QJ_LADDER_DONE },
	{ "polite: notified, blocks",
	  APP_DEFAULT,
	  true,
	  0,
	  { QJ_TASK_IDLE },
	  { 0, -1 },
	  QJ_LADDER_DONE },
	{ "polite that keeps spinning: stopped after grace",
	  APP_DEFAULT,
	  true,
	  0,
	  { QJ_TASK_BUSY, QJ_TASK_STOPPED },
	  { 0, 1, -1 },
	  QJ_LADDER_DONE },
	{ "resurrected: sigterm kills",
	  APP_DEFAULT,
	  false,
	  0,
	  { QJ_TASK_BUSY, QJ_TASK_CONTINUED, QJ_TASK_GONE },
	  { 1, 2, -1 },
	  QJ_LADDER_DONE },
	{ "stubborn from sigterm: killed",
	  APP_START2,
	  false,
	  0,
	  { QJ_TASK_BUSY, QJ_TASK_BUSY, QJ_TASK_BUSY, QJ_TASK_GONE },
	  { 2, 3, -1 },
	  QJ_LADDER_DONE },
	{ "unkillable: exhausted",
	  APP_DEFAULT,
	  true,
	  0,
	  { QJ_TASK_BUSY, QJ_TASK_CONTINUED, QJ_TASK_BUSY, QJ_TASK_BUSY },
	  { 0, 1, 2, 3, -1 },
	  QJ_LADDER_EXHAUSTED },
	{ "repeat offender: starts at strike rung",
	  APP_DEFAULT,
	  true,
	  5,
	  { QJ_TASK_BUSY, QJ_TASK_STOPPED },
	  { 1, -1 },
	  QJ_LADDER_DONE },
	{ "capped at sigstop, resurrected",
	  APP_MAX1,
	  false,
	  0,
	  { QJ_TASK_BUSY, QJ_TASK_CONTINUED },
	  { 1, -1 },
	  QJ_LADDER_EXHAUSTED },
	{ "exempt", APP_EXEMPT, true, 0, { QJ_TASK_BUSY }, { -1 }, QJ_LADDER_EXEMPT },
};

static void test_ladder_decide_simulated_time(void **state)
{
	struct fixture *f = *state;

	for (size_t i = 0; i < ARRAY_SIZE(sims); i++) {
		const struct sim_case *c = &sims[i];
		struct qj_ladder_task t = { .rung = -1,
					    .activity = QJ_TASK_BUSY,
					    .catches_sigxcpu = c->catches,
					    .strikes = c->strikes };
		struct qj_ladder_decision d;
		uint64_t now = T0;
		size_t n = 0;

		print_message("sim: %s\n", c->name);
		for (int step = 0; step < 100; step++) {
			assert_int_equal(qj_ladder_decide(f->p, f->apps[c->app], &t, now, &d), 0);
			if (d.verdict == QJ_LADDER_APPLY) {
				assert_true(n < ARRAY_SIZE(c->want));
				assert_int_equal(d.rung, c->want[n]);
				n++;
				t.rung = d.rung;
				t.applied_usec = now;
				t.activity = c->after[d.rung];
				continue;
			}
			if (d.verdict != QJ_LADDER_WAIT)
				break;
			assert_true(d.next_usec > now);
			now = d.next_usec;
		}
		assert_int_equal(c->want[n], -1);
		assert_int_equal(d.verdict, c->final);
		/* Rungs after the first are never applied before their grace ran out. */
		assert_true(now - T0 <= n * G);
	}
}

static void test_ladder_names(void **state)
{
	(void)state;
	assert_string_equal(qj_task_activity_to_string(QJ_TASK_CONTINUED), "continued-by-other");
	assert_string_equal(qj_ladder_verdict_to_string(QJ_LADDER_EXHAUSTED), "exhausted");
	assert_true(qj_task_activity_is_blocked(QJ_TASK_STOPPED));
	assert_false(qj_task_activity_is_blocked(QJ_TASK_CONTINUED));
	assert_false(qj_task_activity_is_blocked(QJ_TASK_UNKNOWN));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ladder_decide_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ladder_decide_simulated_time, setup, teardown),
		cmocka_unit_test(test_ladder_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
