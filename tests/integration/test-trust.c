// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The trust boundary of qosjaild (issue 11), against a real daemon on the dry-run
 * backend, with clients running as root and as other uids (65534 and friends):
 * who may place which process, how jail membership of a peer is decided, the bounds
 * on clients and holds, and a SIGHUP during the backend write.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "util.h"
#include "qosjail.h"

#define NOBODY 65534
#define LAUNCHED 65533 /* access.place_as lets NOBODY place these */
#define STRANGER 65532

static const char policy_trust[] = "version: 1\n"
				   "suspend: { backend: dry-run, idle_delay: 1h, "
				   "dry_run_length: 1500ms }\n"
				   "apps:\n"
				   "  - name: app\n"
				   "    match: { exe: \"/nonexistent/app\" }\n"
				   "    holds: { max: 2 }\n"
				   "access:\n"
				   "  place: { uids: [0, 65534] }\n"
				   "  place_as:\n"
				   "    - { launcher: 65534, uids: [65533] }\n";

static int setup(void **state)
{
	return harness_setup(state, policy_trust);
}

#define REQUIRE_HARNESS(h)                                              \
	do {                                                            \
		if (!(h)) {                                             \
			print_message("skipped: no root or cgroup2\n"); \
			skip();                                         \
		}                                                       \
	} while (0)

/* Every process spawn_as() started, killed at teardown even when a test failed. */
static pid_t spawned[32];
static size_t n_spawned;

static int teardown(void **state)
{
	for (size_t i = 0; i < n_spawned; i++) {
		kill(spawned[i], SIGKILL);
		waitpid(spawned[i], NULL, 0);
	}
	n_spawned = 0;
	return harness_teardown(state);
}

/* A process that sleeps with the given real, effective and saved uids. */
static pid_t spawn_as(uid_t ruid, uid_t euid, uid_t suid)
{
	int p[2];
	char b;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0 && n_spawned < ARRAY_SIZE(spawned));
	if (pid == 0) {
		/* The death signal is set after the uid change, which clears it. */
		if (setresgid(ruid, ruid, ruid) < 0 || setresuid(ruid, euid, suid) < 0 ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
			_exit(99);
		(void)!write(p[1], "r", 1);
		for (;;)
			pause();
	}
	spawned[n_spawned++] = pid;
	close(p[1]);
	assert_int_equal(read(p[0], &b, 1), 1);
	close(p[0]);
	return pid;
}

/* The app @pid's explain answer names ("" when not jailed), as root sees it. */
static void jailed_app(struct harness *h, pid_t pid, char *buf, size_t size)
{
	struct qj_conn *c = NULL;
	char *text = NULL;
	json_t *j;

	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_explain(c, pid, &text), 0);
	j = json_loads(text, 0, NULL);
	assert_non_null(j);
	snprintf(buf, size, "%s",
		 json_is_true(json_object_get(j, "jailed")) ?
			 json_string_value(json_object_get(j, "app")) :
			 "");
	json_decref(j);
	free(text);
	qj_close(c);
}

/* ---- finding 2: place ------------------------------------------------------------------ */

struct place_case {
	struct harness *h;
	pid_t pid;
	int want; /* 0 or negative errno */
	const char *msg; /* in the error message */
};

static int place_as_caller(void *arg)
{
	struct place_case *pc = arg;
	struct qj_conn *c = NULL;
	int r;

	if (qj_open(pc->h->socket, &c) < 0)
		return 1;
	r = qj_place(c, "app", pc->pid);
	if (r != pc->want) {
		fprintf(stderr, "place %d: %d (%s), want %d\n", pc->pid, r, qj_last_error(c),
			pc->want);
		return 2;
	}
	if (pc->msg && !strstr(qj_last_error(c), pc->msg)) {
		fprintf(stderr, "place %d: message '%s' lacks '%s'\n", pc->pid, qj_last_error(c),
			pc->msg);
		return 3;
	}
	qj_close(c);
	return 0;
}

/*
 * A non-root launcher places only its own processes and those access.place_as names for
 * it; never root's (any of its uids), never a stranger's.  Root places any.
 */
static void test_place_only_own_processes(void **state)
{
	struct harness *h = *state;
	pid_t own, launched, stranger, root, setuid_root;
	char app[64];
	struct place_case cases[5];

	REQUIRE_HARNESS(h);
	own = spawn_as(NOBODY, NOBODY, NOBODY);
	launched = spawn_as(LAUNCHED, LAUNCHED, LAUNCHED);
	stranger = spawn_as(STRANGER, STRANGER, STRANGER);
	root = spawn_as(0, 0, 0);
	setuid_root = spawn_as(NOBODY, 0, 0); /* a setuid-root program the user started */
	cases[0] = (struct place_case){ h, own, 0, NULL };
	cases[1] = (struct place_case){ h, launched, 0, NULL };
	cases[2] = (struct place_case){ h, stranger, -EPERM, "runs as uid 65532" };
	cases[3] = (struct place_case){ h, root, -EPERM, "runs as root" };
	cases[4] = (struct place_case){ h, setuid_root, -EPERM, "runs as root" };
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(harness_run_as(NOBODY, place_as_caller, &cases[i]), 0);
	jailed_app(h, own, app, sizeof(app));
	assert_string_equal(app, "app");
	jailed_app(h, launched, app, sizeof(app));
	assert_string_equal(app, "app");
	for (size_t i = 2; i < 5; i++) {
		jailed_app(h, cases[i].pid, app, sizeof(app));
		assert_string_equal(app, "");
	}
	/* Root may place any process. */
	cases[2].want = 0;
	cases[2].msg = NULL;
	assert_int_equal(place_as_caller(&cases[2]), 0);
	jailed_app(h, stranger, app, sizeof(app));
	assert_string_equal(app, "app");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_place_only_own_processes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
