// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Trusted clients that come and go while cycles run (issue 29: in bench/day a trusted
 * "modem check" took its hold right after a resume and got "Connection reset by
 * peer").  Several trusted processes connect, hold, release and disconnect in a loop
 * while the daemon quiesces a jailed spinner, "suspends" (dry run), resumes or keeps
 * the jail (dark wakes), and a jailed app keeps asking for a hold of its own (the
 * wake-lock hog, deferred while the jail is quiesced), and a fork-hopper's short-lived
 * processes exit as the engine tracks them (an untracked one closed the daemon's fd 0,
 * then whatever took fd 0: a trusted client's socket).  Every trusted call must be
 * answered: no reset, no error.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-harness.h"
#include "qosjail.h"

#define CLIENTS 4
#define ROUNDS 40

#define POLICY(MODE)                                  \
	"version: 1\n"                                \
	"suspend:\n"                                  \
	"  backend: dry-run\n"                        \
	"  idle_delay: 100ms\n"                       \
	"  dry_run_length: 300ms\n"                   \
	"  dark_wake: " MODE "\n"                     \
	"  dark_wake_max: 0\n"                        \
	"jail:\n"                                     \
	"  cgroup: @CG@\n"                            \
	"  cpu_cgroup: @CPU@\n"                       \
	"  busy_threshold: 20%\n"                     \
	"  sample_window: 100ms\n"                    \
	"escalation:\n"                               \
	"  ladder:\n"                                 \
	"    - { action: SIGSTOP, grace: 1h }\n"      \
	"access:\n"                                   \
	"  hold: \"*\"\n"                             \
	"apps:\n"                                     \
	"  - name: busy\n"                            \
	"    match: { exe: \"/nonexistent/busy\" }\n" \
	"  - name: hog\n"                             \
	"    match: { exe: \"/nonexistent/hog\" }\n"  \
	"  - name: hopper\n"                          \
	"    match: { exe: \"/nonexistent/hopper\" }\n"

static int setup_keep(void **state)
{
	return harness_setup(state, POLICY("keep-quiesced"));
}

static int setup_restore(void **state)
{
	return harness_setup(state, POLICY("restore"));
}

static pid_t spawn(struct qj_conn *c, const char *app, const char *script)
{
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	pid_t pid;

	assert_int_equal(qj_spawn(c, app, argv, &pid, NULL), 0);
	harness_track(pid);
	return pid;
}

/* One trusted client's loop; exits 0 when every call was answered as asked. */
static void churn(const char *socket, int id)
{
	char name[32];

	srand((unsigned)getpid());
	snprintf(name, sizeof(name), "modem%d", id);
	for (int i = 0; i < ROUNDS; i++) {
		struct qj_conn *c = NULL;
		int r = qj_open(socket, &c);

		if (r == 0)
			r = qj_hold(c, name, "churn", 0, 0);
		if (r == 0) {
			usleep((useconds_t)(rand() % 150) * 1000);
			r = qj_release(c, name);
		}
		if (r < 0) {
			fprintf(stderr, "client %d round %d: %s (%s)\n", id, i, strerror(-r),
				c ? qj_last_error(c) : "no connection");
			_exit(1);
		}
		qj_close(c);
		usleep((useconds_t)(rand() % 400) * 1000);
	}
	_exit(0);
}

static void run_churn(struct harness *h)
{
	char ctl[512], hog[1200];
	struct qj_conn *c = NULL;
	long long before;
	pid_t kids[CLIENTS];
	int failed = 0;

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &c), 0);
	spawn(c, "busy", "while :; do :; done");
	snprintf(ctl, sizeof(ctl), "%s/controller/qosjailctl", getenv("QJ_BUILD_DIR"));
	snprintf(hog, sizeof(hog),
		 "while :; do %s --socket %s hold --name hog --why never -- sleep 1; done", ctl,
		 h->socket);
	spawn(c, "hog", hog);
	/* Short-lived processes: some exit between the jail's listing and their tracking. */
	spawn(c, "hopper", "while :; do for i in 1 2 3 4 5 6 7 8; do /bin/true & done; wait; done");
	before = harness_wait_int(h, "cycle", 0, 0);
	for (int i = 0; i < CLIENTS; i++) {
		kids[i] = fork();
		assert_true(kids[i] >= 0);
		if (kids[i] == 0)
			churn(h->socket, i);
	}
	for (int i = 0; i < CLIENTS; i++) {
		int st = 0;

		assert_int_equal(waitpid(kids[i], &st, 0), kids[i]);
		failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	if (failed) {
		harness_dump_log(h);
		fail_msg("%d of %d trusted clients got an error", failed, CLIENTS);
	}
	/* The churn met cycles (begun, interrupted, suspended): else it proved nothing. */
	if (harness_wait_int(h, "cycle", before + 3, 0) < before + 3) {
		harness_dump_log(h);
		fail_msg("fewer than 3 cycles during the churn");
	}
	qj_close(c);
}

static void test_churn_across_dark_wakes(void **state)
{
	run_churn(*state);
}

static void test_churn_across_restores(void **state)
{
	run_churn(*state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_churn_across_dark_wakes, setup_keep,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_churn_across_restores, setup_restore,
						harness_teardown),
	};
	int r = harness_need_root("integration/churn");

	if (r >= 0)
		return r;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
