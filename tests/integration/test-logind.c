// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The logind bridge (issue 16) against real D-Bus: a private dbus-daemon with Debian's
 * system-bus policy stands in for the system bus, python3-dbusmock's logind template
 * (extended by logind-template.py to record the caller and announce BlockInhibited, as
 * logind does) for logind (tests/integration/logind-bus.c), and systemd-inhibit takes the
 * inhibitors.  qosjaild reaches them through DBUS_SYSTEM_BUS_ADDRESS, on the dry-run
 * backend.
 */
#include <errno.h>
#include <fcntl.h>
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "itest.h"
#include "logind-bus.h"
#include "qosjail.h"
#include "util.h"

#define NOBODY 65534

static const char policy_logind[] = "version: 1\n"
				    "suspend: { backend: dry-run, idle_delay: 200ms, "
				    "dry_run_length: 100ms }\n"
				    "apps:\n"
				    "  - name: app\n"
				    "logind: { inhibitors: { uids: [0] } }\n";

static int setup(void **state)
{
	return harness_setup(state, policy_logind);
}

/*
 * A block inhibitor of a listed uid is a hold named after its WHO with its uid and pid,
 * and the daemon stays awake while it lives; its release lets the cycle run.  A delay
 * inhibitor, and one of an unlisted uid, do not count.
 */
static void test_inhibitor_is_a_hold(void **state)
{
	struct harness *h = *state;
	char buf[64];
	pid_t call, delay, other;
	long long before;

	REQUIRE_HARNESS(h);
	call = logind_inhibit("video-call", "a call is on", "block", 0);
	assert_true(logind_wait_hold(h, "logind:video-call", true, call, 0));
	assert_string_equal(logind_status_state(h, buf, sizeof(buf)), "awake");

	delay = logind_inhibit("saver", "saves state", "delay", 0);
	other = logind_inhibit("music", "playing", "block", NOBODY);
	assert_true(harness_log_has(h, "logind inhibitor 'music' (playing) of pid"));
	assert_true(harness_log_has(h, "does not count: uid not in logind.inhibitors"));
	assert_true(logind_wait_hold(h, "logind:saver", false, 0, 0));
	assert_true(logind_wait_hold(h, "logind:music", false, 0, 0));

	before = harness_wait_int(h, "suspends", 0, 0);
	assert_string_equal(logind_status_state(h, buf, sizeof(buf)), "awake");
	logind_stop(&call);
	assert_true(logind_wait_hold(h, "logind:video-call", false, 0, 0));
	assert_true(harness_wait_int(h, "suspends", before + 1, 60000) > before);
	assert_true(harness_log_has(h, "logind inhibitor 'video-call' (a call is on) of pid"));
	logind_stop(&delay);
	logind_stop(&other);
}

/* An inhibitor whose process is in the jail never counts: placing it drops the hold. */
static void test_jailed_inhibitor_does_not_count(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	long long before;
	pid_t pid;

	REQUIRE_HARNESS(h);
	pid = logind_inhibit("jailed-player", "plays", "block", 0);
	assert_true(logind_wait_hold(h, "logind:jailed-player", true, pid, 0));
	before = harness_wait_int(h, "suspends", 0, 0);
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_place(c, "app", pid), 0);
	qj_close(c);
	assert_true(logind_wait_hold(h, "logind:jailed-player", false, 0, 0));
	assert_true(harness_log_has(h, "does not count: jailed in app app"));
	if (harness_wait_int(h, "suspends", before + 1, 60000) <= before) {
		harness_dump_log(h);
		fail_msg("no cycle once the inhibitor's process was jailed");
	}
	logind_stop(&pid);
}

/* A ListInhibitors that fails is not "no inhibitors": the hold "logind" keeps it awake. */
static void test_failed_list_fails_closed(void **state)
{
	struct harness *h = *state;
	char buf[64];
	long long before;

	REQUIRE_HARNESS(h);
	assert_int_equal(logind_mock_set_list_error("org.freedesktop.DBus.Error.AccessDenied"), 0);
	assert_true(logind_wait_hold(h, "logind", true, 0, 0));
	assert_string_equal(logind_status_state(h, buf, sizeof(buf)), "awake");
	assert_true(harness_log_has(
		h, "ListInhibitors failed (org.freedesktop.DBus.Error.AccessDenied)"));
	/* Each retry line says the delay it then waits: 1 s, then 2 s (it said 1 s twice). */
	assert_true(harness_log_has(h, "retrying in 2 s"));
	{
		char line[1024], seen[8] = "";
		FILE *f = fopen(h->log, "re");
		size_t n = 0;

		assert_non_null(f);
		while (n < 2 && fgets(line, sizeof(line), f)) {
			char *p = strstr(line, "retrying in ");

			if (p)
				seen[n++] = p[strlen("retrying in ")];
		}
		fclose(f);
		assert_string_equal(seen, "12");
	}
	before = harness_wait_int(h, "suspends", 0, 0);
	assert_int_equal(logind_mock_set_list_error(""), 0);
	assert_true(logind_wait_hold(h, "logind", false, 0, 0));
	assert_true(harness_wait_int(h, "suspends", before + 1, 60000) > before);
}

static const char policy_latency[] = "version: 1\n"
				     "suspend: { backend: dry-run, idle_delay: 0, "
				     "dry_run_length: 50ms }\n";

static int setup_latency(void **state)
{
	return harness_setup(state, policy_latency);
}

/* Reads events until "quiescing"; returns CLOCK_MONOTONIC usec of its arrival. */
static uint64_t next_quiescing(struct qj_conn *c)
{
	for (;;) {
		char *text = NULL;

		assert_int_equal(qj_event_next(c, 30000, &text), 0);
		if (strstr(text, "\"quiescing\"")) {
			free(text);
			return now_usec(CLOCK_MONOTONIC);
		}
		free(text);
	}
}

static void drain(struct qj_conn *c)
{
	char *text = NULL;

	while (qj_event_next(c, 0, &text) == 0)
		free(text);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The time from an inhibitor's release to the cycle starting (its "quiescing" event),
 * against the release of an ordinary qosjail hold in the same run, idle_delay 0.  A
 * figure, not a pass/fail bound: the inhibitor's path goes through logind's signal and
 * a ListInhibitors round trip.
 */
#define SAMPLES 7
static void test_release_to_cycle_latency(void **state)
{
	struct harness *h = *state;
	struct qj_conn *ev = NULL, *holder = NULL;
	uint64_t hold_us[SAMPLES], inh_us[SAMPLES], t;

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &ev), 0);
	assert_int_equal(qj_open(h->socket, &holder), 0);
	assert_int_equal(qj_subscribe(ev, 0), 0);
	for (int i = 0; i < SAMPLES; i++) {
		pid_t pid;

		assert_int_equal(qj_hold(holder, "baseline", "measuring", 0, 0), 0);
		assert_true(harness_wait_state(h, "awake", 20000));
		drain(ev);
		t = now_usec(CLOCK_MONOTONIC);
		assert_int_equal(qj_release(holder, "baseline"), 0);
		hold_us[i] = next_quiescing(ev) - t;

		pid = logind_inhibit("measured", "measuring", "block", 0);
		assert_true(logind_wait_hold(h, "logind:measured", true, pid, 0));
		assert_true(harness_wait_state(h, "awake", 20000));
		drain(ev);
		t = now_usec(CLOCK_MONOTONIC);
		logind_stop(&pid);
		inh_us[i] = next_quiescing(ev) - t;
	}
	qsort(hold_us, SAMPLES, sizeof(*hold_us), cmp_u64);
	qsort(inh_us, SAMPLES, sizeof(*inh_us), cmp_u64);
	print_message("release to cycle start, median of %d: logind inhibitor %.2f ms, qosjail "
		      "hold (baseline) %.2f ms, ratio %.1fx\n",
		      SAMPLES, inh_us[SAMPLES / 2] / 1000.0, hold_us[SAMPLES / 2] / 1000.0,
		      hold_us[SAMPLES / 2] ? (double)inh_us[SAMPLES / 2] / hold_us[SAMPLES / 2] :
					     0.0);
	qj_close(holder);
	qj_close(ev);
}

/* No system bus: one log line, and the daemon runs and suspends as without the bridge. */
static void test_no_bus_runs_without_bridge(void **state)
{
	struct harness *h;
	const char *why;
	char saved[sizeof(logind_bus_address)];

	(void)state;
	if (!itest_available(&why))
		skip();
	snprintf(saved, sizeof(saved), "%s", logind_bus_address);
	setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/qosjail-test-bus", 1);
	h = calloc(1, sizeof(*h));
	assert_non_null(h);
	assert_int_equal(harness_start(h, policy_logind), 0);
	setenv("DBUS_SYSTEM_BUS_ADDRESS", saved, 1);
	assert_true(harness_log_has(h, "logind bridge off: no system bus"));
	assert_true(harness_wait_int(h, "suspends", 1, 60000) >= 1);
	assert_int_equal(harness_stop(h), 0);
	harness_cleanup(h);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_inhibitor_is_a_hold, setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_jailed_inhibitor_does_not_count, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_failed_list_fails_closed, setup,
						harness_teardown),
		cmocka_unit_test(test_no_bus_runs_without_bridge),
		cmocka_unit_test_setup_teardown(test_release_to_cycle_latency, setup_latency,
						harness_teardown),
	};

	return cmocka_run_group_tests(tests, logind_bus_up, logind_bus_down);
}
