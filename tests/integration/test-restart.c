// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Restart safety and the freeze rung: a second engine (qosjaild restarted
 * after kill -9) continues what the first stopped, thaws what it froze and
 * restores the CPU class; the freeze rung shows in cgroup.events.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cgroup.h"
#include "itest.h"
#include "proc.h"
#include "test-policy.h"
#include "util.h"

#define GRACE (300 * USEC_PER_MSEC)

static int setup(void **state)
{
	*state = itest_new(GRACE);
	return 0;
}

static int teardown(void **state)
{
	itest_free(*state);
	return 0;
}

static bool sig_pending(pid_t pid, int sig)
{
	struct qj_proc_status ps;

	return qj_proc_status_read(pid, &ps) == 0 &&
	       ((ps.shdpnd | ps.sigpnd) & (1ULL << (sig - 1)));
}

static char *app_dir(struct itest *t, const char *app)
{
	char *p;

	assert_true(asprintf(&p, "%s/%s", t->cg_path, app) > 0);
	return p;
}

/* Polls cgroup.events KEY of @app for @want (tests only; the daemon uses POLLPRI). */
static bool wait_event(struct itest *t, const char *app, const char *key, int want)
{
	char *dir = app_dir(t, app), path[600];
	bool ok = false;

	snprintf(path, sizeof(path), "%s/cgroup.events", dir);
	for (int i = 0; i < 1000 && !ok; i++) {
		char *s = NULL, needle[32];

		snprintf(needle, sizeof(needle), "%s %d", key, want);
		if (qj_read_file(path, &s) == 0 && strstr(s, needle))
			ok = true;
		free(s);
		if (!ok)
			usleep(10 * 1000);
	}
	free(dir);
	return ok;
}

/* Steps until the engine holds @stopped tasks stopped and @frozen groups frozen. */
static void step_until(struct itest *t, unsigned stopped, unsigned frozen)
{
	uint64_t end = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
	struct qj_engine_counts c = {};

	while (now_usec(CLOCK_MONOTONIC) < end) {
		uint64_t next;

		assert_true(qj_engine_quiesce_step(t->e, now_usec(CLOCK_MONOTONIC), &next) >= 0);
		assert_int_equal(qj_engine_counts(t->e, &c), 0);
		if (c.stopped >= stopped && c.frozen >= frozen)
			return;
		usleep(50 * 1000);
	}
	fail_msg("engine did not stop %u and freeze %u (has %u, %u)", stopped, frozen, c.stopped,
		 c.frozen);
}

static void test_restart_undoes_leftovers(void **state)
{
	static const enum qj_action ladder[] = { QJ_ACTION_SIGSTOP, QJ_ACTION_FREEZE,
						 QJ_ACTION_SIGKILL };
	struct itest *t = *state;
	pid_t busy, frz, manual;
	char *frz_dir;

	ITEST_REQUIRE(t);
	qj_test_policy_set_ladder(t->p, ladder, ARRAY_SIZE(ladder), GRACE);
	qj_test_policy_add_app(t->p, "busy")->max_rung = 0;
	qj_test_policy_add_app(t->p, "frz")->start_rung = 1;
	qj_test_policy_add_app(t->p, "manual");
	assert_int_equal(itest_start_engine(t), 0);
	busy = itest_spawn(t, "qj-busy", "busy", NULL, 0);
	frz = itest_spawn(t, "qj-busy", "frz", NULL, 0);
	manual = itest_spawn(t, "qj-sleeper", "manual", NULL, 0);
	assert_true(busy > 0 && frz > 0 && manual > 0);

	assert_int_equal(qj_engine_quiesce_begin(t->e, 1, now_usec(CLOCK_MONOTONIC)), 0);
	step_until(t, 1, 1);
	assert_int_equal(itest_read_ll(t->cpu_path, "cpu.idle"), 1);

	/* kill -9 of qosjaild: memory gone, nothing undone. */
	t->e = qj_engine_free(t->e);
	assert_true(itest_state(busy) == 'T' || sig_pending(busy, SIGSTOP));
	frz_dir = app_dir(t, "frz");
	assert_int_equal(itest_read_ll(frz_dir, "cgroup.freeze"), 1);
	/* A task stopped behind qosjail's back is a leftover too. */
	assert_int_equal(kill(manual, SIGSTOP), 0);
	for (int i = 0; i < 500 && itest_state(manual) != 'T'; i++)
		usleep(10 * 1000);
	assert_int_equal(itest_state(manual), 'T');

	/* The next instance undoes all of it. */
	assert_int_equal(itest_start_engine(t), 0);
	assert_true(itest_state(busy) != 'T' && !sig_pending(busy, SIGSTOP));
	assert_int_equal(itest_read_ll(frz_dir, "cgroup.freeze"), 0);
	assert_true(wait_event(t, "frz", "frozen", 0));
	assert_true(itest_state(manual) != 'T');
	assert_int_equal(itest_read_ll(t->cpu_path, "cpu.idle"), 0);
	free(frz_dir);
}

static void test_freeze_rung_and_events(void **state)
{
	static const enum qj_action ladder[] = { QJ_ACTION_FREEZE, QJ_ACTION_SIGKILL };
	struct itest *t = *state;
	pid_t a, b;
	char got[128];
	struct qj_cgroup *cg;

	ITEST_REQUIRE(t);
	t->p->cpu_idle = false;
	qj_test_policy_set_ladder(t->p, ladder, ARRAY_SIZE(ladder), GRACE);
	qj_test_policy_add_app(t->p, "frz");
	assert_int_equal(itest_start_engine(t), 0);
	assert_true(wait_event(t, "frz", "populated", 0));
	a = itest_spawn(t, "qj-busy", "frz", NULL, 0);
	b = itest_spawn(t, "qj-spinner", "frz", NULL, 0);
	assert_true(a > 0 && b > 0);
	assert_true(wait_event(t, "frz", "populated", 1));
	assert_true(wait_event(t, "frz", "frozen", 0));

	assert_int_equal(itest_quiesce(t, 3, 30 * USEC_PER_SEC), 1);
	assert_true(wait_event(t, "frz", "frozen", 1));
	assert_int_equal(qj_engine_restore(t->e, "test"), 0);
	assert_true(wait_event(t, "frz", "frozen", 0));
	assert_true(itest_state(a) == 'R' || itest_state(a) == 'S');

	assert_true(itest_log_of(t, a, got, sizeof(got)) >= 0);
	assert_string_equal(got, "freeze:blocked");
	/* The group froze as a whole: the spinner needed no action of its own. */
	assert_true(itest_log_of(t, b, got, sizeof(got)) >= 0);
	assert_string_equal(got, "");
	assert_int_equal(itest_log_count_app(t, "frz", NULL), 1);

	/* cgroup.kill empties the group: populated goes to 0. */
	assert_int_equal(qj_cgroup_new(t->cg_path, t->cpu_path, &cg), 0);
	assert_int_equal(qj_cgroup_kill(cg, "frz"), 0);
	qj_cgroup_free(cg);
	assert_true(wait_event(t, "frz", "populated", 0));
}

/*
 * Timer slack a cycle raised is undone by the next instance after kill -9: back to each
 * thread's own value (a custom one, or the default for a thread that had the default).
 */
static void test_restart_restores_timer_slack(void **state)
{
	struct itest *t = *state;
	uint64_t v;
	pid_t custom, dflt;
	char path[64];

	ITEST_REQUIRE(t);
	t->p->cpu_idle = false;
	qj_test_policy_add_app(t->p, "idle");
	assert_int_equal(itest_start_engine(t), 0);
	custom = itest_spawn(t, "qj-sleeper", "idle", NULL, 0);
	dflt = itest_spawn(t, "qj-sleeper", "idle", NULL, 0);
	assert_true(custom > 0 && dflt > 0);
	snprintf(path, sizeof(path), "/proc/%d/timerslack_ns", custom);
	assert_int_equal(qj_write_file(path, "123456"), 0);
	assert_int_equal(qj_proc_timerslack_get(dflt, &v), 0);
	assert_int_equal(v, 50000); /* the kernel's default */

	assert_int_equal(itest_quiesce(t, 1, 30 * USEC_PER_SEC), 1);
	assert_int_equal(qj_proc_timerslack_get(custom, &v), 0);
	assert_int_equal(v, t->p->timer_slack_nsec);
	assert_int_equal(qj_proc_timerslack_get(dflt, &v), 0);
	assert_int_equal(v, t->p->timer_slack_nsec);

	/* kill -9 of qosjaild mid-cycle; the next instance undoes the slack. */
	t->e = qj_engine_free(t->e);
	assert_int_equal(itest_start_engine(t), 0);
	assert_int_equal(qj_proc_timerslack_get(custom, &v), 0);
	assert_int_equal(v, 123456);
	assert_int_equal(qj_proc_timerslack_get(dflt, &v), 0);
	assert_int_equal(v, 50000);
}

/* A starved task may not have acted on its SIGSTOP yet; it runs nothing of its own. */
static bool stopped_or_stopping(pid_t pid)
{
	struct qj_proc_status ps;

	return itest_state(pid) == 'T' || (qj_proc_status_read(pid, &ps) == 0 &&
					   ((ps.shdpnd | ps.sigpnd) & (1ULL << (SIGSTOP - 1))));
}

/* Strikes persist across cycles and restarts: a repeat offender starts higher. */
static void test_strikes_across_cycles_and_restart(void **state)
{
	struct itest *t = *state;
	pid_t first, second, third;
	char got[128];

	ITEST_REQUIRE(t);
	t->p->cpu_idle = false;
	t->p->max_strikes = 1;
	t->p->strike_rung = 2; /* sigterm */
	qj_test_policy_add_app(t->p, "busy");
	assert_int_equal(itest_start_engine(t), 0);

	first = itest_spawn(t, "qj-busy", "busy", NULL, 0);
	assert_int_equal(itest_quiesce(t, 1, 30 * USEC_PER_SEC), 1);
	assert_true(stopped_or_stopping(first));
	assert_int_equal(qj_engine_restore(t->e, "resume"), 0);
	/* Blocked once the stop took effect, restored if it was still queued (a loaded host). */
	assert_true(itest_log_of(t, first, got, sizeof(got)) >= 0);
	if (strcmp(got, "SIGSTOP:blocked") != 0 && strcmp(got, "SIGSTOP:restored") != 0)
		fail_msg("pid %d: %s, want SIGSTOP:blocked or SIGSTOP:restored", first, got);

	/* Cycle 2: one strike reaches max_strikes, the next busy task starts at sigterm. */
	second = itest_spawn(t, "qj-busy", "busy", NULL, 0);
	assert_int_equal(kill(first, SIGKILL), 0);
	assert_int_equal(itest_quiesce(t, 2, 30 * USEC_PER_SEC), 1);
	assert_int_equal(qj_engine_restore(t->e, "resume"), 0);
	assert_true(itest_log_of(t, second, got, sizeof(got)) >= 0);
	assert_string_equal(got, "SIGTERM:killed");

	/* A restarted daemon remembers the strikes (state file). */
	t->e = qj_engine_free(t->e);
	assert_int_equal(itest_start_engine(t), 0);
	third = itest_spawn(t, "qj-busy", "busy", NULL, 0);
	assert_int_equal(itest_quiesce(t, 3, 30 * USEC_PER_SEC), 1);
	assert_int_equal(qj_engine_restore(t->e, "resume"), 0);
	assert_true(itest_log_of(t, third, got, sizeof(got)) >= 0);
	assert_string_equal(got, "SIGTERM:killed");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_restart_undoes_leftovers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_restores_timer_slack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_freeze_rung_and_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strikes_across_cycles_and_restart, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
