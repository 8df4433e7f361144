// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Membership: the layout is detected, placement moves every thread (v2
 * cgroup.procs, v1 cpu tasks per thread), the clone3 cgroup fd opens, and a
 * process whose exe matches a jailed app's rule is jailed on exec through the
 * proc connector.
 */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cgroup.h"
#include "engine.h"
#include "itest.h"
#include "proc.h"
#include "procmon.h"
#include "test-policy.h"
#include "util.h"

static int setup(void **state)
{
	*state = itest_new(300 * USEC_PER_MSEC);
	return 0;
}

static int teardown(void **state)
{
	itest_free(*state);
	return 0;
}

static void test_layout_and_thread_placement(void **state)
{
	struct itest *t = *state;
	enum qj_cg_layout layout;
	char *mount = NULL, dir[512], tasks[600];
	pid_t spinner, *tids = NULL, *in = NULL;
	size_t n_tids = 0, n_in = 0;
	const char *app = NULL;
	int fd = -1;

	ITEST_REQUIRE(t);
	assert_int_equal(qj_cgroup_detect(&layout, &mount), 0);
	assert_true(layout == QJ_CG_UNIFIED || layout == QJ_CG_HYBRID);
	assert_true(strncmp(t->cg_path, mount, strlen(mount)) == 0);
	free(mount);

	qj_test_policy_add_app(t->p, "spinner");
	assert_int_equal(itest_start_engine(t), 0);
	spinner = itest_spawn(t, "qj-spinner", NULL, NULL, 0);
	assert_true(spinner > 0);
	assert_int_equal(qj_engine_app_of_pid(t->e, spinner, &app), 0);
	assert_int_equal(qj_engine_place(t->e, "spinner", spinner), 0);
	assert_int_equal(qj_engine_place(t->e, "nosuchapp", spinner), -ENOENT);
	assert_int_equal(qj_engine_app_of_pid(t->e, spinner, &app), 1);
	assert_string_equal(app, "spinner");

	if (layout == QJ_CG_HYBRID) {
		/* v1 membership is per thread: all five threads moved. */
		snprintf(dir, sizeof(dir), "%s/spinner", t->cpu_path);
		snprintf(tasks, sizeof(tasks), "%s/tasks", dir);
		assert_int_equal(qj_proc_tids(spinner, &tids, &n_tids), 0);
		assert_int_equal(n_tids, 5);
		assert_int_equal(qj_cgroup_read_pids(tasks, &in, &n_in), 0);
		for (size_t i = 0; i < n_tids; i++) {
			bool found = false;

			for (size_t j = 0; j < n_in; j++)
				found |= in[j] == tids[i];
			assert_true(found);
		}
		free(tids);
		free(in);
	}
	assert_int_equal(qj_engine_open_cgroup(t->e, "spinner", &fd), 0);
	assert_true(fd >= 0);
	close(fd);
}

static void test_exec_match_jails(void **state)
{
	struct itest *t = *state;
	struct qj_app *a;
	const char *app = NULL;
	pid_t sleeper, busy;
	char dir[128];
	int fd, r = 0;

	ITEST_REQUIRE(t);
	/* Only our private copies: never other tests' processes on this machine. */
	itest_bin_dir(t, dir, sizeof(dir));
	a = qj_test_policy_add_app(t->p, "sleepy");
	assert_true(asprintf(&a->match_exe, "%s/qj-sleep*", dir) > 0);
	a = qj_test_policy_add_app(t->p, "trusted-busy");
	assert_true(asprintf(&a->match_exe, "%s/qj-busy", dir) > 0);
	a->trust = QJ_TRUST_TRUSTED;
	assert_int_equal(itest_start_engine(t), 0);
	fd = qj_engine_procmon_fd(t->e);
	assert_true(fd >= 0);

	sleeper = itest_spawn(t, "qj-sleeper", NULL, NULL, 0);
	busy = itest_spawn(t, "qj-busy", NULL, NULL, 0);
	assert_true(sleeper > 0 && busy > 0);
	for (int i = 0; i < 100; i++) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, 100) > 0)
			assert_true(qj_engine_on_procmon(t->e) >= 0);
		r = qj_engine_app_of_pid(t->e, sleeper, &app);
		if (r == 1)
			break;
	}
	assert_int_equal(r, 1);
	assert_string_equal(app, "sleepy");
	/* Trusted apps are never jailed. */
	assert_int_equal(qj_engine_app_of_pid(t->e, busy, &app), 0);
}

/* Lost events (socket overrun): the engine resynchronises from /proc and cgroup.procs. */
static void test_overrun_resync(void **state)
{
	struct itest *t = *state;
	struct qj_app *a;
	const char *app = NULL;
	char dir[128];
	int fd, one = 1, r;
	pid_t sleeper;

	ITEST_REQUIRE(t);
	itest_bin_dir(t, dir, sizeof(dir));
	a = qj_test_policy_add_app(t->p, "sleepy");
	assert_true(asprintf(&a->match_exe, "%s/qj-sleep*", dir) > 0);
	assert_int_equal(itest_start_engine(t), 0);
	fd = qj_engine_procmon_fd(t->e);
	assert_true(fd >= 0);

	/* The smallest receive buffer, then a burst of forks: the queue overruns. */
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &one, sizeof(one)), 0);
	for (int i = 0; i < 300; i++) {
		pid_t c = fork();

		assert_true(c >= 0);
		if (c == 0)
			_exit(0);
		assert_int_equal(waitpid(c, NULL, 0), c);
	}
	/* Its exec event is dropped with the rest. */
	sleeper = itest_spawn(t, "qj-sleeper", NULL, NULL, 0);
	assert_true(sleeper > 0);
	assert_int_equal(qj_engine_app_of_pid(t->e, sleeper, &app), 0);

	r = qj_engine_on_procmon(t->e);
	assert_true(r >= 0);
	assert_int_equal(qj_engine_app_of_pid(t->e, sleeper, &app), 1);
	assert_string_equal(app, "sleepy");
}

/*
 * A burst of exec events is read a budget at a time: the event loop gets its
 * turn in between (a fork storm kept one read going for 38 s, past the quiesce
 * bound), and what is left stays queued for the next read.
 */
static void test_event_budget(void **state)
{
	struct itest *t = *state;
	struct pollfd pfd;
	int fd, r, reads = 0;

	ITEST_REQUIRE(t);
	assert_int_equal(itest_start_engine(t), 0);
	fd = qj_engine_procmon_fd(t->e);
	assert_true(fd >= 0);
	for (int i = 0; i < 3 * QJ_PROCMON_BUDGET; i++) {
		pid_t c = fork();

		if (c == 0) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		assert_true(c > 0);
		assert_int_equal(waitpid(c, NULL, 0), c);
	}
	r = qj_engine_on_procmon(t->e);
	assert_true(r > 0 && r <= QJ_PROCMON_BUDGET);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 0), 1); /* the rest is still queued */
	do {
		assert_true(qj_engine_on_procmon(t->e) >= 0);
		reads++;
		pfd.revents = 0;
	} while (poll(&pfd, 1, 0) == 1 && reads < 1000);
	assert_true(reads >= 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_layout_and_thread_placement, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_match_jails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overrun_resync, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_budget, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
