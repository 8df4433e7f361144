// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The logind bridge as an attacker meets it (issue 24): on a private system bus with
 * Debian's system-bus policy (tests/integration/logind-bus.c), where any local user may
 * send any connection a unicast signal, a user forging logind's signals, a user flooding
 * inhibitors, logind restarting under a call, and an inhibitor whose taker handed its fd
 * to a child and exited.  qosjaild runs on the dry-run backend.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_forged_signals_ignored, setup,
						harness_teardown),
	};

	return cmocka_run_group_tests(tests, logind_bus_up, logind_bus_down);
}
