// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * qosjaild with its jail engine, on a test jail subtree: spawning into an
 * app's group (library and `qosjailctl run`), a hold during a cycle that
 * already stopped a busy task (it must be continued), a task the engine
 * cannot track (the cycle fails), kill -9 of the daemon mid-cycle, `explain`,
 * and jailed peers whose hold requests wait for resume instead of keeping the
 * system awake.
 *
 * Apps match nonexistent executables: tests place and spawn into them by
 * name, and the daemon must not jail other programs running on the machine.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <poll.h>
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
#include "itest.h"
#include "qosjail.h"

static const char policy_jail[] = "version: 1\n"
				  "suspend:\n"
				  "  backend: dry-run\n"
				  "  idle_delay: 1h\n"
				  "  dry_run_length: 1500ms\n"
				  "jail:\n"
				  "  cgroup: @CG@\n"
				  "  cpu_cgroup: @CPU@\n"
				  "  busy_threshold: 20%\n"
				  "  sample_window: 300ms\n"
				  "escalation:\n"
				  "  ladder:\n"
				  "    - { action: SIGSTOP, grace: 1h }\n"
				  "apps:\n"
				  "  - name: busy\n"
				  "    match: { exe: \"/nonexistent/busy\" }\n"
				  "  - name: peer\n"
				  "    match: { exe: \"/nonexistent/peer\" }\n"
				  "    holds: { max: 2 }\n";

/* A ladder of one notify rung, and an app that did not consent to it: nothing applies. */
static const char policy_stuck[] = "version: 1\n"
				   "suspend:\n"
				   "  backend: dry-run\n"
				   "  idle_delay: 1h\n"
				   "jail:\n"
				   "  cgroup: @CG@\n"
				   "  cpu_cgroup: @CPU@\n"
				   "  busy_threshold: 20%\n"
				   "  sample_window: 300ms\n"
				   "escalation:\n"
				   "  ladder:\n"
				   "    - { action: SIGXCPU, grace: 1h }\n"
				   "apps:\n"
				   "  - name: stuck\n"
				   "    match: { exe: \"/nonexistent/stuck\" }\n";

/*
 * As policy_jail, with the jail at its normal CPU class while suspending: the
 * jailed peer must run to send its hold during the dry run, and at the idle class
 * beside a loaded machine's work it got no CPU until after the resume.
 */
static const char policy_peer[] = "version: 1\n"
				  "suspend:\n"
				  "  backend: dry-run\n"
				  "  idle_delay: 1h\n"
				  "  dry_run_length: 5s\n"
				  "jail:\n"
				  "  cgroup: @CG@\n"
				  "  cpu_cgroup: @CPU@\n"
				  "  cpu_idle: false\n"
				  "  busy_threshold: 20%\n"
				  "  sample_window: 300ms\n"
				  "escalation:\n"
				  "  ladder:\n"
				  "    - { action: SIGSTOP, grace: 1h }\n"
				  "apps:\n"
				  "  - name: peer\n"
				  "    match: { exe: \"/nonexistent/peer\" }\n"
				  "    holds: { max: 2 }\n";

static int setup_peer(void **state)
{
	return harness_setup(state, policy_peer);
}

/* A notify rung first, and an app whose policy does not consent to it. */
static const char policy_consent[] = "version: 1\n"
				     "suspend:\n"
				     "  backend: dry-run\n"
				     "  idle_delay: 1h\n"
				     "  dry_run_length: 1500ms\n"
				     "jail:\n"
				     "  cgroup: @CG@\n"
				     "  cpu_cgroup: @CPU@\n"
				     "  busy_threshold: 20%\n"
				     "  sample_window: 300ms\n"
				     "escalation:\n"
				     "  ladder:\n"
				     "    - { action: SIGXCPU, grace: 1h }\n"
				     "    - { action: SIGSTOP, grace: 1h }\n"
				     "apps:\n"
				     "  - name: app\n"
				     "    match: { exe: \"/nonexistent/app\" }\n";

static int setup_consent(void **state)
{
	return harness_setup(state, policy_consent);
}

static int setup_stuck(void **state)
{
	return harness_setup(state, policy_stuck);
}

static int setup(void **state)
{
	return harness_setup(state, policy_jail);
}

static bool cgroup_of(pid_t pid, const char *want)
{
	char path[64], buf[1024] = "";
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, want) != NULL;
}

static void app_path(const char *app, char *buf, size_t size)
{
	snprintf(buf, size, "%s/tests/apps/qj-%s", getenv("QJ_BUILD_DIR"), app);
}

static void test_spawn_into_app_group(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	char exe[512], want[300];
	char *argv[] = { exe, NULL };
	char *missing[] = { "/nonexistent/program", NULL };
	pid_t pid;
	int pidfd = -1, status;

	REQUIRE_HARNESS(h);
	app_path("sleeper", exe, sizeof(exe));
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_spawn(c, "busy", argv, &pid, &pidfd), 0);
	assert_true(pidfd >= 0);
	/* In the app's group from its first instruction. */
	snprintf(want, sizeof(want), "%s/busy", strstr(h->it->cg_path, "/qosjail-test-"));
	assert_true(cgroup_of(pid, want));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(pidfd);

	assert_int_equal(qj_spawn(c, "nosuchapp", argv, &pid, NULL), -ENOENT);
	assert_non_null(strstr(qj_last_error(c), "no app 'nosuchapp'"));
	assert_int_equal(qj_spawn(c, "busy", missing, &pid, NULL), -ENOENT);
	assert_non_null(strstr(qj_last_error(c), "cannot execute"));
	qj_close(c);
}

static void test_ctl_run_and_hold_exit_status(void **state)
{
	struct harness *h = *state;
	char cmd[2048], want[300];
	int status;

	REQUIRE_HARNESS(h);
	snprintf(want, sizeof(want), "%s/busy", strstr(h->it->cg_path, "/qosjail-test-"));
	snprintf(cmd, sizeof(cmd),
		 "%s/controller/qosjailctl --socket %s run --app busy -- sh -c "
		 "'grep -q %s /proc/self/cgroup && exit 7; exit 1'",
		 getenv("QJ_BUILD_DIR"), h->socket, want);
	status = system(cmd);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 7);
	snprintf(cmd, sizeof(cmd),
		 "%s/controller/qosjailctl --socket %s run --app busy -- sh -c 'kill -TERM $$'",
		 getenv("QJ_BUILD_DIR"), h->socket);
	status = system(cmd);
	assert_int_equal(WEXITSTATUS(status), 128 + SIGTERM);

	/* hold: the hold is visible while CMD runs, CMD's status comes back. */
	snprintf(cmd, sizeof(cmd),
		 "%1$s/controller/qosjailctl --socket %2$s hold --name build --why 'make -j2' -- "
		 "sh -c '%1$s/controller/qosjailctl --socket %2$s status --json | "
		 "grep -q \"\\\"name\\\":\\\"build\\\"\" && exit 5; exit 1'",
		 getenv("QJ_BUILD_DIR"), h->socket);
	status = system(cmd);
	assert_int_equal(WEXITSTATUS(status), 5);
	snprintf(cmd, sizeof(cmd), "%s/controller/qosjailctl --socket %s hold --name x -- true",
		 getenv("QJ_BUILD_DIR"), h->socket);
	status = system(cmd);
	assert_int_equal(WEXITSTATUS(status), 2); /* usage: --why missing */
}

/* Spawns a busy task into app "busy", requests a cycle and waits until the SIGSTOP rung hits it. */
static pid_t spawn_busy_until_stopped(struct harness *h, struct qj_conn *c)
{
	char exe[512];
	char *argv[] = { exe, NULL };
	pid_t pid;

	app_path("busy", exe, sizeof(exe));
	assert_int_equal(qj_spawn(c, "busy", argv, &pid, NULL), 0);
	assert_int_equal(qj_suspend(c), 0);
	/* The busy task does not block: the SIGSTOP rung stops it (grace 1h: no further). */
	for (int i = 0; i < 1000 && !itest_stopped_or_stopping(pid); i++)
		msleep(10);
	if (!itest_stopped_or_stopping(pid)) {
		harness_dump_log(h);
		fail_msg("busy task %d not stopped (state %c)", pid, itest_state(pid));
	}
	return pid;
}

/*
 * A hold during a cycle continues everything qosjail stopped.  The engine confirms the
 * stop 10 ms after sending it and the cycle moves on to the (1.5 s) dry-run suspend, so
 * the hold lands in either phase: it aborts the quiesce or interrupts the suspend.
 */
static void test_hold_during_cycle_continues_stopped(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL, *holder = NULL;
	const char *result;
	pid_t pid;
	json_t *j;
	char st;

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &c), 0);
	pid = spawn_busy_until_stopped(h, c);

	assert_int_equal(qj_open(h->socket, &holder), 0);
	assert_int_equal(qj_hold(holder, "user", "key press", 0, 0), 0);
	assert_true(harness_wait_state(h, "awake", 2000));
	for (int i = 0; i < 200 && (st = itest_state(pid)) == 'T'; i++)
		msleep(10);
	assert_true(st == 'R' || st == 'S');
	j = harness_status(h);
	result = json_string_value(json_object_get(json_object_get(j, "last"), "result"));
	assert_non_null(result);
	if (strcmp(result, "aborted") != 0 && strcmp(result, "interrupted") != 0)
		fail_msg("cycle result %s, expected aborted or interrupted", result);
	assert_int_equal(json_integer_value(json_object_get(j, "suspends")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "jail"), "stopped")),
			 0);
	json_decref(j);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	qj_close(holder);
	qj_close(c);
}

/* The v1 cpu line of /proc/PID/cgroup ends in @want (a hybrid host's cpu controller). */
static bool v1_cpu_cgroup_is(pid_t pid, const char *want)
{
	char path[64], line[512];
	bool ok = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *cg = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!cg)
			continue;
		*cg++ = 0;
		cg[strcspn(cg, "\n")] = 0;
		for (char *save = NULL, *tok = strtok_r(ctl + 1, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save))
			if (strcmp(tok, "cpu") == 0)
				ok = strcmp(cg, want) == 0;
	}
	fclose(f);
	return ok;
}

/*
 * A task `qosjailctl run`/qj_spawn() started by clone3 into the cgroup2 group is put in
 * the app's v1 cpu group too (hybrid host), so the jail's cpu.idle reaches it in a cycle.
 */
static void test_spawned_task_gets_v1_cpu_group(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	char want[300];
	pid_t pid;

	REQUIRE_HARNESS(h);
	if (access(h->it->cpu_path, F_OK) < 0) {
		print_message("skipped: no v1 cpu controller (not a hybrid host)\n");
		skip();
	}
	snprintf(want, sizeof(want), "%s/busy", strstr(h->it->cpu_path, "/qosjail-test-"));
	assert_int_equal(qj_open(h->socket, &c), 0);
	pid = spawn_busy_until_stopped(h, c);
	if (!v1_cpu_cgroup_is(pid, want)) {
		harness_dump_log(h);
		fail_msg("spawned task %d is not in the v1 cpu group %s", pid, want);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	qj_close(c);
}

/*
 * While a quiesce waits, status and explain name the app that holds it up and what
 * is about to happen: a busy task whose app allows no rung of the ladder.
 */
static void test_status_names_app_holding_quiesce(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL, *holder = NULL;
	char exe[512], cmd[1024], out[4096];
	char *argv[] = { exe, NULL };
	const char *app = NULL;
	json_t *j = NULL, *jail;
	FILE *f;
	size_t n;
	pid_t pid;

	REQUIRE_HARNESS(h);
	app_path("busy", exe, sizeof(exe));
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_spawn(c, "stuck", argv, &pid, NULL), 0);
	msleep(100);
	assert_int_equal(qj_suspend(c), 0);
	msleep(700); /* past the first sample windows: measured busy, no rung applies */
	for (int i = 0; i < 500; i++) {
		json_decref(j);
		j = harness_status(h);
		jail = json_object_get(j, "jail");
		app = json_string_value(json_object_get(jail, "holding_app"));
		if (app)
			break;
		msleep(20);
	}
	if (!app) {
		harness_dump_log(h);
		fail_msg("status never named the app holding the quiesce up");
	}
	assert_string_equal(app, "stuck");
	assert_non_null(json_string_value(json_object_get(jail, "holding")));
	assert_true(json_integer_value(json_object_get(jail, "bound_ms")) > 0);
	json_decref(j);

	snprintf(cmd, sizeof(cmd), "%s/controller/qosjailctl --socket %s status",
		 getenv("QJ_BUILD_DIR"), h->socket);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	pclose(f);
	print_message("%s", out);
	assert_non_null(strstr(out, "waiting for app stuck"));
	assert_non_null(strstr(out, "busy after its last rung"));
	snprintf(cmd, sizeof(cmd), "%s/controller/qosjailctl --socket %s explain %d",
		 getenv("QJ_BUILD_DIR"), h->socket, pid);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	pclose(f);
	print_message("%s", out);
	assert_non_null(strstr(out, "holds the quiesce up"));

	assert_int_equal(qj_open(h->socket, &holder), 0);
	assert_int_equal(qj_hold(holder, "user", "done", 0, 0), 0);
	assert_true(harness_wait_state(h, "awake", 5000));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	qj_close(holder);
	qj_close(c);
}

static bool log_has(struct harness *h, const char *text)
{
	char buf[65536];
	FILE *f = fopen(h->log, "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return strstr(buf, text) != NULL;
}

/*
 * A jailed task the engine cannot track (here pidfd_open() gives ENOSYS, as on
 * kernels before 5.3) must fail the quiesce step, not pass for a quiet jail:
 * no suspend, the cycle's result names the error, and the daemon said why at
 * start and at the cycle.
 */
static void test_untrackable_task_fails_cycle(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	char exe[512];
	char *argv[] = { exe, NULL };
	const char *result = NULL;
	json_t *j = NULL;
	pid_t pid;

	REQUIRE_HARNESS(h);
	harness_no_pidfd = true;
	assert_int_equal(harness_restart(h), 0);
	harness_no_pidfd = false;
	assert_true(log_has(h, "pidfd_open() does not work here"));

	assert_int_equal(qj_open(h->socket, &c), 0);
	app_path("busy", exe, sizeof(exe));
	assert_int_equal(qj_spawn(c, "busy", argv, &pid, NULL), 0);
	assert_int_equal(qj_suspend(c), 0);
	for (int i = 0; i < 500; i++) {
		json_decref(j);
		j = harness_status(h);
		result = json_string_value(json_object_get(json_object_get(j, "last"), "result"));
		if (result && strcmp(result, "failed") == 0)
			break;
		msleep(10);
	}
	assert_non_null(result);
	assert_string_equal(result, "failed");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "last"), "error")),
			    "ENOSYS");
	assert_int_equal(json_integer_value(json_object_get(j, "suspends")), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "dry_runs")), 0);
	json_decref(j);
	assert_true(log_has(h, "Cannot track"));
	assert_int_not_equal(itest_state(pid), 'T');
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	qj_close(c);
}

static json_t *explain(struct qj_conn *c, pid_t pid)
{
	char *text = NULL;
	json_t *j;

	assert_int_equal(qj_explain(c, pid, &text), 0);
	j = json_loads(text, 0, NULL);
	assert_non_null(j);
	free(text);
	return j;
}

/* qosjailctl explain: jailed or not and why, the ladder ahead, what the running quiesce did. */
static void test_explain(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	char cmd[1024], out[4096] = "";
	json_t *j, *cy;
	size_t n;
	FILE *f;
	pid_t pid;

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &c), 0);

	j = explain(c, getpid()); /* this test: matches no app */
	assert_false(json_is_true(json_object_get(j, "jailed")));
	assert_true(json_is_null(json_object_get(j, "app")));
	assert_string_equal(json_string_value(json_object_get(j, "why")),
			    "not jailed: matches no app of the policy");
	assert_int_equal(json_array_size(json_object_get(j, "ladder")), 0);
	json_decref(j);
	assert_int_equal(qj_explain(c, 0x7ffffff0, &(char *){ NULL }), -ESRCH);

	pid = spawn_busy_until_stopped(h, c);
	j = explain(c, pid);
	assert_true(json_is_true(json_object_get(j, "jailed")));
	assert_string_equal(json_string_value(json_object_get(j, "app")), "busy");
	assert_string_equal(json_string_value(json_object_get(j, "trust")), "jailed");
	assert_non_null(strstr(json_string_value(json_object_get(j, "why")), "jailed in app busy"));
	assert_int_equal(json_array_size(json_object_get(j, "ladder")), 1);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(j, "ladder"), 0), "action")),
			    "SIGSTOP");
	cy = json_object_get(j, "cycle");
	assert_true(json_is_true(json_object_get(cy, "quiescing")));
	assert_true(json_is_true(json_object_get(cy, "tracked")));
	assert_true(json_is_true(json_object_get(cy, "stopped_by_qosjail")));
	assert_string_equal(json_string_value(json_object_get(cy, "rung")),
			    json_string_value(json_object_get(
				    json_array_get(json_object_get(j, "ladder"), 0), "name")));
	json_decref(j);

	/* The command line's table says the same. */
	snprintf(cmd, sizeof(cmd), "%s/controller/qosjailctl --socket %s explain %d",
		 getenv("QJ_BUILD_DIR"), h->socket, pid);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	assert_int_equal(pclose(f), 0);
	assert_non_null(strstr(out, "Jailed:   yes"));
	assert_non_null(strstr(out, "stopped by qosjail"));
	snprintf(cmd, sizeof(cmd), "%s/controller/qosjailctl --socket %s explain nope 2>/dev/null",
		 getenv("QJ_BUILD_DIR"), h->socket);
	assert_int_equal(WEXITSTATUS(system(cmd)), 2);

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	qj_close(c);
}

/* kill -9 of qosjaild mid-cycle leaves a task stopped; the next start must continue it. */
static void test_kill9_mid_cycle_then_restart(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	pid_t pid;
	json_t *j;
	char st = 'T';

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &c), 0);
	pid = spawn_busy_until_stopped(h, c);
	qj_close(c);

	/* No SIGTERM handler runs: the task stays stopped until a new instance starts. */
	assert_int_equal(harness_kill9_restart(h), 0);
	for (int i = 0; i < 200 && (st = itest_state(pid)) == 'T'; i++)
		msleep(10);
	if (st == 'T') {
		harness_dump_log(h);
		fail_msg("task %d still stopped after the restart", pid);
	}
	assert_true(cgroup_of(pid, "/busy"));
	j = harness_status(h);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "jail"), "stopped")),
			 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "jail"), "frozen")),
			 0);
	json_decref(j);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* A forked child, placed into app "peer", asks for holds when told to. */
static void peer_main(const char *socket, int go_fd, int report_fd)
{
	struct qj_conn *c = NULL;
	char cmd;
	int r;

	if (qj_open(socket, &c) < 0)
		_exit(1);
	r = 1; /* connected: from here it only waits for a command */
	if (write(report_fd, &r, sizeof(r)) != sizeof(r))
		_exit(1);
	for (;;) {
		if (read(go_fd, &cmd, 1) != 1)
			_exit(0);
		r = qj_hold(c, "peer", "jailed wants to stay up", 0,
			    cmd == 'n' ? QJ_HOLD_NONBLOCK : 0);
		if (write(report_fd, &r, sizeof(r)) != sizeof(r))
			_exit(1);
	}
}

static void test_jailed_peer_hold_waits_for_resume(void **state)
{
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	int go[2], report[2], r = 1;
	pid_t pid;
	json_t *j;

	REQUIRE_HARNESS(h);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(report, O_CLOEXEC), 0);
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		close(report[0]);
		peer_main(h->socket, go[0], report[1]);
	}
	/*
	 * A fresh ASan fork connecting is busy for a while: on a loaded machine
	 * that crossed the busy threshold in the quiesce's first window, and the
	 * peer was stopped.  The suspend starts once the peer only waits.
	 */
	assert_int_equal(read(report[0], &r, sizeof(r)), sizeof(r));
	assert_int_equal(r, 1);
	for (int i = 0; i < 1000 && itest_state(pid) != 'S'; i++)
		msleep(10);
	assert_int_equal(itest_state(pid), 'S');
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_place(c, "peer", pid), 0);

	/* Suspending (dry-run, 5 s): the jailed peer's nonblocking hold gets EAGAIN... */
	assert_int_equal(qj_suspend(c), 0);
	assert_true(harness_wait_state(h, "suspending", 5000));
	assert_int_equal(write(go[1], "n", 1), 1);
	assert_int_equal(read(report[0], &r, sizeof(r)), sizeof(r));
	if (r != -EAGAIN)
		harness_dump_log(h);
	assert_int_equal(r, -EAGAIN);
	/* ...and its blocking hold waits: it does not keep the system awake. */
	assert_int_equal(write(go[1], "b", 1), 1);
	msleep(200);
	j = harness_status(h);
	assert_string_equal(json_string_value(json_object_get(j, "state")), "suspending");
	assert_int_equal(json_integer_value(json_object_get(j, "holds_total")), 0);
	json_decref(j);
	/* After resume the deferred request is answered and granted. */
	assert_int_equal(read(report[0], &r, sizeof(r)), sizeof(r));
	assert_int_equal(r, 0);
	j = harness_status(h);
	assert_int_equal(json_integer_value(json_object_get(j, "suspends")), 1);
	assert_int_equal(json_integer_value(json_object_get(j, "holds_total")), 1);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(j, "holds"), 0), "app")),
			    "peer");
	json_decref(j);
	close(go[1]);
	waitpid(pid, NULL, 0);
	close(go[0]);
	close(report[0]);
	close(report[1]);
	qj_close(c);
}

/*
 * Issue 11 finding 1: a jailed peer's hold is deferred while suspending, then the peer
 * shuts its read side.  At resume the deferred reply fails (EPIPE), the disconnect frees
 * the client's state, and the daemon must not touch it afterwards (ASan build: a
 * use-after-free crashed it).  It must still answer status, and the hold died with the
 * connection.
 */
static void test_deferred_hold_reader_gone(void **state)
{
	static const char hello[] = "{\"op\":\"hello\",\"version\":1}";
	static const char hold[] = "{\"op\":\"hold\",\"name\":\"x\",\"reason\":\"y\"}";
	struct harness *h = *state;
	struct qj_conn *c = NULL;
	int go[2], done[2];
	char b;
	pid_t pid;
	json_t *j;

	REQUIRE_HARNESS(h);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(done, O_CLOEXEC), 0);
	pid = fork();
	if (pid == 0) {
		int fd = raw_connect(h->socket);
		char *rep = fd >= 0 ? raw_call(fd, hello, sizeof(hello) - 1) : NULL;

		if (!rep || read(go[0], &b, 1) != 1)
			_exit(1);
		free(rep);
		if (send(fd, hold, sizeof(hold) - 1, 0) < 0)
			_exit(1);
		msleep(100); /* let the daemon read (and defer) it */
		if (shutdown(fd, SHUT_RD) < 0 || write(done[1], "k", 1) != 1)
			_exit(1);
		(void)read(go[0], &b, 1); /* keep the connection until told */
		_exit(0);
	}
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_place(c, "peer", pid), 0);
	assert_int_equal(qj_suspend(c), 0);
	assert_true(harness_wait_state(h, "suspending", 5000));
	assert_int_equal(write(go[1], "g", 1), 1);
	assert_int_equal(read(done[0], &b, 1), 1);
	/* The dry-run suspend ends after 5 s: the deferred reply is sent then. */
	(void)harness_wait_int(h, "suspends", 1, 30000);
	msleep(100);
	j = harness_status(h);
	if (!j) {
		harness_dump_log(h);
		fail_msg("the daemon does not answer after the deferred reply failed");
	}
	assert_int_equal(json_integer_value(json_object_get(j, "holds_total")), 0);
	json_decref(j);
	assert_int_equal(write(go[1], "g", 1), 1);
	waitpid(pid, NULL, 0);
	qj_close(c);
	for (int i = 0; i < 2; i++) {
		close(go[i]);
		close(done[i]);
	}
}

/* A qj-consent process placed in app "app": its stdin (write to go) and stdout. */
struct consenter {
	pid_t pid;
	int in, out;
};

static void consenter_start(struct harness *h, struct qj_conn *c, bool consent,
			    struct consenter *ret)
{
	char exe[512], line[64] = "";
	int in[2], out[2];
	ssize_t n;

	snprintf(exe, sizeof(exe), "%s/tests/apps/qj-consent", getenv("QJ_BUILD_DIR"));
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	ret->pid = fork();
	assert_true(ret->pid >= 0);
	if (ret->pid == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		setenv("QOSJAIL_SOCKET", h->socket, 1);
		execl(exe, "qj-consent", consent ? "consent" : "no", (char *)NULL);
		_exit(127);
	}
	harness_track(ret->pid);
	close(in[0]);
	close(out[1]);
	ret->in = in[1];
	ret->out = out[0];
	n = read(ret->out, line, sizeof(line) - 1);
	assert_true(n > 0 && strncmp(line, "ready", 5) == 0);
	assert_int_equal(qj_place(c, "app", ret->pid), 0);
	assert_int_equal(write(ret->in, "g", 1), 1);
	memset(line, 0, sizeof(line));
	n = read(ret->out, line, sizeof(line) - 1);
	assert_true(n > 0);
	assert_string_equal(line, consent ? "consent 0\n" : "no-consent\n");
}

/* What @p printed since (its SIGXCPU handler writes "xcpu"), waiting up to @ms. */
static bool printed_xcpu(const struct consenter *p, int ms)
{
	struct pollfd pfd = { .fd = p->out, .events = POLLIN };
	char buf[64] = "";

	if (poll(&pfd, 1, ms) <= 0 || read(p->out, buf, sizeof(buf) - 1) <= 0)
		return false;
	return strstr(buf, "xcpu") != NULL;
}

/*
 * Consent to the notify rung through libqosjail: of two identical busy apps that
 * catch SIGXCPU, in an app whose policy does not consent, the one that called
 * qj_notify_consent() gets SIGXCPU and blocks; the other is stopped without it.
 * A process outside the jail cannot consent.
 */
static void test_notify_consent_through_library(void **state)
{
	struct harness *h = *state;
	struct consenter yes, no;
	struct qj_conn *c = NULL;

	REQUIRE_HARNESS(h);
	assert_int_equal(qj_open(h->socket, &c), 0);
	assert_int_equal(qj_notify_consent(c), -EPERM); /* not jailed: nothing to consent to */
	consenter_start(h, c, true, &yes);
	consenter_start(h, c, false, &no);

	assert_int_equal(qj_suspend(c), 0);
	assert_true(harness_wait_state(h, "suspending", 30000));
	assert_true(printed_xcpu(&yes, 5000));
	assert_false(printed_xcpu(&no, 0));
	assert_true(itest_stopped_or_stopping(no.pid));
	assert_false(itest_stopped_or_stopping(yes.pid));
	assert_true(harness_wait_state(h, "idle-wait", 30000)); /* resumed */
	assert_true(itest_state(no.pid) != 'T');
	assert_false(printed_xcpu(&no, 0));
	close(yes.in);
	close(yes.out);
	close(no.in);
	close(no.out);
	qj_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_spawn_into_app_group, setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_ctl_run_and_hold_exit_status, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_untrackable_task_fails_cycle, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_explain, setup, harness_teardown),
		cmocka_unit_test_setup_teardown(test_hold_during_cycle_continues_stopped, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_kill9_mid_cycle_then_restart, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_spawned_task_gets_v1_cpu_group, setup,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_status_names_app_holding_quiesce, setup_stuck,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_jailed_peer_hold_waits_for_resume, setup_peer,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_deferred_hold_reader_gone, setup_peer,
						harness_teardown),
		cmocka_unit_test_setup_teardown(test_notify_consent_through_library, setup_consent,
						harness_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
