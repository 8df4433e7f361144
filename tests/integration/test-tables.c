// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tables one client can grow, against a client that floods them (issue 24): the
 * notify-consent table (a jailed app's processes consenting by the thousand), and the
 * metrics' hold names (one uid's names must not hide root's).  Real daemon, clients as
 * uid 65534, jailed processes.
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
#include "qosjail.h"
#include "util.h"

#define NOBODY 65534
/* More than the whole table held before per-app shares (4,096). */
#define FLOOD 4100

static const char policy_apps[] = "version: 1\n"
				  "suspend: { backend: dry-run, idle_delay: 1h }\n"
				  "apps:\n"
				  "  - name: flood\n"
				  "  - name: victim\n";

static int setup(void **state)
{
	return harness_setup(state, policy_apps);
}

static void drop_to(uid_t uid)
{
	if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
		_exit(99);
}

/* One process: connects, consents for itself, hangs up, stays alive. */
static int consent_once(const char *socket)
{
	struct qj_conn *c = NULL;
	int r;

	for (int tries = 0; (r = qj_open(socket, &c)) == -EUSERS && tries < 1000; tries++)
		msleep(5); /* clients_per_uid: wait for a sibling to hang up */
	if (r < 0)
		return r;
	r = qj_notify_consent(c);
	qj_close(c);
	return r;
}

/*
 * The attacker: a process of uid 65534 placed in app "flood" (it waits on @go until it
 * is) that forks @n processes one by one, each consenting for itself and staying alive.
 * It reports how many consents were granted and refused (ENOSPC) on @out, then waits
 * for @go to close; its processes die with it.
 */
static void flooder_main(const char *socket, int n, int go, int out)
{
	int counts[3] = { 0, 0, 0 }; /* granted, ENOSPC, other */
	char b;

	drop_to(NOBODY);
	if (read(go, &b, 1) != 1)
		_exit(98);
	for (int i = 0; i < n; i++) {
		int p[2], r = -EIO;
		pid_t pid;

		if (pipe2(p, O_CLOEXEC) < 0)
			_exit(97);
		pid = fork();
		if (pid == 0) {
			(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
			r = consent_once(socket);
			(void)!write(p[1], &r, sizeof(r));
			for (;;)
				pause();
		}
		close(p[1]);
		if (pid < 0 || read(p[0], &r, sizeof(r)) != sizeof(r))
			r = -EIO;
		close(p[0]);
		counts[r == 0 ? 0 : r == -ENOSPC ? 1 : 2]++;
	}
	(void)!write(out, counts, sizeof(counts));
	while (read(go, &b, 1) > 0)
		;
	_exit(0);
}

/* A process of uid 65534 placed in @app that consents once; its answer. */
static int consent_in_app(struct harness *h, struct qj_conn *root, const char *app)
{
	int go[2], out[2], r = -EIO;
	pid_t pid;
	char b;

	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		drop_to(NOBODY);
		if (read(go[0], &b, 1) != 1)
			_exit(98);
		r = consent_once(h->socket);
		(void)!write(out[1], &r, sizeof(r));
		_exit(0);
	}
	harness_track(pid);
	close(go[0]);
	close(out[1]);
	assert_int_equal(qj_place(root, app, pid), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(read(out[0], &r, sizeof(r)), sizeof(r));
	close(go[1]);
	close(out[0]);
	waitpid(pid, NULL, 0);
	return r;
}

/*
 * One jailed app's processes consent by the thousand: its share of the table runs out
 * (ENOSPC for the rest), and a process of another app still consents.  Before the
 * per-app share the flood took all 4,096 entries and the other app's process got ENOSPC.
 */
static void test_consent_flood_keeps_other_apps_room(void **state)
{
	struct harness *h = *state;
	struct qj_conn *root = NULL;
	int go[2], out[2], counts[3];
	pid_t flooder;

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &root), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	flooder = fork();
	assert_true(flooder >= 0);
	if (flooder == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(go[1]);
		close(out[0]);
		flooder_main(h->socket, FLOOD, go[0], out[1]);
	}
	harness_track(flooder);
	close(go[0]);
	close(out[1]);
	assert_int_equal(qj_place(root, "flood", flooder), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(read(out[0], counts, sizeof(counts)), sizeof(counts));
	print_message("flood of %d consents from one app: %d granted, %d refused (ENOSPC), %d "
		      "other\n",
		      FLOOD, counts[0], counts[1], counts[2]);
	assert_int_equal(counts[2], 0);
	assert_true(counts[1] > 0);
	assert_int_equal(consent_in_app(h, root, "victim"), 0);
	assert_int_equal(counts[0], 256); /* the per-app share */
	close(go[1]);
	close(out[0]);
	qj_close(root);
}

/* uid 65534 takes @n hold names over several connections (limits.holds_per_connection). */
static int take_names(void *arg)
{
	const char *socket = arg;
	struct qj_conn *c[8] = {};
	char name[64];
	int r = 0;

	for (int i = 0; i < 256 && r == 0; i++) {
		if (!c[i / 64] && (r = qj_open(socket, &c[i / 64])) < 0)
			break;
		snprintf(name, sizeof(name), "nobody-%03d", i);
		r = qj_hold(c[i / 64], name, "flooding the names", 0, 0);
	}
	if (r < 0)
		return 1;
	/* Holds die with their connections: keep them until the test kills us. */
	printf("held\n");
	fflush(stdout);
	for (;;)
		pause();
}

/*
 * One uid's 256 hold names, taken first, no longer hide root's active hold from the
 * metrics: names are ordered by trust (root's first), then activity, before the cap.
 * Before the fix the cap kept the first names in table order, all of them uid 65534's.
 */
static void test_metrics_keep_roots_hold(void **state)
{
	struct harness *h = *state;
	struct qj_conn *root = NULL;
	char *text = NULL, line[16] = "";
	int out[2];
	pid_t pid;

	REQUIRE_HARNESS(h);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], STDOUT_FILENO);
		drop_to(NOBODY);
		_exit(take_names(h->socket));
	}
	harness_track(pid);
	close(out[1]);
	assert_true(read(out[0], line, sizeof(line) - 1) > 0);
	assert_string_equal(line, "held\n");
	close(out[0]);
	assert_int_equal(qj_open(h->socket, &root), 0);
	assert_int_equal(qj_hold(root, "video-call", "a call is on", 0, 0), 0);
	assert_int_equal(qj_metrics(root, &text), 0);
	if (!strstr(text, "qosjail_hold_active{name=\"video-call\"} 1")) {
		print_error("%s", text);
		fail_msg("root's active hold is missing from the metrics");
	}
	assert_non_null(strstr(text, "qosjail_hold_names_omitted "));
	free(text);
	qj_close(root);
}

/*
 * The same flood against the status listing (at most 128 holds): root's hold is listed,
 * ahead of the 256 uid 65534 took first.  Before the fix the listing kept the oldest 128,
 * all of them uid 65534's, and "why is the machine not sleeping?" did not show root's.
 */
static void test_status_lists_roots_hold(void **state)
{
	struct harness *h = *state;
	struct qj_conn *root = NULL;
	char line[16] = "";
	json_t *st, *ho;
	bool found = false;
	int out[2];
	size_t i;
	pid_t pid;

	REQUIRE_HARNESS(h);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(out[1], STDOUT_FILENO);
		drop_to(NOBODY);
		_exit(take_names(h->socket));
	}
	harness_track(pid);
	close(out[1]);
	assert_true(read(out[0], line, sizeof(line) - 1) > 0);
	assert_string_equal(line, "held\n");
	close(out[0]);
	assert_int_equal(qj_open(h->socket, &root), 0);
	assert_int_equal(qj_hold(root, "video-call", "a call is on", 0, 0), 0);
	st = harness_status(h);
	assert_non_null(st);
	json_array_foreach (json_object_get(st, "holds"), i, ho)
		found |= strcmp(json_string_value(json_object_get(ho, "name")), "video-call") == 0;
	assert_int_equal(json_integer_value(json_object_get(st, "holds_total")), 257);
	json_decref(st);
	if (!found)
		fail_msg("root's hold is missing from the status listing");
	qj_close(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_consent_flood_keeps_other_apps_room, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_metrics_keep_roots_hold, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_status_lists_roots_hold, setup,
						harness_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
