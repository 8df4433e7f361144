// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The daemon's loop never waits on another process's locks (issue 25 finding 1).  The
 * attacker (stuck.h): a process whose /proc/PID/cmdline cannot be read for as long as
 * a private FUSE server holds a read.  Every assertion is about order against that held
 * read: the daemon answered, restored, jailed or exited while the server still held it
 * (the caps below only keep a failing run from hanging).
 *
 *  - explain by uid 65534 of that (root's) process: EPERM, and a status from another
 *    client is answered meanwhile; root's explain is answered too, cmdline unread;
 *  - a cycle during which a root client asks to explain it: the jail is restored right
 *    after the dry-run suspend, a hold is answered, SIGTERM ends the daemon;
 *  - the exec of a program the policy matches by cmdline, whose lock gets stuck before
 *    the daemon reads the exec event: the loop keeps answering, and the process is
 *    jailed (fail closed), not left running outside the jail.
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
#include "itest.h"
#include "procread.h"
#include "qosjail.h"
#include "stuck.h"
#include "util.h"

/* Longer than any answer can take on a loaded machine; the held read lasts longer. */
#define CAP_MS 30000

static struct stuck attacker;

/*
 * "locked" matches qj-mmaplock only with --jail-me in its cmdline: for any other
 * qj-mmaplock the cmdline decides, so explain and exec matching must read it.
 */
static const char policy_fmt[] =
	"version: 1\n"
	"suspend:\n"
	"  backend: dry-run\n"
	"  idle_delay: 1h\n"
	"  dry_run_length: 3s\n"
	"jail:\n"
	"  cgroup: @CG@\n"
	"  cpu_cgroup: @CPU@\n"
	"  busy_threshold: 20%%\n"
	"  sample_window: 300ms\n"
	"escalation:\n"
	"  ladder:\n"
	"    - { action: SIGSTOP, grace: 1h }\n"
	"apps:\n"
	"  - name: busy\n"
	"    match: { exe: \"/nonexistent/busy\" }\n"
	"  - name: locked\n"
	"    match: { exe: \"%s/tests/apps/qj-mmaplock\", cmdline: \"* --jail-me\" }\n";

static int setup(void **state)
{
	char policy[2048];

	snprintf(policy, sizeof(policy), policy_fmt, getenv("QJ_BUILD_DIR"));
	return harness_setup(state, policy);
}

static int teardown(void **state)
{
	/* The server answers first: a daemon stuck on the read can then exit. */
	struct harness *h = *state;

	stuck_cleanup(&attacker);
	if (h && h->pid == 0) { /* the test stopped it and checked its exit status */
		harness_cleanup(h);
		free(h);
		*state = NULL;
	}
	return harness_teardown(state);
}

static void start_attacker(struct harness *h, const char *extra)
{
	assert_int_equal(stuck_server_start(&attacker, "hold"), 0);
	if (stuck_app_start(&attacker, extra) < 0) {
		harness_dump_log(h);
		fail_msg("the attacker's lock did not get stuck");
	}
}

static char *call(int fd, const char *req)
{
	return stuck_send(fd, req) < 0 ? NULL : stuck_recv(fd, CAP_MS);
}

/* status from a fresh client is answered while the attacker's read is still held. */
/* Connect, hello and status: its time in microseconds, 0 when unanswered. */
static uint64_t status_usec(struct harness *h, char **ret)
{
	uint64_t t0 = now_usec(CLOCK_MONOTONIC);
	int fd = stuck_client(h->socket);
	char *r = NULL;

	if (fd >= 0) {
		r = call(fd, "{\"op\":\"status\"}");
		close(fd);
	}
	*ret = r;
	return r ? now_usec(CLOCK_MONOTONIC) - t0 : 0;
}

/* The figure for the report: a status while the read is held against one before. */
static void status_figure(struct harness *h, uint64_t baseline_usec)
{
	char *r = NULL;
	uint64_t t = status_usec(h, &r);

	print_message("status round trip while the FUSE read is held: %.2f ms (baseline before "
		      "the attacker: %.2f ms)\n",
		      t / 1000.0, baseline_usec / 1000.0);
	free(r);
}

static void assert_status_answered(struct harness *h)
{
	char *r = NULL;

	(void)status_usec(h, &r);
	if (!r || !stuck_still(&attacker)) {
		harness_dump_log(h);
		fail_msg("status %s while the FUSE read was held",
			 r ? "answered only" : "unanswered");
	}
	assert_non_null(strstr(r, "\"ok\":true"));
	free(r);
}

struct nobody {
	const char *socket;
	pid_t target;
	int sent_w; /* written once the explain request is sent */
};

/* As uid 65534: explain of root's process; 0 when EPERM came while the read was held. */
static int nobody_explain(void *arg)
{
	struct nobody *n = arg;
	char req[128], *r;
	int fd = stuck_client(n->socket);

	if (fd < 0)
		return 2;
	snprintf(req, sizeof(req), "{\"op\":\"explain\",\"pid\":%d}", n->target);
	if (stuck_send(fd, req) < 0 || write(n->sent_w, "x\n", 2) != 2)
		return 3;
	r = stuck_recv(fd, CAP_MS);
	if (!r)
		return 4; /* no answer while the server held the read */
	if (!strstr(r, "\"EPERM\"")) {
		fprintf(stderr, "explain answered: %s\n", r);
		return 5;
	}
	return 0;
}

static void test_explain_checks_access_first(void **state)
{
	struct harness *h = *state;
	struct nobody n;
	char req[128], *r = NULL;
	int sent[2], fd, status;
	uint64_t baseline, t0;
	pid_t child;

	REQUIRE_HARNESS(h);
	baseline = status_usec(h, &r);
	assert_non_null(r);
	free(r);
	start_attacker(h, NULL); /* a qj-mmaplock without --jail-me: not jailed */
	assert_int_equal(pipe(sent), 0);
	n = (struct nobody){ .socket = h->socket, .target = attacker.app, .sent_w = sent[1] };
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(harness_run_as(65534, nobody_explain, &n));
	close(sent[1]);
	/* Once nobody's explain is in, another client's status is answered. */
	assert_true(stuck_wait_line(sent[0], "x", NULL, 0, CAP_MS));
	assert_status_answered(h);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(stuck_still(&attacker));
	close(sent[0]);

	/* Root may: answered without the cmdline, and status meanwhile. */
	fd = stuck_client(h->socket);
	assert_true(fd >= 0);
	snprintf(req, sizeof(req), "{\"op\":\"explain\",\"pid\":%d}", attacker.app);
	t0 = now_usec(CLOCK_MONOTONIC);
	assert_int_equal(stuck_send(fd, req), 0);
	assert_status_answered(h);
	status_figure(h, baseline);
	r = stuck_recv(fd, CAP_MS);
	print_message("root's explain answered without the cmdline after %.0f ms (read timeout "
		      "%.0f ms, one read stuck before it)\n",
		      (now_usec(CLOCK_MONOTONIC) - t0) / 1000.0, QJ_PROCREAD_TIMEOUT_USEC / 1000.0);
	if (!r || !stuck_still(&attacker)) {
		harness_dump_log(h);
		fail_msg("root's explain %s while the read was held", r ? "came only" : "missing");
	}
	if (!strstr(r, "\"ok\":true") || !strstr(r, "cmdline could not be read"))
		fail_msg("explain answered: %s", r);
	free(r);
	close(fd);
}

/* Waits for the daemon to exit, at most CAP_MS; its exit status, or -1. */
static int wait_exit(pid_t pid)
{
	int status;

	for (int i = 0; i < CAP_MS / 10; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		msleep(10);
	}
	return -1;
}

static void test_cycle_restores_past_stuck_read(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	char exe[512], req[128], *r;
	char *argv[] = { exe, NULL };
	int fd, hold_fd;
	pid_t busy;
	bool restored = false;

	REQUIRE_HARNESS(h);
	start_attacker(h, NULL);
	snprintf(exe, sizeof(exe), "%s/tests/apps/qj-busy", getenv("QJ_BUILD_DIR"));
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_spawn(c, "busy", argv, &busy, NULL), 0);
	harness_track(busy);
	assert_int_equal(qj_suspend(c), 0);
	for (int i = 0; i < CAP_MS / 10 && !itest_stopped_or_stopping(busy); i++)
		msleep(10);
	assert_true(itest_stopped_or_stopping(busy));
	assert_true(harness_wait_state(h, "suspending", CAP_MS));

	/* Mid-suspend, a root client asks about the attacker. */
	fd = stuck_client(h->socket);
	assert_true(fd >= 0);
	snprintf(req, sizeof(req), "{\"op\":\"explain\",\"pid\":%d}", attacker.app);
	assert_int_equal(stuck_send(fd, req), 0);

	/* The dry run ends: the busy task runs again while the read is still held. */
	for (int i = 0; i < CAP_MS / 10 && !restored; i++) {
		restored = itest_state(busy) != 'T' && !itest_stopped_or_stopping(busy);
		if (!restored)
			msleep(10);
	}
	if (!restored || !stuck_still(&attacker)) {
		harness_dump_log(h);
		fail_msg("jail %s while the FUSE read was held",
			 restored ? "restored only" : "left stopped");
	}
	/* A hold is served. */
	hold_fd = stuck_client(h->socket);
	assert_true(hold_fd >= 0);
	r = call(hold_fd, "{\"op\":\"hold\",\"name\":\"after\",\"reason\":\"test\"}");
	assert_non_null(r);
	assert_non_null(strstr(r, "\"ok\":true"));
	assert_true(stuck_still(&attacker));
	free(r);
	r = stuck_recv(fd, CAP_MS); /* the explain, answered in its time */
	assert_non_null(r);
	free(r);

	/* SIGTERM: the daemon exits while the read is still held. */
	assert_int_equal(kill(h->pid, SIGTERM), 0);
	assert_int_equal(wait_exit(h->pid), 0);
	h->pid = 0;
	assert_true(stuck_still(&attacker));
	assert_false(itest_stopped_or_stopping(busy));
	close(hold_fd);
	close(fd);
	qj_close(c);
}

/* /proc/PID/cgroup names @app's group of the test jail. */
static bool in_app(struct harness *h, pid_t pid, const char *app)
{
	char path[64], buf[2048] = "", want[320];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	snprintf(want, sizeof(want), "%s/%s\n", strstr(h->it->cg_path, "/qosjail-test-"), app);
	return strstr(buf, want) != NULL;
}

static void test_exec_match_fails_closed(void **state)
{
	struct harness *h = *state;
	bool jailed = false;

	REQUIRE_HARNESS(h);
	assert_int_equal(stuck_server_start(&attacker, "hold"), 0);
	/* The daemon reads the exec event only once the new program's lock is stuck. */
	assert_int_equal(kill(h->pid, SIGSTOP), 0);
	if (stuck_app_start(&attacker, "--jail-me") < 0) {
		(void)kill(h->pid, SIGCONT);
		fail_msg("the attacker's lock did not get stuck");
	}
	assert_false(in_app(h, attacker.app, "locked"));
	assert_int_equal(kill(h->pid, SIGCONT), 0);
	assert_status_answered(h);
	for (int i = 0; i < CAP_MS / 10 && !jailed; i++) {
		jailed = in_app(h, attacker.app, "locked");
		if (!jailed)
			msleep(10);
	}
	if (!jailed || !stuck_still(&attacker)) {
		harness_dump_log(h);
		fail_msg("the matching program %s while its cmdline read was held",
			 jailed ? "was jailed only" : "ran outside the jail");
	}
	assert_true(
		harness_log_has(h, "jailing it in app locked, which it may match (fail closed)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_explain_checks_access_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cycle_restores_past_stuck_read, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_exec_match_fails_closed, setup, teardown),
	};
	int r = harness_need_root("integration/stall");

	if (r >= 0)
		return r;
	if (access("/dev/fuse", R_OK | W_OK) < 0) {
		fprintf(stderr, "integration/stall: no /dev/fuse%s\n",
			getenv("CI") ? "" : ", skipped");
		return getenv("CI") ? 1 : 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
