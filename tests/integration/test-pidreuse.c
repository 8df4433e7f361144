// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * PID reuse: a jailed process qosjail stopped dies and its PID goes to an
 * unrelated process outside the jail (forced with ns_last_pid).  Neither the
 * running engine's restore nor a restarted engine's undo may signal it: it
 * stays stopped where its owner stopped it.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
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

static void stop_jailed(struct itest *t, pid_t pid)
{
	uint64_t end = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
	struct qj_engine_counts c = {};

	assert_true(pid > 0);
	assert_int_equal(qj_engine_quiesce_begin(t->e, 1, now_usec(CLOCK_MONOTONIC)), 0);
	while (now_usec(CLOCK_MONOTONIC) < end) {
		uint64_t next;

		assert_true(qj_engine_quiesce_step(t->e, now_usec(CLOCK_MONOTONIC), &next) >= 0);
		assert_int_equal(qj_engine_counts(t->e, &c), 0);
		if (c.stopped == 1)
			return;
		usleep(50 * 1000);
	}
	fail_msg("the engine never stopped %d", pid);
}

/* Kills and reaps @pid, then starts an outside process with the same PID, stopped. */
static pid_t reuse_pid(struct itest *t, pid_t pid)
{
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	for (int tries = 0; tries < 2000; tries++) {
		char last[16];
		pid_t c;

		snprintf(last, sizeof(last), "%d", pid - 1);
		if (qj_write_file("/proc/sys/kernel/ns_last_pid", last) < 0)
			break;
		c = fork();
		assert_true(c >= 0);
		if (c == 0) {
			for (;;)
				pause();
		}
		if (c == pid) {
			assert_true(t->n_procs < ITEST_MAX_PROCS);
			t->procs[t->n_procs++] = c;
			assert_int_equal(kill(c, SIGSTOP), 0);
			for (int i = 0; i < 500 && itest_state(c) != 'T'; i++)
				usleep(10 * 1000);
			assert_int_equal(itest_state(c), 'T');
			return c;
		}
		kill(c, SIGKILL);
		waitpid(c, NULL, 0);
	}
	fail_msg("could not get PID %d again", pid);
	return -1;
}

static void test_pid_reuse_restore(void **state)
{
	struct itest *t = *state;
	pid_t victim, other;
	char got[128];
	uint64_t next;

	ITEST_REQUIRE(t);
	t->p->cpu_idle = false;
	qj_test_policy_add_app(t->p, "busy");
	assert_int_equal(itest_start_engine(t), 0);
	victim = itest_spawn(t, "qj-busy", "busy", NULL, 0);
	stop_jailed(t, victim);
	other = reuse_pid(t, victim);

	/* The engine notices the death; nothing reaches the new owner of the PID. */
	for (int i = 0; i < 10; i++) {
		assert_true(qj_engine_quiesce_step(t->e, now_usec(CLOCK_MONOTONIC), &next) >= 0);
		usleep(50 * 1000);
	}
	assert_int_equal(qj_engine_restore(t->e, "test"), 0);
	assert_int_equal(itest_state(other), 'T');
	assert_true(itest_log_of(t, victim, got, sizeof(got)) >= 0);
	/*
	 * Its death is logged for what it was: killed by someone else while stopped, by
	 * SIGKILL (the exit event, when process events are available).
	 */
	if (qj_engine_procmon_fd(t->e) >= 0) {
		assert_string_equal(got, "SIGSTOP:exited,exit:killed");
		assert_int_equal(itest_log_count_reason(t, victim, "SIGKILL"), 1);
	} else {
		assert_string_equal(got, "SIGSTOP:exited");
	}
}

static void test_pid_reuse_restart(void **state)
{
	struct itest *t = *state;
	pid_t victim, other;

	ITEST_REQUIRE(t);
	t->p->cpu_idle = false;
	qj_test_policy_add_app(t->p, "busy");
	assert_int_equal(itest_start_engine(t), 0);
	victim = itest_spawn(t, "qj-busy", "busy", NULL, 0);
	stop_jailed(t, victim);
	/* kill -9 of qosjaild; then the PID it recorded changes hands. */
	t->e = qj_engine_free(t->e);
	other = reuse_pid(t, victim);

	/* The state file names the PID, but the start time is not the recorded one. */
	assert_int_equal(itest_start_engine(t), 0);
	assert_int_equal(itest_state(other), 'T');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pid_reuse_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pid_reuse_restart, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
