// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Cycle events and delay holds (issue 16) against a real daemon on the dry-run backend:
 * every event reaches a subscriber in order, a delay hold that is ready in time is
 * waited for and one that overruns max_delay is not (and the log says so), a subscriber
 * that never reads is dropped without holding anything up, and a notified app that
 * blocked after SIGXCPU learns of the resume through its subscription.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "itest.h"
#include "qosjail.h"
#include "util.h"

#define NOBODY 65534

static const char policy_events[] = "version: 1\n"
				    "suspend: { backend: dry-run, idle_delay: 1h, "
				    "dry_run_length: 200ms, max_delay: 20s }\n"
				    "jail:\n"
				    "  cgroup: @CG@\n"
				    "  cpu_cgroup: @CPU@\n"
				    "  busy_threshold: 20%\n"
				    "  sample_window: 300ms\n"
				    "escalation:\n"
				    "  ladder:\n"
				    "    - { action: SIGXCPU, grace: 1h }\n"
				    "    - { action: SIGSTOP, grace: 1h }\n"
				    "apps:\n"
				    "  - name: app\n"
				    "    match: { exe: \"/nonexistent/app\" }\n";

static int setup(void **state)
{
	return harness_setup(state, policy_events);
}

/* The next event (waiting up to 30 s), parsed; the test fails without one. */
static json_t *next_event(struct qj_conn *c)
{
	char *text = NULL;
	json_t *j;

	assert_int_equal(qj_event_next(c, 30000, &text), 0);
	j = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(j);
	return j;
}

/* Checks the next event is @name of cycle @cycle (0: any); returns its cycle. */
static long long expect_event(struct qj_conn *c, const char *name, long long cycle,
			      const char *result)
{
	json_t *j = next_event(c);
	long long id = json_integer_value(json_object_get(j, "cycle"));

	assert_string_equal(json_string_value(json_object_get(j, "event")), name);
	if (cycle)
		assert_int_equal(id, cycle);
	if (result)
		assert_string_equal(json_string_value(json_object_get(j, "result")), result);
	json_decref(j);
	return id;
}

static void wait_suspend(struct harness *h, struct qj_conn *c)
{
	for (int i = 0; i < 3000; i++) {
		int r = qj_suspend(c);

		if (r == 0)
			return;
		assert_int_equal(r, -EALREADY); /* the last cycle has not settled yet */
		msleep(10);
	}
	fail_msg("no cycle could be started");
}

/*
 * Every event, in order, for three cycles, to a plain subscriber; a delay hold makes
 * each cycle wait in "preparing" until it is ready, then the cycle goes on.
 */
static void test_events_in_order_and_delay_waited_for(void **state)
{
	struct harness *h = *state;
	struct qj_conn *watch = NULL, *delay = NULL, *ctl = NULL;
	long long id;

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &watch), 0);
	assert_int_equal(qj_open(h->socket, &delay), 0);
	assert_int_equal(qj_open(h->socket, &ctl), 0);
	assert_int_equal(qj_subscribe(watch, 0), 0);
	assert_int_equal(qj_subscribe(watch, 0), -EEXIST);
	assert_int_equal(qj_subscribe(delay, QJ_SUBSCRIBE_DELAY), 0);
	for (int k = 0; k < 3; k++) {
		json_t *j;

		wait_suspend(h, ctl);
		id = expect_event(watch, "quiescing", 0, NULL);
		j = next_event(delay);
		assert_string_equal(json_string_value(json_object_get(j, "event")), "quiescing");
		assert_true(json_is_true(json_object_get(j, "delay")));
		assert_int_equal(json_integer_value(json_object_get(j, "cycle")), id);
		json_decref(j);
		/* It waits for us, however slow this machine is (max_delay is 20 s). */
		msleep(300);
		assert_true(harness_wait_state(h, "preparing", 0));
		assert_int_equal(qj_ready(delay, (uint64_t)id), 0);
		assert_int_equal(qj_ready(delay, (uint64_t)id), -ESTALE);
		expect_event(watch, "suspending", id, NULL);
		expect_event(watch, "resumed", id, "suspended");
		expect_event(delay, "suspending", id, NULL);
		expect_event(delay, "resumed", id, "suspended");
	}
	qj_close(watch);
	qj_close(delay);
	qj_close(ctl);
}

/* A delay hold that never says ready holds the cycle up for max_delay, not longer. */
static void test_delay_overrun_not_waited_for(void **state)
{
	struct harness *h = *state;
	struct qj_conn *delay = NULL, *ctl = NULL;
	long long id;

	REQUIRE_HARNESS(h);
	assert_int_equal(harness_write_policy(h, h->policy,
					      "version: 1\n"
					      "suspend: { backend: dry-run, idle_delay: 1h, "
					      "dry_run_length: 200ms, max_delay: 300ms }\n"),
			 0);
	assert_int_equal(qj_open(h->socket, &ctl), 0);
	assert_int_equal(qj_reload(ctl, NULL), 0);
	assert_int_equal(qj_open(h->socket, &delay), 0);
	assert_int_equal(qj_subscribe(delay, QJ_SUBSCRIBE_DELAY), 0);
	wait_suspend(h, ctl);
	id = expect_event(delay, "quiescing", 0, NULL);
	expect_event(delay, "suspending", id, NULL);
	assert_true(harness_log_has(h, "not ready within max_delay (300 ms): not waited for"));
	expect_event(delay, "resumed", id, "suspended");
	assert_int_equal(qj_ready(delay, (uint64_t)id), -ESTALE);
	qj_close(delay);
	qj_close(ctl);
}

static int nobody_delay(void *arg)
{
	struct qj_conn *c = NULL;
	int r;

	if (qj_open(arg, &c) < 0)
		return 98;
	r = qj_subscribe(c, QJ_SUBSCRIBE_DELAY);
	qj_close(c);
	return r == -EPERM ? 0 : 1;
}

/* access.delay (root by default) decides who may hold a cycle up; watching is open. */
static void test_delay_needs_access(void **state)
{
	struct harness *h = *state;

	REQUIRE_HARNESS(h);
	assert_int_equal(harness_run_as(NOBODY, nobody_delay, h->socket), 0);
}

/*
 * A subscriber that never reads is dropped with a log line once its unread events pile
 * up; cycles go on, and a subscriber that reads gets every event in order meanwhile.
 */
static void test_slow_subscriber_dropped(void **state)
{
	struct harness *h = *state;
	struct qj_conn *slow = NULL, *watch = NULL, *ctl = NULL;
	bool dropped = false;
	int cycles = 0;

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &slow), 0);
	assert_int_equal(qj_open(h->socket, &watch), 0);
	assert_int_equal(qj_open(h->socket, &ctl), 0);
	assert_int_equal(qj_subscribe(slow, 0), 0);
	assert_int_equal(qj_subscribe(watch, 0), 0);
	/* About 1 KiB of kernel accounting a message: 64 KiB is some 20 cycles. */
	while (!dropped) {
		long long id;
		json_t *st;

		assert_true(cycles < 200);
		wait_suspend(h, ctl);
		id = expect_event(watch, "quiescing", 0, NULL);
		expect_event(watch, "suspending", id, NULL);
		expect_event(watch, "resumed", id, "suspended");
		cycles++;
		st = harness_status(h);
		assert_non_null(st);
		dropped = json_integer_value(json_object_get(st, "subscribers")) == 1;
		json_decref(st);
	}
	print_message("slow subscriber dropped after %d cycles\n", cycles);
	assert_true(harness_log_has(h, "dropped: it does not read its events"));
	qj_close(slow);
	qj_close(watch);
	qj_close(ctl);
}

/*
 * A jailed app that consented to the notify rung blocks after SIGXCPU: it is not
 * stopped, so no SIGCONT comes at the resume; its subscription's "resumed" event is how
 * it learns the system is awake again.
 */
static void test_notified_app_learns_resume(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	char exe[512], buf[4096] = "";
	int in[2], out[2];
	size_t len = 0;
	pid_t pid;

	REQUIRE_HARNESS(h);
	snprintf(exe, sizeof(exe), "%s/tests/apps/qj-consent", getenv("QJ_BUILD_DIR"));
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		setenv("QOSJAIL_SOCKET", h->socket, 1);
		execl(exe, "qj-consent", "consent", "subscribe", (char *)NULL);
		_exit(127);
	}
	harness_track(pid);
	close(in[0]);
	close(out[1]);
	assert_true(read(out[0], buf, sizeof(buf) - 1) > 0);
	buf[0] = '\0';
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_place(c, "app", pid), 0);
	assert_int_equal(write(in[1], "g", 1), 1);
	/* Subscribed before the cycle starts, so every event of it is there to read. */
	while (!strstr(buf, "subscribed")) {
		ssize_t n = read(out[0], buf + len, sizeof(buf) - 1 - len);

		assert_true(n > 0);
		len += (size_t)n;
		buf[len] = '\0';
	}
	assert_int_equal(qj_suspend(c), 0);
	/* Read what it prints until it reports the resume, at most 60 s. */
	for (int i = 0; i < 600 && !strstr(buf, "\"resumed\""); i++) {
		struct pollfd p = { .fd = out[0], .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(out[0], buf + len, sizeof(buf) - 1 - len);
		assert_true(n > 0);
		len += (size_t)n;
		buf[len] = '\0';
	}
	print_message("qj-consent printed:\n%s", buf);
	assert_non_null(strstr(buf, "consent 0\n"));
	assert_non_null(strstr(buf, "subscribed 0\n"));
	assert_non_null(strstr(buf, "xcpu\n"));
	assert_non_null(strstr(buf, "\"event\":\"quiescing\""));
	assert_non_null(strstr(buf, "\"event\":\"resumed\""));
	assert_non_null(strstr(buf, "\"result\":\"suspended\""));
	/* Told, blocked, never stopped. */
	assert_true(strstr(buf, "xcpu\n") < strstr(buf, "\"resumed\""));
	assert_true(itest_state(pid) != 'T');
	close(in[1]);
	close(out[0]);
	qj_close(c);
}

/* qosjailctl monitor --json prints one event object a line, as they happen. */
static void test_monitor_prints_events(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	char ctl[512], cmd[1200], line[512];
	int lines = 0;
	FILE *f;

	REQUIRE_HARNESS(h);
	snprintf(ctl, sizeof(ctl), "%s/controller/qosjailctl", getenv("QJ_BUILD_DIR"));
	snprintf(cmd, sizeof(cmd), "%s --socket %s monitor --json --count 3", ctl, h->socket);
	f = popen(cmd, "re");
	assert_non_null(f);
	assert_int_equal(qj_open(h->socket, &c), 0);
	/* Subscribed once the daemon counts it. */
	for (int i = 0; i < 1000; i++) {
		json_t *st = harness_status(h);
		long long n = json_integer_value(json_object_get(st, "subscribers"));

		json_decref(st);
		if (n >= 1)
			break;
		msleep(20);
	}
	wait_suspend(h, c);
	while (fgets(line, sizeof(line), f)) {
		static const char *const want[] = { "quiescing", "suspending", "resumed" };
		json_t *j = json_loads(line, 0, NULL);

		assert_non_null(j);
		assert_true(lines < 3);
		assert_string_equal(json_string_value(json_object_get(j, "event")), want[lines]);
		json_decref(j);
		lines++;
	}
	assert_int_equal(pclose(f), 0);
	assert_int_equal(lines, 3);
	qj_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_events_in_order_and_delay_waited_for, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_delay_overrun_not_waited_for, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_delay_needs_access, setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_slow_subscriber_dropped, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_notified_app_learns_resume, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_monitor_prints_events, setup,
						harness_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
