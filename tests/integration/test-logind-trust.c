// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The logind bridge as an attacker meets it (issue 24): on a private system bus with
 * Debian's system-bus policy (tests/integration/logind-bus.c), where any local user may
 * send any connection a unicast signal, a user forging logind's signals, a user flooding
 * inhibitors, logind restarting under a call, and an inhibitor whose taker handed its fd
 * to a child and exited.  qosjaild runs on the dry-run backend.
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
#include <systemd/sd-bus.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
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

/* Suspends counted so far (dry runs). */
static long long suspends(struct harness *h)
{
	return harness_wait_int(h, "suspends", 0, 0);
}

/*
 * The attacker: uid 65534 with the stock busctl, sending the daemon's own bus connection
 * (@dest, a unique name anyone can look up) a unicast signal it did not ask for.
 */
static int forge(const char *dest, const char *const *signal)
{
	const char *argv[32] = { "busctl", "--address", logind_bus_address, NULL, "emit" };
	char d[128];
	size_t n = 5;
	int status;
	pid_t pid;

	snprintf(d, sizeof(d), "--destination=%s", dest);
	argv[3] = d;
	for (; *signal && n < ARRAY_SIZE(argv) - 1; signal++)
		argv[n++] = *signal;
	pid = logind_spawn(argv, NOBODY);
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Forged NameOwnerChanged ("logind left") and PropertiesChanged (BlockInhibited) sent
 * straight to qosjaild by uid 65534 change nothing: root's inhibitor stays a hold and no
 * dry-run suspend happens while logind lists it.  Before the fix the first forged
 * NameOwnerChanged dropped the hold and the machine suspended in the call.
 */
static void test_forged_signals_ignored(void **state)
{
	struct harness *h = *state;
	char daemon_name[128], logind_name[128], buf[64];
	long long before;
	const char *left[] = { "/org/freedesktop/DBus",
			       "org.freedesktop.DBus",
			       "NameOwnerChanged",
			       "sss",
			       "org.freedesktop.login1",
			       logind_name,
			       "",
			       NULL };
	const char *changed[] = { "/org/freedesktop/login1",
				  "org.freedesktop.DBus.Properties",
				  "PropertiesChanged",
				  "sa{sv}as",
				  "org.freedesktop.login1.Manager",
				  "1",
				  "BlockInhibited",
				  "s",
				  "",
				  "0",
				  NULL };
	pid_t call;

	REQUIRE_HARNESS(h);
	call = logind_inhibit("video-call", "a call is on", "block", 0);
	assert_true(logind_wait_hold(h, "logind:video-call", true, call, 0));
	assert_int_equal(logind_unique_name_of(h->pid, daemon_name, sizeof(daemon_name)), 0);
	/* What the attacker puts in "old owner": logind's real unique name, as a driver would. */
	{
		FILE *f;
		char cmd[600];

		snprintf(cmd, sizeof(cmd),
			 "busctl --address '%s' call org.freedesktop.DBus /org/freedesktop/DBus "
			 "org.freedesktop.DBus GetNameOwner s org.freedesktop.login1",
			 logind_bus_address);
		f = popen(cmd, "r");
		assert_non_null(f);
		assert_int_equal(fscanf(f, "s \"%127[^\"]\"", logind_name), 1);
		pclose(f);
	}
	before = suspends(h);
	for (int i = 0; i < 5; i++)
		assert_int_equal(forge(daemon_name, left), 0);
	/* Ten idle delays (and dry runs) later: the hold is still there, nothing suspended. */
	for (int i = 0; i < 20; i++) {
		json_t *st = harness_status(h);

		assert_non_null(st);
		if (!logind_find_hold(st, "logind:video-call") ||
		    json_integer_value(json_object_get(st, "suspends")) != before) {
			json_decref(st);
			harness_dump_log(h);
			fail_msg("a forged NameOwnerChanged dropped root's inhibitor hold");
		}
		json_decref(st);
		msleep(100);
	}
	/* The forged signals arrived, and were judged by their real sender. */
	assert_true(harness_log_has(h, "ignoring NameOwnerChanged"));
	assert_int_equal(forge(daemon_name, changed), 0);
	assert_true(harness_log_has(h, "ignoring PropertiesChanged"));
	assert_int_equal(suspends(h), before);
	assert_string_equal(logind_status_state(h, buf, sizeof(buf)), "awake");
	/* logind's own signals are still followed: the release lets the cycle run. */
	logind_stop(&call);
	assert_true(logind_wait_hold(h, "logind:video-call", false, 0, 0));
	assert_true(harness_wait_int(h, "suspends", before + 1, 60000) > before);
}

/*
 * The attacker's (and the hand-over's) inhibitor taker: a process as @uid that takes @n
 * sleep inhibitors in block mode ("WHO-0".."WHO-n-1", or WHO when @n is 1) over one bus
 * connection, as systemd-inhibit would, and keeps their fds.  With @hand_over the taker
 * then forks: its child keeps the fds, and the taker exits once ->quit is written to, so
 * logind lists a pid that is gone.  Writing 'c' to ->ctl closes the first half and one of
 * the fds kept; closing ->ctl ends it all.
 */
struct taker {
	pid_t taker; /* the pid logind records */
	pid_t holder; /* the process that keeps the fds */
	int ctl;
	int quit; /* hand over: the taker exits when written to */
};

static void taker_main(uid_t uid, const char *who, int n, bool hand_over, int ctl, int report,
		       int quit)
{
	sd_bus *bus = NULL;
	int fds[64], close_n, k = 0;
	pid_t self;
	char c;

	if (n > (int)ARRAY_SIZE(fds) || setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
	    setresuid(uid, uid, uid) < 0 || sd_bus_new(&bus) < 0 ||
	    sd_bus_set_address(bus, logind_bus_address) < 0 || sd_bus_set_bus_client(bus, 1) < 0 ||
	    sd_bus_start(bus) < 0)
		_exit(99);
	for (int i = 0; i < n; i++) {
		sd_bus_error err = SD_BUS_ERROR_NULL;
		sd_bus_message *reply = NULL;
		char name[128];
		int fd;

		snprintf(name, sizeof(name), n == 1 ? "%s" : "%s-%d", who, i);
		if (sd_bus_call_method(bus, "org.freedesktop.login1", "/org/freedesktop/login1",
				       "org.freedesktop.login1.Manager", "Inhibit", &err, &reply,
				       "ssss", "sleep", name, "flooding", "block") < 0 ||
		    sd_bus_message_read(reply, "h", &fd) < 0)
			_exit(98);
		fds[i] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		sd_bus_message_unref(reply);
	}
	sd_bus_flush_close_unref(bus);
	if (hand_over && fork() != 0) {
		while (read(quit, &c, 1) < 0 && errno == EINTR)
			;
		_exit(0); /* the taker goes; its child keeps the inhibitors' fds */
	}
	self = getpid();
	if (write(report, &self, sizeof(self)) != sizeof(self))
		_exit(97);
	close_n = n / 2 + 1; /* flood-0 .. flood-(n/2): half and one */
	while (read(ctl, &c, 1) == 1)
		for (; c == 'c' && k < close_n && k < n; k++)
			close(fds[k]);
	_exit(0);
}

static void taker_start(struct taker *t, uid_t uid, const char *who, int n, bool hand_over)
{
	int ctl[2], report[2], quit[2];

	assert_int_equal(pipe2(ctl, O_CLOEXEC), 0);
	assert_int_equal(pipe2(report, O_CLOEXEC), 0);
	assert_int_equal(pipe2(quit, O_CLOEXEC), 0);
	t->taker = fork();
	assert_true(t->taker >= 0);
	if (t->taker == 0) {
		close(ctl[1]);
		close(report[0]);
		close(quit[1]);
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		taker_main(uid, who, n, hand_over, ctl[0], report[1], quit[0]);
	}
	close(ctl[0]);
	close(report[1]);
	close(quit[0]);
	assert_int_equal(read(report[0], &t->holder, sizeof(t->holder)), sizeof(t->holder));
	close(report[0]);
	harness_track(t->holder);
	harness_track(t->taker);
	t->ctl = ctl[1];
	t->quit = quit[1];
}

/* Live holds of @uid whose name starts with @prefix. */
static int holds_of(struct harness *h, uid_t uid, const char *prefix)
{
	json_t *st = harness_status(h), *ho;
	int n = 0;
	size_t i;

	assert_non_null(st);
	json_array_foreach (json_object_get(st, "holds"), i, ho)
		n += json_integer_value(json_object_get(ho, "uid")) == uid &&
		     strncmp(json_string_value(json_object_get(ho, "name")), prefix,
			     strlen(prefix)) == 0;
	json_decref(st);
	return n;
}

/* Polls @ms: the hold @name stays, and no suspend happens; false (log printed) otherwise. */
static bool hold_stays(struct harness *h, const char *name, long long suspends_before, int ms)
{
	for (int i = 0; i < ms / 100; i++) {
		json_t *st = harness_status(h);
		bool ok;

		assert_non_null(st);
		ok = logind_find_hold(st, name) &&
		     json_integer_value(json_object_get(st, "suspends")) == suspends_before;
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
 * An inhibitor whose taking process handed its fd to a child and exited keeps counting:
 * its jail membership was decided while the process could be known, and stays (as a
 * socket client's does).  Before the fix the next membership change (a place) read the
 * pid again, found nothing, and dropped the hold.
 */
static void test_handed_over_inhibitor_counts(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	struct taker t;
	long long before;
	pid_t other;

	REQUIRE_HARNESS(h);
	/* Forked first: it must not hold a copy of the taker's control pipe. */
	other = fork();
	assert_true(other >= 0);
	if (other == 0) {
		pause();
		_exit(0);
	}
	harness_track(other);
	taker_start(&t, 0, "handed-over", 1, true);
	assert_true(logind_wait_hold(h, "logind:handed-over", true, t.taker, 0));
	/* Seen while it lived; now the taker goes, its child keeps the inhibitor's fd. */
	assert_int_equal(write(t.quit, "q", 1), 1);
	assert_int_equal(waitpid(t.taker, NULL, 0), t.taker);
	before = suspends(h);
	/* Jail membership may have changed: every inhibitor is decided again. */
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_place(c, "app", other), 0);
	assert_int_equal(qj_reload(c, NULL), 0);
	qj_close(c);
	assert_true(hold_stays(h, "logind:handed-over", before, 2000));
	close(t.quit);
	close(t.ctl); /* the inhibitor's fd closes: logind drops it, and the cycle runs */
	assert_true(logind_wait_hold(h, "logind:handed-over", false, 0, 0));
	assert_true(harness_wait_int(h, "suspends", before + 1, 60000) > before);
}

static const char policy_absent[] = "version: 1\n"
				    "suspend: { backend: dry-run, idle_delay: 200ms, "
				    "dry_run_length: 100ms }\n"
				    "logind: { inhibitors: { uids: [0] }, absent_max: 1h }\n";

static int setup_absent(void **state)
{
	return harness_setup(state, policy_absent);
}

/* Whatever a case did to the mock, the next one finds logind on the bus. */
static int teardown_logind(void **state)
{
	if (!logind_on_bus()) {
		logind_mock_stop();
		(void)logind_mock_start();
	}
	return harness_teardown(state);
}

/*
 * logind restarting during a call: its inhibitor's hold stays and the fail-closed hold
 * "logind" is taken while it is away, no suspend happens; when it is back it is listed
 * again (the restarted mock lists nothing: the holds then go and the cycle runs).  Before
 * the fix every inhibitor hold was dropped the moment logind left.
 */
static void test_logind_restart_keeps_holds(void **state)
{
	struct harness *h = *state;
	long long before;
	pid_t call;

	REQUIRE_HARNESS(h);
	call = logind_inhibit("video-call", "a call is on", "block", 0);
	assert_true(logind_wait_hold(h, "logind:video-call", true, call, 0));
	before = suspends(h);
	logind_mock_stop();
	assert_true(hold_stays(h, "logind:video-call", before, 2000));
	assert_true(hold_stays(h, "logind", before, 100));
	assert_true(harness_log_has(h, "logind: left the system bus; its 1 inhibitor hold(s) "
				       "stay"));
	assert_int_equal(logind_mock_start(), 0);
	assert_true(harness_log_has(h, "logind: back on the system bus after"));
	assert_true(logind_wait_hold(h, "logind:video-call", false, 0, 0));
	assert_true(logind_wait_hold(h, "logind", false, 0, 0));
	assert_true(harness_wait_int(h, "suspends", before + 1, 60000) > before);
	logind_stop(&call);
}

static const char policy_absent_short[] = "version: 1\n"
					  "suspend: { backend: dry-run, idle_delay: 200ms, "
					  "dry_run_length: 100ms }\n"
					  "logind: { inhibitors: { uids: [0] }, absent_max: 1s }\n";

static int setup_absent_short(void **state)
{
	return harness_setup(state, policy_absent_short);
}

/* A logind that does not come back holds the system awake only for logind.absent_max. */
static void test_logind_absence_is_bounded(void **state)
{
	struct harness *h = *state;
	long long before;
	pid_t call;

	REQUIRE_HARNESS(h);
	call = logind_inhibit("video-call", "a call is on", "block", 0);
	assert_true(logind_wait_hold(h, "logind:video-call", true, call, 0));
	before = suspends(h);
	logind_mock_stop();
	assert_true(harness_log_has(h, "for at most 1 s (logind.absent_max)"));
	assert_true(harness_log_has(h, "logind: away from the system bus for 1 s "
				       "(logind.absent_max): 2 hold(s)"));
	assert_true(logind_wait_hold(h, "logind:video-call", false, 0, 0));
	assert_true(logind_wait_hold(h, "logind", false, 0, 0));
	assert_true(harness_wait_int(h, "suspends", before + 1, 60000) > before);
	assert_int_equal(logind_mock_start(), 0);
	logind_stop(&call);
}

static const char policy_flood[] = "version: 1\n"
				   "suspend: { backend: dry-run, idle_delay: 200ms, "
				   "dry_run_length: 100ms }\n"
				   "logind: { inhibitors: \"*\" }\n"
				   "limits: { holds_per_uid: 4 }\n";

static int setup_flood(void **state)
{
	return harness_setup(state, policy_flood);
}

/*
 * uid 65534 floods sleep inhibitors: only limits.holds_per_uid of them become holds (as
 * its socket holds would), the ones that could not keep the system awake through the
 * fail-closed hold "logind", and they become holds once room is made (retried, not
 * forgotten); root's inhibitor is a hold throughout.  Before the fix every inhibitor of
 * the flood became a hold.
 */
static void test_inhibitor_flood_bounded(void **state)
{
	struct harness *h = *state;
	struct taker t;
	pid_t call;

	REQUIRE_HARNESS(h);
	call = logind_inhibit("video-call", "a call is on", "block", 0);
	assert_true(logind_wait_hold(h, "logind:video-call", true, call, 0));
	taker_start(&t, NOBODY, "flood", 10, false);
	for (int i = 0; i < 50 && holds_of(h, NOBODY, "logind:flood") < 4; i++)
		msleep(20);
	msleep(300); /* a flood that went past the bound would show by now */
	assert_int_equal(holds_of(h, NOBODY, "logind:flood"), 4);
	assert_true(harness_log_has(h, "inhibitor(s) that count could not become holds"));
	assert_true(logind_wait_hold(h, "logind", true, 0, 0));
	assert_int_equal(holds_of(h, 0, "logind:video-call"), 1);
	/* flood-0..flood-5 go: flood-6..9, refused before, are holds now, and nothing waits. */
	assert_int_equal(write(t.ctl, "c", 1), 1);
	assert_true(logind_wait_hold(h, "logind:flood-5", false, 0, 0));
	assert_true(logind_wait_hold(h, "logind:flood-9", true, 0, 0));
	assert_true(logind_wait_hold(h, "logind", false, 0, 0));
	assert_int_equal(holds_of(h, NOBODY, "logind:flood"), 4);
	assert_true(harness_log_has(h, "every inhibitor that counts is a hold again"));
	close(t.ctl);
	close(t.quit);
	assert_true(logind_wait_hold(h, "logind:flood-9", false, 0, 0));
	assert_int_equal(holds_of(h, 0, "logind:video-call"), 1);
	logind_stop(&call);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_forged_signals_ignored, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_handed_over_inhibitor_counts, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_logind_restart_keeps_holds, setup_absent,
						teardown_logind),
		cmocka_unit_test_setup_teardown(test_logind_absence_is_bounded, setup_absent_short,
						teardown_logind),
		cmocka_unit_test_setup_teardown(test_inhibitor_flood_bounded, setup_flood,
						harness_teardown),
	};

	return cmocka_run_group_tests(tests, logind_bus_up, logind_bus_down);
}
