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
#include <fcntl.h>
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
	"    match: { exe: \"%s/tests/apps/qj-mmaplock\", cmdline: \"* --jail-me\" }\n"
	"  - name: first\n"
	"    match: { exe: \"%s\", cmdline: \"* --first\" }\n"
	"  - name: second\n"
	"    match: { exe: \"%s\", cmdline: \"* --second\" }\n";

/* A copy of /bin/sh only this test runs: the backlog test's many cheap candidates. */
static char sh_copy[64];

static int setup(void **state)
{
	char policy[4096], cmd[160];

	snprintf(sh_copy, sizeof(sh_copy), "/tmp/qjstall-sh-%d", getpid());
	snprintf(cmd, sizeof(cmd), "cp /bin/sh %s", sh_copy);
	if (system(cmd) != 0)
		return -1;
	snprintf(policy, sizeof(policy), policy_fmt, getenv("QJ_BUILD_DIR"), sh_copy, sh_copy);
	return harness_setup(state, policy);
}

static int teardown(void **state)
{
	/* The server answers first: a daemon stuck on the read can then exit. */
	struct harness *h = *state;

	stuck_cleanup(&attacker);
	(void)unlink(sh_copy);
	if (h && h->pid == 0) { /* the test stopped it and checked its exit status */
		harness_cleanup(h);
		free(h);
		*state = NULL;
	}
	return harness_teardown(state);
}

/*
 * An attacker the policy does not jail, though its exe is a candidate (its cmdline
 * decides).  Its exec is classified before its lock gets stuck: root's explain, answered
 * from the same reader queue after the exec's read, says "not jailed" first (under load
 * the exec's read could otherwise come after the lock, and then it is jailed: fail closed).
 */
static void start_attacker(struct harness *h, const char *extra)
{
	char req[128], *r = NULL;
	int fd;

	assert_int_equal(stuck_server_start(&attacker, "hold"), 0);
	assert_int_equal(stuck_app_spawn(&attacker, extra), 0);
	fd = stuck_client(h->socket);
	assert_true(fd >= 0);
	snprintf(req, sizeof(req), "{\"op\":\"explain\",\"pid\":%d}", attacker.app);
	assert_int_equal(stuck_send(fd, req), 0);
	r = stuck_recv(fd, CAP_MS);
	if (!r || !strstr(r, "\"jailed\":false"))
		fail_msg("the attacker before its lock: %s", r ? r : "no answer");
	free(r);
	close(fd);
	if (stuck_app_lock(&attacker) < 0) {
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
		      "%.0f ms)\n",
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

/* Extra attackers of the bound test, cleaned up by its teardown. */
static struct stuck more[2];

static int teardown_more(void **state)
{
	for (size_t i = 0; i < ARRAY_SIZE(more); i++)
		stuck_cleanup(&more[i]);
	return teardown(state);
}

static long long status_int(struct harness *h, const char *key)
{
	json_t *j = harness_status(h);
	long long v = j ? (long long)json_integer_value(json_object_get(j, key)) : -1;

	json_decref(j);
	return v;
}

/*
 * Three processes of one uid, each matched by cmdline and stuck right after its exec:
 * at most QJ_PROCREAD_MAX_STUCK_PER_UID readers stay stuck on that uid's processes, the
 * rest fail at once, and all three are jailed (fail closed) while the reads are held.
 */
static void test_stuck_readers_bounded_per_uid(void **state)
{
	struct harness *h = *state;
	struct stuck *all[] = { &attacker, &more[0], &more[1] };
	bool jailed = false;

	REQUIRE_HARNESS(h);
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		assert_int_equal(stuck_server_start(all[i], "hold"), 0);
	assert_int_equal(kill(h->pid, SIGSTOP), 0);
	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		if (stuck_app_start(all[i], "--jail-me") < 0) {
			(void)kill(h->pid, SIGCONT);
			fail_msg("attacker %zu's lock did not get stuck", i);
		}
	assert_int_equal(kill(h->pid, SIGCONT), 0);
	assert_status_answered(h);
	for (int i = 0; i < CAP_MS / 10 && !jailed; i++) {
		jailed = true;
		for (size_t k = 0; k < ARRAY_SIZE(all); k++)
			jailed &= in_app(h, all[k]->app, "locked");
		if (!jailed)
			msleep(10);
	}
	for (size_t k = 0; k < ARRAY_SIZE(all); k++)
		if (!in_app(h, all[k]->app, "locked") || !stuck_still(all[k])) {
			harness_dump_log(h);
			fail_msg("attacker %zu %s while its read was held", k,
				 in_app(h, all[k]->app, "locked") ? "was jailed only" :
								    "ran outside the jail");
		}
	assert_int_equal(status_int(h, "stuck_reads"), QJ_PROCREAD_MAX_STUCK_PER_UID);
}

/*
 * More candidates than the reader's queue holds (QJ_PROCREAD_MAX_QUEUE), behind a stuck
 * read: each is decided by its own cmdline once the queue has room, none is jailed
 * without it ("second", not the fail-closed "first").
 */
static void test_queue_overflow_waits_its_turn(void **state)
{
	enum { N = QJ_PROCREAD_MAX_QUEUE + 64 };
	struct harness *h = *state;
	static pid_t pids[N];
	int in[2];
	size_t jailed = 0;

	REQUIRE_HARNESS(h);
	assert_int_equal(stuck_server_start(&attacker, "hold"), 0);
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(kill(h->pid, SIGSTOP), 0);
	if (stuck_app_start(&attacker, "--jail-me") < 0) {
		(void)kill(h->pid, SIGCONT);
		fail_msg("the attacker's lock did not get stuck");
	}
	for (size_t i = 0; i < N; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			dup2(in[0], STDIN_FILENO);
			execl(sh_copy, "sh", "-c", "read x", "--second", (char *)NULL);
			_exit(127);
		}
		/* Not tracked (the tracker kills past 64): they exit at EOF on @in, with us. */
	}
	/* Every one has exec'd (its exe is the copy) before the daemon reads an event. */
	for (size_t i = 0; i < N; i++) {
		char path[64], link[128] = "";

		snprintf(path, sizeof(path), "/proc/%d/exe", pids[i]);
		for (int k = 0; k < CAP_MS / 10; k++) {
			ssize_t n = readlink(path, link, sizeof(link) - 1);

			if (n > 0 && (link[n] = '\0', strcmp(link, sh_copy) == 0))
				break;
			msleep(10);
		}
	}
	assert_int_equal(kill(h->pid, SIGCONT), 0);
	for (int k = 0; k < CAP_MS / 20 && jailed < N; k++) {
		jailed = 0;
		for (size_t i = 0; i < N; i++)
			jailed += in_app(h, pids[i], "second");
		if (jailed < N)
			msleep(20);
	}
	print_message("%zu of %d candidates jailed by their own cmdline behind a stuck read\n",
		      jailed, (int)N);
	for (size_t i = 0; i < N; i++)
		if (in_app(h, pids[i], "first")) {
			harness_dump_log(h);
			fail_msg("pid %d was jailed without its cmdline", pids[i]);
		}
	assert_int_equal(jailed, N);
	close(in[0]);
	close(in[1]); /* the shells read EOF and exit */
	for (size_t i = 0; i < N; i++)
		(void)waitpid(pids[i], NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_explain_checks_access_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cycle_restores_past_stuck_read, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_exec_match_fails_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stuck_readers_bounded_per_uid, setup,
						teardown_more),
		cmocka_unit_test_setup_teardown(test_queue_overflow_waits_its_turn, setup,
						teardown),
	};
	int r = harness_need_root("integration/stall");

	if (getenv("QJ_TEST_FILTER")) /* e.g. QJ_TEST_FILTER='test_queue*' */
		cmocka_set_test_filter(getenv("QJ_TEST_FILTER"));

	if (r >= 0)
		return r;
	if (access("/dev/fuse", R_OK | W_OK) < 0) {
		fprintf(stderr, "integration/stall: no /dev/fuse%s\n",
			getenv("CI") ? "" : ", skipped");
		return getenv("CI") ? 1 : 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
