// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The logind bridge (issue 16) against real D-Bus: a private dbus-daemon stands in for
 * the system bus, python3-dbusmock's logind template (extended by logind-template.py to
 * record the caller and announce BlockInhibited, as logind does) for logind, and
 * systemd-inhibit takes the inhibitors.  qosjaild reaches them through
 * DBUS_SYSTEM_BUS_ADDRESS, on the dry-run backend.
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
#include "qosjail.h"
#include "util.h"

#define NOBODY 65534

static char bus_dir[] = "/tmp/qj-logind-XXXXXX";
static char bus_address[400];
static pid_t bus_pid = -1, mock_pid = -1;

static const char bus_config[] =
	"<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
	" \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
	"<busconfig>\n"
	"  <type>system</type>\n"
	"  <listen>unix:path=%s/bus</listen>\n"
	"  <auth>EXTERNAL</auth>\n"
	"  <policy context=\"default\">\n"
	"    <allow user=\"*\"/>\n"
	"    <allow own=\"*\"/>\n"
	"    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
	"    <allow receive_sender=\"*\"/>\n"
	"  </policy>\n"
	"</busconfig>\n";

/* Runs @argv with stdout and stderr to /dev/null; its exit status, or -1. */
static int run(const char *const *argv)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool logind_on_bus(void)
{
	const char *argv[] = {
		"busctl", "--address", bus_address, "status", "org.freedesktop.login1", NULL
	};

	return run(argv) == 0;
}

static pid_t spawn(const char *const *argv, uid_t uid)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, STDOUT_FILENO);
		if (uid != 0 && (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0))
			_exit(99);
		(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static void stop(pid_t *pid)
{
	if (*pid <= 0)
		return;
	(void)kill(*pid, SIGTERM);
	(void)waitpid(*pid, NULL, 0);
	*pid = -1;
}

/* The private system bus and the logind mock on it, once for all cases. */
static int bus_up(void **state)
{
	char path[512], template[512];
	const char *src = getenv("QJ_SOURCE_DIR");
	FILE *f;

	(void)state;
	if (geteuid() != 0)
		return 0; /* harness_setup() skips or fails the cases */
	if (!mkdtemp(bus_dir) || chmod(bus_dir, 0755) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/bus.conf", bus_dir);
	f = fopen(path, "we");
	if (!f)
		return -1;
	fprintf(f, bus_config, bus_dir);
	fclose(f);
	snprintf(bus_address, sizeof(bus_address), "unix:path=%s/bus", bus_dir);
	{
		char cfg[600];
		const char *argv[] = { "dbus-daemon", "--nofork", "--nopidfile", cfg, NULL };

		snprintf(cfg, sizeof(cfg), "--config-file=%s", path);
		bus_pid = spawn(argv, 0);
	}
	setenv("DBUS_SYSTEM_BUS_ADDRESS", bus_address, 1);
	snprintf(template, sizeof(template), "%s/tests/integration/logind-template.py",
		 src ? src : ".");
	for (int i = 0; i < 500; i++) {
		snprintf(path, sizeof(path), "%s/bus", bus_dir);
		if (access(path, F_OK) == 0)
			break;
		msleep(10);
	}
	{
		/* Debian's python3-dbusmock is for /usr/bin/python3, whatever PATH says. */
		const char *argv[] = { "/usr/bin/python3", "-m",     "dbusmock", "--system",
				       "--template",	   template, NULL };

		mock_pid = spawn(argv, 0);
	}
	for (int i = 0; i < 300 && !logind_on_bus(); i++)
		msleep(50);
	if (!logind_on_bus()) {
		fprintf(stderr, "the logind mock did not come up on %s\n", bus_address);
		return -1;
	}
	return 0;
}

static int bus_down(void **state)
{
	char cmd[600];

	(void)state;
	stop(&mock_pid);
	stop(&bus_pid);
	if (bus_dir[strlen(bus_dir) - 1] != 'X') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", bus_dir);
		(void)!system(cmd);
	}
	return 0;
}

static int mock_set_list_error(const char *name)
{
	const char *argv[] = { "busctl",
			       "--address",
			       bus_address,
			       "call",
			       "org.freedesktop.login1",
			       "/org/freedesktop/login1",
			       "org.freedesktop.DBus.Mock",
			       "SetListError",
			       "s",
			       name,
			       NULL };

	return run(argv);
}

/* systemd-inhibit holding a sleep inhibitor in @mode as @uid until it is stopped. */
static pid_t inhibit(const char *who, const char *why, const char *mode, uid_t uid)
{
	char w[128], y[128], m[64];
	const char *argv[] = { "systemd-inhibit", "--what=sleep", w, y, m, "sleep", "600", NULL };
	pid_t pid;

	snprintf(w, sizeof(w), "--who=%s", who);
	snprintf(y, sizeof(y), "--why=%s", why);
	snprintf(m, sizeof(m), "--mode=%s", mode);
	pid = spawn(argv, uid);
	assert_true(pid > 0);
	harness_track(pid);
	return pid;
}

/* The live hold named @name in the status (borrowed from @st), or NULL. */
static json_t *find_hold(json_t *st, const char *name)
{
	json_t *holds = json_object_get(st, "holds"), *h;
	size_t i;

	json_array_foreach (holds, i, h)
		if (strcmp(json_string_value(json_object_get(h, "name")), name) == 0)
			return h;
	return NULL;
}

/*
 * Waits until the hold @name is there (@present) or gone; checks its owner when there.
 * Returns the state string's first letter when done ('a' awake...), 0 on timeout.
 */
static bool wait_hold(struct harness *h, const char *name, bool present, pid_t pid, uid_t uid)
{
	for (int i = 0; i < 1000; i++) {
		json_t *st = harness_status(h), *ho;
		bool ok;

		assert_non_null(st);
		ho = find_hold(st, name);
		ok = present ? ho != NULL : ho == NULL;
		if (ok && ho && pid > 0) {
			assert_int_equal(json_integer_value(json_object_get(ho, "pid")), pid);
			assert_int_equal(json_integer_value(json_object_get(ho, "uid")), uid);
		}
		json_decref(st);
		if (ok)
			return true;
		msleep(20);
	}
	harness_dump_log(h);
	return false;
}

static const char *status_state(struct harness *h, char *buf, size_t size)
{
	json_t *st = harness_status(h);

	assert_non_null(st);
	snprintf(buf, size, "%s", json_string_value(json_object_get(st, "state")));
	json_decref(st);
	return buf;
}

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
	call = inhibit("video-call", "a call is on", "block", 0);
	assert_true(wait_hold(h, "logind:video-call", true, call, 0));
	assert_string_equal(status_state(h, buf, sizeof(buf)), "awake");

	delay = inhibit("saver", "saves state", "delay", 0);
	other = inhibit("music", "playing", "block", NOBODY);
	assert_true(harness_log_has(h, "logind inhibitor 'music' (playing) of pid"));
	assert_true(harness_log_has(h, "does not count: uid not in logind.inhibitors"));
	assert_true(wait_hold(h, "logind:saver", false, 0, 0));
	assert_true(wait_hold(h, "logind:music", false, 0, 0));

	before = harness_wait_int(h, "suspends", 0, 0);
	assert_string_equal(status_state(h, buf, sizeof(buf)), "awake");
	stop(&call);
	assert_true(wait_hold(h, "logind:video-call", false, 0, 0));
	assert_true(harness_wait_int(h, "suspends", before + 1, 60000) > before);
	assert_true(harness_log_has(h, "logind inhibitor 'video-call' (a call is on) of pid"));
	stop(&delay);
	stop(&other);
}

/* An inhibitor whose process is in the jail never counts: placing it drops the hold. */
static void test_jailed_inhibitor_does_not_count(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	long long before;
	pid_t pid;

	REQUIRE_HARNESS(h);
	pid = inhibit("jailed-player", "plays", "block", 0);
	assert_true(wait_hold(h, "logind:jailed-player", true, pid, 0));
	before = harness_wait_int(h, "suspends", 0, 0);
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_place(c, "app", pid), 0);
	qj_close(c);
	assert_true(wait_hold(h, "logind:jailed-player", false, 0, 0));
	assert_true(harness_log_has(h, "does not count: jailed in app app"));
	if (harness_wait_int(h, "suspends", before + 1, 60000) <= before) {
		harness_dump_log(h);
		fail_msg("no cycle once the inhibitor's process was jailed");
	}
	stop(&pid);
}

/* A ListInhibitors that fails is not "no inhibitors": the hold "logind" keeps it awake. */
static void test_failed_list_fails_closed(void **state)
{
	struct harness *h = *state;
	char buf[64];
	long long before;

	REQUIRE_HARNESS(h);
	assert_int_equal(mock_set_list_error("org.freedesktop.DBus.Error.AccessDenied"), 0);
	assert_true(wait_hold(h, "logind", true, 0, 0));
	assert_string_equal(status_state(h, buf, sizeof(buf)), "awake");
	assert_true(harness_log_has(
		h, "ListInhibitors failed (org.freedesktop.DBus.Error.AccessDenied)"));
	before = harness_wait_int(h, "suspends", 0, 0);
	assert_int_equal(mock_set_list_error(""), 0);
	assert_true(wait_hold(h, "logind", false, 0, 0));
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

		pid = inhibit("measured", "measuring", "block", 0);
		assert_true(wait_hold(h, "logind:measured", true, pid, 0));
		assert_true(harness_wait_state(h, "awake", 20000));
		drain(ev);
		t = now_usec(CLOCK_MONOTONIC);
		stop(&pid);
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
	char saved[sizeof(bus_address)];

	(void)state;
	if (!itest_available(&why))
		skip();
	snprintf(saved, sizeof(saved), "%s", bus_address);
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

	return cmocka_run_group_tests(tests, bus_up, bus_down);
}
