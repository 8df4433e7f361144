// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Dark wakes (issue 29, suspend.dark_wake): with keep-quiesced, a suspend that returns
 * with no hold keeps the jail quiesced, and the next cycle finds nothing ran and goes on
 * without a sample window; a trusted hold restores it.  The hostile cases: a jailed app
 * that was idle (never stopped) and spins during the dark wake must be sampled and
 * stopped again, and a process that someone continues must not pass as quiesced.
 * The dry-run backend "sleeps" dry_run_length with the machine running, which is the
 * harder case: jailed idle tasks really do run during it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "itest.h"
#include "qosjail.h"

#define POLICY(MODE, MAX)                        \
	"version: 1\n"                           \
	"suspend:\n"                             \
	"  backend: dry-run\n"                   \
	"  idle_delay: 1s\n"                     \
	"  dry_run_length: 1s\n"                 \
	"  dark_wake: " MODE "\n"                \
	"  dark_wake_max: " MAX "\n"             \
	"jail:\n"                                \
	"  cgroup: @CG@\n"                       \
	"  cpu_cgroup: @CPU@\n"                  \
	"  busy_threshold: 20%\n"                \
	"  sample_window: 300ms\n"               \
	"escalation:\n"                          \
	"  ladder:\n"                            \
	"    - { action: SIGSTOP, grace: 1h }\n" \
	"apps:\n"                                \
	"  - name: busy\n"                       \
	"    match: { exe: \"/nonexistent/busy\" }\n"

static int setup_keep(void **state)
{
	return harness_setup(state, POLICY("keep-quiesced", "1s"));
}

/* Any hold restores the kept jail at once. */
static int setup_keep_any_hold(void **state)
{
	return harness_setup(state, POLICY("keep-quiesced", "0"));
}

static int setup_restore(void **state)
{
	return harness_setup(state, POLICY("restore", "1s"));
}

/* The kill log's records of @action, oldest first (a new reference). */
static json_t *records(struct harness *h, const char *action)
{
	char path[400], line[4096];
	json_t *v = json_array();
	FILE *f;

	snprintf(path, sizeof(path), "%s/kill.log", h->dir);
	f = fopen(path, "re");
	if (!f)
		return v;
	while (fgets(line, sizeof(line), f)) {
		json_t *o = json_loads(line, 0, NULL);
		const char *a = json_string_value(json_object_get(o, "action"));

		if (a && strcmp(a, action) == 0)
			json_array_append(v, o);
		json_decref(o);
	}
	fclose(f);
	return v;
}

static json_t *summaries(struct harness *h)
{
	return records(h, "summary");
}

static int stops(struct harness *h)
{
	json_t *v = records(h, "SIGSTOP");
	int n = (int)json_array_size(v);

	json_decref(v);
	return n;
}

static long long num(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static const char *str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static pid_t spawn(struct qj_conn *c, const char *script)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	pid_t pid;

	assert_int_equal(qj_spawn(c, "busy", argv, &pid, NULL), 0);
	harness_track(pid);
	return pid;
}

/* Waits until the daemon has suspended @n times; fails after @ms. */
static void wait_suspends(struct harness *h, long long n, int ms)
{
	if (harness_wait_int(h, "suspends", n, ms) < n) {
		harness_dump_log(h);
		fail_msg("fewer than %lld suspends in %d ms", n, ms);
	}
}

/* Waits until the jail is kept and the daemon in idle-wait (after a dark wake). */
static void wait_kept_idle(struct harness *h)
{
	for (int i = 0; i < 2000; i++) {
		json_t *j = harness_status(h);
		bool is_kept = json_is_true(json_object_get(j, "kept_quiesced")) &&
			       strcmp(str(j, "state"), "idle-wait") == 0;

		json_decref(j);
		if (is_kept)
			return;
		msleep(5);
	}
	fail_msg("the jail was not kept in idle-wait within 10 s");
}

/*
 * A spinner stopped by the first cycle stays stopped over the dark wakes that follow
 * (one SIGSTOP for all of them), and those cycles are quiesced without a sample window:
 * their quiesce_ms is far below the first cycle's, measured in the same run.  A short
 * trusted hold leaves it stopped, one that lasts dark_wake_max continues it.
 */
static void test_dark_wake_keeps_the_jail(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL, *holder = NULL;
	long long first_ms = -1, kept = 0, worst_kept_ms = 0;
	json_t *v, *s;
	size_t i;
	pid_t pid;
	char st = 0;

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &c), 0);
	pid = spawn(c, "while :; do :; done");
	wait_suspends(h, 4, 60000);
	/* Between suspends too: never continued by a dark wake. */
	for (i = 0; i < 20; i++) {
		if (!itest_stopped_or_stopping(pid))
			fail_msg("spinner %d runs after a dark wake (state %c)", pid,
				 itest_state(pid));
		msleep(50);
	}
	if (stops(h) != 1) {
		harness_dump_log(h);
		fail_msg("%d SIGSTOPs, not 1: a kept cycle started over", stops(h));
	}

	v = summaries(h);
	json_array_foreach (v, i, s) {
		if (json_is_true(json_object_get(s, "kept")) && first_ms < 0)
			first_ms = num(s, "quiesce_ms");
		else if (json_is_true(json_object_get(s, "kept"))) {
			kept++;
			if (num(s, "quiesce_ms") > worst_kept_ms)
				worst_kept_ms = num(s, "quiesce_ms");
		}
	}
	print_message("first cycle quiesced in %lld ms, %lld kept cycles in at most %lld ms\n",
		      first_ms, kept, worst_kept_ms);
	assert_true(first_ms >= 300); /* it sampled: at least one window */
	assert_true(kept >= 2);
	assert_true(worst_kept_ms * 4 < first_ms);
	json_decref(v);

	/* A short hold (a wake's handler, under dark_wake_max): the jail stays kept. */
	assert_int_equal(qj_open(h->socket, &holder), 0);
	wait_kept_idle(h);
	assert_int_equal(qj_hold(holder, "modem", "check", 0, 0), 0);
	assert_int_equal(qj_release(holder, "modem"), 0);
	for (i = 0; i < 20; i++) {
		if (!itest_stopped_or_stopping(pid))
			fail_msg("spinner %d continued by a short hold (state %c)", pid,
				 itest_state(pid));
		msleep(50);
	}
	/* A hold that lasts dark_wake_max: the machine stays awake, the jail runs again. */
	wait_kept_idle(h);
	assert_int_equal(qj_hold(holder, "user", "key press", 0, 0), 0);
	assert_true(harness_wait_state(h, "awake", 5000));
	for (i = 0; i < 1000 && (st = itest_state(pid)) == 'T'; i++)
		msleep(10);
	assert_true(st == 'R' || st == 'S');
	assert_true(harness_log_has(h, "kept since the dark wake is restored"));
	v = summaries(h);
	s = json_array_get(v, json_array_size(v) - 1);
	assert_string_equal(str(s, "reason"), "hold after a dark wake");
	json_decref(v);
	qj_close(holder);
	qj_close(c);
}

/*
 * Without the key (the default before issue 29): every resume continues the spinner,
 * and every cycle samples and stops it again.
 */
static void test_restore_mode_samples_every_cycle(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &c), 0);
	(void)spawn(c, "while :; do :; done");
	wait_suspends(h, 3, 60000);
	assert_true(stops(h) >= 3);
	qj_close(c);
}

/*
 * Hostile: an app idle when the jail was quiesced (never stopped: it still runs at
 * QOS_NONE) starts to spin during a dark wake.  The next cycle must see that the jail
 * ran, start over, and stop it, not suspend past it.
 */
static void test_idle_app_spinning_in_the_dark_wake_is_stopped(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	char fifo[300], script[400];
	int i, fd;
	pid_t late;

	REQUIRE_HARNESS(h);
	/* The test, not a sleep, says when it spins: two cycles may take longer than any
	 * fixed delay on a loaded machine. */
	snprintf(fifo, sizeof(fifo), "%s/go", h->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	snprintf(script, sizeof(script), "read x <%s; while :; do :; done", fifo);
	assert_int_equal(qj_open(h->socket, &c), 0);
	(void)spawn(c, "while :; do :; done");
	late = spawn(c, script);
	wait_suspends(h, 2, 60000);
	wait_kept_idle(h);
	assert_int_equal(itest_state(late), 'S'); /* idle: never stopped, still waiting */
	fd = open(fifo, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "go\n", 3), 3);
	close(fd);
	for (i = 0; i < 3000 && !itest_stopped_or_stopping(late); i++)
		msleep(10);
	if (!itest_stopped_or_stopping(late)) {
		harness_dump_log(h);
		fail_msg("late spinner %d not stopped (state %c)", late, itest_state(late));
	}
	assert_true(harness_log_has(h, "since the dark wake, quiescing the jail again"));
	qj_close(c);
}

/* Hostile: someone continues a stopped process during the dark wake. */
static void test_continued_process_is_not_quiesced(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	pid_t pid;
	int i;

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &c), 0);
	pid = spawn(c, "while :; do :; done");
	wait_suspends(h, 2, 60000);
	assert_true(itest_stopped_or_stopping(pid));
	/* As its owner would: the test started it. */
	assert_int_equal(kill(pid, SIGCONT), 0);
	for (i = 0; i < 3000; i++) {
		if (stops(h) >= 2)
			break;
		msleep(10);
	}
	assert_true(stops(h) >= 2);
	qj_close(c);
}

/* dark_wake_max: 0: any hold restores the kept jail at once. */
static void test_any_hold_restores_at_once(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL, *holder = NULL;
	pid_t pid;
	char st = 0;

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &c), 0);
	pid = spawn(c, "while :; do :; done");
	wait_suspends(h, 1, 60000);
	wait_kept_idle(h);
	assert_int_equal(qj_open(h->socket, &holder), 0);
	assert_int_equal(qj_hold(holder, "modem", "check", 0, 0), 0);
	for (int i = 0; i < 300 && (st = itest_state(pid)) == 'T'; i++)
		msleep(10);
	assert_true(st == 'R' || st == 'S');
	qj_close(holder);
	qj_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dark_wake_keeps_the_jail, setup_keep,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_any_hold_restores_at_once, setup_keep_any_hold,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_restore_mode_samples_every_cycle,
						setup_restore, harness_teardown),
		cmocka_unit_test_setup_teardown(test_idle_app_spinning_in_the_dark_wake_is_stopped,
						setup_keep, harness_teardown),
		cmocka_unit_test_setup_teardown(test_continued_process_is_not_quiesced, setup_keep,
						harness_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
