// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The idle-hint bridge (issue 28 part 4): on a private system bus with Debian's
 * system-bus policy and a logind mock whose sessions' SetIdleHint is logind's
 * (tests/integration/logind-template.py), an active local graphical session whose user
 * said "not idle" holds the machine awake as "logind:user-active" (no dry-run cycle); once
 * the hint is true the cycle runs; a jailed process of the session's user setting the
 * hint holds nothing (the attacker: uid 65534, placed in the jail, running the stock
 * busctl); logind away or answering garbage holds the machine awake (fail closed),
 * bounded by logind.absent_max.  qosjaild runs on the dry-run backend.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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
#include "fileio.h"
#include "logind-bus.h"
#include "qosjail.h"
#include "util.h"

#define NOBODY 65534
#define HOLD "logind:user-active"
#define SESSION_PATH "/org/freedesktop/login1/session/c1"

static const char policy_idle[] = "version: 1\n"
				  "suspend: { backend: dry-run, idle_delay: 200ms, "
				  "dry_run_length: 100ms }\n"
				  "apps:\n"
				  "  - name: app\n"
				  "logind: { inhibitors: { uids: [0] }, idle_hint: true, "
				  "absent_max: 2s }\n";

/* A method of the mock's own interface (org.freedesktop.DBus.Mock), as root. */
static int mock_call(const char *method, const char *sig, const char *a1, const char *a2,
		     const char *a3, const char *a4, const char *a5, const char *a6)
{
	const char *argv[] = { "busctl",
			       "--address",
			       logind_bus_address,
			       "call",
			       "org.freedesktop.login1",
			       "/org/freedesktop/login1",
			       "org.freedesktop.DBus.Mock",
			       method,
			       sig,
			       a1,
			       a2,
			       a3,
			       a4,
			       a5,
			       a6,
			       NULL };

	return logind_run(argv);
}

/* busctl's argv for SetIdleHint(@value) on session c1. */
#define SET_IDLE_ARGV(value)                                                                       \
	{                                                                                          \
		"busctl", "--address", logind_bus_address, "call", "org.freedesktop.login1",       \
			SESSION_PATH, "org.freedesktop.login1.Session", "SetIdleHint", "b", value, \
			NULL                                                                       \
	}

/*
 * A compositor (tests/integration/idle-compositor.py): one bus connection for its whole
 * life, as a real compositor keeps, that sets the hint line by line.  The test's trusted
 * compositor runs as the session's uid outside the jail; the attacker is the same
 * program placed in the jail before it runs.
 */
struct compositor {
	pid_t pid;
	int in;
	FILE *out;
};

static struct compositor trusted = { -1, -1, NULL }, attacker = { -1, -1, NULL };

/* Starts @c as @uid, placed in the jail's app "app" before it executes when @jailed. */
static void compositor_start(struct harness *h, struct compositor *c, uid_t uid, bool jailed)
{
	const char *src = getenv("QJ_SOURCE_DIR");
	int in[2], out[2], go[2];
	struct qj_conn *conn = NULL;
	char script[512], ch;
	_cleanup_free_ char *code = NULL;

	snprintf(script, sizeof(script), "%s/tests/integration/idle-compositor.py",
		 src ? src : ".");
	/*
	 * Read here, as root, and given to python3 -c: the checkout may sit where uid
	 * 65534 cannot reach it (/root/project in a fresh machine's chroot).
	 */
	assert_int_equal(qj_read_file(script, &code), 0);
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0 ||
		    setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
		    setresuid(uid, uid, uid) < 0 || read(go[0], &ch, 1) != 1)
			_exit(99);
		(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
		execl("/usr/bin/python3", "python3", "-c", code, SESSION_PATH, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(go[0]);
	harness_track(c->pid);
	if (jailed) {
		assert_int_equal(qj_open(h->socket, &conn), 0);
		assert_int_equal(qj_place(conn, "app", c->pid), 0);
		qj_close(conn);
	}
	assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);
	c->in = in[1];
	c->out = fdopen(out[0], "r");
	assert_non_null(c->out);
}

/* SetIdleHint(@value) through @c; asserts logind took it. */
static void compositor_hint(struct compositor *c, const char *value)
{
	char line[256] = "";

	assert_true(dprintf(c->in, "%s\n", value) > 0);
	assert_non_null(fgets(line, sizeof(line), c->out));
	assert_string_equal(line, "ok\n");
}

static void compositor_stop(struct compositor *c)
{
	if (c->pid <= 0)
		return;
	close(c->in); /* end of input: it exits */
	fclose(c->out);
	(void)waitpid(c->pid, NULL, 0);
	*c = (struct compositor){ -1, -1, NULL };
}

/* The user's compositor: SetIdleHint(@value) from a process that is not jailed. */
static void set_idle(struct harness *h, const char *value)
{
	if (trusted.pid <= 0)
		compositor_start(h, &trusted, NOBODY, false);
	compositor_hint(&trusted, value);
}

static int teardown(void **state);

static int setup(void **state)
{
	int r = harness_setup(state, policy_idle);
	struct harness *h = *state;

	if (r != 0 || !h || h->pid <= 0)
		return r;
	r = mock_call("AddIdleSession", "susssu", "c1", "65534", "nobody", "seat0", "wayland", "1");
	/* A call made before the monitor is up is not seen (harness_log_has waits 10 s). */
	if (r == 0 && harness_log_has(h, "monitoring Session.SetIdleHint"))
		return 0;
	harness_dump_log(h);
	(void)teardown(state); /* cmocka runs no teardown after a failed setup */
	return -1;
}

static int teardown(void **state)
{
	compositor_stop(&trusted);
	compositor_stop(&attacker);
	if (!logind_on_bus()) {
		logind_mock_stop();
		(void)logind_mock_start();
	}
	(void)mock_call("SetSessionGarbage", "b", "false", NULL, NULL, NULL, NULL, NULL);
	(void)mock_call("RemoveIdleSession", "s", "c1", NULL, NULL, NULL, NULL, NULL);
	return harness_teardown(state);
}

static long long suspends(struct harness *h)
{
	return harness_wait_int(h, "suspends", 0, 0);
}

/* Polls @ms: the hold @name stays and no suspend happens; false (log printed) otherwise. */
static bool stays_awake(struct harness *h, long long before, int ms)
{
	for (int i = 0; i < ms / 100; i++) {
		json_t *st = harness_status(h);
		bool ok;

		assert_non_null(st);
		ok = logind_find_hold(st, HOLD) &&
		     json_integer_value(json_object_get(st, "suspends")) == before;
		json_decref(st);
		if (!ok) {
			harness_dump_log(h);
			return false;
		}
		msleep(100);
	}
	return true;
}

/*
 * The user's compositor says "not idle": the hold keeps the machine awake for ten idle
 * delays with no dry-run cycle, as uid 65534 (the session's) with the session's leader;
 * "idle" lets the cycle run.  Before the bridge the machine suspended throughout.
 */
static void test_not_idle_holds_idle_lets_cycle_run(void **state)
{
	struct harness *h = *state;
	long long before;

	REQUIRE_HARNESS(h);
	/* No hint set by anyone the bridge saw: it holds nothing, the cycle runs. */
	assert_true(logind_wait_hold(h, HOLD, false, 0, 0));
	before = suspends(h);
	assert_true(harness_wait_int(h, "suspends", before + 1, 60000) > before);
	set_idle(h, "false");
	assert_true(logind_wait_hold(h, HOLD, true, 1, NOBODY));
	before = suspends(h);
	assert_true(stays_awake(h, before, 2000));
	assert_true(harness_log_has(h, "session c1 of uid 65534 on seat0 is active and not idle"));
	set_idle(h, "true");
	assert_true(logind_wait_hold(h, HOLD, false, 0, 0));
	assert_true(harness_wait_int(h, "suspends", before + 1, 60000) > before);
	/* Not idle again, then the session is no longer the active one: no hold. */
	set_idle(h, "false");
	assert_true(logind_wait_hold(h, HOLD, true, 1, NOBODY));
	assert_int_equal(mock_call("SetSessionActive", "sb", "c1", "false", NULL, NULL, NULL, NULL),
			 0);
	assert_true(logind_wait_hold(h, HOLD, false, 0, 0));
}

/*
 * The attacker: a process of the session's user (uid 65534) that the launcher placed in
 * the jail, calling SetIdleHint(false).  logind accepts it (the session's owner), but
 * the bridge saw who called: no hold, and the cycle runs.  First on a connection it
 * keeps (identified: "jailed in app app"), then with the stock busctl, which leaves the
 * bus the moment logind answered (ignored, jailed or gone, whichever the bridge saw).
 */
static void test_jailed_caller_ignored(void **state)
{
	struct harness *h = *state;
	const char *argv[] = SET_IDLE_ARGV("false");
	struct qj_conn *c = NULL;
	int go[2], status;
	long long before;
	pid_t pid;
	char ch;

	REQUIRE_HARNESS(h);
	set_idle(h, "true"); /* the compositor's last word: idle */
	compositor_start(h, &attacker, NOBODY, true);
	compositor_hint(&attacker, "false"); /* logind took it: the session is "not idle" */
	before = suspends(h);
	assert_true(harness_wait_int(h, "suspends", before + 2, 60000) > before + 1);
	assert_true(logind_wait_hold(h, HOLD, false, 0, 0));
	assert_true(harness_log_has(h, "ignoring SetIdleHint(false) by pid"));
	assert_true(harness_log_has(h, "jailed in app app"));

	set_idle(h, "true");
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(go[1]);
		if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
		    setresuid(NOBODY, NOBODY, NOBODY) < 0 || read(go[0], &ch, 1) != 1)
			_exit(99);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(go[0]);
	harness_track(pid);
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_place(c, "app", pid), 0);
	qj_close(c);
	assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* logind took it */
	before = suspends(h);
	assert_true(harness_wait_int(h, "suspends", before + 2, 60000) > before + 1);
	assert_true(logind_wait_hold(h, HOLD, false, 0, 0));
}

/*
 * logind answers garbage (IdleHint not a boolean): the sessions are unknown, the hold is
 * taken with the reason and no cycle runs; readable again, the hold goes.
 */
static void test_garbage_fails_closed(void **state)
{
	struct harness *h = *state;
	long long before;

	REQUIRE_HARNESS(h);
	set_idle(h, "true");
	assert_true(logind_wait_hold(h, HOLD, false, 0, 0));
	assert_int_equal(mock_call("SetSessionGarbage", "b", "true", NULL, NULL, NULL, NULL, NULL),
			 0);
	assert_true(logind_wait_hold(h, HOLD, true, 0, 0));
	before = suspends(h);
	assert_true(stays_awake(h, before, 1500));
	assert_true(harness_log_has(h, "reading logind's sessions failed"));
	assert_int_equal(mock_call("SetSessionGarbage", "b", "false", NULL, NULL, NULL, NULL, NULL),
			 0);
	assert_true(logind_wait_hold(h, HOLD, false, 0, 0));
	assert_true(harness_wait_int(h, "suspends", before + 1, 60000) > before);
}

/*
 * logind leaves the bus: the hold keeps the machine awake while it is away, for at most
 * logind.absent_max (2 s), then the cycle runs.
 */
static void test_logind_away_fails_closed_bounded(void **state)
{
	struct harness *h = *state;
	long long before;

	REQUIRE_HARNESS(h);
	set_idle(h, "true");
	assert_true(logind_wait_hold(h, HOLD, false, 0, 0));
	logind_mock_stop();
	assert_true(logind_wait_hold(h, HOLD, true, 0, 0));
	before = suspends(h);
	assert_true(stays_awake(h, before, 1000));
	assert_true(harness_log_has(h, "logind idle hint: logind left the system bus"));
	assert_true(logind_wait_hold(h, HOLD, false, 0, 0));
	assert_true(harness_log_has(h, "(logind.absent_max): the hold 'logind:user-active' is "
				       "dropped"));
	assert_true(harness_wait_int(h, "suspends", before + 1, 60000) > before);
	assert_int_equal(logind_mock_start(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_not_idle_holds_idle_lets_cycle_run, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_jailed_caller_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_fails_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_logind_away_fails_closed_bounded, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, logind_bus_up, logind_bus_down);
}
